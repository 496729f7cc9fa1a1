"""The one IR: Program -> Block -> Operator / Variable, plain Python objects.

Operators hold references to their Variable objects (not names), so rewrites never do
string surgery; names are for people, feeds and fetches. Every mutation goes through a
Block method, which bumps the program's `version` (the executor's cache key).
"""
import contextlib
import copy
import itertools


from .. import dtypes
from ..kernels.registry import InferContext, get_op_def

# Op roles, as in Paddle: which part of a training program an op belongs to.
FORWARD, BACKWARD, OPTIMIZE, LOSS_GRAD = "forward", "backward", "optimize", "loss_grad"


class Variable:
    """A named tensor of a Block. `shape` is a tuple with -1 for an unknown (batch) dim."""

    def __init__(self, block, name, shape, dtype, persistable=False, stop_gradient=False,
                 is_data=False):
        self.block = block
        self.name = name
        self.shape = tuple(int(d) for d in shape)
        self.dtype = dtypes.convert_dtype(dtype)
        self.persistable = persistable
        self.stop_gradient = stop_gradient
        self.is_data = is_data

    @property
    def ndim(self):
        return len(self.shape)

    def __repr__(self):
        kind = "Parameter" if isinstance(self, Parameter) else "Variable"
        return (f"{kind}(name={self.name!r}, shape={self.shape}, dtype={self.dtype}, "
                f"persistable={self.persistable}, stop_gradient={self.stop_gradient})")

    def to_string(self):
        flags = []
        if self.persistable:
            flags.append("persist")
        if isinstance(self, Parameter):
            flags.append("trainable param" if self.trainable else "param")
        elif self.is_data:
            flags.append("data")
        prefix = (" ".join(flags) + " ") if flags else ""
        return (f"{prefix}var {self.name} : shape{self.shape} dtype({self.dtype}) "
                f"stop_gradient({self.stop_gradient})")

    # operator overloads build ops through the math functions
    def _math(self, name, *args, **kw):
        from .. import tensor_math
        return getattr(tensor_math, name)(*args, **kw)

    def __add__(self, o): return self._math("add", self, o)
    def __radd__(self, o): return self._math("add", o, self)
    def __sub__(self, o): return self._math("subtract", self, o)
    def __rsub__(self, o): return self._math("subtract", o, self)
    def __mul__(self, o): return self._math("multiply", self, o)
    def __rmul__(self, o): return self._math("multiply", o, self)
    def __truediv__(self, o): return self._math("divide", self, o)
    def __rtruediv__(self, o): return self._math("divide", o, self)
    def __pow__(self, o): return self._math("pow", self, o)
    def __rpow__(self, o): return self._math("pow", o, self)
    def __matmul__(self, o): return self._math("matmul", self, o)
    def __neg__(self): return self._math("scale", self, scale=-1.0)
    __hash__ = object.__hash__

    def __getitem__(self, item):
        """Basic indexing as a `slice` op (`strided_slice` when a step is not 1), both
        differentiable: ints, slices, `...`; an int drops its dim, as in numpy.

        >>> first = out[0]; cols = x[:, 1:3]; rev = x[::-1]
        """
        return _getitem(self, item)


