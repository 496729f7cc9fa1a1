"""fused_elementwise: a connected group of elementwise ops run as ONE generated kernel.

The `auto_fusion` pass replaces each group with this op. Its attribute `ops` describes
the sub-ops in program order; nothing is encoded in variable names:

    ops = ((op_type, ((attr, value), ...), ((in_slot, (ref, ...)), ...),
            ((out_slot, (ref, ...)), ...)), ...)

A `ref` is `("x", i)` (the fused op's input X[i]), `("out", j)` (a value the group
computes and writes to Out[j]) or `("tmp", k)` (a value only used inside the group).
Attributes and slots are pairs rather than dicts so that a program holding the op
can be serialised (attributes are lists of plain values there); `make_ops` builds the
tuple form from dicts.

The kernel is generated, not hand-written: each sub-op's registered scalar body is
called on the Syms of its operands (a producer's output Syms are substituted into its
consumers), and the resulting DAG goes through the same CPU loop template
(`codegen.cpu.ElementwiseKernel`) and CUDA template (`codegen.cuda`) as a single
elementwise op, so generated sources are cached on disk by hash and dumped with
NUMBAFLOW_DUMP_DIR. Every sub-op iterates over one shape (the group's); inputs may
broadcast into it (each with its sub-op's Paddle `axis` alignment), and an output may be
summed down to a smaller shape (the gradient of a broadcast input) when no sub-op of
the group reads it.

Epilogue / prologue: the first sub-op may be a matmul (`HEADS`) and the last a
reduction or softmax (`TAILS`). They run their own registered kernels before / after the
generated one, through buffers: Out[j] when the value is an output, else a scratch
buffer the bound op owns.
"""
import functools

import numpy as np

from ... import config
from .. import scalar as S
from ..codegen.cpu import ElementwiseKernel
from ..codegen.render import inputs_used
from ..math.elementwise import cuda_elementwise_kernel, align
from ..registry import run_calls
from ..registry import (ELEMENTWISE, INT_DIVIDES, FUSED, NO_GRAD, ConcreteOp, InferContext, OpDef, Slot, VarInfo,
    broadcast_shapes, get_op_def, register_op)

REF_KINDS = ("x", "out", "tmp")
HEADS = ("mul", "matmul_v2")                       # may come first: the BLAS call
TAILS = ("reduce_sum", "reduce_mean", "softmax")   # may come last: reads the group's values


def make_ops(entries):
    """The canonical `ops` attribute from [(type, attrs dict, {slot: [refs]}, {slot: [refs]})].

    >>> make_ops([("elementwise_add", {"axis": 1}, {"X": [("x", 0)], "Y": [("x", 1)]},
    ...            {"Out": [("tmp", 0)]}),
    ...           ("relu", {}, {"X": [("tmp", 0)]}, {"Out": [("out", 0)]})])
    """
    def slots(d):
        return tuple((s, tuple((str(r[0]), int(r[1])) for r in refs)) for s, refs in d.items())
    return tuple((t, tuple(sorted(dict(attrs).items())), slots(ins), slots(outs))
                 for t, attrs, ins, outs in entries)


def parse_ops(ops):
    """[(type, attrs dict, {slot: [ref tuples]}, {slot: [ref tuples]})] from the attribute
    (tuple form, its list form after serialisation, or dicts)."""
    def pairs(p):
        return dict(p.items() if isinstance(p, dict) else p)

    def refs(p):
        out = {}
        for slot, rs in pairs(p).items():
            out[slot] = []
            for r in rs:
                if len(r) != 2 or r[0] not in REF_KINDS:
                    raise ValueError(f"fused_elementwise: bad operand reference {r!r}; expected "
                                     f"('x' | 'out' | 'tmp', index)")
                out[slot].append((r[0], int(r[1])))
        return out
    return [(t, pairs(a), refs(i), refs(o)) for t, a, i, o in ops]


