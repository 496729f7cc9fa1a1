"""`max_pool2d_with_index` (Paddle's op behind F.adaptive_max_pool2d and
F.max_pool2d(return_mask=True)): NCHW max pooling that also outputs Mask, the int32 index
h * W + w within the input plane of each maximum, and its gradient (Out@GRAD scattered to
X@GRAD at Mask).

Windows as Paddle's MaxPool2dWithIndexFunctor: adaptive, Paddle's bins [floor(i*H/OH),
ceil((i+1)*H/OH)) with OH = ksize[0]; otherwise [oh*s - p, oh*s - p + k) clipped to the
input, OH = (H + 2p - k) // s + 1 (no ceil_mode); global_pooling, the whole plane. The
first maximum in row-major order wins (Paddle's strict `>`). CUDA: a thread per Out element
forward; the gradient zeroes X@GRAD and adds each Out@GRAD element at its Mask atomically.
"""
import functools

import numpy as np
from numba import njit

from ..gpu import gpu_util
from .conv_gpu import launch, split_nchw
from ..registry import NO_GRAD, OpDef, Slot, VarInfo, register_op, run_calls

cuda = None   # numba.cuda, bound by `kernels()` on first use


def geometry(attrs, shape, err=ValueError):
    """(kh, kw, sh, sw, ph, pw, OH, OW, adaptive) of an (N, C, H, W) input."""
    if len(shape) != 4:
        raise err(f"X must be 4-D (N, C, H, W), got shape {tuple(shape)}")
    H, W = shape[2], shape[3]
    k = [int(v) for v in attrs["ksize"]]
    s = [int(v) for v in attrs["strides"]]
    p = [int(v) for v in attrs["paddings"]]
    if len(k) != 2 or len(s) != 2 or len(p) not in (2, 4):
        raise err(f"ksize {k} and strides {s} must have 2 elements, paddings 2 (or 4 equal "
                  f"pairs), got paddings {p}")
    if len(p) == 4:
        if p[0] != p[1] or p[2] != p[3]:
            raise err(f"paddings {p}: only symmetric padding is supported")
        p = [p[0], p[2]]
    if attrs["global_pooling"]:
        return H, W, 1, 1, 0, 0, 1, 1, False
    if min(k) < 1:
        raise err(f"ksize must be positive, got {k}")
    if attrs["adaptive"]:
        return k[0], k[1], 1, 1, 0, 0, k[0], k[1], True
    if min(s) < 1 or min(p) < 0:
        raise err(f"strides {s} must be positive and paddings {p} >= 0")
    oh = -1 if H < 0 else (H + 2 * p[0] - k[0]) // s[0] + 1
    ow = -1 if W < 0 else (W + 2 * p[1] - k[1]) // s[1] + 1
    if (H >= 0 and oh < 1) or (W >= 0 and ow < 1):
        raise err(f"output size {[oh, ow]} is not positive (X {tuple(shape)}, ksize {k}, "
                  f"strides {s}, paddings {p})")
    return k[0], k[1], s[0], s[1], p[0], p[1], oh, ow, False


@njit(nogil=True, cache=True, inline="always")
def _span(o, k, s, p, size, osize, adaptive):
    if adaptive:
        return (o * size) // osize, -((-(o + 1) * size) // osize)
    a = o * s - p
    return max(a, 0), min(a + k, size)


@njit(nogil=True, cache=True)
def fwd(x, out, mask, kh, kw, sh, sw, ph, pw, adaptive):
    N, C, H, W = x.shape
    OH, OW = out.shape[2], out.shape[3]
    for n in range(N):
        for c in range(C):
            for oh in range(OH):
                hs, he = _span(oh, kh, sh, ph, H, OH, adaptive)
                for ow in range(OW):
                    ws, we = _span(ow, kw, sw, pw, W, OW, adaptive)
                    best, idx = -np.inf, -1
                    for h in range(hs, he):
                        for w in range(ws, we):
                            if x[n, c, h, w] > best or idx < 0:
                                best, idx = x[n, c, h, w], h * W + w
                    out[n, c, oh, ow] = best if idx >= 0 else 0.0
                    mask[n, c, oh, ow] = idx