def _getitem(var, item):
    items = list(item) if isinstance(item, tuple) else [item]
    if sum(it is Ellipsis for it in items) > 1:
        raise IndexError(f"{var.name}[...]: an index can hold at most one '...'")
    if Ellipsis in items:
        k = items.index(Ellipsis)
        items[k:k + 1] = [slice(None)] * (var.ndim - len(items) + 1)
    if len(items) > var.ndim:
        raise IndexError(f"{var.name}: too many indices ({len(items)}) for a Variable of "
                         f"shape {var.shape}")
    big = 2 ** 62       # an end beyond any dim (Python slicing clamps it)
    axes, starts, ends, steps, decrease = [], [], [], [], []
    for ax, it in enumerate(items):
        if isinstance(it, bool) or not isinstance(it, (int, slice)) and \
                not hasattr(it, "__index__"):
            raise TypeError(f"{var.name}[...]: only ints, slices and '...' index a Variable "
                            f"(got {type(it).__name__}); index lists, masks and None "
                            f"(gather-style indexing) are not supported")
        if isinstance(it, slice):
            step = 1 if it.step is None else int(it.step)
            if step == 0:
                raise ValueError(f"{var.name}[...]: slice step cannot be zero")
            if it.start is None and it.stop is None and step == 1:
                continue
            start = (0 if step > 0 else big) if it.start is None else int(it.start)
            end = (big if step > 0 else -big) if it.stop is None else int(it.stop)
            axes.append(ax), starts.append(start), ends.append(end), steps.append(step)
        else:
            i = int(it)
            dim = var.shape[ax]
            if dim != -1 and not -dim <= i < dim:
                raise IndexError(f"{var.name}: index {i} is out of range for axis {ax} of "
                                 f"size {dim}")
            axes.append(ax), starts.append(i), ends.append(i + 1 if i != -1 else big)
            steps.append(1), decrease.append(ax)
    from ..layer_helper import LayerHelper
    attrs = {"axes": axes, "starts": starts, "ends": ends, "decrease_axis": decrease,
             "infer_flags": [1] * len(axes)}
    if any(st != 1 for st in steps):
        return LayerHelper("strided_slice").simple("strided_slice", {"Input": var},
                                                   dict(attrs, strides=steps))
    return LayerHelper("slice").simple("slice", {"Input": var}, attrs)


class Parameter(Variable):
    """A persistable, trainable Variable initialised by an op in the startup program."""

    def __init__(self, block, name, shape, dtype, trainable=True, learning_rate=1.0,
                 regularizer=None, initializer=None):
        super().__init__(block, name, shape, dtype, persistable=True,
                         stop_gradient=not trainable)
        self.trainable = trainable
        self.optimize_attr = {"learning_rate": learning_rate}
        self.regularizer = regularizer
        self.initializer = initializer


class Operator:
    """One op: `type`, {slot: [Variable]} inputs/outputs, attrs (defaults filled in), role."""

    def __init__(self, block, type, inputs, outputs, attrs, role):
        self.block, self.type, self.role = block, type, role
        self.inputs, self.outputs, self.attrs = inputs, outputs, attrs

    # Paddle-style accessors (names)
    def input(self, slot):
        return [v.name for v in self.inputs.get(slot, [])]

    def output(self, slot):
        return [v.name for v in self.outputs.get(slot, [])]

    @property
    def input_names(self):
        return list(self.inputs)

    @property
    def output_names(self):
        return list(self.outputs)

    @property
    def input_arg_names(self):
        return [v.name for vs in self.inputs.values() for v in vs]

    @property
    def output_arg_names(self):
        return [v.name for vs in self.outputs.values() for v in vs]

    def attr(self, name):
        try:
            return self.attrs[name]
        except KeyError:
            raise ValueError(f"op {self.type!r} has no attribute {name!r}; it has "
                             f"{sorted(self.attrs)}") from None

    def all_attrs(self):
        """{name: value} of every attribute (defaults included), as in Paddle."""
        return dict(self.attrs)

    @property
    def attr_names(self):
        return sorted(self.attrs)

    def has_attr(self, name):
        return name in self.attrs

    def _set_attr(self, name, value):
        self.attrs[name] = value
        self.block.program._bump()

    def input_vars(self):
        return [v for vs in self.inputs.values() for v in vs]

    def output_vars(self):
        return [v for vs in self.outputs.values() for v in vs]

    def __repr__(self):
        from .printer import op_to_string
        return op_to_string(self)


def _as_var_list(v):
    if v is None:
        return []
    if isinstance(v, (list, tuple)):
        return [x for x in v if x is not None]
    return [v]


