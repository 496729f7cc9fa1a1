"""numbaflow.distributed: processes under `mpiexec`.

Nothing needs to be set up: run `mpiexec -n R python train.py` and data-parallel
programs span all R ranks. These functions let a script ask where it runs, wait for
the others, or pick a sub-communicator.

>>> import numbaflow.distributed as dist
>>> dist.get_rank(), dist.get_world_size()      # (0, 1) without mpiexec
(0, 1)

mpi4py is imported (MPI is initialised) only when the process was launched by
mpiexec with more than one process, or when `init()` is called. Under mpiexec with
R > 1, a rank that fails in any way (an unhandled exception, an early exit, a signal,
os._exit, or a wait past NUMBAFLOW_COLLECTIVE_TIMEOUT) ends the whole job with a
message naming the rank and the cause, instead of leaving the others hanging
(faults.py, supervisor.py; `import numbaflow` starts them: mpi.start_launched_rank).
"""
from .mpi import World, init, is_initialized, world  # noqa: F401
from .ranks import barrier, broadcast_parameters, get_rank, get_world_size  # noqa: F401

__all__ = ["get_rank", "get_world_size", "barrier", "init", "is_initialized",
           "broadcast_parameters", "world", "World"]
