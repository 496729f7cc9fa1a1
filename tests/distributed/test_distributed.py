"""numbaflow.distributed under real MPI: each test runs a script of tests/mpi under
`mpiexec -n 2` (the venv's, next to python) and checks what the ranks printed and how
the job ended. The single-process behaviour (no mpiexec) runs in a plain subprocess so
that this test process never initialises MPI."""
import subprocess

import pytest
from child import script_command
from mpirun import ROOT, mpi_env
from mpirun import mpirun as run_mpi

pytestmark = [pytest.mark.mpi, pytest.mark.slow]

MPI_DIR = ROOT / "tests" / "mpi"
TIMEOUT = 60


def mpirun(script, *args, n=2):
    """Run tests/mpi/<script>.py on n ranks; returns (CompletedProcess, seconds)."""
    return run_mpi([str(MPI_DIR / f"{script}.py"), *args], TIMEOUT, n)


def ok_lines(p):
    return {line[3:] for line in p.stdout.splitlines() if line.startswith("OK ")}


def test_collectives_on_two_ranks():
    p, _ = mpirun("collectives")
    assert p.returncode == 0, p.stdout + p.stderr
    assert ok_lines(p) == {
        "rank_size", "allreduce_sum_ float32", "allreduce_sum_ float64",
        "allreduce_sum_ int64", "allreduce_sum_ 0-d and empty", "allreduce_sum_ reproducible",
        "allreduce_many_", "argument errors", "bcast_", "sum_int", "check_same", "init"}, p.stdout


def test_broadcast_parameters_makes_every_rank_hold_rank0s():
    p, _ = mpirun("broadcast")
    assert p.returncode == 0, p.stdout + p.stderr
    assert ok_lines(p) == {"broadcast_parameters", "same step", "created on other ranks"}


def test_mismatching_ranks_raise_valueerror_on_every_rank():
    p, _ = mpirun("mismatch")
    assert p.returncode == 0, p.stdout + p.stderr
    raised = [line for line in p.stdout.splitlines() if line.startswith("RAISED ")]
    for case in ("shape", "dtype", "program", "held"):
        for rank in (0, 1):
            assert any(line.startswith(f"RAISED {case} rank {rank}:") for line in raised), \
                (case, rank, p.stdout, p.stderr)
    text = p.stdout
    assert "'fc_0.w_0' is float32[4, 3] on rank 0 but float32[4, 5] on rank 1" in text
    assert "'fc_0.b_0' is float32[3] on rank 0 but float64[3] on rank 1" in text
    assert "rank 1's program differs from rank 0's" in text and "has extra" in text
    assert "rank 1 holds 'fc_0.w_0' but rank 0 does not" in text


@pytest.mark.parametrize("mode", ["barrier", "allreduce", "thread", "early"])
def test_unhandled_exception_on_one_rank_aborts_the_job(mode):
    p, seconds = mpirun("abort", mode)
    assert p.returncode != 0, p.stdout + p.stderr
    assert seconds < 30
    assert "rank 0 was not aborted" not in p.stdout
    assert "[rank 1/2]" in p.stderr and "aborting the MPI job" in p.stderr, p.stderr
    expected = "ZeroDivisionError" if mode == "thread" else "RuntimeError: rank 1 failed"
    assert expected in p.stderr, p.stderr


def test_single_process_needs_no_mpi():
    p = subprocess.run(script_command("single_process_no_mpi"), cwd=ROOT, env=mpi_env(),
                       capture_output=True, text=True, timeout=TIMEOUT)
    assert p.returncode == 0 and p.stdout.strip() == "OK", p.stdout + p.stderr
