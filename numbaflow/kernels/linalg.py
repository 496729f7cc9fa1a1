"""Matrix products: `mul` (what `fc` emits, as in Paddle) and `matmul_v2` (paddle.matmul).

Both run BLAS through `np.dot` inside njit, on views prepared once at bind time
(flattened to 2-D for `mul`, batched 3-D with broadcast batch indices for `matmul_v2`).

On the GPU both run one tiled kernel (`_gemm_kernel`): 16x16 output tiles per block,
the operands staged through shared memory one 16-wide K slab at a time, batches on the
grid's z axis with the same broadcast batch indices, and transposes handled while
loading a tile (threadIdx.x always walks the stored contiguous axis, so loads coalesce).
Gradients of broadcast batch operands are summed by `_accumulate` after the products.
"""
import functools

import numpy as np
from numba import njit

from . import gpu_util
from .registry import OpDef, Slot, VarInfo, numel, register_op, run_calls

cuda = None   # numba.cuda, bound lazily by the kernel builders (gpu_util explains)
TILE = 8 if gpu_util.SIMULATED else 16   # output tile edge (smaller under the simulator)


SMALL_GEMM = 4096     # m*n*k up to which a plain loop beats the BLAS call's fixed cost


@njit(nogil=True, cache=True)
def gemm(a, b, out):
    m, k = a.shape
    n = b.shape[1]
    if m * n * k > SMALL_GEMM or k == 0:
        np.dot(a, b, out)
        return
    for i in range(m):      # tiny products (the seed model's 10x1 @ 1x10): no BLAS call
        for j in range(n):
            acc = 0.0
            for p in range(k):
                acc += a[i, p] * b[p, j]
            out[i, j] = acc


@njit(nogil=True, cache=True)
def batched_gemm(x, y, out, ix, iy, tx, ty):
    for b in range(out.shape[0]):
        xa = x[ix[b]]
        ya = y[iy[b]]
        if tx and ty:
            np.dot(xa.T, ya.T, out[b])
        elif tx:
            np.dot(xa.T, ya, out[b])
        elif ty:
            np.dot(xa, ya.T, out[b])
        else:
            np.dot(xa, ya, out[b])


@njit(nogil=True, cache=True)
def accumulate_batches(src, dst, idx):
    dst[:] = 0
    for b in range(src.shape[0]):
        dst[idx[b]] += src[b]


# ---------------------------------------------------------------- GPU kernels
@gpu_util.lazy
def _gemm_kernel(dtype):
    """The tiled batched product for one dtype (shared tiles need a compile-time type)."""
    global cuda
    from numba import cuda
    nbt, zero, TL = gpu_util.nb_type(dtype), np.dtype(dtype).type(0), TILE

    @cuda.jit
    def gemm(x3, y3, out3, ix, iy, tx, ty):
        # out3[b] = op(x3[ix[b]]) @ op(y3[iy[b]]), op(a) = a.T where tx / ty
        sa = cuda.shared.array((TL, TL + 1), nbt)    # sa[i, k]; +1 avoids bank conflicts
        sb = cuda.shared.array((TL, TL + 1), nbt)    # sb[k, j]
        lx, ly = cuda.threadIdx.x, cuda.threadIdx.y
        M, N = out3.shape[1], out3.shape[2]
        K = x3.shape[1] if tx else x3.shape[2]
        i0, j0 = cuda.blockIdx.y * TL, cuda.blockIdx.x * TL
        i, j = i0 + ly, j0 + lx
        for b in range(cuda.blockIdx.z, out3.shape[0], cuda.gridDim.z):
            xb, yb = ix[b], iy[b]
            acc = zero
            for k0 in range(0, K, TL):
                if tx:     # X stored (K, M)
                    ii, kk = i0 + lx, k0 + ly
                    sa[lx, ly] = x3[xb, kk, ii] if ii < M and kk < K else zero
                else:      # X stored (M, K)
                    kk = k0 + lx
                    sa[ly, lx] = x3[xb, i, kk] if i < M and kk < K else zero
                if ty:     # Y stored (N, K)
                    jj, kk = j0 + ly, k0 + lx
                    sb[lx, ly] = y3[yb, jj, kk] if jj < N and kk < K else zero
                else:      # Y stored (K, N)
                    kk = k0 + ly
                    sb[ly, lx] = y3[yb, kk, j] if kk < K and j < N else zero
                cuda.syncthreads()
                for k in range(TL):
                    acc += sa[ly, k] * sb[k, lx]
                cuda.syncthreads()
            if i < M and j < N:
                out3[b, i, j] = acc
    return gemm


