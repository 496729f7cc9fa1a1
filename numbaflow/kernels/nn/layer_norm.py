"""layer_norm (Paddle's op) and its gradient.

X is viewed as (left, right) rows with `right` = the product of the dims from
`begin_norm_axis` on. Each row is normalised by its own mean and (biased) variance:
Y = (X - Mean) / sqrt(Variance + epsilon) * Scale + Bias, with Scale and Bias optional
and of shape (right,); Mean and Variance (shape (left,)) are outputs, as in Paddle.
Rows accumulate in float64 on both devices. The GPU kernels give one thread to each row
(forward, X@GRAD) or column (Scale@GRAD, Bias@GRAD): simple, and fine for the widths
layer_norm is used at.
"""
import functools
import math

import numpy as np
from numba import njit

from ..gpu import gpu_util
from ..registry import NO_GRAD, OpDef, Slot, VarInfo, numel, register_op, sequence

cuda = None   # numba.cuda, bound by _gpu_kernels on first use (gpu_util's convention)


def _split(shape, axis):
    return numel(shape[:axis]), numel(shape[axis:])


# Row / column bodies: plain Python compiled twice (njit and cuda device functions), so
# they call nothing but math and builtins.
def _forward_row(x2, scale, bias, y2, mean, var, r, eps, has_scale, has_bias):
    n = x2.shape[1]
    s = 0.0
    for c in range(n):
        s += x2[r, c]
    mu = s / n
    v = 0.0
    for c in range(n):
        d = x2[r, c] - mu
        v += d * d
    v = v / n
    rstd = 1.0 / math.sqrt(v + eps)
    mean[r] = mu
    var[r] = v
    for c in range(x2.shape[1]):
        h = (x2[r, c] - mu) * rstd
        if has_scale:
            h = h * scale[c]
        if has_bias:
            h = h + bias[c]
        y2[r, c] = h


def _dx_row(x2, scale, mean, var, dy2, dx2, r, eps, has_scale):
    n = x2.shape[1]
    mu, rstd = mean[r], 1.0 / math.sqrt(var[r] + eps)
    s1 = 0.0     # sum of dy * scale
    s2 = 0.0     # sum of dy * scale * xhat
    for c in range(n):
        g = dy2[r, c] * (scale[c] if has_scale else 1.0)
        s1 += g
        s2 += g * (x2[r, c] - mu) * rstd
    for c in range(n):
        g = dy2[r, c] * (scale[c] if has_scale else 1.0)
        xh = (x2[r, c] - mu) * rstd
        dx2[r, c] = rstd * (g - s1 / n - xh * s2 / n)


def _param_col(x2, mean, var, dy2, dscale, dbias, c, eps, want_scale, want_bias):
    ss = 0.0
    sb = 0.0
    for r in range(x2.shape[0]):
        ss += dy2[r, c] * (x2[r, c] - mean[r]) / math.sqrt(var[r] + eps)
        sb += dy2[r, c]
    if want_scale:
        dscale[c] = ss
    if want_bias:
        dbias[c] = sb


# On the CPU the row sums may be reassociated: LLVM then vectorizes them (a strict
# left-to-right float64 sum is one long dependency chain); they still accumulate in float64.
_CPU_JIT = dict(nogil=True, cache=True, fastmath={"reassoc", "contract"})
_forward_row_cpu = njit(**_CPU_JIT)(_forward_row)
_dx_row_cpu = njit(**_CPU_JIT)(_dx_row)


@njit(**_CPU_JIT)
def layer_norm_kernel(x2, scale, bias, y2, mean, var, eps, has_scale, has_bias):
    for r in range(x2.shape[0]):
        _forward_row_cpu(x2, scale, bias, y2, mean, var, r, eps, has_scale, has_bias)


@njit(**_CPU_JIT)
def layer_norm_grad_kernel(x2, scale, mean, var, dy2, dx2, dscale, dbias, eps, has_scale,
                           want_dx, want_scale, want_bias, acc):
    """X@GRAD row by row; Scale@GRAD / Bias@GRAD accumulated over the same rows into the
    float64 rows of `acc` (2, n) (instead of a column walk: x2[:, c] strides across every
    row; `acc` comes from bind: np.zeros here would compile numpy's allocators, ~0.2 s)."""
    if want_dx:
        for r in range(x2.shape[0]):
            _dx_row_cpu(x2, scale, mean, var, dy2, dx2, r, eps, has_scale)
    if want_scale or want_bias:
        n = x2.shape[1]
        for c in range(n):
            acc[0, c] = 0.0
            acc[1, c] = 0.0
        for r in range(x2.shape[0]):
            mu, rstd = mean[r], 1.0 / math.sqrt(var[r] + eps)
            for c in range(n):
                g = dy2[r, c]
                acc[0, c] += g * ((x2[r, c] - mu) * rstd)
                acc[1, c] += g
        for c in range(n):
            if want_scale:
                dscale[c] = acc[0, c]
            if want_bias:
                dbias[c] = acc[1, c]


