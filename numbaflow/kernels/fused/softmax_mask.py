"""fused_softmax_mask: attention's `softmax(scale * X + Mask)` over the last axis, one op.

Out = softmax(scale * X + Mask, axis=-1), with Mask optional and broadcast over X's
leading dims (batch, heads: its last dim is X's), and `causal=True` keeping only the
positions j <= i of each [.., Tq, Tk] score matrix (row i of the query axis) without a
mask tensor: the others get probability 0, as they would with a -inf mask. Paddle's
`fused_softmax_mask` (softmax_mask_fuse) is scale=1 with a mask,
`fused_softmax_mask_upper_triangle` is scale=1, causal, no mask: both are this op.

Each row is one pass over its data: z = scale * x + mask written once into Out, its max,
exp and sum, then the normalisation (multiplied by 1/sum) while the row is in cache; the
unfused chain `scale -> elementwise_add -> softmax` reads and writes the whole score
tensor three times. The gradient is one pass too: dX = scale * Y * (dY - sum(dY * Y));
the mask gets no gradient (Slot no_grad, as in Paddle).

The CPU rows use kernels/fastmath.py's vectorizable exp and float64 row sums, like
reduction.py's softmax. The GPU kernels give one block to each row with a
shared-memory tree, like gpu_util's softmax rows; they are built here with their own
tree because a device function shared across modules races under the simulator
(gpu_util's docstring).
"""
import functools
import math

import numpy as np
from numba import float64, njit

from ..gpu import gpu_util
from ..fastmath import exp as _fast_exp
from ..registry import NO_GRAD, OpDef, Slot, broadcast_shapes, numel, register_op

cuda = None   # numba.cuda, bound by _gpu_kernels on first use (gpu_util's convention)

_CPU_JIT = dict(nogil=True, cache=True, error_model="numpy", fastmath={"reassoc", "contract"})


@njit(**_CPU_JIT)
def fused_softmax_rows(x2, mask2, mrow, out2, scale, has_mask, causal, tq):
    """out2[n] = softmax(scale * x2[n] + mask2[mrow[n]]) over rows of length R; causal:
    only the first n % tq + 1 entries of row n take part (the rest are 0)."""
    N, R = x2.shape
    if R == 0:
        return
    for n in range(N):
        xr, orow = x2[n], out2[n]
        valid = min(R, n % tq + 1) if causal else R
        # z = scale * x + mask into the output row, and its max (m starts as a z: of
        # X's dtype, so the loop stays in it)
        if has_mask:
            mr = mask2[mrow[n]]
            m = scale * xr[0] + mr[0]
            for r in range(valid):
                z = scale * xr[r] + mr[r]
                orow[r] = z
                m = max(m, z)
        else:
            m = scale * xr[0]
            for r in range(valid):
                z = scale * xr[r]
                orow[r] = z
                m = max(m, z)
        s = 0.0
        for r in range(valid):
            e = _fast_exp(orow[r] - m)
            orow[r] = e
            s += e
        inv = xr.dtype.type(1.0 / s)     # X's dtype: the loop stays float32 (10% faster)
        for r in range(valid):
            orow[r] = orow[r] * inv
        for r in range(valid, R):
            orow[r] = 0.0


@njit(**_CPU_JIT)
def fused_softmax_grad_rows(y2, dy2, dx2, scale, causal, tq):
    """dx2[n] = scale * y * (dy - sum(dy * y)) of each row (positions a causal row masks
    have y = 0, so their gradient is 0)."""
    N, R = y2.shape
    for n in range(N):
        y, dy, dx = y2[n], dy2[n], dx2[n]
        valid = min(R, n % tq + 1) if causal else R
        s = 0.0
        for r in range(valid):
            s += dy[r] * y[r]
        for r in range(valid):
            dx[r] = scale * y[r] * (dy[r] - s)
        for r in range(valid, R):
            dx[r] = 0.0


