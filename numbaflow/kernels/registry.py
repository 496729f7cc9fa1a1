"""The op registry: one `OpDef` per op type holds everything known about that op.

An OpDef declares its input/output slots, attribute defaults, shape/dtype inference,
the scalar body (elementwise ops), the CPU kernel factory, the gradient rule (which
emits registered ops) and traits. Passes and the executor ask the OpDef; nothing
about an op lives elsewhere.
"""
import functools
from dataclasses import dataclass, field
from typing import Callable, NamedTuple, Optional

import numpy as np


@dataclass(frozen=True)
class Slot:
    """An input or output slot. `duplicable` slots hold a list (concat's X, sum's X);
    `no_grad` inputs never receive a gradient (labels, indices)."""
    name: str
    optional: bool = False
    duplicable: bool = False
    no_grad: bool = False


class VarInfo(NamedTuple):
    """Static facts of one tensor: shape (tuple, -1 = unknown) and numpy dtype."""
    shape: tuple
    dtype: np.dtype


# Traits (facts that passes and the executor rely on)
ELEMENTWISE = "elementwise"      # body-defined; fusable
NO_GRAD = "no_grad"              # not differentiable: backward stops here
OPTIMIZER = "optimizer"          # updates persistables in place
RANDOM = "random"                # draws random numbers
MAY_FAIL = "may_fail"            # can raise on bad data (e.g. label out of range)
COLLECTIVE = "collective"        # talks to the other devices (its kernel gets `cop.comm`)
FUSED = "fused"                  # made by a fusion pass from several ops: never fused again
GPU_REFUSES = "gpu_refuses"      # its GPU factory refuses by name (no kernel yet): the gate skips it
GPU_ON_HOST = "gpu_on_host"      # on a GPU its CPU kernel runs on host copies: nothing to compile
FLAT_INPUTS = "flat_inputs"      # moves its X list as one flat array: lay them out back to back
ACTIVATION = "activation"        # Paddle's activation op (X -> Out): a layer's act= may name it
INT_DIVIDES = "int_divides"      # divides: given integers, a zero divisor raises ZeroDivisionError


@dataclass
class OpDef:
    type: str
    inputs: tuple
    outputs: tuple
    infer: Callable                      # infer(ctx: InferContext) -> {slot: VarInfo | [VarInfo]}
    cpu: Callable                        # cpu(cop: ConcreteOp) -> bind(ins, outs) -> thunk
    attrs: dict = field(default_factory=dict)
    body: Optional[Callable] = None      # scalar body body(attrs, *inputs) for elementwise ops
    grad: Optional[Callable] = None      # grad(g: backward.GradContext) -> None (appends ops)
    gpu: Optional[Callable] = None       # like `cpu`, binding device arrays (numba.cuda)
    inplace: dict = field(default_factory=dict)   # output slot -> input slot it may overwrite
    # input slots whose values no kernel reads, only their shapes (a gradient's X that
    # says what shape to copy into): they do not keep a buffer alive (value_inputs)
    shape_only: tuple = ()
    traits: frozenset = frozenset()
    doc: str = ""
    # elementwise: where a shorter operand's dims start, from the attrs (default: Paddle's
    # `axis` attribute, -1 = trailing); prelu's channel mode puts its [C] at dim 1
    axis: Optional[Callable] = None

    def operand_axis(self, attrs):
        """Paddle's elementwise alignment of a shorter operand for these attrs."""
        return self.axis(attrs) if self.axis else attrs.get("axis", -1)

    def input_slot(self, name):
        return next(s for s in self.inputs if s.name == name)

    def output_slot(self, name):
        return next(s for s in self.outputs if s.name == name)

    def has(self, trait):
        return trait in self.traits


_REGISTRY = {}


def register_op(opdef):
    """Add `opdef` to the registry (each op type once); returns it."""
    if opdef.type in _REGISTRY:
        raise ValueError(f"op type {opdef.type!r} is registered twice")
    _REGISTRY[opdef.type] = opdef
    return opdef


def get_op_def(op_type):
    try:
        return _REGISTRY[op_type]
    except KeyError:
        import difflib
        close = difflib.get_close_matches(op_type, list(_REGISTRY), n=3)
        raise ValueError(f"unknown op type {op_type!r}" +
                         (f"; did you mean {close}?" if close else "")) from None