class Block:
    def __init__(self, program, idx):
        self.program, self.idx = program, idx
        self.vars = {}
        self.ops = []

    def var(self, name):
        try:
            return self.vars[name]
        except KeyError:
            raise ValueError(f"variable {name!r} is not in block {self.idx}") from None

    def has_var(self, name):
        return name in self.vars

    def all_parameters(self):
        return [v for v in self.vars.values() if isinstance(v, Parameter)]

    def create_var(self, name, shape=(), dtype="float32", persistable=False,
                   stop_gradient=False, is_data=False):
        if name in self.vars:
            raise ValueError(f"variable {name!r} already exists in block {self.idx}")
        v = Variable(self, name, shape, dtype, persistable, stop_gradient, is_data)
        self.vars[name] = v
        self.program._bump()
        return v

    def create_parameter(self, name, shape, dtype, **kw):
        if name in self.vars:
            raise ValueError(f"parameter {name!r} already exists; give the layer another "
                             f"name or ParamAttr(name=...)")
        p = Parameter(self, name, shape, dtype, **kw)
        self.vars[name] = p
        self.program._bump()
        return p

    def _adopt(self, var):
        """Add a Variable object made for this block (e.g. a startup-program mirror)."""
        self.vars[var.name] = var
        self.program._bump()
        return var

    def _rename_var(self, var, new_name):
        if new_name in self.vars:
            raise ValueError(f"variable {new_name!r} already exists")
        del self.vars[var.name]
        var.name = new_name
        self.vars[new_name] = var
        self.program._bump()

    def _remove_var(self, name):
        del self.vars[name]
        self.program._bump()

    def append_op(self, type, inputs=None, outputs=None, attrs=None, infer=True):
        """Append an op; infer and set its outputs' shapes and dtypes.

        inputs/outputs: {slot: Variable | [Variable]}; attrs are checked against the
        OpDef and completed with its defaults.
        """
        op = self._make_op(type, inputs, outputs, attrs)
        if infer:
            _apply_inference(op)
        self.ops.append(op)
        self.program._bump()
        return op

    def _insert_op(self, index, type, inputs=None, outputs=None, attrs=None):
        op = self._make_op(type, inputs, outputs, attrs)
        _apply_inference(op)
        self.ops.insert(index, op)
        self.program._bump()
        return op

    def _remove_op(self, index):
        del self.ops[index]
        self.program._bump()

    def _make_op(self, type, inputs, outputs, attrs):
        opdef = get_op_def(type)
        inputs = {k: _as_var_list(v) for k, v in (inputs or {}).items()}
        outputs = {k: _as_var_list(v) for k, v in (outputs or {}).items()}
        for kind, given, slots in (("input", inputs, opdef.inputs),
                                   ("output", outputs, opdef.outputs)):
            names = {s.name for s in slots}
            for k in given:
                if k not in names:
                    raise ValueError(f"{type}: unknown {kind} slot {k!r}; slots are "
                                     f"{sorted(names)}")
            for v in (x for vs in given.values() for x in vs):
                if not isinstance(v, Variable):
                    raise TypeError(f"{opdef.type}: {kind}s must be Variables, got "
                                    f"{v.__class__.__name__}")
        full = dict(opdef.attrs)
        for k, v in (attrs or {}).items():
            if k not in full:
                raise ValueError(f"{type}: unknown attribute {k!r}; attributes are "
                                 f"{sorted(full)}")
            full[k] = v
        inputs = {s.name: inputs[s.name] for s in opdef.inputs if inputs.get(s.name)}
        outputs = {s.name: outputs[s.name] for s in opdef.outputs if outputs.get(s.name)}
        return Operator(self, type, inputs, outputs, full, self.program._current_role)


def infer_op(op, shapes=None):
    """Run the op's shape inference; `shapes` maps Variable -> concrete VarInfo."""
    from ..kernels.registry import VarInfo
    opdef = get_op_def(op.type)

    def info(v):
        if shapes is not None and v in shapes:
            return shapes[v]
        return VarInfo(v.shape, v.dtype)
    in_infos = {k: [info(v) for v in vs] for k, vs in op.inputs.items()}
    in_names = {k: [v.name for v in vs] for k, vs in op.inputs.items()}
    result = opdef.infer(InferContext(op.type, op.attrs, in_infos, in_names))
    return {k: (v if isinstance(v, list) else [v]) for k, v in result.items()}


