"""The run path's layers only look down (issue 13): kernels -> graph -> executor ->
distributed -> compiler -> the public API. An import of a higher layer, even inside a
function, fails here with the file, the line and the two layers."""
import ast
import pathlib

import numbaflow

PACKAGE = pathlib.Path(numbaflow.__file__).parent

# lowest first; a module may import its own layer and any lower one
LAYERS = [
    ("base", ["config", "dtypes", "utils"]),
    ("kernels", ["kernels"]),
    ("graph", ["graph"]),
    ("executor", ["executor"]),
    ("distributed", ["distributed"]),
    ("compiler", ["compiler"]),
]
TOP = "api"     # everything else: static, fluid, nn, optimizer, bench, examples, ...
RANK = {name: i for i, (name, _) in enumerate(LAYERS)}
RANK[TOP] = len(LAYERS)


def layer_of(module):
    """The layer of a dotted module name inside numbaflow ('numbaflow.graph.program')."""
    parts = module.split(".")
    if parts[0] != "numbaflow":
        return None
    if len(parts) == 1:
        return TOP
    for name, prefixes in LAYERS:
        if parts[1] in prefixes:
            return name
    return TOP


def module_name(path):
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported(path):
    """(line, absolute module) of every numbaflow import in the file."""
    mod = module_name(path)
    package = mod if path.name == "__init__.py" else mod.rsplit(".", 1)[0]
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                yield node.lineno, a.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if node.module is None or node.level and not node.module:
                # `from . import x`: each name may be a submodule
                for a in node.names:
                    yield node.lineno, f"{target}.{a.name}"
            else:
                yield node.lineno, target


def upward_imports():
    bad = []
    for path in sorted(PACKAGE.rglob("*.py")):
        own = layer_of(module_name(path))
        for line, target in imported(path):
            other = layer_of(target)
            if other is not None and RANK[other] > RANK[own]:
                bad.append(f"{path.relative_to(PACKAGE.parent)}:{line} ({own}) imports "
                           f"{target} ({other})")
    return bad


def test_layers_only_import_down():
    bad = upward_imports()
    assert not bad, "upward imports:\n" + "\n".join(bad)


# The API side has floors too (issue 31), lowest first: what layers are built from
# (ParamAttr, LayerHelper, the initializers, paddle.framework and the core names), the tensor
# functions, nn, the 2.x faces above nn, and fluid (the Paddle 1.x spellings) on top. The four
# inversions that this pins were static -> fluid (create_global_var), initializer -> fluid
# (the 1.x initializers), framework -> fluid.core, layer_helper / param_attr -> nn.initializer.
API_FLOORS = [
    ("api base", ["numbaflow.core", "numbaflow.framework", "numbaflow.initializer",
                  "numbaflow.layer_helper", "numbaflow.param_attr", "numbaflow.param_init",
                  "numbaflow.regularizer"]),
    ("tensor", ["numbaflow.tensor"]),
    ("nn", ["numbaflow.nn"]),
    ("2.x faces", ["numbaflow.static", "numbaflow.optimizer", "numbaflow.metric"]),
    ("fluid", ["numbaflow.fluid"]),
]


def api_floor_of(module):
    """The index of a module's API floor, or None for a module on none (hapi, io, ...)."""
    for i, (_, prefixes) in enumerate(API_FLOORS):
        if any(module == p or module.startswith(p + ".") for p in prefixes):
            return i
    return None


def upward_api_imports():
    bad = []
    for path in sorted(PACKAGE.rglob("*.py")):
        own = api_floor_of(module_name(path))
        for line, target in imported(path):
            other = api_floor_of(target)
            if own is not None and other is not None and other > own:
                bad.append(f"{path.relative_to(PACKAGE.parent)}:{line} ({API_FLOORS[own][0]}) "
                           f"imports {target} ({API_FLOORS[other][0]})")
    return bad


def test_the_api_floors_only_import_down():
    bad = upward_api_imports()
    assert not bad, "upward imports on the API side:\n" + "\n".join(bad)


def test_only_fluid_and_the_package_face_import_fluid():
    bad = [f"{path.relative_to(PACKAGE.parent)}:{line} imports {target}"
           for path in sorted(PACKAGE.rglob("*.py"))
           if not module_name(path).startswith("numbaflow.fluid") and path != PACKAGE / "__init__.py"
           for line, target in imported(path) if target.startswith("numbaflow.fluid")]
    assert not bad, "fluid is the top floor; import the 2.x home instead:\n" + "\n".join(bad)


def test_the_check_sees_an_upward_import(tmp_path, monkeypatch):
    # the checker itself: a kernels file importing the executor is reported
    pkg = tmp_path / "numbaflow"
    (pkg / "kernels").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "kernels" / "__init__.py").write_text("")
    (pkg / "kernels" / "bad.py").write_text("def f():\n    from ..executor import plan\n")
    monkeypatch.setattr(__import__(__name__), "PACKAGE", pkg)
    assert upward_imports() == ["numbaflow/kernels/bad.py:2 (kernels) imports "
                                "numbaflow.executor (executor)"]


