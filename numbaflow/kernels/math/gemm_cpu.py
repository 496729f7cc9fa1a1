"""Matrix products on the CPU: BLAS ?gemm called from njit (`gemm`, `batched_gemm`: numpy's
OpenBLAS where its wheel carries one, blas_numpy.py, else scipy's through numba), and
the same over the op's threads: one large product split into blocks of output rows (or
columns), a batch of products split over its items, each worker claiming the next block
or item (workshare.py) and calling the BLAS on it.

The BLAS runs at one thread in the whole process (executor/threads.py): with a threaded
BLAS under numba's threaded kernels, two cores ran four busy threads (a ResNet step 1.7x
slower at 2 threads than at 1); here every product of `GEMM_PARALLEL_MIN` multiply-adds
or more gets the whole thread budget, and smaller ones run on the caller's thread.
`gemm_call` / `batched_call` pick the kernel at bind time.
"""
import functools

import numba
import numpy as np
from numba import njit, types

from ..registry import run_calls
from ..workshare import bind_workers, claim
from .blas_numpy import HAVE_NUMPY_BLAS, cblas_gemm

SMALL_GEMM = 4096     # m*n*k up to which a plain loop beats the BLAS call's fixed cost

# numba's own C helper for BLAS ?gemm (what np.dot calls inside njit; numba's np.linalg.pinv
# calls it by name the same way), declared with void pointers so that one kernel serves
# float32 and float64 and the transposes are run-time flags: np.dot instead compiles one
# inlined BLAS call per operand layout (C / F), and the products here need four.
_xxgemm = types.ExternalFunction("numba_xxgemm", types.intc(
    types.char, types.char, types.char, types.intp, types.intp, types.intp, types.voidptr,
    types.voidptr, types.intp, types.voidptr, types.intp, types.voidptr, types.voidptr,
    types.intp))
_N, _T, _S, _D = ord("n"), ord("t"), ord("s"), ord("d")   # (chars: ord() in njit compiles str)


def blas_scalars(dtype):
    """The [alpha, beta] = [1, 0] array that `gemm` / `batched_gemm` take, in `dtype`:
    BLAS reads both through pointers, in the operands' dtype."""
    return np.array([1, 0], dtype=dtype)


@njit(nogil=True, cache=True)
def _row_major(a, t):
    """(transposed, leading dimension) of the 2-D `a` (read as op(a) = a.T when `t`) as the
    row-major matrix its memory holds: a column-major `a` is the row-major a.T."""
    s = a.itemsize
    r, c = a.shape
    if (c == 1 or a.strides[1] == s) and (r == 1 or a.strides[0] >= c * s):
        return t, a.strides[0] // s if r > 1 else c
    if (r == 1 or a.strides[0] == s) and (c == 1 or a.strides[1] >= r * s):
        return not t, a.strides[1] // s if c > 1 else r
    raise ValueError("gemm: an operand is neither row- nor column-major (a strided view): "
                     "pass a contiguous copy")


@njit(nogil=True, cache=True)
def gemm(a, b, out, ta, tb, ab):
    """out = op(a) @ op(b), op(a) = a.T when `ta`; `ab` = blas_scalars(out.dtype); `out`
    C-contiguous (a view into a buffer), the operands row- or column-major."""
    m, n = out.shape
    k = a.shape[0] if ta else a.shape[1]
    if m == 0 or n == 0:
        return
    if m * n * k <= SMALL_GEMM:     # tiny products (the seed model's 10x1 @ 1x10): no BLAS
        av = a.T if ta else a       # (typed as strided views: one loop for every case)
        bv = b.T if tb else b
        for i in range(m):
            for j in range(n):
                acc = 0.0
                for p in range(k):
                    acc += av[i, p] * bv[p, j]
                out[i, j] = acc
        return
    if n > 1 and out.strides[1] != out.itemsize:
        raise ValueError("gemm: the output must be row-major (C order)")
    ta, lda = _row_major(a, ta)
    tb, ldb = _row_major(b, tb)
    ldc = out.strides[0] // out.itemsize if m > 1 else n
    if HAVE_NUMPY_BLAS:     # (frozen at compile time: a kernel cache follows numpy's wheel)
        cblas_gemm(ta, tb, m, n, k, 1.0, a, lda, b, ldb, 0.0, out, ldc)
        return
    # scipy's Fortran BLAS: row-major out = op(a) @ op(b) is column-major out.T =
    # op(b).T @ op(a).T, so it gets b's memory first (a row-major matrix is its transpose,
    # column-major). (numba's helper imports scipy's BLAS at its first call; < 0: scipy is missing)
    if _xxgemm(_S if ab.itemsize == 4 else _D, _T if tb else _N, _T if ta else _N, n, m, k,
               ab[0:].ctypes, b.ctypes, ldb, a.ctypes, lda, ab[1:].ctypes, out.ctypes,
               ldc) < 0:
        raise RuntimeError("gemm: no BLAS (numba takes it from scipy: pip install scipy)")


@njit(nogil=True, cache=True)
def batched_gemm(x, y, out, ix, iy, tx, ty, ab):
    """out[b] = op(x[ix[b]]) @ op(y[iy[b]]) (see gemm)."""
    for b in range(out.shape[0]):
        gemm(x[ix[b]], y[iy[b]], out[b], tx, ty, ab)


