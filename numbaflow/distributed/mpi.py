"""The MPI layer: one `World` (an mpi4py communicator plus the few collectives the
executor needs), created lazily, and the abort-on-failure hooks.

mpi4py is imported (which initialises MPI) only when this process was launched by
`mpiexec` with more than one process, or when `init()` is called: a plain
`import numbaflow` never starts MPI.

The executor asks `world()` once per compilation: None means a single process
(no MPI calls at all); otherwise every collective below must be issued in the same
order on every rank, from one thread at a time. Each is started nonblocking and
polled (faults.Watch), so that a failed, departed or hung rank ends the job.
"""
from __future__ import annotations

import os
import pickle
import signal
import sys
import threading
import time
import traceback
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import config
from . import supervisor
from .faults import Watch, collective_timeout

if TYPE_CHECKING:
    from collections.abc import Sequence

# Dtypes MPI's SUM is defined for that the executor reduces.
_SUM_DTYPES = (np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.int32),
               np.dtype(np.int64))

_UNSET = object()
_world = _UNSET         # World, None (one process) or _UNSET (not decided yet)
_initialized = False    # init() was called
_hooks_installed = False
_aborting = False
_lock = threading.RLock()


def env_size():
    """The job size the launcher announced (1 when not launched by mpiexec)."""
    return config.launcher_rank_size()[1]


def env_rank():
    """This process's rank as the launcher announced it (0 when not launched by mpiexec)."""
    return config.launcher_rank_size()[0]


