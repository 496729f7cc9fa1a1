"""Tensor-API ops of Paddle 2.x that a transformer needs: where, expand_as_v2, tril_triu,
range, linspace, cumsum and pad (constant).

where and expand_as_v2 are elementwise: declared by scalar bodies, so the
loop templates (CPU and CUDA) and the fusion pass handle them. tril_triu, range, linspace,
cumsum and pad need the element's position, so they have their own njit / cuda.jit loops
(cumsum's one body, scan_lane, compiled for both).
Integer results (range of ints, cumsum of ints) are computed in the integer dtype:
exact, as numpy's.
"""
import functools
import math

import numpy as np
from numba import njit

from ..gpu import gpu_util
from .. import scalar as S
from ..math.elementwise import elementwise_op, grad_rule
from ..registry import NO_GRAD, OpDef, Slot, VarInfo, register_op

cuda = None   # numba.cuda, bound by _gpu_kernels on first use (gpu_util's convention)


# ---------------------------------------------------------------- elementwise
def _second_dtype(attrs, dts):
    return dts[1]


# where: Out = X where Condition else Y (Condition bool; the three broadcast)
elementwise_op("where", (Slot("Condition", no_grad=True), "X", "Y"),
               lambda a, c, x, y: S.where(c, x, y), dtype_rule=_second_dtype,
               grad=grad_rule("where_grad", ("X", "Y"), reads=("Condition", "X", "Y")),
               doc="Out = where(Condition, X, Y), numpy broadcasting")
elementwise_op("where_grad", (Slot("Condition"), Slot("X"), Slot("Y"), Slot("Out@GRAD")),
               lambda a, c, x, y, d: (S.where(c, d, 0.0), S.where(c, 0.0, d)),
               outputs=(Slot("X@GRAD", optional=True), Slot("Y@GRAD", optional=True)),
               out_like={"X@GRAD": "X", "Y@GRAD": "Y"}, traits=(NO_GRAD,))

# expand_as_v2: X broadcast to the shape of Y (whose values are not read); the gradient
# is Out@GRAD summed down to X's shape, which out_like does
elementwise_op("expand_as_v2", ("X", Slot("Y", no_grad=True)), lambda a, x, y: x,
               attrs={"target_shape": []},
               grad=grad_rule("expand_as_v2_grad", reads=("X",)),
               doc="Out = X broadcast to Y's shape")
elementwise_op("expand_as_v2_grad", ("X", "Out@GRAD"), lambda a, x, d: d,
               outputs=(Slot("X@GRAD"),), attrs={"target_shape": []},
               out_like={"X@GRAD": "X"}, traits=(NO_GRAD,))

# ---------------------------------------------------------------- tril_triu
@njit(nogil=True, cache=True)
def tril_triu_kernel(x3, diagonal, lower, out3):
    for b in range(x3.shape[0]):
        for r in range(x3.shape[1]):
            for c in range(x3.shape[2]):
                keep = c - r <= diagonal if lower else c - r >= diagonal
                out3[b, r, c] = x3[b, r, c] if keep else 0


def _matrices(a, shape):
    return a.reshape(-1, shape[-2], shape[-1])


def _tril_triu_infer(ctx):
    x = ctx.input("X")
    if len(x.shape) < 2:
        raise ctx.error(f"X {ctx.name('X')} must have at least 2 dims, got shape "
                        f"{tuple(x.shape)}")
    return {"Out": x}


def _tril_triu_cpu(cop):
    shape, a = cop.input("X").shape, cop.attrs
    return lambda ins, outs: functools.partial(
        tril_triu_kernel, _matrices(ins["X"][0], shape), int(a["diagonal"]), bool(a["lower"]),
        _matrices(outs["Out"][0], shape))


def _tril_triu_gpu(cop):
    shape, a = cop.input("X").shape, cop.attrs

    def bind(ins, outs):
        out = gpu_util.flat(outs["Out"][0])
        return gpu_util.launch_flat(_gpu_kernels().tril_triu, out.size,
                                    gpu_util.flat(ins["X"][0]), shape[-2], shape[-1],
                                    int(a["diagonal"]), bool(a["lower"]), out)
    return bind


