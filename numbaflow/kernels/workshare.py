"""Work shared over threads by claiming, not by a fixed split.

A parallel kernel here is a serial `nogil` numba worker run on T threads at once
(`run_workers`: this thread and T - 1 of one pool's), each with its own scratch, and every
worker claims the next piece of work (a sample, a block of rows, a batch item) from one
shared counter until none is left. A thread that is slow to start or shares its core with
another process simply claims fewer pieces, where a split fixed in advance (numba's
OpenMP layer schedules prange statically) makes the whole op wait for the slowest thread:
with one of two cores busy, that doubled every step.

The workers are plain functions, not `parallel=True` ones: numba re-optimises every
callee inside a parfor's body, so a prange wrapper around conv2d's backward compiled for
18-24 s of CPU on a cold cache, the worker alone in 5-7 s; and one compiled worker serves
one thread and several.

The BLAS runs at one thread inside these workers (executor/threads.py: the BLAS never
threads on its own), so no parallel region nests another.

>>> import numpy as np
>>> counter = np.zeros(1, np.int64)
>>> [int(claim(counter)) for _ in range(3)]
[0, 1, 2]
"""
import functools
import threading
from concurrent.futures import ThreadPoolExecutor, wait

import numba
import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

# multiply-adds below which one thread does the whole op (waking the OpenMP pool costs ~30 us)
PARALLEL_MIN_WORK = 1 << 17


@intrinsic
def _fetch_add(typingctx, counter):
    """counter[0] += 1 atomically; returns the value before (LLVM atomicrmw)."""
    if not (isinstance(counter, types.Array) and counter.dtype == types.int64):
        return None

    def codegen(context, builder, sig, args):
        ary = context.make_array(sig.args[0])(context, builder, args[0])
        ptr = cgutils.get_item_pointer(context, builder, sig.args[0], ary,
                                       [context.get_constant(types.intp, 0)])
        return builder.atomic_rmw("add", ptr, ir.Constant(ir.IntType(64), 1), "monotonic")
    return types.int64(counter), codegen


@njit(nogil=True, cache=True)
def claim(counter):
    """The next unclaimed index of `counter` (an int64 array of one element, set to 0
    before the workers start), claimed atomically."""
    return _fetch_add(counter)


def parallel_threads(work, units):
    """Workers for an op of `work` multiply-adds over `units` independent pieces: numba's
    current thread count (the budget's share), at most `units`; 1 for small work."""
    if work < PARALLEL_MIN_WORK:
        return 1
    return max(1, min(numba.get_num_threads(), units))


# The pool's threads block on its queue when idle (no spinning); it grows to the largest T
# asked for, which parallel_threads bounds by numba's thread count (the budget's share).
_pool_lock = threading.Lock()
_pool = None


def _threads_pool(extra):
    global _pool
    with _pool_lock:
        if _pool is None or _pool._max_workers < extra:
            if _pool is not None:
                _pool.shutdown(wait=False)
            _pool = ThreadPoolExecutor(max_workers=extra, thread_name_prefix="numbaflow-work")
        return _pool


def run_workers(counter, calls):
    """Reset the claim `counter`, run the bound worker `calls` at once (the first on this
    thread, the others on the pool's) and return when every one is done; a worker's
    exception is raised here.

    >>> import numpy as np, functools
    >>> from numba import njit
    >>> @njit(nogil=True)
    ... def square_worker(x, counter):
    ...     i = claim(counter)
    ...     while i < x.shape[0]:
    ...         x[i] = x[i] * x[i]
    ...         i = claim(counter)
    >>> x, counter = np.arange(5.0), np.zeros(1, np.int64)
    >>> run_workers(counter, [functools.partial(square_worker, x, counter)] * 2)
    >>> x.tolist()
    [0.0, 1.0, 4.0, 9.0, 16.0]
    """
    counter[0] = 0
    if len(calls) == 1:
        calls[0]()
        return
    futures = [_threads_pool(len(calls) - 1).submit(c) for c in calls[1:]]
    try:
        calls[0]()
    finally:
        wait(futures)
    for f in futures:
        f.result()


def bind_workers(kernel, shared, own):
    """The call running `kernel(*shared, *own[t], counter)` for every worker t at once
    (`run_workers`; one worker: this thread alone), with a claim counter of its own."""
    counter = np.zeros(1, np.int64)
    calls = tuple(functools.partial(kernel, *shared, *mine, counter) for mine in own)
    return functools.partial(run_workers, counter, calls)
