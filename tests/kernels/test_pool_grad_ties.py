"""Max-pool gradient with ties: the first maximum of each window (row-major) takes the
whole gradient (Paddle's MaxPool2dGradFunctor), on the tiled fast paths (2x2 unrolled,
kxk) and on the general loop, against a numpy reference; the op picks the fast paths when
it binds its kernel."""
import numpy as np
import pytest

from numbaflow.kernels import run_op
from numbaflow.kernels.nn.pool import max2x2_bwd, max2x2_fwd, pool2d_bwd, pool2d_fwd, tiled_bwd


def _first_max_grad(x, dout, k, s, pad):
    N, C, H, W = x.shape
    OH, OW = dout.shape[2:]
    dx = np.zeros_like(x, dtype=np.float64)
    for n in range(N):
        for c in range(C):
            for oh in range(OH):
                for ow in range(OW):
                    rows = [r for r in range(oh * s - pad, oh * s - pad + k) if 0 <= r < H]
                    cols = [q for q in range(ow * s - pad, ow * s - pad + k) if 0 <= q < W]
                    win = x[n, c][np.ix_(rows, cols)]
                    i = int(np.argmax(win))          # numpy: the first maximum, row-major
                    dx[n, c, rows[i // len(cols)], cols[i % len(cols)]] += dout[n, c, oh, ow]
    return dx


@pytest.mark.parametrize("k, s, pad, hw", [(2, 2, 0, 8), (3, 3, 0, 9), (2, 2, 1, 6), (3, 2, 0, 7)])
def test_max_pool_grad_gives_ties_to_the_first_maximum(k, s, pad, hw):
    rng = np.random.default_rng(0)
    x = rng.integers(0, 3, (2, 3, hw, hw)).astype(np.float32)   # many ties
    x[0, 0] = 0.0                                                 # all-zero windows (after relu)
    OH = (hw + 2 * pad - k) // s + 1
    out = np.empty((2, 3, OH, OH), np.float32)
    geo = (k, k, s, s, pad, pad, pad, pad, True, True)
    pool2d_fwd(x, out, *geo)
    dout = rng.standard_normal(out.shape).astype(np.float32)
    want = _first_max_grad(x, dout, k, s, pad)
    kernels = [lambda dx: pool2d_bwd(x, out, dout, dx, *geo)]
    if k == s and pad == 0 and hw % k == 0:                       # the windows tile x
        kernels.append(lambda dx: tiled_bwd(x, out, dout, dx, k, k, True))
    if k == s == 2 and pad == 0 and hw % 2 == 0:
        kernels.append(lambda dx: max2x2_bwd(x, out, dout, dx))
    for kernel in kernels:
        dx = np.full_like(x, np.nan)                              # every cell must be written
        kernel(dx)
        np.testing.assert_allclose(dx, want, rtol=1e-6, atol=1e-7)
    attrs = {"pooling_type": "max", "ksize": [k, k], "strides": [s, s], "paddings": [pad, pad]}
    got = run_op("pool2d_grad", {"X": x, "Out": out, "Out@GRAD": dout}, attrs)["X@GRAD"]
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("hw", [8, 9])          # 9: the last row / column is left out
def test_max_pool_2x2_forward_fast_path_matches_the_window_maxima(hw):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 3, hw, hw)).astype(np.float32)
    OH = hw // 2
    want = x[:, :, :2 * OH, :2 * OH].reshape(2, 3, OH, 2, OH, 2).max(axis=(3, 5))
    for kernel in (max2x2_fwd, lambda x, out: pool2d_fwd(x, out, 2, 2, 2, 2, 0, 0, 0, 0,
                                                          True, True)):
        out = np.full((2, 3, OH, OH), np.nan, np.float32)
        kernel(x, out)
        np.testing.assert_array_equal(out, want)
    attrs = {"pooling_type": "max", "ksize": [2, 2], "strides": [2, 2]}
    np.testing.assert_array_equal(run_op("pool2d", {"X": x}, attrs)["Out"], want)
