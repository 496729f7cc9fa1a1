"""paddle.framework: program-building names under Paddle 2.x's module path.

>>> from numbaflow.framework import core, default_main_program
>>> core.CPUPlace()
Place(cpu)
"""
from __future__ import annotations

from .dtypes import convert_dtype as _convert_dtype
from .executor import CPUPlace, CUDAPlace  # noqa: F401
from . import core  # noqa: F401
from .graph import (Operator, Parameter, Program, Variable,  # noqa: F401
                    default_main_program, default_startup_program, program_guard)
from .param_attr import ParamAttr  # noqa: F401

__all__ = ["CPUPlace", "CUDAPlace", "Operator", "Parameter", "Program", "Variable",
           "default_main_program", "default_startup_program", "program_guard", "ParamAttr",
           "in_dygraph_mode", "in_dynamic_mode", "get_default_dtype", "set_default_dtype",
           "core"]


def in_dygraph_mode() -> bool:
    """Whether dygraph (eager) mode is on: always False, numbaflow has only static graphs.

    Returns:
        bool: False.

    Example:
        >>> paddle.framework.in_dygraph_mode()
        False
    """
    return False


def in_dynamic_mode() -> bool:
    """The 2.x name of in_dygraph_mode: always False.

    Returns:
        bool: False.

    Example:
        >>> paddle.framework.in_dynamic_mode()
        False
    """
    return False


def get_default_dtype() -> str:
    """The dtype layers create parameters in.

    Returns:
        str: "float32".

    Example:
        >>> paddle.framework.get_default_dtype()
        'float32'
    """
    return "float32"


def set_default_dtype(d: object) -> None:
    """Accepts only float32 (numbaflow's layers create float32 parameters).

    Args:
        d (str or dtype): the dtype.

    Raises:
        ValueError: any other dtype.

    Example:
        >>> paddle.framework.set_default_dtype('float32')
    """
    if str(_convert_dtype(d)) != "float32":
        raise ValueError(f"set_default_dtype: numbaflow's layers create float32 parameters; "
                         f"got {d!r} (cast inputs with paddle.cast instead)")