class World:
    """A communicator with the collectives data parallelism needs.

    `rank` and `size` are this process's rank and the number of processes. Every
    method is collective: all ranks must call it, in the same order.

    Reproducibility: `Iallreduce` (what `allreduce_sum_` starts, then polls: see
    faults.py) with MPI.SUM in MPICH picks its algorithm from the
    communicator size and the message size only, and each algorithm combines the
    ranks' contributions in a fixed order (recursive doubling for short messages,
    reduce-scatter + allgather for long ones, where each element is summed on one
    rank and then copied). So for a fixed number of ranks and a fixed bucket layout
    the sums are bitwise the same run to run and on every rank.

    Args:
        comm: an mpi4py intra-communicator.

    Example:
        >>> w = dist.world()
        >>> if w is not None:                  # under mpiexec with several ranks
        ...     print(w.rank, w.size, w.sum_int(1) == w.size)
    """

    def __init__(self, comm: Any) -> None:   # an mpi4py Intracomm
        from mpi4py import MPI
        self._MPI = MPI
        self.comm = comm
        self.rank = comm.Get_rank()
        self.size = comm.Get_size()
        # every collective is started nonblocking and polled by the watch, which aborts
        # the job when another rank has left or the timeout passes (faults.py)
        self.watch = Watch(comm, abort_job, collective_timeout())
        self._open_step = None       # see step_begins

    def _collective(self, what, start):
        """Start one collective (`start()` returns its MPI request) and wait for it;
        `what` describes it in messages (faults.describe)."""
        n = self.watch.start()
        self.watch.wait(start(), n, what)

    def step_begins(self, what: str = "a data-parallel step") -> None:
        """Mark the start of collectives that every rank must complete together (one
        data-parallel step); `step_ends()` marks their end. When this rank's previous
        step never ended (it raised after its collectives started, and the program
        caught that and went on), the other ranks still wait in that step's collectives,
        and going on would mismatch collectives (wrong sums or a hang): abort the job.

        Args:
            what (str): names the step in the abort message.
        """
        if self._open_step is not None:
            abort_job(f"{self._open_step} raised on this rank after its collectives had "
                      f"started, and the program went on: the other ranks still wait in that "
                      f"step's collectives (under mpiexec a failed step cannot be retried)")
        self._open_step = what

    def step_ends(self) -> None:
        """See `step_begins`."""
        self._open_step = None

    def agree(self, what: str) -> None:
        """Before a collective that only some ranks might call (static.save's gather):
        return once every rank called `agree(what)` at this point. Past
        NUMBAFLOW_COLLECTIVE_TIMEOUT the job is aborted.

        Args:
            what (str): names the operation; every rank must pass the same.

        Raises:
            RuntimeError: another rank is in a different collective or has exited.
                Nothing was started: this rank can go on.
        """
        self.watch.agree(what)

    def __repr__(self):
        return f"World(rank={self.rank}, size={self.size})"

    def barrier(self) -> None:
        """Wait until every rank has reached this call."""
        self._collective("barrier", self.comm.Ibarrier)

    def allreduce_sum_(self, array: np.ndarray) -> np.ndarray:
        """Replace `array` by its elementwise sum over all ranks, in place.

        Args:
            array (numpy.ndarray): C-contiguous, float32 / float64 / int32 / int64.

        Returns:
            numpy.ndarray: `array`.

        Example:
            >>> w = dist.world()
            >>> if w is not None:                  # under mpiexec with several ranks
            ...     g = w.allreduce_sum_(np.ones(3, np.float32))    # g == [size, size, size]
        """
        _check_buffer(array, "allreduce_sum_")
        if array.size:
            self._collective(("allreduce", array),
                             lambda: self.comm.Iallreduce(self._MPI.IN_PLACE, array,
                                                          op=self._MPI.SUM))
        return array

    def allreduce_many_(self, arrays: Sequence[np.ndarray],
                        buffer: np.ndarray | None = None) -> None:
        """Sum several arrays of one dtype over all ranks with ONE Allreduce: they are
        copied into a flat buffer, reduced there, and copied back (in place).

        Args:
            arrays (list of numpy.ndarray): C-contiguous, of one dtype.
            buffer (numpy.ndarray, optional): a 1-D C-contiguous array of the arrays' dtype with
                at least sum(a.size) elements, kept by the caller between steps so that a bucket
                allocates nothing; None allocates one for this call.

        Example:
            >>> w = dist.world()
            >>> if w is not None:                  # under mpiexec with several ranks
            ...     w_grad, b_grad = np.ones((3, 2), np.float32), np.ones(2, np.float32)
            ...     flat = np.empty(w_grad.size + b_grad.size, np.float32)   # kept between steps
            ...     w.allreduce_many_([w_grad, b_grad], buffer=flat)
        """
        arrays = list(arrays)
        if not arrays:
            return
        dtype = arrays[0].dtype
        for a in arrays:
            _check_buffer(a, "allreduce_many_")
            if a.dtype != dtype:
                raise TypeError(f"allreduce_many_: every array of a bucket must have one dtype; "
                                f"got {dtype} and {a.dtype} (bucket arrays by dtype)")
        if len(arrays) == 1:
            self.allreduce_sum_(arrays[0])
            return
        total = sum(a.size for a in arrays)
        if buffer is None:
            buffer = np.empty(total, dtype)
        elif (not isinstance(buffer, np.ndarray) or buffer.ndim != 1 or buffer.dtype != dtype
              or buffer.size < total or not buffer.flags.c_contiguous
              or not buffer.flags.writeable):
            got = (f"{type(buffer).__name__} {getattr(buffer, 'shape', '')} "
                   f"{getattr(buffer, 'dtype', '')}")
            raise ValueError(f"allreduce_many_: buffer must be a writeable 1-D C-contiguous "
                             f"{dtype} array of at least {total} elements, got {got}")
        flat = buffer[:total]
        offset = 0
        for a in arrays:
            flat[offset:offset + a.size] = a.reshape(-1)
            offset += a.size
        self.allreduce_sum_(flat)
        offset = 0
        for a in arrays:
            a.reshape(-1)[:] = flat[offset:offset + a.size]
            offset += a.size

    def bcast_(self, array: np.ndarray, root: int = 0) -> np.ndarray:
        """Overwrite `array` on every rank with root's, in place.

        Args:
            array (numpy.ndarray): C-contiguous; shapes and dtypes must already agree between
                ranks.
            root (int): the rank whose array is sent.

        Returns:
            numpy.ndarray: `array`.
        """
        _check_buffer(array, "bcast_", any_dtype=True)
        if array.size:
            self._collective(("broadcast", array, root),
                             lambda: self.comm.Ibcast(array, root=root))
        return array

    def allgather_obj(self, obj: object) -> list:
        """Every rank's `obj`, in rank order.

        Args:
            obj: a picklable value.

        Returns:
            list: one value per rank.
        """
        data = np.frombuffer(pickle.dumps(obj), np.uint8)
        sizes = np.zeros(self.size, np.int64)
        sizes[self.rank] = data.size
        self.allreduce_sum_(sizes)
        out = np.empty(int(sizes.sum()), np.uint8)
        displs = np.concatenate([[0], np.cumsum(sizes)[:-1]])
        self._collective("allgather", lambda: self.comm.Iallgatherv(
            data, [out, sizes, displs, self._MPI.BYTE]))
        return [pickle.loads(out[d:d + c].tobytes()) for d, c in zip(displs, sizes)]

    def sum_int(self, x: int) -> int:
        """The sum over all ranks of the int `x` (e.g. the global batch size).

        Args:
            x (int): this rank's value.

        Returns:
            int: the sum.
        """
        return int(self.allreduce_sum_(np.array([int(x)], np.int64))[0])

    def check_same(self, what: str, value: object) -> None:
        """Raise ValueError on EVERY rank (so none deadlocks in a later collective) when
        `value` differs between ranks.

        Args:
            what (str): names the value in the message.
            value: a picklable, comparable value.

        Raises:
            ValueError: the ranks' values differ.
        """
        values = self.allgather_obj(value)
        bad = [r for r, v in enumerate(values) if v != values[0]]
        if bad:
            shown = "; ".join(f"rank {r}: {_short(values[r])}" for r in [0] + bad[:4])
            raise ValueError(f"{what} differs between ranks ({shown}); every rank must build "
                             f"the same program and feed the same dtypes")


