"""batch_norm and batch_norm_grad (Paddle's ops).


batch_norm follows Paddle's CPU kernel (paddle/phi/kernels/cpu/batch_norm_kernel.cc):
training normalises with the *biased* batch variance (sum of squares / count) and
updates the running statistics with that same biased variance:
    running = momentum * running + (1 - momentum) * batch_stat
SavedMean is the batch mean and SavedVariance the inverse std 1/sqrt(var + eps), which
the gradient reuses. With global statistics (`use_global_stats`, or `is_test` without
`trainable_statistics`) Y uses the running Mean/Variance and nothing is updated; we then
also write SavedMean/SavedVariance from the running statistics (Paddle leaves them
unset), so batch_norm_grad needs no Mean/Variance inputs. MeanOut/VarianceOut are the
same Variables as Mean/Variance in a program (`inplace`); the kernel reads each channel's
running value before writing it, so it is also right when they are separate buffers.
Inputs are viewed as (A, C, B): (N, C, H*W) for NCHW, (N*H*W, C, 1) for NHWC and 2-D.

The CUDA kernels are in nn_gpu.py.
"""
import functools

import numpy as np
from numba import njit

from . import nn_gpu
from ..registry import NO_GRAD, OpDef, Slot, VarInfo, numel, register_op

# The channel sums may be reassociated: LLVM then vectorizes them (a strict float64
# left-to-right sum is one dependency chain); they still accumulate in float64.
_BN_JIT = dict(nogil=True, cache=True, error_model="numpy", fastmath={"reassoc", "contract"})


@njit(**_BN_JIT)
def bn_train(x, scale, bias, mean_in, var_in, y, mean_out, var_out, saved_mean, saved_inv,
             momentum, eps):
    A, C, B = x.shape
    cnt = A * B
    for c in range(C):
        s = 0.0
        for a in range(A):
            for b in range(B):
                s += x[a, c, b]
        mu = s / cnt
        v = 0.0
        for a in range(A):
            for b in range(B):
                d = x[a, c, b] - mu
                v += d * d
        var = v / cnt                       # biased, as Paddle
        bn_normalize_channel(x, c, mu, var, scale, bias, mean_in, var_in, y, mean_out,
                             var_out, saved_mean, saved_inv, momentum, eps)


@njit(**_BN_JIT)
def bn_normalize_channel(x, c, mu, var, scale, bias, mean_in, var_in, y, mean_out, var_out,
                         saved_mean, saved_inv, momentum, eps):
    """Channel c of a training batch_norm given its batch statistics: running statistics
    (each running value read before it is written: MeanOut is Mean in a program), saved
    statistics, and Y. Shared by batch_norm and sync_batch_norm."""
    A, _, B = x.shape
    inv = 1.0 / np.sqrt(var + eps)
    mean_out[c] = momentum * mean_in[c] + (1.0 - momentum) * mu
    var_out[c] = momentum * var_in[c] + (1.0 - momentum) * var
    saved_mean[c] = mu
    saved_inv[c] = inv
    k = scale[c] * inv
    for a in range(A):
        for b in range(B):
            y[a, c, b] = (x[a, c, b] - mu) * k + bias[c]


@njit(**_BN_JIT)
def bn_global(x, scale, bias, mean_in, var_in, y, mean_out, var_out, saved_mean, saved_inv,
              eps):
    A, C, B = x.shape
    for c in range(C):
        mu = mean_in[c]
        inv = 1.0 / np.sqrt(var_in[c] + eps)
        mean_out[c] = mu                    # unchanged (a copy when not in place)
        var_out[c] = var_in[c]
        saved_mean[c] = mu
        saved_inv[c] = inv
        k = scale[c] * inv
        for a in range(A):
            for b in range(B):
                y[a, c, b] = (x[a, c, b] - mu) * k + bias[c]


