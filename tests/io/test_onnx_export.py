"""ONNX export (`paddle.onnx.export`): onnxruntime runs the exported models with the
outputs of real Paddle 2.6.2 (its MLP, CNN and transformer block, read from
tests/fixtures/paddle/) and of numbaflow (a model built here)."""
import os

import numpy as np
import pytest

import numbaflow as paddle
import numbaflow.nn.functional as F
import numbaflow.static as static
from locations import TESTS

ort = pytest.importorskip("onnxruntime")
onnx = pytest.importorskip("onnx")

pytestmark = pytest.mark.usefixtures("fresh_graph_state")

FIXTURES = os.path.join(str(TESTS), "fixtures", "paddle")


def run_onnx(path, feed):
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    return sess.run(None, feed)


@pytest.mark.parametrize("model", ["mlp", "cnn", "transformer", "concat"])
def test_paddle_models_run_in_onnxruntime_with_paddles_outputs(model, tmp_path):
    exe = static.Executor(paddle.CPUPlace())
    program, feeds, fetches = static.load_inference_model(
        os.path.join(FIXTURES, model, "infer"), exe)
    path = paddle.onnx.export(program, [program.global_block().var(feeds[0])], fetches,
                              str(tmp_path / "m.onnx"))
    onnx.checker.check_model(onnx.load(path))
    d = np.load(os.path.join(FIXTURES, model, "data.npz"))
    got, = run_onnx(path, {"x": d["x"]})
    np.testing.assert_allclose(got, d["out"], rtol=1e-5, atol=1e-6)


def build():
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        image = static.data("image", [None, 1, 8, 8], "float32")
        h = static.nn.conv2d(image, 4, 3, padding=1, act="relu")
        h = F.max_pool2d(h, 2, 2)
        h = static.nn.batch_norm(h)
        h = F.avg_pool2d(h, 2, 2, padding=1, exclusive=False)
        h = paddle.flatten(h, 1)
        h = paddle.reshape(h, [-1, 4, 9])
        h = paddle.transpose(h, [0, 2, 1])
        h = static.nn.fc(h, 3, num_flatten_dims=2, activation="tanh")
        out = F.softmax(h * 2.0 + 1.0)
        loss = paddle.mean(out)
        paddle.optimizer.SGD(0.1).minimize(loss)
    exe = static.Executor(paddle.CPUPlace())
    exe.run(startup)
    return exe, main, image, out


def test_model_built_here_runs_in_onnxruntime_with_our_outputs(tmp_path):
    exe, main, image, out = build()
    x = np.random.default_rng(0).normal(size=(3, 1, 8, 8)).astype("float32")
    exe.run(main, feed={"image": x}, fetch_list=[])         # a training step first
    want, = exe.run(main.clone(for_test=True), feed={"image": x}, fetch_list=[out])
    # Paddle's spelling: a path prefix, input_spec / output_spec; no program: theirs
    path = paddle.onnx.export(None, str(tmp_path / "net"), input_spec=[image],
                              output_spec=[out])
    assert path == str(tmp_path / "net.onnx")
    got, = run_onnx(path, {"image": x})
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_more_ops_run_in_onnxruntime_with_our_outputs(tmp_path):
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        x = static.data("x", [None, 6], "float32")
        a, b = paddle.split(paddle.clip(x, -0.5, 0.7), [2, 4], axis=1)
        c = paddle.concat([paddle.pow(a, 2.0), paddle.unsqueeze(paddle.sum(b, axis=1), 1)], 1)
        idx = paddle.argmax(c, axis=1)
        scaled = paddle.cast(idx, "float32") * 0.5
    exe = static.Executor(paddle.CPUPlace())
    xs = np.random.default_rng(3).normal(size=(5, 6)).astype("float32")
    want = exe.run(main, feed={"x": xs}, fetch_list=[c, idx, scaled])
    path = paddle.onnx.export(main, [x], [c, idx, scaled], str(tmp_path / "m.onnx"))
    got = run_onnx(path, {"x": xs})
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-6)
        assert g.dtype == w.dtype


def test_attention_runs_in_onnxruntime_with_our_outputs(tmp_path):
    # F.scaled_dot_product_attention's fused_softmax_mask (causal rule and mask)
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        q = static.data("q", [None, 4, 2, 3], "float32")
        m = static.data("m", [None, 1, 4, 4], "float32")
        out = F.scaled_dot_product_attention(q, q, q, m, is_causal=True)
    exe = static.Executor(paddle.CPUPlace())
    rng = np.random.default_rng(5)
    feed = {"q": rng.normal(size=(2, 4, 2, 3)).astype("float32"),
            "m": rng.normal(size=(2, 1, 4, 4)).astype("float32")}
    want, = exe.run(main, feed=feed, fetch_list=[out])
    path = paddle.onnx.export(main, [q, m], [out], str(tmp_path / "m.onnx"))
    got, = run_onnx(path, feed)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_ops_without_a_mapping_are_named(tmp_path):
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        x = static.data("x", [None, 3], "float32")
        label = static.data("label", [None, 1], "int64")
        y = F.cross_entropy(paddle.nn.functional.relu(x), label)
    with pytest.raises(NotImplementedError,
                       match=r"no ONNX mapping.*\['softmax_with_cross_entropy'\]"):
        paddle.onnx.export(main, [x, label], [y], str(tmp_path / "m.onnx"))
    assert not os.path.exists(tmp_path / "m.onnx")


