"""Running test scripts under the venv's `mpiexec` (shared by the MPI test modules)."""
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MPIEXEC = Path(sys.executable).with_name("mpiexec")


def mpi_env():
    """The environment of a test child: this checkout importable, one compute thread per
    rank (two ranks on a small machine), and no launcher variables of our own."""
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.update(NUMBA_NUM_THREADS="1", OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    for var in ("CPU_NUM", "PMI_SIZE", "PMI_RANK", "OMPI_COMM_WORLD_SIZE",
                "OMPI_COMM_WORLD_RANK", "MV2_COMM_WORLD_SIZE", "MV2_COMM_WORLD_RANK"):
        env.pop(var, None)
    return env


def mpirun(args, timeout, n=2):
    """`mpiexec -n n python args...` from the repository root; returns
    (CompletedProcess with stdout and stderr, seconds). A hang fails the test."""
    if not MPIEXEC.exists():
        pytest.skip(f"no mpiexec next to {sys.executable} (pip install mpich)")
    cmd = [str(MPIEXEC), "-n", str(n), sys.executable, *args]
    t = time.perf_counter()
    # stdin: Hydra forwards its stdin to rank 0; with pytest's, the traceback of an
    # aborting rank went missing about 1 run in 20.
    proc = subprocess.Popen(cmd, cwd=ROOT, env=mpi_env(), stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        # SIGTERM lets mpiexec kill its ranks (each runs in its own session, so
        # killing mpiexec alone would leave them spinning)
        proc.terminate()
        try:
            out, err = proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
        pytest.fail(f"mpiexec {args} hung for {timeout} s (stdout: {out!r}, stderr: {err!r})")
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err), time.perf_counter() - t