def _tril_triu_rule(g):
    # linear and self-adjoint: the gradient is the same mask applied to Out@GRAD
    g.append("tril_triu", {"X": g.dout("Out")}, {"Out": g.dx("X")}, dict(g.attrs))


register_op(OpDef("tril_triu", (Slot("X"),), (Slot("Out"),), _tril_triu_infer, _tril_triu_cpu,
                  gpu=_tril_triu_gpu, attrs={"diagonal": 0, "lower": True},
                  grad=_tril_triu_rule,
                  doc="Out = X's lower (lower=True) or upper triangle of each matrix (last "
                      "two dims) from `diagonal` on; zeros elsewhere"))


# ---------------------------------------------------------------- range, linspace
def range_size(start, end, step):
    """The number of elements of arange(start, end, step), as numpy counts them."""
    return max(0, math.ceil((end - start) / step))


def _typed(value, dtype):
    dt = np.dtype(dtype)
    return dt.type(int(value)) if dt.kind in "iu" else dt.type(value)


def _range_infer(ctx):
    a = ctx.attrs
    if a["step"] == 0:
        raise ctx.error("step must not be 0")
    return {"Out": VarInfo((range_size(a["start"], a["end"], a["step"]),), np.dtype(a["dtype"]))}


@njit(nogil=True, cache=True)
def range_kernel(start, step, out):
    for i in range(out.shape[0]):
        out[i] = start + i * step


def _range_cpu(cop):
    a, dt = cop.attrs, cop.attrs["dtype"]
    return lambda ins, outs: functools.partial(range_kernel, _typed(a["start"], dt),
                                               _typed(a["step"], dt), outs["Out"][0])


def _range_gpu(cop):
    a, dt = cop.attrs, cop.attrs["dtype"]

    def bind(ins, outs):
        out = outs["Out"][0]
        return gpu_util.launch_flat(_gpu_kernels().range, out.size, _typed(a["start"], dt),
                                    _typed(a["step"], dt), out)
    return bind


register_op(OpDef("range", (), (Slot("Out"),), _range_infer, _range_cpu, gpu=_range_gpu,
                  attrs={"start": 0.0, "end": 1.0, "step": 1.0, "dtype": "int64"},
                  traits=frozenset((NO_GRAD,)),
                  doc="Out = start, start + step, ... below end (numpy's arange); integer "
                      "dtypes count in integers"))


def _linspace_infer(ctx):
    if int(ctx.attr("num")) < 1:
        raise ctx.error(f"num must be >= 1, got {ctx.attr('num')}")
    return {"Out": VarInfo((int(ctx.attr("num")),), np.dtype(ctx.attr("dtype")))}


@njit(nogil=True, cache=True)
def linspace_kernel(start, stop, out):
    # both ends exact (Paddle's kernel): the first half counts up from start, the
    # second half down from stop
    n = out.shape[0]
    step = (stop - start) / (n - 1) if n > 1 else 0.0
    for i in range(n):
        out[i] = start + step * i if i < (n + 1) // 2 else stop - step * (n - 1 - i)


def _linspace_cpu(cop):
    a = cop.attrs
    return lambda ins, outs: functools.partial(linspace_kernel, float(a["start"]),
                                               float(a["stop"]), outs["Out"][0])


def _linspace_gpu(cop):
    a = cop.attrs

    def bind(ins, outs):
        out = outs["Out"][0]
        return gpu_util.launch_flat(_gpu_kernels().linspace, out.size, float(a["start"]),
                                    float(a["stop"]), out)
    return bind


register_op(OpDef("linspace", (), (Slot("Out"),), _linspace_infer, _linspace_cpu,
                  gpu=_linspace_gpu,
                  attrs={"start": 0.0, "stop": 1.0, "num": 1, "dtype": "float32"},
                  traits=frozenset((NO_GRAD,)),
                  doc="Out = num evenly spaced values from start to stop, both included"))


