"""`static.Graph`: the IR graph of a program, the unit CompiledProgram compiles.

numbaflow has one IR, so a Graph is a private copy of a Program (the user's program
is never modified) plus the passes applied to it.

>>> g = static.Graph(main)
>>> g.apply_pass("fuse_elewise_add_act")     # True when the graph changed
>>> compiled = static.CompiledProgram(g)
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from .program import Program

if TYPE_CHECKING:
    from collections.abc import Collection

    from .program import Operator, Variable


class Graph:
    """The IR graph of a program: a private copy of it (the user's program is never
    modified) plus the passes applied to it. `CompiledProgram(graph)` runs it.

    Args:
        program (Program): the program to copy.
        for_test (bool): copy only the forward part (see `Program.clone`).

    Example:
        >>> x = static.data('x', [None, 3])
        >>> b = static.data('b', [3])
        >>> y = F.relu(x + b)
        >>> g = static.Graph(static.default_main_program())
        >>> g.apply_pass("fuse_elewise_add_act")
        True
        >>> [op.type for op in g.all_op_nodes()]
        ['fused_elemwise_add_activation']
    """

    def __init__(self, program: Program, for_test: bool = False) -> None:
        if not isinstance(program, Program):
            raise TypeError(f"Graph expects a Program, got {type(program).__name__}")
        self.program = program.clone(for_test=for_test)
        self.applied_passes = []

    def apply_pass(self, name: str, protected: Collection[str] = (),
                   device: str = "cpu") -> bool:
        """Apply the pass called `name` (see `numbaflow.graph.passes.all_pass_names()`);
        the IR is verified afterwards.

        Args:
            name (str): e.g. 'fuse_elewise_add_act', 'auto_fusion'.
            protected (collection of str): variable names no fusion may remove (fetches).
            device (str): 'cpu' or 'gpu', for the device-specific passes.

        Returns:
            bool: True when the graph changed.
        """
        from .passes import apply_passes
        p, = apply_passes(self.program, [name], protected, device)
        self.applied_passes.append(p)
        return bool(p.changed)

    def to_program(self) -> Program:
        """The graph as a Program (the private copy, with the passes applied).

        Returns:
            Program: the program.
        """
        return self.program

    def all_op_nodes(self) -> list[Operator]:
        """Every op, in order.

        Returns:
            list of Operator: the ops.
        """
        return list(self.program.global_block().ops)

    def all_var_nodes(self) -> list[Variable]:
        """Every variable.

        Returns:
            list of Variable: the variables.
        """
        return list(self.program.global_block().vars.values())
