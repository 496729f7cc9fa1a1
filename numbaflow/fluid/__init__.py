"""numbaflow.fluid: the Paddle 1.x (`paddle.fluid`) names over the same programs and executor.

>>> import numbaflow.fluid as fluid
>>> x = fluid.layers.data(name='x', shape=[13], dtype='float32')
>>> y_predict = fluid.layers.fc(input=x, size=1, act=None)
>>> x.shape, y_predict.shape
((-1, 13), (-1, 1))
"""
from ..executor import (BuildStrategy, CPUPlace, CUDAPlace,  # noqa: F401
                        ExecutionStrategy, Executor, Scope, global_scope, scope_guard)
from ..graph import (Operator, Parameter, Program, Variable, default_main_program,  # noqa: F401
                     default_startup_program, gradients, program_guard)
from ..param_attr import ParamAttr  # noqa: F401
from ..static import data  # noqa: F401  (fluid.data: no batch dim prepended, as in Paddle 1.6+)
from ..static.io import load, save  # noqa: F401
from ..utils import unique_name  # noqa: F401
from . import (backward, clip, initializer, io, layers, optimizer,  # noqa: F401
               regularizer)
from ..compiler import CompiledProgram, ParallelExecutor  # noqa: F401

__all__ = [
    "Program", "Variable", "Parameter", "Operator", "data", "program_guard",
    "default_main_program", "default_startup_program", "gradients", "ParamAttr",
    "Executor", "CompiledProgram", "ParallelExecutor", "BuildStrategy", "ExecutionStrategy",
    "CPUPlace", "CUDAPlace", "Scope", "global_scope", "scope_guard", "save", "load",
    "in_dygraph_mode",
    # submodules
    "backward", "clip", "initializer", "io", "layers", "optimizer", "regularizer",
    "unique_name",
]


def in_dygraph_mode() -> bool:
    """Whether dygraph (eager) mode is on: always False, numbaflow has only static graphs.

    Returns:
        bool: False.

    Example:
        >>> fluid.in_dygraph_mode()
        False
    """
    return False
