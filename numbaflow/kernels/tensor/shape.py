"""Shape ops: reshape2, transpose2, concat, split, flatten_contiguous_range, squeeze2,
unsqueeze2 (and their gradient ops).

Every output has its own buffer (no views between variables), so the reshape-like ops
are one flat copy and their gradients are the same copy back into X's shape: one shared
`_reshape_like` registration serves reshape2, flatten_contiguous_range, squeeze2 and
unsqueeze2. concat and split copy blocks of the (A, R, C) view (reduction.py), where R
is the concatenated axis. On the GPU the flat copies are device-to-device memcpys and
transpose / concat / split launch gpu_util's strided copy kernel. Shape inference keeps
-1 (unknown batch) dims unknown rather than guessing.
"""
import functools

import numpy as np

from ..gpu import gpu_util
from ..registry import NO_GRAD, OpDef, Slot, VarInfo, numel, register_op


def _merge_dim(a, b):
    """Two compatible dims (-1 = unknown) -> the known one; None when they conflict."""
    if a == -1:
        return b
    if b == -1 or a == b:
        return a
    return None


def _axis(axis, ndim, what="axis"):
    if not -ndim <= axis < ndim:
        raise ValueError(f"{what} {axis} is out of range for rank {ndim} "
                         f"(valid: {-ndim}..{ndim - 1})")
    return axis % ndim


# ---------------------------------------------------------------- output shapes
def reshape_shape(in_shape, target):
    """Paddle's reshape: 0 copies the input dim at that position, one -1 is inferred.

    With unknown (-1) input dims, a 0 that copies an unknown dim cancels it, so
    (-1, 4, 6) -> [0, -1] is (-1, 24); otherwise the inferred dim stays -1.
    """
    target = [int(d) for d in target]
    if target.count(-1) > 1:
        raise ValueError(f"shape {target} has more than one -1")
    out = []
    for i, d in enumerate(target):
        if d == 0:
            if i >= len(in_shape):
                raise ValueError(f"shape {target} has 0 at position {i}, but the input has only "
                                 f"{len(in_shape)} dims to copy from")
            out.append(in_shape[i])
        elif d >= -1:
            out.append(d)
        else:
            raise ValueError(f"shape {target} has {d}; dims must be > 0, 0 (copy the input "
                             f"dim) or -1 (infer)")
    in_known = numel([d for d in in_shape if d != -1])
    in_unknown = sum(d == -1 for d in in_shape)
    copied_unknown = sum(1 for i, d in enumerate(target) if d == 0 and in_shape[i] == -1)
    free = target.index(-1) if -1 in target else None
    rest = [d for i, d in enumerate(out) if i != free and not (target[i] == 0 and d == -1)]
    rest_known = numel(rest)
    if in_unknown - copied_unknown > 0:
        return tuple(out)                  # the free dim (if any) absorbs an unknown size
    if free is not None:
        if rest_known == 0 or in_known % rest_known:
            raise ValueError(f"cannot reshape an input of {in_known} elements to {target}: "
                             f"the dims other than -1 multiply to {rest_known}, which does "
                             f"not divide it")
        out[free] = in_known // rest_known
    elif in_known != rest_known:
        raise ValueError(f"shape {target} has {rest_known} elements but the input has "
                         f"{in_known}")
    return tuple(out)


def flatten_shape(in_shape, start, stop):
    nd = len(in_shape)
    if nd == 0:
        return (1,)
    start, stop = _axis(start, nd, "start_axis"), _axis(stop, nd, "stop_axis")
    if start > stop:
        raise ValueError(f"start_axis ({start}) must not be after stop_axis ({stop})")
    mid = in_shape[start:stop + 1]
    return tuple(in_shape[:start]) + (-1 if -1 in mid else numel(mid),) + tuple(in_shape[stop + 1:])


def squeeze_shape(in_shape, axes):
    """Paddle's squeeze2: no axes drops every size-1 dim; a listed dim is dropped when it
    is 1 (or unknown, which must then be 1 at run time) and kept otherwise."""
    nd = len(in_shape)
    if not axes:
        drop = {i for i, d in enumerate(in_shape) if d == 1}
    else:
        if nd == 0:
            return ()
        drop = {i for i in (_axis(int(a), nd) for a in axes) if in_shape[i] in (1, -1)}
    return tuple(d for i, d in enumerate(in_shape) if i not in drop)


def unsqueeze_shape(in_shape, axes):
    """Paddle's unsqueeze2: axes are inserted one after another, each into the shape
    produced so far (a negative axis counts from the end of that shape, -1 = append)."""
    shape = list(in_shape)
    for a in axes:
        a = int(a)
        cur = len(shape)
        if not -cur - 1 <= a <= cur:
            raise ValueError(f"axis {a} is out of range for inserting into rank {cur} "
                             f"(valid: {-cur - 1}..{cur})")
        shape.insert(a + cur + 1 if a < 0 else a, 1)
    return tuple(shape)


