"""conv2d's NCHWc direct forward (kernels/nn/conv_nchwc.py) on shapes its rule selects
(float32, 3x3, stride 1 and 2, 16-64 channels; one sample and batches): against numpy's convolution in
float64, at 1, 2 and 3 threads (equal to the 1-thread result), with the fused epilogue, with
channel counts that are not multiples of the blocks and output widths that are not multiples
of the tile, after the filter changed between two runs of one bound thunk, and checked
against the gradient kernels by a directional derivative (the convolution is linear)."""
from types import SimpleNamespace

import numpy as np
import pytest
from op_rows.conv import conv_ref_np

from numbaflow.kernels import run_op
from numbaflow.kernels.nn import conv, conv_im2col

RNG = np.random.default_rng(11)
TOL = dict(rtol=2e-5, atol=2e-5)


def _case(c, m, hw, n=8):
    x = RNG.standard_normal((n, c) + hw).astype(np.float32)
    w = (RNG.standard_normal((m, c, 3, 3)) / np.sqrt(9 * c)).astype(np.float32)
    return x, w


def _attrs(pad, stride=1):
    return {"strides": [stride] * 2, "paddings": pad, "dilations": [1, 1], "groups": 1}


@pytest.mark.parametrize("c,m,hw,pad,stride,n", [
    (32, 32, (5, 5), [1, 1], 1, 8),     # one full tile of 4 columns and a partial one
    (40, 48, (4, 7), [1, 1], 1, 8),     # 40 channels: a half-empty block; 3 filter block pairs
    (64, 16, (6, 6), [0, 2], 1, 8),     # no row padding, wide column padding
    (16, 32, (7, 8), [1, 1], 2, 8),     # stride 2, odd height
    (24, 16, (5, 6), [1, 1], 1, 3),     # a small batch: stride 1 up to 32 channels
])
def test_nchwc_forward_matches_numpy_at_1_2_3_threads(monkeypatch, c, m, hw, pad, stride, n):
    x, w = _case(c, m, hw, n)
    a = _attrs(pad, stride)
    k = conv.geometry(SimpleNamespace(type="conv2d", attrs=dict(a, data_format="NCHW"),
                                      input=lambda s: x if s == "Input" else w))
    assert conv.use_nchwc(k, x.dtype)
    want = conv_ref_np(x, w, (stride, stride), pad, (1, 1), 1)
    outs = []
    for threads in (1, 2, 3):
        monkeypatch.setattr(conv_im2col, "parallel_threads", lambda work, units, t=threads: t)
        outs.append(run_op("conv2d", {"Input": x, "Filter": w}, a)["Output"])
        np.testing.assert_allclose(outs[-1], want, **TOL)
    for out in outs[1:]:
        np.testing.assert_array_equal(out, outs[0])


def test_nchwc_fused_epilogue_bias_relu_and_batch_norm():
    x, w = _case(32, 32, (4, 4))
    b = RNG.standard_normal(32).astype(np.float32)
    a = dict(_attrs([1, 1]), activation="relu")
    got = run_op("fused_conv2d", {"Input": x, "Filter": w, "Bias": b}, a)["Output"]
    want = np.maximum(conv_ref_np(x, w, (1, 1), [1, 1], (1, 1), 1) + b[None, :, None, None], 0)
    np.testing.assert_allclose(got, want, **TOL)


def test_a_changed_filter_is_packed_again():
    """The packed filters are reused while the Filter buffer holds the same values (a
    for_test program); a training step writes new ones, and the next run must see them."""
    x, w = _case(32, 32, (4, 4))
    cop = SimpleNamespace(type="conv2d", attrs=dict(_attrs([1, 1]), data_format="NCHW"),
                          input=lambda s: x if s == "Input" else w)
    out = np.empty((8, 32, 4, 4), np.float32)
    thunk = conv.forward_thunk(cop, x, w, out)
    thunk()
    np.testing.assert_allclose(out, conv_ref_np(x, w, (1, 1), [1, 1], (1, 1), 1), **TOL)
    w[3, 5, 1, 2] += 1.0        # one element, in place: the same buffer
    thunk()
    np.testing.assert_allclose(out, conv_ref_np(x, w, (1, 1), [1, 1], (1, 1), 1), **TOL)


def test_the_rule_keeps_im2col_where_it_wins():
    def picks(c, m, n, stride=1, kk=3, dtype=np.float32):
        k = dict(n=n, c=c, m=m, kh=kk, kw=kk, sh=stride, sw=stride, dh=1, dw=1, groups=1)
        return conv.use_nchwc(k, np.dtype(dtype))
    assert picks(16, 16, 1) and picks(32, 64, 32, stride=2) and picks(64, 64, 32)
    assert not picks(3, 16, 32)                 # the first conv: 3 channels
    assert not picks(64, 64, 1) and not picks(16, 32, 1, stride=2)
    assert not picks(16, 32, 32, kk=1) and not picks(16, 16, 32, dtype=np.float64)
    assert not picks(16, 20, 32)                # output channels: whole blocks (8 or 16)