@gpu_util.lazy
def _gpu_kernels():
    global cuda
    from numba import cuda

    T = gpu_util.RED_THREADS

    @cuda.jit(device=True)
    def block_reduce(sh, tid, v, is_max):
        """The max (is_max) or sum of every thread's `v` over the block, to every thread."""
        sh[tid] = v
        cuda.syncthreads()
        s = cuda.blockDim.x // 2
        while s > 0:
            if tid < s:
                a, b = sh[tid], sh[tid + s]
                sh[tid] = (a if a >= b else b) if is_max else a + b
            cuda.syncthreads()
            s //= 2
        out = sh[0]
        cuda.syncthreads()
        return out

    @cuda.jit(cache=True)
    def forward(x2, mask2, mrow, out2, scale, has_mask, causal, tq):
        sh = cuda.shared.array(T, float64)
        tid, step = cuda.threadIdx.x, cuda.blockDim.x
        N, R = x2.shape
        for n in range(cuda.blockIdx.x, N, cuda.gridDim.x):
            valid = min(R, n % tq + 1) if causal else R
            mr = mrow[n]
            m = -math.inf
            for r in range(tid, valid, step):
                z = scale * float64(x2[n, r]) + (float64(mask2[mr, r]) if has_mask else 0.0)
                m = z if z > m else m
            m = block_reduce(sh, tid, m, True)
            acc = 0.0
            for r in range(tid, valid, step):
                z = scale * float64(x2[n, r]) + (float64(mask2[mr, r]) if has_mask else 0.0)
                acc += math.exp(z - m)
            inv = 1.0 / block_reduce(sh, tid, acc, False)
            for r in range(tid, R, step):
                if r < valid:
                    z = scale * float64(x2[n, r]) + \
                        (float64(mask2[mr, r]) if has_mask else 0.0)
                    out2[n, r] = math.exp(z - m) * inv
                else:
                    out2[n, r] = 0.0

    @cuda.jit(cache=True)
    def backward(y2, dy2, dx2, scale, causal, tq):
        sh = cuda.shared.array(T, float64)
        tid, step = cuda.threadIdx.x, cuda.blockDim.x
        N, R = y2.shape
        for n in range(cuda.blockIdx.x, N, cuda.gridDim.x):
            valid = min(R, n % tq + 1) if causal else R
            acc = 0.0
            for r in range(tid, valid, step):
                acc += float64(dy2[n, r]) * float64(y2[n, r])
            s = block_reduce(sh, tid, acc, False)
            for r in range(tid, R, step):
                dx2[n, r] = scale * float64(y2[n, r]) * (float64(dy2[n, r]) - s) \
                    if r < valid else 0.0

    return gpu_util.Kernels(forward=forward, backward=backward)


# ---------------------------------------------------------------- shapes and binding
def _rows(shape):
    """(rows, row length, query length tq) of X viewed as (N, R) rows."""
    R = shape[-1] if len(shape) else 1
    tq = shape[-2] if len(shape) > 1 else 1
    return numel(shape[:-1]), R, tq


def mask_rows(x_shape, m_shape):
    """For each row of X (flattened leading dims), the row of the mask it adds (the
    mask's leading dims broadcast to X's)."""
    lead_x = tuple(x_shape[:-1])
    lead_m = (1,) * (len(x_shape) - len(m_shape)) + tuple(m_shape[:-1])
    src = np.arange(numel(lead_m), dtype=np.int64).reshape(lead_m)
    return np.ascontiguousarray(np.broadcast_to(src, lead_x).reshape(-1))


