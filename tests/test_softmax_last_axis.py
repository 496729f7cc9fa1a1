"""softmax over the last axis (reduction.py's row kernel, which normalises in X's dtype)
against scipy's, in float32 and float64."""
import numpy as np
import pytest
from scipy.special import softmax as ref_softmax

import numbaflow as paddle
import numbaflow.nn.functional as F
from numbaflow import static


@pytest.mark.parametrize("dtype,tol", [("float32", 1e-6), ("float64", 1e-14)])
def test_last_axis_softmax_matches_scipy(dtype, tol):
    x = (np.random.default_rng(1).standard_normal((6, 5, 33)) * 4).astype(dtype)
    paddle.enable_static()
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        X = static.data("X", list(x.shape), dtype)
        out = F.softmax(X, axis=-1)
    got, = static.Executor(paddle.CPUPlace()).run(main, feed={"X": x}, fetch_list=[out])
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_allclose(got, ref_softmax(x.astype(np.float64), axis=-1), rtol=0,
                               atol=tol)
