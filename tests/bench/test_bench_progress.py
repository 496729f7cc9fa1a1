"""numbaflow-bench's stderr (issue 32): a warning never lands inside a progress line and
every line fits in 120 columns. Checked on a captured run of the formatting code in a
fresh process (numbaflow's own log handler and Python's warnings as a user's run has
them, none of pytest's capturing), not on a timed bench."""
import os
import subprocess
import sys

import pytest

SCRIPT = r'''
import sys, warnings
import numbaflow
from numbaflow.bench.progress import ProgressLines
from numbaflow.utils import log
NOTICE = ("compiling the kernels for the first run of a program of 17 ops (mul, "
          "elementwise_add, relu, reduce_mean, fill_constant and 5 more op types; fed x): a "
          "one-off pause (seconds to a minute on a cold cache); numba keeps compiled kernels "
          "on disk, so later runs and processes load them in milliseconds. To compile the "
          "common ops ahead of time, run: python -m numbaflow warmup")
with ProgressLines(sys.stderr) as progress:
    with progress.case("models/mlp-train"):
        log.logger.warning(NOTICE)                           # the cold-compile notice
        warnings.warn("a deprecated setting " * 10, UserWarning)
    with progress.case("kernels/gemm"):
        pass
    with progress.case("models/cnn-train"):
        print("partial", end="", file=sys.stderr)            # output with no newline
log.logger.warning("after: " + "x" * 200)                    # the handler was given back
'''


@pytest.mark.slow
def test_warnings_end_the_progress_line_and_every_line_fits():
    env = dict(os.environ, COLUMNS="120")
    env.pop("NUMBAFLOW_LOG_LEVEL", None)
    r = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                       env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    lines = r.stderr.splitlines()
    assert all(len(ln) <= 120 for ln in lines[:-1]), [len(ln) for ln in lines]
    assert lines[0] == "  running models/mlp-train ..."      # ended before the notice
    assert lines[1].startswith("numbaflow WARNING: compiling the kernels")
    assert any("deprecated setting" in ln for ln in lines)
    mlp_done = [ln for ln in lines if ln.startswith("  models/mlp-train: ")]
    assert len(mlp_done) == 1 and mlp_done[0].endswith(" s")
    gemm = [ln for ln in lines if "kernels/gemm" in ln]     # nothing interrupted it
    assert len(gemm) == 1 and gemm[0].startswith("  running kernels/gemm ... ")
    for ln in lines:        # a progress line holds only the case and its time
        if ln.startswith("  running"):
            assert ln.endswith((" ...", " s")) and "WARNING" not in ln
    assert "partial" in lines and lines[-2].startswith("  models/cnn-train: ")
    assert len(lines[-1]) > 120     # outside the bench, the handler writes as before