def _infer(ctx):
    x, m = ctx.input("X"), ctx.input("Mask")
    if np.dtype(x.dtype).kind != "f":
        raise ctx.error(f"X {ctx.name('X')} must be float32 or float64, got {x.dtype}")
    if ctx.attr("causal") and len(x.shape) < 2:
        raise ctx.error(f"causal=True needs X {ctx.name('X')} of rank >= 2 ([.., Tq, Tk]), "
                        f"got shape {tuple(x.shape)}")
    if m is not None:
        if np.dtype(m.dtype) != np.dtype(x.dtype):
            raise ctx.error(f"Mask {ctx.name('Mask')} must have X's dtype {x.dtype}, got "
                            f"{m.dtype}; cast it first")
        ok = 0 < len(m.shape) <= len(x.shape) and m.shape[-1] in (x.shape[-1], -1)
        if ok:
            try:
                ok = broadcast_shapes(m.shape, x.shape) == tuple(x.shape)
            except ValueError:
                ok = False
        if not ok:
            raise ctx.error(f"Mask {ctx.name('Mask')} {tuple(m.shape)} must broadcast to X "
                            f"{ctx.name('X')} {tuple(x.shape)} over the leading dims with the "
                            f"same last dim")
    return {"Out": x}


def _bind_args(cop, ins, outs, device):
    xs = cop.input("X").shape
    N, R, tq = _rows(xs)
    x = ins["X"][0].reshape(N, R)
    if ins.get("Mask"):
        mask = ins["Mask"][0]
        mrow = mask_rows(xs, mask.shape)
        mask2 = mask.reshape(-1, R)
    else:
        mrow, mask2 = np.zeros(max(N, 1), np.int64), x[:1] if N else x
    if device == "gpu":
        mrow = gpu_util.to_device(mrow)
    dt = np.dtype(cop.input("X").dtype).type
    return (x, mask2, mrow, outs["Out"][0].reshape(N, R), dt(cop.attrs["scale"]),
            bool(ins.get("Mask")), bool(cop.attrs["causal"]), max(int(tq), 1))


def _cpu(cop):
    return lambda ins, outs: functools.partial(fused_softmax_rows,
                                               *_bind_args(cop, ins, outs, "cpu"))


def _gpu(cop):
    def bind(ins, outs):
        args = _bind_args(cop, ins, outs, "gpu")
        return gpu_util.launch_rows(_gpu_kernels().forward, args[0].shape[0],
                                    args[0].shape[1], *args)
    return bind


def _grad_args(cop, ins, outs):
    N, R, tq = _rows(cop.input("Out").shape)
    dt = np.dtype(cop.input("Out").dtype).type
    return (ins["Out"][0].reshape(N, R), ins["Out@GRAD"][0].reshape(N, R),
            outs["X@GRAD"][0].reshape(N, R), dt(cop.attrs["scale"]),
            bool(cop.attrs["causal"]), max(int(tq), 1))


def _grad_cpu(cop):
    return lambda ins, outs: functools.partial(fused_softmax_grad_rows,
                                               *_grad_args(cop, ins, outs))


def _grad_gpu(cop):
    def bind(ins, outs):
        args = _grad_args(cop, ins, outs)
        return gpu_util.launch_rows(_gpu_kernels().backward, args[0].shape[0],
                                    args[0].shape[1], *args)
    return bind


def _rule(g):
    g.append("fused_softmax_mask_grad", {"Out": g.fwd("Out"), "Out@GRAD": g.dout("Out")},
             {"X@GRAD": g.dx("X")}, dict(g.attrs))


_ATTRS = {"scale": 1.0, "causal": False}

register_op(OpDef(
    "fused_softmax_mask", (Slot("X"), Slot("Mask", optional=True, no_grad=True)),
    (Slot("Out"),), _infer, _cpu, gpu=_gpu, attrs=dict(_ATTRS), grad=_rule,
    doc="Out = softmax(scale * X + Mask) over the last axis (Mask broadcast over the "
        "leading dims; causal: positions j > i of each [Tq, Tk] matrix get 0)"))
register_op(OpDef(
    "fused_softmax_mask_grad", (Slot("Out"), Slot("Out@GRAD")), (Slot("X@GRAD"),),
    lambda ctx: {"X@GRAD": ctx.input("Out")}, _grad_cpu, gpu=_grad_gpu,
    attrs=dict(_ATTRS), traits=frozenset((NO_GRAD,)),
    doc="X@GRAD = scale * Out * (Out@GRAD - sum(Out@GRAD * Out)) over the last axis"))
