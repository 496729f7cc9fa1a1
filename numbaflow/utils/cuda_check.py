"""Why a CUDA place cannot run here, in the order the user can act on it: no NVIDIA GPU in
the machine (nothing to install: use the CPU or the simulator), then no driver (install
the NVIDIA driver), then no CUDA toolkit wheels (pip install the 'cuda' extra), then the
device index. Messages say what is missing and the fix, never a library's internal error.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import glob
import os

from .. import config

_NVIDIA_VENDOR = "0x10de"
_DISPLAY_CLASSES = ("0x0300", "0x0302")     # VGA controller, 3D controller


def nvidia_gpu_present():
    """True / False when the PCI bus (Linux sysfs) says whether an NVIDIA GPU is in the
    machine, driver or not; None when it cannot be told (no sysfs)."""
    devices = glob.glob("/sys/bus/pci/devices/*")
    if not devices:
        return None
    for dev in devices:
        try:
            with open(os.path.join(dev, "vendor")) as f:
                vendor = f.read().strip()
            with open(os.path.join(dev, "class")) as f:
                cls = f.read().strip()
        except OSError:
            continue
        if vendor == _NVIDIA_VENDOR and cls.startswith(_DISPLAY_CLASSES):
            return True
    return False


def driver_loadable():
    """Whether the NVIDIA driver's CUDA library (libcuda) can be loaded."""
    names = ["libcuda.so.1", "libcuda.so", ctypes.util.find_library("cuda"), "nvcuda.dll"]
    for name in filter(None, names):
        try:
            ctypes.CDLL(name)
            return True
        except OSError:
            continue
    return False


def toolkit_problem():
    """Why no CUDA kernel can be compiled here (None when it can): numba-cuda and the CUDA
    12 toolkit libraries of its cu12 wheels (libNVVM compiles, NVRTC builds the helpers)."""
    if config.cuda_simulator():
        return None
    fix = "pip install 'numbaflow[cuda]' (numba-cuda with its CUDA 12 toolkit wheels)"
    try:
        from numba import cuda  # noqa: F401
        from numba.cuda.cudadrv import nvvm
    except Exception:           # not installed, or an install that cannot be imported
        return f"numba-cuda (the CUDA compiler for numba) is not installed: {fix}"
    try:
        if not nvvm.is_available():
            return f"libNVVM (the CUDA 12 compiler library) was not found: {fix}"
        from numba.cuda.cudadrv import nvrtc
        nvrtc._get_nvrtc_version()
    except Exception:           # a missing library shows up as any error inside numba-cuda
        return f"NVRTC (the CUDA 12 runtime compiler library) was not found: {fix}"
    return None


def device_problem(device_id):
    """Why CUDAPlace(device_id) cannot run (None when it can): the GPU, the driver, the
    toolkit, the device index, in that order."""
    if config.cuda_simulator():
        from numba import cuda
        n = len(cuda.gpus)
        return None if device_id < n else (
            f"device index {device_id} is out of range: the CUDA simulator has {n} device(s)")
    if nvidia_gpu_present() is False:
        return "this machine has no NVIDIA GPU (none on its PCI bus)"
    if not driver_loadable():
        return ("the NVIDIA driver is not installed (its libcuda library was not found): "
                "install the NVIDIA driver, R525 or newer for CUDA 12")
    problem = toolkit_problem()
    if problem:
        return problem
    from numba import cuda
    try:
        n = len(cuda.gpus) if cuda.is_available() else 0
    except Exception:           # the driver refused: its reason is not the user's to parse
        n = 0
    if n == 0:
        return ("the NVIDIA driver is installed but sees no usable GPU (check `nvidia-smi`; "
                "CUDA_VISIBLE_DEVICES may hide them)")
    if device_id >= n:
        vis = config.cuda_visible_devices()
        return (f"device index {device_id} is out of range: {n} GPU(s) visible"
                + (f" (CUDA_VISIBLE_DEVICES={vis!r})" if vis is not None else ""))
    return None
