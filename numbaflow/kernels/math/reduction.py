"""Reductions (reduce_sum/mean/max/min, arg_max) and softmax / log_softmax.

Kernels view the input as (A, R, C): R is the reduced (or softmax) extent, A the dims
before it and C the dims after. Reducing a non-contiguous set of axes first gathers the
reduced axes last (a strided copy into a bind-time scratch buffer, as on the GPU).
Integer sums and means accumulate exactly in int64 (`sum_arc_int`); reduce_sum of a
smaller integer or bool returns int64, as numpy and Paddle do.

GPU kernels (`_gk`): one block per (a, c) row reduces x[a, :, c] with a shared-memory
tree (gpu_util.row_reduce); reductions with a wide C instead give each thread one (a, c)
and loop over R, so neighbouring threads read neighbouring addresses. A non-contiguous
set of axes is first gathered (a strided copy into a bind-time scratch buffer) so that
the reduced axes come last, then reduced as rows. Gradients are one flat kernel.
"""
import functools

import numpy as np
from numba import njit

from ..gpu import gpu_util
from ..fastmath import exp as _fast_exp
from ..gpu.gpu_util import MAX, MEAN, MIN, SUM
from ..registry import ACTIVATION, NO_GRAD, OpDef, Slot, VarInfo, numel, register_op

_KIND = {"reduce_sum": SUM, "reduce_mean": MEAN, "reduce_max": MAX, "reduce_min": MIN}


@njit(nogil=True, cache=True, error_model="numpy")
def reduce_arc(x, out, kind):
    A, R, C = x.shape
    for a in range(A):
        for c in range(C):
            if kind == MAX or kind == MIN:
                acc = x[a, 0, c]
                for r in range(1, R):
                    v = x[a, r, c]
                    if (kind == MAX and v > acc) or (kind == MIN and v < acc):
                        acc = v
                out[a, c] = acc
            else:
                s = 0.0
                for r in range(R):
                    s += x[a, r, c]
                out[a, c] = s / R if kind == MEAN else s


@njit(nogil=True, cache=True)
def sum_arc_int(x, out, kind):
    """reduce_sum / reduce_mean of integers: an exact int64 accumulator (numpy's sum of
    int32 is int64; through float64 a sum of int64 loses everything past 53 bits); the
    mean truncates toward zero, as Paddle's integer division does."""
    A, R, C = x.shape
    for a in range(A):
        for c in range(C):
            s = 0
            for r in range(R):
                s += x[a, r, c]
            if kind == MEAN and R > 0:
                q = s // R
                if q * R != s and s < 0:
                    q += 1
                s = q
            out[a, c] = s


def sum_dtype(dtype):
    """The dtype reduce_sum returns for an input of `dtype`: smaller integers and bool
    sum into int64, as in numpy and Paddle (an int32 sum that overflows is not wrapped)."""
    dtype = np.dtype(dtype)
    return np.dtype(np.int64) if dtype.kind in "biu" else dtype


@njit(nogil=True, cache=True, error_model="numpy")
def reduce_grad_arc(x, out, dout, dx, kind):
    A, R, C = dx.shape
    for a in range(A):
        for r in range(R):
            for c in range(C):
                if kind == MAX or kind == MIN:
                    dx[a, r, c] = dout[a, c] if x[a, r, c] == out[a, c] else 0.0
                elif kind == MEAN:
                    dx[a, r, c] = dout[a, c] / R
                else:
                    dx[a, r, c] = dout[a, c]


# ---------------------------------------------------------------- GPU kernels
COLS_MIN_C = 32    # reduce with C >= this: one thread per output (coalesced over c)


def reduce_axes(shape, attrs):
    """The sorted, non-negative axes a reduce op reduces over."""
    nd = len(shape)
    if attrs["reduce_all"] or nd == 0:
        return tuple(range(nd))
    dims = attrs["dim"]
    dims = [dims] if isinstance(dims, int) else list(dims)
    for d in dims:
        if not -nd <= d < nd:
            raise ValueError(f"reduce axis {d} is out of range for rank {nd}")
    axes = sorted({d % nd for d in dims})
    return tuple(axes) if axes else tuple(range(nd))


