"""What the README and docs/architecture.md state about the tree holds: the README's two
commands are the ones CI runs, every file the architecture's Layout names exists, and its run
path lists the passes in PIPELINE's order."""
import os
import re
from pathlib import Path

import pytest
from locations import ROOT

ARCH = ROOT / "docs" / "architecture.md"

pytestmark = pytest.mark.skipif(not ARCH.exists() or not (ROOT / ".ci" / "run").exists(),
                                reason="needs a source checkout (docs/, .ci/)")


def test_the_readmes_commands_are_what_ci_runs():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    train = 'pip install ".[examples]" && python -m numbaflow.examples.train_digits'
    test = 'pip install ".[test,examples]" && python -m pytest -q tests'
    assert train in readme and test in readme
    for part in test.split(" && "):
        assert part in ci, f".ci/run does not run the README's {part!r}"


def _tree():
    """Every file and directory of the checkout, as relative posix paths."""
    paths = set()
    for top, dirs, files in os.walk(ROOT):
        dirs[:] = [d for d in dirs if d not in (".git", "__pycache__", ".venv", "venv", "build")]
        rel = Path(top).relative_to(ROOT).as_posix()
        for name in dirs + files:
            paths.add(name if rel == "." else f"{rel}/{name}")
    return paths


def test_every_file_the_layout_names_exists():
    text = ARCH.read_text(encoding="utf-8")
    block = text.split("## Layout", 1)[1].split("```", 2)[1]
    names = set(re.findall(r"(?<![\w.`-])([\w./-]*\w\.py|[\w.-]+/)(?=[\s,:;)]|$)", block))
    names = {n for n in names if not n.startswith(("numbaflow.", "paddle."))}
    assert len(names) > 60, f"the Layout block parsed into only {len(names)} names"
    tree = _tree()
    missing = sorted(n for n in names
                     if not any(p == n.rstrip("/") or p.endswith("/" + n.rstrip("/")) for p in tree))
    assert not missing, f"docs/architecture.md's Layout names files that are gone: {missing}"


def test_the_run_path_lists_the_pipeline_in_order():
    from numbaflow.compiler.pipeline import PIPELINE
    passes = [row.pass_class.name for row in PIPELINE]
    text = ARCH.read_text(encoding="utf-8")
    listed = text.split("rows of PIPELINE, in order:", 1)[1].split("\"training\":", 1)[0]
    named = [w for w in re.findall(r"[a-z_]+", listed) if w in passes]
    assert named == passes, f"docs/architecture.md lists {named}; PIPELINE is {passes}"
