"""`nearest_interp_v2` and `bilinear_interp_v2` (Paddle's ops behind F.interpolate /
F.upsample on 4-D input) and their gradients.

Both are a gather along H and along W from per-axis tables made once at bind time: output
row k reads input rows lo[k] and hi[k] with weights (1 - f[k], f[k]) (nearest: lo == hi,
f == 0). The tables follow Paddle's CPU kernels (paddle/phi/kernels/cpu/interpolate_kernel.cc)
including their float32 arithmetic, so the same indices come out:

* output size: `scale` [sh, sw] when both > 0 (out = int(in * s)), else out_h / out_w;
* ratio = (in - 1) / (out - 1) with align_corners, else 1 / scale when a scale is given,
  else in / out (0 when out == 1);
* nearest: in_k = int(ratio * k + 0.5) with align_corners, else int(ratio * k);
* bilinear: with align_mode 0 and not align_corners the half-pixel source
  max(ratio * (k + 0.5) - 0.5, 0), else ratio * k; lo = its integer part, hi = min(lo + 1,
  in - 1), f = source - lo.

The gradient scatters Out@GRAD back with the same weights (CPU: a loop; CUDA: a thread per
Out@GRAD element with atomic adds into a zeroed X@GRAD). NHWC runs the same loops on
transposed views (CPU) or with NHWC element strides (CUDA).
"""
import functools

import numpy as np
from numba import njit

from ..gpu import gpu_util
from .conv_gpu import launch, split_nchw
from ..registry import NO_GRAD, OpDef, Slot, VarInfo, register_op, run_calls

cuda = None   # numba.cuda, bound by `kernels()` on first use

F32 = np.float32


# ---------------------------------------------------------------- geometry
def _scales(attrs, err):
    s = [float(v) for v in attrs["scale"]]
    if len(s) not in (0, 2):
        raise err(f"scale must be [] or [scale_h, scale_w], got {s}")
    return s if len(s) == 2 and min(s) > 0 else None


def out_hw(attrs, in_hw, err=ValueError):
    """[OH, OW] (-1 where it depends on an unknown input dim)."""
    s = _scales(attrs, err)
    if s is not None:
        return [-1 if n < 0 else int(F32(n) * F32(v)) for n, v in zip(in_hw, s)]
    return [int(attrs["out_h"]), int(attrs["out_w"])]


def axis_table(n_in, n_out, scale, align_corners, align_mode, nearest):
    """(lo, hi, w_lo, w_hi) for one axis: int64 indices and float32 weights."""
    ratio = F32(0.0)
    if n_out > 1:
        if align_corners:
            ratio = F32(n_in - 1) / F32(n_out - 1)
        elif scale is not None:
            ratio = F32(1.0 / scale)
        else:
            ratio = F32(n_in) / F32(n_out)
    k = np.arange(n_out)
    if nearest:
        src = (ratio * k.astype(F32)).astype(np.float64)
        lo = (src + 0.5 if align_corners else src).astype(np.int64)
        return lo, lo, np.ones(n_out, F32), np.zeros(n_out, F32)
    half = align_mode == 0 and not align_corners
    centre = np.float64(ratio) * (k + 0.5) - 0.5               # float * double in C++
    lo = (centre if half else ratio * k.astype(F32)).astype(np.int64)   # truncation
    lo = np.maximum(lo, 0)
    hi = np.minimum(lo + 1, n_in - 1)
    if half:
        f = np.maximum(centre.astype(F32), F32(0)) - lo.astype(F32)
    else:
        f = ratio * k.astype(F32) - lo.astype(F32)
    f = f.astype(F32)
    return lo, hi, (F32(1) - f).astype(F32), f


def _layout(attrs, err=ValueError):
    fmt = attrs["data_layout"]
    if fmt not in ("NCHW", "NHWC", "AnyLayout"):
        raise err(f"data_layout must be 'NCHW' or 'NHWC', got {fmt!r}")
    return fmt == "NHWC"


