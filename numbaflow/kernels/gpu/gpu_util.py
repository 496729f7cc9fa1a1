"""Shared pieces of the hand-written CUDA kernels (OpDef.gpu factories).

Nothing here imports numba.cuda at module import: `import numbaflow` must work (and stay
fast) without a GPU stack, so every kernel is defined inside a builder function that runs
on first use (`lazy`) and is cached for the process. A kernel factory calls e.g.
`common().fill` at bind time, never at import.

The simulator (NUMBA_ENABLE_CUDASIM=1) swaps the fake `cuda` module into a kernel's
*module globals* for the launch, and into a device function's module around each call,
which races between threads when the two live in different modules. So every builder
binds `cuda` as a module global (`global cuda`), and the kernels that call the shared
device functions (the row kernels: reductions, softmax, the losses' rows, accuracy) are
all built here, next to those functions; ops' own files hold the flat kernels.

Conventions (all kernels): device arrays are C-contiguous; 1-D kernels use grid-stride
loops over flat indices (`launch_dims`), so any size works with a bounded grid; row
kernels give one block of RED_THREADS threads to each reduced row (blocks stride over
rows) and combine the per-thread partials with a shared-memory tree in float64, which is
also what the CPU kernels accumulate in.
"""
import functools
import math

import numpy as np
from numba import config as numba_config
from numba import float64, int64

from .gpu_errors import ERR_ACCURACY, ERR_SWCE  # what the row kernels below record

cuda = None   # numba.cuda, bound by the builders on first use (see above)

# The simulator (NUMBA_ENABLE_CUDASIM=1) runs every thread as a Python thread, so there
# blocks are smaller; every kernel is written for any power-of-two block size.
SIMULATED = bool(numba_config.ENABLE_CUDASIM)
THREADS = 64 if SIMULATED else 256       # threads per block of the flat (grid-stride) kernels
MAX_BLOCKS = 1024    # grid cap of the flat kernels; the loops stride over the rest
RED_THREADS = 32 if SIMULATED else 128   # most threads per block of the row kernels
MIN_ROW_THREADS = 1 if SIMULATED else 32  # fewest (rows shorter than RED_THREADS)
MAX_ROW_BLOCKS = 4096
SUM, MEAN, MAX, MIN = 0, 1, 2, 3   # reduction kinds (shared with reduction.py)



def launch_rows(kernel, rows, length, *args):
    """A thunk launching a row kernel (one block per row of `length`) on `args`."""
    return functools.partial(configured(kernel, *row_dims(rows, length)), *args)


def launch_flat(kernel, n, *args):
    """A thunk launching a grid-stride kernel over n items on `args`."""
    return functools.partial(configured(kernel, *launch_dims(n)), *args)


def launch_dims(n, threads=THREADS):
    """(blocks, threads) for a grid-stride loop over n items."""
    return max(1, min(MAX_BLOCKS, math.ceil(n / threads))), threads


def row_dims(rows, length):
    """(blocks, threads) for a row kernel: one block per row (blocks stride over the
    rest), with the power of two of threads that covers `length` elements, between
    MIN_ROW_THREADS (a warp) and RED_THREADS."""
    threads = 1 << max(0, int(length) - 1).bit_length()
    return max(1, min(MAX_ROW_BLOCKS, rows)), max(MIN_ROW_THREADS, min(RED_THREADS, threads))


def configured(kernel, grid, block):
    """`kernel[grid, block]`, safe to keep in a thunk. The simulator's `__getitem__` sets
    the grid on the kernel object itself and returns it, so two thunks of one kernel
    would share the last grid; there the configuration is applied at each call."""
    from numba import config
    if config.ENABLE_CUDASIM:
        return functools.partial(_launch_now, kernel, grid, block)
    return kernel[grid, block]


def _launch_now(kernel, grid, block, *args):
    kernel[grid, block](*args)


def flat(a):
    """A 1-D view of a C-contiguous device array (0-D arrays become shape (1,))."""
    return a.reshape(a.size) if a.ndim else a.reshape(1)


