"""`cblas_gemm`: numpy's own OpenBLAS CBLAS `?gemm` (what `np.dot` runs from Python) callable
from njit code, not scipy's (what `np.dot` runs inside njit); gemm_cpu.gemm calls it.

Why: the two wheels bundle different OpenBLAS builds (numpy's 0.3.31, scipy's 0.3.30, both
on Haswell kernels here), and at the 16-64 output channels of a CIFAR ResNet's convolutions
scipy's is up to 1.8x slower. One thread, time.thread_time, same run: (16 x 144) @
(144 x 1024) (a 3x3 conv, 16 channels, 32x32) 161 us in njit's np.dot, 102 us here;
(32 x 288) @ (288 x 256) 127 -> 86 us; (64 x 576) @ (576 x 64) 102 -> 80 us.

The CBLAS address is registered with LLVM under a name of ours, so kernels calling it stay cacheable on disk. Where numpy's wheel has no such
library (numpy built on another BLAS), `HAVE_NUMPY_BLAS` is False and `cblas_gemm` must
not be called (gemm_cpu.gemm then takes scipy's through numba).
"""
import ctypes
import glob
import os

import numpy as np
from numba import njit, types

_ROW_MAJOR, _NO_TRANS, _TRANS = 101, 111, 112


def _numpy_cblas():
    """{'s': address, 'd': address} of numpy's bundled CBLAS sgemm / dgemm (ILP64), or None."""
    for path in sorted(glob.glob(os.path.join(os.path.dirname(np.__file__) + ".libs",
                                              "libscipy_openblas64_*"))):
        try:
            lib = ctypes.CDLL(path)
            return {t: ctypes.cast(getattr(lib, f"scipy_cblas_{t}gemm64_"), ctypes.c_void_p).value
                    for t in "sd"}
        except (OSError, AttributeError):
            continue
    return None


def _externals():
    import llvmlite.binding as ll
    found = _numpy_cblas()
    # without numpy's library the names still need an address to link; nothing calls them
    addr = found or dict.fromkeys("sd", ctypes.cast(ctypes.pythonapi.Py_IncRef,
                                                    ctypes.c_void_p).value)
    i8, p = types.int64, types.voidptr
    ext = []
    for t, f in (("s", types.float32), ("d", types.float64)):
        ll.add_symbol(f"numbaflow_numpy_cblas_{t}gemm", addr[t])
        ext.append(types.ExternalFunction(f"numbaflow_numpy_cblas_{t}gemm", types.void(
            i8, i8, i8, i8, i8, i8, f, p, i8, p, i8, f, p, i8)))
    return found is not None, *ext


HAVE_NUMPY_BLAS, _sgemm, _dgemm = _externals()


@njit(nogil=True, cache=True)
def cblas_gemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, out, ldc):
    """Row-major out (m x n, leading dimension ldc) = alpha op(a) @ op(b) + beta out, a and
    b row-major in memory with leading dimensions lda and ldb, through numpy's CBLAS
    (only where HAVE_NUMPY_BLAS)."""
    t_a, t_b = _TRANS if ta else _NO_TRANS, _TRANS if tb else _NO_TRANS
    if out.itemsize == 4:
        _sgemm(_ROW_MAJOR, t_a, t_b, m, n, k, alpha, a.ctypes, lda, b.ctypes, ldb, beta,
               out.ctypes, ldc)
    else:
        _dgemm(_ROW_MAJOR, t_a, t_b, m, n, k, alpha, a.ctypes, lda, b.ctypes, ldb, beta,
               out.ctypes, ldc)
