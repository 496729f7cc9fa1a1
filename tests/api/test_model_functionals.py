"""paddle.nn.functional ops that Paddle 2 models use (issue 28): adaptive pooling to any
size, ... Forward against numpy written from Paddle's definitions, backward against finite
differences of the program itself (tensor_check.check, float64); the ops each wrapper
appends are Paddle's (so a saved model has Paddle's op types and attributes)."""
import math

import numpy as np
import pytest

import numbaflow.nn.functional as F
import numbaflow.static as static
from tensor_check import check

pytestmark = pytest.mark.usefixtures("fresh_graph_state")

rng = np.random.default_rng(0)


def u(*shape):
    return rng.uniform(-1, 1, shape)


def ops_of(build, *shapes):
    main = static.Program()
    with static.program_guard(main, static.Program()):
        build(*[static.data(f"x{i}", list(s)) for i, s in enumerate(shapes)])
    return main.global_block().ops


# ---------------------------------------------------------------- adaptive pooling
def adaptive_ref(a, oh, ow, reduce):
    H, W = a.shape[2:]
    out = np.zeros(a.shape[:2] + (oh, ow))
    for i in range(oh):
        for j in range(ow):
            win = a[:, :, math.floor(i * H / oh):math.ceil((i + 1) * H / oh),
                    math.floor(j * W / ow):math.ceil((j + 1) * W / ow)]
            out[:, :, i, j] = reduce(win, axis=(2, 3))
    return out


def test_adaptive_pool2d_is_one_paddle_op():
    ops = ops_of(lambda x: F.adaptive_avg_pool2d(x, [3, None]), (2, 3, 7, 5))
    assert [o.type for o in ops] == ["pool2d"]
    a = ops[0].attrs
    assert (a["adaptive"], a["ksize"], a["pooling_type"]) == (True, [3, 5], "avg")
    assert ops[0].outputs["Out"][0].shape == (2, 3, 3, 5)


def test_adaptive_max_pool2d_any_size():
    x = rng.permutation(2 * 7 * 5).reshape(1, 2, 7, 5) / 10.0     # no ties
    check(lambda a: F.adaptive_max_pool2d(a, [3, 4]), [x], adaptive_ref(x, 3, 4, np.max))
    check(lambda a: F.adaptive_max_pool2d(a, [9, 2]), [x], adaptive_ref(x, 9, 2, np.max))


def test_adaptive_avg_pool2d_nhwc():
    x = u(1, 5, 6, 2)
    want = adaptive_ref(x.transpose(0, 3, 1, 2), 4, 4, np.mean).transpose(0, 2, 3, 1)
    check(lambda a: F.adaptive_avg_pool2d(a, 4, data_format="NHWC"), [x], want)


