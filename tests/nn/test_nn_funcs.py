"""The paddle.nn.functional losses, activations and 1-D pools added for issue 28 (item 2):
outputs and gradients against real Paddle 2.6's on the same inputs
(tests/fixtures/make_paddle_nn_funcs.py records them; its CASES table drives both); the
layers over them; dropout2d's channel masks; argument errors."""
import pathlib
import sys

import numpy as np
import pytest

import numbaflow as paddle
import numbaflow.nn.functional as F
from numbaflow import static
from locations import TESTS

FIXTURES = TESTS / "fixtures"
sys.path.insert(0, str(FIXTURES))
from make_paddle_nn_funcs import CASES  # noqa: E402

RECORD = np.load(FIXTURES / "paddle_nn_funcs" / "cases.npz")


def _run(build, feed):
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        fetch = build()
    exe = static.Executor()
    exe.run(startup)
    return exe.run(main, feed=feed, fetch_list=fetch)


@pytest.mark.slow
def test_every_case_equals_paddle_forward_and_backward():
    feed, names = {}, []

    def build():
        fetch = []
        for name, (fn, specs, kw) in CASES.items():
            ins = {}
            for arg in specs:
                v = RECORD[f"{name}/in/{arg}"]
                key = f"{name}_{arg}"
                ins[arg] = static.data(key, list(v.shape), dtype=str(v.dtype))
                ins[arg].stop_gradient = False
                feed[key] = v
            out = getattr(F, fn)(**ins, **kw)
            wv = static.data(f"{name}_w", list(RECORD[f"{name}/w"].shape))
            feed[f"{name}_w"] = RECORD[f"{name}/w"]
            target = paddle.sum(paddle.multiply(out, wv))
            grad, = static.gradients([target], [ins[next(iter(specs))]])
            fetch += [out, grad]
            names.append(name)
        return fetch

    got = _run(build, feed)
    for i, name in enumerate(names):
        for j, what in enumerate(("out", "grad")):
            want = RECORD[f"{name}/{what}"]
            np.testing.assert_allclose(got[2 * i + j], want, rtol=2e-5, atol=2e-6,
                                       err_msg=f"{name} {what}")


def test_the_layers_are_their_functionals():
    x = np.random.default_rng(0).uniform(-1, 1, (2, 3, 8)).astype("float32")
    y = np.random.default_rng(1).uniform(-1, 1, (2, 3, 8)).astype("float32")

    def build():
        a, b = static.data("a", [None, 3, 8]), static.data("b", [None, 3, 8])
        return [paddle.nn.MaxPool1D(3, 2, 1)(a), F.max_pool1d(a, 3, 2, 1),
                paddle.nn.SmoothL1Loss(delta=0.5)(a, b), F.smooth_l1_loss(a, b, delta=0.5),
                paddle.nn.Softplus(beta=2.0)(a), F.softplus(a, 2.0),
                paddle.nn.Dropout2D(0.5)(paddle.unsqueeze(a, [3]))]
    got = _run(build, {"a": x, "b": y})
    for i in range(0, 6, 2):
        np.testing.assert_array_equal(got[i], got[i + 1])
    # channel dropout: each (n, c) plane is all zero or all x / (1 - p)
    planes = got[6].reshape(6, 8) / x.reshape(6, 8)
    assert all(np.allclose(p, 0.0) or np.allclose(p, 2.0) for p in planes), planes


def test_dropout2d_after_eval_is_the_identity_and_axis_dropout_shares_masks():
    x = np.random.default_rng(0).uniform(0.5, 1.5, (4, 6)).astype("float32")

    def build():
        a = static.data("a", [None, 6])
        drop = paddle.nn.Dropout2D(0.5)
        drop.eval()
        img = paddle.reshape(a, [-1, 6, 1, 1])
        return [drop(img), F.dropout(a, 0.5, axis=1)]
    same, cols = _run(build, {"a": x})
    np.testing.assert_array_equal(same.reshape(4, 6), x)
    kept = cols != 0                       # one draw per column, shared by the rows
    assert (kept == kept[:1]).all(), kept