def test_directional_derivatives_match_the_gradient_kernels():
    """L = sum(d * conv(x, w)) is linear in x and in w, so a central difference along v is
    exact up to float32 rounding: it must equal sum(grad * v) from conv2d_grad."""
    x, w = _case(32, 32, (4, 4))
    a = _attrs([1, 1])
    out = run_op("conv2d", {"Input": x, "Filter": w}, a)["Output"]
    d = RNG.standard_normal(out.shape).astype(np.float32)
    g = run_op("conv2d_grad", {"Input": x, "Filter": w, "Output@GRAD": d}, a)
    ins = {"Input": x, "Filter": w}
    for name, grad in (("Input", "Input@GRAD"), ("Filter", "Filter@GRAD")):
        v = RNG.standard_normal(ins[name].shape).astype(np.float32)
        loss = [np.sum(d.astype(np.float64) * run_op(
            "conv2d", dict(ins, **{name: ins[name] + s * v}), a)["Output"]) for s in (1, -1)]
        want = float(np.sum(g[grad].astype(np.float64) * v))
        assert (loss[0] - loss[1]) / 2 == pytest.approx(want, rel=1e-3)


@pytest.mark.parametrize("pad,threads", [([1, 1], 1), ([1, 1], 3), ([0, 2], 2)])
def test_input_gradient_through_the_flipped_filters_matches_im2col(monkeypatch, pad, threads):
    """At stride 1 dInput is the NCHWc forward of dOut with the flipped, transposed filters:
    equal (to float32 rounding) to col2im's, and to the directional derivative above."""
    x, w = _case(32, 16, (5, 6))
    a = _attrs(pad)
    out = run_op("conv2d", {"Input": x, "Filter": w}, a)["Output"]
    d = RNG.standard_normal(out.shape).astype(np.float32)
    ins = {"Input": x, "Filter": w, "Output@GRAD": d}
    k = conv.geometry(SimpleNamespace(type="conv2d", attrs=dict(a, data_format="NCHW"),
                                      input=lambda s: x if s == "Input" else w))
    assert conv._use_nchwc_dx(k, x.dtype)
    monkeypatch.setattr(conv_im2col, "parallel_threads", lambda work, units: threads)
    g = run_op("conv2d_grad", ins, a)
    monkeypatch.setattr(conv, "_use_nchwc_dx", lambda k, dt: False)
    g0 = run_op("conv2d_grad", ins, a)
    np.testing.assert_allclose(g["Input@GRAD"], g0["Input@GRAD"], **TOL)
    np.testing.assert_allclose(g["Filter@GRAD"], g0["Filter@GRAD"], rtol=1e-5, atol=1e-4)
    v = RNG.standard_normal(x.shape).astype(np.float32)
    loss = [np.sum(d.astype(np.float64) * run_op("conv2d", {"Input": x + s * v, "Filter": w},
                                                 a)["Output"]) for s in (1, -1)]
    assert (loss[0] - loss[1]) / 2 == pytest.approx(
        float(np.sum(g["Input@GRAD"].astype(np.float64) * v)), rel=1e-3)


@pytest.mark.parametrize("c,m,hw,pad,stride", [
    (32, 32, (5, 6), [1, 1], 1),      # a partial tile of columns, two output blocks
    (40, 48, (4, 7), [1, 1], 1),      # 40 channels: a half-empty input block
    (16, 32, (7, 8), [0, 2], 2),      # stride 2, no row padding, wide column padding
])
def test_filter_gradient_through_the_dw_tile_matches_im2col(monkeypatch, c, m, hw, pad, stride):
    """dFilter summed by conv_nchwc's dw tile over the samples (partials of fixed sample
    chunks in the packed filter layout) equals im2col + GEMM's to float32 rounding, and
    is the same to the bit at 1, 2 and 3 threads; dInput, computed in the same op, is
    untouched by it."""
    x, w = _case(c, m, hw)
    a = _attrs(pad, stride)
    out = run_op("conv2d", {"Input": x, "Filter": w}, a)["Output"]
    ins = {"Input": x, "Filter": w, "Output@GRAD": RNG.standard_normal(out.shape).astype(
        np.float32)}
    k = conv.geometry(SimpleNamespace(type="conv2d", attrs=dict(a, data_format="NCHW"),
                                      input=lambda s: x if s == "Input" else w))
    assert conv.use_nchwc(k, x.dtype)
    rule = conv.use_nchwc
    monkeypatch.setattr(conv, "use_nchwc", lambda k, dt: False)
    want = run_op("conv2d_grad", ins, a)
    monkeypatch.setattr(conv, "use_nchwc", rule)
    first = None
    for threads in (1, 2, 3):
        monkeypatch.setattr(conv_im2col, "parallel_threads", lambda work, units, t=threads: t)
        got = run_op("conv2d_grad", ins, a)
        np.testing.assert_allclose(got["Filter@GRAD"], want["Filter@GRAD"], rtol=1e-4,
                                   atol=1e-4 * np.abs(want["Filter@GRAD"]).max())
        first = got["Filter@GRAD"] if first is None else first
        np.testing.assert_array_equal(got["Filter@GRAD"], first)
        np.testing.assert_allclose(got["Input@GRAD"], want["Input@GRAD"], **TOL)
