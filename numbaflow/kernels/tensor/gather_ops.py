"""Index-driven ops of Paddle 2.x: gather, take_along_axis and argsort, with gradients.

All three read X through an (outer, n, inner) view around their axis. gather picks the
same positions `Index` (1-D) for every (outer, inner) lane; take_along_axis picks
`Index[o, i, j]` per element (Index has X's shape except along the axis); argsort is
a stable sort whose gradient is take_along_axis's. Gradients scatter-add Out@GRAD back
(an index drawn twice gets both). An index outside [-n, n) raises on the CPU; a GPU
kernel cannot raise, so there it reads / writes nothing (0 in the output). The GPU
argsort gives each element its rank in the stable order (one thread per element).
"""
import functools

import numpy as np
from numba import njit

from ..gpu import gpu_util
from ..registry import MAY_FAIL, NO_GRAD, OpDef, Slot, VarInfo, register_op

cuda = None   # numba.cuda, bound by _gpu_kernels on first use (gpu_util's convention)


def _view(shape, axis):
    """(outer, n, inner) around `axis` of `shape`."""
    return (int(np.prod(shape[:axis])), int(shape[axis]), int(np.prod(shape[axis + 1:])))


def _axis(ctx, x, attr):
    ax = int(ctx.attr(attr))
    if not -len(x.shape) <= ax < len(x.shape):
        raise ctx.error(f"{attr} {ax} is out of range for a tensor of shape {tuple(x.shape)}")
    return ax % len(x.shape)


def _int_index(ctx, slot):
    idx = ctx.input(slot)
    if idx.dtype.kind not in "iu":
        raise ctx.error(f"{slot} {ctx.name(slot)} must be int32 or int64, got {idx.dtype}")
    return idx


# ---------------------------------------------------------------- gather
@njit(nogil=True, cache=True)
def gather_kernel(x3, idx, out3):
    n = x3.shape[1]
    for i in range(idx.shape[0]):
        k = idx[i] + n if idx[i] < 0 else idx[i]
        if not 0 <= k < n:
            raise IndexError("gather: an index is outside [-n, n) for an axis of size n")
        out3[:, i, :] = x3[:, k, :]


@njit(nogil=True, cache=True)
def gather_grad_kernel(idx, d3, dx3):
    dx3[:] = 0
    n = dx3.shape[1]
    for i in range(idx.shape[0]):
        k = idx[i] + n if idx[i] < 0 else idx[i]
        dx3[:, k, :] += d3[:, i, :]


def _gather_infer(ctx):
    x, idx = ctx.input("X"), _int_index(ctx, "Index")
    if len(idx.shape) != 1:
        raise ctx.error(f"Index {ctx.name('Index')} must be 1-D, got shape {tuple(idx.shape)}")
    ax = _axis(ctx, x, "axis")
    shape = tuple(x.shape[:ax]) + (idx.shape[0],) + tuple(x.shape[ax + 1:])
    return {"Out": VarInfo(shape, x.dtype)}


def _gather_views(cop):
    ax = int(cop.attrs["axis"]) % len(cop.input("X").shape)
    return _view(cop.input("X").shape, ax), _view(cop.output("Out").shape
                                                  if cop.output("Out") else
                                                  cop.input("Out@GRAD").shape, ax)


def _gather_cpu(cop):
    xv, ov = _gather_views(cop)
    return lambda ins, outs: functools.partial(
        gather_kernel, ins["X"][0].reshape(xv), ins["Index"][0], outs["Out"][0].reshape(ov))


def _gather_gpu(cop):
    xv, ov = _gather_views(cop)

    def bind(ins, outs):
        return gpu_util.launch_flat(_gpu_kernels().gather, int(np.prod(ov)),
                                    ins["X"][0].reshape(xv), ins["Index"][0],
                                    outs["Out"][0].reshape(ov))
    return bind


def _gather_grad_cpu(cop):
    xv, ov = _gather_views(cop)
    return lambda ins, outs: functools.partial(
        gather_grad_kernel, ins["Index"][0], ins["Out@GRAD"][0].reshape(ov),
        outs["X@GRAD"][0].reshape(xv))


def _scatter_gpu(name, views, per_element, dout):
    """The GPU grad factory: zero dX, then atomically add Out@GRAD at the Index positions
    (Index is 1-D for gather, shaped like Out@GRAD for take_along_axis)."""
    def factory(cop):
        xv, ov = views(cop)

        def bind(ins, outs):
            dx = next(iter(outs.values()))[0]
            idx = ins["Index"][0].reshape(ov) if per_element else ins["Index"][0]
            return gpu_util.sequence([
                gpu_util.fill_thunk(dx, 0.0),
                gpu_util.launch_flat(getattr(_gpu_kernels(), name), int(np.prod(ov)), idx,
                                     ins[dout][0].reshape(ov), dx.reshape(xv))])
        return bind
    return factory


def _gather_rule(g):
    g.append("gather_grad", {"X": g.fwd("X"), "Index": g.fwd("Index"),
                             "Out@GRAD": g.dout("Out")}, {"X@GRAD": g.dx("X")}, dict(g.attrs))


