"""numbaflow.fluid: the Paddle 1.x (`paddle.fluid`) names over the same programs and executor.

>>> import numbaflow.fluid as fluid
>>> x = fluid.layers.data(name='x', shape=[13], dtype='float32')
>>> y_predict = fluid.layers.fc(input=x, size=1, act=None)
>>> x.shape, y_predict.shape
((-1, 13), (-1, 1))
"""
from ..executor import (CPUPlace, CUDAPlace,  # noqa: F401
                        Executor, Scope, cpu_places, cuda_places,
                        global_scope, scope_guard)
from ..graph import (Operator, Parameter, Program, Variable, default_main_program,  # noqa: F401
                     default_startup_program, gradients, program_guard)
from ..param_attr import ParamAttr  # noqa: F401
from ..static import data  # noqa: F401  (fluid.data: no batch dim prepended, as in Paddle 1.6+)
from ..static.io import load, save  # noqa: F401
from ..utils import unique_name  # noqa: F401
from . import (backward, clip, initializer, io, layers, optimizer,  # noqa: F401
               regularizer)
from ..compiler import (BuildStrategy, CompiledProgram, ExecutionStrategy,  # noqa: F401
                        ParallelExecutor)
from .data_feeder import DataFeeder  # noqa: F401
from . import compiler, core, executor, nets  # noqa: F401,E402
from .core import LoDTensor, Tensor, create_lod_tensor, is_compiled_with_cuda  # noqa: F401,E402
from ..static.nn import embedding  # noqa: F401,E402  (fluid.embedding: lookup_table_v2)

__all__ = [
    "Program", "Variable", "Parameter", "Operator", "data", "program_guard",
    "default_main_program", "default_startup_program", "gradients", "ParamAttr",
    "Executor", "CompiledProgram", "ParallelExecutor", "BuildStrategy", "ExecutionStrategy",
    "CPUPlace", "CUDAPlace", "Scope", "global_scope", "scope_guard", "save", "load",
    "in_dygraph_mode", "DataFeeder", "cpu_places", "cuda_places", "embedding", "one_hot",
    "LoDTensor", "Tensor", "create_lod_tensor", "is_compiled_with_cuda",
    # submodules
    "backward", "clip", "initializer", "io", "layers", "optimizer", "regularizer",
    "unique_name", "compiler", "core", "executor", "nets",
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


def one_hot(input: Variable, depth: int, allow_out_of_range: bool = False) -> Variable:
    """fluid.one_hot (Paddle 1.8's one_hot_v2): int ids of any shape -> float32 one-hot
    rows with a new last dim of `depth`.

    Args:
        input (Variable): int32 / int64 ids.
        depth (int): the number of classes.
        allow_out_of_range (bool): an id outside [0, depth) gives a row of zeros instead
            of an error.

    Returns:
        Variable: float32, shape input.shape + (depth,).

    Example:
        >>> ids = fluid.data('ids', [None], 'int64')
        >>> fluid.one_hot(ids, depth=4).shape
        (-1, 4)
    """
    from .. import tensor
    return layers.one_hot(tensor.unsqueeze(input, [-1]), depth, allow_out_of_range)


_NOT_SUPPORTED = {
    "dygraph": "fluid.dygraph (dynamic graphs) does not exist in numbaflow, which has only "
               "static graphs: build a Program with fluid.layers and run it with "
               "fluid.Executor",
    "contrib": "fluid.contrib (mixed precision, slim, ...) is not part of numbaflow",
}


def __getattr__(name):
    """A clear error for the fluid modules numbaflow does not have."""
    if name in _NOT_SUPPORTED:
        raise AttributeError(_NOT_SUPPORTED[name])
    raise AttributeError(f"module 'numbaflow.fluid' has no attribute {name!r}")
