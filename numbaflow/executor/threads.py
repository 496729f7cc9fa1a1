"""One thread budget for numba's parallel loops, the BLAS and the concurrent workers.

A process may keep `budget()` threads busy: OMP_NUM_THREADS when the user set it, else the
cores it may run on (its affinity mask), never more than numba's NUMBA_NUM_THREADS. Work
that runs concurrently (data-parallel devices as threads, scheduler workers) shares it:
each of n concurrent runners gets `share(n)` numba threads. `Workers` are such concurrent
threads, started once and kept (the data-parallel devices: one step does not start any).

The BLAS libraries loaded in the process (numpy's and scipy's OpenBLAS; numba's np.dot
calls scipy's) run at one thread once a program runs (`one_thread_blas`). Large products
(kernels/math/gemm_cpu.py), convolutions (kernels/nn/conv.py) and depthwise convolutions are split
by numbaflow's own kernels over numba's thread count: one worker per thread
(kernels/workshare.run_workers), each claiming the next piece, so no parallel region nests
another and a thread that shares its core with another process does less of the work
instead of holding up the op. docs/architecture.md ("Threads") has the measurements behind
this choice.

`worker_env` is the environment of a process started to do one framework's work alone (the
bench's workers): every thread knob set to the same count, and thread pools that sleep
instead of spinning when idle, so one process does not steal the next one's cores.
"""
import os
import queue
import threading
import weakref

import numba

from .. import config

# The BLAS thread count is one process-wide setting of the libraries themselves;
# `blas_threads` mirrors what limit_blas last set (None: never), so that a run wanting the
# same count checks one attribute (~40 ns) instead of calling threadpoolctl.
_blas_lock = threading.Lock()
blas_threads = None


def usable_cores():
    """The cores this process may run on (its affinity mask; os.cpu_count() elsewhere)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def budget():
    """Threads this process may keep busy at once (>= 1)."""
    cap = config.omp_num_threads() or usable_cores()
    return max(1, min(cap, numba.config.NUMBA_NUM_THREADS))


def share(concurrent, total=None):
    """Threads for each of `concurrent` runners that share the budget (>= 1)."""
    return max(1, (budget() if total is None else total) // max(1, concurrent))


class Workers:
    """`n` threads kept until this object goes: `run(calls)` runs calls[0] on the caller's
    thread and the others (at most n) on the workers, and returns when all have returned.
    A call reports its own errors (an exception escaping one is dropped).

    >>> out = []
    >>> Workers(2, "doc").run([lambda: out.append(0), lambda: out.append(1)])
    >>> sorted(out)
    [0, 1]
    """

    def __init__(self, n, name):
        self._jobs = [queue.SimpleQueue() for _ in range(n)]
        self._done = queue.SimpleQueue()
        self._pending = 0
        for i, jobs in enumerate(self._jobs):
            threading.Thread(target=_serve, args=(jobs, self._done), daemon=True,
                             name=f"{name}-{i + 1}").start()
        weakref.finalize(self, _stop, self._jobs)     # the threads end with this object

    def run(self, calls):
        first, rest = calls[0], calls[1:]
        if len(rest) > len(self._jobs):
            raise ValueError(f"Workers.run: {len(calls)} calls for {len(self._jobs)} workers "
                             f"and the caller")
        for jobs, call in zip(self._jobs, rest):
            jobs.put(call)
        self._pending += len(rest)
        first()
        self.wait()

    def wait(self):
        """Return when every call handed to a worker has returned."""
        while self._pending:
            self._done.get()
            self._pending -= 1


def _serve(jobs, done):
    while True:
        call = jobs.get()
        if call is None:
            return
        try:
            call()
        except BaseException:      # noqa: B902 - the call's own business (see Workers)
            pass
        finally:
            call = None         # (what it holds is not kept until the next call)
            done.put(None)


def _stop(all_jobs):
    for jobs in all_jobs:
        jobs.put(None)


def limit_blas(threads):
    """Let the loaded BLAS libraries use `threads` threads (through threadpoolctl; without
    it the BLAS keeps its own count). Returns the count set, or None when not set."""
    global blas_threads
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:
        blas_threads = threads      # nothing to set: do not retry the import every run
        return None
    with _blas_lock:
        if blas_threads != threads:
            # a fresh controller each time the count changes: it finds BLAS libraries loaded
            # since the last call (scipy's OpenBLAS loads with the first compiled np.dot)
            ThreadpoolController().limit(limits=threads, user_api="blas")
            blas_threads = threads
        return threads


def one_thread_blas():
    """Run the loaded BLAS libraries at one thread (cheap once done). scipy's BLAS, which
    numba's products call, is imported first so that its library is among those limited."""
    if blas_threads != 1:
        import scipy.linalg.cython_blas  # noqa: F401 (loads scipy's OpenBLAS)
        limit_blas(1)


# the variables each threading runtime reads for its pool size
THREAD_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMBA_NUM_THREADS",
               "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS")


def worker_env(environ, threads):
    """A copy of `environ` for a process that may use `threads` threads and must not spin."""
    env = dict(environ)
    env.update({k: str(threads) for k in THREAD_VARS})
    env.update(OMP_WAIT_POLICY="PASSIVE",       # GNU / LLVM OpenMP: sleep when idle
               KMP_BLOCKTIME="0",               # Intel OpenMP (MKL, oneDNN in torch/paddle)
               OPENBLAS_THREAD_TIMEOUT="4")     # OpenBLAS: shortest spin before sleeping
    if threads == 1:    # XLA's CPU client sizes its own pool from the cores otherwise
        env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") + " --xla_cpu_multi_thread_eigen=false "
                            "intra_op_parallelism_threads=1").strip()
    return env
