"""Work shared over numba's threads by claiming, not by a fixed split.

A parallel kernel here runs one worker per thread (`prange(T)`, each with its own
scratch) and every worker claims the next piece of work (a sample, a block of rows, a
batch item) from one shared counter until none is left. A thread that is slow to start or
shares its core with another process simply claims fewer pieces, where a split fixed in
advance (numba's OpenMP layer schedules prange statically) makes the whole op wait for
the slowest thread: with one of two cores busy, that doubled every step.

The BLAS runs at one thread inside these workers (executor/threads.py: the BLAS never
threads on its own), so no parallel region nests another.

>>> import numpy as np
>>> counter = np.zeros(1, np.int64)
>>> [int(claim(counter)) for _ in range(3)]
[0, 1, 2]
"""
import numba
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