def tables(cop):
    """(nhwc, the H table + the W table as 8 arrays) of a concrete interp op."""
    a, x = cop.attrs, cop.input("X")
    nhwc = _layout(a)
    in_hw = x.shape[1:3] if nhwc else x.shape[2:4]
    o = (cop.output("Out") or cop.input("Out@GRAD")).shape     # forward or gradient op
    o_hw = o[1:3] if nhwc else o[2:4]
    s = _scales(a, ValueError) or [None, None]
    nearest = cop.type.startswith("nearest")
    t = []
    for n_in, n_out, sc in zip(in_hw, o_hw, s):
        t += axis_table(n_in, n_out, sc, bool(a["align_corners"]), int(a["align_mode"]), nearest)
    return nhwc, [v.astype(x.dtype) if v.dtype == F32 else v for v in t]


# ---------------------------------------------------------------- CPU kernels
@njit(nogil=True, cache=True)
def interp_fwd(x, out, lh, hh, a0, a1, lw, hw, b0, b1):
    N, C = x.shape[0], x.shape[1]
    for n in range(N):
        for c in range(C):
            for k in range(out.shape[2]):
                for m in range(out.shape[3]):
                    out[n, c, k, m] = (x[n, c, lh[k], lw[m]] * a0[k] * b0[m]
                                       + x[n, c, hh[k], lw[m]] * a1[k] * b0[m]
                                       + x[n, c, lh[k], hw[m]] * a0[k] * b1[m]
                                       + x[n, c, hh[k], hw[m]] * a1[k] * b1[m])


@njit(nogil=True, cache=True)
def interp_bwd(d, dx, lh, hh, a0, a1, lw, hw, b0, b1):
    N, C = dx.shape[0], dx.shape[1]
    for n in range(N):
        for c in range(C):
            for i in range(dx.shape[2]):
                for j in range(dx.shape[3]):
                    dx[n, c, i, j] = 0.0
            for k in range(d.shape[2]):
                for m in range(d.shape[3]):
                    g = d[n, c, k, m]
                    dx[n, c, lh[k], lw[m]] += g * a0[k] * b0[m]
                    dx[n, c, hh[k], lw[m]] += g * a1[k] * b0[m]
                    dx[n, c, lh[k], hw[m]] += g * a0[k] * b1[m]
                    dx[n, c, hh[k], hw[m]] += g * a1[k] * b1[m]


def _nchw(a, nhwc):
    return a.transpose(0, 3, 1, 2) if nhwc else a


def _cpu(cop):
    nhwc, t = tables(cop)

    def bind(ins, outs):
        return functools.partial(interp_fwd, _nchw(ins["X"][0], nhwc),
                                 _nchw(outs["Out"][0], nhwc), *t)
    return bind


def _grad_cpu(cop):
    nhwc, t = tables(cop)

    def bind(ins, outs):
        return functools.partial(interp_bwd, _nchw(ins["Out@GRAD"][0], nhwc),
                                 _nchw(outs["X@GRAD"][0], nhwc), *t)
    return bind


# ---------------------------------------------------------------- CUDA
@gpu_util.lazy
def kernels():
    global cuda
    from numba import cuda
    nchw = cuda.jit(device=True)(split_nchw)

    @cuda.jit(cache=True)
    def fwd(x, out, oshape, xs, os, lh, hh, a0, a1, lw, hw, b0, b1):
        C, OH, OW = oshape[1], oshape[2], oshape[3]
        for o in range(cuda.grid(1), out.size, cuda.gridsize(1)):
            n, c, k, m = nchw(o, C, OH, OW)
            b = n * xs[0] + c * xs[1]
            r0, r1, c0, c1 = lh[k] * xs[2], hh[k] * xs[2], lw[m] * xs[3], hw[m] * xs[3]
            out[n * os[0] + c * os[1] + k * os[2] + m * os[3]] = (
                x[b + r0 + c0] * a0[k] * b0[m] + x[b + r1 + c0] * a1[k] * b0[m]
                + x[b + r0 + c1] * a0[k] * b1[m] + x[b + r1 + c1] * a1[k] * b1[m])

    @cuda.jit(cache=True)
    def bwd(d, dx, oshape, xs, os, lh, hh, a0, a1, lw, hw, b0, b1):
        C, OH, OW = oshape[1], oshape[2], oshape[3]
        for o in range(cuda.grid(1), d.size, cuda.gridsize(1)):
            n, c, k, m = nchw(o, C, OH, OW)
            b = n * xs[0] + c * xs[1]
            g = d[n * os[0] + c * os[1] + k * os[2] + m * os[3]]
            r0, r1, c0, c1 = lh[k] * xs[2], hh[k] * xs[2], lw[m] * xs[3], hw[m] * xs[3]
            cuda.atomic.add(dx, b + r0 + c0, g * a0[k] * b0[m])
            cuda.atomic.add(dx, b + r1 + c0, g * a1[k] * b0[m])
            cuda.atomic.add(dx, b + r0 + c1, g * a0[k] * b1[m])
            cuda.atomic.add(dx, b + r1 + c1, g * a1[k] * b1[m])

    return gpu_util.Kernels(fwd=fwd, bwd=bwd)


