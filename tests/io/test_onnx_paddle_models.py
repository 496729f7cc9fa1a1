"""ONNX exports of the Paddle 2.6.2-saved models of issue 28 item 5 (a narrow resnet18 and
mobilenet_v2(scale=0.25) with adaptive pooling, and the conv1d / interpolate / group_norm /
instance_norm / pad3d / conv2d_transpose model; tests/fixtures/make_paddle_vision.py)
run in onnxruntime with Paddle's recorded outputs; and the ops mapped for them (adaptive
pooling to sizes that do not divide the input, prelu, eval rrelu, unfold, relu6) with numbaflow's."""
import sys

import numpy as np
import pytest

import numbaflow as paddle
import numbaflow.nn.functional as F
from numbaflow import static
from locations import TESTS

ort = pytest.importorskip("onnxruntime")
onnx = pytest.importorskip("onnx")

pytestmark = pytest.mark.usefixtures("fresh_graph_state")

sys.path.insert(0, str(TESTS / "fixtures"))
from make_paddle_vision import READBACK  # noqa: E402


def run_onnx(path, feed):
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    return sess.run(None, feed)


@pytest.mark.parametrize("name", sorted(READBACK))
def test_paddle_saved_model_exports_to_onnx_with_paddles_outputs(name, tmp_path):
    prefix, data = READBACK[name]
    exe = static.Executor(paddle.CPUPlace())
    program, feeds, fetches = static.load_inference_model(prefix, exe)
    path = paddle.onnx.export(program, [program.global_block().var(feeds[0])], fetches,
                              str(tmp_path / "m.onnx"))
    d = np.load(data)
    got, = run_onnx(path, {feeds[0]: d["x"]})
    # float32 sums in another order than Paddle's: relative to the output's scale
    np.testing.assert_allclose(got, d["out"], rtol=1e-5, atol=1e-6 * np.abs(d["out"]).max())


def test_adaptive_pool_prelu_rrelu_unfold_relu6_run_in_onnxruntime_with_our_outputs(tmp_path):
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        x = static.data("x", [None, 3, 7, 10], "float32")
        outs = [F.adaptive_avg_pool2d(x, [3, 4]), F.adaptive_max_pool2d(x, [5, 3]),
                F.adaptive_avg_pool2d(x, [7, 1]), F.relu6(x * 4.0)]
        outs += [F.prelu(x, static.create_parameter([n], "float32")) for n in (1, 3)]
        outs += [F.rrelu(x, 0.1, 0.4, training=False), F.unfold(x, [2, 3]),
                 F.unfold(x, [3, 2], strides=[2, 1], paddings=[1, 0, 2, 1], dilations=[1, 2])]
    exe = static.Executor(paddle.CPUPlace())
    exe.run(startup)
    feed = {"x": np.random.default_rng(5).normal(size=(2, 3, 7, 10)).astype("float32")}
    want = exe.run(main, feed=feed, fetch_list=outs)
    path = paddle.onnx.export(main, [x], outs, str(tmp_path / "m.onnx"))
    got = run_onnx(path, feed)
    for g, w in zip(got, want):
        assert g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


def test_adaptive_pool_of_unknown_spatial_dims_is_named(tmp_path):
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        x = static.data("x", [None, 3, None, None], "float32")
        y = F.adaptive_avg_pool2d(x, [3, 4])
    with pytest.raises(NotImplementedError, match=r"pool2d.*unknown spatial dims"):
        paddle.onnx.export(main, [x], [y], str(tmp_path / "m.onnx"))
