"""Data parallelism across real MPI processes: `mpiexec -n 2` (the mpich wheel's, next to
this Python) runs the scripts in tests/mpi/; each asserts on every rank and rank 0
prints OK. A hang fails the test through the timeout."""
import pytest
from mpirun import mpirun as run_mpi

pytestmark = [pytest.mark.mpi, pytest.mark.slow]


def mpirun(args, timeout=240, n=2):
    """(return code, stdout + stderr) of `mpiexec -n n python args...`; a hang fails."""
    p, _ = run_mpi(args, timeout, n)
    return p.returncode, p.stdout + p.stderr


@pytest.mark.parametrize("places,strategy,bucket_mb", [
    (1, "allreduce", "32"), (2, "allreduce", "32"), (2, "reduce", "32"),
    (2, "allreduce", "0.0001"),           # one overlapped bucket per gradient
    (2, "iterator", "32")])               # K = 3 runs over an iterator feed, one transaction
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
