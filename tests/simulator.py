"""Running the GPU scripts of tests/sim/ under numba's CUDA simulator (shared by the GPU
test modules). The simulator is chosen by NUMBA_ENABLE_CUDASIM=1 before numba.cuda is first
imported, so each script runs in a fresh Python with that variable set."""
import os
import subprocess
import sys

from locations import ROOT, TESTS

SIM = TESTS / "sim"


def sim_env(**extra):
    """The environment of a simulator child: the simulator on, this checkout and tests/ (for
    op_rows, tensor_check ...) importable, the test session's kernel cache, plus `extra`."""
    path = os.pathsep.join(p for p in (str(ROOT), str(TESTS), os.environ.get("PYTHONPATH")) if p)
    return dict(os.environ, NUMBA_ENABLE_CUDASIM="1", PYTHONPATH=path, **extra)


def run_sim(script, *args, timeout=600, check=True, env=None):
    """`python tests/sim/<script>.py args...` under the simulator; returns the
    CompletedProcess (text stdout and stderr). With `check` a non-zero exit fails the
    test with the end of both streams; a hang past `timeout` seconds fails it too."""
    cmd = [sys.executable, str(SIM / f"{script}.py"), *map(str, args)]
    r = subprocess.run(cmd, cwd=ROOT, env=sim_env(**(env or {})), capture_output=True,
                       text=True, timeout=timeout)
    if check:
        assert r.returncode == 0, f"{script}: exit {r.returncode}\n" + r.stdout[-3000:] + r.stderr[-3000:]
    return r
