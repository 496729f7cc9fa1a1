"""Autodiff: gradient accumulation, stop_gradient, no_grad_set, gradients()."""
import numpy as np
import pytest

import numbaflow as paddle
import numbaflow.static as static
from numbaflow.graph import verify
from numbaflow.utils import unique_name


def run(main, feed, fetch):
    return static.Executor(paddle.CPUPlace()).run(main, feed=feed, fetch_list=fetch,
                                                  scope=static.Scope())


def test_gradient_of_reused_variable_is_summed():
    main = static.Program()
    with static.program_guard(main, static.Program()), unique_name.guard():
        x = static.data("x", [3], "float64")
        x.stop_gradient = False
        y = x * x + paddle.exp(x)           # x used three times
        loss = paddle.sum(y)
        dx, = static.gradients([loss], [x])
    types = [op.type for op in main.global_block().ops]
    assert "sum" in types                       # contributions accumulated by a sum op
    assert dx.name == "x@GRAD"
    verify(main)
    xv = np.array([0.5, -1.0, 2.0])
    got, = run(main, {"x": xv}, [dx])
    np.testing.assert_allclose(got, 2 * xv + np.exp(xv), rtol=1e-12)


def test_stop_gradient_and_no_grad_set_prune():
    main = static.Program()
    with static.program_guard(main, static.Program()), unique_name.guard():
        x = static.data("x", [None, 2])
        h1 = static.nn.fc(x, 3)
        h1.stop_gradient = True                 # nothing flows back into fc_0
        h2 = static.nn.fc(h1, 1)
        loss = paddle.mean(h2)
        pg = static.append_backward(loss)
    assert {p.name for p, _ in pg} == {"fc_1.w_0", "fc_1.b_0"}
    assert "fc_0.w_0@GRAD" not in main.global_block().vars

    main2 = static.Program()
    with static.program_guard(main2, static.Program()), unique_name.guard():
        x = static.data("x", [None, 2])
        loss = paddle.mean(static.nn.fc(x, 1))
        pg = static.append_backward(loss, no_grad_set={"fc_0.b_0"})
    assert [p.name for p, _ in pg] == ["fc_0.w_0"]


def test_append_backward_rejects_non_scalar_loss():
    main = static.Program()
    with static.program_guard(main, static.Program()):
        x = static.data("x", [None, 2])
        with pytest.raises(ValueError, match="scalar"):
            static.append_backward(static.nn.fc(x, 2))
        with pytest.raises(TypeError):
            static.append_backward("loss")


def test_gradients_against_finite_differences_through_a_small_net():
    rng = np.random.default_rng(0)
    xv = rng.standard_normal((4, 3))
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup), unique_name.guard():
        x = static.data("x", [None, 3], "float64")
        x.stop_gradient = False
        h = paddle.tanh(static.nn.fc(x, 5))
        y = paddle.nn.functional.sigmoid(static.nn.fc(h, 2))
        loss = paddle.mean(y * y)
        dx, = static.gradients(loss, x)
    scope = static.Scope()
    exe = static.Executor(paddle.CPUPlace())
    exe.run(startup, scope=scope)
    got, = exe.run(main, feed={"x": xv}, fetch_list=[dx], scope=scope)
    fwd = main.clone(for_test=True)

    def f(v):
        return exe.run(fwd, feed={"x": v}, fetch_list=[loss.name], scope=scope)[0]
    num = np.zeros_like(xv)
    for i in np.ndindex(xv.shape):
        e = np.zeros_like(xv)
        e[i] = 1e-6
        num[i] = (f(xv + e) - f(xv - e)) / 2e-6
    np.testing.assert_allclose(got, num, rtol=1e-6, atol=1e-9)


def test_gradients_with_target_gradients():
    main = static.Program()
    with static.program_guard(main, static.Program()), unique_name.guard():
        x = static.data("x", [3], "float64")
        x.stop_gradient = False
        w = static.data("w", [3], "float64")
        y = x * 3.0
        dx, = static.gradients([y], [x], target_gradients=[w])
    got, = run(main, {"x": np.ones(3), "w": np.array([1.0, 2.0, 3.0])}, [dx])
    np.testing.assert_allclose(got, [3.0, 6.0, 9.0])
