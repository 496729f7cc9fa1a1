"""numbaflow.fluid: Paddle 1.x programs run with only the import changed."""

import numpy as np
import pytest

import numbaflow.fluid as fluid
from numbaflow.graph import verify
from numbaflow.kernels.tensor import creation


@pytest.fixture(autouse=True)
def fresh():
    # deterministic initial parameters (as numbaflow.seed(2024)), restored after the test
    with creation.seed_guard(2024), fluid.scope_guard(fluid.Scope()), \
            fluid.unique_name.guard():
        yield


def programs():
    return fluid.Program(), fluid.Program()


def housing(n=64, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 13)).astype("float32")
    w = rng.normal(size=(13, 1)).astype("float32")
    return x, (x @ w + 0.5).astype("float32")


def fit_a_line(opt=None):
    main, startup = programs()
    with fluid.program_guard(main, startup):
        x = fluid.layers.data(name="x", shape=[13], dtype="float32")
        y = fluid.layers.data(name="y", shape=[1], dtype="float32")
        y_predict = fluid.layers.fc(input=x, size=1, act=None)
        cost = fluid.layers.square_error_cost(input=y_predict, label=y)
        avg_cost = fluid.layers.mean(cost)
        (opt or fluid.optimizer.SGD(learning_rate=0.01)).minimize(avg_cost)
    return main, startup, avg_cost


@pytest.mark.slow
def test_fit_a_line_trains():
    main, startup, avg_cost = fit_a_line()
    verify(main)
    assert [op.type for op in main.global_block().ops] == [
        "mul", "elementwise_add", "elementwise_sub", "square", "reduce_mean", "reshape2",
        "fill_constant", "reshape2_grad", "reduce_mean_grad", "square_grad",
        "elementwise_sub_grad",
        "elementwise_add_grad", "mul_grad", "sgd", "sgd"]
    assert sorted(p.name for p in main.all_parameters()) == ["fc_0.b_0", "fc_0.w_0"]
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    x, y = housing()
    losses = [float(exe.run(main, feed={"x": x, "y": y}, fetch_list=[avg_cost])[0][0])
              for _ in range(60)]
    assert losses[-1] < 0.5 * losses[0]
    assert all(b < a for a, b in zip(losses, losses[1:]))     # full-batch GD on a convex loss