def lazy(builder):
    """Decorator: run `builder(*args)` once per distinct args (e.g. a dtype) on first use
    and keep what it returns (a namespace of compiled kernels)."""
    return functools.lru_cache(maxsize=None)(builder)


def to_device(a):
    from numba import cuda
    return cuda.to_device(np.ascontiguousarray(a))


def call_all(calls):
    for c in calls:
        c()


def sequence(calls):
    """One thunk running `calls` in order (the only call itself when there is one)."""
    calls = tuple(calls)
    if not calls:
        return lambda: None
    return calls[0] if len(calls) == 1 else functools.partial(call_all, calls)


class Kernels:
    """The kernels of one lazily built family, as attributes (`common().tree`)."""
    def __init__(self, **kw):
        self.__dict__.update(kw)


@lazy
def common():
    """The shared kernels and device functions."""
    global cuda
    from numba import cuda

    T = RED_THREADS

    @cuda.jit(device=True)
    def tree(sh, tid, kind):
        """Combine sh[0:blockDim.x] (one partial per thread; blockDim.x a power of two
        <= T) into sh[0] (sum, max or min), then return it to every thread; sh is free
        for reuse when this returns."""
        s = cuda.blockDim.x // 2
        while s > 0:
            if tid < s:
                a, b = sh[tid], sh[tid + s]
                if kind == MAX:
                    sh[tid] = a if a >= b else b
                elif kind == MIN:
                    sh[tid] = a if a <= b else b
                else:
                    sh[tid] = a + b
            cuda.syncthreads()
            s //= 2
        v = sh[0]
        cuda.syncthreads()
        return v

    @cuda.jit(device=True)
    def row_reduce(x3, a, c, sh, kind):
        """sum / max / min of x3[a, :, c] over the block (float64)."""
        tid = cuda.threadIdx.x
        R = x3.shape[1]
        if kind == MAX:
            acc = -math.inf
        elif kind == MIN:
            acc = math.inf
        else:
            acc = 0.0
        for r in range(tid, R, cuda.blockDim.x):
            v = float64(x3[a, r, c])
            if kind == MAX:
                acc = v if v > acc else acc
            elif kind == MIN:
                acc = v if v < acc else acc
            else:
                acc += v
        sh[tid] = acc
        cuda.syncthreads()
        return tree(sh, tid, kind)

    @cuda.jit(device=True)
    def softmax_row(x3, out3, a, c, sh, log):
        """out3[a, :, c] = softmax (or log_softmax) of x3[a, :, c]; returns (max, log of
        the sum of exp(x - max)) for the cross-entropy kernels."""
        tid = cuda.threadIdx.x
        R = x3.shape[1]
        m = row_reduce(x3, a, c, sh, MAX)
        acc = 0.0
        for r in range(tid, R, cuda.blockDim.x):
            acc += math.exp(float64(x3[a, r, c]) - m)
        sh[tid] = acc
        cuda.syncthreads()
        ls = math.log(tree(sh, tid, SUM))
        for r in range(tid, R, cuda.blockDim.x):
            z = float64(x3[a, r, c]) - m - ls
            out3[a, r, c] = z if log else math.exp(z)
        return m, ls

    @cuda.jit(cache=True)
    def fill(out, value):
        for i in range(cuda.grid(1), out.shape[0], cuda.gridsize(1)):
            out[i] = value

    @cuda.jit(cache=True)
    def strided_copy(src, dst, shape, sstr, dstr, soff, doff):
        """dst[doff + idx . dstr] = src[soff + idx . sstr] for every index idx of `shape`
        (flat src / dst): transposes, concat and split blocks."""
        n = 1
        for d in range(shape.shape[0]):
            n *= shape[d]
        for i in range(cuda.grid(1), n, cuda.gridsize(1)):
            rem = i
            so = soff
            do = doff
            for d in range(shape.shape[0] - 1, -1, -1):
                q = rem // shape[d]
                k = rem - q * shape[d]
                rem = q
                so += k * sstr[d]
                do += k * dstr[d]
            dst[do] = src[so]

    # ------------------------------------------------ reductions (reduction.py)
    @cuda.jit(cache=True)
    def reduce_rows(x3, out2, kind):
        sh = cuda.shared.array(T, float64)
        A, R, C = x3.shape
        for o in range(cuda.blockIdx.x, A * C, cuda.gridDim.x):
            a = o // C
            c = o - a * C
            v = row_reduce(x3, a, c, sh, kind)
            if cuda.threadIdx.x == 0:
                out2[a, c] = v / R if kind == MEAN else v

    @cuda.jit(cache=True)
    def reduce_cols(x3, out2, kind):
        A, R, C = x3.shape
        for o in range(cuda.grid(1), A * C, cuda.gridsize(1)):
            a = o // C
            c = o - a * C
            acc = float64(x3[a, 0, c])
            for r in range(1, R):
                v = float64(x3[a, r, c])
                if kind == MAX:
                    acc = v if v > acc else acc
                elif kind == MIN:
                    acc = v if v < acc else acc
                else:
                    acc += v
            out2[a, c] = acc / R if kind == MEAN else acc

    @cuda.jit(cache=True)
    def reduce_grad(x, out, dout, dx, shape, ostr, kind, n):
        # dx[i] from dout[j], j = i's output index (stride 0 along the reduced axes)
        for i in range(cuda.grid(1), dx.shape[0], cuda.gridsize(1)):
            rem = i
            j = 0
            for d in range(shape.shape[0] - 1, -1, -1):
                q = rem // shape[d]
                j += (rem - q * shape[d]) * ostr[d]
                rem = q
            if kind == MAX or kind == MIN:
                dx[i] = dout[j] if x[i] == out[j] else 0.0
            elif kind == MEAN:
                dx[i] = dout[j] / n
            else:
                dx[i] = dout[j]

    @cuda.jit(cache=True)
    def argmax_rows(x3, out2):
        # (value, index) tree; ties keep the lower index (the CPU kernel's first maximum)
        sv = cuda.shared.array(T, float64)
        si = cuda.shared.array(T, int64)
        tid = cuda.threadIdx.x
        A, R, C = x3.shape
        for o in range(cuda.blockIdx.x, A * C, cuda.gridDim.x):
            a = o // C
            c = o - a * C
            best, bi = -math.inf, R
            for r in range(tid, R, cuda.blockDim.x):
                v = float64(x3[a, r, c])
                if bi == R or v > best:
                    best, bi = v, r
            sv[tid], si[tid] = best, bi
            cuda.syncthreads()
            s = cuda.blockDim.x // 2
            while s > 0:
                if tid < s:
                    v2, i2 = sv[tid + s], si[tid + s]
                    if i2 < R and (si[tid] >= R or v2 > sv[tid] or
                                   (v2 == sv[tid] and i2 < si[tid])):
                        sv[tid], si[tid] = v2, i2
                cuda.syncthreads()
                s //= 2
            if tid == 0:
                out2[a, c] = si[0]
            cuda.syncthreads()

    @cuda.jit(cache=True)
    def softmax_rows(x3, out3, log):
        sh = cuda.shared.array(T, float64)
        A, R, C = x3.shape
        for o in range(cuda.blockIdx.x, A * C, cuda.gridDim.x):
            a = o // C
            softmax_row(x3, out3, a, o - a * C, sh, log)

    @cuda.jit(cache=True)
    def softmax_grad_rows(out3, dout3, dx3, log):
        sh = cuda.shared.array(T, float64)
        tid = cuda.threadIdx.x
        A, R, C = out3.shape
        for o in range(cuda.blockIdx.x, A * C, cuda.gridDim.x):
            a = o // C
            c = o - a * C
            acc = 0.0
            for r in range(tid, R, cuda.blockDim.x):
                acc += float64(dout3[a, r, c]) if log else \
                    float64(dout3[a, r, c]) * float64(out3[a, r, c])
            sh[tid] = acc
            cuda.syncthreads()
            s = tree(sh, tid, SUM)
            for r in range(tid, R, cuda.blockDim.x):
                if log:
                    dx3[a, r, c] = dout3[a, r, c] - math.exp(float64(out3[a, r, c])) * s
                else:
                    dx3[a, r, c] = out3[a, r, c] * (dout3[a, r, c] - s)

    # ------------------------------------------------ losses (loss.py), accuracy
    # An out-of-range hard label: loss 0 and the failure in the error record (see above).
    @cuda.jit(cache=True)
    def swce_hard_rows(x3, label2, sm3, loss2, ignore, err):
        sh = cuda.shared.array(T, float64)
        A, R, C = x3.shape
        for o in range(cuda.blockIdx.x, A * C, cuda.gridDim.x):
            a = o // C
            c = o - a * C
            m, ls = softmax_row(x3, sm3, a, c, sh, False)
            if cuda.threadIdx.x == 0:
                lab = label2[a, c]
                if lab == ignore:
                    loss2[a, c] = 0.0
                elif lab < 0 or lab >= R:
                    loss2[a, c] = 0.0
                    if cuda.atomic.compare_and_swap(err, 0, ERR_SWCE) == 0:
                        err[1], err[2], err[3] = lab, o, R
                else:
                    loss2[a, c] = ls - (float64(x3[a, lab, c]) - m)

    @cuda.jit(cache=True)
    def swce_soft_rows(x3, label3, sm3, loss2):
        sh = cuda.shared.array(T, float64)
        tid = cuda.threadIdx.x
        A, R, C = x3.shape
        for o in range(cuda.blockIdx.x, A * C, cuda.gridDim.x):
            a = o // C
            c = o - a * C
            m, ls = softmax_row(x3, sm3, a, c, sh, False)
            acc = 0.0
            for r in range(tid, R, cuda.blockDim.x):
                acc += float64(label3[a, r, c]) * (float64(x3[a, r, c]) - m - ls)
            sh[tid] = acc
            cuda.syncthreads()
            s = tree(sh, tid, SUM)
            if tid == 0:
                loss2[a, c] = -s

    @cuda.jit(cache=True)
    def swce_soft_grad_rows(label3, sm3, dloss2, dx3):
        # softmax * sum(label) - label: exact even when the labels do not sum to 1
        sh = cuda.shared.array(T, float64)
        A, R, C = sm3.shape
        for o in range(cuda.blockIdx.x, A * C, cuda.gridDim.x):
            a = o // C
            c = o - a * C
            t = row_reduce(label3, a, c, sh, SUM)
            d = float64(dloss2[a, c])
            for r in range(cuda.threadIdx.x, R, cuda.blockDim.x):
                dx3[a, r, c] = (sm3[a, r, c] * t - label3[a, r, c]) * d

    @cuda.jit(cache=True)
    def xent_soft_rows(x2, label2, y):
        sh = cuda.shared.array(T, float64)
        tid = cuda.threadIdx.x
        N, D = x2.shape
        for i in range(cuda.blockIdx.x, N, cuda.gridDim.x):
            acc = 0.0
            for j in range(tid, D, cuda.blockDim.x):
                acc += float64(label2[i, j]) * math.log(float64(x2[i, j]))
            sh[tid] = acc
            cuda.syncthreads()
            s = tree(sh, tid, SUM)
            if tid == 0:
                y[i] = -s

    @cuda.jit(cache=True)
    def accuracy_block(x2, label, k, acc, correct, total, err):
        # one block: threads take rows; a row is correct when fewer than k scores beat
        # the label's; an out-of-range label makes Accuracy NaN and goes into the record
        sh = cuda.shared.array(T, float64)
        tid = cuda.threadIdx.x
        N, C = x2.shape
        ok, bad = 0.0, 0.0
        for i in range(tid, N, cuda.blockDim.x):
            lab = label[i]
            if lab < 0 or lab >= C:
                bad += 1.0
                if cuda.atomic.compare_and_swap(err, 0, ERR_ACCURACY) == 0:
                    err[1], err[2], err[3] = lab, i, C
                continue
            s = x2[i, lab]
            above = 0
            for j in range(C):
                if x2[i, j] > s:
                    above += 1
            if above < k:
                ok += 1.0
        sh[tid] = ok
        cuda.syncthreads()
        n_ok = tree(sh, tid, SUM)
        sh[tid] = bad
        cuda.syncthreads()
        n_bad = tree(sh, tid, SUM)
        if tid == 0:
            correct[0] = int64(n_ok)
            total[0] = N
            if n_bad > 0:
                acc[0] = math.nan
            else:
                acc[0] = n_ok / N if N > 0 else 0.0

    return Kernels(tree=tree, row_reduce=row_reduce, softmax_row=softmax_row, fill=fill,
               strided_copy=strided_copy, reduce_rows=reduce_rows, reduce_cols=reduce_cols,
               reduce_grad=reduce_grad, argmax_rows=argmax_rows, softmax_rows=softmax_rows,
               softmax_grad_rows=softmax_grad_rows, swce_hard_rows=swce_hard_rows,
               swce_soft_rows=swce_soft_rows, swce_soft_grad_rows=swce_soft_grad_rows,
               xent_soft_rows=xent_soft_rows, accuracy_block=accuracy_block)


