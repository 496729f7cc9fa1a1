"""The one IR: Program -> Block -> Operator / Variable, plain Python objects.

Operators hold references to their Variable objects (not names), so rewrites never do
string surgery; names are for people, feeds and fetches. Every mutation goes through a
Block method (block.py), which keeps the block's producer/consumer maps (op_list.py) and
bumps the program's `version` (the executor's cache key).
"""
from __future__ import annotations

import contextlib
import copy
import itertools
from typing import TYPE_CHECKING

# Block and the IR's nodes and op roles live in block.py and nodes.py; they are imported
# from here as before
from .block import Block, infer_op  # noqa: F401
from .nodes import (BACKWARD, FORWARD, LOSS_GRAD, OPTIMIZE, Operator,  # noqa: F401
                    Parameter, Variable, as_var_list)

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator


class Program:
    """A static graph: a list of Blocks of Operators and Variables. Block 0 is the global
    block; the control-flow layers (`static.nn.cond`, `while_loop`) build their branches
    and bodies into sub-blocks (`Block.parent_idx` names the enclosing block), which
    their op holds in its `sub_block` attribute. Layer functions append to the current
    block of the default main program; `program_guard` switches it.
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
        self.current_block_idx = 0
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
        """Block 0: the parameters, data and the ops outside control flow.

        Returns:
            Block: with `.ops` (list of Operator), `.vars` ({name: Variable}) and `.var(name)`.
        """
        return self.blocks[0]

    def current_block(self) -> Block:
        """The block layers append to: the global block, or the sub-block a control-flow
        layer is building.

        Returns:
            Block: the current block.
        """
        return self.blocks[self.current_block_idx]

    def block(self, idx: int) -> Block:
        """Block number `idx`.

        Args:
            idx (int): the index, 0 <= idx < num_blocks.

        Returns:
            Block: the block.

        Example:
            >>> x = static.data('x', [1], 'float32')
            >>> y = static.nn.cond(x > 0.0, lambda: x * 2.0, lambda: x * 3.0)
            >>> main = static.default_main_program()
            >>> main.num_blocks, main.block(1).parent_idx
            (3, 0)
        """
        if not -len(self.blocks) <= idx < len(self.blocks):
            raise IndexError(f"block {idx} does not exist; the program has "
                             f"{len(self.blocks)} block(s)")
        return self.blocks[idx]

    @property
    def num_blocks(self) -> int:
        """The number of blocks."""
        return len(self.blocks)

    def create_block(self, parent_idx: int | None = None) -> Block:
        """A new sub-block of `parent_idx` (default: the current block), made current
        (`_create_block` in Paddle; control-flow layers use `sub_block_guard`).

        Args:
            parent_idx (int, optional): the enclosing block's index.

        Returns:
            Block: the new block, now the current one.
        """
        parent = self.current_block_idx if parent_idx is None else parent_idx
        block = Block(self, len(self.blocks), parent)
        self.blocks.append(block)
        self.current_block_idx = block.idx
        self.bump()
        return block

    _create_block = create_block       # Paddle's name

    def _rollback(self) -> None:
        """Make the current block's parent current again."""
        self.current_block_idx = max(self.current_block().parent_idx, 0)

    @contextlib.contextmanager
    def sub_block_guard(self):
        """Layers inside the `with` append to a new sub-block of the current block
        (yielded); the current block is restored after, whatever happens.

        Returns:
            a context manager yielding the new Block.
        """
        before = self.current_block_idx
        block = self.create_block()
        try:
            yield block
        finally:
            self.current_block_idx = before

    def list_vars(self) -> Iterator[Variable]:
        """Every Variable of the program (every block's).

        Returns:
            iterator of Variable: data, parameters and temporaries.
        """
        return iter([v for b in self.blocks for v in b.vars.values()])

    def all_parameters(self) -> list[Parameter]:
        """Every Parameter of the program.

        Returns:
            list of Parameter: in creation order.
        """
        return self.global_block().all_parameters()

    @property
    def op_role(self) -> str:
        """The role the ops appended now get (Paddle's name): "forward" unless inside
        `role_guard`."""
        return self._current_role

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
        for b in self.blocks[1:]:       # sub-blocks keep their indexes and parents
            nb = Block(new, b.idx, b.parent_idx)
            nb.forward_block_idx = b.forward_block_idx
            new.blocks.append(nb)
        kept = [[op for op in b.ops if not for_test or op.role == FORWARD] for b in self.blocks]
        keep = set()
        for ops in kept:
            for op in ops:
                keep.update(op.input_vars())
                keep.update(op.output_vars())
        mapping = {}
        for src, dst in zip(self.blocks, new.blocks):
            for name, v in src.vars.items():
                if for_test and v not in keep and not v.is_data and not isinstance(v, Parameter):
                    continue
                nv = copy.copy(v)
                nv.block = dst
                if isinstance(v, Parameter):
                    nv.optimize_attr = dict(v.optimize_attr)
                mapping[v] = nv
                dst.vars[name] = nv

        def attr(a):        # a sub_block attribute refers to the copy's block
            return new.blocks[a.idx] if isinstance(a, Block) else a
        for ops, dst in zip(kept, new.blocks):
            nops = []
            for op in ops:
                attrs = {k: attr(a) for k, a in op.attrs.items()}
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

