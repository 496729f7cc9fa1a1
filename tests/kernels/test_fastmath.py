"""The vectorizable float32 erf used by generated CPU kernels (kernels/fastmath.py)."""
import numpy as np
from numba import njit
from scipy.special import erf as exact_erf

from numbaflow.kernels.fastmath import erf, erf_float32, exp


@njit(error_model="numpy")
def _erf_loop(x, out):
    for i in range(x.size):
        out[i] = erf(x[i])


def test_float32_erf_within_4e_7_of_exact_over_the_whole_range():
    x = np.concatenate([np.linspace(-8, 8, 20001), [0.0, 1e-30, -1e-30, 4.0, -4.0, 50.0]])
    for dt in (np.float32,):
        xs = x.astype(dt)
        got = np.empty_like(xs)
        _erf_loop(xs, got)
        want = exact_erf(xs.astype(np.float64))
        np.testing.assert_allclose(got, want, rtol=0, atol=4e-7)
        # the numpy twin (used in docs and tests) computes the same function
        np.testing.assert_allclose(erf_float32(xs.astype(np.float64)), want, rtol=0, atol=4e-7)


def test_float64_erf_keeps_libm_precision():
    x = np.linspace(-6, 6, 2001)
    got = np.empty_like(x)
    _erf_loop(x, got)
    np.testing.assert_allclose(got, exact_erf(x), rtol=1e-15, atol=1e-16)


def test_gelu_kernel_float32_matches_exact_gelu():
    """GELU (exact, erf-based) through the generated kernel, float32, against float64 numpy."""
    import numbaflow as nf
    from numbaflow import nn
    nf.enable_static()
    main, start = nf.static.Program(), nf.static.Program()
    with nf.static.program_guard(main, start):
        x = nf.static.data("x", [64, 100], "float32")
        y = nn.functional.gelu(x)
    xv = np.random.default_rng(0).uniform(-6, 6, (64, 100)).astype(np.float32)
    exe = nf.static.Executor(nf.CPUPlace())
    exe.run(start)
    got, = exe.run(main, feed={"x": xv}, fetch_list=[y])
    x64 = xv.astype(np.float64)
    np.testing.assert_allclose(got, 0.5 * x64 * (1 + exact_erf(x64 / np.sqrt(2))), rtol=1e-6, atol=1e-6)


@njit(error_model="numpy")
def _exp_loop(x, out):
    for i in range(x.size):
        out[i] = exp(x[i])


def test_float32_exp_within_1e_7_relative_and_libm_edges():
    x = np.linspace(-87.3, 88.72, 200001).astype(np.float32)
    got = np.empty_like(x)
    _exp_loop(x, got)
    want = np.exp(x.astype(np.float64))
    np.testing.assert_allclose(got, want, rtol=1.2e-7, atol=0)
    edges = np.array([np.nan, np.inf, -np.inf, 100.0, -110.0, 0.0, -0.0, -100.0], np.float32)
    got = np.empty_like(edges)
    _exp_loop(edges, got)
    with np.errstate(over="ignore"):
        np.testing.assert_allclose(got, np.exp(edges), rtol=1e-6, atol=2e-45)


def test_float64_exp_is_libm():
    x = np.linspace(-700, 700, 2001)
    got = np.empty_like(x)
    _exp_loop(x, got)
    np.testing.assert_allclose(got, np.exp(x), rtol=4e-16, atol=0)


def test_float32_erf_nan_stays_nan():
    got = np.empty(2, np.float32)
    _erf_loop(np.array([np.nan, np.inf], np.float32), got)
    assert np.isnan(got[0]) and got[1] == 1.0
