"""`max_pool3d_with_index` (Paddle's op behind max_pool3d / adaptive_max_pool3d with
return_mask=True) and its gradient: max pooling of NCDHW X with the argmax in Mask (int32,
d * H * W + h * W + w within the sample's channel volume).

Windows as Paddle's MaxPool3dWithIndexFunctor: [o*s - p, min(o*s - p + k, n)) clipped at
0 (symmetric paddings [pd, ph, pw], no ceil_mode), or the adaptive bins; pool3d.py's
window tables with no padding after. The first maximum in (d, h, w) row-major order wins.
The gradient adds Out@GRAD at Mask with pool_index.py's kernels (a volume is a plane of
D * H rows).
"""
import functools

import numpy as np
from numba import njit

from ..gpu import gpu_util
from . import pool_index
from .conv_gpu import launch
from .pool3d import axis_table, triple
from ..registry import NO_GRAD, OpDef, Slot, VarInfo, register_op, run_calls

cuda = None   # numba.cuda, bound by `kernels()` on first use


def windows(attrs, shape, err=ValueError):
    """Per spatial axis (size, k, s, p, out, adaptive)."""
    if len(shape) != 5:
        raise err(f"X must be 5-D (NCDHW), got shape {tuple(shape)}")
    sizes = list(shape[2:])
    k = triple(attrs["ksize"], "ksize", err)
    if attrs["global_pooling"]:
        return [(n, n, 1, 0, 1, False) for n in sizes]
    if attrs["adaptive"]:
        if min(k) <= 0:
            raise err(f"adaptive pooling's ksize is the output size, positive; got {k}")
        return [(n, o, 1, 0, o, True) for n, o in zip(sizes, k)]
    s, p = triple(attrs["strides"], "strides", err), triple(attrs["paddings"], "paddings", err)
    if min(k) <= 0 or min(s) <= 0 or min(p) < 0:
        raise err(f"ksize {k} and strides {s} must be positive and paddings {p} >= 0")
    out = [-1 if n < 0 else (n + 2 * pp - kk) // ss + 1 for n, kk, ss, pp in zip(sizes, k, s, p)]
    if any(n >= 0 and o <= 0 for n, o in zip(sizes, out)):
        raise err(f"output size {out} is not positive: X spatial size {sizes}, ksize {k}, "
                  f"strides {s}, paddings {p}")
    return list(zip(sizes, k, s, p, out, [False] * 3))


def tables(cop):
    return [axis_table(n, k, s, p, 0, o, a) for n, k, s, p, o, a in
            windows(cop.attrs, cop.input("X").shape)]


@njit(nogil=True, cache=True)
def fwd(x, out, mask, td, th, tw):
    N, C, D, H, W = x.shape
    for n in range(N):
        for c in range(C):
            for a in range(out.shape[2]):
                for b in range(out.shape[3]):
                    for e in range(out.shape[4]):
                        idx, best = -1, x[n, c, 0, 0, 0]
                        for z in range(td[0, a], td[1, a]):
                            for y in range(th[0, b], th[1, b]):
                                for u in range(tw[0, e], tw[1, e]):
                                    if idx < 0 or x[n, c, z, y, u] > best:
                                        best, idx = x[n, c, z, y, u], (z * H + y) * W + u
                        out[n, c, a, b, e] = best if idx >= 0 else 0.0
                        mask[n, c, a, b, e] = idx


def _as_2d(a, rows):
    """A (N, C, *spatial) buffer as (N, C, rows, -1): a 3-D flat index d*H*W + h*W + w is
    then pool_index's 2-D h' * W + w with rows D * H (Out, Mask: rows 1)."""
    return a.reshape(a.shape[0], a.shape[1], rows, -1)


def _cpu(cop):
    t = tables(cop)

    def bind(ins, outs):
        return functools.partial(fwd, ins["X"][0], outs["Out"][0], outs["Mask"][0], *t)
    return bind


def _grad_cpu(cop):
    rows = cop.input("X").shape[2] * cop.input("X").shape[3]

    def bind(ins, outs):     # pool_index's scatter of Out@GRAD at Mask
        return functools.partial(pool_index.bwd, _as_2d(ins["Mask"][0], 1),
                                 _as_2d(ins["Out@GRAD"][0], 1), _as_2d(outs["X@GRAD"][0], rows))
    return bind


@gpu_util.lazy
def kernels():
    global cuda
    from numba import cuda

    @cuda.jit(cache=True)
    def fwd_k(x, out, mask, xshape, oshape, td, th, tw):
        D, H, W = xshape[2], xshape[3], xshape[4]
        for o in range(cuda.grid(1), out.size, cuda.gridsize(1)):
            e = o % oshape[4]
            t = o // oshape[4]
            b = t % oshape[3]
            t //= oshape[3]
            a = t % oshape[2]
            base = (t // oshape[2]) * D * H * W     # the (n, c) volume
            idx, best = -1, x[base]
            for z in range(td[0, a], td[1, a]):
                for y in range(th[0, b], th[1, b]):
                    for u in range(tw[0, e], tw[1, e]):
                        v = x[base + (z * H + y) * W + u]
                        if idx < 0 or v > best:
                            best, idx = v, (z * H + y) * W + u
            out[o] = best if idx >= 0 else 0.0
            mask[o] = idx

    return gpu_util.Kernels(fwd=fwd_k)


def _gpu(cop):
    xshape = tuple(cop.input("X").shape)

    def bind(ins, outs):
        out, f = outs["Out"][0], gpu_util.flat
        t = [gpu_util.to_device(v) for v in tables(cop)]
        return launch(kernels().fwd, out.size, f(ins["X"][0]), f(out), f(outs["Mask"][0]),
                      xshape, tuple(out.shape), *t)
    return bind


def _grad_gpu(cop):
    """pool_index's CUDA scatter, over volumes of (D*H*W, OD*OH*OW) elements."""
    vol = tuple(int(np.prod(cop.input(s).shape[2:])) for s in ("X", "Mask"))

    def bind(ins, outs):
        g, f = outs["X@GRAD"][0], gpu_util.flat
        scatter = pool_index.kernels().bwd
        return functools.partial(run_calls, (gpu_util.fill_thunk(g, 0.0), launch(
            scatter, ins["Out@GRAD"][0].size, f(ins["Mask"][0]), f(ins["Out@GRAD"][0]), f(g), vol)))
    return bind


def _infer(ctx):
    x = ctx.input("X")
    if x.dtype.kind != "f":
        raise ctx.error(f"X {ctx.name('X')} must be float32 or float64, got {x.dtype}")
    shape = tuple(x.shape[:2]) + tuple(w[4] for w in windows(ctx.attrs, tuple(x.shape),
                                                             ctx.error))
    return {"Out": VarInfo(shape, x.dtype), "Mask": VarInfo(shape, np.dtype("int32"))}


def _grad_rule(g):
    g.append("max_pool3d_with_index_grad", {"X": g.fwd("X"), "Mask": g.fwd("Mask"),
                                            "Out@GRAD": g.dout("Out")},
             {"X@GRAD": g.dx("X")}, dict(g.attrs))


ATTRS = {"ksize": [1, 1, 1], "strides": [1, 1, 1], "paddings": [0, 0, 0],
         "global_pooling": False, "adaptive": False}
register_op(OpDef(
    "max_pool3d_with_index", (Slot("X"),), (Slot("Out"), Slot("Mask")), _infer, _cpu, gpu=_gpu,
    attrs=ATTRS, grad=_grad_rule,
    doc="max pooling (NCDHW; adaptive bins or windows) with the argmax d*H*W + h*W + w in Mask"))
register_op(OpDef(
    "max_pool3d_with_index_grad", (Slot("X"), Slot("Mask", no_grad=True), Slot("Out@GRAD")),
    (Slot("X@GRAD"),), lambda ctx: {"X@GRAD": ctx.input("X")}, _grad_cpu, gpu=_grad_gpu,
    attrs=dict(ATTRS), traits=frozenset({NO_GRAD})))
