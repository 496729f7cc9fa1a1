"""Gradients through tensor arrays (issue 29): write_to_array / read_from_array and their
gradient ops (write_to_array_grad, read_from_array_grad) outside and inside while_loop,
checked by finite differences of the same maths written in numpy (float64), and a
while_loop that collects per-step outputs into an array, trained with SGD on a loss over
the stacked steps against the same training in numpy."""
import numpy as np
import pytest

import numbaflow as paddle
import numbaflow.static as static
from numbaflow.graph.verify import verify
from numbaflow.nn.initializer import Assign

pytestmark = pytest.mark.usefixtures("fresh_graph_state")
T = paddle.tensor
RNG = np.random.default_rng(7)
W0 = RNG.normal(size=(3, 3)) * 0.5
X0 = RNG.normal(size=(2, 3)) * 0.5
C = RNG.normal(size=(4, 2, 3))      # per-step weights of the loss: each step counts


def _fd(f, x, eps=1e-6):
    g = np.zeros_like(x)
    for k in range(x.size):
        d = np.zeros_like(x)
        d.flat[k] = eps
        g.flat[k] = (f(x + d) - f(x - d)) / (2 * eps)
    return g


def _programs():
    main, startup = static.Program(), static.Program()
    return main, startup, static.program_guard(main, startup)


def _x_and_w():
    x = static.data("x", [2, 3], "float64")
    x.stop_gradient = False
    w = static.create_parameter([3, 3], "float64", name="w", default_initializer=Assign(W0))
    return x, w


@pytest.mark.slow       # 40-70 s of numba compiling on a loaded 2-core machine
def test_gradient_outside_loops_matches_finite_differences():
    """Writes at constant and fed indexes, an element read twice (the gradients add), an
    element read, then overwritten and read again (the first value's gradient is only
    the first read's), an element written and never read (zero)."""
    main, startup, guard = _programs()
    with guard:
        x, w = _x_and_w()
        j = static.data("j", [1], "int64")
        arr = T.create_array("float64")
        T.array_write(x * 2.0, 0, arr)
        T.array_write(paddle.tanh(paddle.matmul(x, w)), j, arr)
        T.array_write(x * x, 2, arr)
        first = T.array_read(arr, 2)
        T.array_write(x * 3.0, 2, arr)
        T.array_write(x * 5.0, 4, arr)
        r0, r1, r1b, r2 = (T.array_read(arr, k) for k in (0, j, 1, 2))
        loss = paddle.sum(r0 * r1) + paddle.sum(r1b * r1b) + paddle.sum(first * r2)
        dx, dw = static.gradients([loss], [x, w])
    assert verify(main)
    types = [op.type for op in main.global_block().ops]
    assert types.count("write_to_array_grad") == 5 and types.count("read_from_array_grad") == 5

    def f(xx, ww):
        h = np.tanh(xx @ ww)
        return (2 * xx * h).sum() + (h * h).sum() + (xx * xx * 3 * xx).sum()
    exe = static.Executor(paddle.CPUPlace())
    exe.run(startup)
    for _ in range(2):      # the gradient array starts empty at each run
        got = exe.run(main, feed={"x": X0, "j": np.array([1])}, fetch_list=[loss, dx, dw])
        np.testing.assert_allclose(got[0], f(X0, W0), rtol=1e-12)
        np.testing.assert_allclose(got[1], _fd(lambda a: f(a, W0), X0), rtol=1e-6, atol=1e-9)
        np.testing.assert_allclose(got[2], _fd(lambda a: f(X0, a), W0), rtol=1e-6, atol=1e-9)


def _rnn_numpy(xx, ww, steps):
    """h_0 = x; h_{t+1} = tanh(h_t @ w + x); loss = sum_t sum(C_t * h_{t+1})."""
    h, loss = xx, 0.0
    for t in range(steps):
        h = np.tanh(h @ ww + xx)
        loss += (C[t] * h).sum()
    return loss


