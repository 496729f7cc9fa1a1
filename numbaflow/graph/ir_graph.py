"""`static.Graph`: the IR graph of a program, the unit CompiledProgram compiles.

numbaflow has one IR, so a Graph is a private copy of a Program (the user's program
is never modified by compilation) plus the names of the passes applied to it.
"""
from .program import Program


class Graph:
    def __init__(self, program, for_test=False):
        if not isinstance(program, Program):
            raise TypeError(f"Graph expects a Program, got {type(program).__name__}")
        self.program = program.clone(for_test=for_test)
        self.applied_passes = []

    def to_program(self):
        return self.program

    def all_op_nodes(self):
        return list(self.program.global_block().ops)

    def all_var_nodes(self):
        return list(self.program.global_block().vars.values())