def arc_view(shape, axes):
    """(A, R, C) if `axes` is one contiguous run of dims, else None."""
    if not axes:
        return (numel(shape), 1, 1)
    if list(axes) != list(range(axes[0], axes[-1] + 1)):
        return None
    return (numel(shape[:axes[0]]), numel(shape[axes[0]:axes[-1] + 1]), numel(shape[axes[-1] + 1:]))


def _reduce_infer(ctx):
    x = ctx.input("X")
    try:
        axes = reduce_axes(x.shape, ctx.attrs)
    except ValueError as e:
        raise ctx.error(f"{e} (X {ctx.name('X')} has shape {x.shape})") from None
    empty = [d for d in axes if x.shape[d] == 0]
    if empty and _KIND[ctx.op_type] in (MAX, MIN):
        # the kernel would read x[a, 0, c] past the end; numpy raises here too
        raise ctx.error(f"X {ctx.name('X')} of shape {x.shape} has size 0 along reduced axis "
                        f"{empty[0]}: the {ctx.op_type[7:]}imum of no elements is undefined. "
                        f"Reduce only non-empty axes (reduce_sum of nothing is 0).")
    if ctx.attr("keep_dim"):
        shape = tuple(1 if d in axes else n for d, n in enumerate(x.shape))
    else:
        shape = tuple(n for d, n in enumerate(x.shape) if d not in axes)
    dtype = sum_dtype(x.dtype) if ctx.op_type == "reduce_sum" else x.dtype
    return {"Out": VarInfo(shape, dtype)}


def _reduce_geometry(cop):
    """(kind, X's shape, the reduced axes, their (A, R, C) view or None, integer sum)."""
    kind, shape = _KIND[cop.type], cop.input("X").shape
    axes = reduce_axes(shape, cop.attrs)
    ints = cop.input("X").dtype.kind in "biu" and kind in (SUM, MEAN)
    return kind, shape, axes, arc_view(shape, axes), ints


def _reduce_cpu(cop):
    kind, shape, axes, arc, ints = _reduce_geometry(cop)

    def bind(ins, outs):
        x, out = ins["X"][0], outs["Out"][0]
        if arc is None:     # gather the reduced axes last (a copy): then reduce rows
            kept = [d for d in range(len(shape)) if d not in axes]
            x = np.ascontiguousarray(np.transpose(x, kept + list(axes)))
            view = (numel([shape[d] for d in kept]), numel([shape[d] for d in axes]), 1)
        else:
            view = arc
        fn = functools.partial(sum_arc_int if ints else reduce_arc, x.reshape(view),
                               out.reshape(view[0], view[2]), kind)
        if arc is None:     # the gather must happen on every run, not once at bind
            return functools.partial(_gathered, fn, ins["X"][0], x, kept + list(axes))
        return fn
    return bind


def _gathered(fn, src, scratch, perm):
    np.copyto(scratch, np.transpose(src, perm))
    fn()


def _reduce_gpu(cop):
    kind, shape, axes, arc, ints = _reduce_geometry(cop)

    def bind(ins, outs):
        from numba import cuda
        x, out, calls = ins["X"][0], outs["Out"][0], []
        if arc is None:   # gather the reduced axes last, then reduce (A, R, 1) rows
            kept = [d for d in range(len(shape)) if d not in axes]
            perm = kept + list(axes)
            scratch = cuda.device_array(tuple(shape[p] for p in perm), x.dtype)
            calls.append(gpu_util.transpose_thunk(x, scratch, perm))
            x, view = scratch, (numel([shape[d] for d in kept]),
                                numel([shape[d] for d in axes]), 1)
        else:
            view = arc
        x3, out2 = x.reshape(view), out.reshape(view[0], view[2])
        k = gpu_util.common()
        if ints:          # exact: one thread per output, an int64 accumulator
            calls.append(gpu_util.launch_flat(_int_gpu(), view[0] * view[2], x3,
                                              out2, kind))
        elif view[2] >= COLS_MIN_C and view[1] > 0:    # reduce_cols reads x3[a, 0, c]
            calls.append(gpu_util.launch_flat(k.reduce_cols, view[0] * view[2], x3, out2, kind))
        else:
            calls.append(gpu_util.launch_rows(k.reduce_rows, view[0] * view[2], view[1], x3, out2,
                                              kind))
        return gpu_util.sequence(calls)
    return bind


