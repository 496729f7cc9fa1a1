"""Indexing ops: slice (Variable.__getitem__), one_hot and top_k, with their gradients.

slice is Paddle's `slice` op: `axes`, `starts`, `ends` (negative counts from the end,
both clamped into the dim as Python slicing does) and `decrease_axis` (dims dropped from
the output: integer indexing). one_hot is Paddle 1.8's `one_hot` op: an int input whose
last dim is 1 becomes `depth` float columns. top_k takes the k largest along the last
axis, sorted descending; equal values keep index order (the lower index first).

CPU kernels are numpy copies over views bound once (slice) or njit loops; the GPU ones
use gpu_util's strided copy (slice) or a grid-stride loop with one thread per row /
element. Neither GPU kernel can raise: a one_hot index out of range gives a zero row.
"""
import functools

import numpy as np
from numba import njit

from ..gpu import gpu_util
from ..registry import MAY_FAIL, NO_GRAD, OpDef, Slot, VarInfo, register_op, sequence

cuda = None   # numba.cuda, bound by _gpu_kernels on first use (gpu_util's convention)


# ---------------------------------------------------------------- slice, strided_slice
# A slice is a *walk*: per input dim (first index, count, step). Both ops share it;
# `slice` is strided_slice with every step 1 (Paddle's two ops, one implementation).
def _steps(attrs):
    return attrs.get("strides") or [1] * len(attrs["axes"])


def _slice_check(shape, attrs, error):
    axes, starts, ends = attrs["axes"], attrs["starts"], attrs["ends"]
    if not len(axes) == len(starts) == len(ends) == len(_steps(attrs)):
        raise error(f"axes {axes}, starts {starts}, ends {ends} (and strides) must have one "
                    f"entry each")
    if 0 in _steps(attrs):
        raise error(f"strides {_steps(attrs)} must not contain 0")
    for a in list(axes) + list(attrs["decrease_axis"]):
        if not 0 <= a < len(shape):
            raise error(f"axis {a} is out of range for an input of shape {tuple(shape)}")
    for a in attrs["decrease_axis"]:
        if a not in axes:
            raise error(f"decrease_axis {a} is not among the sliced axes {axes}")


def slice_walk(shape, attrs):
    """(per-dim (first, count, step) of the walk, output shape) for `shape`, with
    Python's slice clamping; count -1 for a dim that is unknown."""
    walk = [(0, d, 1) for d in shape]
    for a, s, e, st in zip(attrs["axes"], attrs["starts"], attrs["ends"], _steps(attrs)):
        d = shape[a]
        if d == -1:
            walk[a] = (0, 1 if a in attrs["decrease_axis"] else -1, 1)
        else:
            r = range(*slice(int(s), int(e), int(st)).indices(d))
            walk[a] = (r.start, len(r), r.step)
    out = tuple(n for i, (_, n, _) in enumerate(walk) if i not in attrs["decrease_axis"])
    return walk, out


def _slice_infer(ctx):
    x = ctx.input("Input")
    _slice_check(x.shape, ctx.attrs, ctx.error)
    walk, out = slice_walk(tuple(x.shape), ctx.attrs)
    for a in ctx.attrs["decrease_axis"]:
        if walk[a][1] not in (1, -1):
            raise ctx.error(f"decrease_axis {a}: the slice of Input {ctx.name('Input')} "
                            f"{tuple(x.shape)} along it has {walk[a][1]} elements, not 1")
    return {"Out": VarInfo(out, x.dtype)}


def _index(walk):
    # a numpy basic index; a stop below 0 (a negative step reaching index 0) is None
    return tuple(slice(f, (f + n * st) if f + n * st >= 0 else None, st) if n else slice(0, 0)
                 for f, n, st in walk)


def _cstrides(shape):
    return gpu_util.c_strides(shape)


def _gpu_walk(shape, walk):
    """(walk dims, input strides of the walk, offset of its first element), in elements."""
    cs = _cstrides(shape)
    return (tuple(n for _, n, _ in walk), [c * st for c, (_, _, st) in zip(cs, walk)],
            sum(f * c for (f, _, _), c in zip(walk, cs)))


