"""Whole programs on CUDAPlace(0) under numba's CUDA simulator (in a subprocess): training
steps equal the CPU run; parameters stay on the device between runs and the Scope hands
out host copies; mixing CPU and GPU executors on one scope stays consistent."""

import pytest
from simulator import run_sim


@pytest.mark.gpu
@pytest.mark.slow
def test_cnn_two_steps_on_simulated_cuda_place_match_cpu():
    """Issue 3: conv + batch_norm + relu + pool + fc, 2 steps on CUDAPlace(0) == CPU."""
    assert run_sim("executor_cnn").stdout.strip().endswith("ok")


@pytest.mark.gpu
@pytest.mark.slow
def test_training_on_simulated_cuda_place_matches_cpu():
    assert run_sim("executor_train").stdout.strip().endswith("ok")


@pytest.mark.slow
@pytest.mark.gpu
def test_bad_label_on_simulated_cuda_place_raises_like_cpu_and_keeps_parameters():
    """Issue 9: the kernel records the bad label on the device, the executor raises the
    CPU path's ValueError after the run and restores every persistable."""
    assert run_sim("executor_bad_label").stdout.strip().endswith("ok")
