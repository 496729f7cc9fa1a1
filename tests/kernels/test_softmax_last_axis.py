"""softmax / log_softmax over the last axis (the fast row path) with an additive causal
mask of -1e9 or -inf, as attention builds it, float32 and float64, against numpy."""
import numpy as np
import pytest

from numbaflow.kernels.registry import build_cpu_kernel


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("fill", [-1e9, -np.inf])
@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
def test_masked_rows_match_numpy(dtype, fill, op):
    rng = np.random.default_rng(0)
    T = 9
    x = (rng.standard_normal((2, 3, T, T)) * 4).astype(dtype)
    x = x + np.triu(np.full((T, T), fill), 1).astype(dtype)       # causal mask
    thunk, outs = build_cpu_kernel(op, {"X": x}, {"axis": -1})
    thunk()
    x64 = x.astype(np.float64)
    z = x64 - x64.max(-1, keepdims=True)
    lse = np.log(np.exp(z).sum(-1, keepdims=True))
    want = np.exp(z - lse) if op == "softmax" else z - lse
    got = outs["Out"][0]
    tol = 2e-6 if dtype == "float32" else 1e-12
    finite = np.isfinite(want)
    np.testing.assert_allclose(got[finite], want[finite], rtol=tol, atol=tol)
    np.testing.assert_array_equal(got[~finite], want[~finite])      # -inf log-probs stay -inf
