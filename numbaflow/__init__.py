"""numbaflow: Paddle-style static graphs whose every op is a numba kernel.

Build a `static.Program` with layer functions, then run it with a `static.Executor`:

>>> import numpy as np
>>> import numbaflow as paddle
>>> import numbaflow.static as static
>>> paddle.enable_static()
>>> main, startup = static.Program(), static.Program()
>>> with static.program_guard(main, startup):
...     x = static.data(name='x', shape=[None, 3], dtype='float32')
...     loss = paddle.mean(static.nn.fc(x, size=2))
...     _ = paddle.optimizer.SGD(learning_rate=0.1).minimize(loss)
>>> exe = static.Executor(paddle.CPUPlace())
>>> _ = exe.run(startup)
>>> (value,) = exe.run(main, feed={'x': np.ones((4, 3), 'float32')}, fetch_list=[loss])
>>> value.shape
()

Modules: `numbaflow` (math functions, places, `seed`), `numbaflow.static` (programs,
executor, strategies, save / load), `numbaflow.static.nn` (layers with parameters),
`numbaflow.nn.functional` (activations, losses, conv, pooling), `numbaflow.optimizer`,
`numbaflow.fluid` (the Paddle 1.x names), `numbaflow.distributed` (MPI ranks).

The examples in the docstrings assume `import numpy as np`, `import numbaflow as paddle`,
`from numbaflow import static, fluid`, `import numbaflow.nn.functional as F` and
`import numbaflow.distributed as dist`, and build into the default main program (each
example is run by the tests in a fresh one).
"""
from __future__ import annotations

import typing as _typing

from . import config as _config
_config.default_omp_wait_policy()   # before numba loads libgomp: see its docstring

# under mpiexec: the rank supervisor (a fork) and the abort hooks, before any thread
from .distributed.mpi import start_launched_rank as _start_launched_rank  # noqa: E402
_start_launched_rank()
from . import distributed  # noqa: F401,E402

from . import dtypes, kernels  # noqa: F401,E402  (kernels registers every op)
from .dtypes import bool_ as bool, float32, float64, int32, int64  # noqa: F401
from .executor import CPUPlace, CUDAPlace  # noqa: F401
from .executor.place import cuda_available, is_compiled_with_cuda  # noqa: F401
from .param_attr import ParamAttr  # noqa: F401
from .tensor import *  # noqa: F401,F403  (paddle.add, paddle.triu, ...: tensor.__all__)
from .tensor import __all__ as _tensor_all
from . import nn, optimizer, static, metric, utils, initializer, fluid, tensor  # noqa: F401,E402
# paddle.nn's decoders are built on static.nn.while_loop (a floor above nn): bound here
for _name in static.decode.__all__:
    setattr(nn, _name, getattr(static.decode, _name))
nn.__all__ += static.decode.__all__
from .reader import batch  # noqa: F401,E402  (also binds the paddle.reader module)
from .static.program_state import load_state as load, save_state as save  # noqa: F401,E402
from . import io  # noqa: F401,E402  (paddle.io: Dataset, DataLoader, ...)
from . import framework  # noqa: F401,E402
from . import onnx  # noqa: F401,E402  (paddle.onnx.export; the onnx package loads on use)
from . import incubate  # noqa: F401,E402  (paddle.incubate.softmax_mask_fuse, ...)
from . import profiler  # noqa: F401,E402  (paddle.profiler.Profiler, RecordEvent, ...)
from . import vision  # noqa: F401,E402  (paddle.vision.models)
from .hapi import Model, callbacks, flops, summary  # noqa: F401,E402  (paddle.Model, ...)
utils.log.configure_from_env()      # NUMBAFLOW_LOG_LEVEL
from ._health import run_check as _run_check  # noqa: E402


def _tolerate_numba_cache_errors():
    """numba's disk cache of numbaflow's own `cache=True` kernels (in kernels/, executor/,
    ...) degrades as the generated ones do: a full or unwritable NUMBA_CACHE_DIR turns
    caching off with one warning instead of failing the op that first ran the kernel."""
    import sys as _sys
    from .kernels.codegen.cache import tolerate_cache_errors
    for name, module in list(_sys.modules.items()):
        if (name == __name__ or name.startswith(__name__ + ".")) and module is not None:
            tolerate_cache_errors(vars(module))


_tolerate_numba_cache_errors()
utils.run_check = _run_check         # paddle.utils.run_check (utils is a lower layer)

from ._version import __version__  # noqa: E402

__all__ = [
    # places, parameters, dtypes
    "CPUPlace", "CUDAPlace", "ParamAttr", "bool", "float32", "float64", "int32", "int64",
    # the tensor functions (numbaflow.tensor)
    *_tensor_all,
    # modes, seed, device
    "enable_static", "disable_static", "in_dynamic_mode", "seed", "set_device", "get_device",
    "cuda_available", "is_compiled_with_cuda",
    # data and checkpoints
    "batch", "save", "load", "Model", "summary", "flops",
    # submodules
    "callbacks", "distributed", "dtypes", "fluid", "framework", "hapi", "incubate", "initializer",
    "io", "metric",
    "nn",
    "onnx", "optimizer", "profiler", "reader", "static", "tensor", "utils", "vision",
]


def __getattr__(name):
    # dygraph names (paddle.to_tensor, paddle.no_grad, ...) say what to write instead
    raise utils.hints.dygraph_attribute(__name__, name)


def enable_static() -> None:
    """Accepted for Paddle compatibility: static graphs are numbaflow's only mode.

    Example:
        >>> paddle.enable_static()
    """


def disable_static(place: object = None) -> _typing.NoReturn:
    """Always raises: numbaflow has no dynamic (eager) mode.

    Args:
        place: ignored.

    Raises:
        RuntimeError: always.

    Example:
        >>> paddle.disable_static()
        Traceback (most recent call last):
        ...
        RuntimeError: numbaflow has only static graphs; dynamic (eager) mode does not exist
    """
    raise RuntimeError("numbaflow has only static graphs; dynamic (eager) mode does not exist")


def in_dynamic_mode() -> bool:
    """Whether eager mode is on: always False.

    Returns:
        bool: False.

    Example:
        >>> paddle.in_dynamic_mode()
        False
    """
    return False


def seed(n: int) -> None:
    """Make parameter initialisation (and dropout) reproducible from here on.

    Args:
        n (int): the global seed; each random op of later-built programs derives its own seed
            from it.

    Raises:
        TypeError: n is not an int.

    Example:
        >>> paddle.seed(2024)
    """
    from .kernels.tensor.creation import set_global_seed
    if not isinstance(n, int):
        raise TypeError(f"seed expects an int, got {type(n).__name__}")
    set_global_seed(n)


def set_device(device: str | CPUPlace | CUDAPlace) -> CPUPlace | CUDAPlace:
    """The place for a device name (Paddle compatibility; nothing global changes).

    Args:
        device (str or place): 'cpu', 'gpu', 'gpu:N', or a place object.

    Returns:
        CPUPlace or CUDAPlace: the place.

    Raises:
        ValueError: an unknown device name.
        RuntimeError: a GPU was asked for and none is usable.

    Example:
        >>> paddle.set_device('cpu')
        Place(cpu)
    """
    from .executor.place import to_place
    return to_place(device)


def get_device() -> str:
    """The default device: always 'cpu' (pass a CUDAPlace to the Executor for a GPU).

    Returns:
        str: 'cpu'.

    Example:
        >>> paddle.get_device()
        'cpu'
    """
    return "cpu"
