"""The scripts that tests run in a child process are files, not strings: GPU-simulator
scripts in tests/sim/ (run by tests/simulator.py's `run_sim`), MPI rank scripts in
tests/mpi/ (run by tests/mpirun.py's `mpirun`) and CPU scripts that need a fresh process in
tests/scripts/ (run by tests/child.py's `run_script`). Each one parses, says in its docstring
what it checks, and is run by some test module (or, for a helper, imported by a script;
the `time_*` MPI scripts are tools, "Not a test")."""
import ast
import re

import pytest
from locations import TESTS

FOLDERS = ("sim", "mpi", "scripts")
SCRIPTS = [p for folder in FOLDERS for p in sorted((TESTS / folder).glob("*.py"))]
# the text of every test module and shared test module (what could run a script)
RUNNERS = "\n".join(p.read_text(encoding="utf-8") for p in TESTS.rglob("*.py")
                    if p.parent.name not in FOLDERS and "fixtures" not in p.parts)


@pytest.mark.parametrize("path", SCRIPTS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_script_parses_and_says_what_it_checks(path):
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    assert ast.get_docstring(tree), f"{path.name}: add a docstring saying what it checks"


@pytest.mark.parametrize("path", SCRIPTS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_script_is_run_by_a_test(path):
    if path.stem.startswith("time_"):
        assert "Not a test" in path.read_text(encoding="utf-8")
        return
    folder = path.parent
    imported = any(re.search(rf"^(from|import) {path.stem}\b", p.read_text(encoding="utf-8"),
                             re.M) for p in folder.glob("*.py") if p != path)
    named = {"sim": f'run_sim("{path.stem}"' in RUNNERS,
             "scripts": any(f'{runner}("{path.stem}"' in RUNNERS
                            for runner in ("run_script", "script_command")),
             "mpi": f"tests/mpi/{path.name}" in RUNNERS or f'mpirun("{path.stem}"' in RUNNERS,
             }[folder.name]
    assert named or imported, f"{path} is run by no test: delete it or run it"
