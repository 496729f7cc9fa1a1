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