def _apply_inference(op):
    inferred = infer_op(op)
    ins = set(op.input_vars())
    for slot, vs in op.outputs.items():
        for v, info in zip(vs, inferred.get(slot, [])):
            if v not in ins:              # an in-place output keeps its declared shape
                v.shape, v.dtype = tuple(info.shape), info.dtype


class Program:
    """A static graph: a list of Blocks (only block 0 is used for now)."""

    _ids = itertools.count()

    def __init__(self):
        self.blocks = [Block(self, 0)]
        self.version = 0
        self.random_seed = 0
        self._current_role = FORWARD
        self._uid = next(Program._ids)

    def _bump(self):
        self.version += 1

    def global_block(self):
        return self.blocks[0]

    def current_block(self):
        return self.blocks[0]

    def block(self, idx):
        return self.blocks[idx]

    @property
    def num_blocks(self):
        return len(self.blocks)

    def list_vars(self):
        return iter(list(self.global_block().vars.values()))

    def all_parameters(self):
        return self.global_block().all_parameters()

    @contextlib.contextmanager
    def _role_guard(self, role):
        old, self._current_role = self._current_role, role
        try:
            yield
        finally:
            self._current_role = old

    def __str__(self):
        from .printer import program_to_string
        return program_to_string(self)

    def to_string(self, throw_on_error=False, with_details=False):
        return str(self)

    def clone(self, for_test=False):
        """Copy the program. for_test=True keeps only forward ops, sets `is_test=True`
        on ops that have it (dropout, batch_norm) and drops variables only the removed
        ops used (gradients, optimizer state)."""
        new = Program()
        new.random_seed = self.random_seed
        src, dst = self.global_block(), new.global_block()
        ops = [op for op in src.ops if not for_test or op.role == FORWARD]
        keep = set()
        for op in ops:
            keep.update(op.input_vars())
            keep.update(op.output_vars())
        mapping = {}
        for name, v in src.vars.items():
            if for_test and v not in keep and not v.is_data and not isinstance(v, Parameter):
                continue
            nv = copy.copy(v)
            nv.block = dst
            if isinstance(v, Parameter):
                nv.optimize_attr = dict(v.optimize_attr)
            mapping[v] = nv
            dst.vars[name] = nv
        for op in ops:
            attrs = dict(op.attrs)
            if for_test and "is_test" in attrs:
                attrs["is_test"] = True
            nop = Operator(dst, op.type, {k: [mapping[v] for v in vs] for k, vs in op.inputs.items()},
                           {k: [mapping[v] for v in vs] for k, vs in op.outputs.items()},
                           attrs, op.role)
            dst.ops.append(nop)
        new._bump()
        return new


# ---------------------------------------------------------------- default programs
_main_program = Program()
_startup_program = Program()


def default_main_program():
    return _main_program


def default_startup_program():
    return _startup_program


def switch_main_program(program):
    global _main_program
    old, _main_program = _main_program, program
    return old


def switch_startup_program(program):
    global _startup_program
    old, _startup_program = _startup_program, program
    return old


@contextlib.contextmanager
def program_guard(main_program, startup_program=None):
    """Make `main_program` (and `startup_program`) the defaults inside the block.

    >>> main, startup = Program(), Program()
    >>> with program_guard(main, startup):
    ...     x = static.data('x', [None, 1])
    """
    if not isinstance(main_program, Program):
        raise TypeError(f"program_guard: main_program must be a Program, got "
                        f"{type(main_program).__name__}")
    if startup_program is not None and not isinstance(startup_program, Program):
        raise TypeError(f"program_guard: startup_program must be a Program, got "
                        f"{type(startup_program).__name__}")
    old_main = switch_main_program(main_program)
    old_startup = switch_startup_program(startup_program) if startup_program is not None else None
    try:
        yield
    finally:
        switch_main_program(old_main)
        if startup_program is not None:
            switch_startup_program(old_startup)