def _short(v, limit=200):
    s = repr(v)
    return s if len(s) <= limit else s[:limit] + "..."


def _check_buffer(a, fn, any_dtype=False):
    if not isinstance(a, np.ndarray):
        raise TypeError(f"{fn}: expected a numpy array, got {type(a).__name__}")
    if not a.flags.c_contiguous or not a.flags.writeable:
        raise ValueError(f"{fn}: the array must be C-contiguous and writeable (it is "
                         f"reduced in place); got shape {a.shape}, strides {a.strides}, "
                         f"writeable={a.flags.writeable}")
    if not any_dtype and a.dtype not in _SUM_DTYPES:
        raise TypeError(f"{fn}: dtype {a.dtype} is not summed by MPI here; expected one of "
                        f"{', '.join(str(d) for d in _SUM_DTYPES)}")


# ---------------------------------------------------------------- the current world
def world() -> World | None:
    """The current World, or None for a single process (size 1).

    The first call in a process launched by `mpiexec -n R` (R > 1) initialises MPI
    on COMM_WORLD; `init(comm)` chooses another communicator.

    Returns:
        World or None: the communicator.

    Example:
        >>> w = dist.world()
        >>> w is None or w.size > 1
        True
    """
    global _world
    w = _world
    if w is _UNSET:
        with _lock:
            if _world is _UNSET:
                _world = _world_from_env()
            w = _world
    return w


def _world_from_env():
    if env_size() <= 1:
        return None
    from mpi4py import MPI
    install_abort_hooks()
    return World(MPI.COMM_WORLD) if MPI.COMM_WORLD.Get_size() > 1 else None


def init(comm: Any = None) -> World | None:   # an mpi4py Intracomm
    """Use `comm` for every collective from now on (this imports mpi4py, which starts MPI).

    Args:
        comm (mpi4py Intracomm, optional): default MPI.COMM_WORLD.

    Returns:
        World or None: the World, or None when `comm` has one process.

    Raises:
        ValueError: comm is not an intra-communicator this rank belongs to.

    Example:
        >>> if dist.get_world_size() > 1:      # under mpiexec: ranks 0-1 and 2-3 as two groups
        ...     from mpi4py import MPI
        ...     _ = dist.init(MPI.COMM_WORLD.Split(dist.get_rank() // 2))
    """
    global _world, _initialized
    from mpi4py import MPI
    if comm is None:
        comm = MPI.COMM_WORLD
    if not isinstance(comm, MPI.Intracomm) or comm == MPI.COMM_NULL:
        raise ValueError(f"init: comm must be an mpi4py intra-communicator this rank belongs "
                         f"to (e.g. MPI.COMM_WORLD.Split(color)), got {comm!r}")
    if MPI.COMM_WORLD.Get_size() > 1:
        install_abort_hooks()
    with _lock:
        _world = World(comm) if comm.Get_size() > 1 else None
        _initialized = True
    return _world


