"""kernels/fastmath.py's tanh and sigmoid (the rnn op's gates): float32 is plain arithmetic
within 4e-7 of the exact value (float64 numpy), NaN stays NaN, the tails are +-1 / 0 / 1;
float64 keeps libm."""
import numpy as np
from numba import njit

from numbaflow.kernels.fastmath import sigmoid, tanh


@njit(error_model="numpy")
def _apply(x, out_tanh, out_sigmoid):
    for i in range(x.size):
        out_tanh[i] = tanh(x[i])
        out_sigmoid[i] = sigmoid(x[i])


def _run(x):
    t, s = np.empty_like(x), np.empty_like(x)
    _apply(x, t, s)
    return t, s


def test_float32_tanh_and_sigmoid_within_4e_7_of_exact():
    x = np.concatenate([np.linspace(-20, 20, 400001), [0.0, 1e-30, -1e-30, 9.0, -9.0, 1e4]])
    t, s = _run(x.astype(np.float32))
    x64 = x.astype(np.float32).astype(np.float64)
    np.testing.assert_allclose(t, np.tanh(x64), rtol=0, atol=4e-7)
    np.testing.assert_allclose(s, 1.0 / (1.0 + np.exp(-x64)), rtol=0, atol=4e-7)
    assert t[-1] == 1.0 and s[-1] == 1.0 and np.all(np.abs(t) <= 1.0)
    assert t.dtype == np.float32


def test_float32_edges_nan_and_infinities():
    t, s = _run(np.array([np.nan, np.inf, -np.inf], np.float32))
    assert np.isnan(t[0]) and np.isnan(s[0])
    assert t[1:].tolist() == [1.0, -1.0] and s[1:].tolist() == [1.0, 0.0]


def test_float64_keeps_libm():
    x = np.linspace(-30, 30, 6001)
    t, s = _run(x)
    np.testing.assert_allclose(t, np.tanh(x), rtol=1e-15, atol=1e-300)
    np.testing.assert_allclose(s, 1.0 / (1.0 + np.exp(-x)), rtol=1e-15, atol=0)