@gpu_util.lazy
def _gpu_kernels():
    global cuda
    from numba import cuda
    fwd_row = cuda.jit(device=True)(_forward_row)
    dx_row = cuda.jit(device=True)(_dx_row)
    param_col = cuda.jit(device=True)(_param_col)

    @cuda.jit(cache=True)
    def forward(x2, scale, bias, y2, mean, var, eps, has_scale, has_bias):
        for r in range(cuda.grid(1), x2.shape[0], cuda.gridsize(1)):
            fwd_row(x2, scale, bias, y2, mean, var, r, eps, has_scale, has_bias)

    @cuda.jit(cache=True)
    def dx(x2, scale, mean, var, dy2, dx2, eps, has_scale):
        for r in range(cuda.grid(1), x2.shape[0], cuda.gridsize(1)):
            dx_row(x2, scale, mean, var, dy2, dx2, r, eps, has_scale)

    @cuda.jit(cache=True)
    def params(x2, mean, var, dy2, dscale, dbias, eps, want_scale, want_bias):
        for c in range(cuda.grid(1), x2.shape[1], cuda.gridsize(1)):
            param_col(x2, mean, var, dy2, dscale, dbias, c, eps, want_scale, want_bias)

    return gpu_util.Kernels(forward=forward, dx=dx, params=params)


# ---------------------------------------------------------------- shapes
def _layer_norm_infer(ctx):
    x, axis = ctx.input("X"), int(ctx.attr("begin_norm_axis"))
    if not 1 <= axis < len(x.shape):
        raise ctx.error(f"begin_norm_axis {axis} must be in [1, {len(x.shape) - 1}] for X "
                        f"{ctx.name('X')} of shape {tuple(x.shape)}")
    left_dims, right_dims = x.shape[:axis], x.shape[axis:]
    right = -1 if -1 in right_dims else numel(right_dims)
    left = -1 if -1 in left_dims else numel(left_dims)
    for slot in ("Scale", "Bias"):
        p = ctx.input(slot)
        if p is not None and right != -1 and numel(p.shape) != right:
            raise ctx.error(f"{slot} {ctx.name(slot)} has {numel(p.shape)} elements but each "
                            f"normalised row of X {ctx.name('X')} {tuple(x.shape)} has {right}")
    stat = VarInfo((left,), x.dtype)
    return {"Y": VarInfo(tuple(x.shape), x.dtype), "Mean": stat, "Variance": stat}


def _scratch(outs, slot, n, dtype, device):
    got = outs.get(slot)
    if got:
        return got[0]
    if device == "gpu":
        from numba import cuda as _cuda
        return _cuda.device_array((max(n, 1),), dtype)
    return np.empty((max(n, 1),), dtype)


def _args(cop, ins, outs, device):
    left, right = _split(cop.input("X").shape, int(cop.attrs["begin_norm_axis"]))
    x = ins["X"][0]
    one = _scratch({}, None, 1, x.dtype, device)
    scale = ins["Scale"][0].reshape(-1) if ins.get("Scale") else one
    bias = ins["Bias"][0].reshape(-1) if ins.get("Bias") else one
    mean = _scratch(outs, "Mean", left, x.dtype, device).reshape(-1)
    var = _scratch(outs, "Variance", left, x.dtype, device).reshape(-1)
    return (x.reshape(left, right), scale, bias, outs["Y"][0].reshape(left, right), mean, var,
            float(cop.attrs["epsilon"]), bool(ins.get("Scale")), bool(ins.get("Bias")))


def _layer_norm_cpu(cop):
    return lambda ins, outs: functools.partial(layer_norm_kernel, *_args(cop, ins, outs, "cpu"))


def _layer_norm_gpu(cop):
    def bind(ins, outs):
        args = _args(cop, ins, outs, "gpu")
        return gpu_util.launch_flat(_gpu_kernels().forward, args[0].shape[0], *args)
    return bind


