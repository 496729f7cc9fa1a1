"""numbaflow: Paddle-style static graphs whose every op is a numba kernel.

>>> import numbaflow as paddle
>>> import numbaflow.static as static
>>> paddle.enable_static()
"""
import os as _os

# numba's OpenMP workers spin-wait after every parallel kernel; on a small machine that
# starves the BLAS threads of the next matmul (an MLP step measured 48 ms instead of
# 3.3 ms on 2 cores). libgomp reads this when numba first loads it, so set it first.
_os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

from . import dtypes, kernels  # noqa: F401,E402  (kernels registers every op)
from .dtypes import bool_ as bool, float32, float64, int32, int64  # noqa: F401
from .executor import CPUPlace, CUDAPlace  # noqa: F401
from .param_attr import ParamAttr  # noqa: F401
from .tensor_math import (abs, add, argmax, assign, cast, clip, concat, divide,  # noqa: F401
                          exp, flatten, full, log, matmul, max, maximum, mean, min, minimum,
                          multiply, pow, reshape, scale, split, sqrt, square, squeeze, subtract,
                          sum, tanh, transpose, unsqueeze)
from . import nn, optimizer, static, metric, utils, initializer, fluid  # noqa: F401,E402
utils.log.configure_from_env()      # NUMBAFLOW_LOG_LEVEL

__version__ = "0.1.0"


def enable_static():
    """Accepted for Paddle compatibility: static graphs are numbaflow's only mode."""


def disable_static(place=None):
    raise RuntimeError("numbaflow has only static graphs; dynamic (eager) mode does not exist")


def in_dynamic_mode():
    return False


def seed(n):
    """Make parameter initialisation (and dropout) reproducible from here on."""
    from .kernels.creation import set_global_seed
    if not isinstance(n, int):
        raise TypeError(f"seed expects an int, got {type(n).__name__}")
    set_global_seed(n)


def set_device(device):
    from .executor.place import to_place
    return to_place(device)


def get_device():
    return "cpu"
