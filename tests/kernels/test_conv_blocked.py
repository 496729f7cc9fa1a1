"""The blocked-activation ops (kernels/fused/conv_blocked.py, made by the nchwc_layout
pass): nchwc_pack / nchwc_unpack against numpy's reshuffle, and fused_conv2d_nchwc against
numpy's convolution in float64 (3x3 at stride 1 and 2, 1x1 at stride 2 reading past the
border, with a bias + relu and with a folded batch_norm), at 1, 2 and 3 threads (equal to
the 1-thread result), the zero border written even over a dirty output buffer, and the
shapes it refuses (a partial tile of columns would read past the buffer: the tile has no
bounds checks)."""
import numpy as np
import pytest
from op_rows.conv import conv_ref_np

from numbaflow.kernels import run_op
from numbaflow.kernels.registry import build_kernel
from numbaflow.kernels.fused import conv_blocked
from numbaflow.kernels.nn import conv_im2col
from numbaflow.kernels.nn.conv_nchwc import LANES as L

RNG = np.random.default_rng(5)
TOL = dict(rtol=2e-5, atol=2e-5)


def _blocked_np(x):
    """numpy's (N, C/L, H+2, W+2, L) zero-bordered blocks of x (N, C, H, W)."""
    n, c, h, w = x.shape
    out = np.zeros((n, c // L, h + 2, w + 2, L), x.dtype)
    out[:, :, 1:-1, 1:-1, :] = x.reshape(n, c // L, L, h, w).transpose(0, 1, 3, 4, 2)
    return out


def _threads(monkeypatch, t):
    monkeypatch.setattr(conv_im2col, "parallel_threads", lambda work, units: min(t, units))


def test_pack_and_unpack_match_numpy_at_1_2_3_threads(monkeypatch):
    x = RNG.standard_normal((5, 2 * L, 6, 7)).astype(np.float32)
    for t in (1, 2, 3):
        _threads(monkeypatch, t)
        xb = run_op("nchwc_pack", {"X": x})["Out"]
        np.testing.assert_array_equal(xb, _blocked_np(x))
        np.testing.assert_array_equal(run_op("nchwc_unpack", {"X": xb})["Out"], x)


@pytest.mark.parametrize("c,m,hw,k,stride,pad,epi", [
    (L, L, 16, 3, 1, 1, "bias_relu"),        # one block in and out: the 1-block tile
    (2 * L, 2 * L, 8, 3, 1, 1, "bn"),        # two output blocks per tile, a folded batch_norm
    (L, 2 * L, 16, 3, 2, 1, "none"),         # stride 2
    (2 * L, 4 * L, 8, 1, 2, 0, "bn"),        # 1x1 stride 2: its taps start inside the border
    (2 * L, 2 * L, 4, 3, 1, 1, "bias_relu"),  # a 4 x 4 output: one 2-block tile a row
])
def test_blocked_conv_matches_numpy_at_1_2_3_threads(monkeypatch, c, m, hw, k, stride, pad,
                                                      epi):
    n = 4
    x = RNG.standard_normal((n, c, hw, hw)).astype(np.float32)
    w = (RNG.standard_normal((m, c, k, k)) / np.sqrt(k * k * c)).astype(np.float32)
    attrs = {"strides": [stride] * 2, "paddings": [pad, pad], "dilations": [1, 1],
             "groups": 1, "activation": "relu" if epi == "bias_relu" else ""}
    want = conv_ref_np(x, w, (stride, stride), [pad, pad], (1, 1), 1)
    ins = {"Input": _blocked_np(x), "Filter": w}
    if epi == "bias_relu":
        ins["Bias"] = RNG.standard_normal(m).astype(np.float32)
        want = np.maximum(want + ins["Bias"][None, :, None, None], 0)
    elif epi == "bn":
        scale, shift, mean = (RNG.standard_normal(m).astype(np.float32) for _ in range(3))
        var = RNG.random(m).astype(np.float32) + 0.5
        ins.update(BNScale=scale, BNBias=shift, BNMean=mean, BNVariance=var)
        mul = scale / np.sqrt(var.astype(np.float64) + 1e-5)
        want = (want - mean[None, :, None, None]) * mul[None, :, None, None] \
            + shift[None, :, None, None]
    outs = []
    for t in (1, 2, 3):
        _threads(monkeypatch, t)
        outs.append(run_op("fused_conv2d_nchwc", ins, attrs)["Output"])
        np.testing.assert_allclose(outs[-1], _blocked_np(want.astype(np.float32)), **TOL)
    for out in outs[1:]:
        np.testing.assert_array_equal(out, outs[0])


def test_the_border_is_written_over_a_dirty_buffer():
    """The executor reuses buffers: the kernel must zero the border itself."""
    x = RNG.standard_normal((2, L, 8, 8)).astype(np.float32)
    w = RNG.standard_normal((L, L, 3, 3)).astype(np.float32)
    attrs = {"strides": [1, 1], "paddings": [1, 1], "dilations": [1, 1], "groups": 1}
    thunk, outs = build_kernel(
        "fused_conv2d_nchwc", {"Input": _blocked_np(x), "Filter": w}, attrs, "cpu")
    out = outs["Output"][0]
    out[...] = np.nan
    thunk()
    np.testing.assert_allclose(out, _blocked_np(conv_ref_np(x, w, (1, 1), [1, 1], (1, 1), 1)
                                                .astype(np.float32)), **TOL)


@pytest.mark.parametrize("attrs,c,m,hw,k,why", [
    ({"strides": [1, 1], "paddings": [2, 2]}, L, L, 8, 3, "paddings up to 1"),
    ({"strides": [3, 3], "paddings": [1, 1]}, L, L, 8, 3, "strides 1 or 2"),
    ({"strides": [1, 1], "paddings": [1, 1]}, L + 1, L, 8, 3, "not multiples"),
    ({"strides": [1, 1], "paddings": [1, 1], "groups": 2}, 2 * L, 2 * L, 8, 3, "1 group"),
    ({"strides": [1, 1], "paddings": [1, 1]}, L, L, 5, 3, "read past"),    # a partial tile
])
def test_conv_fits_says_what_does_not_fit(attrs, c, m, hw, k, why):
    a = dict({"dilations": [1, 1], "groups": 1}, **attrs)
    assert why in conv_blocked.conv_fits(a, c, m, hw, hw, k, k, np.float32)
    assert conv_blocked.conv_fits({"strides": [1, 1], "paddings": [1, 1], "dilations": [1, 1],
                                   "groups": 1}, L, L, 8, 8, 3, 3, np.float32) is None
