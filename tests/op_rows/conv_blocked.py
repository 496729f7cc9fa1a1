"""Table rows for the blocked-activation ops (kernels/fused/conv_blocked.py; CPU only,
float32, no gradient): the references reshuffle with numpy and convolve with conv.py's
rows' float64 reference (fused_conv_ref)."""
import numpy as np

from numbaflow.kernels.nn.conv_nchwc import LANES as L
from numbaflow.testing.op_test import uniform

from . import f64, row
from .conv import fused_conv_ref


def blocked(x):
    """(N, C/L, H+2, W+2, L) zero-bordered blocks of x (N, C, H, W), numpy."""
    n, c, h, w = x.shape
    out = np.zeros((n, c // L, h + 2, w + 2, L), x.dtype)
    out[:, :, 1:-1, 1:-1, :] = x.reshape(n, c // L, L, h, w).transpose(0, 1, 3, 4, 2)
    return out


def plain(xb):
    n, cb, hp, wp, _ = xb.shape
    return xb[:, :, 1:-1, 1:-1, :].transpose(0, 1, 4, 2, 3).reshape(n, cb * L, hp - 2, wp - 2)


def _conv_ref(ins, a):
    out = fused_conv_ref(dict(ins, Input=plain(f64(ins["Input"]))), a)["Output"]
    return {"Output": blocked(out).astype(ins["Input"].dtype)}


def _x(shape):
    return lambda rng: blocked(rng.uniform(-1.0, 1.0, shape))


ONE = dict(dtypes=("float32",), grad_inputs=(), rtol=1e-5, atol=1e-5)
row("nchwc_pack", {"X": uniform((2, 2 * L, 3, 5))},
    lambda ins, a: {"Out": blocked(ins["X"])}, **ONE)
row("nchwc_unpack", {"X": _x((2, 2 * L, 3, 5))},
    lambda ins, a: {"Out": plain(ins["X"])}, **ONE)
_attrs = {"strides": [1, 1], "paddings": [1, 1], "dilations": [1, 1], "groups": 1}
row("fused_conv2d_nchwc", {"Input": _x((2, L, 8, 8)), "Filter": uniform((2 * L, L, 3, 3)),
                           "Bias": uniform((2 * L,))}, _conv_ref,
    "fused_conv2d_nchwc-3x3-bias-relu", attrs=dict(_attrs, activation="relu"), **ONE)
_m = 2 * L
row("fused_conv2d_nchwc", {"Input": _x((2, L, 8, 8)), "Filter": uniform((_m, L, 1, 1)),
                           "BNScale": uniform((_m,), 0.5, 2.0), "BNBias": uniform((_m,)),
                           "BNMean": uniform((_m,)), "BNVariance": uniform((_m,), 0.5, 2.0)},
    _conv_ref, "fused_conv2d_nchwc-1x1-stride2-bn",
    attrs=dict(_attrs, strides=[2, 2], paddings=[0, 0]), **ONE)