def test_public_import_paths_unchanged():
    import numbaflow.fluid as fluid
    import numbaflow.static as static
    for mod in (static, fluid):
        for name in ("CompiledProgram", "ParallelExecutor", "Executor", "BuildStrategy",
                     "ExecutionStrategy", "Scope", "CPUPlace", "CUDAPlace"):
            assert hasattr(mod, name), (mod.__name__, name)
    assert static.CompiledProgram is fluid.CompiledProgram


# ---------------------------------------------------------------- private state stays private
# Scope's state: only executor/scope.py touches it; everyone else uses its verbs.
SCOPE_STATE = {"_arrays", "_device", "_device_id", "_on_device", "_before_save", "_ran"}
def private_reads(path):
    """(line, expression, attribute) of every `x._name` where x is not self/cls/super()."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute) or not node.attr.startswith("_") or \
                node.attr.startswith("__"):
            continue
        v = node.value
        if isinstance(v, ast.Name) and v.id in ("self", "cls"):
            continue
        if isinstance(v, ast.Call) and getattr(v.func, "id", None) == "super":
            continue
        yield node.lineno, ast.unparse(node), node.attr


def test_nobody_but_scope_touches_its_state():
    bad = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel == "executor/scope.py":
            continue
        for line, expr, attr in private_reads(path):
            if attr in SCOPE_STATE or (attr == "_lock" and "scope" in expr.lower()):
                bad.append(f"numbaflow/{rel}:{line} {expr}")
    assert not bad, "Scope's private state used outside scope.py (add a verb):\n" + \
        "\n".join(bad)


# ---------------------------------------------------------------- nobody reads others' privates
# An underscored name is its module's own. Another module that needs it asks its owner for
# a public name or a verb. Checked over the whole package (issue 21): `x._name` where x is not
# self/cls/super() and `_name` is a name numbaflow defines, but not this module (reads of
# another instance of the module's own class are the class's business), and
# `from numbaflow.m import _name` / `import numbaflow.m._name` from another module
# (a sibling `_module` of the same package is that package's own).
# (file, expression): why it is allowed
ALLOWED = {
    ("layer_helper.py", "ParamAttr._to_attr"):
        "Paddle's own name: its layers call ParamAttr._to_attr the same way",
    ("tensor/creation.py", "ParamAttr._to_attr"):
        "Paddle's own name: its layers call ParamAttr._to_attr the same way",
    ("optimizer/optimizer.py", "self._learning_rate._bind"):
        "LRScheduler is Paddle's public class; the optimizer is the one caller of its "
        "binding (a public bind() would be API Paddle lacks)",
}


def defined_names(tree):
    """Every name a module defines: functions, classes, assigned names and attributes."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(node.name)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            out.add(node.attr)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            out.add(node.id)
    return out


def foreign_private_names(package=None):
    """[(file, line, expression)] of every read of another module's underscored name."""
    package = package or PACKAGE
    trees = {p: ast.parse(p.read_text(encoding="utf-8"), str(p)) for p in sorted(package.rglob("*.py"))}
    own = {p: defined_names(t) for p, t in trees.items()}
    ours = set().union(*own.values()) | {p.stem for p in trees}
    private = lambda n: n.startswith("_") and not n.startswith("__")
    found = []
    for path, tree in trees.items():
        rel = path.relative_to(package).as_posix()
        mod = module_name_in(path, package)
        pkg = mod if path.name == "__init__.py" else mod.rsplit(".", 1)[0]
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and private(node.attr):
                v = node.value
                if isinstance(v, ast.Name) and v.id in ("self", "cls") or \
                        isinstance(v, ast.Call) and getattr(v.func, "id", None) == "super":
                    continue
                if node.attr in ours and node.attr not in own[path]:
                    found.append((rel, node.lineno, ast.unparse(node)))
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = pkg.split(".")[:len(pkg.split(".")) - node.level + 1]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                if target.split(".")[0] != "numbaflow":
                    continue
                for a in node.names:
                    sibling = target == pkg and (package.parent / (pkg.replace(".", "/") + "/"
                                                                 + a.name + ".py")).exists()
                    if private(a.name) and not sibling:
                        found.append((rel, node.lineno, f"from {target} import {a.name}"))
    return found


