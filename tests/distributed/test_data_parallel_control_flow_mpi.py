"""Data parallelism over control flow across real MPI processes (issue 29 item 4):
`mpiexec -n 2` runs tests/mpi/dp_control_flow.py, a `cond` + `while_loop` model whose
2-rank training equals one device on the whole batch."""
import pytest
from mpirun import mpirun

pytestmark = [pytest.mark.mpi, pytest.mark.slow]


def test_two_ranks_train_cond_and_while_as_one_device():
    p, _ = mpirun(["tests/mpi/dp_control_flow.py"], 300, 2)
    out = p.stdout + p.stderr
    assert p.returncode == 0 and "OK 2 ranks with cond + while_loop == 1 device" in out, out