@gpu_util.lazy
def _int_gpu():
    """sum_cols_int, the GPU twin of sum_arc_int (integers are rare on the GPU: simple, not
    tuned). `cuda` is a module global, as in gpu_util.common: the simulator swaps it."""
    global cuda
    from numba import cuda

    @cuda.jit(cache=True)
    def sum_cols_int(x3, out2, kind):
        A, R, C = x3.shape
        for o in range(cuda.grid(1), A * C, cuda.gridsize(1)):
            a = o // C
            c = o - a * C
            s = np.int64(0)     # (a bare 0 would take x's width in the simulator)
            for r in range(R):
                s += x3[a, r, c]
            if kind == MEAN and R > 0:
                q = s // R
                if q * R != s and s < 0:
                    q += 1
                s = q
            out2[a, c] = s
    return sum_cols_int


def _reduce_grad_rule(g):
    ins = {"X": g.fwd("X"), "Out@GRAD": g.dout("Out")}
    if g.op.type in ("reduce_max", "reduce_min"):
        ins["Out"] = g.fwd("Out")
    g.append(g.op.type + "_grad", ins, {"X@GRAD": g.dx("X")}, dict(g.attrs))


def _reduce_grad_cpu(cop):
    kind = _KIND[cop.type[:-len("_grad")]]
    shape = cop.input("X").shape
    axes = reduce_axes(shape, cop.attrs)
    arc = arc_view(shape, axes)
    keep = tuple(1 if d in axes else n for d, n in enumerate(shape))

    def bind(ins, outs):
        x, d, dx = ins["X"][0], ins["Out@GRAD"][0], outs["X@GRAD"][0]
        out = ins["Out"][0] if "Out" in ins else d
        if arc is not None:
            return functools.partial(reduce_grad_arc, x.reshape(arc), out.reshape(arc[0], arc[2]),
                                     d.reshape(arc[0], arc[2]), dx.reshape(arc), kind)
        return functools.partial(_reduce_grad_np, x, out.reshape(keep), d.reshape(keep), dx, kind,
                                 numel([shape[i] for i in axes]))
    return bind


def _reduce_grad_gpu(cop):
    kind = _KIND[cop.type[:-len("_grad")]]
    shape = cop.input("X").shape
    axes = reduce_axes(shape, cop.attrs)
    ostr, acc = [0] * len(shape), 1      # strides of the kept-dims output, 0 if reduced
    for d in range(len(shape) - 1, -1, -1):
        if d not in axes:
            ostr[d], acc = acc, acc * shape[d]
    n = float(numel([shape[d] for d in axes]))

    def bind(ins, outs):
        x, d, dx = ins["X"][0], ins["Out@GRAD"][0], outs["X@GRAD"][0]
        out = ins["Out"][0] if "Out" in ins else d
        meta = [gpu_util.to_device(np.array(a or [0], np.int64)) for a in (shape, ostr)]
        f = gpu_util.flat
        return gpu_util.launch_flat(gpu_util.common().reduce_grad, dx.size, f(x), f(out), f(d),
                                    f(dx), *meta, kind, n)
    return bind


def _reduce_grad_np(x, out, d, dx, kind, n):
    if kind in (MAX, MIN):
        np.multiply(d, x == out, out=dx)
    else:
        np.multiply(d, 1.0 / n if kind == MEAN else 1.0, out=dx)


_REDUCE_ATTRS = {"dim": [0], "keep_dim": False, "reduce_all": False}
for _t in _KIND:
    register_op(OpDef(_t, (Slot("X"),), (Slot("Out"),), _reduce_infer, _reduce_cpu,
                      gpu=_reduce_gpu, attrs=dict(_REDUCE_ATTRS), grad=_reduce_grad_rule))
    _grad_ins = (Slot("X"), Slot("Out"), Slot("Out@GRAD")) if _KIND[_t] in (MAX, MIN) \
        else (Slot("X"), Slot("Out@GRAD"))
    register_op(OpDef(_t + "_grad", _grad_ins, (Slot("X@GRAD"),),
                      lambda ctx: {"X@GRAD": ctx.input("X")}, _reduce_grad_cpu,
                      gpu=_reduce_grad_gpu, attrs=dict(_REDUCE_ATTRS),
                      traits=frozenset((NO_GRAD,))))


