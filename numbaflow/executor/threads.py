"""One thread budget for numba's parallel loops, the BLAS and the concurrent workers.

A process may keep `budget()` threads busy: OMP_NUM_THREADS when the user set it, else the
cores it may run on (its affinity mask), never more than numba's NUMBA_NUM_THREADS. Work
that runs concurrently (data-parallel devices as threads, scheduler workers) shares it:
each of n concurrent runners gets `share(n)` numba threads.

The BLAS libraries loaded in the process (numpy's and scipy's OpenBLAS; numba's np.dot
calls scipy's) run at one thread once a program runs (`one_thread_blas`). Large products
(kernels/gemm_cpu.py), convolutions (kernels/conv.py) and depthwise convolutions are split
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
import threading

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