def test_bad_arguments_are_refused_at_build_time():
    main = static.Program()
    with static.program_guard(main, static.Program()):
        x = static.data("x", [None, 3, 8])
        with pytest.raises(ValueError, match="max_pool1d: x .* must be 3-D"):
            F.max_pool1d(static.data("x4", [None, 3, 8, 8]), 2)
        with pytest.raises(ValueError, match="l1_loss: reduction must be one of"):
            F.l1_loss(x, x, reduction="avg")
        with pytest.raises(ValueError, match="selu: scale must satisfy scale > 1"):
            F.selu(x, scale=0.5)
        with pytest.raises(ValueError, match="dropout2d: x .* must be 4-D"):
            F.dropout2d(x)
        with pytest.raises(ValueError, match="nll_loss: input must be"):
            F.nll_loss(x, static.data("l", [None, 3, 8], dtype="int64"))
        with pytest.raises(ValueError, match="glu: x .* must be even"):
            F.glu(static.data("odd", [None, 3]))
        img = static.data("img", [None, 3, 4, 4])
        with pytest.raises(NotImplementedError, match="SizeTensor"):
            F.interpolate(img, size=[paddle.full([1], 3, "int32"), 4])
        with pytest.raises(NotImplementedError, match="mode 'bicubic'"):
            F.interpolate(img, size=[8, 8], mode="bicubic")


def test_static_nn_group_norm_and_instance_norm_spellings():
    """Paddle 2.6's static.nn.group_norm / instance_norm: parameter names, instance_norm's
    default of no parameters (only with both attrs given), values from numpy."""
    x = np.random.default_rng(0).uniform(-1, 1, (2, 6, 3, 3)).astype("float32")
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        v = static.data("x", [None, 6, 3, 3])
        g = static.nn.group_norm(v, groups=3, act="relu")
        i = static.nn.instance_norm(v)
    assert [p.name for p in main.all_parameters()] == ["group_norm_0.w_0", "group_norm_0.b_0"]
    exe = static.Executor()
    exe.run(startup)
    got_g, got_i = exe.run(main, feed={"x": x}, fetch_list=[g, i])

    def norm(a, axes):
        a = a.astype(np.float64)
        return (a - a.mean(axes, keepdims=True)) / np.sqrt(a.var(axes, keepdims=True) + 1e-5)
    want_g = np.maximum(norm(x.reshape(2, 3, -1), 2).reshape(x.shape), 0)
    np.testing.assert_allclose(got_g, want_g, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got_i, norm(x, (2, 3)), rtol=1e-5, atol=1e-5)


def test_shuffle_softmax2d_and_cosine_layers():
    x = np.random.default_rng(0).uniform(-1, 1, (2, 8, 2, 3)).astype("float32")

    def build():
        a = static.data("a", [None, 8, 2, 3])
        b = paddle.flatten(a, 1)
        return [paddle.nn.PixelShuffle(2)(a), F.pixel_shuffle(a, 2),
                paddle.nn.ChannelShuffle(4)(a), F.channel_shuffle(a, 4),
                paddle.nn.Softmax2D()(a), paddle.nn.CosineSimilarity(axis=1)(b, b)]
    ps, ps_f, cs, cs_f, sm, cos = _run(build, {"a": x})
    np.testing.assert_array_equal(ps, ps_f)
    np.testing.assert_array_equal(cs, cs_f)
    e = np.exp(x - x.max(1, keepdims=True))
    np.testing.assert_allclose(sm, e / e.sum(1, keepdims=True), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(cos, np.ones(2), rtol=1e-5)


def test_unflatten_splits_one_dim():
    x = np.arange(2 * 6 * 4, dtype="float32").reshape(2, 6, 4)

    def build():
        a = static.data("a", [None, 6, 4])
        return [paddle.nn.Unflatten(1, [2, -1])(a), paddle.nn.Unflatten(-1, [2, 2])(a)]
    u1, u2 = _run(build, {"a": x})
    np.testing.assert_array_equal(u1, x.reshape(2, 2, 3, 4))
    np.testing.assert_array_equal(u2, x.reshape(2, 6, 2, 2))