def test_attribute_values_onnx_cannot_express_are_named(tmp_path):
    exe, main, image, out = build()
    pool = next(op for op in main.global_block().ops if op.type == "pool2d")
    main.global_block().set_attr(pool, "data_format", "NHWC")
    with pytest.raises(NotImplementedError, match=r"op \d+ \(pool2d\): data_format 'NHWC'"):
        paddle.onnx.export(main, [image], [out], str(tmp_path / "m.onnx"))
    with pytest.raises(ValueError, match="opset"):
        paddle.onnx.export(main, [image], [out], str(tmp_path / "m.onnx"), opset_version=9)


def test_model_ops_run_in_onnxruntime_with_our_outputs(tmp_path):
    # issue 28's ops where ONNX has one: adaptive pooling to sizes dividing the input,
    # transposed convolutions (output_padding, groups, 1-D)
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        x = static.data("x", [None, 3, 8, 6], "float32")
        ids = static.data("ids", [None, 4], "int64")
        outs = [F.adaptive_avg_pool2d(x, [4, 3]), F.adaptive_max_pool2d(x, [2, 6]),
                F.adaptive_avg_pool2d(x, 1)]
        w = static.create_parameter([3, 2, 3, 3], "float32")
        outs.append(F.conv2d_transpose(x, w, stride=2, padding=[1, 0], output_padding=[1, 0],
                                       dilation=[1, 2]))
        outs.append(F.conv2d_transpose(x, static.create_parameter([3, 1, 2, 2], "float32"),
                                       groups=3, output_size=[9, 13], stride=[1, 2]))
        outs.append(F.conv1d_transpose(paddle.reshape(x, [-1, 3, 48]),
                                       static.create_parameter([3, 4, 3], "float32"), stride=2))
        outs += [F.interpolate(x, size=[11, 4], mode="bilinear"),
                 F.interpolate(x, scale_factor=[1.5, 2.5], mode="bilinear", align_mode=1),
                 F.interpolate(x, size=[5, 9], mode="bilinear", align_corners=True),
                 F.interpolate(x, scale_factor=[2, 0.5]), F.upsample(x, size=[7, 13])]
        c3 = static.create_parameter([3], "float32")
        outs += [F.instance_norm(x), F.instance_norm(x, weight=c3, bias=c3, eps=1e-3),
                 F.group_norm(paddle.reshape(x, [-1, 6, 4, 6]), 3, weight=static.create_parameter([6], "float32"),
                              bias=static.create_parameter([6], "float32")),
                 F.pad(x, [1, 2, 0, 3], mode="reflect"), F.pad(x, [1, 0, 2, 1], mode="replicate"),
                 F.pad(x, [2, 2, 1, 0], value=0.5),
                 F.hardswish(x), F.hardsigmoid(x), F.swish(x), F.silu(x), F.hardtanh(x, -0.5, 0.7)]
        outs.append(F.one_hot(ids, 5))
    exe = static.Executor(paddle.CPUPlace())
    exe.run(startup)
    xs = np.random.default_rng(7).normal(size=(2, 3, 8, 6)).astype("float32")
    feed = {"x": xs, "ids": np.array([[0, 4, 2, 1], [3, 3, 0, 4]])}
    want = exe.run(main, feed=feed, fetch_list=outs)
    path = paddle.onnx.export(main, [x, ids], outs, str(tmp_path / "m.onnx"))
    onnx.checker.check_model(onnx.load(path))
    for g, w in zip(run_onnx(path, feed), want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


def test_paddle2_activations_run_in_onnxruntime_with_our_outputs(tmp_path):
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        x = static.data("x", [None, 7], "float32")
        outs = [F.elu(x, 0.5), F.celu(x, 2.0), F.selu(x), F.softsign(x),
                F.thresholded_relu(x, 0.3), F.hardshrink(x, 0.7), F.softshrink(x, 0.7),
                F.softplus(x), F.mish(x), F.log_sigmoid(x), F.tanhshrink(x)]
        bad = F.softplus(x, beta=2.0)
    exe = static.Executor(paddle.CPUPlace())
    exe.run(startup)
    feed = {"x": np.random.default_rng(3).uniform(-3, 3, (4, 7)).astype("float32")}
    want = exe.run(main, feed=feed, fetch_list=outs)
    path = paddle.onnx.export(main, [x], outs, str(tmp_path / "a.onnx"))
    onnx.checker.check_model(onnx.load(path))
    for g, w in zip(run_onnx(path, feed), want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
    with pytest.raises(Exception, match="beta 1"):
        paddle.onnx.export(main, [x], [bad], str(tmp_path / "b.onnx"))
