"""`pad3d` (Paddle's op behind F.pad's reflect / replicate / circular modes, and constant
padding given per spatial dim): pads the D, H, W dims of a 5-D NCDHW (or NDHWC) tensor.

`paddings` is [left, right, top, bottom, front, back] (W, then H, then D). Output cell o
of an axis of size n padded by p before reads input i = o - p, mapped by the mode:
constant: the fill `value` outside [0, n); reflect: -i before, 2 (n - 1) - i after (the
edge is not repeated; each pad must be < n, as in Paddle); replicate: clamped to the edge;
circular: i mod n. The maps are index tables made at bind time (-1 = the fill), so the
kernels are a gather (forward) and a scatter-add of Out@GRAD (gradient; CUDA: atomic adds
into a zeroed X@GRAD, a thread per Out@GRAD element).
"""
import functools

import numpy as np
from numba import njit

from ..gpu import gpu_util
from .conv_gpu import launch
from ..registry import NO_GRAD, OpDef, Slot, VarInfo, register_op, run_calls

cuda = None   # numba.cuda, bound by `kernels()` on first use
MODES = ("constant", "reflect", "replicate", "circular")


def _pads(attrs, err):
    p = [int(v) for v in attrs["paddings"]]
    if len(p) != 6:
        raise err(f"paddings must be 6 ints [left, right, top, bottom, front, back], got {p}")
    if min(p) < 0:
        raise err(f"paddings must be >= 0, got {p}")
    if attrs["mode"] not in MODES:
        raise err(f"mode must be one of {list(MODES)}, got {attrs['mode']!r}")
    return p


def _spatial(attrs, shape, err=ValueError):
    if attrs["data_format"] not in ("NCDHW", "NDHWC"):
        raise err(f"data_format must be 'NCDHW' or 'NDHWC', got {attrs['data_format']!r}")
    if len(shape) != 5:
        raise err(f"X must be 5-D ({attrs['data_format']}), got shape {tuple(shape)}")
    return list(shape[2:]) if attrs["data_format"] == "NCDHW" else list(shape[1:4])


def axis_table(n, before, after, mode):
    i = np.arange(-before, n + after)
    if mode == "constant":
        return np.where((i >= 0) & (i < n), i, -1)
    if mode == "reflect":
        i = np.abs(i)
        return np.where(i >= n, 2 * (n - 1) - i, i)
    if mode == "replicate":
        return np.clip(i, 0, n - 1)
    return np.mod(i, n)


def tables(cop):
    a = cop.attrs
    p = _pads(a, ValueError)
    d, h, w = _spatial(a, cop.input("X").shape)
    return [axis_table(n, p[2 * k], p[2 * k + 1], a["mode"])
            for n, k in ((d, 2), (h, 1), (w, 0))]


def _ncdhw(a, channels_last):
    return a.transpose(0, 4, 1, 2, 3) if channels_last else a


# ---------------------------------------------------------------- CPU kernels
@njit(nogil=True, cache=True)
def pad_fwd(x, out, td, th, tw, value):
    for n in range(out.shape[0]):
        for c in range(out.shape[1]):
            for d in range(out.shape[2]):
                for h in range(out.shape[3]):
                    for w in range(out.shape[4]):
                        i, j, k = td[d], th[h], tw[w]
                        out[n, c, d, h, w] = value if i < 0 or j < 0 or k < 0 \
                            else x[n, c, i, j, k]


@njit(nogil=True, cache=True)
def pad_bwd(dout, dx, td, th, tw):
    dx[...] = 0.0
    for n in range(dout.shape[0]):
        for c in range(dout.shape[1]):
            for d in range(dout.shape[2]):
                for h in range(dout.shape[3]):
                    for w in range(dout.shape[4]):
                        i, j, k = td[d], th[h], tw[w]
                        if i >= 0 and j >= 0 and k >= 0:
                            dx[n, c, i, j, k] += dout[n, c, d, h, w]


def _cpu(cop):
    t, last = tables(cop), cop.attrs["data_format"] == "NDHWC"
    value = float(cop.attrs["value"])

    def bind(ins, outs):
        return functools.partial(pad_fwd, _ncdhw(ins["X"][0], last), _ncdhw(outs["Out"][0], last),
                                 *t, value)
    return bind


def _grad_cpu(cop):
    t, last = tables(cop), cop.attrs["data_format"] == "NDHWC"

    def bind(ins, outs):
        return functools.partial(pad_bwd, _ncdhw(ins["Out@GRAD"][0], last),
                                 _ncdhw(outs["X@GRAD"][0], last), *t)
    return bind


