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
from typing import TYPE_CHECKING

from ..kernels.registry import InferContext, get_op_def
# the IR's nodes and op roles live in nodes.py; they are imported from here as before
from .nodes import (BACKWARD, FORWARD, LOSS_GRAD, OPTIMIZE, Operator,  # noqa: F401
                    Parameter, Variable, as_var_list)
from .op_list import UseMaps

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator


class Block:
    """The variables and ops of one block. `ops` is read-only: every edit goes through a
    method here, which keeps the producer/consumer maps (`producers`, `consumers`) and
    the program `version` (the executor's cache key) up to date.

    >>> block.replace_uses(old_var, new_var)            # every reader of old_var
    >>> block.replace_ops([add, relu], fused_op)         # fused_op from block.make_op
    """

    def __init__(self, program, idx):
        self.program, self.idx = program, idx
        self.vars = {}
        self.uses = UseMaps()

    @property
    def ops(self):
        return self.uses.ops

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
        if not isinstance(new, Variable) or self.vars.get(new.name) is not new:
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
            if not isinstance(v, Variable) or self.vars.get(v.name) is not v:
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
    # the callables Executor.run calls with the scope before each run of this program
    # (learning-rate schedules set their rate: optimizer/lr.py), in order; read-only:
    # add one with `add_run_hook` (a program that has some gets its own list)
    run_hooks = ()
    # the module that reads and writes persistables in a scope (static/program_state.py:
    # the scope is above this layer); it backs state_dict / set_state_dict
    _state_io = None

    _ids = itertools.count()

    def __init__(self) -> None:
        self.blocks = [Block(self, 0)]
        self.version = 0
        self.random_seed = 0
        self._current_role = FORWARD
        self._uid = next(Program._ids)

    def bump(self) -> None:
        """Mark the program changed: plan caches keyed on `version` rebuild."""
        self.version += 1

    @property
    def uid(self) -> int:
        """A number no other Program of this process has (plan caches key on it)."""
        return self._uid

    def add_run_hook(self, hook: Callable, first: bool = False) -> None:
        """Call `hook(scope)` before each run of this program (after the earlier hooks,
        or before them all when `first`).

        Args:
            hook (callable): called with the run's Scope.
            first (bool): run it before the hooks already added.
        """
        hooks = self.__dict__.setdefault("run_hooks", [])
        hooks.insert(0, hook) if first else hooks.append(hook)

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
    def role_guard(self, role):
        """Ops appended inside the `with` block get `role` (the optimizers and clipping use it).

        Args:
            role (str): "forward", "backward", "optimize" or "loss_grad" (graph.nodes).

        Returns:
            a context manager.
        """
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
        new.bump()
        return new

    def state_dict(self, mode: str = "all", scope: object = None) -> dict:
        """The persistables' values, {name: ndarray copy} (Paddle's `Program.state_dict`).

        Args:
            mode (str): "param" (parameters), "opt" (the other persistables: optimizer
                state, learning rate, batch-norm statistics) or "all".
            scope (Scope, optional): default `static.global_scope()`.

        Returns:
            dict: {name: ndarray}; `paddle.save` writes it, `set_state_dict` takes it.

        Example:
            >>> x = static.data('x', [None, 3])
            >>> y = static.nn.fc(x, size=2)
            >>> _ = static.Executor(paddle.CPUPlace()).run(static.default_startup_program())
            >>> sorted(static.default_main_program().state_dict())
            ['fc_0.b_0', 'fc_0.w_0']
        """
        return self._state_io.program_state_dict(self, mode, scope)

    def set_state_dict(self, state_dict: dict, scope: object = None) -> None:
        """Set the persistables named in `state_dict` (Paddle's `Program.set_state_dict`):
        every one is checked first (shape, dtype; a 0-D scalar fits a (1,) variable),
        then set; warns naming the persistables it lacks and the keys it does not use.

        Args:
            state_dict (dict): {name: array}, e.g. `paddle.load('model.pdparams')`.
            scope (Scope, optional): default `static.global_scope()`.

        Example:
            >>> x = static.data('x', [None, 3])
            >>> y = static.nn.fc(x, size=2)
            >>> static.default_main_program().set_state_dict(
            ...     {'fc_0.w_0': np.ones((3, 2), 'float32'), 'fc_0.b_0': np.zeros(2, 'float32')})
            >>> float(static.global_scope().get('fc_0.w_0').sum())
            6.0
        """
        self._state_io.set_state(self, state_dict, scope, "set_state_dict")


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