register_op(OpDef("gather", (Slot("X"), Slot("Index", no_grad=True)), (Slot("Out"),),
                  _gather_infer, _gather_cpu, gpu=_gather_gpu, attrs={"axis": 0},
                  grad=_gather_rule, traits=frozenset((MAY_FAIL,)),
                  doc="Out = X's slices at positions Index (1-D) along `axis`"))
register_op(OpDef("gather_grad", (Slot("X"), Slot("Index"), Slot("Out@GRAD")),
                  (Slot("X@GRAD"),), lambda ctx: {"X@GRAD": ctx.input("X")},
                  _gather_grad_cpu, gpu=_scatter_gpu("gather_grad", _gather_views, False,
                                                     "Out@GRAD"),
                  attrs={"axis": 0}, traits=frozenset((NO_GRAD,)),
                  doc="X@GRAD = Out@GRAD's slices added at positions Index, zeros elsewhere"))


# ---------------------------------------------------------------- take_along_axis
@njit(nogil=True, cache=True)
def take_along_kernel(x3, idx3, out3):
    n = x3.shape[1]
    for o in range(idx3.shape[0]):
        for i in range(idx3.shape[1]):
            for j in range(idx3.shape[2]):
                k = idx3[o, i, j]
                k = k + n if k < 0 else k
                if not 0 <= k < n:
                    raise IndexError("take_along_axis: an index is outside [-n, n) for an "
                                     "axis of size n")
                out3[o, i, j] = x3[o, k, j]


@njit(nogil=True, cache=True)
def take_along_grad_kernel(idx3, d3, dx3):
    dx3[:] = 0
    n = dx3.shape[1]
    for o in range(idx3.shape[0]):
        for i in range(idx3.shape[1]):
            for j in range(idx3.shape[2]):
                k = idx3[o, i, j]
                dx3[o, k + n if k < 0 else k, j] += d3[o, i, j]


def _take_infer(ctx):
    x, idx = ctx.input("Input"), _int_index(ctx, "Index")
    ax = _axis(ctx, x, "Axis")
    if len(idx.shape) != len(x.shape) or any(
            a != b and -1 not in (a, b) for d, (a, b) in enumerate(zip(idx.shape, x.shape))
            if d != ax):
        raise ctx.error(f"Index {ctx.name('Index')} {tuple(idx.shape)} must have the shape "
                        f"of Input {ctx.name('Input')} {tuple(x.shape)} except along axis "
                        f"{ax} (paddle.take_along_axis broadcasts them first)")
    return {"Out": VarInfo(tuple(idx.shape), x.dtype)}


def _take_views(cop):
    x = cop.input("Input")
    ax = int(cop.attrs["Axis"]) % len(x.shape)
    return _view(x.shape, ax), _view(cop.input("Index").shape, ax)


def _take_cpu(cop):
    xv, iv = _take_views(cop)
    return lambda ins, outs: functools.partial(
        take_along_kernel, ins["Input"][0].reshape(xv), ins["Index"][0].reshape(iv),
        outs["Result"][0].reshape(iv))


def _take_gpu(cop):
    xv, iv = _take_views(cop)

    def bind(ins, outs):
        return gpu_util.launch_flat(_gpu_kernels().take_along, int(np.prod(iv)),
                                    ins["Input"][0].reshape(xv), ins["Index"][0].reshape(iv),
                                    outs["Result"][0].reshape(iv))
    return bind


def _take_grad_cpu(cop):
    xv, iv = _take_views(cop)
    return lambda ins, outs: functools.partial(
        take_along_grad_kernel, ins["Index"][0].reshape(iv),
        ins["Result@GRAD"][0].reshape(iv), outs["Input@GRAD"][0].reshape(xv))


def _take_rule(g):
    g.append("take_along_axis_grad", {"Input": g.fwd("Input"), "Index": g.fwd("Index"),
                                      "Result@GRAD": g.dout("Result")},
             {"Input@GRAD": g.dx("Input")}, dict(g.attrs))


register_op(OpDef("take_along_axis", (Slot("Input"), Slot("Index", no_grad=True)),
                  (Slot("Result"),), lambda ctx: {"Result": _take_infer(ctx)["Out"]},
                  _take_cpu, gpu=_take_gpu, attrs={"Axis": 0}, grad=_take_rule,
                  traits=frozenset((MAY_FAIL,)),
                  doc="Result[..i..] = Input at position Index[..i..] along `Axis`"))
register_op(OpDef("take_along_axis_grad",
                  (Slot("Input"), Slot("Index"), Slot("Result@GRAD")), (Slot("Input@GRAD"),),
                  lambda ctx: {"Input@GRAD": ctx.input("Input")},
                  _take_grad_cpu, gpu=_scatter_gpu("take_along_grad", _take_views, True,
                                                   "Result@GRAD"),
                  attrs={"Axis": 0}, traits=frozenset((NO_GRAD,)),
                  doc="Input@GRAD = Result@GRAD added at the Index positions, zeros elsewhere"))