# ---------------------------------------------------------------- arg_max
@njit(nogil=True, cache=True)
def argmax_arc(x, out):
    A, R, C = x.shape
    for a in range(A):
        for c in range(C):
            best, bi = x[a, 0, c], 0
            for r in range(1, R):
                if x[a, r, c] > best:
                    best, bi = x[a, r, c], r
            out[a, c] = bi


def argmax_arc_shape(shape, attrs):
    """The (A, R, C) view arg_max reduces over R. Raises ValueError for an axis outside
    the rank (it would silently reduce another axis) or an empty R (nothing to pick)."""
    if attrs["flatten"]:
        arc, what = (1, numel(shape), 1), "X has no elements"
    else:
        axis, nd = attrs["axis"], max(len(shape), 1)
        if not -nd <= axis < nd:
            raise ValueError(f"axis {axis} is out of range for rank {len(shape)} "
                             f"(valid: {-nd}..{nd - 1})")
        arc, what = arc_view(shape, (axis % nd,)), f"axis {axis} has size 0"
    if arc[1] == 0:
        raise ValueError(f"{what}: the argmax of an empty sequence is undefined")
    return arc


def _argmax_infer(ctx):
    x = ctx.input("X")
    try:
        argmax_arc_shape(x.shape, ctx.attrs)
    except ValueError as e:
        raise ctx.error(f"{e} (X {ctx.name('X')} has shape {x.shape})") from None
    if ctx.attr("flatten"):
        return {"Out": VarInfo((1,) * len(x.shape) if ctx.attr("keepdims") else (),
                               np.dtype(ctx.attr("dtype")))}
    ax = ctx.attr("axis") % max(len(x.shape), 1)
    shape = tuple(1 if d == ax else n for d, n in enumerate(x.shape)) if ctx.attr("keepdims") \
        else tuple(n for d, n in enumerate(x.shape) if d != ax)
    return {"Out": VarInfo(shape, np.dtype(ctx.attr("dtype")))}


def _argmax_cpu(cop):
    arc = argmax_arc_shape(cop.input("X").shape, cop.attrs)

    def bind(ins, outs):
        return functools.partial(argmax_arc, ins["X"][0].reshape(arc),
                                 outs["Out"][0].reshape(arc[0], arc[2]))
    return bind


def _argmax_gpu(cop):
    arc = argmax_arc_shape(cop.input("X").shape, cop.attrs)
    return lambda ins, outs: gpu_util.launch_rows(
        gpu_util.common().argmax_rows, arc[0] * arc[2], arc[1], ins["X"][0].reshape(arc),
        outs["Out"][0].reshape(arc[0], arc[2]))


register_op(OpDef("arg_max", (Slot("X"),), (Slot("Out"),), _argmax_infer, _argmax_cpu,
                  gpu=_argmax_gpu,
                  attrs={"axis": -1, "keepdims": False, "flatten": False, "dtype": "int64"},
                  traits=frozenset((NO_GRAD,))))


# ---------------------------------------------------------------- softmax / log_softmax
@njit(nogil=True, cache=True, error_model="numpy")
def exp_shifted(x, out, a, c):
    """out[a, :, c] = exp(x[a, :, c] - max); returns (max, sum of out[a, :, c]).
    The one softmax row loop, shared by softmax, log_softmax and the cross-entropy losses."""
    R = x.shape[1]
    m = x[a, 0, c]
    for r in range(1, R):
        m = max(m, x[a, r, c])
    s = 0.0
    for r in range(R):
        e = np.exp(x[a, r, c] - m)
        out[a, r, c] = e
        s += e
    return m, s


@njit(nogil=True, cache=True, error_model="numpy", fastmath={"reassoc", "contract"})
def _softmax_last_axis(x2, out2, log):
    """softmax over the rows of contiguous (A, R) views (the axis=-1 case: attention,
    classifiers): the exp pass runs kernels/fastmath.py's vectorizable exp and its sum is
    reassociated (float64), the normalisation multiplies by 1/sum in X's dtype: 3x faster than the
    generic loop on the GPT's (32, 4, 64, 64) attention weights."""
    A, R = x2.shape
    for a in range(A):
        xr, orow = x2[a], out2[a]
        m = xr[0]
        for r in range(1, R):
            m = max(m, xr[r])
        s = 0.0
        for r in range(R):
            e = _fast_exp(xr[r] - m)
            orow[r] = e
            s += e
        if log:
            ls = np.log(s)
            for r in range(R):
                orow[r] = xr[r] - m - ls
        else:
            inv = xr.dtype.type(1.0 / s)    # X's dtype: the loop stays float32 (~10% faster)
            for r in range(R):
                orow[r] = orow[r] * inv