def may_fail(op):
    """True when the graph op `op` can raise on bad data: a MAY_FAIL op, or an integer
    division (an INT_DIVIDES op over integer inputs: a zero divisor raises ZeroDivisionError on
    the CPU and sets the device's error record on a GPU)."""
    if get_op_def(op.type).has(MAY_FAIL):
        return True
    return get_op_def(op.type).has(INT_DIVIDES) and any(np.dtype(v.dtype).kind in "iu" for v in op.input_vars())


def value_inputs(op):
    """The input variables of graph op `op` whose values its kernels read: all but those
    of the OpDef's `shape_only` slots and, for an op with a scalar body, the inputs the
    traced body never loads (`elementwise_add_grad` reads only Out@GRAD; X and Y give
    the shapes to sum down to). The memory plan frees a buffer after its last value read,
    so a backward op that needs only a forward tensor's shape does not keep it alive.

    >>> from types import SimpleNamespace as Op
    >>> x, y, d = "x", "y", "d"
    >>> value_inputs(Op(type="elementwise_add_grad", attrs={"axis": -1},
    ...                 inputs={"X": [x], "Y": [y], "Out@GRAD": [d]},
    ...                 outputs={"X@GRAD": ["dx"], "Y@GRAD": ["dy"]}))
    ['d']
    """
    opdef = get_op_def(op.type)
    present = [(s.name, v) for s in opdef.inputs for v in op.inputs.get(s.name, [])]
    read = [k for k, (slot, _) in enumerate(present) if slot not in opdef.shape_only]
    # fused and optimizer ops wrap their body's kernel in more steps (the beta powers, an
    # intermediate output): every input counts as read
    if opdef.body is not None and ELEMENTWISE in opdef.traits and not (
            opdef.traits & {FUSED, OPTIMIZER}):
        from .codegen.render import inputs_used
        from .scalar import trace
        traced = trace(opdef.body, op.attrs, len(present))
        wanted = [traced[k] for k, s in enumerate(opdef.outputs) if op.outputs.get(s.name)]
        loaded = inputs_used(wanted)
        read = [k for k in read if k in loaded]
    return list(dict.fromkeys(present[k][1] for k in read))


def all_op_types():
    return sorted(_REGISTRY)


def op_types_with(trait):
    """The registered op types that have `trait`, sorted.

    >>> import numbaflow.kernels
    >>> "relu" in op_types_with(ACTIVATION)
    True
    """
    return sorted(t for t, d in _REGISTRY.items() if d.has(trait))


class InferContext:
    """What an op's `infer` sees: its inputs' VarInfos, its attrs, and var names for errors."""

    def __init__(self, op_type, attrs, in_infos, in_names=None):
        self.op_type, self.attrs = op_type, attrs
        self.in_infos = in_infos            # {slot: [VarInfo]}
        self.in_names = in_names or {}      # {slot: [name]}

    def input(self, slot):
        lst = self.in_infos.get(slot) or []
        return lst[0] if lst else None

    def inputs(self, slot):
        return list(self.in_infos.get(slot) or [])

    def attr(self, name):
        return self.attrs[name]

    def name(self, slot, i=0):
        names = self.in_names.get(slot) or []
        return names[i] if i < len(names) else slot

    def error(self, msg):
        return ValueError(f"{self.op_type}: {msg}")


class ConcreteOp:
    """An op with fully known shapes: what a kernel factory specialises on."""

    def __init__(self, op_type, attrs, in_infos, out_infos, comm=None):
        self.type, self.attrs = op_type, attrs
        self.in_infos, self.out_infos = in_infos, out_infos
        self.comm = comm            # COLLECTIVE ops: this device's communicator endpoint

    def input(self, slot):
        lst = self.in_infos.get(slot) or []
        return lst[0] if lst else None

    def output(self, slot):
        lst = self.out_infos.get(slot) or []
        return lst[0] if lst else None


# ---------------------------------------------------------------- shape helpers
def broadcast_shapes(*shapes, what="operands"):
    """numpy broadcasting with -1 (unknown) dims; raises ValueError on a mismatch."""
    ndim = max(len(s) for s in shapes)
    padded = [(1,) * (ndim - len(s)) + tuple(s) for s in shapes]
    out = []
    for d in range(ndim):
        dims = {p[d] for p in padded} - {1}
        known = dims - {-1}
        if len(known) > 1:
            raise ValueError(f"cannot broadcast {what} of shapes {[tuple(s) for s in shapes]}: "
                             f"dimension {d} is {sorted(known)}")
        out.append(known.pop() if known else (-1 if -1 in dims else 1))
    return tuple(out)


def numel(shape):
    return int(np.prod(shape)) if len(shape) else 1


