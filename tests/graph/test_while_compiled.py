"""A hot `while` body with fixed shapes runs the rest of the loop as native calls (issue 29
item 8: the body's compiled segment looped on the condition, `segment_while`), with the
numbers of the Python-driven loop: numpy references, several chunks, a loop that ends
at once, and the gradient path (which keeps per-iteration values) left on the driven
loop."""
import numpy as np
import pytest

import numbaflow as paddle
import numbaflow.static as static
from numbaflow.executor import control_flow, segments

# each waits for the body's segment compile (seconds on a cold cache)
pytestmark = [pytest.mark.usefixtures("fresh_graph_state"), pytest.mark.slow]


def _loop_program():
    main = static.Program()
    with static.program_guard(main, static.Program()):
        n = static.data("n", [1], "int64")
        i = paddle.full([1], 0, "int64")
        x = paddle.full([4], 1.0, "float32")
        i, x = static.nn.while_loop(lambda i, x: i < n,
                                    lambda i, x: [i + 1, x * 0.5 + 1.0], [i, x])
    return main, i, x


def _numpy_loop(steps):
    x = np.ones(4, np.float32)
    for _ in range(steps):
        x = x * np.float32(0.5) + np.float32(1.0)
    return x


def test_hot_body_runs_natively_with_the_same_numbers(monkeypatch):
    main, i, x = _loop_program()
    exe = static.Executor(paddle.CPUPlace())
    for _ in range(10):          # hot: the body's plan compiles its segment
        exe.run(main, feed={"n": np.array([3])}, fetch_list=[i, x])
    segments.wait_for_compiles()
    exe.run(main, feed={"n": np.array([3])}, fetch_list=[i, x])   # activates it
    chunks = []
    real = segments.Unit.run_while

    def counted(self, k, flag):
        chunks.append(k)
        return real(self, k, flag)
    monkeypatch.setattr(segments.Unit, "run_while", counted)
    steps = 2 * control_flow.WHILE_CHUNK + 5       # three native chunks
    got_i, got_x = exe.run(main, feed={"n": np.array([steps])}, fetch_list=[i, x])
    assert len(chunks) == 3
    assert got_i.tolist() == [steps]
    np.testing.assert_array_equal(got_x, _numpy_loop(steps))
    for steps in (0, 1, 7):      # the first iteration runs through the plan, the rest not
        got_i, got_x = exe.run(main, feed={"n": np.array([steps])}, fetch_list=[i, x])
        assert got_i.tolist() == [steps]
        np.testing.assert_array_equal(got_x, _numpy_loop(steps))


def test_a_loop_with_a_gradient_keeps_the_driven_path(monkeypatch):
    main = static.Program()
    with static.program_guard(main, static.Program()):
        x = static.data("x", [3], "float32")
        x.stop_gradient = False
        i = paddle.full([1], 0, "int64")
        three = paddle.full([1], 3, "int64")
        _, y = static.nn.while_loop(lambda i, y: i < three, lambda i, y: [i + 1, y * 2.0],
                                    [i, x])
        loss = paddle.sum(y)
        (dx,) = static.gradients([loss], [x])
    monkeypatch.setattr(segments.Unit, "run_while", lambda *a: pytest.fail("native loop"))
    exe = static.Executor(paddle.CPUPlace())
    for _ in range(10):
        got_y, got_dx = exe.run(main, feed={"x": np.ones(3, "float32")}, fetch_list=[y, dx])
    segments.wait_for_compiles()
    got_y, got_dx = exe.run(main, feed={"x": np.ones(3, "float32")}, fetch_list=[y, dx])
    np.testing.assert_array_equal(got_y, np.full(3, 8.0))
    np.testing.assert_array_equal(got_dx, np.full(3, 8.0))
