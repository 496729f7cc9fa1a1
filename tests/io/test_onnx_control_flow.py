"""ONNX export of control flow (issue 29 item 1): `cond` (conditional_block + select_input)
becomes an ONNX `If`, `while_loop` (`while`) a `Loop` carrying the loop variables;
onnxruntime runs the exports with numbaflow's outputs (a program built here, both branches,
a cond nested in a loop body) and with Paddle 2.6.2's (its cond_while model of
tests/fixtures/paddle_control_flow/). Tensor arrays are refused, their ops named."""
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


def test_paddles_cond_while_model_runs_in_onnxruntime_with_paddles_outputs(tmp_path):
    exe = static.Executor(paddle.CPUPlace())
    program, feeds, fetches = static.load_inference_model(str(FIXTURES / "cond_while"), exe)
    path = paddle.onnx.export(program, [program.global_block().var(feeds[0])], fetches,
                              str(tmp_path / "m.onnx"))
    data = np.load(FIXTURES / "cond_while.npz")
    for k in range(2):
        got = run_onnx(path, {"x": data[f"feed{k}_x"]})
        for j, g in enumerate(got):
            np.testing.assert_allclose(g, data[f"out{k}_{j}"], rtol=1e-5, atol=1e-6)


def test_a_loop_over_a_tensor_array_is_refused_naming_the_array_ops(tmp_path):
    exe = static.Executor(paddle.CPUPlace())
    program, feeds, fetches = static.load_inference_model(str(FIXTURES / "while_array"), exe)
    with pytest.raises(NotImplementedError,
                       match="no ONNX mapping.*'read_from_array', 'write_to_array'"):
        paddle.onnx.export(program, [program.global_block().var(feeds[0])], fetches,
                           str(tmp_path / "m.onnx"))
    assert not (tmp_path / "m.onnx").exists()
