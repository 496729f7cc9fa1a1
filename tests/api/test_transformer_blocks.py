"""Transformer building blocks in Paddle's spelling (nn/functional_transformer.py,
static.nn.layer_norm, nn.ClipGradByNorm): forward against numpy, backward against finite
differences of the program itself (float64)."""
import numpy as np
import pytest
from scipy.special import softmax

import numbaflow as paddle
import numbaflow.nn.functional as F
import numbaflow.static as static
from tensor_check import check

pytestmark = pytest.mark.usefixtures("fresh_graph_state")

rng = np.random.default_rng(0)


def u(*shape):
    return rng.uniform(-1, 1, shape)


def ln_ref(x, k, w=None, b=None, eps=1e-5):
    ax = tuple(range(x.ndim - k, x.ndim))
    y = (x - x.mean(ax, keepdims=True)) / np.sqrt(x.var(ax, keepdims=True) + eps)
    return y * (1 if w is None else w) + (0 if b is None else b)


def test_functional_layer_norm():
    x, w, b = u(2, 3, 4), u(3, 4), u(3, 4)
    check(lambda a, w_, b_: F.layer_norm(a, [3, 4], w_, b_), [x, w, b], ln_ref(x, 2, w, b),
          rtol=1e-9)
    check(lambda a: F.layer_norm(a, 4), [x], ln_ref(x, 1), rtol=1e-9)
    with pytest.raises(ValueError, match="trailing"):
        F.layer_norm(static.data("ln_v", [None, 4]), 5)


def test_static_nn_layer_norm_creates_its_parameters():
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        x = static.data("x", [None, 4, 6], "float64")
        y = static.nn.layer_norm(x, begin_norm_axis=2)
    names = sorted(p.name for p in main.all_parameters())
    assert names == ["layer_norm_0.b_0", "layer_norm_0.w_0"]
    exe = static.Executor(paddle.CPUPlace())
    exe.run(startup)
    xv = u(2, 4, 6)
    got, = exe.run(main, feed={"x": xv}, fetch_list=[y])
    np.testing.assert_allclose(got, ln_ref(xv, 1), rtol=1e-9)
    assert paddle.fluid.layers.layer_norm is static.nn.layer_norm


def sdpa_ref(q, k, v, mask=None, causal=False):
    q, k, v = (np.swapaxes(t, 1, 2) for t in (q, k, v))
    s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    if causal:
        s = s + np.triu(np.full(s.shape[-2:], -1e9), 1)
    if mask is not None:
        s = np.where(mask, s, -1e9) if mask.dtype == bool else s + mask
    return np.swapaxes(softmax(s, -1) @ v, 1, 2)


def test_scaled_dot_product_attention_causal_and_masks():
    q, k, v = u(2, 3, 2, 4), u(2, 3, 2, 4), u(2, 3, 2, 5)
    check(lambda a, b, c: F.scaled_dot_product_attention(a, b, c, is_causal=True),
          [q, k, v], sdpa_ref(q, k, v, causal=True), rtol=1e-9)
    add = u(1, 1, 3, 3)
    check(lambda a, b, c, m: F.scaled_dot_product_attention(a, b, c, m),
          [q, k, v, add], sdpa_ref(q, k, v, add), rtol=1e-9)
    keep = rng.random((2, 1, 3, 3)) < 0.7
    keep[..., 0] = True
    check(lambda a, b, c, m: F.scaled_dot_product_attention(a, b, c, m),
          [q, k, v, keep], sdpa_ref(q, k, v, keep), rtol=1e-9)


def test_attention_lowers_to_transposed_matmul_and_one_fused_softmax():
    main = static.Program()
    with static.program_guard(main, static.Program()):
        q = static.data("q", [None, 5, 2, 8])
        m = static.data("m", [None, 1, 5, 5])
        F.scaled_dot_product_attention(q, q, q, m, is_causal=True, dropout_p=0.1)
    ops = [op for op in main.global_block().ops]
    types = [op.type for op in ops]
    assert types == ["transpose2"] * 3 + ["matmul_v2", "fused_softmax_mask", "dropout",
                                          "matmul_v2", "transpose2"]
    fused = ops[4]
    assert fused.attr("causal") and fused.attr("scale") == pytest.approx(8 ** -0.5)
    assert fused.input("Mask") == ["m"]
    mm = [op for op in ops if op.type == "matmul_v2"]
    assert mm[0].attr("trans_y") and not mm[1].attr("trans_y")
    with pytest.raises(ValueError, match="must broadcast to the scores"):
        F.scaled_dot_product_attention(q, q, q, static.data("bad", [None, 5, 1]))


def test_attention_causal_with_a_mask_and_its_gradient():
    q, k, v = u(2, 4, 2, 3), u(2, 4, 2, 3), u(2, 4, 2, 3)
    add = u(2, 1, 4, 4)
    check(lambda a, b, c, m: F.scaled_dot_product_attention(a, b, c, m, is_causal=True),
          [q, k, v, add], sdpa_ref(q, k, v, add, causal=True), rtol=1e-9)