# ---------------------------------------------------------------- kernel helpers
def simple_kernel(fn):
    """Kernel factory for ops whose kernel is `fn(cop, *inputs, *outputs)` (flattened in
    slot order): binds once, so a run calls it with no per-op allocation."""
    import functools

    def factory(cop):
        def bind(ins, outs):
            return functools.partial(fn, cop, *_flat(ins), *_flat(outs))
        return bind
    return factory


def run_calls(calls):
    """Call each of `calls` in order. A kernel made of several steps is
    `functools.partial(run_calls, (step, ...))`: the executor's segment compiler looks
    inside it, so steps that are numba kernels can join a compiled segment."""
    for c in calls:
        c()


def sequence(calls):
    """One thunk running `calls` in order (the call itself when there is one)."""
    calls = tuple(calls)
    if len(calls) == 1:
        return calls[0]
    return functools.partial(run_calls, calls)


def _flat(groups):
    return [a for group in groups.values() for a in group]


def run_op(op_type, inputs, attrs=None, device="cpu"):
    """Run one op eagerly on numpy arrays (testing and benchmarking helper).

    inputs: {slot: array or [arrays]}; returns {slot: array or [arrays]} (numpy) for
    every output slot. device="gpu" runs the op's CUDA kernel (real or simulated).

    >>> run_op('relu', {'X': np.array([-1.0, 2.0])})['Out']
    array([0., 2.])
    """
    thunk, outs = build_kernel(op_type, inputs, attrs, device)
    thunk()
    if device == "gpu":
        from .gpu.gpu_errors import raise_device_error
        raise_device_error()    # bad data a kernel met: the CPU kernel's ValueError
        outs = {k: [a.copy_to_host() for a in v] for k, v in outs.items()}
    opdef = get_op_def(op_type)
    return {s.name: (outs[s.name] if s.duplicable else outs[s.name][0])
            for s in opdef.outputs if outs.get(s.name)}


def check_declared(opdef, inputs, attrs):
    """ValueError naming any input slot or attribute `opdef` does not declare: an op never
    runs with an input or attribute it would silently ignore."""
    slots = {s.name for s in opdef.inputs}
    for k, v in inputs.items():
        if k not in slots and v is not None and not (isinstance(v, (list, tuple)) and not v):
            raise ValueError(f"{opdef.type}: input {k!r} is not implemented (the op reads "
                             f"{sorted(slots)}); it would be ignored, so it is refused")
    for k in attrs:
        if k not in opdef.attrs:
            raise ValueError(f"{opdef.type}: attribute {k!r} is not implemented (the op "
                             f"honours {sorted(opdef.attrs)}); it would be ignored, so it "
                             f"is refused")


def build_cpu_kernel(op_type, inputs, attrs=None):
    """Specialise `op_type` to `inputs`; return (thunk, {slot: [output arrays]}).

    The thunk recomputes the outputs in place each call (for benchmarks).
    """
    return build_kernel(op_type, inputs, attrs, "cpu")


def build_kernel(op_type, inputs, attrs=None, device="cpu"):
    """(thunk, {slot: [outputs]}) for `op_type` on "cpu" (numpy arrays) or "gpu"
    (inputs copied to the device; outputs are device arrays)."""
    opdef = get_op_def(op_type)
    factory = opdef.cpu if device == "cpu" else opdef.gpu
    if factory is None:
        raise NotImplementedError(f"op {op_type!r} has no {device} kernel")
    check_declared(opdef, inputs, attrs or {})
    full_attrs = dict(opdef.attrs)
    full_attrs.update(attrs or {})
    ins = {}
    for s in opdef.inputs:
        v = inputs.get(s.name)
        if v is None:
            continue
        arrs = list(v) if s.duplicable else [v]
        ins[s.name] = [np.require(a, requirements='C') for a in arrs]  # keeps 0-D
    in_infos = {k: [VarInfo(a.shape, a.dtype) for a in v] for k, v in ins.items()}
    out_infos = {k: (v if isinstance(v, list) else [v]) for k, v in
                 opdef.infer(InferContext(op_type, full_attrs, in_infos)).items()}
    if device == "cpu":
        outs = {k: [np.empty(i.shape, i.dtype) for i in v] for k, v in out_infos.items()}
    else:
        from numba import cuda
        ins = {k: [cuda.to_device(a) for a in v] for k, v in ins.items()}
        outs = {k: [cuda.device_array(i.shape, i.dtype) for i in v] for k, v in out_infos.items()}
    bind = factory(ConcreteOp(op_type, full_attrs, in_infos, out_infos))
    return bind(ins, outs), outs
