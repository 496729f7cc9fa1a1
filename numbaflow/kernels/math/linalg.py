"""Matrix products: `mul` (what `fc` emits, as in Paddle) and `matmul_v2` (paddle.matmul).

On the CPU both call BLAS ?gemm from njit (gemm_cpu.py: through numba's own helper, with
the transposes as run-time flags: one compiled kernel per dtype; large products split over
numba's threads), on views prepared once at bind time (flattened to 2-D for `mul`, batched
3-D with broadcast batch indices for `matmul_v2`).

On the GPU both run one register-blocked tiled kernel (`gemm_source`, generated per
dtype / transpose pair / tile size): 64x64 or 128x128 output tiles per block, 8x8 per
thread, the operands staged through shared memory, batches on the grid's z axis with
the same broadcast batch indices, and transposes handled while loading a tile
(consecutive threads walk the stored contiguous axis, so loads coalesce).
Gradients of broadcast batch operands are summed by `_accumulate` after the products.
"""
import functools

import numpy as np

from ..gpu import gpu_util
from .gemm_cpu import accumulate_batches, batched_call, blas_scalars, gemm_call
from ..registry import OpDef, Slot, VarInfo, numel, register_op, run_calls

cuda = None   # numba.cuda, bound lazily by the kernel builders (gpu_util explains)


# ---------------------------------------------------------------- GPU kernels
# Register-blocked GEMM: a block of BT x BT threads computes a (BT*TT) x (BT*TT) output
# tile, each thread TT x TT outputs (rows ty + BT*r, columns tx + BT*c: conflict-free
# shared reads, coalesced stores). The operands go through shared memory one BK-deep
# slab at a time, stored k-major (As[k, i], Bs[k, j]) with rows padded by 4 so that the
# transposing stores do not hit one bank. Per k: 2*TT shared loads feed TT*TT FMAs
# (TT=8: 4 FMAs per load). The source is generated with every size baked in, so the
# accumulators are named registers, the padded shapes are literals and the tile index
# arithmetic divides by constants; `small` (64x64 tiles of 64 threads) keeps more SMs
# busy on the MLP's small products, `big` (128x128 of 256) is for the large ones.
GEMM_CONFIGS = ({False: (2, 8, 4), True: (2, 4, 4)} if gpu_util.SIMULATED else
                {False: (16, 8, 8), True: (8, 8, 8)})     # small -> (BT, TT, BK)
GEMM_BIG_MIN_TILES = 2 if gpu_util.SIMULATED else 64    # big tiles needed to use `big`
_PAD = 4