def module_name_in(path, package):
    rel = path.relative_to(package.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def test_no_module_reads_another_modules_private_names():
    bad, used = [], set()
    for rel, line, expr in foreign_private_names():
        if (rel, expr) in ALLOWED:
            used.add((rel, expr))
        else:
            bad.append(f"numbaflow/{rel}:{line} {expr}")
    assert not bad, ("another module's underscored names read (ask the owner for a public "
                     "name or a verb):\n" + "\n".join(bad))
    stale = set(ALLOWED) - used
    assert not stale, f"listed but no longer read (remove the entries): {sorted(stale)}"


def test_the_foreign_private_name_check_sees_them(tmp_path):
    pkg = tmp_path / "numbaflow"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("from . import _impl\n")      # own sibling
    (pkg / "sub" / "_impl.py").write_text("def _helper():\n    pass\n_table = {}\n")
    (pkg / "sub" / "user.py").write_text(
        "from ._impl import _helper\nimport os\nfrom . import _impl\n"
        "class C:\n    def __init__(self, other):\n        self._mine = other._mine\n"
        "def f(o):\n    os._exit(0)\n    return _impl._table, o._mine\n")
    assert foreign_private_names(pkg) == [
        ("sub/user.py", 1, "from numbaflow.sub._impl import _helper"),
        ("sub/user.py", 9, "_impl._table")]


def test_the_private_read_check_sees_one(tmp_path):
    f = tmp_path / "m.py"
    f.write_text("def f(scope, self):\n    self._ok = 1\n    return scope._arrays\n")
    assert [(line, expr) for line, expr, _ in private_reads(f)] == [(3, "scope._arrays")]


# ---------------------------------------------------------------- the API floor's circle
def import_graph():
    """{module: modules it imports (any import, TYPE_CHECKING and in functions too)}."""
    raw = {module_name(p): {t for _, t in imported(p)} for p in sorted(PACKAGE.rglob("*.py"))}

    def resolve(t):
        while t and t not in raw:
            t = t.rsplit(".", 1)[0] if "." in t else None
        return t
    return {m: {resolve(t) for t in ts} - {None, m} for m, ts in raw.items()}


def cycle_through(graph, start):
    """One import cycle through `start` ([start, ..., start]), or None."""
    stack, seen = [(start, [start])], set()
    while stack:
        node, path = stack.pop()
        for n in sorted(graph.get(node, ())):
            if n == start:
                return path + [n]
            if n not in seen:
                seen.add(n)
                stack.append((n, path + [n]))
    return None


def test_param_attr_regularizer_and_clipping_form_no_circle():
    # was: param_attr -> optimizer -> nn.clip -> layer_helper -> param_attr
    graph = import_graph()
    for mod in ("numbaflow.param_attr", "numbaflow.regularizer", "numbaflow.nn.clip",
                "numbaflow.layer_helper"):
        assert cycle_through(graph, mod) is None, cycle_through(graph, mod)
    assert graph["numbaflow.regularizer"] == set()      # the low module imports nothing


# ---------------------------------------------------------------- no circle between files
# Issue 31's Done-when: drawn from the imports (every import: TYPE_CHECKING ones and those
# inside functions too), no two files import each other, directly or round a loop. A
# package face (__init__.py) only hands names on, so it is no node here.
# Above the package face: what runs numbaflow as a user would (`import numbaflow`).
ABOVE_THE_FACE = ("numbaflow.__main__", "numbaflow._warmup", "numbaflow.bench",
                  "numbaflow.examples", "numbaflow.gpu_check")


def file_circles(graph):
    """Each set of files that import each other round a loop (package faces left out)."""
    faces = {m for m in graph if (PACKAGE.parent / m.replace(".", "/") / "__init__.py").exists()}
    files = {m: ts - faces for m, ts in graph.items() if m not in faces}
    reach = {m: _reach(files, m) for m in files}
    circles = []
    for m in sorted(files):
        members = {n for n in reach[m] if m in reach[n]}
        if members and members not in circles:
            circles.append(members)
    return circles


def _reach(graph, start):
    seen, todo = set(), [start]
    while todo:
        for n in graph.get(todo.pop(), ()):
            if n not in seen:
                seen.add(n)
                todo.append(n)
    return seen


def test_no_circle_between_files():
    circles = file_circles(import_graph())
    assert not circles, ("files that import each other (move the shared piece down to a file "
                         "both import):\n" + "\n".join(str(sorted(c)) for c in circles))


def test_the_circle_check_sees_a_type_only_circle(tmp_path, monkeypatch):
    pkg = tmp_path / "numbaflow"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("from . import a\n", encoding="utf-8")
    (pkg / "a.py").write_text("from .b import B\n", encoding="utf-8")
    (pkg / "b.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                              "    from .a import A\nclass B: pass\n", encoding="utf-8")
    monkeypatch.setattr(__import__(__name__), "PACKAGE", pkg)
    assert file_circles(import_graph()) == [{"numbaflow.a", "numbaflow.b"}]


def test_only_what_stands_above_the_package_face_imports_it():
    # `import numbaflow` inside the library is an arrow back up to the face that imports it
    bad = sorted(m for m, ts in import_graph().items() if "numbaflow" in ts
                 and not m.startswith(ABOVE_THE_FACE) and m != "numbaflow")
    assert not bad, "import the layer you need, not the package face:\n" + "\n".join(bad)
