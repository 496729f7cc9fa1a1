"""Tensor arrays on a GPU place (issue 29) under numba's CUDA simulator, in a subprocess
(tests/sim/tensor_array.py): array_write inside a while_loop, array_length and array_read
after it, and their gradients train on CUDAPlace(0) as on the CPU. The array ops run their
CPU kernels on host copies of the device arrays (`host_staged`), the array itself (a
host list) passed through as it is."""
import pytest
from simulator import run_sim


@pytest.mark.gpu
@pytest.mark.slow
def test_tensor_arrays_in_a_while_loop_train_on_simulated_cuda_place_as_on_cpu():
    assert run_sim("tensor_array").stdout.strip().endswith("ok")