def _collecting_loop(x, w, steps, how):
    """The RNN above as a while_loop that writes step t's state at index t of an array;
    `how`: the array captured by the body, passed as a loop variable, or the state carried
    only through the array (the body reads step t-1 from it: no float loop variable)."""
    i = paddle.full([1], 0, "int64")
    n = paddle.full([1], steps, "int64")
    arr = T.create_array("float64")
    if how == "through_array":
        T.array_write(x * 1.0, 0, arr)

        def body(i):
            h = paddle.tanh(paddle.matmul(T.array_read(arr, i), w) + x)
            T.array_write(h, i + 1, arr)
            return [i + 1]
        static.nn.while_loop(lambda i: i < n, body, [i])
        outs = [T.array_read(arr, t + 1) for t in range(steps)]
    else:
        def body(i, h, *maybe_arr):
            h = paddle.tanh(paddle.matmul(h, w) + x)
            T.array_write(h, i, arr)
            return [i + 1, h, *maybe_arr]
        loop_vars = [i, x * 1.0] + ([arr] if how == "loop_var" else [])
        static.nn.while_loop(lambda i, h, *a: i < n, body, loop_vars)
        outs = [T.array_read(arr, t) for t in range(steps)]
    stacked = paddle.stack(outs)
    c = static.data("c", [steps, 2, 3], "float64")
    return paddle.sum(stacked * c)


@pytest.mark.parametrize("how", ["captured", "loop_var", "through_array"])
def test_while_loop_writing_an_array_matches_finite_differences(how):
    main, startup, guard = _programs()
    steps = 3
    with guard:
        x, w = _x_and_w()
        loss = _collecting_loop(x, w, steps, how)
        dx, dw = static.gradients([loss], [x, w])
    assert verify(main) and "while_grad" in [op.type for op in main.global_block().ops]
    exe = static.Executor(paddle.CPUPlace())
    exe.run(startup)
    feed = {"x": X0, "c": C[:steps]}
    for _ in range(2):
        got = exe.run(main, feed=feed, fetch_list=[loss, dx, dw])
        np.testing.assert_allclose(got[0], _rnn_numpy(X0, W0, steps), rtol=1e-12)
        np.testing.assert_allclose(got[1], _fd(lambda a: _rnn_numpy(a, W0, steps), X0),
                                   rtol=1e-6, atol=1e-9)
        np.testing.assert_allclose(got[2], _fd(lambda a: _rnn_numpy(X0, a, steps), W0),
                                   rtol=1e-6, atol=1e-9)


def test_sgd_trains_a_loop_that_collects_steps_in_an_array():
    """SGD on the loss over the stacked per-step outputs: the parameter after each step
    is numpy's SGD with finite-difference gradients, and the loss goes down. The state
    starts from x, which stops gradients: the loop variable still carries one (its next
    value depends on w; it was dropped before)."""
    main, startup, guard = _programs()
    steps, lr = 4, 0.05
    with guard:
        x, w = _x_and_w()
        x.stop_gradient = True
        loss = _collecting_loop(x, w, steps, "captured")
        paddle.optimizer.SGD(learning_rate=lr).minimize(loss)
    exe = static.Executor(paddle.CPUPlace())
    exe.run(startup)
    want_w, losses = W0.copy(), []
    for _ in range(4):
        got_loss, got_w = exe.run(main, feed={"x": X0, "c": C}, fetch_list=[loss, "w"])
        np.testing.assert_allclose(got_loss, _rnn_numpy(X0, want_w, steps), rtol=1e-7)
        want_w = want_w - lr * _fd(lambda a: _rnn_numpy(X0, a, steps), want_w)
        losses.append(float(np.asarray(got_loss).reshape(-1)[0]))
    np.testing.assert_allclose(static.global_scope().get("w"), want_w,
                               rtol=1e-6, atol=1e-9)
    assert losses == sorted(losses, reverse=True) and losses[-1] < losses[0]
