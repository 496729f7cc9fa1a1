"""fused_gemm_epilogue's CPU kernels (kernels/fused/gemm_epilogue.py) at 1, 2 and 3
workers: the forward in many claimed row blocks equals numpy's act(x @ w + b); the
gradients equal finite differences of the forward; the bias gradient is the same to the
bit at every worker count (fixed row chunks). (Rows of the op table: tests/op_rows/
gemm_epilogue.py; the pass: tests/graph/test_fuse_gemm_epilogue.py.)"""
import math

import numpy as np
import pytest

from numbaflow.kernels import run_op
from numbaflow.kernels.fused import gemm_epilogue

RNG = np.random.default_rng(5)
_erf = np.vectorize(math.erf)


@pytest.fixture
def workers(monkeypatch):
    """Force `T` workers and blocks of 8 rows on every product and pass, however small."""
    def force(T):
        monkeypatch.setattr(gemm_epilogue, "gemm_threads", lambda m, n, k, batch, threads: T)
        monkeypatch.setattr(gemm_epilogue, "pass_threads", lambda m, n: min(T, 4))
        monkeypatch.setattr(gemm_epilogue, "MIN_BLOCK_ROWS", 8)
        monkeypatch.setattr(gemm_epilogue, "EPILOGUE_BYTES", 1)
    return force


def _ref(x, w, b, act):
    z = x.reshape(-1, w.shape[0]) @ w + b
    out = {"none": z, "relu": np.maximum(z, 0),
           "gelu": 0.5 * z * (1 + _erf(z / math.sqrt(2)))}[act]
    return out.reshape(x.shape[:-1] + (w.shape[1],))


@pytest.mark.parametrize("T", [1, 2, 3])
@pytest.mark.parametrize("act", ["none", "relu", "gelu"])
def test_forward_and_gradients_at_several_workers(workers, T, act):
    workers(T)
    x, w, b = RNG.standard_normal((3, 29, 6)), RNG.standard_normal((6, 5)), RNG.standard_normal(5)
    attrs = {"x_num_col_dims": 2, "activation": act}
    got = run_op("fused_gemm_epilogue", {"X": x, "Y": w, "Bias": b}, attrs)
    np.testing.assert_allclose(got["Out"], _ref(x, w, b, act), rtol=1e-12, atol=1e-12)
    d = RNG.standard_normal(got["Out"].shape)
    ins = {"X": x, "Y": w, "Bias": b, "Out@GRAD": d}
    if act == "gelu":
        ins["ReserveSpace"] = got["ReserveSpace"]
    if act == "relu":
        ins["Out"] = got["Out"]
    g = run_op("fused_gemm_epilogue_grad", ins, attrs)
    eps = 1e-6
    for name, arr, slot in (("X", x, "X@GRAD"), ("Y", w, "Y@GRAD"), ("Bias", b, "Bias@GRAD")):
        v = RNG.standard_normal(arr.shape)
        plus, minus = (dict({"X": x, "Y": w, "Bias": b}, **{name: arr + s * eps * v})
                       for s in (1, -1))
        fd = (np.sum(d * _ref(plus["X"], plus["Y"], plus["Bias"], act)) -
              np.sum(d * _ref(minus["X"], minus["Y"], minus["Bias"], act))) / (2 * eps)
        assert fd == pytest.approx(float(np.sum(g[slot] * v)), rel=1e-6, abs=1e-6), slot


def test_bias_gradient_is_the_same_at_every_worker_count(workers):
    x = RNG.standard_normal((203, 7)).astype(np.float32)
    w, b = RNG.standard_normal((7, 33)).astype(np.float32), np.zeros(33, np.float32)
    z = run_op("fused_gemm_epilogue", {"X": x, "Y": w, "Bias": b}, {"activation": "gelu"})
    d = RNG.standard_normal((203, 33)).astype(np.float32)
    got = []
    for T in (1, 2, 3):
        workers(T)
        got.append(run_op("fused_gemm_epilogue_grad",
                          {"X": x, "Y": w, "Bias": b, "Out@GRAD": d,
                           "ReserveSpace": z["ReserveSpace"]}, {"activation": "gelu"})["Bias@GRAD"])
    assert all((g == got[0]).all() for g in got[1:])


def test_an_unknown_activation_is_refused_with_the_choices():
    x, w, b = np.ones((2, 3)), np.ones((3, 4)), np.ones(4)
    with pytest.raises(ValueError, match=r"activation 'tanh' is not supported.*gelu"):
        run_op("fused_gemm_epilogue", {"X": x, "Y": w, "Bias": b}, {"activation": "tanh"})