# ---------------------------------------------------------------- reshape-like ops
def _flat_copy(src_slot, dst_slot):
    """Kernel factory: copy the single input of `src_slot` into the output, flat."""
    def cpu(cop):
        def bind(ins, outs):
            src, dst = ins[src_slot][0], outs[dst_slot][0]
            return functools.partial(np.copyto, dst.reshape(-1), src.reshape(-1))
        return bind
    return cpu


def _flat_copy_gpu(src_slot, dst_slot):
    def gpu(cop):
        return lambda ins, outs: gpu_util.copy_thunk(ins[src_slot][0], outs[dst_slot][0])
    return gpu


def _reshape_like_grad_infer(ctx):
    x, d = ctx.input("X"), ctx.input("Out@GRAD")
    if -1 not in x.shape and -1 not in d.shape and numel(x.shape) != numel(d.shape):
        raise ctx.error(f"Out@GRAD {ctx.name('Out@GRAD')} of shape {d.shape} has "
                        f"{numel(d.shape)} elements but X {ctx.name('X')} of shape {x.shape} "
                        f"has {numel(x.shape)}")
    return {"X@GRAD": x}


def _reshape_like(type, attrs, shape_fn, doc):
    """Register `type` (X -> Out, a flat copy into shape_fn(X.shape, attrs)) and
    `type_grad` (X [shape only], Out@GRAD -> X@GRAD, the flat copy back)."""
    def infer(ctx):
        x = ctx.input("X")
        try:
            shape = shape_fn(tuple(x.shape), ctx.attrs)
        except ValueError as e:
            raise ctx.error(f"{e} (X {ctx.name('X')} has shape {tuple(x.shape)})") from None
        return {"Out": VarInfo(shape, x.dtype)}

    def rule(g):
        g.append(type + "_grad", {"X": g.fwd("X"), "Out@GRAD": g.dout("Out")},
                 {"X@GRAD": g.dx("X")}, dict(g.attrs))

    register_op(OpDef(type, (Slot("X"),), (Slot("Out"),), infer, _flat_copy("X", "Out"),
                      gpu=_flat_copy_gpu("X", "Out"), attrs=dict(attrs), grad=rule, doc=doc))
    register_op(OpDef(type + "_grad", (Slot("X"), Slot("Out@GRAD")), (Slot("X@GRAD"),),
                      _reshape_like_grad_infer, _flat_copy("Out@GRAD", "X@GRAD"),
                      gpu=_flat_copy_gpu("Out@GRAD", "X@GRAD"), shape_only=("X",),
                      attrs=dict(attrs), traits=frozenset((NO_GRAD,)),
                      doc=f"X@GRAD = Out@GRAD copied into X's shape (gradient of {type})"))


_reshape_like("reshape2", {"shape": []}, lambda s, a: reshape_shape(s, a["shape"]),
              "Out = X with shape `shape` (0 copies the input dim, one -1 is inferred)")
_reshape_like("flatten_contiguous_range", {"start_axis": 1, "stop_axis": -1},
              lambda s, a: flatten_shape(s, a["start_axis"], a["stop_axis"]),
              "Out = X with dims start_axis..stop_axis merged into one")
_reshape_like("squeeze2", {"axes": []}, lambda s, a: squeeze_shape(s, a["axes"]),
              "Out = X without its size-1 dims (those in `axes`, or all when empty)")
_reshape_like("unsqueeze2", {"axes": []}, lambda s, a: unsqueeze_shape(s, a["axes"]),
              "Out = X with size-1 dims inserted at `axes`, one after another")


# ---------------------------------------------------------------- transpose2
def _perm(axis, ndim):
    perm = [int(p) for p in axis]
    if len(perm) != ndim or sorted(p % max(ndim, 1) for p in perm if -ndim <= p < ndim) \
            != list(range(ndim)):
        raise ValueError(f"axis {perm} is not a permutation of the {ndim} axes")
    return [p % ndim for p in perm]


def _transpose_infer(ctx):
    x = ctx.input("X")
    try:
        perm = _perm(ctx.attr("axis"), len(x.shape))
    except ValueError as e:
        raise ctx.error(f"{e} of X {ctx.name('X')} {tuple(x.shape)}") from None
    return {"Out": VarInfo(tuple(x.shape[p] for p in perm), x.dtype)}


def _transpose_cpu(cop):
    perm = _perm(cop.attrs["axis"], len(cop.input("X").shape))

    def bind(ins, outs):
        # numpy's strided copy from the permuted view: no temporary
        return functools.partial(np.copyto, outs["Out"][0], ins["X"][0].transpose(perm))
    return bind


