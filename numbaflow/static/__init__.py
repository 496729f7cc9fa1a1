"""numbaflow.static: programs, the executor and static-graph layers (paddle.static)."""
from .. import dtypes
from ..executor import (BuildStrategy, CompiledProgram, CPUPlace, CUDAPlace,  # noqa: F401
                        ExecutionStrategy, Executor, Scope, cpu_places, cuda_places,
                        global_scope, scope_guard)
from ..graph import (Graph, Operator, Parameter, Program, Variable,  # noqa: F401
                     append_backward, default_main_program, default_startup_program,
                     gradients, program_guard)
from ..graph.program import default_main_program as _main
from . import nn  # noqa: F401
from ..executor.parallel_executor import ParallelExecutor  # noqa: F401,E402


def data(name, shape, dtype="float32", lod_level=0):
    """Declare a fed input of the default main program; None / -1 dims take any size.

    >>> x = static.data(name='x', shape=[None, 784], dtype='float32')
    """
    if not isinstance(name, str) or not name:
        raise TypeError(f"data: name must be a non-empty str, got {name!r}")
    shape = [-1 if d is None else int(d) for d in shape]
    if any(d < -1 for d in shape):
        raise ValueError(f"data {name!r}: dims must be >= 0, or None/-1 for any size; got {shape}")
    block = _main().global_block()
    return block.create_var(name, shape, dtypes.convert_dtype(dtype), stop_gradient=True,
                            is_data=True)


from .io import load, load_inference_model, save, save_inference_model  # noqa: F401,E402
from .draw import draw  # noqa: F401,E402
