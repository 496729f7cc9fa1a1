"""Every environment-variable read is in numbaflow/config.py (issue 18: one home each), and
docs/environment-variables.md's table documents each variable config.py reads."""
import ast
import pathlib
import re

import numbaflow
from numbaflow import config

PACKAGE = pathlib.Path(numbaflow.__file__).parent
TABLE = PACKAGE.parent / "docs" / "environment-variables.md"
# the bench builds its child processes' environments (copies of os.environ plus its own
# settings): that is passing an environment on, not reading a setting
ALLOWED = {"config.py", "bench"}


def env_reads(path):
    """(line, text) of each read of os.environ / os.getenv in the file."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr == "getenv":
            yield node.lineno, "os.getenv"
        if not (isinstance(node, ast.Attribute) and node.attr == "environ"):
            continue
        parent = parents.get(node)
        if isinstance(parent, ast.Attribute) and parent.attr in ("get", "setdefault", "pop"):
            yield node.lineno, f"os.environ.{parent.attr}"
        elif isinstance(parent, ast.Subscript) and isinstance(parent.ctx, ast.Load):
            yield node.lineno, "os.environ[...]"
        elif isinstance(parent, ast.Compare):
            yield node.lineno, "... in os.environ"


def test_environment_is_read_only_in_config():
    bad = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE)
        if rel.parts[0] in ALLOWED:
            continue
        bad += [f"{rel}:{line}: {what}" for line, what in env_reads(path)]
    assert not bad, ("environment variables read outside numbaflow/config.py (add a function "
                     "there, document the variable in docs/environment-variables.md): " + "; ".join(bad))


def test_the_scanner_sees_reads():
    assert len(list(env_reads(PACKAGE / "config.py"))) >= 10


def test_every_variable_config_reads_is_in_the_docs_table():
    names = set(re.findall(r'"((?:NUMBAFLOW|NUMBA|CPU|FLAGS|CUDA|OMP)_[A-Za-z_]+)"',
                           (PACKAGE / "config.py").read_text(encoding="utf-8")))
    table = TABLE.read_text(encoding="utf-8").split("# Environment variables", 1)[1]
    missing = sorted(n for n in names if f"`{n}" not in table)
    assert not missing, f"docs/environment-variables.md's table lacks {missing}"


def test_launcher_rank_size(monkeypatch):
    for var in ("PMI_SIZE", "PMI_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK",
                "MV2_COMM_WORLD_SIZE", "MV2_COMM_WORLD_RANK"):
        monkeypatch.delenv(var, raising=False)
    assert config.launcher_rank_size() == (0, 1)
    monkeypatch.setenv("OMPI_COMM_WORLD_SIZE", "4")
    monkeypatch.setenv("OMPI_COMM_WORLD_RANK", "3")
    assert config.launcher_rank_size() == (3, 4)
