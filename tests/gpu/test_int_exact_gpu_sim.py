"""The GPU twins of tests/kernels/test_int_exact.py under numba's CUDA simulator (a subprocess:
the simulator must be chosen before numba.cuda is imported): integer elementwise ops and
reductions on the (simulated) device equal numpy's integer results, and an integer
division by zero sets the device error record, which the executor raises as a
ZeroDivisionError naming the op, as the CPU does."""

import pytest
from simulator import run_sim


@pytest.mark.slow
@pytest.mark.gpu
def test_integer_ops_on_simulated_gpu_match_numpy():
    r = run_sim("int_exact", timeout=900)
    assert "checked 47" in r.stdout, r.stdout[-2000:]