# ---------------------------------------------------------------- argsort
def _argsort_infer(ctx):
    x = ctx.input("X")
    if x.shape:
        _axis(ctx, x, "axis")
    return {"Out": x, "Indices": VarInfo(tuple(x.shape), np.dtype("int64"))}


def _argsort_run(x, axis, descending, out, indices):
    # stable: equal values keep index order, ascending or descending (Paddle's order)
    order = np.argsort(-x if descending else x, axis=axis, kind="stable")
    indices[...] = order
    out[...] = np.take_along_axis(x, order, axis)


def _argsort_cpu(cop):
    ax = int(cop.attrs["axis"])
    desc = bool(cop.attrs["descending"])
    return lambda ins, outs: functools.partial(_argsort_run, ins["X"][0], ax, desc,
                                               outs["Out"][0], outs["Indices"][0])


def _argsort_rule(g):
    if g.dout("Out") is None:
        return
    g.append("take_along_axis_grad", {"Input": g.fwd("X"), "Index": g.fwd("Indices"),
                                      "Result@GRAD": g.dout("Out")},
             {"Input@GRAD": g.dx("X")}, {"Axis": g.attrs["axis"]})


def _argsort_gpu(cop):
    shape = cop.input("X").shape
    v = _view(shape, int(cop.attrs["axis"]) % len(shape)) if shape else (1, 1, 1)
    desc = bool(cop.attrs["descending"])

    def bind(ins, outs):
        return gpu_util.launch_flat(_gpu_kernels().argsort, int(np.prod(v)),
                                    ins["X"][0].reshape(v), desc, outs["Out"][0].reshape(v),
                                    outs["Indices"][0].reshape(v))
    return bind


register_op(OpDef("argsort", (Slot("X"),), (Slot("Out"), Slot("Indices")), _argsort_infer,
                  _argsort_cpu, gpu=_argsort_gpu,
                  attrs={"axis": -1, "descending": False}, grad=_argsort_rule,
                  doc="Out, Indices = X sorted along `axis` (stable) and the positions"))


# ---------------------------------------------------------------- GPU kernels
@gpu_util.lazy
def _gpu_kernels():
    global cuda
    from numba import cuda

    @cuda.jit(cache=True)
    def gather(x3, idx, out3):
        m, inner, n = idx.shape[0], x3.shape[2], x3.shape[1]
        for t in range(cuda.grid(1), out3.size, cuda.gridsize(1)):
            o, i, j = t // (m * inner), (t // inner) % m, t % inner
            k = idx[i] + n if idx[i] < 0 else idx[i]
            out3[o, i, j] = x3[o, k, j] if 0 <= k < n else 0

    @cuda.jit(cache=True)
    def gather_grad(idx, d3, dx3):
        m, inner, n = idx.shape[0], d3.shape[2], dx3.shape[1]
        for t in range(cuda.grid(1), d3.size, cuda.gridsize(1)):
            o, i, j = t // (m * inner), (t // inner) % m, t % inner
            k = idx[i] + n if idx[i] < 0 else idx[i]
            if 0 <= k < n:
                cuda.atomic.add(dx3, (o, k, j), d3[o, i, j])

    @cuda.jit(cache=True)
    def take_along(x3, idx3, out3):
        m, inner, n = idx3.shape[1], idx3.shape[2], x3.shape[1]
        for t in range(cuda.grid(1), out3.size, cuda.gridsize(1)):
            o, i, j = t // (m * inner), (t // inner) % m, t % inner
            k = idx3[o, i, j]
            k = k + n if k < 0 else k
            out3[o, i, j] = x3[o, k, j] if 0 <= k < n else 0

    @cuda.jit(cache=True)
    def take_along_grad(idx3, d3, dx3):
        m, inner, n = idx3.shape[1], idx3.shape[2], dx3.shape[1]
        for t in range(cuda.grid(1), d3.size, cuda.gridsize(1)):
            o, i, j = t // (m * inner), (t // inner) % m, t % inner
            k = idx3[o, i, j]
            k = k + n if k < 0 else k
            if 0 <= k < n:
                cuda.atomic.add(dx3, (o, k, j), d3[o, i, j])

    @cuda.jit(cache=True)
    def argsort(x3, descending, out3, idx3):
        # one thread per element: its place in the stable order is the number of elements
        # of its lane that come before it (O(n) per element, no scratch memory)
        n, inner = x3.shape[1], x3.shape[2]
        for t in range(cuda.grid(1), x3.size, cuda.gridsize(1)):
            o, i, j = t // (n * inner), (t // inner) % n, t % inner
            v = x3[o, i, j]
            rank = 0
            for k in range(n):
                w = x3[o, k, j]
                before = w > v if descending else w < v
                if before or (w == v and k < i):
                    rank += 1
            out3[o, rank, j] = v
            idx3[o, rank, j] = i

    return gpu_util.Kernels(gather=gather, gather_grad=gather_grad, take_along=take_along,
                        take_along_grad=take_along_grad, argsort=argsort)
