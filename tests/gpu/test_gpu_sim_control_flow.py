"""Control flow on the GPU path (issue 29 item 4) under numba's CUDA simulator, in a
subprocess: a model with a `cond` (both branches taken over the steps) and a `while_loop`
whose gradient is taken trains on CUDAPlace(0) as on the CPU (losses, loop results and
parameters). The control-flow ops run their CPU kernels on host copies of the device
arrays (`host_staged`; one host buffer per device array, so the loop's in-place loop
variables stay one buffer); the ops around them run their CUDA kernels."""
import pytest
from simulator import run_sim


@pytest.mark.gpu
@pytest.mark.slow
def test_cond_and_while_train_on_simulated_cuda_place_as_on_cpu():
    assert run_sim("control_flow").stdout.strip().endswith("ok")
