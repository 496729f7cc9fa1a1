"""`unfold` (Paddle's op behind F.unfold / nn.Unfold: im2col of a batch of NCHW images)
and its gradient (col2im, a scatter-add).

Y is (N, C * kh * kw, L), L = out_h * out_w, with Y[n, c * kh * kw + i * kw + j, oh * out_w
+ ow] = X[n, c, oh * sh - top + i * dh, ow * sw - left + j * dw], 0 where that is in the
padding. `paddings` is Paddle's [top, left, bottom, right]. Which input pixel each (i, j,
oh, ow) reads is an index table made at bind time (-1 = padding), so the kernels are a
gather (forward) and a scatter-add of Y@GRAD (gradient; CUDA: atomic adds into a zeroed
X@GRAD, a thread per Y@GRAD element).
"""
import functools

import numpy as np
from numba import njit

from ..gpu import gpu_util
from .conv_gpu import launch
from ..registry import NO_GRAD, OpDef, Slot, VarInfo, register_op, run_calls

cuda = None   # numba.cuda, bound by `kernels()` on first use


def _geometry(attrs, shape, err=ValueError):
    """(kh, kw, out_h, out_w) of X's `shape`, checking the attributes."""
    k, s, p, d = (list(map(int, attrs[a])) for a in
                  ("kernel_sizes", "strides", "paddings", "dilations"))
    if len(k) != 2 or len(s) != 2 or len(d) != 2 or len(p) != 4:
        raise err(f"kernel_sizes, strides, dilations must be 2 ints and paddings 4 "
                  f"[top, left, bottom, right], got {k}, {s}, {d}, {p}")
    if min(k + s + d) < 1 or min(p) < 0:
        raise err(f"kernel_sizes, strides and dilations must be >= 1 and paddings >= 0, got "
                  f"{k}, {s}, {d}, {p}")
    if len(shape) != 4:
        raise err(f"X must be 4-D (N, C, H, W), got shape {tuple(shape)}")
    out = []
    for n, kk, ss, dd, lo, hi in zip(shape[2:], k, s, d, p[:2], p[2:]):
        span = n + lo + hi - (dd * (kk - 1) + 1)
        if n >= 0 and span < 0:
            raise err(f"the dilated kernel {kk} (dilation {dd}) does not fit X's padded dim "
                      f"{n} + {lo} + {hi} (X shape {tuple(shape)})")
        out.append(-1 if n < 0 else span // ss + 1)
    return k[0], k[1], out[0], out[1]


def table(attrs, shape):
    """(kh * kw, L) int64: the flat H * W index each (kernel cell, output position) reads."""
    kh, kw, oh, ow = _geometry(attrs, shape)
    (sh, sw), (top, left), (dh, dw) = attrs["strides"], attrs["paddings"][:2], attrs["dilations"]
    i, j = np.divmod(np.arange(kh * kw), kw)
    y, x = np.divmod(np.arange(oh * ow), ow)
    r = y[None, :] * sh - top + i[:, None] * dh
    c = x[None, :] * sw - left + j[:, None] * dw
    H, W = shape[2:]
    return np.where((r >= 0) & (r < H) & (c >= 0) & (c < W), r * W + c, -1).astype(np.int64)


# ---------------------------------------------------------------- CPU kernels
@njit(nogil=True, cache=True)
def unfold_fwd(x, y, tab):
    K, L = tab.shape
    for n in range(x.shape[0]):
        for c in range(x.shape[1]):
            for r in range(K):
                for t in range(L):
                    s = tab[r, t]
                    y[n, c * K + r, t] = 0.0 if s < 0 else x[n, c, s]


@njit(nogil=True, cache=True)
def unfold_bwd(dy, dx, tab):
    K, L = tab.shape
    dx[...] = 0.0
    for n in range(dx.shape[0]):
        for c in range(dx.shape[1]):
            for r in range(K):
                for t in range(L):
                    s = tab[r, t]
                    if s >= 0:
                        dx[n, c, s] += dy[n, c * K + r, t]


def _flat_hw(a):
    return a.reshape(a.shape[0], a.shape[1], -1)


def _cpu(cop):
    tab = table(cop.attrs, cop.input("X").shape)

    def bind(ins, outs):
        return functools.partial(unfold_fwd, _flat_hw(ins["X"][0]), outs["Y"][0], tab)
    return bind


def _grad_cpu(cop):
    tab = table(cop.attrs, cop.input("X").shape)

    def bind(ins, outs):
        return functools.partial(unfold_bwd, ins["Y@GRAD"][0], _flat_hw(outs["X@GRAD"][0]), tab)
    return bind


# ---------------------------------------------------------------- CUDA
@gpu_util.lazy
def kernels():
    global cuda
    from numba import cuda

    @cuda.jit(device=True)
    def source(o, tab, K, L, CK, HW, C):
        """The flat X index Y element o reads, or -1 (padding)."""
        t = o % L
        row = (o // L) % CK
        n = o // (L * CK)
        s = tab[(row % K) * L + t]
        return -1 if s < 0 else (n * C + row // K) * HW + s

    @cuda.jit(cache=True)
    def fwd(x, y, tab, K, L, CK, HW, C):
        for o in range(cuda.grid(1), y.size, cuda.gridsize(1)):
            s = source(o, tab, K, L, CK, HW, C)
            y[o] = 0.0 if s < 0 else x[s]

    @cuda.jit(cache=True)
    def bwd(dy, dx, tab, K, L, CK, HW, C):
        for o in range(cuda.grid(1), dy.size, cuda.gridsize(1)):
            s = source(o, tab, K, L, CK, HW, C)
            if s >= 0:
                cuda.atomic.add(dx, s, dy[o])

    return gpu_util.Kernels(fwd=fwd, bwd=bwd)


def _dims(tab, xshape):
    K, L = tab.shape
    C = xshape[1]
    return K, L, C * K, xshape[2] * xshape[3], C


def _gpu(cop):
    shape = cop.input("X").shape
    tab = table(cop.attrs, shape)

    def bind(ins, outs):
        x, y, f = ins["X"][0], outs["Y"][0], gpu_util.flat
        return launch(kernels().fwd, y.size, f(x), f(y), gpu_util.to_device(tab.ravel()),
                      *_dims(tab, shape))
    return bind


def _grad_gpu(cop):
    shape = cop.input("X").shape
    tab = table(cop.attrs, shape)

    def bind(ins, outs):
        dy, dx, f = ins["Y@GRAD"][0], outs["X@GRAD"][0], gpu_util.flat
        return functools.partial(run_calls, (
            gpu_util.fill_thunk(dx, 0.0),
            launch(kernels().bwd, dy.size, f(dy), f(dx), gpu_util.to_device(tab.ravel()),
                   *_dims(tab, shape))))
    return bind


# ---------------------------------------------------------------- op
def _infer(ctx):
    x = ctx.input("X")
    kh, kw, oh, ow = _geometry(ctx.attrs, tuple(x.shape), ctx.error)
    c = x.shape[1] * kh * kw if x.shape[1] >= 0 else -1
    return {"Y": VarInfo((x.shape[0], c, -1 if min(oh, ow) < 0 else oh * ow), x.dtype)}


def _grad_rule(g):
    g.append("unfold_grad", {"X": g.fwd("X"), "Y@GRAD": g.dout("Y")}, {"X@GRAD": g.dx("X")},
             dict(g.attrs))


ATTRS = {"kernel_sizes": [1, 1], "strides": [1, 1], "paddings": [0, 0, 0, 0],
         "dilations": [1, 1]}
register_op(OpDef("unfold", (Slot("X"),), (Slot("Y"),), _infer, _cpu, gpu=_gpu, attrs=ATTRS,
                  grad=_grad_rule, doc="im2col: sliding kh x kw blocks of X as columns"))
register_op(OpDef("unfold_grad", (Slot("X"), Slot("Y@GRAD")), (Slot("X@GRAD"),),
                  lambda ctx: {"X@GRAD": ctx.input("X")}, _grad_cpu, gpu=_grad_gpu,
                  attrs=dict(ATTRS), traits=frozenset({NO_GRAD})))
