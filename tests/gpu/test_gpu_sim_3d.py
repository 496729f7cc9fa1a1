"""The 3-D ops' CUDA kernels (conv3d, pool3d and their gradients) under numba's CUDA
simulator: tests/sim/ops_3d.py compares each op-table row, forward and gradient, and a few
shapes bigger than one block with the CPU kernels."""
import pytest
from simulator import run_sim


@pytest.mark.gpu
@pytest.mark.slow
def test_3d_ops_on_simulated_gpu_match_cpu():
    assert "checked" in run_sim("ops_3d").stdout
