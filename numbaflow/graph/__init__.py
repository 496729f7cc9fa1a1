from .program import (Program, Block, Operator, Variable, Parameter,  # noqa: F401
                      default_main_program, default_startup_program, program_guard)
from .backward import append_backward, gradients  # noqa: F401
from .verify import verify  # noqa: F401
from .ir_graph import Graph  # noqa: F401
