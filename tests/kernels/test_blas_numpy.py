"""kernels/math/gemm_cpu.gemm as conv2d's CPU kernels call it (numpy's OpenBLAS from njit,
blas_numpy.cblas_gemm) against the product written out with einsum in float64: every
transpose combination, both dtypes, shapes across the BLAS kernels' block edges, empty
inner dimension, and called from inside an njit kernel on sub-views of a buffer."""
import numpy as np
import pytest
from numba import njit

from numbaflow.kernels.math.gemm_cpu import blas_scalars, gemm



def matmul(a, b, out, ta, tb):
    gemm(a, b, out, ta, tb, blas_scalars(out.dtype))


def _ref(a, b, ta, tb):
    a = a.astype(np.float64).T if ta else a.astype(np.float64)
    b = b.astype(np.float64).T if tb else b.astype(np.float64)
    return np.einsum("ik,kj->ij", a, b)


@pytest.mark.parametrize("dtype,tol", [(np.float32, 1e-4), (np.float64, 1e-12)])
@pytest.mark.parametrize("ta", [False, True])
@pytest.mark.parametrize("tb", [False, True])
@pytest.mark.parametrize("m,k,n", [(16, 144, 37), (1, 3, 1), (5, 1, 9), (17, 33, 65)])
def test_matmul_matches_einsum(dtype, tol, ta, tb, m, k, n):
    rng = np.random.default_rng(m * 1000 + k * 10 + n)
    a = rng.standard_normal((k, m) if ta else (m, k)).astype(dtype)
    b = rng.standard_normal((n, k) if tb else (k, n)).astype(dtype)
    out = np.full((m, n), np.nan, dtype)
    matmul(a, b, out, ta, tb)
    np.testing.assert_allclose(out, _ref(a, b, ta, tb), rtol=tol, atol=tol)


def test_empty_inner_dimension_gives_zeros():
    out = np.full((3, 4), np.nan, np.float32)
    matmul(np.empty((3, 0), np.float32), np.empty((0, 4), np.float32), out, False, False)
    assert (out == 0).all()


@njit(cache=False)
def _blocks(w, x, out, rows, ab):
    # the conv kernels' use: row blocks of an input, products into slices of a flat buffer
    size = w.shape[0] * x.shape[1]
    for b in range(x.shape[0] // rows):
        o = out[b * size:(b + 1) * size].reshape((w.shape[0], x.shape[1]))
        gemm(w, x[b * rows:(b + 1) * rows], o, False, False, ab)


def test_called_from_njit_on_views():
    rng = np.random.default_rng(0)
    w = rng.standard_normal((4, 6)).astype(np.float32)
    x = rng.standard_normal((12, 5)).astype(np.float32)   # two (6, 5) row blocks
    out = np.zeros(2 * 4 * 5, np.float32)
    _blocks(w, x, out, 6, blas_scalars(np.float32))
    for i in range(2):
        np.testing.assert_allclose(out[i * 20:(i + 1) * 20].reshape(4, 5),
                                   _ref(w, x[i * 6:(i + 1) * 6], False, False), rtol=1e-5,
                                   atol=1e-5)


def test_numpy_bundled_openblas_is_the_one_used():
    # a silent fall back to np.dot (scipy's BLAS, up to 1.8x slower at a CIFAR ResNet's
    # channel counts) would pass every other test: where numpy's wheel bundles OpenBLAS,
    # cblas_gemm must have found it
    import glob
    import os

    from numbaflow.kernels.math import blas_numpy
    bundled = glob.glob(os.path.join(os.path.dirname(np.__file__) + ".libs",
                                     "libscipy_openblas64_*"))
    assert blas_numpy.HAVE_NUMPY_BLAS == bool(bundled)
