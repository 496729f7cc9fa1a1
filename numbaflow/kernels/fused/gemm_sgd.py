"""mul_grad_sgd: an fc layer's backward GEMMs with its SGD update folded into the second.

`mul_grad` computes dX = dOut @ W^T and dW = X^T @ dOut; `sgd` then reads W and dW and
writes W - lr * dW. Folded, the update is one BLAS call with beta = 1, alpha = -lr:
W <- W - lr * X^T @ dOut, so dW is never written nor read back and the separate update
pass over W disappears (about 3 passes over W's bytes per layer; the pass
graph/passes/fuse_sgd_gemm.py decides where it is exact). dX is computed first, from W
before the update.

The BLAS is numpy's OpenBLAS (math/blas_numpy.py) with alpha = -lr, beta = 1:
W (k, n) += alpha * X^T (k, b) @ dOut (b, n).
"""
import functools

import numpy as np
from numba import njit

from ..gpu import gpu_util
from ..math.blas_numpy import HAVE_NUMPY_BLAS, cblas_gemm
from ..math.gemm_cpu import blas_scalars, gemm
from ..math.linalg import flat2
from ..registry import FUSED, NO_GRAD, OPTIMIZER, OpDef, Slot, register_op, run_calls


@njit(nogil=True, cache=True)
def _update(x, d, w, lr):
    """w (k, n) -= lr[0] * x.T @ d, x (b, k), d (b, n): C-contiguous, one dtype."""
    b, k = x.shape
    n = d.shape[1]
    if HAVE_NUMPY_BLAS:
        cblas_gemm(True, False, k, n, b, -lr[0], x, k, d, n, 1.0, w, n)
    else:           # (numpy built on another BLAS: a product, then the update)
        w -= lr[0] * np.dot(x.T, d)


@njit(nogil=True, cache=True)
def _copy(src, dst):
    dst[...] = src


def _infer(ctx):
    return {"X@GRAD": ctx.input("X"), "ParamOut": ctx.input("Y")}


def _cpu(cop):
    xn, yn = cop.attrs["x_num_col_dims"], cop.attrs["y_num_col_dims"]

    def bind(ins, outs):
        x, y, d, lr = ins["X"][0], ins["Y"][0], ins["Out@GRAD"][0], ins["LearningRate"][0]
        x2, y2 = x.reshape(flat2(x.shape, xn)), y.reshape(flat2(y.shape, yn))
        d2 = d.reshape(x2.shape[0], y2.shape[1])
        calls = []
        if outs.get("X@GRAD"):   # dX = dOut @ W^T, from W before its update
            calls.append(functools.partial(gemm, d2, y2, outs["X@GRAD"][0].reshape(x2.shape),
                                           False, True, blas_scalars(d2.dtype)))
        p = outs["ParamOut"][0].reshape(y2.shape)
        if p.ctypes.data != y2.ctypes.data:   # not run in place: ParamOut starts as Y
            calls.append(functools.partial(_copy, y2, p))
        calls.append(functools.partial(_update, x2, d2, p, lr.reshape(lr.size)))
        return calls[0] if len(calls) == 1 else functools.partial(run_calls, tuple(calls))
    return bind


# ---------------------------------------------------------------- GPU
cuda = None   # numba.cuda, bound lazily by the kernel builder (gpu_util explains)


@gpu_util.lazy
def _sgd_apply():
    """The flat kernel out = w - lr * dw (out may be w itself)."""
    global cuda
    from numba import cuda

    @cuda.jit(cache=True)
    def sgd_apply(w, dw, lr, out):
        for i in range(cuda.grid(1), out.shape[0], cuda.gridsize(1)):
            out[i] = w[i] - lr[0] * dw[i]
    return sgd_apply


def _gpu(cop):
    """The same two products with the tiled GPU GEMM; dW goes to a device scratch buffer
    and one flat kernel applies W - lr * dW (the BLAS beta=1 trick has no GPU twin yet)."""
    from ..math.linalg import ONLY_BATCH, gemm_thunk
    xn, yn = cop.attrs["x_num_col_dims"], cop.attrs["y_num_col_dims"]

    def bind(ins, outs):
        from numba import cuda
        x, y, d, lr = ins["X"][0], ins["Y"][0], ins["Out@GRAD"][0], ins["LearningRate"][0]
        x3, y3 = x.reshape((1,) + flat2(x.shape, xn)), y.reshape((1,) + flat2(y.shape, yn))
        d3 = d.reshape(1, x3.shape[1], y3.shape[2])
        calls = []
        if outs.get("X@GRAD"):   # dX = dOut @ W^T, from W before its update
            calls.append(gemm_thunk(d3, y3, outs["X@GRAD"][0].reshape(x3.shape), ONLY_BATCH, ONLY_BATCH,
                                    False, True))
        dw = cuda.device_array(y3.shape, y.dtype)
        calls.append(gemm_thunk(x3, d3, dw, ONLY_BATCH, ONLY_BATCH, True, False))
        p = outs["ParamOut"][0]
        calls.append(gpu_util.launch_flat(_sgd_apply(), p.size, gpu_util.flat(y),
                                          gpu_util.flat(dw), gpu_util.flat(lr),
                                          gpu_util.flat(p)))
        return gpu_util.sequence(calls)
    return bind


register_op(OpDef(
    "mul_grad_sgd", (Slot("X"), Slot("Y"), Slot("Out@GRAD"), Slot("LearningRate")),
    (Slot("X@GRAD", optional=True), Slot("ParamOut")), _infer, _cpu, gpu=_gpu,
    attrs={"x_num_col_dims": 1, "y_num_col_dims": 1}, inplace={"ParamOut": "Y"},
    traits=frozenset((OPTIMIZER, NO_GRAD, FUSED)),
    doc="X@GRAD = dOut @ Y^T; ParamOut (Y, in place) = Y - LearningRate * X^T @ dOut: "
        "mul_grad with its sgd folded into the weight-gradient GEMM (CPU; the GPU kernel "
        "applies the update after the GEMM)"))