def gemm_source(dtype, small):
    """Source of the tiled batched product out3[b] = op(x3[ix[b]]) @ op(y3[iy[b]])
    (op(a) = a.T where tx / ty), for one dtype and tile size."""
    BT, TT, BK = GEMM_CONFIGS[small]
    BM, NT = BT * TT, BT * BT
    assert BM * BK % NT == 0, "every thread loads the same share of a tile"
    L = [
        "import numpy as np",
        "from numba import cuda",
        f"_Z = np.{np.dtype(dtype).name}(0)",
        f"_T = np.{np.dtype(dtype).name}",
        "",
        "@cuda.jit(cache=True)",
        "def gemm(x3, y3, out3, ix, iy, tx, ty):",
        f"    sa = cuda.shared.array(({BK}, {BM + _PAD}), _T)",
        f"    sb = cuda.shared.array(({BK}, {BM + _PAD}), _T)",
        "    lx = cuda.threadIdx.x",
        "    ly = cuda.threadIdx.y",
        f"    tid = ly * {BT} + lx",
        "    M = out3.shape[1]",
        "    N = out3.shape[2]",
        "    K = x3.shape[1] if tx else x3.shape[2]",
        f"    i0 = cuda.blockIdx.y * {BM}",
        f"    j0 = cuda.blockIdx.x * {BM}",
        "    for b in range(cuda.blockIdx.z, out3.shape[0], cuda.gridDim.z):",
        "        xb = ix[b]",
        "        yb = iy[b]",
    ]
    L += [f"        c{r}_{c} = _Z" for r in range(TT) for c in range(TT)]
    L += [f"        for k0 in range(0, K, {BK}):"]
    for s in range(BM * BK // NT):        # this thread's share of each operand tile
        e = f"(tid + {s * NT})"
        L += ["            if tx:     # X stored (K, M): consecutive threads read consecutive i",
              f"                k = {e} // {BM}", f"                i = {e} % {BM}",
              "                v = x3[xb, k0 + k, i0 + i] if i0 + i < M and k0 + k < K else _Z",
              "            else:      # X stored (M, K): consecutive threads read consecutive k",
              f"                i = {e} // {BK}", f"                k = {e} % {BK}",
              "                v = x3[xb, i0 + i, k0 + k] if i0 + i < M and k0 + k < K else _Z",
              "            sa[k, i] = v",
              "            if ty:     # Y stored (N, K)",
              f"                j = {e} // {BK}", f"                k = {e} % {BK}",
              "                v = y3[yb, j0 + j, k0 + k] if j0 + j < N and k0 + k < K else _Z",
              "            else:      # Y stored (K, N)",
              f"                k = {e} // {BM}", f"                j = {e} % {BM}",
              "                v = y3[yb, k0 + k, j0 + j] if j0 + j < N and k0 + k < K else _Z",
              "            sb[k, j] = v"]
    L += ["            cuda.syncthreads()"]
    for k in range(BK):     # unrolled: shared addresses become base + literal offsets
        L += [f"            a{r} = sa[{k}, ly + {BT * r}]" for r in range(TT)]
        L += [f"            b{c} = sb[{k}, lx + {BT * c}]" for c in range(TT)]
        L += [f"            c{r}_{c} += a{r} * b{c}" for r in range(TT) for c in range(TT)]
    L += ["            cuda.syncthreads()"]
    for r in range(TT):
        L += [f"        i = i0 + ly + {BT * r}", "        if i < M:"]
        for c in range(TT):
            L += [f"            j = j0 + lx + {BT * c}",
                  f"            if j < N:", f"                out3[b, i, j] = c{r}_{c}"]
    return "\n".join(L) + "\n"


def _gemm_kernel(dtype, small):
    from ..codegen import cache
    src = gemm_source(dtype, bool(small))
    return cache.load_source(src, label="cuda_gemm").gemm


@gpu_util.lazy
def _accumulate():
    global cuda
    from numba import cuda

    @cuda.jit(cache=True)
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
    nbz = min(nb, 65535)

    def tiles(small):
        bm = GEMM_CONFIGS[small][0] * GEMM_CONFIGS[small][1]
        return (N + bm - 1) // bm, (M + bm - 1) // bm
    big = tiles(False)
    # float64 always takes the 64-thread tiles: its 8x8 accumulators need ~255 registers,
    # which 256 threads would only just fit (ptxas -v; see gpu_check --ptxas)
    small = big[0] * big[1] * nbz < GEMM_BIG_MIN_TILES or out3.dtype == np.float64
    bt = GEMM_CONFIGS[small][0]
    launch = gpu_util.configured(_gemm_kernel(out3.dtype.name, small),
                                 tiles(small) + (nbz,), (bt, bt))
    return functools.partial(launch, x3, y3, out3, gpu_util.to_device(ix),
                             gpu_util.to_device(iy), bool(tx), bool(ty))


ONLY_BATCH = np.zeros(1, np.int64)


# ---------------------------------------------------------------- mul (fc)
def flat2(shape, ncol):
    return (numel(shape[:ncol]) if -1 not in shape[:ncol] else -1,
            numel(shape[ncol:]) if -1 not in shape[ncol:] else -1)


def _mul_infer(ctx):
    x, y = ctx.input("X"), ctx.input("Y")
    xn, yn = ctx.attr("x_num_col_dims"), ctx.attr("y_num_col_dims")
    if not 0 < xn < len(x.shape) + (len(x.shape) == 0):
        raise ctx.error(f"x_num_col_dims={xn} does not fit X {ctx.name('X')} of shape {x.shape}")
    kx, ky = flat2(x.shape, xn)[1], flat2(y.shape, yn)[0]
    if kx != -1 and ky != -1 and kx != ky:
        raise ctx.error(f"X {ctx.name('X')} {x.shape} flattened to (., {kx}) cannot be "
                        f"multiplied by Y {ctx.name('Y')} {y.shape} flattened to ({ky}, .)")
    return {"Out": VarInfo(tuple(x.shape[:xn]) + tuple(y.shape[yn:]), x.dtype)}


def _mul_cpu(cop):
    xn, yn = cop.attrs["x_num_col_dims"], cop.attrs["y_num_col_dims"]

    def bind(ins, outs):
        x, y, out = ins["X"][0], ins["Y"][0], outs["Out"][0]
        x2, y2 = x.reshape(flat2(x.shape, xn)), y.reshape(flat2(y.shape, yn))
        return gemm_call(x2, y2, out.reshape(x2.shape[0], y2.shape[1]), False, False,
                         blas_scalars(out.dtype))
    return bind


def _mul_gpu(cop):
    xn, yn = cop.attrs["x_num_col_dims"], cop.attrs["y_num_col_dims"]

    def bind(ins, outs):
        x, y, out = ins["X"][0], ins["Y"][0], outs["Out"][0]
        x3, y3 = x.reshape((1,) + flat2(x.shape, xn)), y.reshape((1,) + flat2(y.shape, yn))
        return gemm_thunk(x3, y3, out.reshape(1, x3.shape[1], y3.shape[2]), ONLY_BATCH, ONLY_BATCH,
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
        x2, y2 = x.reshape(flat2(x.shape, xn)), y.reshape(flat2(y.shape, yn))
        d2 = d.reshape(x2.shape[0], y2.shape[1])
        calls, ab = [], blas_scalars(d.dtype)
        if outs.get("X@GRAD"):   # dX = dOut @ Y^T
            calls.append(gemm_call(d2, y2, outs["X@GRAD"][0].reshape(x2.shape), False, True,
                                   ab))
        if outs.get("Y@GRAD"):   # dY = X^T @ dOut
            calls.append(gemm_call(x2, d2, outs["Y@GRAD"][0].reshape(y2.shape), True, False,
                                   ab))
        return calls[0] if len(calls) == 1 else functools.partial(run_calls, tuple(calls))
    return bind


def _mul_grad_gpu(cop):
    xn, yn = cop.attrs["x_num_col_dims"], cop.attrs["y_num_col_dims"]

    def bind(ins, outs):
        x, y, d = ins["X"][0], ins["Y"][0], ins["Out@GRAD"][0]
        x3, y3 = x.reshape((1,) + flat2(x.shape, xn)), y.reshape((1,) + flat2(y.shape, yn))
        d3 = d.reshape(1, x3.shape[1], y3.shape[2])
        calls = []
        if outs.get("X@GRAD"):   # dX = dOut @ Y^T
            calls.append(gemm_thunk(d3, y3, outs["X@GRAD"][0].reshape(x3.shape), ONLY_BATCH, ONLY_BATCH,
                                    False, True))
        if outs.get("Y@GRAD"):   # dY = X^T @ dOut
            calls.append(gemm_thunk(x3, d3, outs["Y@GRAD"][0].reshape(y3.shape), ONLY_BATCH, ONLY_BATCH,
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
    from ..registry import broadcast_shapes
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
    # np.array copies: always writable, as the gradient's identity index is (a read-only
    # broadcast view would be another type to numba, another compile of batched_gemm)
    return np.array(np.broadcast_to(src, batch).reshape(-1), dtype=np.int64) \
        if batch else np.zeros(1, np.int64)


def _as3(a, is_x):
    """View an operand as (batch, rows, cols) as stored (before any transpose)."""
    b, m = _as_matrix(a.shape, is_x)
    return a.reshape((numel(b),) + m)


def _matmul_factory(product):
    """A matmul factory body: `product(x3, y3, out3, ix, iy, tx, ty)` -> the thunk, over
    (batch, rows, cols) views of X, Y and Out and each product's batch indexes."""
    def factory(cop):
        tx, ty = cop.attrs["trans_x"], cop.attrs["trans_y"]
        xs, ys = cop.input("X").shape, cop.input("Y").shape
        batch, xm, ym, _ = _matmul_shapes(xs, ys, tx, ty, ValueError)
        ix = _batch_index(_as_matrix(xs, True)[0], batch)
        iy = _batch_index(_as_matrix(ys, False)[0], batch)

        def bind(ins, outs):
            x3, y3 = _as3(ins["X"][0], True), _as3(ins["Y"][0], False)
            out3 = outs["Out"][0].reshape((len(ix), xm[0], ym[1]))
            return product(x3, y3, out3, ix, iy, tx and len(xs) > 1, ty and len(ys) > 1)
        return bind
    return factory


_matmul_cpu = _matmul_factory(lambda x3, y3, out3, *rest: batched_call(
    x3, y3, out3, *rest, blas_scalars(out3.dtype)))
_matmul_gpu = _matmul_factory(gemm_thunk)


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
                calls.append(gemm_thunk(*args) if gpu else
                             batched_call(*args, blas_scalars(d3.dtype)))
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
