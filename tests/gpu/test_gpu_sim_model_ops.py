"""The CUDA kernels of the ops added for Paddle 2 models (issue 28: adaptive pool2d,
conv2d_transpose, ...) under numba's CUDA simulator: tests/sim/model_ops.py compares each
op-table row of these ops, forward and gradient, with the CPU kernel.
(tests/gpu/test_gpu_sim.py runs every row as well; this one is the quick check.)
"""
import pytest
from simulator import run_sim


@pytest.mark.gpu
@pytest.mark.slow
def test_model_ops_on_simulated_gpu_match_cpu():
    r = run_sim("model_ops")
    assert "checked" in r.stdout
    print(r.stdout)