def test_sgd_step_matches_numpy_with_l2_regularization():
    lr, coeff = 0.05, 0.1
    main, startup, avg_cost = fit_a_line(fluid.optimizer.SGDOptimizer(
        learning_rate=lr, regularization=fluid.regularizer.L2Decay(coeff)))
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    scope = fluid.global_scope()
    w, b = scope.get("fc_0.w_0"), scope.get("fc_0.b_0")
    x, y = housing(16)
    exe.run(main, feed={"x": x, "y": y})
    err = x @ w + b - y
    gw, gb = 2 * x.T @ err / len(x), 2 * err.sum(0) / len(x)
    np.testing.assert_allclose(scope.get("fc_0.w_0"), w - lr * (gw + coeff * w), rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_allclose(scope.get("fc_0.b_0"), b - lr * (gb + coeff * b), rtol=1e-5,
                               atol=1e-6)


def test_optimizers_accept_fluid_keywords():
    main, startup = programs()
    with fluid.program_guard(main, startup):
        x = fluid.layers.data("x", [13])
        h = fluid.layers.fc(x, 4, act="tanh")
        pred = fluid.layers.fc(h, 1)
        loss = fluid.layers.mean(fluid.layers.square_error_cost(pred, fluid.layers.data("y", [1])))
        frozen = main.global_block().var("fc_0.w_0")
        train_only = [p for p in main.all_parameters() if p is not frozen]
        ops, params_grads = fluid.optimizer.MomentumOptimizer(
            learning_rate=0.1, momentum=0.9, parameter_list=train_only,
            grad_clip=fluid.clip.GradientClipByGlobalNorm(1.0)).minimize(loss)
    assert [op.type for op in ops] == ["momentum"] * 3
    assert frozen not in [p for p, _ in params_grads]
    exe = fluid.Executor()
    exe.run(startup)
    before = fluid.global_scope().get("fc_0.w_0")
    x, y = housing(8)
    exe.run(main, feed={"x": x, "y": y})
    np.testing.assert_array_equal(fluid.global_scope().get("fc_0.w_0"), before)
    adam = fluid.optimizer.AdamOptimizer(learning_rate=0.01, beta1=0.8, regularization=1e-4)
    assert isinstance(adam, fluid.optimizer.Adam) and adam.regularization.coeff == 1e-4
    with pytest.raises(TypeError):
        fluid.optimizer.SGD(learning_rate=0.1, weight_decay=0.1)   # a 2.x name, not fluid's


def test_data_prepends_the_batch_dimension():
    main, startup = programs()
    with fluid.program_guard(main, startup):
        assert fluid.layers.data("a", [13]).shape == (-1, 13)
        assert fluid.layers.data("b", [3, 32, 32]).shape == (-1, 3, 32, 32)
        assert fluid.layers.data("c", [-1, 13]).shape == (-1, 13)
        assert fluid.layers.data("d", [None, 5]).shape == (-1, 5)
        assert fluid.layers.data("e", [4, -1]).shape == (4, -1)       # any -1: none added
        assert fluid.layers.data("f", [13], append_batch_size=False).shape == (13,)
        lab = fluid.layers.data("g", [1], dtype="int64")
        assert (lab.shape, str(lab.dtype)) == ((-1, 1), "int64")
        assert str(fluid.layers.data("h", [2], "float64").dtype) == "float64"
        v = fluid.data("i", [None, 7])                             # fluid.data: as given
        assert v.shape == (-1, 7) and v.is_data and v.stop_gradient
    with pytest.raises(TypeError, match="shape"):
        fluid.layers.data("z", 13)


def _run(main, startup, feed, fetch):
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    return exe.run(main, feed=feed, fetch_list=fetch)


def test_elementwise_axis_reductions_matmul_and_friends():
    rng = np.random.default_rng(0)
    xa = rng.normal(size=(2, 3, 4)).astype("float32")
    ya = rng.normal(size=(3,)).astype("float32")
    ma = rng.normal(size=(4, 5)).astype("float32")
    main, startup = programs()
    with fluid.program_guard(main, startup):
        x = fluid.layers.data("x", [3, 4])
        y = fluid.layers.data("y", [3], append_batch_size=False)
        m = fluid.layers.data("m", [4, 5], append_batch_size=False)
        outs = [
            fluid.layers.elementwise_add(x, y, axis=1),
            fluid.layers.elementwise_sub(x, y, axis=1, act="relu"),
            fluid.layers.elementwise_mul(x, y, axis=1),
            fluid.layers.elementwise_div(x, fluid.layers.fill_constant([4], "float32", 2.0)),
            fluid.layers.reduce_mean(x, dim=1),
            fluid.layers.reduce_sum(x, dim=[0, 2], keep_dim=True),
            fluid.layers.reduce_mean(x),
            fluid.layers.matmul(x, m, alpha=0.5),
            fluid.layers.matmul(m, x, transpose_x=True, transpose_y=True),
            fluid.layers.argmax(x),
            fluid.layers.argmax(x, axis=2),
            fluid.layers.cast(x, "float64"),
            fluid.layers.softmax(x),
            fluid.layers.sigmoid(x),
            fluid.layers.tanh(x),
            fluid.layers.relu(x),
        ]
    got = _run(main, startup, {"x": xa, "y": ya, "m": ma}, outs)
    yb = ya[None, :, None]
    e = np.exp(xa - xa.max(-1, keepdims=True))
    expected = [xa + yb, np.maximum(xa - yb, 0), xa * yb, xa / 2, xa.mean(1),
                xa.sum((0, 2), keepdims=True), [xa.mean()], 0.5 * (xa @ ma),
                ma.T @ xa.transpose(0, 2, 1), xa.argmax(0), xa.argmax(2), xa.astype("float64"),
                e / e.sum(-1, keepdims=True), 1 / (1 + np.exp(-xa)), np.tanh(xa),
                np.maximum(xa, 0)]
    for i, (g, want) in enumerate(zip(got, expected)):
        assert g.shape == np.shape(want), (i, g.shape, np.shape(want))
        assert g.dtype == np.asarray(want).dtype or g.dtype.kind == np.asarray(want).dtype.kind, i
        np.testing.assert_allclose(g, want, rtol=1e-5, atol=1e-6, err_msg=str(i))
    assert got[-5].dtype == np.float64 and got[9].dtype == np.int64


def test_elementwise_dtype_mismatch_is_a_type_error():
    main, startup = programs()
    with fluid.program_guard(main, startup):
        x = fluid.layers.data("x", [3])
        y = fluid.layers.data("y", [3], dtype="float64")
        with pytest.raises(TypeError, match="same dtype"):
            fluid.layers.elementwise_add(x, y)


def test_shape_ops_reshape_concat():
    rng = np.random.default_rng(1)
    a = rng.normal(size=(2, 6)).astype("float32")
    b = rng.normal(size=(2, 6)).astype("float32")
    main, startup = programs()
    with fluid.program_guard(main, startup):
        x = fluid.layers.data("x", [6])
        y = fluid.layers.data("y", [6])
        r = fluid.layers.reshape(x, [0, 2, 3])
        c = fluid.layers.concat([x, y], axis=1)
    got = _run(main, startup, {"x": a, "y": b}, [r, c])
    np.testing.assert_array_equal(got[0], a.reshape(2, 2, 3))
    np.testing.assert_array_equal(got[1], np.concatenate([a, b], 1))


def blobs(n, seed):
    """Three well separated Gaussian clusters in 2-D."""
    rng = np.random.default_rng(seed)
    centers = np.array([[3.0, 0.0], [-3.0, 2.0], [0.0, -3.0]])
    label = rng.integers(0, 3, n)
    x = centers[label] + rng.normal(scale=0.7, size=(n, 2))
    return x.astype("float32"), label.reshape(-1, 1).astype("int64")


@pytest.mark.slow
def test_softmax_classifier_with_cross_entropy_trains():
    main, startup = programs()
    with fluid.program_guard(main, startup):
        img = fluid.layers.data(name="img", shape=[2], dtype="float32")
        label = fluid.layers.data(name="label", shape=[1], dtype="int64")
        hidden = fluid.layers.fc(input=img, size=16, act="relu")
        prediction = fluid.layers.fc(input=hidden, size=3, act="softmax")
        cost = fluid.layers.cross_entropy(input=prediction, label=label)
        avg_cost = fluid.layers.mean(cost)
        acc = fluid.layers.accuracy(input=prediction, label=label)
        test_program = main.clone(for_test=True)
        fluid.optimizer.Adam(learning_rate=0.05).minimize(avg_cost)
    assert cost.shape == (-1, 1)
    types = [op.type for op in main.global_block().ops]
    assert types[:6] == ["mul", "elementwise_add", "relu", "mul", "elementwise_add", "softmax"]
    assert "cross_entropy" in types and "cross_entropy_grad" in types
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    xt, yt = blobs(300, 1)
    acc0, = exe.run(test_program, feed={"img": xt, "label": yt}, fetch_list=[acc])
    xs, ys = blobs(256, 0)
    losses = []
    for step in range(60):
        sl = slice((step % 4) * 64, (step % 4 + 1) * 64)
        loss_v, = exe.run(main, feed={"img": xs[sl], "label": ys[sl]}, fetch_list=[avg_cost])
        losses.append(float(loss_v[0]))       # Paddle 1.x: a loss of shape (1,)
    probs, acc1 = exe.run(test_program, feed={"img": xt, "label": yt},
                          fetch_list=[prediction, acc])
    assert np.mean(losses[-4:]) < 0.3 * np.mean(losses[:4])
    assert acc1.shape == (1,) and acc1[0] >= 0.95 and acc1[0] > acc0[0]
    np.testing.assert_allclose(acc1[0], (probs.argmax(1) == yt[:, 0]).mean(), atol=1e-6)


def test_cross_entropy_is_per_sample_on_probabilities():
    p = np.array([[0.2, 0.5, 0.3], [0.7, 0.2, 0.1]], "float32")
    lab = np.array([[1], [2]], "int64")
    main, startup = programs()
    with fluid.program_guard(main, startup):
        x = fluid.layers.data("p", [3])
        y = fluid.layers.data("y", [1], dtype="int64")
        ce = fluid.layers.cross_entropy(x, y)
        logits_ce = fluid.layers.softmax_with_cross_entropy(x, y)
    got, got2 = _run(main, startup, {"p": p, "y": lab}, [ce, logits_ce])
    np.testing.assert_allclose(got, -np.log([[0.5], [0.1]]), rtol=1e-6)
    e = np.exp(p - p.max(1, keepdims=True))
    sm = e / e.sum(1, keepdims=True)
    np.testing.assert_allclose(got2, -np.log(sm[[0, 1], [1, 2]])[:, None], rtol=1e-5)


def test_namespace():
    for name in ["layers", "ParallelExecutor", "optimizer", "Executor", "CPUPlace", "CUDAPlace", "Program",
                 "program_guard", "default_main_program", "default_startup_program",
                 "global_scope", "scope_guard", "CompiledProgram", "BuildStrategy",
                 "ExecutionStrategy", "ParamAttr", "initializer", "unique_name", "backward",
                 "gradients", "io"]:
        assert hasattr(fluid, name), name
    assert callable(fluid.ParallelExecutor)
    for name in ["ConstantInitializer", "UniformInitializer", "NormalInitializer",
                 "XavierInitializer", "MSRAInitializer"]:
        assert callable(getattr(fluid.initializer, name)), name
    assert callable(fluid.backward.append_backward)
    assert fluid.io.save is fluid.save and callable(fluid.io.load)
    from numbaflow.nn import functional_conv, functional_nn, functional_pool
    assert fluid.layers.conv2d is functional_conv.fluid_conv2d
    assert fluid.layers.pool2d is functional_pool.fluid_pool2d
    assert fluid.layers.batch_norm is functional_nn.fluid_batch_norm
    assert fluid.layers.dropout is functional_nn.fluid_dropout      # downgrade_in_infer default


def test_param_attr_initializer_and_append_backward():
    main, startup = programs()
    with fluid.program_guard(main, startup):
        x = fluid.layers.data("x", [3])
        out = fluid.layers.fc(x, 2, param_attr=fluid.ParamAttr(
            name="w", initializer=fluid.initializer.ConstantInitializer(0.5)),
            bias_attr=fluid.ParamAttr(initializer=fluid.initializer.Constant(1.0)))
        loss = fluid.layers.reduce_sum(out)
        params_grads = fluid.backward.append_backward(loss)
    assert sorted(p.name for p, _ in params_grads) == ["fc_0.b_0", "w"]
    xa = np.arange(6, dtype="float32").reshape(2, 3)
    o, gw = _run(main, startup, {"x": xa}, [out, "w@GRAD"])
    np.testing.assert_allclose(o, xa.sum(1, keepdims=True) * 0.5 + 1.0 + np.zeros((2, 2)))
    np.testing.assert_allclose(gw, np.repeat(xa.sum(0)[:, None], 2, 1))