class _Step:
    """One sub-op, resolved against concrete (or symbolic) shapes."""

    def __init__(self, opdef, attrs, ins, outs, aligned=None):
        self.opdef, self.attrs = opdef, attrs
        self.ins, self.outs = ins, outs   # {slot: [refs]}
        # elementwise steps: operand refs in the body's argument order, and their shapes
        # aligned to the iteration shape
        self.in_refs = [r for s in opdef.inputs for r in ins.get(s.name, [])]
        self.aligned = aligned

    def concrete(self, values):
        """The ConcreteOp of this step over `values` ({ref: VarInfo})."""
        return ConcreteOp(self.opdef.type, self.attrs,
                          {s: [values[r] for r in rs] for s, rs in self.ins.items()},
                          {s: [values[r] for r in rs] for s, rs in self.outs.items()})


class Group:
    """A fused op's description walked over its inputs' VarInfos (concrete or symbolic),
    re-running each sub-op's shape inference.

    head / tail: the optional matmul before and reduction after the elementwise steps
    (`HEADS`, `TAILS`); steps: the elementwise sub-ops; full: their one iteration shape;
    values: {ref: VarInfo}. Raises ValueError when the description is not such a group.
    """

    def __init__(self, ops, x_infos):
        entries = parse_ops(ops)
        self.values = {("x", i): VarInfo(tuple(info.shape), np.dtype(info.dtype))
                       for i, info in enumerate(x_infos)}
        self.axis_of = {}               # ref -> the `axis` of the elementwise op making it
        self.full, self.steps, self.head, self.tail = None, [], None, None
        for n, (t, attrs, ins, outs) in enumerate(entries):
            where = f"fused_elementwise sub-op {n} ({t})"
            opdef = get_op_def(t)
            a = dict(opdef.attrs)
            a.update(attrs)
            for rs in ins.values():
                for r in rs:
                    if r not in self.values:
                        raise ValueError(f"{where}: reads {r} before any sub-op defines it "
                                         f"(or X has only {len(x_infos)} inputs)")
            if n == 0 and t in HEADS and len(entries) > 1:
                self.head = _Step(opdef, a, ins, outs)
            elif n == len(entries) - 1 and t in TAILS and self.steps:
                self.tail = _Step(opdef, a, ins, outs)
                for r in self.tail.in_refs:
                    if self.values[r].shape != self.full:
                        raise ValueError(f"{where}: reads {r} of shape {self.values[r].shape}, "
                                         f"not the iteration shape {self.full}")
            elif opdef.body is not None and opdef.has(ELEMENTWISE):
                self.steps.append(self._elementwise(where, opdef, a, ins, outs))
            else:
                raise ValueError(f"{where}: not an elementwise op with a scalar body (only the "
                                 f"first may be one of {HEADS}, the last one of {TAILS})")
            self._define(where, opdef, a, ins, outs)
        if not self.steps:
            raise ValueError("fused_elementwise: the group has no elementwise sub-op")
        floats = sorted({str(v.dtype) for v in self.values.values() if v.dtype.kind == "f"})
        if len(floats) > 1:
            raise ValueError(f"fused_elementwise: the group mixes float dtypes {floats}; one "
                             f"generated kernel computes in one float type")
        outs = sorted(r[1] for r in self.values if r[0] == "out")
        if outs != list(range(len(outs))):
            raise ValueError("fused_elementwise: outputs must be numbered ('out', 0..n-1)")
        self.n_out = len(outs)

    def _elementwise(self, where, opdef, a, ins, outs):
        flat = [r for s in opdef.inputs for r in ins.get(s.name, [])]
        if not flat:
            raise ValueError(f"{where}: has no inputs")
        ndim = max(len(self.values[r].shape) for r in flat)
        aligned = [align(self.values[r].shape, ndim, opdef.operand_axis(a)) for r in flat]
        op_full = broadcast_shapes(*aligned, what=f"{where} inputs")
        if self.full is None:
            self.full = op_full
        elif op_full != self.full:
            raise ValueError(f"{where}: iterates over {op_full}, but the group iterates over "
                             f"{self.full}; every sub-op must share one iteration shape")
        for r in flat:
            if r in self.axis_of and self.values[r].shape != self.full:
                raise ValueError(f"{where}: reads {r} of shape {self.values[r].shape}, smaller "
                                 f"than the iteration shape {self.full}; a summed-down value "
                                 f"may only be an output of the group")
        return _Step(opdef, a, ins, outs, aligned)

    def _define(self, where, opdef, a, ins, outs):
        inferred = opdef.infer(InferContext(opdef.type, a, {s: [self.values[r] for r in rs]
                                                           for s, rs in ins.items()}))
        for slot, rs in outs.items():
            got = inferred.get(slot)
            got = got if isinstance(got, list) else [got] * len(rs)
            if len(got) < len(rs) or any(g is None for g in got):
                raise ValueError(f"{where}: output slot {slot} is not produced for these inputs")
            for r, info in zip(rs, got):
                if r[0] == "x" or r in self.values:
                    raise ValueError(f"{where}: output {r} is already defined")
                self.values[r] = VarInfo(tuple(info.shape), np.dtype(info.dtype))
                if opdef.has(ELEMENTWISE):
                    self.axis_of[r] = opdef.operand_axis(a)

    def kernel_outputs(self):
        """Refs the generated kernel writes: the elementwise steps' exported values and
        those the tail reads."""
        tail_reads = set(self.tail.in_refs) if self.tail else set()
        return [r for st in self.steps for rs in st.outs.values() for r in rs
                if r[0] == "out" or r in tail_reads]

    def trace(self, out_refs, check=False):
        """Compose the steps' scalar bodies into one DAG computing `out_refs`.

        Returns (output Syms, [(ref, aligned shape)] of the kernel's inputs, NaN/Inf
        checks: [(Sym, message)] of every step's float result when `check`). An input is
        an X or a head output; the same one enters twice when two sub-ops align it
        differently; inputs no output depends on (add_grad's X and Y only give shapes) are
        dropped, since a broadcast one would stop the template from collapsing dimensions.
        """
        leaves, syms = {}, {}
        for st in self.steps:
            args = []
            for r, shape in zip(st.in_refs, st.aligned):
                if r in syms:
                    args.append(syms[r])
                    continue
                key = (r, tuple(shape))
                if key not in leaves:
                    leaves[key] = S.Sym("in", value=len(leaves))
                args.append(leaves[key])
            res = st.opdef.body(st.attrs, *args)
            res = res if isinstance(res, tuple) else (res,)
            for k, slot in enumerate(st.opdef.outputs):
                for r in st.outs.get(slot.name, []):
                    syms[r] = _lift(res[k])
                    if self.values[r].dtype.kind in "iu":
                        # an integer value wraps at its width here as it would when
                        # stored unfused (registers hold int64)
                        syms[r] = S.cast(syms[r], self.values[r].dtype)
        outputs = [syms[r] for r in out_refs]
        checks = self._nan_checks(syms) if check else []
        used, kept = inputs_used(outputs + [sym for sym, _ in checks]), []
        for key, leaf in leaves.items():
            if leaf.value in used:
                leaf.value = len(kept)        # the leaves are this trace's own Syms
                kept.append(key)
        return outputs, kept, checks

    def divides(self):
        """Which sub-ops divide integers (for the kernel's ZeroDivisionError), or None."""
        subs = [f"{st.opdef.type} (sub-op {n})" for n, st in enumerate(self.steps)
                if st.opdef.has(INT_DIVIDES)
                and any(self.values[r].dtype.kind in "iub" for r in st.in_refs)]
        return f"{' or '.join(subs)} of this fused_elementwise" if subs else None

    def _nan_checks(self, syms):
        """[(Sym, message)]: every float value a step computes, in program order, for
        NUMBAFLOW_CHECK_NAN_INF inside the kernel (an Inf that a later sub-op makes finite
        never reaches an output, so checking the outputs alone misses it)."""
        out = []
        for n, st in enumerate(self.steps):
            for slot, refs in st.outs.items():
                for r in refs:
                    if self.values[r].dtype.kind == "f":
                        what = f"Out[{r[1]}]" if r[0] == "out" else "an intermediate value"
                        out.append((syms[r], f"NUMBAFLOW_CHECK_NAN_INF: op {st.opdef.type} "
                                             f"(sub-op {n} of this fused_elementwise) produced "
                                             f"a NaN or Inf in {slot}, {what} of the group"))
        return out

    def out_shape(self, ref):
        """The aligned shape the kernel writes `ref` at (smaller when summed down)."""
        shape = self.values[ref].shape
        return self.full if shape == self.full else align(shape, len(self.full),
                                                          self.axis_of[ref])

    def float_dtype(self):
        dtypes = [v.dtype for v in self.values.values() if v.dtype.kind == "f"]
        return dtypes[0] if dtypes else np.dtype("float32")


