"""The marker rule holds for every test module: a test that starts a subprocess (directly or
through a helper of its module) is `slow`; one that runs the CUDA simulator is also `gpu`;
one that runs `mpiexec` is also `mpi`. So `pytest -m "not slow"` stays in-process and fast."""
import ast
from pathlib import Path

import pytest
from locations import TESTS

SUBPROCESS = ("subprocess.", "Popen(")
SIMULATOR = ('NUMBA_ENABLE_CUDASIM="1"', "NUMBA_ENABLE_CUDASIM='1'")
MPI_HELPERS = {"run_mpi", "mpirun"}          # tests/mpirun.py's runner, however imported
SIM_HELPERS = {"run_sim"}                    # tests/simulator.py's runner
CHILD_HELPERS = {"run_script"}               # tests/child.py's runner of tests/scripts/


def _marks(decorators):
    out = set()
    for d in decorators:
        node = d.func if isinstance(d, ast.Call) else d
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute) \
                and node.value.attr == "mark":
            out.add(node.attr)
    return out


def _module_marks(tree):
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "pytestmark"
                                                for t in node.targets):
            value = node.value
            items = value.elts if isinstance(value, (ast.List, ast.Tuple)) else [value]
            return _marks(items)
    return set()


def _calls(fn):
    return {n.func.id for n in ast.walk(fn) if isinstance(n, ast.Call)
            and isinstance(n.func, ast.Name)}


def _needs(path):
    """{test name: (marks it has, marks it needs)} for the module at `path`."""
    text = path.read_text(encoding="utf-8")
    tree = ast.parse(text)
    funcs = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    needs = {}
    for name, fn in funcs.items():
        src = ast.get_source_segment(text, fn) or ""
        need = set()
        if any(p in src for p in SUBPROCESS) or _calls(fn) & (MPI_HELPERS | CHILD_HELPERS):
            need.add("slow")
        if any(p in src for p in SIMULATOR) or _calls(fn) & SIM_HELPERS:
            need |= {"slow", "gpu"}
        if _calls(fn) & MPI_HELPERS and name not in MPI_HELPERS:
            need |= {"slow", "mpi"}
        needs[name] = need
    changed = True
    while changed:                  # a test calling a helper needs what the helper needs
        changed = False
        for name, fn in funcs.items():
            extra = set().union(*(needs[c] for c in _calls(fn) if c in needs)) - needs[name]
            if extra:
                needs[name] |= extra
                changed = True
    module = _module_marks(tree)
    return {name: (_marks(fn.decorator_list) | module, needs[name])
            for name, fn in funcs.items() if name.startswith("test_")}


@pytest.mark.parametrize("path", sorted(p for p in TESTS.rglob("test_*.py")
                                         if p.name != "test_markers.py"), ids=lambda p: p.name)
def test_subprocess_simulator_and_mpi_tests_carry_their_markers(path):
    missing = {name: sorted(need - have) for name, (have, need) in _needs(path).items()
               if need - have}
    assert missing == {}, f"{path.name}: add these markers: {missing}"


def test_the_rule_sees_helpers_and_module_marks(tmp_path):
    f = tmp_path / "test_x.py"
    f.write_text("import pytest, subprocess\n"
                 "pytestmark = [pytest.mark.mpi]\n"
                 "def helper():\n    return subprocess.run(['true'])\n"
                 "def test_a():\n    helper()\n"
                 "@pytest.mark.slow\n@pytest.mark.gpu\n"
                 "def test_b():\n    env = dict(NUMBA_ENABLE_CUDASIM=\"1\")\n"
                 "    subprocess.run([])\n"
                 "def test_c():\n    mpirun(['x'])\n"
                 "def test_d():\n    return 1\n"
                 "def test_e():\n    run_sim('x')\n"
                 "def test_f():\n    run_script('x')\n")
    got = _needs(f)
    assert got["test_a"] == ({"mpi"}, {"slow"})
    assert got["test_b"] == ({"mpi", "slow", "gpu"}, {"slow", "gpu"})
    assert got["test_c"] == ({"mpi"}, {"slow", "mpi"})
    assert got["test_d"] == ({"mpi"}, set())
    assert got["test_e"] == ({"mpi"}, {"slow", "gpu"})
    assert got["test_f"] == ({"mpi"}, {"slow"})
