"""A plan's first run on a cold cache compiles its kernels in this process and a helper
process (executor/precompile.py): the helper's compiled code is what numba's disk cache
then serves, kernels claimed by one side are not compiled by the other, and a cold CNN
first step starts a helper and computes what a warm one does."""
import os
import subprocess
import sys

import pytest
from child import run_script

pytestmark = pytest.mark.slow     # subprocesses with cold numba caches


def _run(tmp_path, mode, timeout=600, **env):
    r = run_script("precompile_kernels", mode, timeout=timeout,
                   NUMBAFLOW_CACHE_DIR=str(tmp_path / "kernels"),
                   NUMBA_CACHE_DIR=str(tmp_path / "numba"), **env)
    return dict(line.split(": ", 1) for line in r.stdout.splitlines())


def test_the_helper_compiles_what_it_claims_into_the_disk_cache(tmp_path):
    got = _run(tmp_path, "helper")
    assert got["cold"] == "8"
    # kernel 0 (the helper's) is on disk now; 1..7 were claimed by the other side
    assert got["cold after"] == "7"
    assert got["compiled on call"] == "7"           # kernel 0 was loaded, not compiled
    assert got["sums"] == str([4.0 * k for k in range(8)])


def test_both_sides_leave_nothing_to_compile_on_the_first_call(tmp_path):
    got = _run(tmp_path, "both")
    assert got["cold"] == "8" and got["offered"] == "8"
    assert got["cold after"] == "0"
    assert got["compiled on call"] == "0"
    assert got["sums"] == str([4.0 * k for k in range(8)])
    # a warm cache: nothing is cold, no helper
    again = _run(tmp_path, "both")
    assert again["cold"] == "0" and again["offered"] == "0"


@pytest.mark.timeout(300)
def test_a_stopped_helper_is_killed_within_seconds_and_its_kernels_compiled_here(tmp_path):
    got = _run(tmp_path, "stopped", timeout=200)     # (waited HELPER_TIMEOUT_S = 600 s)
    assert got["cold"] == "8" and got["offered"] == "8"
    assert int(got["elapsed"]) < 60
    assert got["compiled on call"] == "0"           # the helper's share was compiled here
    assert got["sums"] == str([4.0 * k for k in range(8)])


@pytest.mark.timeout(300)
def test_work_directories_of_killed_runs_are_removed_on_the_next_start(tmp_path):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True).stdout.strip()
    (tmp / f"numbaflow-compile-{dead}-x1").mkdir()            # its run was killed
    (tmp / f"numbaflow-compile-{dead}-x1" / "kernels.pkl").write_bytes(b"x")
    (tmp / f"numbaflow-compile-{os.getpid()}-x2").mkdir()     # a live run's: kept
    (tmp / "numbaflow-compile-old_style").mkdir()             # before pids: kept (age)
    got = _run(tmp_path, "both", TMPDIR=str(tmp))
    assert got["offered"] == "8"
    assert sorted(os.listdir(tmp)) == sorted([f"numbaflow-compile-{os.getpid()}-x2",
                                              "numbaflow-compile-old_style"])


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="no helper on one core")
def test_a_cold_cnn_first_step_shares_the_compile_and_computes_the_same(tmp_path):
    runs = [run_script("precompile_cnn", timeout=900, NUMBAFLOW_CACHE_DIR=str(tmp_path / "kernels"),
                       NUMBA_CACHE_DIR=str(tmp_path / "numba")) for _ in range(2)]
    cold, warm = runs
    # one helper for the training program (how many kernels it takes depends on the load)
    line = [x for x in cold.stderr.splitlines() if "cold kernels" in x]
    assert len(line) == 1, cold.stderr[-2000:]
    assert int(line[0].split("compiled ")[1].split(" cold")[0]) >= 6
    assert "cold kernels" not in warm.stderr          # warm: no helper
    assert cold.stdout == warm.stdout                  # the same losses, bit for bit
