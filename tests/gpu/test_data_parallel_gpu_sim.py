"""Data parallelism over CUDA places, under numba's CUDA simulator (in a subprocess): two
replicas on (simulated) GPU 0 train like one CPU device on the whole batch. The simulator
cannot run two kernels at once, so the kernels go behind the device lock
(remove_unnecessary_lock=False) — which is also what that option is for."""

import pytest
from simulator import run_sim


@pytest.mark.gpu
@pytest.mark.slow
def test_two_cuda_places_equal_one_cpu_device_on_the_whole_batch():
    assert "OK gpu data parallel" in run_sim("data_parallel").stdout
