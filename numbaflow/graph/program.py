"""The one IR: Program -> Block -> Operator / Variable, plain Python objects.

Operators hold references to their Variable objects (not names), so rewrites never do
string surgery; names are for people, feeds and fetches. Every mutation goes through a
Block method, which keeps the block's producer/consumer maps (op_list.py) and bumps the
program's `version` (the executor's cache key).
"""
from __future__ import annotations

import contextlib
import copy
import itertools
from typing import TYPE_CHECKING, Any

from .. import dtypes
from ..kernels.registry import InferContext, get_op_def
from .op_list import UseMaps

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

    from numpy.typing import DTypeLike

# Op roles, as in Paddle: which part of a training program an op belongs to.
FORWARD, BACKWARD, OPTIMIZE, LOSS_GRAD = "forward", "backward", "optimize", "loss_grad"


class Variable:
    """A named tensor of a Block: made by `static.data` and the layer functions, fed and
    fetched by name. Arithmetic operators (+ - * / ** @, unary -) append ops.

    Args:
        block (Block): the block it belongs to.
        name (str): the unique name (the key in feeds, fetches and the Scope).
        shape (sequence of int): -1 for an unknown (batch) dim; stored as a tuple.
        dtype (str or numpy dtype): the element type.
        persistable (bool): kept in the Scope between runs (parameters, optimizer state).
        stop_gradient (bool): no gradient flows through it.
        is_data (bool): fed by the user (made by `static.data`).

    Create Variables with `static.data`, the layer functions or `Block.create_var`, not
    directly.

    Example:
        >>> x = static.data('x', [None, 3])
        >>> y = x * 2.0 + 1.0
        >>> y.shape, y.dtype, y.ndim
        ((-1, 3), dtype('float32'), 2)
    """

    def __init__(self, block: Block, name: str, shape: Sequence[int], dtype: DTypeLike,
                 persistable: bool = False, stop_gradient: bool = False,
                 is_data: bool = False) -> None:
        self.block = block
        self.name = name
        self.shape = tuple(int(d) for d in shape)
        self.dtype = dtypes.convert_dtype(dtype)
        self.persistable = persistable
        self.stop_gradient = stop_gradient
        self.is_data = is_data

    @property
    def ndim(self) -> int:
        """The number of dims."""
        return len(self.shape)

    def __repr__(self):
        kind = "Parameter" if isinstance(self, Parameter) else "Variable"
        return (f"{kind}(name={self.name!r}, shape={self.shape}, dtype={self.dtype}, "
                f"persistable={self.persistable}, stop_gradient={self.stop_gradient})")

    def to_string(self) -> str:
        """A one-line description: flags, name, shape, dtype, stop_gradient.

        Returns:
            str: e.g. `data var x : shape(-1, 3) dtype(float32) stop_gradient(True)`.
        """
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

    # operator overloads build ops through the public math functions (add, matmul, ...),
    # which live above the graph layer: numbaflow.tensor_math hands them in when it is
    # imported (`use_math_functions`), so this layer never imports upward
    _math_functions = None

    def _math(self, name, *args, **kw):
        return getattr(Variable._math_functions, name)(*args, **kw)

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

    def __getitem__(self, item: Any) -> Variable:
        """Basic indexing as a `slice` op (`strided_slice` when a step is not 1), both
        differentiable: ints, slices, `...`; an int drops its dim, as in numpy.

        Args:
            item (int, slice, Ellipsis or a tuple of them): the index.

        Returns:
            Variable: the selected part.

        Example:
            >>> x = static.data('x', [None, 4, 3])
            >>> x[0].shape, x[:, 1:3].shape, x[..., ::-1].shape
            ((4, 3), (-1, 2, 3), (-1, 4, 3))
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
    attrs = {"axes": axes, "starts": starts, "ends": ends, "decrease_axis": decrease,
             "infer_flags": [1] * len(axes)}
    if any(st != 1 for st in steps):
        return var._math("_slice_op", "strided_slice", var, dict(attrs, strides=steps))
    return var._math("_slice_op", "slice", var, attrs)


class Parameter(Variable):
    """A persistable, trainable Variable initialised by an op in the startup program.
    Made by layers (`static.nn.fc`, ...) through `ParamAttr`, not directly.

    Args:
        block (Block): the block it belongs to.
        name (str): the unique name.
        shape (sequence of int): fully known.
        dtype (str or numpy dtype): the element type.
        trainable (bool): optimizers update it (stop_gradient is `not trainable`).
        learning_rate (float): a factor on the optimizer's learning rate.
        regularizer (L2Decay, optional): its own weight decay.
        initializer (Initializer, optional): how the startup program fills it.

    Example:
        >>> x = static.data('x', [None, 3])
        >>> _ = static.nn.fc(x, size=2)
        >>> [(p.name, p.shape, p.trainable) for p in static.default_main_program().all_parameters()]
        [('fc_0.w_0', (3, 2), True), ('fc_0.b_0', (2,), True)]
    """

    def __init__(self, block: Block, name: str, shape: Sequence[int], dtype: DTypeLike,
                 trainable: bool = True, learning_rate: float = 1.0,
                 regularizer: object = None, initializer: object = None) -> None:
        super().__init__(block, name, shape, dtype, persistable=True,
                         stop_gradient=not trainable)
        self.trainable = trainable
        self.optimize_attr = {"learning_rate": learning_rate}
        self.regularizer = regularizer
        self.initializer = initializer


class Operator:
    """One op of a Block: `type`, {slot: [Variable]} `inputs` / `outputs`, `attrs` (with the
    OpDef's defaults filled in) and `role` (forward, backward, optimize, loss_grad).
    Made by `Block.append_op` (which the layer functions call), not directly.

    Args:
        block (Block): the block it belongs to.
        type (str): the registered op type.
        inputs (dict): {slot: [Variable]}.
        outputs (dict): {slot: [Variable]}.
        attrs (dict): every attribute of the op type.
        role (str): 'forward', 'backward', 'optimize' or 'loss_grad'.

    Example:
        >>> x = static.data('x', [None, 3])
        >>> y = paddle.scale(x, scale=2.0)
        >>> op = static.default_main_program().global_block().ops[-1]
        >>> op.type, op.input('X'), op.output('Out'), op.attr('scale')
        ('scale', ['x'], ['scale_0.tmp_0'], 2.0)
    """

    def __init__(self, block: Block, type: str, inputs: dict[str, list[Variable]],
                 outputs: dict[str, list[Variable]], attrs: dict[str, Any], role: str) -> None:
        self.block, self.type, self.role = block, type, role
        self.inputs, self.outputs, self.attrs = inputs, outputs, attrs

    # Paddle-style accessors (names)
    def input(self, slot: str) -> list[str]:
        """The names of the Variables in input slot `slot` (empty if unused).

        Args:
            slot (str): e.g. 'X'.

        Returns:
            list of str: the names.
        """
        return [v.name for v in self.inputs.get(slot, [])]

    def output(self, slot: str) -> list[str]:
        """The names of the Variables in output slot `slot` (empty if unused).

        Args:
            slot (str): e.g. 'Out'.

        Returns:
            list of str: the names.
        """
        return [v.name for v in self.outputs.get(slot, [])]

    @property
    def input_names(self) -> list[str]:
        """The input slots in use."""
        return list(self.inputs)

    @property
    def output_names(self) -> list[str]:
        """The output slots in use."""
        return list(self.outputs)

    @property
    def input_arg_names(self) -> list[str]:
        """The names of every input Variable."""
        return [v.name for vs in self.inputs.values() for v in vs]

    @property
    def output_arg_names(self) -> list[str]:
        """The names of every output Variable."""
        return [v.name for vs in self.outputs.values() for v in vs]

    def attr(self, name: str) -> Any:
        """The value of attribute `name`.

        Args:
            name (str): the attribute.

        Returns:
            its value.

        Raises:
            ValueError: the op has no such attribute (the message lists those it has).
        """
        try:
            return self.attrs[name]
        except KeyError:
            raise ValueError(f"op {self.type!r} has no attribute {name!r}; it has "
                             f"{sorted(self.attrs)}") from None

    def all_attrs(self) -> dict:
        """Every attribute (defaults included), as in Paddle's program introspection.

        Returns:
            dict: {name: value}, a copy.

        Example:
            >>> x = static.data('x', [None, 3])
            >>> _ = paddle.scale(x, 2.0)
            >>> sorted(static.default_main_program().global_block().ops[-1].all_attrs())
            ['bias', 'bias_after_scale', 'scale']
        """
        return dict(self.attrs)

    @property
    def attr_names(self) -> list[str]:
        """The attribute names, sorted."""
        return sorted(self.attrs)

    def has_attr(self, name: str) -> bool:
        """Whether the op has attribute `name`.

        Args:
            name (str): the attribute.

        Returns:
            bool: True if it has one.
        """
        return name in self.attrs

    def _set_attr(self, name, value):
        self.attrs[name] = value
        self.block.program._bump()

    def input_vars(self) -> list[Variable]:
        """Every input Variable, slot by slot.

        Returns:
            list of Variable: the inputs.
        """
        return [v for vs in self.inputs.values() for v in vs]

    def output_vars(self) -> list[Variable]:
        """Every output Variable, slot by slot.

        Returns:
            list of Variable: the outputs.
        """
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
    """The variables and ops of one block. `ops` is read-only: every edit goes through a
    method here, which keeps the producer/consumer maps (`producers`, `consumers`) and
    the program `version` (the executor's cache key) up to date.

    >>> block.replace_uses(old_var, new_var)            # every reader of old_var
    >>> block.replace_ops([add, relu], fused_op)         # fused_op from block._make_op
    """

    def __init__(self, program, idx):
        self.program, self.idx = program, idx
        self.vars = {}
        self._uses = UseMaps()

    @property
    def ops(self):
        return self._uses.ops

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

    # ------------------------------------------------------------ uses (O(uses) lookups)
    def index(self, op):
        """The position of `op` in `ops` (ValueError if it is not in this block)."""
        return self._uses.index(op)

    def consumers(self, var):
        """The ops reading `var`, in program order."""
        return self._uses.in_order(self._uses.readers.get(var, {}).values())

    def producers(self, var):
        """The ops writing `var`, in program order (one, except for persistables
        updated in place)."""
        return self._uses.in_order(self._uses.writers.get(var, {}).values())

    def producer(self, var):
        """The last op writing `var`, or None."""
        writers = self._uses.writers.get(var)
        return self._uses.in_order(writers.values())[-1] if writers else None

    def is_used(self, var):
        """Whether any op reads or writes `var`."""
        return var in self._uses.readers or var in self._uses.writers

    # ------------------------------------------------------------ adding ops
    def append_op(self, type, inputs=None, outputs=None, attrs=None, infer=True):
        """Append an op; infer and set its outputs' shapes and dtypes.

        inputs/outputs: {slot: Variable | [Variable]}; attrs are checked against the
        OpDef and completed with its defaults.
        """
        op = self._make_op(type, inputs, outputs, attrs)
        if infer:
            _apply_inference(op)
        self._put(len(self.ops), [op])
        return op

    def _insert_op(self, index, type, inputs=None, outputs=None, attrs=None):
        op = self._make_op(type, inputs, outputs, attrs)
        _apply_inference(op)
        self._put(index, [op])
        return op

    def insert_before(self, anchor, ops):
        """Put `ops` (an op or a list, made with `_make_op`) right before `anchor`, an op
        of this block, in the order given; `anchor=None` appends them. Returns `ops`."""
        self._put(len(self.ops) if anchor is None else self.index(anchor), _op_list(ops))
        return ops

    def insert_after(self, anchor, ops):
        """Put `ops` right after `anchor` (an op of this block), in the order given."""
        self._put(self.index(anchor) + 1, _op_list(ops))
        return ops

    def _put(self, index, ops):
        if not 0 <= index <= len(self.ops):
            raise IndexError(f"op index {index} is outside block {self.idx} "
                             f"(0..{len(self.ops)})")
        for op in ops:
            if not isinstance(op, Operator):
                raise TypeError(f"expected an Operator, got {type(op).__name__}")
            if op.block is not self:
                raise ValueError(f"op {op.type} was made for another block; make it with "
                                 f"this block's _make_op")
            if self._uses.contains(op):
                raise ValueError(f"op {op.type} is already in block {self.idx}; move it "
                                 f"with move_before / move_after")
        if len({id(op) for op in ops}) != len(ops):
            raise ValueError("the same op is given twice")
        self._uses.insert(index, ops)
        for op in ops:
            self._uses.link(op)
        self.program._bump()

    # ------------------------------------------------------------ removing, replacing, moving
    def _remove_op(self, index):
        self.remove_ops([self.ops[index]])

    def remove_ops(self, ops):
        """Take `ops` (ops of this block) out of it; their variables stay."""
        ops = self._own(ops)
        self._uses.delete(ops)
        for op in ops:
            self._uses.unlink(op)
        self.program._bump()

    def replace_ops(self, old, new, where=None):
        """Replace the ops `old` by `new` (an op or a list, made with `_make_op`), put where
        `where` (one of `old`; default: the first of them in program order) was."""
        old = self._own(old)
        if where is None:
            where = min(old, key=self.index)
        elif not any(o is where for o in old):
            raise ValueError(f"replace_ops: `where` ({where.type}) must be one of the "
                             f"replaced ops")
        self.insert_before(where, new)
        self.remove_ops(old)
        return new

    def move_before(self, anchor, ops):
        """Move `ops` (ops of this block, none of them `anchor`) right before `anchor`,
        in the order given; their inputs and outputs are unchanged."""
        self._move(anchor, ops, 0)

    def move_after(self, anchor, ops):
        """Move `ops` right after `anchor`, in the order given."""
        self._move(anchor, ops, 1)

    def _move(self, anchor, ops, after):
        ops = self._own(ops)
        if any(o is anchor for o in ops):
            raise ValueError(f"cannot move op {anchor.type} next to itself")
        self.index(anchor)
        self._uses.delete(ops)
        self._uses.insert(self.index(anchor) + after, ops)
        self.program._bump()

    def _own(self, ops):
        ops = list({id(op): op for op in _op_list(ops)}.values())
        for op in ops:
            self.index(op)          # raises for an op not in this block
        return ops

    # ------------------------------------------------------------ rewiring one op
    def replace_uses(self, old, new, ops=None):
        """Make `ops` (default: every reader of `old`) read the variable `new` where they
        read `old`. O(uses of old)."""
        self._replace_var(old, new, ops, self._uses.readers, "inputs")

    def replace_writes(self, old, new, ops=None):
        """Make `ops` (default: every writer of `old`) write `new` where they wrote `old`."""
        self._replace_var(old, new, ops, self._uses.writers, "outputs")

    def _replace_var(self, old, new, ops, table, side):
        if not isinstance(new, Variable) or self.vars.get(new.name) is not new:
            raise ValueError(f"replace {old.name}: the new variable must be a Variable of "
                             f"block {self.idx}, got {new!r}")
        users = table.get(old, {})
        ops = list(users.values()) if ops is None else \
            [op for op in _op_list(ops) if id(op) in users]
        for op in ops:
            self._uses.unlink(op)
            slots = getattr(op, side)
            for slot, vs in slots.items():
                if any(v is old for v in vs):
                    slots[slot] = [new if v is old else v for v in vs]
            self._uses.link(op)
        self.program._bump()

    def set_input(self, op, slot, vars):
        """Set input slot `slot` of `op` to `vars` (a Variable or a list; empty or None
        removes the slot)."""
        self._set_slot(op, slot, vars, "inputs")

    def set_output(self, op, slot, vars):
        """Set output slot `slot` of `op` to `vars` (empty or None removes the slot)."""
        self._set_slot(op, slot, vars, "outputs")

    def _set_slot(self, op, slot, vars, side):
        self.index(op)
        opdef = get_op_def(op.type)
        names = {s.name for s in (opdef.inputs if side == "inputs" else opdef.outputs)}
        if slot not in names:
            raise ValueError(f"{op.type}: unknown {side[:-1]} slot {slot!r}; slots are "
                             f"{sorted(names)}")
        vars = _as_var_list(vars)
        for v in vars:
            if not isinstance(v, Variable) or self.vars.get(v.name) is not v:
                raise ValueError(f"{op.type}.{slot}: {v!r} is not a Variable of block "
                                 f"{self.idx}")
        self._uses.unlink(op)
        slots = getattr(op, side)
        if vars:
            slots[slot] = vars
        else:
            slots.pop(slot, None)
        self._uses.link(op)
        self.program._bump()

    def set_op_type(self, op, type):
        """Turn `op` into a `type` op with the same slots and attributes (a rename such
        as batch_norm -> sync_batch_norm)."""
        self.index(op)
        get_op_def(type)            # raises for an unregistered type
        op.type = type
        self.program._bump()

    def set_attr(self, op, name, value):
        """Set attribute `name` of `op` (an attribute its OpDef declares)."""
        self.index(op)
        if name not in op.attrs:
            raise ValueError(f"{op.type}: unknown attribute {name!r}; attributes are "
                             f"{sorted(op.attrs)}")
        op.attrs[name] = value
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


def _op_list(ops):
    return [ops] if isinstance(ops, Operator) else list(ops)


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
    """A static graph: a list of Blocks (only block 0 is used) of Operators and Variables.
    Layer functions append to the default main program; `program_guard` switches it.
    `str(program)` prints the op list.

    Example:
        >>> main, startup = static.Program(), static.Program()
        >>> with static.program_guard(main, startup):
        ...     x = static.data('x', [None, 3])
        ...     y = paddle.mean(x)
        >>> [op.type for op in main.global_block().ops]
        ['reduce_mean']
    """
    # callables run with the scope before each run (learning-rate schedules set their
    # rate: optimizer/lr.py); a program that has some gets its own list
    _lr_hooks = ()


    _ids = itertools.count()

    def __init__(self) -> None:
        self.blocks = [Block(self, 0)]
        self.version = 0
        self.random_seed = 0
        self._current_role = FORWARD
        self._uid = next(Program._ids)

    def _bump(self):
        self.version += 1

    def global_block(self) -> Block:
        """Block 0, which holds every op and variable.

        Returns:
            Block: with `.ops` (list of Operator), `.vars` ({name: Variable}) and `.var(name)`.
        """
        return self.blocks[0]

    def current_block(self) -> Block:
        """The block layers append to: block 0.

        Returns:
            Block: the global block.
        """
        return self.blocks[0]

    def block(self, idx: int) -> Block:
        """Block number `idx`.

        Args:
            idx (int): the index (only 0 exists).

        Returns:
            Block: the block.
        """
        return self.blocks[idx]

    @property
    def num_blocks(self) -> int:
        """The number of blocks (1)."""
        return len(self.blocks)

    def list_vars(self) -> Iterator[Variable]:
        """Every Variable of the program.

        Returns:
            iterator of Variable: data, parameters and temporaries.
        """
        return iter(list(self.global_block().vars.values()))

    def all_parameters(self) -> list[Parameter]:
        """Every Parameter of the program.

        Returns:
            list of Parameter: in creation order.
        """
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

    def to_string(self, throw_on_error: bool = False, with_details: bool = False) -> str:
        """The op list as text (`str(program)`).

        Args:
            throw_on_error (bool): accepted for Paddle compatibility.
            with_details (bool): accepted for Paddle compatibility.

        Returns:
            str: the program, one op per line.
        """
        return str(self)

    def clone(self, for_test: bool = False) -> Program:
        """Copy the program. for_test=True keeps only forward ops, sets `is_test=True`
        on ops that have it (dropout, batch_norm) and drops variables only the removed
        ops used (gradients, optimizer state).

        Args:
            for_test (bool): make an evaluation copy.

        Returns:
            Program: the copy (Variables are new objects with the same names).

        Example:
            >>> x = static.data('x', [None, 3])
            >>> loss = paddle.mean(static.nn.fc(x, size=1))
            >>> test_program = static.default_main_program().clone(for_test=True)
            >>> _ = paddle.optimizer.SGD(0.1).minimize(loss)
            >>> [op.type for op in test_program.global_block().ops]
            ['mul', 'elementwise_add', 'reduce_mean']
        """
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
        nops = []
        for op in ops:
            attrs = dict(op.attrs)
            if for_test and "is_test" in attrs:
                attrs["is_test"] = True
            nops.append(Operator(dst, op.type,
                                 {k: [mapping[v] for v in vs] for k, vs in op.inputs.items()},
                                 {k: [mapping[v] for v in vs] for k, vs in op.outputs.items()},
                                 attrs, op.role))
        dst.insert_before(None, nops)
        new._bump()
        return new


# ---------------------------------------------------------------- default programs
_main_program = Program()
_startup_program = Program()


def default_main_program() -> Program:
    """The program layer functions append to (changed by `program_guard`).

    Returns:
        Program: the current main program.

    Example:
        >>> x = static.data('x', [None, 3])
        >>> static.default_main_program().global_block().var('x') is x
        True
    """
    return _main_program


def default_startup_program() -> Program:
    """The program parameter initialisers are appended to (changed by `program_guard`).
    Run it once before the main program.

    Returns:
        Program: the current startup program.

    Example:
        >>> x = static.data('x', [None, 3])
        >>> _ = static.nn.fc(x, size=2)
        >>> [op.type for op in static.default_startup_program().global_block().ops]
        ['uniform_random', 'fill_constant']
    """
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
def program_guard(main_program: Program,
                  startup_program: Program | None = None) -> Iterator[None]:
    """Make `main_program` (and `startup_program`) the defaults inside the `with` block.

    Args:
        main_program (Program): where layers append their ops.
        startup_program (Program, optional): where parameter initialisers go; unchanged
            if None.

    Returns:
        a context manager.

    Raises:
        TypeError: an argument is not a Program.

    Example:
        >>> main, startup = static.Program(), static.Program()
        >>> with static.program_guard(main, startup):
        ...     x = static.data('x', [None, 1])
        >>> main.global_block().has_var('x')
        True
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

