"""ONNX export of control flow (issue 29 item 1): `cond` (conditional_block + select_input)
becomes an ONNX `If`, `while_loop` (`while`) a `Loop` carrying the loop variables and the
tensor arrays (ONNX sequences); onnxruntime runs the exports with numbaflow's outputs
(programs built here: both branches, a cond nested in a loop body, an array written at
each step's index and overwritten) and with Paddle 2.6.2's (its cond_while and
while_array models of tests/fixtures/paddle_control_flow/)."""
import numpy as np
import pytest

import numbaflow as paddle
import numbaflow.static as static
from locations import TESTS

ort = pytest.importorskip("onnxruntime")
onnx = pytest.importorskip("onnx")

pytestmark = pytest.mark.usefixtures("fresh_graph_state")

FIXTURES = TESTS / "fixtures" / "paddle_control_flow"


def run_onnx(path, feed):
    return ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, feed)


def node_types(path):
    types = set()

    def walk(graph):
        for node in graph.node:
            types.add(node.op_type)
            for a in node.attribute:
                if a.type == onnx.AttributeProto.GRAPH:
                    walk(a.g)
    walk(onnx.load(path).graph)
    return types


def test_cond_and_while_with_a_nested_cond_run_in_onnxruntime(tmp_path):
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        x = static.data("x", [None, 3], "float32")
        h = static.nn.fc(x, 4)
        y = static.nn.cond(paddle.mean(x) > 0, lambda: h * 2.0, lambda: paddle.exp(h))

        def body(z, n):
            z = static.nn.cond(paddle.mean(z) > 1.0, lambda: z * 0.5, lambda: z + 0.75)
            return [paddle.tanh(z) + 1.0, n + 1]
        z, n = static.nn.while_loop(lambda z, n: n < 5, body,
                                    [y, paddle.full([1], 0, "int64")])
    exe = static.Executor(paddle.CPUPlace())
    exe.run(startup)
    path = paddle.onnx.export(main, [x], [y, z, n], str(tmp_path / "m.onnx"))
    assert {"If", "Loop"} <= node_types(path)
    for v in (1.0, -1.0):
        xv = np.full((2, 3), v, "float32")
        want = exe.run(main, feed={"x": xv}, fetch_list=[y, z, n])
        for got, w in zip(run_onnx(path, {"x": xv}), want):
            np.testing.assert_allclose(got, w, rtol=1e-5, atol=1e-6)
    assert want[2].tolist() == [5]


@pytest.mark.parametrize("name", ["cond_while", "while_array"])
def test_paddles_models_run_in_onnxruntime_with_paddles_outputs(name, tmp_path):
    exe = static.Executor(paddle.CPUPlace())
    program, feeds, fetches = static.load_inference_model(str(FIXTURES / name), exe)
    path = paddle.onnx.export(program, [program.global_block().var(feeds[0])], fetches,
                              str(tmp_path / "m.onnx"))
    assert "Loop" in node_types(path)
    data = np.load(FIXTURES / f"{name}.npz")
    for k in range(len([f for f in data.files if f.endswith("_x")])):
        got = run_onnx(path, {"x": data[f"feed{k}_x"]})
        for j, g in enumerate(got):
            np.testing.assert_allclose(g, data[f"out{k}_{j}"], rtol=1e-5, atol=1e-6)


def test_tensor_array_loop_built_here_runs_in_onnxruntime(tmp_path):
    """numbaflow's own lowering: a cond, then a loop writing each step into an array at
    its index and overwriting element 0 each step; reads and the length after it."""
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        x = static.data("x", [None, 3], "float32")
        arr = paddle.tensor.create_array("float32")
        zero = paddle.full([1], 0, "int64")

        def body(i, h):
            h = paddle.tanh(h) + 0.5
            paddle.tensor.array_write(h, i, arr)
            paddle.tensor.array_write(h * 2.0, zero, arr)       # replaces element 0
            return [i + 1, h]
        static.nn.while_loop(lambda i, h: i < 4, body, [paddle.full([1], 0, "int64"), x])
        reads = [paddle.tensor.array_read(arr, paddle.full([1], k, "int64")) for k in (0, 2)]
        n = paddle.tensor.array_length(arr)
    exe = static.Executor(paddle.CPUPlace())
    exe.run(startup)
    path = paddle.onnx.export(main, [x], reads + [n], str(tmp_path / "m.onnx"))
    assert {"Loop", "SequenceInsert", "SequenceAt"} <= node_types(path)
    xv = np.linspace(-1, 1, 6, dtype="float32").reshape(2, 3)
    want = exe.run(main, feed={"x": xv}, fetch_list=reads + [n])
    for got, w in zip(run_onnx(path, {"x": xv}), want):
        np.testing.assert_allclose(got, w, rtol=1e-5, atol=1e-6)
    assert want[2].tolist() == [4]