# ---------------------------------------------------------------- cumsum
def scan_lane(x3, o, j, exclusive, reverse, out3):
    """out3[o, :, j] = the running sum of x3[o, :, j] (exclusive: of the elements before;
    reverse: from the end): the CPU loop's body and a GPU thread's work, compiled for each."""
    n = x3.shape[1]
    acc = x3[o, 0, j] - x3[o, 0, j]     # a zero of x's dtype
    for t in range(n):
        i = n - 1 - t if reverse else t
        if exclusive:
            out3[o, i, j] = acc
            acc += x3[o, i, j]
        else:
            acc += x3[o, i, j]
            out3[o, i, j] = acc


_scan_lane_cpu = njit(nogil=True, cache=True)(scan_lane)


@njit(nogil=True, cache=True)
def cumsum_kernel(x3, exclusive, reverse, out3):
    for o in range(x3.shape[0]):
        for j in range(x3.shape[2]):
            _scan_lane_cpu(x3, o, j, exclusive, reverse, out3)


def _cumsum_view(shape, attrs):
    """(outer, n, inner) of the scan: flatten=True scans the whole tensor."""
    if attrs["flatten"] or not shape:
        return 1, int(np.prod(shape)), 1
    ax = int(attrs["axis"]) % len(shape)
    return (int(np.prod(shape[:ax])), shape[ax], int(np.prod(shape[ax + 1:])))


def _cumsum_infer(ctx):
    x, a = ctx.input("X"), ctx.attrs
    if a["flatten"]:
        n = int(np.prod(x.shape)) if -1 not in x.shape else -1
        return {"Out": VarInfo((n,), x.dtype)}
    if x.shape and not -len(x.shape) <= int(a["axis"]) < len(x.shape):
        raise ctx.error(f"axis {a['axis']} is out of range for X {ctx.name('X')} "
                        f"{tuple(x.shape)}")
    return {"Out": x}


def _cumsum_cpu(cop):
    v, a = _cumsum_view(cop.input("X").shape, cop.attrs), cop.attrs
    return lambda ins, outs: functools.partial(
        cumsum_kernel, ins["X"][0].reshape(v), bool(a["exclusive"]), bool(a["reverse"]),
        outs["Out"][0].reshape(v))


def _cumsum_gpu(cop):
    v, a = _cumsum_view(cop.input("X").shape, cop.attrs), cop.attrs

    def bind(ins, outs):
        return gpu_util.launch_flat(_gpu_kernels().cumsum, v[0] * v[2],
                                    ins["X"][0].reshape(v), bool(a["exclusive"]),
                                    bool(a["reverse"]), outs["Out"][0].reshape(v))
    return bind


def _cumsum_rule(g):
    # dX[i] = sum of dOut over the positions whose sum includes X[i]: the scan reversed
    x = g.fwd("X")
    attrs = dict(g.attrs, reverse=not g.attrs["reverse"])
    if g.attrs["flatten"]:
        flat = g.tmp(x, shape=g.dout("Out").shape)
        g.append("cumsum", {"X": g.dout("Out")}, {"Out": flat}, attrs)
        g.append("reshape2", {"X": flat}, {"Out": g.dx("X")}, {"shape": list(x.shape)})
    else:
        g.append("cumsum", {"X": g.dout("Out")}, {"Out": g.dx("X")}, attrs)


register_op(OpDef("cumsum", (Slot("X"),), (Slot("Out"),), _cumsum_infer, _cumsum_cpu,
                  gpu=_cumsum_gpu, grad=_cumsum_rule,
                  attrs={"axis": -1, "flatten": False, "exclusive": False, "reverse": False},
                  doc="Out = running sum of X along `axis` (of the flattened X with "
                      "flatten=True); integers sum exactly"))


# ---------------------------------------------------------------- pad (constant)
def _pad_pairs(attrs, ndim):
    p = [int(v) for v in attrs["paddings"]]
    return [(p[2 * i], p[2 * i + 1]) for i in range(ndim)]


def _pad_infer(ctx):
    x = ctx.input("X")
    if len(ctx.attr("paddings")) != 2 * len(x.shape):
        raise ctx.error(f"paddings {ctx.attr('paddings')} must have 2 entries per dim of X "
                        f"{ctx.name('X')} {tuple(x.shape)}")
    pairs = _pad_pairs(ctx.attrs, len(x.shape))
    if any(b < 0 or a < 0 for b, a in pairs):
        raise ctx.error(f"paddings {ctx.attr('paddings')} must be >= 0")
    return {"Out": VarInfo(tuple(-1 if d == -1 else d + b + a
                                 for d, (b, a) in zip(x.shape, pairs)), x.dtype)}