def _infer(ctx):
    g = Group(ctx.attr("ops"), ctx.inputs("X"))
    return {"Out": [g.values[("out", j)] for j in range(g.n_out)]}


def _lift(v):
    return v if isinstance(v, S.Sym) else S.Sym("const", value=v)


def _bind_with(device, cop):
    """Kernel factory (OpDef.cpu / .gpu): the head's own kernel, then ONE kernel generated
    from the composed bodies (CPU or CUDA template), then the tail's own kernel. With
    NUMBAFLOW_CHECK_NAN_INF on when the op is bound, the kernel also checks every
    sub-op's float result (a second kernel, made on first use)."""
    g = Group(cop.attrs["ops"], cop.in_infos["X"])
    kouts = g.kernel_outputs()
    kernel_class = ElementwiseKernel if device == "cpu" else cuda_elementwise_kernel
    kernels = {}

    def generated(check):
        if check not in kernels:
            outputs, leaves, checks = g.trace(kouts, check)
            extra = {"checks": checks} if checks else {}
            if device == "cpu" and g.divides():
                extra["divides"] = g.divides()
            kernels[check] = leaves, kernel_class(
                outputs, [shape for _, shape in leaves], [g.out_shape(r) for r in kouts],
                g.full, g.float_dtype(), [g.values[r].dtype for r, _ in leaves], **extra)
        return kernels[check]

    subs = [st for st in (g.head, g.tail) if st is not None]
    sub_binds = [(st, getattr(st.opdef, device)(st.concrete(g.values))) for st in subs]

    def bind(ins, outs):
        leaves, kern = generated(config.check_nan_inf())
        bufs = {("x", i): a for i, a in enumerate(ins["X"])}
        bufs.update((("out", j), a) for j, a in enumerate(outs.get("Out", [])))
        for r, info in g.values.items():      # values only the head or tail touches
            if r[0] == "tmp" and (r not in g.axis_of or r in kouts):
                bufs[r] = _empty(device, info)
        # each input is passed reshaped to its aligned shape (a view), so the template's
        # own (trailing) alignment never has to know about Paddle's `axis`
        thunk = kern.bind([bufs[r].reshape(shape) for r, shape in leaves],
                          [bufs[r] for r in kouts])
        if not sub_binds:
            return thunk
        thunks = [b({s: [bufs[r] for r in rs] for s, rs in st.ins.items()},
                    {s: [bufs[r] for r in rs] for s, rs in st.outs.items()})
                  for st, b in sub_binds]
        if g.head is not None:
            thunks.insert(1, thunk)
        else:
            thunks.insert(0, thunk)
        return functools.partial(run_calls, tuple(thunks))
    return bind


def _empty(device, info):
    if device == "cpu":
        return np.empty(info.shape, info.dtype)
    from numba import cuda
    return cuda.device_array(info.shape, info.dtype)




register_op(OpDef(
    type="fused_elementwise",
    inputs=(Slot("X", duplicable=True),),
    outputs=(Slot("Out", duplicable=True),),
    infer=_infer,
    cpu=functools.partial(_bind_with, "cpu"),
    gpu=functools.partial(_bind_with, "gpu"),
    attrs={"ops": ()},
    traits=frozenset((NO_GRAD, FUSED, INT_DIVIDES)),
    doc="A group of elementwise ops (attr `ops`, see kernels/fused/fused_elementwise.py) as one "
        "generated kernel, optionally after a matmul and before a reduction; made by the "
        "auto_fusion pass after the backward is built."))