# ---------------------------------------------------------------- thunk builders
def fill_thunk(out, value):
    """A thunk filling device array `out` with `value` (cast to out's dtype on the host)."""
    f = flat(out)
    v = np.array(value).astype(out.dtype)[()]
    if out.dtype == np.bool_:
        v = bool(v)
    launch = configured(common().fill, *launch_dims(f.size))
    return functools.partial(launch, f, v)


def copy_thunk(src, dst):
    """A thunk copying src into dst (same number of elements), device to device."""
    s, d = flat(src), flat(dst)
    if s.size == 0:
        return lambda: None
    return functools.partial(d.copy_to_device, s)


def c_strides(shape):
    """The C-order strides, in elements, of `shape`."""
    out, acc = [], 1
    for n in reversed(shape):
        out.append(acc)
        acc *= n
    return out[::-1]


def strided_copy_thunk(src, dst, shape, sstr, dstr, soff=0, doff=0):
    """A thunk for `strided_copy` (strides and offsets in elements, shape of the walk)."""
    n = int(np.prod(shape)) if len(shape) else 1
    if n == 0:
        return lambda: None
    shape = shape or (1,)
    sstr, dstr = sstr or (0,), dstr or (0,)
    args = [to_device(np.array(a, np.int64)) for a in (shape, sstr, dstr)]
    launch = configured(common().strided_copy, *launch_dims(n))
    return functools.partial(launch, flat(src), flat(dst), *args, int(soff), int(doff))


def transpose_thunk(src, dst, perm):
    """dst = src.transpose(perm) (both C-contiguous device arrays)."""
    ss = c_strides(src.shape)
    return strided_copy_thunk(src, dst, tuple(dst.shape), [ss[p] for p in perm],
                              c_strides(dst.shape))


def block_copy_thunk(whole, part, ax, offset, into_whole):
    """Copy `part` into (into_whole) or out of the slice [offset:offset+n] along axis ax of
    `whole` (concat / split): the (A, R, C) view of reduction.py."""
    shape = whole.shape
    A = int(np.prod(shape[:ax]))
    C = int(np.prod(shape[ax + 1:]))
    R, r = shape[ax], part.shape[ax]
    walk, wstr, pstr = (A, r, C), (R * C, C, 1), (r * C, C, 1)
    if into_whole:
        return strided_copy_thunk(part, whole, walk, pstr, wstr, 0, offset * C)
    return strided_copy_thunk(whole, part, walk, wstr, pstr, offset * C, 0)