def test_return_mask_is_max_pool2d_with_index():
    x = rng.permutation(2 * 7 * 5).reshape(1, 2, 7, 5) / 10.0
    H, W = 7, 5

    def mask_ref(oh, ow):
        m = np.zeros((1, 2, oh, ow), np.int32)
        for i in range(oh):
            for j in range(ow):
                r0, r1 = math.floor(i * H / oh), math.ceil((i + 1) * H / oh)
                c0, c1 = math.floor(j * W / ow), math.ceil((j + 1) * W / ow)
                win = x[0, :, r0:r1, c0:c1].reshape(2, -1).argmax(-1)
                m[0, :, i, j] = (r0 + win // (c1 - c0)) * W + c0 + win % (c1 - c0)
        return m
    out, mask = check(lambda a: F.adaptive_max_pool2d(a, [3, 2], return_mask=True), [x],
                      [adaptive_ref(x, 3, 2, np.max), mask_ref(3, 2)])
    # windows: k 3, s 2, p 1 over (7, 5) -> (4, 3)
    out, mask = check(lambda a: F.max_pool2d(a, 3, 2, 1, return_mask=True), [x], grad=True)
    assert out.shape == (1, 2, 4, 3) and mask.dtype == np.int32
    np.testing.assert_array_equal(x.reshape(1, 2, -1)[0, :, :][np.arange(2)[:, None],
                                                              mask.reshape(2, -1)],
                                  out.reshape(2, -1))


def test_adaptive_pool1d():
    x = u(2, 3, 10)
    want = adaptive_ref(x[:, :, None], 1, 4, np.mean)[:, :, 0]
    check(lambda a: F.adaptive_avg_pool1d(a, 4), [x], want)
    xm = rng.permutation(60).reshape(2, 3, 10) / 7.0
    check(lambda a: F.adaptive_max_pool1d(a, 3), [xm],
          adaptive_ref(xm[:, :, None], 1, 3, np.max)[:, :, 0])


def test_adaptive_pool_argument_errors():
    with static.program_guard(static.Program(), static.Program()):  # fresh names
        x = static.data("x", [None, 3, 8, 8])
        with pytest.raises(ValueError, match="output_size must be positive"):
            F.adaptive_avg_pool2d(x, 0)
        out, mask = F.adaptive_max_pool1d(static.data("x1", [None, 3, 8]), 2, return_mask=True)
        assert (list(out.shape), list(mask.shape), mask.dtype) == ([-1, 3, 2], [-1, 3, 2], "int32")
        with pytest.raises(ValueError, match="3-D"):
            F.adaptive_avg_pool1d(x, 2)


# ---------------------------------------------------------------- conv transpose / 1-D
from op_rows.conv import conv_ref_np, conv_transpose_ref  # noqa: E402  (numpy references)


def ct_ref(x, w, **attrs):
    a = dict({"strides": [1, 1], "paddings": [0, 0], "dilations": [1, 1], "groups": 1,
              "output_padding": []}, **attrs)
    return conv_transpose_ref({"Input": x, "Filter": w}, a)["Output"]


def test_conv2d_transpose_with_bias_and_output_size():
    x, w, b = u(2, 4, 3, 3), u(4, 3, 3, 3), u(6)
    want = ct_ref(x, w, strides=[2, 2], paddings=[1, 1], groups=2, output_padding=[1, 0])
    check(lambda a, w_, b_: F.conv2d_transpose(a, w_, b_, stride=2, padding=1, groups=2,
                                               output_size=[6, 5]),
          [x, w, b], want + b[:, None, None], rtol=1e-9)
    ops = ops_of(lambda a, w_: F.conv2d_transpose(a, w_, output_padding=1, stride=2),
                 (1, 4, 3, 3), (4, 3, 3, 3))
    assert ops[0].type == "conv2d_transpose" and ops[0].attrs["output_padding"] == [1, 1]
    with pytest.raises(ValueError, match="mutually exclusive"):
        F.conv2d_transpose(static.data("a", [1, 4, 3, 3]), static.data("w", [4, 3, 3, 3]),
                           output_padding=1, output_size=[7, 7], stride=2)
    with pytest.raises(ValueError, match="in_channels"):
        F.conv2d_transpose(static.data("b", [1, 4, 3, 3]), static.data("v", [3, 3, 3, 3]))


def test_conv2d_transpose_same_padding():
    # Paddle 2.6.2's 'SAME' for a transposed conv (measured: (1,2,3,4) -> (1,2,5,8), the
    # full output cropped at rows 1:6, columns 0:8): pads as conv2d's SAME on the input
    x, w = u(1, 2, 3, 4), u(2, 2, 3, 3)
    out = check(lambda a, w_: F.conv2d_transpose(a, w_, stride=2, padding="SAME"), [x, w],
                grad=False)
    assert out.shape == (1, 2, 5, 8)
    # total padding max((ceil(3/2) - 1) * 2 + 3 - 3, 0) = 2 -> [1, 1]; 4 -> 1 -> [0, 1]
    full = ct_ref(x, w, strides=[2, 2], paddings=[0, 0, 0, 0])
    np.testing.assert_allclose(out, full[:, :, 1:6, 0:8], rtol=1e-12)


def test_conv1d_ncl_and_nlc():
    x, w, b = u(2, 4, 9), u(6, 2, 3), u(6)
    want = conv_ref_np(x[:, :, None], w[:, :, None], [1, 2], [0, 0, 1, 2], [1, 2], 2)[:, :, 0]
    want = want + b[:, None]
    check(lambda a, w_, b_: F.conv1d(a, w_, b_, stride=2, padding=[1, 2], dilation=2, groups=2),
          [x, w, b], want, rtol=1e-9)
    xt = x.transpose(0, 2, 1).copy()
    check(lambda a, w_: F.conv1d(a, w_, padding="same", groups=2, data_format="NLC"), [xt, w],
          conv_ref_np(x[:, :, None], w[:, :, None], [1, 1], [0, 0, 1, 1], [1, 1], 2)
          [:, :, 0].transpose(0, 2, 1), rtol=1e-9)


def test_conv1d_transpose():
    x, w = u(2, 3, 5), u(3, 2, 3)
    want = ct_ref(x[..., None], w[..., None], strides=[2, 1], paddings=[1, 1, 0, 0],
                  output_padding=[1, 0])[..., 0]
    check(lambda a, w_: F.conv1d_transpose(a, w_, stride=2, padding=1, output_padding=1),
          [x, w], want, rtol=1e-9)


# ---------------------------------------------------------------- group / instance norm
def gn_ref(x, groups, w=None, b=None, eps=1e-5):
    xb = x.reshape(x.shape[0], groups, -1)
    y = ((xb - xb.mean(-1, keepdims=True)) / np.sqrt(xb.var(-1, keepdims=True) + eps))
    y = y.reshape(x.shape)
    shape = (1, -1) + (1,) * (x.ndim - 2)
    return y * (1 if w is None else w.reshape(shape)) + (0 if b is None else b.reshape(shape))


def test_group_norm():
    x, w, b = u(2, 4, 3, 2), u(4), u(4)
    check(lambda a, w_, b_: F.group_norm(a, 2, 1e-3, w_, b_), [x, w, b], gn_ref(x, 2, w, b, 1e-3),
          rtol=1e-9)
    xt = u(2, 3, 4)       # NLC: channels last
    want = np.moveaxis(gn_ref(np.moveaxis(xt, -1, 1), 2), 1, -1)
    check(lambda a: F.group_norm(a, 2, data_format="NLC"), [xt], want, rtol=1e-9)
    with pytest.raises(ValueError, match="dividing the 4 channels"):
        F.group_norm(static.data("g", [None, 4, 3]), 3)


def test_instance_norm():
    x, w, b = u(2, 3, 4, 2), u(3), u(3)
    check(lambda a, w_, b_: F.instance_norm(a, weight=w_, bias=b_), [x, w, b],
          gn_ref(x, 3, w, b), rtol=1e-9)
    ops = ops_of(lambda a: F.instance_norm(a, eps=1e-3), (2, 3, 5))
    assert [o.type for o in ops] == ["instance_norm"] and ops[0].attrs["epsilon"] == 1e-3
    assert sorted(ops[0].outputs) == ["SavedMean", "SavedVariance", "Y"]
    with pytest.raises(ValueError, match=r"shape \(3,\)"):
        F.instance_norm(static.data("i", [None, 3, 4]), weight=static.data("wi", [4]))


# ---------------------------------------------------------------- pad modes
@pytest.mark.parametrize("mode,np_mode", [("reflect", "reflect"), ("replicate", "edge"),
                                          ("circular", "wrap")])
def test_pad_modes(mode, np_mode):
    x4 = u(1, 2, 3, 4)
    check(lambda a: F.pad(a, [2, 1, 0, 2], mode=mode), [x4],
          np.pad(x4, [(0, 0), (0, 0), (0, 2), (2, 1)], mode=np_mode))
    x3 = u(2, 5, 3)       # NLC
    check(lambda a: F.pad(a, [1, 2], mode=mode, data_format="NLC"), [x3],
          np.pad(x3, [(0, 0), (1, 2), (0, 0)], mode=np_mode))


def test_pad_lowering_and_errors():
    ops = ops_of(lambda a: F.pad(a, [1, 2], mode="reflect", data_format="NCL"), (2, 3, 5))
    assert [o.type for o in ops] == ["unsqueeze2", "pad3d", "squeeze2"]
    assert ops[1].attrs["paddings"] == [0, 0, 0, 0, 1, 2]       # Paddle 2.6.2's, measured
    assert ops[1].outputs["Out"][0].shape == (2, 3, 8, 1, 1)
    with pytest.raises(ValueError, match="smaller than the padded dim"):
        F.pad(static.data("r", [1, 2, 3]), [3, 0], mode="reflect", data_format="NCL")
    with pytest.raises(ValueError, match="2 entries per spatial dim"):
        F.pad(static.data("q", [1, 2, 3, 3]), [1, 1], mode="replicate")


# ---------------------------------------------------------------- activations, one_hot
def test_paddle2_activations():
    x = np.linspace(-4.1, 4.3, 12).reshape(3, 4)
    check(F.hardswish, [x], x * np.clip(x + 3, 0, 6) / 6)
    check(lambda a: F.hardsigmoid(a, slope=0.2, offset=0.4), [x], np.clip(0.2 * x + 0.4, 0, 1))
    check(F.swish, [x], x / (1 + np.exp(-x)))
    check(lambda a: F.hardtanh(a, -2.0, 2.5), [x], np.clip(x, -2.0, 2.5))


def test_one_hot_is_one_hot_v2():
    ids = np.array([[0, 3], [2, 1]])
    got = check(lambda a: F.one_hot(a, 4), [ids], np.eye(4, dtype=np.float32)[ids], grad=False)
    assert got.shape == (2, 2, 4)
    main = static.Program()
    with static.program_guard(main, static.Program()):
        F.one_hot(static.data("ids", [None], "int64"), 3)
    assert [o.type for o in main.global_block().ops] == ["one_hot_v2"]