def _pad_inner(shape, pairs):
    """The walk of X's block inside Out: per dim (first, count, step)."""
    return [(b, d, 1) for d, (b, _) in zip(shape, pairs)]


def _fill_then_copy(out, value, view, x):
    out.fill(value)
    np.copyto(view, x)


def _pad_cpu(cop):
    shape = tuple(cop.input("X").shape)
    inner = tuple(slice(b, b + d) for b, d, _ in _pad_inner(shape, _pad_pairs(cop.attrs,
                                                                             len(shape))))

    def bind(ins, outs):
        out = outs["Out"][0]
        return functools.partial(_fill_then_copy, out, cop.attrs["pad_value"], out[inner],
                                 ins["X"][0])
    return bind


def _pad_gpu(cop):
    shape = tuple(cop.input("X").shape)
    walk = _pad_inner(shape, _pad_pairs(cop.attrs, len(shape)))
    oshape = tuple(d + b + a for d, (b, a) in zip(shape, _pad_pairs(cop.attrs, len(shape))))
    ostr = gpu_util.c_strides(oshape)
    off = sum(b * c for (b, _, _), c in zip(walk, ostr))

    def bind(ins, outs):
        out = outs["Out"][0]
        return gpu_util.sequence([
            gpu_util.fill_thunk(out, cop.attrs["pad_value"]),
            gpu_util.strided_copy_thunk(ins["X"][0], out, shape, gpu_util.c_strides(shape),
                                        ostr, 0, off)])
    return bind


def _pad_rule(g):
    # the gradient is the slice of Out@GRAD where X sits
    pairs = _pad_pairs(g.attrs, len(g.fwd("X").shape))
    g.append("slice", {"Input": g.dout("Out")}, {"Out": g.dx("X")},
             {"axes": list(range(len(pairs))), "starts": [b for b, _ in pairs],
              "ends": [-a if a else 2 ** 31 - 1 for _, a in pairs], "decrease_axis": [],
              "infer_flags": []})


register_op(OpDef("pad", (Slot("X"),), (Slot("Out"),), _pad_infer, _pad_cpu, gpu=_pad_gpu,
                  attrs={"paddings": [], "pad_value": 0.0}, grad=_pad_rule,
                  doc="Out = X with paddings[2i] / paddings[2i+1] elements of pad_value "
                      "before / after it along dim i"))


# ---------------------------------------------------------------- GPU kernels
@gpu_util.lazy
def _gpu_kernels():
    global cuda
    from numba import cuda

    @cuda.jit(cache=True)
    def tril_triu(x, H, W, diagonal, lower, out):
        for i in range(cuda.grid(1), out.shape[0], cuda.gridsize(1)):
            c = i % W
            r = (i // W) % H
            keep = c - r <= diagonal if lower else c - r >= diagonal
            out[i] = x[i] if keep else 0

    @cuda.jit(cache=True)
    def range_(start, step, out):
        for i in range(cuda.grid(1), out.shape[0], cuda.gridsize(1)):
            out[i] = start + i * step

    @cuda.jit(cache=True)
    def linspace(start, stop, out):
        n = out.shape[0]
        step = (stop - start) / (n - 1) if n > 1 else 0.0
        for i in range(cuda.grid(1), n, cuda.gridsize(1)):
            out[i] = start + step * i if i < (n + 1) // 2 else stop - step * (n - 1 - i)

    lane_scan = cuda.jit(device=True)(scan_lane)

    @cuda.jit(cache=True)
    def cumsum(x3, exclusive, reverse, out3):
        # one thread per (outer, inner) lane scans its n elements
        inner = x3.shape[2]
        for lane in range(cuda.grid(1), x3.shape[0] * inner, cuda.gridsize(1)):
            lane_scan(x3, lane // inner, lane % inner, exclusive, reverse, out3)

    return gpu_util.Kernels(tril_triu=tril_triu, range=range_, linspace=linspace, cumsum=cumsum)