@njit(nogil=True, cache=True, error_model="numpy")
def softmax_arc(x, out, log):
    A, R, C = x.shape
    if R == 0:        # nothing to write; exp_shifted would read x[a, 0, c]
        return
    if C == 1:
        _softmax_last_axis(x.reshape(A, R), out.reshape(A, R), log)
        return
    for a in range(A):
        for c in range(C):
            m, s = exp_shifted(x, out, a, c)
            if log:
                ls = np.log(s)
                for r in range(R):
                    out[a, r, c] = x[a, r, c] - m - ls
            else:
                for r in range(R):
                    out[a, r, c] = out[a, r, c] / s


@njit(nogil=True, cache=True, error_model="numpy")
def softmax_grad_arc(out, dout, dx, log):
    A, R, C = out.shape
    for a in range(A):
        for c in range(C):
            s = 0.0
            for r in range(R):
                s += dout[a, r, c] if log else dout[a, r, c] * out[a, r, c]
            for r in range(R):
                if log:
                    dx[a, r, c] = dout[a, r, c] - np.exp(out[a, r, c]) * s
                else:
                    dx[a, r, c] = out[a, r, c] * (dout[a, r, c] - s)


def softmax_arc_shape(shape, axis):
    nd = len(shape)
    if not -nd <= axis < max(nd, 1):
        raise ValueError(f"axis {axis} is out of range for rank {nd}")
    return arc_view(shape, (axis % max(nd, 1),)) if nd else (1, 1, 1)


def _softmax_infer(ctx):
    x = ctx.input("X")
    try:
        softmax_arc_shape(x.shape, ctx.attr("axis"))
    except ValueError as e:
        raise ctx.error(f"{e} (X {ctx.name('X')} has shape {x.shape})") from None
    return {"Out": x}


def _softmax_family(type, log):
    def cpu(cop):
        arc = softmax_arc_shape(cop.input("X").shape, cop.attrs["axis"])
        return lambda ins, outs: functools.partial(
            softmax_arc, ins["X"][0].reshape(arc), outs["Out"][0].reshape(arc), log)

    def grad_cpu(cop):
        arc = softmax_arc_shape(cop.input("Out").shape, cop.attrs["axis"])
        return lambda ins, outs: functools.partial(
            softmax_grad_arc, ins["Out"][0].reshape(arc), ins["Out@GRAD"][0].reshape(arc),
            outs["X@GRAD"][0].reshape(arc), log)

    def gpu(cop):
        arc = softmax_arc_shape(cop.input("X").shape, cop.attrs["axis"])
        return lambda ins, outs: gpu_util.launch_rows(
            gpu_util.common().softmax_rows, arc[0] * arc[2], arc[1], ins["X"][0].reshape(arc),
            outs["Out"][0].reshape(arc), log)

    def grad_gpu(cop):
        arc = softmax_arc_shape(cop.input("Out").shape, cop.attrs["axis"])
        return lambda ins, outs: gpu_util.launch_rows(
            gpu_util.common().softmax_grad_rows, arc[0] * arc[2], arc[1],
            ins["Out"][0].reshape(arc), ins["Out@GRAD"][0].reshape(arc),
            outs["X@GRAD"][0].reshape(arc), log)

    def rule(g):
        g.append(type + "_grad", {"Out": g.fwd("Out"), "Out@GRAD": g.dout("Out")},
                 {"X@GRAD": g.dx("X")}, dict(g.attrs))

    register_op(OpDef(type, (Slot("X"),), (Slot("Out"),), _softmax_infer, cpu,
                      gpu=gpu, attrs={"axis": -1}, grad=rule,
                      traits=frozenset((ACTIVATION,))))
    register_op(OpDef(type + "_grad", (Slot("Out"), Slot("Out@GRAD")), (Slot("X@GRAD"),),
                      lambda ctx: {"X@GRAD": ctx.input("Out")}, grad_cpu, gpu=grad_gpu,
                      attrs={"axis": -1},
                      traits=frozenset((NO_GRAD,))))


_softmax_family("softmax", False)
_softmax_family("log_softmax", True)
