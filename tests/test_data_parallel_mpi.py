"""Data parallelism across real MPI processes: `mpiexec -n 2` (the mpich wheel's, next to
this Python) runs the scripts in tests/mpi/; each asserts on every rank and rank 0
prints OK. A hang fails the test through the timeout."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MPIEXEC = Path(sys.executable).with_name("mpiexec")


def mpirun(args, timeout=240, n=2):
    """(return code, stdout + stderr) of `mpiexec -n n python args...`; a hang fails."""
    env = dict(os.environ, PYTHONPATH=str(ROOT),
               NUMBA_NUM_THREADS="1", OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    for var in ("CPU_NUM", "PMI_SIZE", "PMI_RANK", "OMPI_COMM_WORLD_SIZE",
                "OMPI_COMM_WORLD_RANK"):
        env.pop(var, None)
    # stdin: Hydra forwards it to rank 0 (with pytest's, output went missing); on a
    # timeout SIGTERM lets mpiexec stop its ranks (killing it alone leaves them running)
    proc = subprocess.Popen([str(MPIEXEC), "-n", str(n), sys.executable, *args], cwd=ROOT,
                            env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.terminate()
        try:
            out, _ = proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, _ = proc.communicate()
        pytest.fail(f"mpiexec {args} hung for {timeout} s: {out}")
    return proc.returncode, out


@pytest.mark.parametrize("places,strategy,bucket_mb", [
    (1, "allreduce", "32"), (2, "allreduce", "32"), (2, "reduce", "32"),
    (2, "allreduce", "0.0001")])          # one overlapped bucket per gradient
def test_two_ranks_equal_one_device_on_the_whole_batch(places, strategy, bucket_mb):
    rc, out = mpirun(["tests/mpi/dp_equivalence.py", str(places), strategy, bucket_mb])
    assert rc == 0 and f"OK 2 ranks x {places} places ({strategy}) == 1 device" in out, out


def test_train_digits_under_mpiexec_reaches_the_single_device_accuracy():
    rc, out = mpirun(["-m", "numbaflow.examples.train_digits", "--epochs", "4"])
    assert rc == 0, out
    finals = [line for line in out.splitlines() if line.startswith("final test accuracy")]
    assert len(finals) == 1, out              # rank 0 alone prints
    acc = float(finals[0].split()[3])
    assert acc >= 0.9, out


def test_ranks_with_different_programs_get_an_error_not_a_hang():
    rc, out = mpirun(["tests/mpi/dp_mismatch.py"], timeout=120)
    assert rc == 0 and "OK mismatch on ranks [0, 1]" in out, out


def test_a_scope_set_on_one_rank_is_resynced_without_a_hang():
    rc, out = mpirun(["tests/mpi/dp_resync.py"], timeout=120)
    assert rc == 0 and "OK resync" in out, out


@pytest.mark.parametrize("places", [1, 2])
def test_sync_batch_norm_across_ranks_equals_one_device(places):
    rc, out = mpirun(["tests/mpi/dp_sync_bn.py", str(places)])
    assert rc == 0 and f"OK sync_bn 2 ranks x {places} places == 1 device" in out, out


def test_reduce_across_ranks_saves_a_complete_checkpoint(tmp_path):
    rc, out = mpirun(["tests/mpi/dp_reduce_save.py", str(tmp_path)])
    assert rc == 0 and "OK reduce save" in out, out