def _grad_args(cop, ins, outs, device):
    left, right = _split(cop.input("X").shape, int(cop.attrs["begin_norm_axis"]))
    x = ins["X"][0]
    one = _scratch({}, None, 1, x.dtype, device)
    scale = ins["Scale"][0].reshape(-1) if ins.get("Scale") else one
    dx = outs["X@GRAD"][0].reshape(left, right) if outs.get("X@GRAD") else \
        _scratch({}, None, 1, x.dtype, device).reshape(1, 1)
    dscale = outs["Scale@GRAD"][0].reshape(-1) if outs.get("Scale@GRAD") else one
    dbias = outs["Bias@GRAD"][0].reshape(-1) if outs.get("Bias@GRAD") else one
    return dict(x2=x.reshape(left, right), scale=scale, mean=ins["Mean"][0].reshape(-1),
                var=ins["Variance"][0].reshape(-1), dy2=ins["Y@GRAD"][0].reshape(left, right),
                dx2=dx, dscale=dscale, dbias=dbias, eps=float(cop.attrs["epsilon"]),
                has_scale=bool(ins.get("Scale")), want_dx=bool(outs.get("X@GRAD")),
                want_scale=bool(outs.get("Scale@GRAD")), want_bias=bool(outs.get("Bias@GRAD")))


def _layer_norm_grad_cpu(cop):
    def bind(ins, outs):
        a = _grad_args(cop, ins, outs, "cpu")
        return functools.partial(layer_norm_grad_kernel, a["x2"], a["scale"], a["mean"],
                                 a["var"], a["dy2"], a["dx2"], a["dscale"], a["dbias"],
                                 a["eps"], a["has_scale"], a["want_dx"], a["want_scale"],
                                 a["want_bias"], np.empty((2, a["x2"].shape[1])))
    return bind


def _layer_norm_grad_gpu(cop):
    def bind(ins, outs):
        a, k = _grad_args(cop, ins, outs, "gpu"), _gpu_kernels()
        calls = []
        if a["want_dx"]:
            calls.append(gpu_util.launch_flat(k.dx, a["x2"].shape[0], a["x2"], a["scale"],
                                              a["mean"], a["var"], a["dy2"], a["dx2"],
                                              a["eps"], a["has_scale"]))
        if a["want_scale"] or a["want_bias"]:
            calls.append(gpu_util.launch_flat(k.params, a["x2"].shape[1], a["x2"], a["mean"],
                                              a["var"], a["dy2"], a["dscale"], a["dbias"],
                                              a["eps"], a["want_scale"], a["want_bias"]))
        return sequence(calls) if calls else (lambda: None)
    return bind


def _layer_norm_rule(g):
    g.append("layer_norm_grad",
             {"X": g.fwd("X"), "Scale": g.fwd("Scale"), "Mean": g.fwd("Mean"),
              "Variance": g.fwd("Variance"), "Y@GRAD": g.dout("Y")},
             {"X@GRAD": g.dx("X"), "Scale@GRAD": g.dx("Scale"), "Bias@GRAD": g.dx("Bias")},
             dict(g.attrs))


def _layer_norm_grad_infer(ctx):
    out = {"X@GRAD": ctx.input("X")}
    right = _split(ctx.input("X").shape, int(ctx.attr("begin_norm_axis")))[1]
    for slot in ("Scale", "Bias"):
        p = ctx.input(slot) if slot == "Scale" else None
        out[slot + "@GRAD"] = p or VarInfo((right,), ctx.input("X").dtype)
    return out


_ATTRS = {"epsilon": 1e-5, "begin_norm_axis": 1, "is_test": False}

register_op(OpDef(
    "layer_norm", (Slot("X"), Slot("Scale", optional=True), Slot("Bias", optional=True)),
    (Slot("Y"), Slot("Mean", optional=True), Slot("Variance", optional=True)),
    _layer_norm_infer, _layer_norm_cpu, gpu=_layer_norm_gpu, attrs=dict(_ATTRS),
    grad=_layer_norm_rule,
    doc="Y = (X - mean) / sqrt(var + epsilon) * Scale + Bias over the dims from "
        "begin_norm_axis"))
register_op(OpDef(
    "layer_norm_grad",
    (Slot("X"), Slot("Scale", optional=True), Slot("Mean"), Slot("Variance"), Slot("Y@GRAD")),
    (Slot("X@GRAD", optional=True), Slot("Scale@GRAD", optional=True),
     Slot("Bias@GRAD", optional=True)),
    _layer_norm_grad_infer, _layer_norm_grad_cpu, gpu=_layer_norm_grad_gpu,
    attrs=dict(_ATTRS), traits=frozenset((NO_GRAD,)),
    doc="Gradients of layer_norm (Mean and Variance are not differentiated through)"))