def _transpose_gpu(cop):
    perm = _perm(cop.attrs["axis"], len(cop.input("X").shape))
    return lambda ins, outs: gpu_util.transpose_thunk(ins["X"][0], outs["Out"][0], perm)


def _transpose_grad(g):
    perm = _perm(g.attrs["axis"], len(g.fwd("X").shape))
    g.append("transpose2", {"X": g.dout("Out")}, {"Out": g.dx("X")},
             {"axis": [int(i) for i in np.argsort(perm)]})


register_op(OpDef("transpose2", (Slot("X"),), (Slot("Out"),), _transpose_infer, _transpose_cpu,
                  gpu=_transpose_gpu,
                  attrs={"axis": []}, grad=_transpose_grad,
                  doc="Out = X with its axes permuted: Out.shape[i] = X.shape[axis[i]]; "
                      "the gradient is transpose2 with the inverse permutation"))


# ---------------------------------------------------------------- concat
def concat_shape(shapes, axis, names):
    nd = len(shapes[0])
    for s, n in zip(shapes, names):
        if len(s) != nd:
            raise ValueError(f"all inputs must have the same rank; {names[0]} is {shapes[0]} "
                             f"but {n} is {s}")
    if nd == 0:
        raise ValueError(f"cannot concatenate 0-D tensors {names}; unsqueeze them first")
    ax = _axis(axis, nd)
    out = []
    for d in range(nd):
        dims = [s[d] for s in shapes]
        if d == ax:
            out.append(-1 if -1 in dims else sum(dims))
            continue
        m = dims[0]
        for s, n in zip(shapes, names):
            m = _merge_dim(m, s[d])
            if m is None:
                raise ValueError(f"inputs differ in dim {d} (not the concat axis {ax}): "
                                 f"{dict(zip(names, shapes))}")
        out.append(m)
    return tuple(out), ax


def _concat_infer(ctx):
    xs = ctx.inputs("X")
    if not xs:
        raise ctx.error("needs at least one input X")
    names = [ctx.name("X", i) for i in range(len(xs))]
    dts = {x.dtype for x in xs}
    if len(dts) > 1:
        raise ctx.error(f"inputs must share one dtype, got "
                        f"{ {n: str(x.dtype) for n, x in zip(names, xs)} }; cast them first")
    try:
        shape, _ = concat_shape([tuple(x.shape) for x in xs], ctx.attr("axis"), names)
    except ValueError as e:
        raise ctx.error(str(e)) from None
    return {"Out": VarInfo(shape, xs[0].dtype)}


def _blocks(whole, parts, ax):
    """(A, R, C) views of `whole` and (A, Ri, C) views of each part plus the matching
    slice of whole: [(whole_slice, part)]."""
    shape = whole.shape
    A, C = numel(shape[:ax]), numel(shape[ax + 1:])
    w3 = whole.reshape(A, shape[ax], C)
    pairs, off = [], 0
    for p in parts:
        r = p.shape[ax]
        pairs.append((w3[:, off:off + r, :], p.reshape(A, r, C)))
        off += r
    return pairs


def _copy_into_whole(pairs):
    for w, p in pairs:
        np.copyto(w, p)


def _copy_into_parts(pairs):
    for w, p in pairs:
        np.copyto(p, w)


def _block_copies_gpu(whole, parts, ax, into_whole):
    calls, off = [], 0
    for p in parts:
        calls.append(gpu_util.block_copy_thunk(whole, p, ax, off, into_whole))
        off += p.shape[ax]
    return gpu_util.sequence(calls)


def _concat_cpu(cop):
    ax = cop.attrs["axis"] % len(cop.output("Out").shape)
    return lambda ins, outs: functools.partial(
        _copy_into_whole, _blocks(outs["Out"][0], ins["X"], ax))


def _concat_gpu(cop):
    ax = cop.attrs["axis"] % len(cop.output("Out").shape)
    return lambda ins, outs: _block_copies_gpu(outs["Out"][0], ins["X"], ax, True)


def _concat_grad_rule(g):
    xs = g.fwd_list("X")
    dxs = g.dx_list("X")
    if all(d is None for d in dxs):
        return
    # A duplicable output list cannot hold gaps (the IR drops None entries), so the
    # inputs that need no gradient get a scratch variable that nothing reads.
    dxs = [d if d is not None else g.tmp(x) for x, d in zip(xs, dxs)]
    g.append("concat_grad", {"X": xs, "Out@GRAD": g.dout("Out")}, {"X@GRAD": dxs},
             dict(g.attrs))


def _concat_grad_infer(ctx):
    return {"X@GRAD": ctx.inputs("X")}


def _concat_grad_cpu(cop):
    ax = cop.attrs["axis"] % len(cop.input("Out@GRAD").shape)
    return lambda ins, outs: functools.partial(
        _copy_into_parts, _blocks(ins["Out@GRAD"][0], outs["X@GRAD"], ax))