def _strides(x, out, nhwc):
    def nchw(s):
        return (s[0], s[3], s[1], s[2]) if nhwc else tuple(s)
    return (nchw(out.shape), nchw(gpu_util.c_strides(x.shape)),
            nchw(gpu_util.c_strides(out.shape)))


def _gpu(cop):
    nhwc, t = tables(cop)

    def bind(ins, outs):
        x, out = ins["X"][0], outs["Out"][0]
        dt = [gpu_util.to_device(v) for v in t]
        f = gpu_util.flat
        return launch(kernels().fwd, out.size, f(x), f(out), *_strides(x, out, nhwc), *dt)
    return bind


def _grad_gpu(cop):
    nhwc, t = tables(cop)

    def bind(ins, outs):
        d, dx = ins["Out@GRAD"][0], outs["X@GRAD"][0]
        dt = [gpu_util.to_device(v) for v in t]
        f = gpu_util.flat
        return functools.partial(run_calls, (
            gpu_util.fill_thunk(dx, 0.0),
            launch(kernels().bwd, d.size, f(d), f(dx), *_strides(dx, d, nhwc), *dt)))
    return bind


# ---------------------------------------------------------------- ops
def _infer(ctx):
    x = ctx.input("X")
    xn = ctx.name("X")
    if len(x.shape) != 4 or x.dtype.kind != "f":
        raise ctx.error(f"X {xn} must be a 4-D float tensor (N, C, H, W), got {tuple(x.shape)} "
                        f"{x.dtype}")
    nhwc = _layout(ctx.attrs, ctx.error)
    in_hw = x.shape[1:3] if nhwc else x.shape[2:4]
    oh, ow = out_hw(ctx.attrs, in_hw, ctx.error)
    if (oh != -1 and oh < 1) or (ow != -1 and ow < 1):
        raise ctx.error(f"the output size [{oh}, {ow}] must be positive: give out_h / out_w, "
                        f"or a scale [sh, sw] > 0 (X {xn} is {tuple(x.shape)})")
    if ctx.attr("align_mode") not in (0, 1):
        raise ctx.error(f"align_mode must be 0 or 1, got {ctx.attr('align_mode')}")
    shape = (x.shape[0], oh, ow, x.shape[3]) if nhwc else (x.shape[0], x.shape[1], oh, ow)
    return {"Out": VarInfo(shape, x.dtype)}


def _grad_rule(g):
    g.append(g.op.type + "_grad", {"X": g.fwd("X"), "Out@GRAD": g.dout("Out")},
             {"X@GRAD": g.dx("X")}, dict(g.attrs))


def _grad_infer(ctx):
    return {"X@GRAD": ctx.input("X")}


for _method in ("nearest", "bilinear"):
    _attrs = {"data_layout": "NCHW", "out_d": -1, "out_h": -1, "out_w": -1, "scale": [],
              "interp_method": _method, "align_corners": True, "align_mode": 1}
    register_op(OpDef(
        f"{_method}_interp_v2", (Slot("X"),), (Slot("Out"),), _infer, _cpu, gpu=_gpu,
        attrs=_attrs, grad=_grad_rule,
        doc=f"{_method} resize of 4-D X to out_h x out_w (or X's size times scale)"))
    register_op(OpDef(
        f"{_method}_interp_v2_grad", (Slot("X"), Slot("Out@GRAD")), (Slot("X@GRAD"),),
        _grad_infer, _grad_cpu, gpu=_grad_gpu, attrs=dict(_attrs),
        traits=frozenset({NO_GRAD})))
