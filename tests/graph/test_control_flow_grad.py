"""`while_loop` runs (numpy references, errors naming the op and the iteration) and
gradients through `cond` (finite differences; a cond inside a model trained with SGD
against the same training written in numpy). Issue 29."""
import numpy as np
import pytest

import numbaflow as paddle
import numbaflow.static as static
from numbaflow.graph.verify import verify
from numbaflow.nn.initializer import Assign

pytestmark = pytest.mark.usefixtures("fresh_graph_state")


@pytest.fixture
def prog():
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        yield main, startup


def exe():
    return static.Executor(paddle.CPUPlace())


# ---------------------------------------------------------------- while_loop
def test_while_loop_matches_numpy_over_fed_values(prog):
    """x <- tanh(x @ w) + 0.1 while sum(x) < limit: data-dependent trip counts."""
    main, _ = prog
    x0 = static.data("x", [2, 3], "float64")
    w = static.data("w", [3, 3], "float64")
    limit = static.data("limit", [1], "float64")
    n = paddle.full([1], 0, "int64")

    def body(x, n):
        return [paddle.tanh(paddle.matmul(x, w)) + 0.1, n + 1]
    x, n = static.nn.while_loop(lambda x, n: paddle.sum(x) < limit, body, [x0, n])
    assert verify(main) and "while" in [op.type for op in main.global_block().ops]
    rng = np.random.default_rng(0)
    wv = rng.normal(size=(3, 3)) * 0.5
    e = exe()
    for lim in (0.0, 1.0, 2.5, 3.0):
        xv = rng.normal(size=(2, 3)) * 0.1
        want, k = xv.copy(), 0
        while want.sum() < lim and k < 1000:
            want, k = np.tanh(want @ wv) + 0.1, k + 1
        if k == 1000:
            continue
        got_x, got_n = e.run(main, feed={"x": xv, "w": wv, "limit": np.array([lim])},
                             fetch_list=[x, n])
        np.testing.assert_allclose(got_x, want, rtol=1e-12)
        assert got_n[0] == k


def test_while_loop_swapped_loop_variables(prog):
    """A body returning its loop variables swapped (Fibonacci): each gets the other's old
    value, not one already overwritten."""
    main, _ = prog
    a, b = paddle.full([1], 0, "int64"), paddle.full([1], 1, "int64")
    i = paddle.full([1], 0, "int64")
    a, b, i = static.nn.while_loop(lambda a, b, i: i < 10, lambda a, b, i: [b, a + b, i + 1],
                                   [a, b, i])
    got = exe().run(main, fetch_list=[a, b])
    assert (got[0][0], got[1][0]) == (55, 89)


def test_while_loop_error_names_op_and_iteration(prog):
    main, _ = prog
    i = paddle.full([1], 0, "int64")
    acc = paddle.full([1], 0, "int64")
    three = paddle.full([1], 3, "int64")
    twelve = paddle.full([1], 12, "int64")
    i, acc = static.nn.while_loop(lambda i, acc: i < 5,
                                  lambda i, acc: [i + 1, acc + twelve / (three - i)], [i, acc])
    with pytest.raises(ZeroDivisionError, match=r"op while failed.*iteration 3: op "
                                                 r"elementwise_div failed"):
        exe().run(main, fetch_list=[acc])


def test_while_loop_build_errors(prog):
    i = paddle.full([1], 0, "int64")
    with pytest.raises(ValueError, match=r"changes loop variable 0 .* from \(1,\) int64 to "
                                         r"\(2,\)"):
        static.nn.while_loop(lambda i: i < 3, lambda i: paddle.concat([i, i]), [i])
    with pytest.raises(ValueError, match="must return 1 loop variable"):
        static.nn.while_loop(lambda i: i < 3, lambda i: [i, i], [i])
    with pytest.raises(TypeError, match="loop_vars must be a non-empty list"):
        static.nn.while_loop(lambda i: i < 3, lambda i: i, i)
    with pytest.raises(TypeError, match="pred must be a bool Variable"):
        static.nn.while_loop(lambda i: i + 1, lambda i: i, [i])