def _slice_cpu(cop):
    walk, _ = slice_walk(tuple(cop.input("Input").shape), cop.attrs)

    def bind(ins, outs):
        view = ins["Input"][0][_index(walk)]
        return functools.partial(np.copyto, outs["Out"][0].reshape(view.shape), view)
    return bind


def _slice_gpu(cop):
    shape = tuple(cop.input("Input").shape)
    dims, sstr, off = _gpu_walk(shape, slice_walk(shape, cop.attrs)[0])

    def bind(ins, outs):
        return gpu_util.strided_copy_thunk(ins["Input"][0], outs["Out"][0], dims, sstr,
                                           _cstrides(dims), off, 0)
    return bind


def _zero_then_copy(dx, dx_view, d):
    dx.fill(0)
    np.copyto(dx_view, d)


def _slice_grad_cpu(cop):
    walk, _ = slice_walk(tuple(cop.input("Input").shape), cop.attrs)

    def bind(ins, outs):
        dx = outs["Input@GRAD"][0]
        view = dx[_index(walk)]
        return functools.partial(_zero_then_copy, dx, view,
                                 ins["Out@GRAD"][0].reshape(view.shape))
    return bind


def _slice_grad_gpu(cop):
    shape = tuple(cop.input("Input").shape)
    dims, dstr, off = _gpu_walk(shape, slice_walk(shape, cop.attrs)[0])

    def bind(ins, outs):
        dx = outs["Input@GRAD"][0]
        return sequence([gpu_util.fill_thunk(dx, 0.0),
                         gpu_util.strided_copy_thunk(ins["Out@GRAD"][0], dx, dims,
                                                     _cstrides(dims), dstr, 0, off)])
    return bind


def _slice_ops(type, attrs, doc):
    def rule(g):
        g.append(type + "_grad", {"Input": g.fwd("Input"), "Out@GRAD": g.dout("Out")},
                 {"Input@GRAD": g.dx("Input")}, dict(g.attrs))
    register_op(OpDef(
        type, (Slot("Input"),), (Slot("Out"),), _slice_infer, _slice_cpu, gpu=_slice_gpu,
        attrs=dict(attrs), grad=rule, doc=doc))
    register_op(OpDef(
        type + "_grad", (Slot("Input"), Slot("Out@GRAD")), (Slot("Input@GRAD"),),
        lambda ctx: {"Input@GRAD": ctx.input("Input")}, _slice_grad_cpu, gpu=_slice_grad_gpu,
        attrs=dict(attrs), traits=frozenset((NO_GRAD,)),
        doc="Input@GRAD = zeros with Out@GRAD at the sliced positions"))


_SLICE_ATTRS = {"axes": [], "starts": [], "ends": [], "decrease_axis": [], "infer_flags": []}
_slice_ops("slice", _SLICE_ATTRS,
           "Out = Input[starts:ends] along `axes` (Python clamping); decrease_axis dims dropped")
_slice_ops("strided_slice", dict(_SLICE_ATTRS, strides=[]),
           "Out = Input[starts:ends:strides] along `axes` (Python slicing, negative strides "
           "walk backwards); decrease_axis dims dropped")


# ---------------------------------------------------------------- one_hot
@njit(nogil=True, cache=True)
def one_hot_kernel(ids, depth, allow_out_of_range, out):
    out[:] = 0
    for i in range(ids.shape[0]):
        k = ids[i]
        if 0 <= k < depth:
            out[i * depth + k] = 1
        elif not allow_out_of_range:
            raise ValueError("one_hot: an index is outside [0, depth); pass "
                             "allow_out_of_range=True to get a row of zeros instead")


def _one_hot_infer(ctx):
    x = ctx.input("X")
    if x.dtype.kind not in "iu":
        raise ctx.error(f"X {ctx.name('X')} must be int32 or int64, got {x.dtype}")
    if not x.shape or x.shape[-1] not in (1, -1):
        raise ctx.error(f"X {ctx.name('X')} must have a last dim of 1 (e.g. labels of shape "
                        f"(N, 1)), got shape {tuple(x.shape)}")
    if int(ctx.attr("depth")) < 1:
        raise ctx.error(f"depth must be >= 1, got {ctx.attr('depth')}")
    return {"Out": VarInfo(tuple(x.shape[:-1]) + (int(ctx.attr("depth")),),
                           np.dtype(ctx.attr("dtype")))}


