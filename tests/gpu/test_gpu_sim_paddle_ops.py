"""The CUDA kernels of the ops added for Paddle programs (slice, strided_slice, one_hot, top_k,
layer_norm, sigmoid_cross_entropy_with_logits, the extra optimizers) under numba's CUDA
simulator: tests/sim/paddle_ops.py compares each op-table row of these ops, forward and
gradient, with the CPU kernel, plus shapes bigger than the rows (several blocks) and the
cases a GPU kernel cannot raise on. (tests/gpu/test_gpu_sim.py runs every row as well; this
one is the quick check for these ops.)
"""
import pytest
from simulator import run_sim


@pytest.mark.gpu
@pytest.mark.slow
def test_new_ops_on_simulated_gpu_match_cpu():
    assert "checked" in run_sim("paddle_ops").stdout
