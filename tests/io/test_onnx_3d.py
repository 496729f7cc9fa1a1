"""ONNX export of the 3-D ops (conv3d, pool3d: ONNX Conv / MaxPool / AveragePool are N-d;
adaptive pools to sizes that do not divide the input as per-bin Slice + Reduce): onnxruntime
runs the exported model with numbaflow's outputs."""
import numpy as np
import pytest

import numbaflow as paddle
import numbaflow.nn.functional as F
import numbaflow.static as static

ort = pytest.importorskip("onnxruntime")
onnx = pytest.importorskip("onnx")

pytestmark = pytest.mark.usefixtures("fresh_graph_state")


def test_3d_ops_run_in_onnxruntime_with_our_outputs(tmp_path):
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        x = static.data("x", [None, 4, 5, 6, 7], "float32")
        w = static.create_parameter([6, 2, 3, 2, 3], "float32")
        b = static.create_parameter([6], "float32")
        outs = [F.conv3d(x, w, b, stride=[1, 2, 1], padding=[1, 0, 0, 1, 1, 2], groups=2,
                         dilation=[1, 1, 2]),
                F.conv3d(x, static.create_parameter([3, 4, 2, 2, 2], "float32"),
                         padding="VALID"),
                F.max_pool3d(x, 3, stride=2, padding=1),
                F.avg_pool3d(x, [2, 3, 2], stride=[1, 2, 2], padding=[1, 1, 0],
                             exclusive=False),
                F.avg_pool3d(x, 2, padding=1),
                F.adaptive_avg_pool3d(x, [5, 3, 7]), F.adaptive_max_pool3d(x, [2, 4, 3]),
                F.adaptive_avg_pool3d(x, 1)]
    exe = static.Executor(paddle.CPUPlace())
    exe.run(startup)
    feed = {"x": np.random.default_rng(3).normal(size=(2, 4, 5, 6, 7)).astype("float32")}
    want = exe.run(main, feed=feed, fetch_list=outs)
    path = paddle.onnx.export(main, [x], outs, str(tmp_path / "m.onnx"))
    onnx.checker.check_model(onnx.load(path))
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    for g, w_ in zip(sess.run(None, feed), want):
        np.testing.assert_allclose(g, w_, rtol=1e-5, atol=1e-5)


def test_channels_last_3d_is_named(tmp_path):
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        x = static.data("x", [None, 4, 4, 4, 2], "float32")
        out = F.max_pool3d(x, 2, data_format="NDHWC")
    with pytest.raises(NotImplementedError, match=r"pool3d.*data_format 'NDHWC'"):
        paddle.onnx.export(main, [x], [out], str(tmp_path / "m.onnx"))