def _one_hot_cpu(cop):
    depth, allow = int(cop.attrs["depth"]), bool(cop.attrs["allow_out_of_range"])
    return lambda ins, outs: functools.partial(one_hot_kernel, ins["X"][0].reshape(-1), depth,
                                               allow, outs["Out"][0].reshape(-1))


@gpu_util.lazy
def _gpu_kernels():
    global cuda
    from numba import cuda

    @cuda.jit(cache=True)
    def one_hot(ids, depth, out):
        for i in range(cuda.grid(1), out.shape[0], cuda.gridsize(1)):
            out[i] = 1 if ids[i // depth] == i % depth else 0

    row_dev = cuda.jit(device=True)(_top_k_row_py)

    @cuda.jit(cache=True)
    def top_k(x2, k, vals, idx):
        # thread per row; the j-th pick is the largest element after the (j-1)-th in
        # (value descending, index ascending) order: no scratch memory needed
        for r in range(cuda.grid(1), x2.shape[0], cuda.gridsize(1)):
            row_dev(x2, r, k, vals, idx)

    @cuda.jit(cache=True)
    def top_k_grad(idx, dout, k, C, dx):
        for r in range(cuda.grid(1), idx.shape[0] // k, cuda.gridsize(1)):
            for c in range(C):
                dx[r * C + c] = 0
            for j in range(k):
                dx[r * C + idx[r * k + j]] += dout[r * k + j]

    return gpu_util.Kernels(one_hot=one_hot, top_k=top_k, top_k_grad=top_k_grad)


def _one_hot_gpu(cop):
    depth = int(cop.attrs["depth"])

    def bind(ins, outs):
        out = gpu_util.flat(outs["Out"][0])
        return gpu_util.launch_flat(_gpu_kernels().one_hot, out.size,
                                    gpu_util.flat(ins["X"][0]), depth, out)
    return bind


register_op(OpDef(
    "one_hot", (Slot("X", no_grad=True),), (Slot("Out"),), _one_hot_infer, _one_hot_cpu,
    gpu=_one_hot_gpu, attrs={"depth": 1, "dtype": "float32", "allow_out_of_range": False},
    traits=frozenset((NO_GRAD, MAY_FAIL)),
    doc="Out[..., j] = 1 where X[..., 0] == j (X's last dim, 1, becomes `depth`)"))


def _one_hot_v2_infer(ctx):
    x = ctx.input("X")
    if x.dtype.kind not in "iu":
        raise ctx.error(f"X {ctx.name('X')} must be int32 or int64, got {x.dtype}")
    if int(ctx.attr("depth")) < 1:
        raise ctx.error(f"depth must be >= 1, got {ctx.attr('depth')}")
    return {"Out": VarInfo(tuple(x.shape) + (int(ctx.attr("depth")),),
                           np.dtype(ctx.attr("dtype")))}


# Paddle 2's op (F.one_hot): X of any shape gains a trailing `depth` dim; the same kernels
register_op(OpDef(
    "one_hot_v2", (Slot("X", no_grad=True),), (Slot("Out"),), _one_hot_v2_infer, _one_hot_cpu,
    gpu=_one_hot_gpu, attrs={"depth": 1, "dtype": "float32", "allow_out_of_range": False},
    traits=frozenset((NO_GRAD, MAY_FAIL)),
    doc="Out[..., j] = 1 where X[...] == j (a trailing `depth` dim)"))


# ---------------------------------------------------------------- top_k
def _top_k_row_py(x2, r, k, vals, idx):
    C = x2.shape[1]
    pv, pi = x2[r, 0], -1
    for j in range(k):
        bi = -1
        bv = x2[r, 0]
        for c in range(C):
            v = x2[r, c]
            after = pi < 0 or v < pv or (v == pv and c > pi)
            if after and (bi < 0 or v > bv):
                bi, bv = c, v
        vals[r, j] = bv
        idx[r, j] = bi
        pv, pi = bv, bi


_top_k_row = njit(nogil=True, cache=True)(_top_k_row_py)


@njit(nogil=True, cache=True)
def top_k_kernel(x2, k, vals, idx):
    for r in range(x2.shape[0]):
        _top_k_row(x2, r, k, vals, idx)


@njit(nogil=True, cache=True)
def top_k_grad_kernel(idx, dout, dx):
    dx[:] = 0
    for r in range(idx.shape[0]):
        for j in range(idx.shape[1]):
            dx[r, idx[r, j]] += dout[r, j]


def _top_k_infer(ctx):
    x, k = ctx.input("X"), int(ctx.attr("k"))
    if not x.shape:
        raise ctx.error(f"X {ctx.name('X')} must have at least one dim")
    if k < 1 or (x.shape[-1] != -1 and k > x.shape[-1]):
        raise ctx.error(f"k={k} must be between 1 and the last dim {x.shape[-1]} of X "
                        f"{ctx.name('X')} {tuple(x.shape)}")
    shape = tuple(x.shape[:-1]) + (k,)
    return {"Out": VarInfo(shape, x.dtype), "Indices": VarInfo(shape, np.dtype("int64"))}


def _rows(a, cols):
    return a.reshape(-1, cols)


def _top_k_cpu(cop):
    k, C = int(cop.attrs["k"]), cop.input("X").shape[-1]
    return lambda ins, outs: functools.partial(
        top_k_kernel, _rows(ins["X"][0], C), k, _rows(outs["Out"][0], k),
        _rows(outs["Indices"][0], k))


def _top_k_gpu(cop):
    k, C = int(cop.attrs["k"]), cop.input("X").shape[-1]

    def bind(ins, outs):
        x2 = _rows(ins["X"][0], C)
        return gpu_util.launch_flat(_gpu_kernels().top_k, x2.shape[0], x2, k,
                                    _rows(outs["Out"][0], k), _rows(outs["Indices"][0], k))
    return bind


def _top_k_grad_cpu(cop):
    k, C = int(cop.attrs["k"]), cop.input("X").shape[-1]
    return lambda ins, outs: functools.partial(
        top_k_grad_kernel, _rows(ins["Indices"][0], k), _rows(ins["Out@GRAD"][0], k),
        _rows(outs["X@GRAD"][0], C))


def _top_k_grad_gpu(cop):
    k, C = int(cop.attrs["k"]), cop.input("X").shape[-1]

    def bind(ins, outs):
        idx = gpu_util.flat(ins["Indices"][0])
        return gpu_util.launch_flat(_gpu_kernels().top_k_grad, max(1, idx.size // k), idx,
                                    gpu_util.flat(ins["Out@GRAD"][0]), k, C,
                                    gpu_util.flat(outs["X@GRAD"][0]))
    return bind


def _top_k_rule(g):
    g.append("top_k_grad", {"X": g.fwd("X"), "Indices": g.fwd("Indices"),
                            "Out@GRAD": g.dout("Out")}, {"X@GRAD": g.dx("X")}, dict(g.attrs))


register_op(OpDef(
    "top_k", (Slot("X"),), (Slot("Out"), Slot("Indices")), _top_k_infer, _top_k_cpu,
    gpu=_top_k_gpu, attrs={"k": 1}, grad=_top_k_rule,
    doc="Out, Indices = the k largest of X along its last axis, descending"))
register_op(OpDef(
    "top_k_grad", (Slot("X"), Slot("Indices"), Slot("Out@GRAD")), (Slot("X@GRAD"),),
    lambda ctx: {"X@GRAD": ctx.input("X")}, _top_k_grad_cpu, gpu=_top_k_grad_gpu,
    attrs={"k": 1}, traits=frozenset((NO_GRAD,)),
    doc="X@GRAD = Out@GRAD scattered to the Indices positions, zeros elsewhere"))
