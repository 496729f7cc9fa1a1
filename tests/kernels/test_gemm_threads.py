"""Products split over the op's threads (kernels/math/gemm_cpu.py): each worker claims blocks of
output rows or columns (or batch items) and calls the one-thread BLAS. At 1, 2 and 3
workers the results equal numpy's; through the `mul` / `matmul_v2` ops the gradients equal
finite differences; and a run leaves the BLAS at one thread (executor/threads.py)."""
import numpy as np
import pytest

import numbaflow as paddle
from numbaflow import static
from numbaflow.executor import threads
from numbaflow.kernels.math import gemm_cpu
from numbaflow.kernels import run_op
from numbaflow.kernels.math.gemm_cpu import batched_call, blas_scalars, gemm_call
from numbaflow.kernels.workshare import run_workers

RNG = np.random.default_rng(3)


def _op(a, t):
    return a.T if t else a


@pytest.fixture
def workers(monkeypatch):
    """Force `T` workers on every product, however small."""
    def force(T):
        monkeypatch.setattr(gemm_cpu, "gemm_threads", lambda m, n, k, batch, threads: T)
        monkeypatch.setattr(gemm_cpu, "block_size", lambda dim, threads: 5)   # many blocks
    return force


@pytest.mark.parametrize("T", [1, 2, 3])
@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (False, True), (True, True)])
@pytest.mark.parametrize("m,n", [(37, 11), (9, 41)])     # split by rows, split by columns
def test_split_product_matches_numpy(workers, T, ta, tb, m, n):
    workers(T)
    k = 23
    a = RNG.standard_normal((k, m) if ta else (m, k))
    b = RNG.standard_normal((n, k) if tb else (k, n))
    out = np.full((m, n), np.nan)
    call = gemm_call(a, b, out, ta, tb, blas_scalars(out.dtype))
    workers_bound = call.args[1] if call.func is run_workers else ()
    assert len(workers_bound) == (T if T > 1 else 0)
    call()
    np.testing.assert_allclose(out, _op(a, ta) @ _op(b, tb), rtol=1e-12, atol=1e-12)
    call()      # a second run re-arms the counter
    np.testing.assert_allclose(out, _op(a, ta) @ _op(b, tb), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("T", [1, 2, 3])
def test_split_batch_matches_numpy_with_broadcast_indices(workers, T):
    workers(T)
    x = RNG.standard_normal((2, 6, 7)).astype(np.float32)
    y = RNG.standard_normal((7, 7, 5)).astype(np.float32)
    ix, iy = np.arange(7) % 2, np.arange(7)
    out = np.full((7, 6, 5), np.nan, np.float32)
    batched_call(x, y, out, ix, iy, False, False, blas_scalars(out.dtype))()
    np.testing.assert_allclose(out, x[ix] @ y[iy], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("T", [1, 2, 3])
@pytest.mark.parametrize("op,attrs,xs,ys", [
    ("mul", {"x_num_col_dims": 1, "y_num_col_dims": 1}, (13, 6), (6, 9)),
    ("matmul_v2", {"trans_x": False, "trans_y": True}, (3, 4, 8, 6), (4, 5, 6)),
    ("matmul_v2", {"trans_x": True, "trans_y": False}, (6, 12), (6, 7)),
])
def test_split_ops_gradients_match_finite_differences(workers, T, op, attrs, xs, ys):
    workers(T)
    x, y = RNG.standard_normal(xs), RNG.standard_normal(ys)
    out = run_op(op, {"X": x, "Y": y}, attrs)["Out"]
    want = np.matmul(_op(x, attrs.get("trans_x")) if x.ndim == 2 else
                     np.swapaxes(x, -1, -2) if attrs.get("trans_x") else x,
                     np.swapaxes(y, -1, -2) if attrs.get("trans_y") else y)
    np.testing.assert_allclose(out, want, rtol=1e-12, atol=1e-12)
    d = RNG.standard_normal(out.shape)
    g = run_op(op + "_grad", {"X": x, "Y": y, "Out@GRAD": d}, attrs)
    eps = 1e-6
    for name, arr in (("X", x), ("Y", y)):
        v = RNG.standard_normal(arr.shape)
        ins = [{"X": x, "Y": y, name: arr + s * eps * v} for s in (1, -1)]
        fd = [float(np.sum(d * run_op(op, i, attrs)["Out"])) for i in ins]
        assert (fd[0] - fd[1]) / (2 * eps) == pytest.approx(float(np.sum(g[name + "@GRAD"] * v)),
                                                            rel=1e-6, abs=1e-6)


def test_a_run_leaves_the_blas_at_one_thread():
    threadpoolctl = pytest.importorskip("threadpoolctl")
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        x = static.data("x", [None, 4], "float32")
        out = paddle.mean(static.nn.fc(x, 3))
    threads.limit_blas(2)
    exe = static.Executor()
    exe.run(startup)
    exe.run(main, feed={"x": np.ones((2, 4), np.float32)}, fetch_list=[out])
    blas = [i for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"]
    assert blas and all(i["num_threads"] == 1 for i in blas), blas


@pytest.mark.parametrize("ta,tb", [(True, False), (False, False), (False, True)])
def test_a_long_inner_dimension_is_summed_in_fixed_chunks(workers, ta, tb):
    """k >= SPLIT_K_RATIO x the output's sides (a weight gradient over a batch): the sum
    over k is split into SPLIT_K_CHUNKS claimed slices; the result equals numpy's and is
    the same to the bit at 1, 2 and 3 workers (the chunks do not depend on them)."""
    m, n, k = 21, 40, 4099          # k * m * n above GEMM_PARALLEL_MIN
    assert k >= gemm_cpu.SPLIT_K_RATIO * max(m, n) and m * n * k >= gemm_cpu.GEMM_PARALLEL_MIN
    a = RNG.standard_normal((k, m) if ta else (m, k)).astype(np.float32)
    b = RNG.standard_normal((n, k) if tb else (k, n)).astype(np.float32)
    got = []
    for T in (1, 2, 3):
        workers(T)
        out = np.full((m, n), np.nan, np.float32)
        gemm_call(a, b, out, ta, tb, blas_scalars(out.dtype))()
        np.testing.assert_allclose(out, _op(a, ta).astype(np.float64) @ _op(b, tb),
                                   rtol=1e-4, atol=1e-3)
        got.append(out)
    assert all((g == got[0]).all() for g in got[1:])
