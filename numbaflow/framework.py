"""paddle.framework: program-building names under Paddle 2.x's module path.

>>> from numbaflow.framework import core, default_main_program
"""
from .dtypes import convert_dtype as _convert_dtype
from .executor import CPUPlace, CUDAPlace  # noqa: F401
from .fluid import core  # noqa: F401
from .graph import (Operator, Parameter, Program, Variable,  # noqa: F401
                    default_main_program, default_startup_program, program_guard)
from .param_attr import ParamAttr  # noqa: F401


def in_dygraph_mode():
    """Always False: numbaflow has only static graphs."""
    return False


def in_dynamic_mode():
    return False


def get_default_dtype():
    """The dtype layers create parameters in ("float32")."""
    return "float32"


def set_default_dtype(d):
    """Only float32 is supported as the default parameter dtype."""
    if str(_convert_dtype(d)) != "float32":
        raise ValueError(f"set_default_dtype: numbaflow's layers create float32 parameters; "
                         f"got {d!r} (cast inputs with paddle.cast instead)")
