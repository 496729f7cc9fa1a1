"""`python -m numbaflow warmup` (issue 18): after it, a first run compiles nothing."""
import os
import subprocess
import sys

import pytest
from child import run_script

from numbaflow import __main__ as cli
from numbaflow import _warmup


def _env(tmp_path):
    return dict(os.environ, NUMBAFLOW_CACHE_DIR=str(tmp_path / "kernels"),
                NUMBA_CACHE_DIR=str(tmp_path / "numba"))


def _compiles(env):
    r = run_script("quick_start_compiles", timeout=600, NUMBA_CACHE_DIR=env["NUMBA_CACHE_DIR"],
                   NUMBAFLOW_CACHE_DIR=env["NUMBAFLOW_CACHE_DIR"])
    return int(r.stdout.split("compiles")[1])


@pytest.mark.slow
def test_after_warmup_the_quick_start_compiles_nothing(tmp_path):
    env = _env(tmp_path)
    r = subprocess.run([sys.executable, "-m", "numbaflow", "warmup", "quickstart"], env=env,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "quickstart" in r.stdout and "done in" in r.stdout
    assert "WARNING" not in r.stderr          # the workers' own compile notices are quiet
    assert _compiles(env) == 0
    # the reference: the same script on empty caches does compile
    assert _compiles(_env(tmp_path / "cold")) > 0


def test_warmup_refuses_an_unknown_task(capsys):
    with pytest.raises(SystemExit):
        cli.main(["warmup", "transformer"])
    err = capsys.readouterr().err
    assert "unknown task(s) transformer" in err and "mlp, cnn, quickstart" in err
    with pytest.raises(ValueError, match="the tasks are"):
        _warmup.warmup(["nope"])


def test_warmup_lists_its_tasks(capsys):
    assert cli.main(["warmup", "--list"]) == 0
    out = capsys.readouterr().out
    assert all(name in out for name in _warmup.TASKS)