# ---------------------------------------------------------------- CUDA
@gpu_util.lazy
def kernels():
    global cuda
    from numba import cuda

    @cuda.jit(device=True)
    def source(o, oshape, xs, td, th, tw):
        """The X offset Out element o (row-major over the NCDHW-ordered oshape) reads, or -1."""
        w = o % oshape[4]
        t = o // oshape[4]
        h = t % oshape[3]
        t //= oshape[3]
        d = t % oshape[2]
        t //= oshape[2]
        c = t % oshape[1]
        n = t // oshape[1]
        i, j, k = td[d], th[h], tw[w]
        if i < 0 or j < 0 or k < 0:
            return -1, n, c, d, h, w
        return n * xs[0] + c * xs[1] + i * xs[2] + j * xs[3] + k * xs[4], n, c, d, h, w

    @cuda.jit(cache=True)
    def fwd(x, out, oshape, xs, os, td, th, tw, value):
        for o in range(cuda.grid(1), out.size, cuda.gridsize(1)):
            src, n, c, d, h, w = source(o, oshape, xs, td, th, tw)
            out[n * os[0] + c * os[1] + d * os[2] + h * os[3] + w * os[4]] = \
                value if src < 0 else x[src]

    @cuda.jit(cache=True)
    def bwd(dout, dx, oshape, xs, os, td, th, tw):
        for o in range(cuda.grid(1), dout.size, cuda.gridsize(1)):
            src, n, c, d, h, w = source(o, oshape, xs, td, th, tw)
            if src >= 0:
                cuda.atomic.add(dx, src,
                                dout[n * os[0] + c * os[1] + d * os[2] + h * os[3] + w * os[4]])

    return gpu_util.Kernels(fwd=fwd, bwd=bwd)


def _geo(x, out, last):
    def nc(s):
        return (s[0], s[4], s[1], s[2], s[3]) if last else tuple(s)
    return nc(out.shape), nc(gpu_util.c_strides(x.shape)), nc(gpu_util.c_strides(out.shape))


def _gpu(cop):
    t, last = tables(cop), cop.attrs["data_format"] == "NDHWC"
    value = float(cop.attrs["value"])

    def bind(ins, outs):
        x, out, f = ins["X"][0], outs["Out"][0], gpu_util.flat
        dt = [gpu_util.to_device(v) for v in t]
        return launch(kernels().fwd, out.size, f(x), f(out), *_geo(x, out, last), *dt,
                      np.array(value).astype(x.dtype)[()])
    return bind


def _grad_gpu(cop):
    t, last = tables(cop), cop.attrs["data_format"] == "NDHWC"

    def bind(ins, outs):
        d, dx, f = ins["Out@GRAD"][0], outs["X@GRAD"][0], gpu_util.flat
        dt = [gpu_util.to_device(v) for v in t]
        return functools.partial(run_calls, (
            gpu_util.fill_thunk(dx, 0.0),
            launch(kernels().bwd, d.size, f(d), f(dx), *_geo(dx, d, last), *dt)))
    return bind


# ---------------------------------------------------------------- op
def _infer(ctx):
    x = ctx.input("X")
    p = _pads(ctx.attrs, ctx.error)
    d, h, w = _spatial(ctx.attrs, tuple(x.shape), ctx.error)
    out = []
    for n, k in ((d, 2), (h, 1), (w, 0)):
        if ctx.attr("mode") == "reflect" and n >= 0 and max(p[2 * k], p[2 * k + 1]) >= n:
            raise ctx.error(f"reflect padding {p[2 * k:2 * k + 2]} must be smaller than the "
                            f"padded dim ({n}) of X {ctx.name('X')} {tuple(x.shape)}")
        if ctx.attr("mode") in ("replicate", "circular") and n == 0:
            raise ctx.error(f"{ctx.attr('mode')} padding of an empty dim of X {tuple(x.shape)}")
        out.append(-1 if n < 0 else n + p[2 * k] + p[2 * k + 1])
    s = list(x.shape)
    if ctx.attr("data_format") == "NCDHW":
        s[2:] = out
    else:
        s[1:4] = out
    return {"Out": VarInfo(tuple(s), x.dtype)}


def _grad_rule(g):
    g.append("pad3d_grad", {"X": g.fwd("X"), "Out@GRAD": g.dout("Out")}, {"X@GRAD": g.dx("X")},
             dict(g.attrs))


ATTRS = {"paddings": [0, 0, 0, 0, 0, 0], "mode": "constant", "value": 0.0,
         "data_format": "NCDHW"}
register_op(OpDef("pad3d", (Slot("X"),), (Slot("Out"),), _infer, _cpu, gpu=_gpu, attrs=ATTRS,
                  grad=_grad_rule,
                  doc="pad the D, H, W dims: constant, reflect, replicate or circular"))
register_op(OpDef("pad3d_grad", (Slot("X"), Slot("Out@GRAD")), (Slot("X@GRAD"),),
                  lambda ctx: {"X@GRAD": ctx.input("X")}, _grad_cpu, gpu=_grad_gpu,
                  attrs=dict(ATTRS), traits=frozenset({NO_GRAD})))