def _concat_grad_gpu(cop):
    ax = cop.attrs["axis"] % len(cop.input("Out@GRAD").shape)
    return lambda ins, outs: _block_copies_gpu(ins["Out@GRAD"][0], outs["X@GRAD"], ax, False)


def _split_gpu(cop):
    ax = cop.attrs["axis"] % len(cop.input("X").shape)
    return lambda ins, outs: _block_copies_gpu(ins["X"][0], outs["Out"], ax, False)


register_op(OpDef("concat", (Slot("X", duplicable=True),), (Slot("Out"),), _concat_infer,
                  _concat_cpu, gpu=_concat_gpu, attrs={"axis": 0}, grad=_concat_grad_rule,
                  doc="Out = X[0], X[1], ... joined along `axis`"))
register_op(OpDef("concat_grad", (Slot("X", duplicable=True), Slot("Out@GRAD")),
                  (Slot("X@GRAD", duplicable=True),), _concat_grad_infer, _concat_grad_cpu,
                  gpu=_concat_grad_gpu,
                  attrs={"axis": 0}, traits=frozenset((NO_GRAD,)),
                  doc="X@GRAD[i] = the slice of Out@GRAD that X[i] filled (one per X)"))


# ---------------------------------------------------------------- split
def split_sizes(dim, num, sections):
    """The outputs' sizes along the split axis (-1 where unknown)."""
    if num and sections:
        raise ValueError(f"give either num ({num}) or sections ({list(sections)}), not both")
    if num:
        if num < 0:
            raise ValueError(f"num must be positive, got {num}")
        if dim == -1:
            return [-1] * num
        if dim % num:
            raise ValueError(f"the split axis has size {dim}, which is not divisible by "
                             f"num={num}; pass sections instead")
        return [dim // num] * num
    secs = [int(s) for s in sections]
    if not secs:
        raise ValueError("needs num > 0 or a non-empty sections list")
    if secs.count(-1) > 1 or any(s < -1 for s in secs):
        raise ValueError(f"sections {secs} may hold sizes >= 0 and at most one -1")
    if dim == -1:
        return secs
    known = sum(s for s in secs if s != -1)
    if -1 in secs:
        if known > dim:
            raise ValueError(f"sections {secs} add up to {known}, more than the axis size {dim}")
        return [dim - known if s == -1 else s for s in secs]
    if known != dim:
        raise ValueError(f"sections {secs} add up to {known}, but the axis has size {dim}")
    return secs


def _split_infer(ctx):
    x = ctx.input("X")
    shape = tuple(x.shape)
    try:
        ax = _axis(ctx.attr("axis"), len(shape))
        sizes = split_sizes(shape[ax], ctx.attr("num"), ctx.attr("sections"))
    except ValueError as e:
        raise ctx.error(f"{e} (X {ctx.name('X')} has shape {shape})") from None
    return {"Out": [VarInfo(shape[:ax] + (s,) + shape[ax + 1:], x.dtype) for s in sizes]}


def _split_cpu(cop):
    ax = cop.attrs["axis"] % len(cop.input("X").shape)
    return lambda ins, outs: functools.partial(
        _copy_into_parts, _blocks(ins["X"][0], outs["Out"], ax))


def _split_grad(g):
    outs = g.op.outputs["Out"]
    g.append("concat", {"X": [g.dout_or_zeros("Out", i) for i in range(len(outs))]},
             {"Out": g.dx("X")}, {"axis": int(g.attrs["axis"])})


register_op(OpDef("split", (Slot("X"),), (Slot("Out", duplicable=True),), _split_infer,
                  _split_cpu, gpu=_split_gpu, attrs={"num": 0, "sections": [], "axis": 0},
                  grad=_split_grad,
                  doc="Out = X cut along `axis` into `num` equal parts or `sections` sizes "
                      "(one -1 takes the rest); the gradient is concat"))


def _shape_infer(ctx):
    return {"Out": VarInfo((len(ctx.input("Input").shape),), np.dtype("int32"))}


def _shape_values(cop):
    # a plan's shapes are concrete when it binds: the value is a constant of the plan
    return np.asarray(cop.input("Input").shape, dtype=np.int32)


def _shape_cpu(cop):
    def bind(ins, outs):
        out, values = outs["Out"][0], _shape_values(cop)
        return functools.partial(np.copyto, out, values)
    return bind


def _shape_gpu(cop):
    return lambda ins, outs: gpu_util.copy_thunk(gpu_util.to_device(_shape_values(cop)),
                                                 outs["Out"][0])


register_op(OpDef("shape", (Slot("Input", no_grad=True),), (Slot("Out"),), _shape_infer,
                  _shape_cpu, gpu=_shape_gpu, traits=frozenset((NO_GRAD,)),
                  doc="Out = the run-time shape of Input (int32, one entry per dim)"))