@njit(nogil=True, cache=True)
def bwd(mask, d, dx):
    N, C, H, W = dx.shape
    dx[...] = 0.0
    for n in range(N):
        for c in range(C):
            for oh in range(d.shape[2]):
                for ow in range(d.shape[3]):
                    i = mask[n, c, oh, ow]
                    if i >= 0:
                        dx[n, c, i // W, i % W] += d[n, c, oh, ow]


@gpu_util.lazy
def kernels():
    global cuda
    from numba import cuda
    nchw = cuda.jit(device=True)(split_nchw)

    @cuda.jit(cache=True)
    def fwd_k(x, out, mask, g, adaptive):
        N, C, H, W = x.shape
        OH, OW = out.shape[2], out.shape[3]
        kh, kw, sh, sw, ph, pw = g
        for o in range(cuda.grid(1), out.size, cuda.gridsize(1)):
            n, c, oh, ow = nchw(o, C, OH, OW)
            if adaptive:
                hs, he = (oh * H) // OH, -((-(oh + 1) * H) // OH)
                ws, we = (ow * W) // OW, -((-(ow + 1) * W) // OW)
            else:
                hs, he = max(oh * sh - ph, 0), min(oh * sh - ph + kh, H)
                ws, we = max(ow * sw - pw, 0), min(ow * sw - pw + kw, W)
            idx = -1
            best = x[n, c, 0, 0]
            for h in range(hs, he):
                for w in range(ws, we):
                    if idx < 0 or x[n, c, h, w] > best:
                        best, idx = x[n, c, h, w], h * W + w
            out[n, c, oh, ow] = best if idx >= 0 else 0.0
            mask[n, c, oh, ow] = idx

    @cuda.jit(cache=True)
    def bwd_k(mask, d, dx, plane):
        # plane: (H * W, OH * OW); element o of Out@GRAD belongs to plane o // (OH * OW)
        for o in range(cuda.grid(1), d.size, cuda.gridsize(1)):
            i = mask[o]
            if i >= 0:
                cuda.atomic.add(dx, (o // plane[1]) * plane[0] + i, d[o])

    return gpu_util.Kernels(fwd=fwd_k, bwd=bwd_k)


def _cpu(cop):
    g = geometry(cop.attrs, cop.input("X").shape)

    def bind(ins, outs):
        return functools.partial(fwd, ins["X"][0], outs["Out"][0], outs["Mask"][0], *g[:6], g[8])
    return bind


def _grad_cpu(cop):
    def bind(ins, outs):
        return functools.partial(bwd, ins["Mask"][0], ins["Out@GRAD"][0], outs["X@GRAD"][0])
    return bind


def _gpu(cop):
    g = geometry(cop.attrs, cop.input("X").shape)

    def bind(ins, outs):
        out = outs["Out"][0]
        return launch(kernels().fwd, out.size, ins["X"][0], out, outs["Mask"][0], g[:6], g[8])
    return bind


def _grad_gpu(cop):
    x = cop.input("X").shape
    plane = (x[2] * x[3], cop.input("Mask").shape[2] * cop.input("Mask").shape[3])

    def bind(ins, outs):
        d, dx, f = ins["Out@GRAD"][0], outs["X@GRAD"][0], gpu_util.flat
        return functools.partial(run_calls, (
            gpu_util.fill_thunk(dx, 0.0),
            launch(kernels().bwd, d.size, f(ins["Mask"][0]), f(d), f(dx), plane)))
    return bind


def _infer(ctx):
    x = ctx.input("X")
    if x.dtype.kind != "f":
        raise ctx.error(f"X {ctx.name('X')} must be float32 or float64, got {x.dtype}")
    g = geometry(ctx.attrs, tuple(x.shape), ctx.error)
    shape = (x.shape[0], x.shape[1], g[6], g[7])
    return {"Out": VarInfo(shape, x.dtype), "Mask": VarInfo(shape, np.dtype("int32"))}


def _grad_rule(g):
    g.append("max_pool2d_with_index_grad", {"X": g.fwd("X"), "Mask": g.fwd("Mask"),
                                            "Out@GRAD": g.dout("Out")},
             {"X@GRAD": g.dx("X")}, dict(g.attrs))


ATTRS = {"ksize": [1, 1], "strides": [1, 1], "paddings": [0, 0], "global_pooling": False,
         "adaptive": False}
register_op(OpDef(
    "max_pool2d_with_index", (Slot("X"),), (Slot("Out"), Slot("Mask")), _infer, _cpu, gpu=_gpu,
    attrs=ATTRS, grad=_grad_rule,
    doc="max pooling (NCHW; adaptive bins or windows) with the argmax h * W + w in Mask"))
register_op(OpDef(
    "max_pool2d_with_index_grad", (Slot("X"), Slot("Mask", no_grad=True), Slot("Out@GRAD")),
    (Slot("X@GRAD"),), lambda ctx: {"X@GRAD": ctx.input("X")}, _grad_cpu, gpu=_grad_gpu,
    attrs=dict(ATTRS), traits=frozenset({NO_GRAD})))