@gpu_util.lazy
def _accumulate():
    global cuda
    from numba import cuda

    @cuda.jit
    def accumulate(src, dst, idx):
        # dst[d] = sum of src[b] over the b with idx[b] == d (a broadcast operand's grad)
        n, P = src.shape
        for e in range(cuda.grid(1), dst.shape[0] * P, cuda.gridsize(1)):
            d = e // P
            p = e - d * P
            acc = src[0, p] * 0
            for b in range(n):
                if idx[b] == d:
                    acc += src[b, p]
            dst[d, p] = acc
    return accumulate


def gemm_thunk(x3, y3, out3, ix, iy, tx, ty):
    """A thunk for out3[b] = op(x3[ix[b]]) @ op(y3[iy[b]]) (device 3-D arrays; ix, iy
    host int arrays, uploaded here)."""
    nb, M, N = out3.shape
    if out3.size == 0:
        return lambda: None
    grid = ((N + TILE - 1) // TILE, (M + TILE - 1) // TILE, min(nb, 65535))
    launch = gpu_util.configured(_gemm_kernel(out3.dtype.name), grid, (TILE, TILE))
    return functools.partial(launch, x3, y3, out3, gpu_util.to_device(ix),
                             gpu_util.to_device(iy), bool(tx), bool(ty))


_ONE = np.zeros(1, np.int64)


# ---------------------------------------------------------------- mul (fc)
def _flat2(shape, ncol):
    return (numel(shape[:ncol]) if -1 not in shape[:ncol] else -1,
            numel(shape[ncol:]) if -1 not in shape[ncol:] else -1)


def _mul_infer(ctx):
    x, y = ctx.input("X"), ctx.input("Y")
    xn, yn = ctx.attr("x_num_col_dims"), ctx.attr("y_num_col_dims")
    if not 0 < xn < len(x.shape) + (len(x.shape) == 0):
        raise ctx.error(f"x_num_col_dims={xn} does not fit X {ctx.name('X')} of shape {x.shape}")
    kx, ky = _flat2(x.shape, xn)[1], _flat2(y.shape, yn)[0]
    if kx != -1 and ky != -1 and kx != ky:
        raise ctx.error(f"X {ctx.name('X')} {x.shape} flattened to (., {kx}) cannot be "
                        f"multiplied by Y {ctx.name('Y')} {y.shape} flattened to ({ky}, .)")
    return {"Out": VarInfo(tuple(x.shape[:xn]) + tuple(y.shape[yn:]), x.dtype)}


def _mul_cpu(cop):
    xn, yn = cop.attrs["x_num_col_dims"], cop.attrs["y_num_col_dims"]

    def bind(ins, outs):
        x, y, out = ins["X"][0], ins["Y"][0], outs["Out"][0]
        x2, y2 = x.reshape(_flat2(x.shape, xn)), y.reshape(_flat2(y.shape, yn))
        return functools.partial(gemm, x2, y2, out.reshape(x2.shape[0], y2.shape[1]))
    return bind


def _mul_gpu(cop):
    xn, yn = cop.attrs["x_num_col_dims"], cop.attrs["y_num_col_dims"]

    def bind(ins, outs):
        x, y, out = ins["X"][0], ins["Y"][0], outs["Out"][0]
        x3, y3 = x.reshape((1,) + _flat2(x.shape, xn)), y.reshape((1,) + _flat2(y.shape, yn))
        return gemm_thunk(x3, y3, out.reshape(1, x3.shape[1], y3.shape[2]), _ONE, _ONE,
                          False, False)
    return bind


def _mul_grad_rule(g):
    g.append("mul_grad", {"X": g.fwd("X"), "Y": g.fwd("Y"), "Out@GRAD": g.dout("Out")},
             {"X@GRAD": g.dx("X"), "Y@GRAD": g.dx("Y")}, dict(g.attrs))


def _mul_grad_infer(ctx):
    return {"X@GRAD": ctx.input("X"), "Y@GRAD": ctx.input("Y")}


def _mul_grad_cpu(cop):
    xn, yn = cop.attrs["x_num_col_dims"], cop.attrs["y_num_col_dims"]

    def bind(ins, outs):
        x, y, d = ins["X"][0], ins["Y"][0], ins["Out@GRAD"][0]
        x2, y2 = x.reshape(_flat2(x.shape, xn)), y.reshape(_flat2(y.shape, yn))
        d2 = d.reshape(x2.shape[0], y2.shape[1])
        calls = []
        if outs.get("X@GRAD"):   # dX = dOut @ Y^T
            calls.append(functools.partial(gemm, d2, y2.T, outs["X@GRAD"][0].reshape(x2.shape)))
        if outs.get("Y@GRAD"):   # dY = X^T @ dOut
            calls.append(functools.partial(gemm, x2.T, d2, outs["Y@GRAD"][0].reshape(y2.shape)))
        return calls[0] if len(calls) == 1 else functools.partial(run_calls, tuple(calls))
    return bind


def _mul_grad_gpu(cop):
    xn, yn = cop.attrs["x_num_col_dims"], cop.attrs["y_num_col_dims"]

    def bind(ins, outs):
        x, y, d = ins["X"][0], ins["Y"][0], ins["Out@GRAD"][0]
        x3, y3 = x.reshape((1,) + _flat2(x.shape, xn)), y.reshape((1,) + _flat2(y.shape, yn))
        d3 = d.reshape(1, x3.shape[1], y3.shape[2])
        calls = []
        if outs.get("X@GRAD"):   # dX = dOut @ Y^T
            calls.append(gemm_thunk(d3, y3, outs["X@GRAD"][0].reshape(x3.shape), _ONE, _ONE,
                                    False, True))
        if outs.get("Y@GRAD"):   # dY = X^T @ dOut
            calls.append(gemm_thunk(x3, d3, outs["Y@GRAD"][0].reshape(y3.shape), _ONE, _ONE,
                                    True, False))
        return gpu_util.sequence(calls)
    return bind




register_op(OpDef("mul", (Slot("X"), Slot("Y")), (Slot("Out"),), _mul_infer, _mul_cpu,
                  gpu=_mul_gpu,
                  attrs={"x_num_col_dims": 1, "y_num_col_dims": 1}, grad=_mul_grad_rule,
                  doc="Out = flatten(X, x_num_col_dims) @ flatten(Y, y_num_col_dims)"))
register_op(OpDef("mul_grad", (Slot("X"), Slot("Y"), Slot("Out@GRAD")),
                  (Slot("X@GRAD", optional=True), Slot("Y@GRAD", optional=True)),
                  _mul_grad_infer, _mul_grad_cpu, gpu=_mul_grad_gpu,
                  attrs={"x_num_col_dims": 1, "y_num_col_dims": 1}))


# ---------------------------------------------------------------- matmul_v2
def _as_matrix(shape, is_x):
    """numpy matmul's promotion of 1-D operands; returns (batch, rows, cols) as stored."""
    if len(shape) == 1:
        return (), ((1, shape[0]) if is_x else (shape[0], 1))
    return tuple(shape[:-2]), tuple(shape[-2:])


def _matmul_shapes(xs, ys, tx, ty, err):
    xb, xm = _as_matrix(xs, True)
    yb, ym = _as_matrix(ys, False)
    if tx and len(xs) > 1:
        xm = xm[::-1]
    if ty and len(ys) > 1:
        ym = ym[::-1]
    if xm[1] != -1 and ym[0] != -1 and xm[1] != ym[0]:
        raise err(f"inner dimensions differ: X {tuple(xs)} (trans_x={tx}) gives {xm[1]}, "
                  f"Y {tuple(ys)} (trans_y={ty}) gives {ym[0]}")
    from .registry import broadcast_shapes
    batch = broadcast_shapes(xb, yb, what="matmul batch dims") if (xb or yb) else ()
    out = tuple(batch) + ((xm[0],) if len(xs) > 1 else ()) + ((ym[1],) if len(ys) > 1 else ())
    return batch, xm, ym, out


def _matmul_infer(ctx):
    x, y = ctx.input("X"), ctx.input("Y")
    _, _, _, out = _matmul_shapes(x.shape, y.shape, ctx.attr("trans_x"), ctx.attr("trans_y"),
                                  lambda m: ctx.error(f"{m} ({ctx.name('X')} @ {ctx.name('Y')})"))
    return {"Out": VarInfo(out, x.dtype)}


def _batch_index(batch_in, batch):
    """For each output batch element, the index of the input matrix it reads."""
    src = np.arange(numel(batch_in)).reshape(batch_in) if batch_in else np.zeros((), np.int64)
    src = src.reshape((1,) * (len(batch) - len(batch_in)) + tuple(batch_in))
    return np.ascontiguousarray(np.broadcast_to(src, batch).reshape(-1), dtype=np.int64) \
        if batch else np.zeros(1, np.int64)


def _as3(a, is_x):
    """View an operand as (batch, rows, cols) as stored (before any transpose)."""
    b, m = _as_matrix(a.shape, is_x)
    return a.reshape((numel(b),) + m)


def _matmul_cpu(cop):
    tx, ty = cop.attrs["trans_x"], cop.attrs["trans_y"]
    xs, ys = cop.input("X").shape, cop.input("Y").shape
    batch, xm, ym, _ = _matmul_shapes(xs, ys, tx, ty, ValueError)
    ix = _batch_index(_as_matrix(xs, True)[0], batch)
    iy = _batch_index(_as_matrix(ys, False)[0], batch)

    def bind(ins, outs):
        x3, y3 = _as3(ins["X"][0], True), _as3(ins["Y"][0], False)
        out3 = outs["Out"][0].reshape((len(ix), xm[0], ym[1]))
        return functools.partial(batched_gemm, x3, y3, out3, ix, iy,
                                 tx and len(xs) > 1, ty and len(ys) > 1)
    return bind


def _matmul_gpu(cop):
    tx, ty = cop.attrs["trans_x"], cop.attrs["trans_y"]
    xs, ys = cop.input("X").shape, cop.input("Y").shape
    batch, xm, ym, _ = _matmul_shapes(xs, ys, tx, ty, ValueError)
    ix = _batch_index(_as_matrix(xs, True)[0], batch)
    iy = _batch_index(_as_matrix(ys, False)[0], batch)

    def bind(ins, outs):
        x3, y3 = _as3(ins["X"][0], True), _as3(ins["Y"][0], False)
        out3 = outs["Out"][0].reshape((len(ix), xm[0], ym[1]))
        return gemm_thunk(x3, y3, out3, ix, iy, tx and len(xs) > 1, ty and len(ys) > 1)
    return bind


def _matmul_grad_rule(g):
    g.append("matmul_v2_grad", {"X": g.fwd("X"), "Y": g.fwd("Y"), "Out@GRAD": g.dout("Out")},
             {"X@GRAD": g.dx("X"), "Y@GRAD": g.dx("Y")}, dict(g.attrs))


def _matmul_grad_factory(gpu):
    """matmul_v2_grad's kernel factory: the same products on the CPU (BLAS) or the GPU
    (tiled kernel), each dX / dY computed per output batch into a scratch buffer and
    summed onto broadcast operands."""
    def factory(cop):
        tx, ty = cop.attrs["trans_x"], cop.attrs["trans_y"]
        xs, ys = cop.input("X").shape, cop.input("Y").shape
        tx, ty = tx and len(xs) > 1, ty and len(ys) > 1
        batch, xm, ym, _ = _matmul_shapes(xs, ys, tx, ty, ValueError)
        n = max(numel(batch), 1)
        ident = np.arange(n, dtype=np.int64)
        ix = _batch_index(_as_matrix(xs, True)[0], batch)
        iy = _batch_index(_as_matrix(ys, False)[0], batch)

        def bind(ins, outs):
            x3, y3 = _as3(ins["X"][0], True), _as3(ins["Y"][0], False)
            d3 = ins["Out@GRAD"][0].reshape((n, xm[0], ym[1]))
            calls = []
            for slot, idx, is_x in (("X@GRAD", ix, True), ("Y@GRAD", iy, False)):
                if not outs.get(slot):
                    continue
                dst = _as3(outs[slot][0], is_x)
                direct = len(idx) == dst.shape[0] and np.array_equal(idx, ident)
                tgt = dst if direct else _empty(gpu, (n,) + dst.shape[1:], dst.dtype)
                if is_x:   # dX (stored) = dO @ Y^T, transposed back if X was
                    args = (y3, d3, tgt, iy, ident, ty, True) if tx else \
                           (d3, y3, tgt, ident, iy, False, not ty)
                else:      # dY (stored) = X^T @ dO, transposed back if Y was
                    args = (d3, x3, tgt, ident, ix, True, False) if ty and not tx else \
                           (d3, x3, tgt, ident, ix, True, True) if ty and tx else \
                           (x3, d3, tgt, ix, ident, not tx, False)
                calls.append(gemm_thunk(*args) if gpu else functools.partial(batched_gemm, *args))
                if not direct:
                    calls.append(_accumulate_thunk(tgt, dst, idx) if gpu else
                                 functools.partial(accumulate_batches, tgt, dst, idx))
            return gpu_util.sequence(calls)
        return bind
    return factory


def _empty(gpu, shape, dtype):
    if not gpu:
        return np.empty(shape, dtype)
    from numba import cuda
    return cuda.device_array(shape, dtype)


def _accumulate_thunk(src, dst, idx):
    per = numel(dst.shape[1:])
    s2, d2 = src.reshape(src.shape[0], per), dst.reshape(dst.shape[0], per)
    launch = gpu_util.configured(_accumulate(), *gpu_util.launch_dims(d2.size))
    return functools.partial(launch, s2, d2, gpu_util.to_device(idx))


register_op(OpDef("matmul_v2", (Slot("X"), Slot("Y")), (Slot("Out"),), _matmul_infer,
                  _matmul_cpu, gpu=_matmul_gpu, attrs={"trans_x": False, "trans_y": False},
                  grad=_matmul_grad_rule, doc="numpy matmul with optional transposes"))
register_op(OpDef("matmul_v2_grad", (Slot("X"), Slot("Y"), Slot("Out@GRAD")),
                  (Slot("X@GRAD", optional=True), Slot("Y@GRAD", optional=True)),
                  _mul_grad_infer, _matmul_grad_factory(False), gpu=_matmul_grad_factory(True),
                  attrs={"trans_x": False, "trans_y": False}))
