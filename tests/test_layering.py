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
    tree = ast.parse(path.read_text(), str(path))
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
# the run path's floors read no other object's underscored names
RUN_PATH = ("executor/", "compiler/", "distributed/runner.py")
# (file, expression): why it is allowed
ALLOWED = {
    ("executor/scheduler.py", "parallel._launch_threads"):
        "numba's thread pool has no public start; it must start before the workers",
    ("compiler/compiled_program.py", "other._runners"):
        "another CompiledProgram (share_vars_from): the same class",
    ("compiler/parallel_executor.py", "share_vars_from._compiled"):
        "another ParallelExecutor: the same class",
    ("compiler/parallel_executor.py", "(build_strategy or BuildStrategy())._copy"):
        "the compiler's own strategy class",
}


def private_reads(path):
    """(line, expression, attribute) of every `x._name` where x is not self/cls/super()."""
    tree = ast.parse(path.read_text(), str(path))
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


def test_the_run_path_reads_no_private_names():
    bad, used = [], set()
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if not rel.startswith(RUN_PATH) or rel == "executor/scope.py":
            continue
        for line, expr, _ in private_reads(path):
            if (rel, expr) in ALLOWED:
                used.add((rel, expr))
            else:
                bad.append(f"numbaflow/{rel}:{line} {expr}")
    assert not bad, "underscored names of other objects read on the run path:\n" + \
        "\n".join(bad)
    assert used == set(ALLOWED), f"allowed but no longer used: {set(ALLOWED) - used}"


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
