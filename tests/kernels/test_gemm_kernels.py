"""linalg's CPU products (one BLAS call with run-time transposes) against numpy's matmul,
and `mul` / `matmul_v2` with their gradients through programs against numpy formulas."""
import numpy as np
import pytest

import numbaflow as paddle
from numbaflow import static
from numbaflow.kernels.math.gemm_cpu import batched_gemm, blas_scalars, gemm

RNG = np.random.default_rng(0)


def _op(a, t):
    return a.T if t else a


@pytest.mark.parametrize("dtype,tol", [(np.float32, 1e-5), (np.float64, 1e-12)])
@pytest.mark.parametrize("ta", [False, True])
@pytest.mark.parametrize("tb", [False, True])
@pytest.mark.parametrize("m,n,k", [(3, 2, 4), (40, 33, 17)])     # the small loop, BLAS
def test_gemm_matches_numpy_for_each_transpose(dtype, tol, ta, tb, m, n, k):
    a = RNG.standard_normal((k, m) if ta else (m, k)).astype(dtype)
    b = RNG.standard_normal((n, k) if tb else (k, n)).astype(dtype)
    out = np.full((m, n), np.nan, dtype)
    gemm(a, b, out, ta, tb, blas_scalars(dtype))
    np.testing.assert_allclose(out, _op(a, ta) @ _op(b, tb), rtol=tol, atol=tol * k)


def test_gemm_reads_column_major_operands_and_row_slices():
    a = np.asfortranarray(RNG.standard_normal((50, 30)))       # column-major
    big = RNG.standard_normal((30, 80))
    b = big[:, :40]                                             # rows of a wider buffer
    out = np.empty((50, 40))
    gemm(a, b, out, False, False, blas_scalars(np.float64))
    np.testing.assert_allclose(out, a @ b, rtol=1e-12)
    out2 = np.empty((30, 30))
    gemm(a, a, out2, True, False, blas_scalars(np.float64))    # a.T @ a
    np.testing.assert_allclose(out2, a.T @ a, rtol=1e-12)


def test_gemm_refuses_a_strided_view_instead_of_computing_garbage():
    a = RNG.standard_normal((60, 60))[::2, ::2]
    with pytest.raises(ValueError, match="neither row- nor column-major"):
        gemm(a, a, np.empty((30, 30)), False, False, blas_scalars(np.float64))


def test_gemm_empty_and_zero_inner_dimension():
    out = np.full((3, 4), np.nan, np.float32)
    gemm(np.ones((3, 0), np.float32), np.ones((0, 4), np.float32), out, False, False,
         blas_scalars(np.float32))
    np.testing.assert_array_equal(out, 0)
    gemm(np.ones((0, 5)), np.ones((5, 4)), np.empty((0, 4)), False, False,
         blas_scalars(np.float64))     # nothing to do, no BLAS argument error


def test_batched_gemm_with_broadcast_indices():
    x = RNG.standard_normal((2, 20, 30)).astype(np.float32)
    y = RNG.standard_normal((1, 40, 30)).astype(np.float32)
    ix, iy = np.array([0, 1, 0]), np.zeros(3, np.int64)
    out = np.empty((3, 20, 40), np.float32)
    batched_gemm(x, y, out, ix, iy, False, True, blas_scalars(np.float32))
    want = np.stack([x[i] @ y[0].T for i in ix])
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("tx,ty", [(False, False), (False, True), (True, False), (True, True)])
def test_matmul_and_its_gradients_in_a_program(tx, ty):
    """Out = op(X) @ op(Y) with Y broadcast over X's batch; dX, dY of sum(Out * W)."""
    xs = (2, 3, 16, 12) if tx else (2, 3, 12, 16)
    ys = (9, 16) if ty else (16, 9)
    x = RNG.standard_normal(xs).astype(np.float32)
    y = RNG.standard_normal(ys).astype(np.float32)
    w = RNG.standard_normal((2, 3, 12, 9)).astype(np.float32)
    paddle.enable_static()
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        X = static.data("X", list(xs), "float32")
        Y = static.data("Y", list(ys), "float32")
        W = static.data("W", list(w.shape), "float32")
        X.stop_gradient = Y.stop_gradient = False
        out = paddle.matmul(X, Y, transpose_x=tx, transpose_y=ty)
        loss = paddle.sum(out * W)
        dx, dy = static.gradients([loss], [X, Y])
    exe = static.Executor(paddle.CPUPlace())
    got = exe.run(main, feed={"X": x, "Y": y, "W": w}, fetch_list=[out, dx, dy])
    xm, ym = np.swapaxes(x, -1, -2) if tx else x, (y.T if ty else y)
    np.testing.assert_allclose(got[0], xm @ ym, rtol=1e-4, atol=1e-4)
    dxm = w @ ym.T                          # d loss / d op(X)
    np.testing.assert_allclose(got[1], np.swapaxes(dxm, -1, -2) if tx else dxm,
                               rtol=1e-4, atol=1e-4)
    dym = np.einsum("bhik,bhij->kj", xm, w)     # summed over the broadcast batch
    np.testing.assert_allclose(got[2], dym.T if ty else dym, rtol=1e-4, atol=1e-3)


def test_matmul_forward_and_backward_share_one_batched_gemm_compile():
    """The batch indices are always writable arrays: a read-only broadcast view is another
    numba type, so forward and gradient products compiled batched_gemm three times."""
    test_matmul_and_its_gradients_in_a_program(False, True)
    assert batched_gemm.overloads
    assert all(sig[3].mutable and sig[4].mutable for sig in batched_gemm.overloads)
