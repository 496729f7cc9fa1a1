"""CUDAPlace on a machine that cannot run it (issue 18): the message says first what the
user can act on (no GPU, then the driver, then the toolkit wheels) and never shows a
library's internal error."""
import pytest

import numbaflow as paddle
from numbaflow.utils import cuda_check

INTERNAL = ("Error", "Traceback", "_get_nvrtc", "cudadrv")


def machine(monkeypatch, gpu, driver, toolkit):
    monkeypatch.delenv("NUMBA_ENABLE_CUDASIM", raising=False)
    monkeypatch.setattr(cuda_check, "nvidia_gpu_present", lambda: gpu)
    monkeypatch.setattr(cuda_check, "driver_loadable", lambda: driver)
    monkeypatch.setattr(cuda_check, "toolkit_problem",
                        lambda: None if toolkit else "numba-cuda (the CUDA compiler for "
                        "numba) is not installed: pip install 'numbaflow[cuda]'")


# (gpu, driver, toolkit) -> the words the message must start its reason with, and its fix
CASES = [
    ((False, False, False), "this machine has no NVIDIA GPU", "Use CPUPlace()"),
    ((True, False, False), "the NVIDIA driver is not installed", "install the NVIDIA driver"),
    ((None, False, False), "the NVIDIA driver is not installed", "install the NVIDIA driver"),
    ((True, True, False), "numba-cuda (the CUDA compiler for numba) is not installed",
     "pip install 'numbaflow[cuda]'"),
]


@pytest.mark.parametrize("env, reason, fix", CASES, ids=["no-gpu", "no-driver",
                                                         "no-sysfs-no-driver", "no-toolkit"])
def test_cuda_place_says_what_to_do_first(monkeypatch, env, reason, fix):
    machine(monkeypatch, *env)
    with pytest.raises(RuntimeError) as info:
        paddle.CUDAPlace(0)
    msg = str(info.value)
    assert msg.startswith(f"CUDAPlace(0) cannot be used: {reason}"), msg
    assert fix in msg
    assert not any(word in msg for word in INTERNAL), msg
    if env[0] is False:                 # no GPU: no advice to install anything
        assert "pip install" not in msg and "driver" not in msg


def test_a_broken_toolkit_is_named_without_its_internal_error(monkeypatch):
    # numba-cuda present but NVRTC missing raised an internal AttributeError before
    pytest.importorskip("numba.cuda.cudadrv.nvrtc")
    from numba.cuda.cudadrv import nvrtc, nvvm
    monkeypatch.delenv("NUMBA_ENABLE_CUDASIM", raising=False)
    monkeypatch.setattr(nvvm, "is_available", lambda: True)

    def missing():
        raise AttributeError("'NoneType' object has no attribute 'nvrtcVersion'")
    monkeypatch.setattr(nvrtc, "_get_nvrtc_version", missing)
    msg = cuda_check.toolkit_problem()
    assert msg.startswith("NVRTC (the CUDA 12 runtime compiler library) was not found")
    assert "pip install 'numbaflow[cuda]'" in msg and "AttributeError" not in msg