def test_small_functions():
    x = u(3, 4)
    check(lambda a: F.linear(a, paddle.full([4, 2], 0.5, "float64"),
                             paddle.full([2], 1.0, "float64")), [x], x @ np.full((4, 2), .5) + 1)
    check(lambda a: F.silu(a), [x], x / (1 + np.exp(-x)))
    y = np.array([[-7.0, 3.0], [6.5, 0.2]])
    check(lambda a: F.relu6(a), [y], np.clip(y, 0, 6))
    check(lambda a: F.normalize(a, axis=1), [x],
          x / np.linalg.norm(x, axis=1, keepdims=True))
    check(lambda a: F.normalize(a, p=3, axis=0), [x],
          x / (np.abs(x) ** 3).sum(0, keepdims=True) ** (1 / 3))
    lab = np.eye(4)[[0, 3, 1]]
    check(lambda a: F.label_smooth(a, epsilon=0.2), [lab], 0.8 * lab + 0.05)
    ids = np.array([[1, 0], [3, 2]])
    check(lambda i: F.one_hot(i, 4), [ids], np.eye(4, dtype=np.float32)[ids])


def test_pad():
    x = u(2, 3, 4, 4)
    check(lambda a: F.pad(a, [1, 2, 0, 1], value=0.5), [x],
          np.pad(x, [(0, 0), (0, 0), (0, 1), (1, 2)], constant_values=0.5))
    check(lambda a: F.pad(a, [1, 0, 0, 0, 0, 0, 2, 1]), [x],
          np.pad(x, [(1, 0), (0, 0), (0, 0), (2, 1)]))
    nhwc = u(1, 3, 2, 2)
    check(lambda a: F.pad(a, [1, 1, 2, 0], data_format="NHWC"), [nhwc],
          np.pad(nhwc, [(0, 0), (2, 0), (1, 1), (0, 0)]))
    with pytest.raises(ValueError, match="mode must be one of"):
        F.pad(static.data("pad_p", [1, 2, 3, 3]), [1, 1, 1, 1], mode="symmetric")


def test_adaptive_avg_pool2d():
    x = u(2, 3, 4, 6)
    check(lambda a: F.adaptive_avg_pool2d(a, [2, 3]), [x],
          x.reshape(2, 3, 2, 2, 3, 2).mean((3, 5)))
    # unequal bins (Paddle's floor / ceil edges), NCHW and NHWC
    y = u(1, 2, 5, 7)

    def ref(a, oh, ow):
        out = np.zeros(a.shape[:2] + (oh, ow))
        for i in range(oh):
            for j in range(ow):
                hs, he = i * a.shape[2] // oh, -(-(i + 1) * a.shape[2] // oh)
                ws, we = j * a.shape[3] // ow, -(-(j + 1) * a.shape[3] // ow)
                out[:, :, i, j] = a[:, :, hs:he, ws:we].mean((2, 3))
        return out
    check(lambda a: F.adaptive_avg_pool2d(a, [2, 3]), [y], ref(y, 2, 3))
    yt = y.transpose(0, 2, 3, 1).copy()
    check(lambda a: F.adaptive_avg_pool2d(a, 3, data_format="NHWC"), [yt],
          ref(y, 3, 3).transpose(0, 2, 3, 1))


@pytest.mark.parametrize("clip", ["norm", "global"])
def test_gradient_clipping_caps_each_or_all_norms(clip):
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        x = static.data("x", [None, 3], "float64")
        loss = paddle.mean(paddle.square(static.nn.fc(x, 2)) * 100.0)
        grad_clip = paddle.nn.ClipGradByNorm(0.5) if clip == "norm" else \
            paddle.nn.ClipGradByGlobalNorm(0.5)
        pg = static.append_backward(loss)
        clipped_pg = grad_clip(pg)
    # the global norm reads every gradient in one squared_l2_norm op
    n_norm_ops = [op.type for op in main.global_block().ops].count("squared_l2_norm")
    assert n_norm_ops == (len(pg) if clip == "norm" else 1)
    exe = static.Executor(paddle.CPUPlace())
    exe.run(startup)
    got = exe.run(main, feed={"x": u(4, 3)},
                  fetch_list=[g for _, g in clipped_pg] + [g for _, g in pg])
    clipped, unclipped = got[:len(pg)], got[len(pg):]
    norms = [np.linalg.norm(g) for g in unclipped]
    assert max(norms) > 1.0                         # the clip is active
    if clip == "norm":
        for c, r, n in zip(clipped, unclipped, norms):
            np.testing.assert_allclose(c, r * 0.5 / max(n, 0.5), rtol=1e-10)
    else:
        total = np.sqrt(sum(n * n for n in norms))
        for c, r in zip(clipped, unclipped):
            np.testing.assert_allclose(c, r * 0.5 / max(total, 0.5), rtol=1e-10)