@njit(nogil=True, cache=True)
def accumulate_batches(src, dst, idx):
    dst[:] = 0
    for b in range(src.shape[0]):
        dst[idx[b]] += src[b]


# multiply-adds from which a product is split over the threads (~0.1 ms at one thread;
# waking the pool costs ~30 us)
GEMM_PARALLEL_MIN = 1 << 21
BLOCKS_PER_THREAD = 4   # claims per worker on a quiet machine: room to rebalance on a busy one


def gemm_threads(m, n, k, batch, threads):
    """Workers for `batch` products of m x n x k (1: the serial kernel)."""
    if batch * m * n * k < GEMM_PARALLEL_MIN or threads <= 1:
        return 1
    return threads


def block_size(dim, threads):
    """Rows (or columns) per claimed block: BLOCKS_PER_THREAD blocks per worker, at least 16."""
    return max(16, -(-dim // (threads * BLOCKS_PER_THREAD)))


@njit(nogil=True, cache=True)
def gemm_worker(a, b, out, ta, tb, ab, block, counter):
    """A worker of gemm(a, b, out, ta, tb, ab) claiming blocks of `block` output rows (or
    columns, when out has more columns than rows) until none is left."""
    m, n = out.shape
    rows = m >= n
    dim = m if rows else n
    blocks = -(-dim // block)
    i = claim(counter)
    while i < blocks:
        lo, hi = i * block, min(i * block + block, dim)
        if rows:
            gemm(a[:, lo:hi] if ta else a[lo:hi], b, out[lo:hi], ta, tb, ab)
        else:
            gemm(a, b[lo:hi] if tb else b[:, lo:hi], out[:, lo:hi], ta, tb, ab)
        i = claim(counter)


@njit(nogil=True, cache=True)
def batched_gemm_worker(x, y, out, ix, iy, tx, ty, ab, counter):
    """A worker of out[b] = op(x[ix[b]]) @ op(y[iy[b]]) claiming batch items."""
    b = claim(counter)
    while b < out.shape[0]:
        gemm(x[ix[b]], y[iy[b]], out[b], tx, ty, ab)
        b = claim(counter)


# A product whose inner dimension k is SPLIT_K_RATIO x its largest output side or more (a
# weight gradient X^T @ dOut over a batch of rows) sums SPLIT_K_CHUNKS partial products over
# slices of k, each claimed by a worker, instead of splitting its small output: 1.2-2.4x
# faster on the GPT's fc gradients (2048 and 8192 rows x 65-512 x 128-512; 2 threads). The
# chunks are fixed, so the order of the sum, hence the result, does not depend on the threads.
SPLIT_K_RATIO = 4
SPLIT_K_CHUNKS = 4


@njit(nogil=True, cache=True)
def split_k_worker(a, b, part, ta, tb, ab, counter):
    """A worker of part[c] = op(a)[:, slice c of k] @ op(b)[slice c of k, :], claiming c."""
    k = a.shape[0] if ta else a.shape[1]
    chunks = part.shape[0]
    size = -(-k // chunks)
    c = claim(counter)
    while c < chunks:
        lo, hi = min(k, c * size), min(k, c * size + size)
        if hi == lo:
            part[c][:, :] = 0
        else:
            gemm(a[lo:hi] if ta else a[:, lo:hi], b[:, lo:hi] if tb else b[lo:hi], part[c],
                 ta, tb, ab)
        c = claim(counter)


@njit(nogil=True, cache=True)
def sum_parts(part, out):
    """out = part[0] + part[1] + ... in that order."""
    out[:, :] = part[0]
    for c in range(1, part.shape[0]):
        out += part[c]


def gemm_call(a, b, out, ta, tb, ab):
    """The call computing out = op(a) @ op(b) (see gemm): over the threads when large."""
    m, n = out.shape
    k = a.shape[0] if ta else a.shape[1]
    T = gemm_threads(m, n, k, 1, numba.get_num_threads())
    if k >= SPLIT_K_RATIO * max(m, n) and m * n * k >= GEMM_PARALLEL_MIN:
        part = np.empty((SPLIT_K_CHUNKS, m, n), out.dtype)
        workers = bind_workers(split_k_worker, (a, b, part, ta, tb, ab),
                               [()] * min(T, SPLIT_K_CHUNKS))
        return functools.partial(run_calls, (workers, functools.partial(sum_parts, part, out)))
    if T == 1:
        return functools.partial(gemm, a, b, out, ta, tb, ab)
    return bind_workers(gemm_worker, (a, b, out, ta, tb, ab, block_size(max(m, n), T)), [()] * T)


def batched_call(x, y, out, ix, iy, tx, ty, ab):
    """The call computing out[b] = op(x[ix[b]]) @ op(y[iy[b]]): one product split over
    the threads, or the batch split over them, when large."""
    if out.shape[0] == 1:
        return gemm_call(x[ix[0]], y[iy[0]], out[0], tx, ty, ab)
    m, n = out.shape[1:]
    k = x.shape[1] if tx else x.shape[2]
    T = gemm_threads(m, n, k, out.shape[0], min(numba.get_num_threads(), out.shape[0]))
    if T == 1:
        return functools.partial(batched_gemm, x, y, out, ix, iy, tx, ty, ab)
    return bind_workers(batched_gemm_worker, (x, y, out, ix, iy, tx, ty, ab), [()] * T)