@njit(**_BN_JIT)
def bn_grad(x, scale, saved_mean, saved_inv, dy, dx, dscale, dbias, use_global,
            want_dx, want_dscale, want_dbias):
    A, C, B = x.shape
    cnt = A * B
    for c in range(C):
        mu, inv = saved_mean[c], saved_inv[c]
        sdy = 0.0
        sdyx = 0.0                          # sum(dy * xhat)
        for a in range(A):
            for b in range(B):
                d = dy[a, c, b]
                sdy += d
                sdyx += d * (x[a, c, b] - mu) * inv
        if want_dbias:
            dbias[c] = sdy
        if want_dscale:
            dscale[c] = sdyx
        if want_dx:
            k = scale[c] * inv
            m1, m2 = sdy / cnt, sdyx / cnt
            for a in range(A):
                for b in range(B):
                    if use_global:          # statistics are constants
                        dx[a, c, b] = k * dy[a, c, b]
                    else:
                        xhat = (x[a, c, b] - mu) * inv
                        dx[a, c, b] = k * (dy[a, c, b] - (m1 + xhat * m2))


def bn_acb(shape, layout):
    """The (A, C, B) view of a batch_norm input of `shape`."""
    if len(shape) == 2 or layout == "NHWC":
        C = shape[-1] if layout == "NHWC" else shape[1]
        return (numel(shape) // C, C, 1)
    return (shape[0], shape[1], numel(shape[2:]))


def bn_uses_global_stats(attrs):
    """True when batch_norm normalises with the running statistics (no batch statistics)."""
    return bool(attrs["use_global_stats"]) or (bool(attrs["is_test"]) and
                                               not attrs["trainable_statistics"])


def bn_infer(ctx):
    """batch_norm's shape inference."""
    x = ctx.input("X")
    xn = ctx.name("X")
    layout = ctx.attr("data_layout")
    if layout not in ("NCHW", "NHWC"):
        raise ctx.error(f"data_layout must be 'NCHW' or 'NHWC', got {layout!r}")
    if not 2 <= len(x.shape) <= 5:
        raise ctx.error(f"X {xn} must have rank 2 to 5, got shape {tuple(x.shape)}")
    if x.dtype.kind != "f":
        raise ctx.error(f"X {xn} must be float32 or float64, got {x.dtype}")
    C = x.shape[-1] if layout == "NHWC" and len(x.shape) > 2 else x.shape[1]
    for slot in ("Scale", "Bias", "Mean", "Variance"):
        v = ctx.input(slot)
        if v is None:
            raise ctx.error(f"input {slot} is missing")
        if len(v.shape) != 1 or (C != -1 and v.shape[0] not in (C, -1)):
            raise ctx.error(f"{slot} {ctx.name(slot)} must have shape ({C},) (the channels "
                            f"of X {xn} {tuple(x.shape)}, layout {layout}), got "
                            f"{tuple(v.shape)}")
        if v.dtype != x.dtype:
            raise ctx.error(f"{slot} {ctx.name(slot)} must have X's dtype {x.dtype}, got "
                            f"{v.dtype}")
    stat = VarInfo((C,), x.dtype)
    return {"Y": VarInfo(tuple(x.shape), x.dtype), "MeanOut": stat, "VarianceOut": stat,
            "SavedMean": stat, "SavedVariance": stat}


def bn_cpu(cop):
    """batch_norm's CPU kernel thunk."""
    acb = bn_acb(cop.input("X").shape, cop.attrs["data_layout"])
    glob = bn_uses_global_stats(cop.attrs)
    eps, mom = float(cop.attrs["epsilon"]), float(cop.attrs["momentum"])

    def bind(ins, outs):
        args = (ins["X"][0].reshape(acb), ins["Scale"][0], ins["Bias"][0], ins["Mean"][0],
                ins["Variance"][0], outs["Y"][0].reshape(acb), outs["MeanOut"][0],
                outs["VarianceOut"][0], outs["SavedMean"][0], outs["SavedVariance"][0])
        if glob:
            return functools.partial(bn_global, *args, eps)
        return functools.partial(bn_train, *args, mom, eps)
    return bind


def bn_gpu(cop):
    """batch_norm's GPU kernel thunk."""
    return nn_gpu.bn_forward(bn_acb(cop.input("X").shape, cop.attrs["data_layout"]),
                             bn_uses_global_stats(cop.attrs), float(cop.attrs["momentum"]),
                             float(cop.attrs["epsilon"]))


def bn_grad_gpu(cop):
    """batch_norm_grad's GPU kernel thunk."""
    return nn_gpu.bn_backward(bn_acb(cop.input("X").shape, cop.attrs["data_layout"]),
                              bn_uses_global_stats(cop.attrs))


def _bn_grad_rule(g):
    g.append("batch_norm_grad",
             {"X": g.fwd("X"), "Scale": g.fwd("Scale"), "Bias": g.fwd("Bias"),
              "SavedMean": g.fwd("SavedMean"), "SavedVariance": g.fwd("SavedVariance"),
              "Y@GRAD": g.dout("Y")},
             {"X@GRAD": g.dx("X"), "Scale@GRAD": g.dx("Scale"), "Bias@GRAD": g.dx("Bias")},
             dict(g.attrs))


def bn_grad_infer(ctx):
    """batch_norm_grad's shape inference."""
    return {"X@GRAD": ctx.input("X"), "Scale@GRAD": ctx.input("Scale"),
            "Bias@GRAD": ctx.input("Scale")}


def bn_grad_cpu(cop):
    """batch_norm_grad's CPU kernel thunk."""
    acb = bn_acb(cop.input("X").shape, cop.attrs["data_layout"])
    glob = bn_uses_global_stats(cop.attrs)

    def bind(ins, outs):
        x = ins["X"][0].reshape(acb)
        C = acb[1]
        # absent outputs get small placeholders the kernel does not write
        dx = outs["X@GRAD"][0].reshape(acb) if outs.get("X@GRAD") else \
            np.empty((1, 1, 1), x.dtype)
        ds = outs["Scale@GRAD"][0] if outs.get("Scale@GRAD") else np.empty(C, x.dtype)
        db = outs["Bias@GRAD"][0] if outs.get("Bias@GRAD") else np.empty(C, x.dtype)
        return functools.partial(bn_grad, x, ins["Scale"][0], ins["SavedMean"][0],
                                 ins["SavedVariance"][0], ins["Y@GRAD"][0].reshape(acb),
                                 dx, ds, db, glob, bool(outs.get("X@GRAD")),
                                 bool(outs.get("Scale@GRAD")), bool(outs.get("Bias@GRAD")))
    return bind


BN_ATTRS = {"momentum": 0.9, "epsilon": 1e-5, "is_test": False, "data_layout": "NCHW",
            "use_global_stats": False, "trainable_statistics": False}
register_op(OpDef(
    "batch_norm",
    (Slot("X"), Slot("Scale"), Slot("Bias"), Slot("Mean", no_grad=True),
     Slot("Variance", no_grad=True)),
    (Slot("Y"), Slot("MeanOut"), Slot("VarianceOut"), Slot("SavedMean"),
     Slot("SavedVariance")),
    bn_infer, bn_cpu, gpu=bn_gpu, attrs=dict(BN_ATTRS), grad=_bn_grad_rule,
    inplace={"MeanOut": "Mean", "VarianceOut": "Variance"},
    doc="Y = (X - mean) / sqrt(var + eps) * Scale + Bias per channel; batch statistics "
        "(biased variance) and a running-statistics update in training, the running "
        "statistics with is_test / use_global_stats"))
register_op(OpDef(
    "batch_norm_grad",
    (Slot("X"), Slot("Scale"), Slot("Bias", optional=True), Slot("SavedMean"),
     Slot("SavedVariance"), Slot("Y@GRAD")),
    (Slot("X@GRAD", optional=True), Slot("Scale@GRAD", optional=True),
     Slot("Bias@GRAD", optional=True)),
    bn_grad_infer, bn_grad_cpu, gpu=bn_grad_gpu, attrs=dict(BN_ATTRS),
    traits=frozenset((NO_GRAD,)),
    doc="Bias@GRAD = sum(dY); Scale@GRAD = sum(dY * xhat); X@GRAD through the batch "
        "statistics (training) or Scale * inv_std * dY (global statistics)"))
