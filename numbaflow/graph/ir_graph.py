"""`static.Graph`: the IR graph of a program, the unit CompiledProgram compiles.

numbaflow has one IR, so a Graph is a private copy of a Program (the user's program
is never modified) plus the passes applied to it.

>>> g = static.Graph(main)
>>> g.apply_pass("fuse_elewise_add_act")     # True when the graph changed
>>> compiled = static.CompiledProgram(g)
"""
from .program import Program


class Graph:
    def __init__(self, program, for_test=False):
        if not isinstance(program, Program):
            raise TypeError(f"Graph expects a Program, got {type(program).__name__}")
        self.program = program.clone(for_test=for_test)
        self.applied_passes = []

    def apply_pass(self, name, protected=(), device="cpu"):
        """Apply the pass called `name` (see `numbaflow.graph.passes.all_pass_names()`);
        the IR is verified afterwards. Returns True when the graph changed."""
        from .passes import apply_passes
        p, = apply_passes(self.program, [name], protected, device)
        self.applied_passes.append(p)
        return bool(p.changed)

    def to_program(self):
        return self.program

    def all_op_nodes(self):
        return list(self.program.global_block().ops)

    def all_var_nodes(self):
        return list(self.program.global_block().vars.values())
