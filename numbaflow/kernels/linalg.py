"""Matrix products: `mul` (what `fc` emits, as in Paddle) and `matmul_v2` (paddle.matmul).

Both run BLAS through `np.dot` inside njit, on views prepared once at bind time
(flattened to 2-D for `mul`, batched 3-D with broadcast batch indices for `matmul_v2`).
"""
import functools

import numpy as np
from numba import njit

from .registry import OpDef, Slot, VarInfo, numel, register_op


@njit(nogil=True, cache=True)
def gemm(a, b, out):
    np.dot(a, b, out)


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
        return calls[0] if len(calls) == 1 else functools.partial(_call_all, tuple(calls))
    return bind


def _call_all(calls):
    for c in calls:
        c()


register_op(OpDef("mul", (Slot("X"), Slot("Y")), (Slot("Out"),), _mul_infer, _mul_cpu,
                  attrs={"x_num_col_dims": 1, "y_num_col_dims": 1}, grad=_mul_grad_rule,
                  doc="Out = flatten(X, x_num_col_dims) @ flatten(Y, y_num_col_dims)"))
register_op(OpDef("mul_grad", (Slot("X"), Slot("Y"), Slot("Out@GRAD")),
                  (Slot("X@GRAD", optional=True), Slot("Y@GRAD", optional=True)),
                  _mul_grad_infer, _mul_grad_cpu,
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


def _matmul_grad_rule(g):
    g.append("matmul_v2_grad", {"X": g.fwd("X"), "Y": g.fwd("Y"), "Out@GRAD": g.dout("Out")},
             {"X@GRAD": g.dx("X"), "Y@GRAD": g.dx("Y")}, dict(g.attrs))


def _matmul_grad_cpu(cop):
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
        for slot, a3, idx, is_x in (("X@GRAD", x3, ix, True), ("Y@GRAD", y3, iy, False)):
            if not outs.get(slot):
                continue
            dst = _as3(outs[slot][0], is_x)
            direct = len(idx) == dst.shape[0] and np.array_equal(idx, ident)
            tgt = dst if direct else np.empty((n,) + dst.shape[1:], dst.dtype)
            if is_x:   # dX (stored) = dO @ Y^T, transposed back if X was
                args = (y3, d3, tgt, iy, ident, ty, True) if tx else \
                       (d3, y3, tgt, ident, iy, False, not ty)
            else:      # dY (stored) = X^T @ dO, transposed back if Y was
                args = (d3, x3, tgt, ident, ix, True, False) if ty and not tx else \
                       (d3, x3, tgt, ident, ix, True, True) if ty and tx else \
                       (x3, d3, tgt, ix, ident, not tx, False)
            calls.append(functools.partial(batched_gemm, *args))
            if not direct:
                calls.append(functools.partial(accumulate_batches, tgt, dst, idx))
        return calls[0] if len(calls) == 1 else functools.partial(_call_all, tuple(calls))
    return bind


register_op(OpDef("matmul_v2", (Slot("X"), Slot("Y")), (Slot("Out"),), _matmul_infer,
                  _matmul_cpu, attrs={"trans_x": False, "trans_y": False},
                  grad=_matmul_grad_rule, doc="numpy matmul with optional transposes"))
register_op(OpDef("matmul_v2_grad", (Slot("X"), Slot("Y"), Slot("Out@GRAD")),
                  (Slot("X@GRAD", optional=True), Slot("Y@GRAD", optional=True)),
                  _mul_grad_infer, _matmul_grad_cpu,
                  attrs={"trans_x": False, "trans_y": False}))
