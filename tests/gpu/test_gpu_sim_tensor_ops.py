"""The CUDA kernels of the tensor-API ops (kernels/tensor/tensor_ops.py, gather_ops.py,
sampling.py) under numba's CUDA simulator: tests/sim/tensor_ops.py compares every op-table
row of these ops, forward and gradient, with the CPU kernel; plus shapes spanning several
blocks.
"""
import pytest
from simulator import run_sim


@pytest.mark.gpu
@pytest.mark.slow
def test_tensor_ops_on_simulated_gpu_match_cpu():
    assert "checked" in run_sim("tensor_ops").stdout