def is_initialized() -> bool:
    """True once a communicator is chosen: `init()` was called, or MPI was started
    because this process was launched by mpiexec with more than one process.

    Returns:
        bool: whether a communicator is chosen.

    Example:
        >>> isinstance(dist.is_initialized(), bool)
        True
    """
    return _initialized or (_world is not _UNSET and _world is not None)


def start_launched_rank():
    """Under mpiexec with several ranks: fork the rank's supervisor (supervisor.py: a rank
    killed or os._exit'ed is named) and install the abort hooks, so that an exception before
    MPI is first used does not hang the other ranks (Hydra does not end a job when one
    process exits with an error); nothing otherwise. `import numbaflow` calls it first,
    before any thread starts. mpi4py is not imported here."""
    if env_size() > 1:
        supervisor.supervise(env_rank(), env_size())
        install_abort_hooks()


# ---------------------------------------------------------------- abort on failure
def install_abort_hooks():
    """Make an unhandled exception (main thread or any thread) on this rank print its
    traceback, tagged with the rank, and abort the whole MPI job: without this the
    other ranks would wait forever in their next collective. Idempotent; MPI is
    imported by the hook only if it is not yet (MPI_Abort needs it)."""
    global _hooks_installed
    with _lock:
        if _hooks_installed:
            return
        _hooks_installed = True
    prev_sys, prev_thread = sys.excepthook, threading.excepthook

    def excepthook(exc_type, exc, tb):
        try:
            _report(exc_type, exc, tb, "", prev_sys if prev_sys is not sys.__excepthook__
                    else None, (exc_type, exc, tb))
        finally:
            _abort()

    def thread_excepthook(args):
        if issubclass(args.exc_type, SystemExit):   # the default hook ignores it too
            return prev_thread(args)
        try:
            where = f" in thread {args.thread.name!r}" if args.thread is not None else ""
            _report(args.exc_type, args.exc_value, args.exc_traceback, where,
                    prev_thread if prev_thread is not threading.__excepthook__ else None,
                    (args,))
        finally:
            _abort()

    sys.excepthook = excepthook
    threading.excepthook = thread_excepthook
    # SIGTERM (a scheduler or a user killing one rank) would end this process silently,
    # and the others would wait for it: report and abort instead. A handler the script
    # installed is kept. Python runs it between bytecodes of the main thread, which the
    # polling collectives (faults.py) keep doing while they wait.
    if (threading.current_thread() is threading.main_thread()
            and signal.getsignal(signal.SIGTERM) is signal.SIG_DFL):
        signal.signal(signal.SIGTERM, _on_sigterm)


def _on_sigterm(signum, frame):
    abort_job("received SIGTERM")


def abort_job(cause):
    """Write `cause` on stderr, tagged with this rank, and abort the whole MPI job."""
    try:
        sys.stderr.write(f"[{_rank_tag()}] numbaflow.distributed: {cause}; aborting the "
                         f"MPI job\n")
    finally:
        _abort()


def _rank_tag():
    w = _world
    if isinstance(w, World):
        return f"rank {w.rank}/{w.size}"
    return f"rank {env_rank()}/{env_size()}"


def _report(exc_type, exc, tb, where, custom_hook, hook_args):
    tag = _rank_tag()
    try:
        if custom_hook is not None:
            custom_hook(*hook_args)
        else:
            lines = "".join(traceback.format_exception(exc_type, exc, tb)).splitlines()
            sys.stderr.write("".join(f"[{tag}] {line}\n" for line in lines))
        sys.stderr.write(f"[{tag}] numbaflow.distributed: unhandled exception{where}; "
                         f"aborting the MPI job so that the other ranks do not hang\n")
        sys.stderr.flush()
    except Exception:   # reporting must never prevent the abort
        pass


def _abort():
    global _aborting
    if _aborting:            # a second signal or thread: the first abort goes on
        time.sleep(5)
        os._exit(1)
    _aborting = True
    try:
        supervisor.mark(supervisor.ABORT)
        sys.stdout.flush()
        sys.stderr.flush()
        # MPI_Abort kills every process at once, and the launcher may not have read the
        # traceback yet (a fixed 0.2 s pause lost it ~1 run in 20 here): wait until it has
        supervisor.wait_forwarded()
    except BaseException:    # noqa: B902 - a second Ctrl-C must not skip the abort
        pass
    try:
        from mpi4py import MPI
        if not MPI.Is_finalized():
            MPI.COMM_WORLD.Abort(1)
    finally:
        os._exit(1)
