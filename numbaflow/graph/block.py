"""Block: the variables and ops of one block of a Program, and every mutation of them.

Each mutator keeps the block's producer/consumer maps (op_list.py) and bumps the
program's `version` (the executor's cache key); passes rewrite programs only through
these verbs. Program (program.py) holds the blocks.
"""
from __future__ import annotations

from ..kernels.registry import InferContext, get_op_def
from .nodes import Operator, Parameter, Variable, as_var_list
from .op_list import UseMaps


class Block:
    """The variables and ops of one block. `ops` is read-only: every edit goes through a
    method here, which keeps the producer/consumer maps (`producers`, `consumers`) and
    the program `version` (the executor's cache key) up to date.

    >>> block.replace_uses(old_var, new_var)            # every reader of old_var
    >>> block.replace_ops([add, relu], fused_op)         # fused_op from block.make_op
    """

    def __init__(self, program, idx, parent_idx=-1):
        self.program, self.idx = program, idx
        # the enclosing block (-1 for the global block): names not found here are looked
        # up there, as in Paddle; a gradient sub-block also sees its forward block's
        self.parent_idx = parent_idx
        self.forward_block_idx = -1
        self.vars = {}
        self.uses = UseMaps()

    @property
    def ops(self):
        return self.uses.ops

    @property
    def parent_block(self):
        """The enclosing Block, or None for the global block."""
        return None if self.parent_idx < 0 else self.program.blocks[self.parent_idx]

    def var(self, name):
        """The variable `name` of this block or, failing that, of an enclosing block."""
        v = self.find_var_recursive(name)
        if v is None:
            raise ValueError(f"variable {name!r} is not in block {self.idx}"
                             + (" or its enclosing blocks" if self.parent_idx >= 0 else ""))
        return v

    def find_var_recursive(self, name):
        """The variable `name` seen from this block (its own, then the forward block's
        for a gradient block, then the enclosing blocks'), or None."""
        seen, todo = set(), [self]
        while todo:
            b = todo.pop(0)
            if b.idx in seen:
                continue
            seen.add(b.idx)
            if name in b.vars:
                return b.vars[name]
            todo += [b.program.blocks[i] for i in (b.forward_block_idx, b.parent_idx) if i >= 0]
        return None

    _find_var_recursive = find_var_recursive     # Paddle's name

    def sees(self, v):
        """True when `v` is the variable its name resolves to from this block."""
        return self.find_var_recursive(v.name) is v

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
        self.program.bump()
        return v

    def add_var(self, v):
        """Add `v`, a Variable made for this block (a pass's new temporary), under its name."""
        if v.name in self.vars or v.block is not self:
            raise ValueError(f"variable {v.name!r} already exists in block {self.idx} or was "
                             f"made for another block")
        self.vars[v.name] = v
        self.program.bump()
        return v

    def create_parameter(self, name, shape, dtype, **kw):
        if name in self.vars:
            raise ValueError(f"parameter {name!r} already exists; give the layer another "
                             f"name or ParamAttr(name=...)")
        p = Parameter(self, name, shape, dtype, **kw)
        self.vars[name] = p
        self.program.bump()
        return p

    def rename_var(self, var, new_name):
        """Give `var` (of this block) the name `new_name`, which must be free."""
        if new_name in self.vars:
            raise ValueError(f"variable {new_name!r} already exists")
        del self.vars[var.name]
        var.name = new_name
        self.vars[new_name] = var
        self.program.bump()

    def remove_var(self, name):
        """Drop the variable `name` from this block (no op may use it any more)."""
        del self.vars[name]
        self.program.bump()

    # ------------------------------------------------------------ uses (O(uses) lookups)
    def index(self, op):
        """The position of `op` in `ops` (ValueError if it is not in this block)."""
        return self.uses.index(op)

    def consumers(self, var):
        """The ops reading `var`, in program order."""
        return self.uses.in_order(self.uses.readers.get(var, {}).values())

    def producers(self, var):
        """The ops writing `var`, in program order (one, except for persistables
        updated in place)."""
        return self.uses.in_order(self.uses.writers.get(var, {}).values())

    def producer(self, var):
        """The last op writing `var`, or None."""
        writers = self.uses.writers.get(var)
        return self.uses.in_order(writers.values())[-1] if writers else None

    def is_used(self, var):
        """Whether any op reads or writes `var`."""
        return var in self.uses.readers or var in self.uses.writers

    # ------------------------------------------------------------ adding ops
    def append_op(self, type, inputs=None, outputs=None, attrs=None, infer=True):
        """Append an op; infer and set its outputs' shapes and dtypes.

        inputs/outputs: {slot: Variable | [Variable]}; attrs are checked against the
        OpDef and completed with its defaults.
        """
        op = self.make_op(type, inputs, outputs, attrs)
        if infer:
            _apply_inference(op)
        self._put(len(self.ops), [op])
        return op

    def _insert_op(self, index, type, inputs=None, outputs=None, attrs=None):
        op = self.make_op(type, inputs, outputs, attrs)
        _apply_inference(op)
        self._put(index, [op])
        return op

    def insert_before(self, anchor, ops):
        """Put `ops` (an op or a list, made with `make_op`) right before `anchor`, an op
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
                                 f"this block's make_op")
            if self.uses.contains(op):
                raise ValueError(f"op {op.type} is already in block {self.idx}; move it "
                                 f"with move_before / move_after")
        if len({id(op) for op in ops}) != len(ops):
            raise ValueError("the same op is given twice")
        self.uses.insert(index, ops)
        for op in ops:
            self.uses.link(op)
        self.program.bump()

    # ------------------------------------------------------------ removing, replacing, moving
    def remove_ops(self, ops):
        """Take `ops` (ops of this block) out of it; their variables stay."""
        ops = self._own(ops)
        self.uses.delete(ops)
        for op in ops:
            self.uses.unlink(op)
        self.program.bump()

    def replace_ops(self, old, new, where=None):
        """Replace the ops `old` by `new` (an op or a list, made with `make_op`), put where
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
        self.uses.delete(ops)
        self.uses.insert(self.index(anchor) + after, ops)
        self.program.bump()

    def _own(self, ops):
        ops = list({id(op): op for op in _op_list(ops)}.values())
        for op in ops:
            self.index(op)          # raises for an op not in this block
        return ops

    # ------------------------------------------------------------ rewiring one op
    def replace_uses(self, old, new, ops=None):
        """Make `ops` (default: every reader of `old`) read the variable `new` where they
        read `old`. O(uses of old)."""
        self._replace_var(old, new, ops, self.uses.readers, "inputs")

    def replace_writes(self, old, new, ops=None):
        """Make `ops` (default: every writer of `old`) write `new` where they wrote `old`."""
        self._replace_var(old, new, ops, self.uses.writers, "outputs")

    def _replace_var(self, old, new, ops, table, side):
        if not isinstance(new, Variable) or not self.sees(new):
            raise ValueError(f"replace {old.name}: the new variable must be a Variable of "
                             f"block {self.idx}, got {new!r}")
        users = table.get(old, {})
        ops = list(users.values()) if ops is None else \
            [op for op in _op_list(ops) if id(op) in users]
        for op in ops:
            self.uses.unlink(op)
            slots = getattr(op, side)
            for slot, vs in slots.items():
                if any(v is old for v in vs):
                    slots[slot] = [new if v is old else v for v in vs]
            self.uses.link(op)
        self.program.bump()

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
        vars = as_var_list(vars)
        for v in vars:
            if not isinstance(v, Variable) or not self.sees(v):
                raise ValueError(f"{op.type}.{slot}: {v!r} is not a Variable of block "
                                 f"{self.idx}")
        self.uses.unlink(op)
        slots = getattr(op, side)
        if vars:
            slots[slot] = vars
        else:
            slots.pop(slot, None)
        self.uses.link(op)
        self.program.bump()

    def set_op_type(self, op, type):
        """Turn `op` into a `type` op with the same slots and attributes (a rename such
        as batch_norm -> sync_batch_norm)."""
        self.index(op)
        get_op_def(type)            # raises for an unregistered type
        op.type = type
        self.program.bump()

    def set_attr(self, op, name, value):
        """Set attribute `name` of `op` (an attribute its OpDef declares)."""
        self.index(op)
        if name not in op.attrs:
            raise ValueError(f"{op.type}: unknown attribute {name!r}; attributes are "
                             f"{sorted(op.attrs)}")
        op.attrs[name] = value
        self.program.bump()

    def make_op(self, type, inputs, outputs, attrs):
        """A new Operator of this block (slots checked against the OpDef), not inserted."""
        opdef = get_op_def(type)
        inputs = {k: as_var_list(v) for k, v in (inputs or {}).items()}
        outputs = {k: as_var_list(v) for k, v in (outputs or {}).items()}
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
        return Operator(self, type, inputs, outputs, full, self.program.op_role)


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
    ctx = InferContext(op.type, op.attrs, in_infos, in_names)
    # control-flow ops infer their sub-block's variables (kernels/tensor/control_flow.py)
    ctx.op = op
    result = opdef.infer(ctx)
    return {k: (v if isinstance(v, list) else [v]) for k, v in result.items()}


def _apply_inference(op):
    inferred = infer_op(op)
    ins = set(op.input_vars())
    for slot, vs in op.outputs.items():
        for v, info in zip(vs, inferred.get(slot, [])):
            if v not in ins:              # an in-place output keeps its declared shape
                v.shape, v.dtype = tuple(info.shape), info.dtype