@pytest.mark.parametrize("nv", [0, 1, 4])
def test_while_loop_gradient_matches_finite_differences(prog, nv):
    """y <- tanh(y @ w) + x, n times (n fed), from y = 2x; loss = sum(y * y) + sum(x * y0)
    (the initial value also read outside the loop): d/dx and d/dw by finite differences."""
    main, startup = prog
    x = static.data("x", [2, 2], "float64")
    x.stop_gradient = False
    n = static.data("n", [1], "int64")
    wv = np.array([[0.5, -0.3], [0.2, 0.8]])
    w = static.create_parameter([2, 2], "float64", name="w", default_initializer=Assign(wv))
    y0 = x * 2.0
    extra = paddle.sum(x * y0)          # reads y0 before the loop updates it in place
    i = paddle.full([1], 0, "int64")
    y, i = static.nn.while_loop(lambda y, i: i < n,
                                lambda y, i: [paddle.tanh(paddle.matmul(y, w)) + x, i + 1],
                                [y0, i])
    loss = paddle.sum(y * y) + extra
    dx, dw = static.gradients([loss], [x, w])
    assert verify(main) and "while_grad" in [op.type for op in main.global_block().ops]
    e = exe()
    e.run(startup)
    xv = np.array([[0.1, -0.2], [0.3, 0.4]])

    def f(xx, ww):
        yy = 2 * xx
        extra = (xx * yy).sum()
        for _ in range(nv):
            yy = np.tanh(yy @ ww) + xx
        return (yy * yy).sum() + extra
    got_loss, got_dx, got_dw = e.run(main, feed={"x": xv, "n": np.array([nv])},
                                     fetch_list=[loss, dx, dw])
    np.testing.assert_allclose(got_loss, f(xv, wv), rtol=1e-12)
    np.testing.assert_allclose(got_dx, _fd(lambda a: f(a, wv), xv), rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(got_dw, _fd(lambda a: f(xv, a), wv), rtol=1e-6, atol=1e-9)


def test_while_loop_gradient_needs_is_test_false(prog):
    x = static.data("x", [2], "float32")
    x.stop_gradient = False
    i = paddle.full([1], 0, "int64")
    y, i = static.nn.while_loop(lambda y, i: i < 3, lambda y, i: [y * 2.0, i + 1],
                                [x * 1.0, i], is_test=True)
    with pytest.raises(NotImplementedError, match="is_test=True, so it keeps no per-iteration"):
        static.gradients([paddle.sum(y)], [x])


# ---------------------------------------------------------------- gradients through cond
def _fd(f, x, eps=1e-6):
    g = np.zeros_like(x)
    for k in range(x.size):
        d = np.zeros_like(x)
        d.flat[k] = eps
        g.flat[k] = (f(x + d) - f(x - d)) / (2 * eps)
    return g


@pytest.mark.parametrize("sv", [1.5, -0.5])
def test_cond_gradient_matches_finite_differences(prog, sv):
    main, startup = prog
    x = static.data("x", [2, 3], "float64")
    x.stop_gradient = False
    s = static.data("s", [1], "float64")
    wv = np.random.default_rng(2).normal(size=(3, 2))
    w = static.create_parameter([3, 2], "float64", name="w",
                                default_initializer=Assign(wv))

    def true_fn():      # uses the parameter and the input twice
        h = paddle.matmul(x, w)
        return paddle.sum(paddle.tanh(h) * h * s)

    def false_fn():     # also a nested cond
        return static.nn.cond(paddle.sum(x) > 0.0, lambda: paddle.sum(paddle.exp(x)),
                              lambda: paddle.sum(x * x * x))
    loss = static.nn.cond(s > 0.0, true_fn, false_fn)
    dx, dw = static.gradients([loss], [x, w])
    assert verify(main)
    types = [op.type for op in main.global_block().ops]
    assert "select_output" in types and types.count("conditional_block") == 4
    e = exe()
    e.run(startup)
    xv = np.random.default_rng(3).normal(size=(2, 3))

    def f_x(xx):
        return e.run(main, feed={"x": xx, "s": np.array([sv])}, fetch_list=[loss])[0]
    got_dx, got_dw = e.run(main, feed={"x": xv, "s": np.array([sv])}, fetch_list=[dx, dw])
    np.testing.assert_allclose(got_dx, _fd(lambda xx: float(f_x(xx)), xv), rtol=1e-6, atol=1e-8)

    def np_loss(wm):
        if sv > 0:
            h = xv @ wm
            return float((np.tanh(h) * h).sum() * sv)
        return float(np.exp(xv).sum() if xv.sum() > 0 else (xv ** 3).sum())
    np.testing.assert_allclose(got_dw, _fd(np_loss, wv), rtol=1e-6, atol=1e-8)
    if sv < 0:      # the branch not taken gives the parameter no gradient
        assert not got_dw.any()


def test_sgd_training_with_cond_matches_numpy(prog):
    """y = x @ w1 when mean(x) > 0 else relu(x) @ w2; MSE; SGD lr 0.1, five steps, on
    batches taking both branches: the parameters follow the numpy computation."""
    main, startup = prog
    rng = np.random.default_rng(4)
    w1v, w2v = rng.normal(size=(3, 1)), rng.normal(size=(3, 1))
    x = static.data("x", [4, 3], "float64")
    t = static.data("t", [4, 1], "float64")
    w1 = static.create_parameter([3, 1], "float64", name="w1", default_initializer=Assign(w1v))
    w2 = static.create_parameter([3, 1], "float64", name="w2", default_initializer=Assign(w2v))
    y = static.nn.cond(paddle.mean(x) > 0.0, lambda: paddle.matmul(x, w1),
                       lambda: paddle.matmul(paddle.nn.functional.relu(x), w2))
    loss = paddle.mean((y - t) * (y - t))
    test_prog = main.clone(for_test=True)
    paddle.optimizer.SGD(learning_rate=0.1).minimize(loss)
    e = exe()
    e.run(startup)
    for step in range(5):
        xv = rng.normal(size=(4, 3)) + (0.8 if step % 2 else -0.8)
        tv = rng.normal(size=(4, 1))
        got, = e.run(main, feed={"x": xv, "t": tv}, fetch_list=[loss])
        if xv.mean() > 0:
            yv = xv @ w1v
            w1v = w1v - 0.1 * xv.T @ (2 * (yv - tv) / 4)
        else:
            h = np.maximum(xv, 0)
            yv = h @ w2v
            w2v = w2v - 0.1 * h.T @ (2 * (yv - tv) / 4)
        np.testing.assert_allclose(got, ((yv - tv) ** 2).mean(), rtol=1e-6, atol=1e-9)
    scope = static.global_scope()
    np.testing.assert_allclose(np.asarray(scope.get("w1")), w1v, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(np.asarray(scope.get("w2")), w2v, rtol=1e-6, atol=1e-9)
    # the evaluation copy made before minimize runs the cond with the trained weights
    xv = rng.normal(size=(4, 3)) + 1.0
    got, = e.run(test_prog, feed={"x": xv, "t": np.zeros((4, 1))}, fetch_list=[y.name])
    np.testing.assert_allclose(got, xv @ w1v, rtol=1e-6, atol=1e-9)


def test_compiled_program_with_cond_matches_plain_executor(prog):
    """A CompiledProgram (its build passes) trains a model with fc layers inside the
    branches exactly as Executor.run of the program does."""
    main, startup = prog
    x = static.data("x", [4, 3], "float32")
    t = static.data("t", [4, 1], "float32")
    h = static.nn.fc(x, 5, activation="relu")
    y = static.nn.cond(paddle.mean(x) > 0, lambda: static.nn.fc(h, 1),
                       lambda: static.nn.fc(h * 2.0, 1))
    loss = paddle.mean((y - t) * (y - t))
    paddle.optimizer.Adam(0.01).minimize(loss)
    rng = np.random.default_rng(5)
    feeds = [{"x": rng.normal(size=(4, 3)).astype("float32") + (1 if i % 2 else -1),
              "t": np.ones((4, 1), "float32")} for i in range(6)]
    runs = []
    for target in (main, static.CompiledProgram(main)):
        with static.scope_guard(static.Scope()):
            e = exe()
            e.run(startup)
            runs.append([float(e.run(target, feed=f, fetch_list=[loss])[0]) for f in feeds])
    np.testing.assert_allclose(runs[1], runs[0], rtol=1e-6)
    # with_data_parallel: tests/distributed/test_data_parallel_control_flow.py


def test_clone_and_serialization_keep_while_gradients(prog):
    """A program with a loop and its gradient, copied by clone() and by numbaflow's
    program format, computes the same gradient."""
    from numbaflow.graph.serialize import program_from_dict, program_to_dict
    main, _ = prog
    x = static.data("x", [3], "float64")
    x.stop_gradient = False
    i = paddle.full([1], 0, "int64")
    y, i = static.nn.while_loop(lambda y, i: i < 3, lambda y, i: [paddle.tanh(y) * x, i + 1],
                                [x * 1.0, i])
    dx, = static.gradients([paddle.sum(y)], [x])
    xv = np.array([0.3, -0.7, 1.1])

    def f(a):
        yy = a.copy()
        for _ in range(3):
            yy = np.tanh(yy) * a
        return yy.sum()
    want = _fd(f, xv)
    for p in (main, main.clone(), program_from_dict(program_to_dict(main))):
        assert verify(p)
        got, = exe().run(p, feed={"x": xv}, fetch_list=[dx.name])
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-9)


def test_cond_inside_while_and_while_inside_cond_with_gradients(prog):
    main, _ = prog
    x = static.data("x", [3], "float64")
    x.stop_gradient = False
    i = paddle.full([1], 0, "int64")

    def body(y, i):
        y2 = static.nn.cond(paddle.sum(y) > 0.0, lambda: y * x - 0.5,
                            lambda: paddle.tanh(y) + x)
        return [y2, i + 1]
    y, i = static.nn.while_loop(lambda y, i: i < 4, body, [x * 1.0, i])
    z = static.nn.cond(paddle.sum(x) > 0.0,
                       lambda: static.nn.while_loop(lambda a, k: k < 2,
                                                    lambda a, k: [a * 1.5, k + 1],
                                                    [y, paddle.full([1], 0, "int64")])[0],
                       lambda: y * 1.0)
    loss = paddle.sum(z * z)
    dx, = static.gradients([loss], [x])
    assert verify(main)

    def f(a):
        yy = a.copy()
        for _ in range(4):
            yy = yy * a - 0.5 if yy.sum() > 0 else np.tanh(yy) + a
        if a.sum() > 0:
            yy = yy * 1.5 * 1.5
        return (yy * yy).sum()
    e = exe()
    for xv in (np.array([0.3, 0.5, 0.9]), np.array([-0.3, 0.2, -0.4])):
        got_loss, got_dx = e.run(main, feed={"x": xv}, fetch_list=[loss, dx])
        np.testing.assert_allclose(got_loss, f(xv), rtol=1e-12)
        np.testing.assert_allclose(got_dx, _fd(f, xv), rtol=1e-6, atol=1e-9)
