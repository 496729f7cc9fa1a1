"""Pooling, batch norm, dropout and embedding at the API level: names, shapes, running
statistics, test-mode clones, dropout randomness and seeding, errors, and a small network
that trains. (Forward vs numpy and gradients vs finite differences per op: the op table,
tests/op_rows/nn.py.)"""
import os

import numpy as np
import pytest

import numbaflow as paddle
import numbaflow.static as static
from numbaflow.graph import verify
from numbaflow.kernels import run_op
from numbaflow.nn import functional as F
from numbaflow.nn import functional_nn as NN
from numbaflow.nn import functional_pool as POOL
from numbaflow.utils import unique_name


pytestmark = pytest.mark.usefixtures("fresh_graph_state")   # tests/conftest.py


def build(fn):
    """Run fn() under a fresh (main, startup) pair; return (main, startup, fn's result)."""
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        out = fn()
    return main, startup, out


def exe_with(startup):
    exe = static.Executor(paddle.CPUPlace())
    exe.run(startup)
    return exe


# ---------------------------------------------------------------- names and shapes
def test_static_batch_norm_names_params_and_startup_values():
    def net():
        x = static.data("x", [None, 3, 4, 4])
        return NN.static_batch_norm(x, act="relu")
    main, startup, y = build(net)
    verify(main)
    block = main.global_block()
    bn = next(op for op in block.ops if op.type == "batch_norm")
    assert bn.input("Scale") == ["batch_norm_0.w_0"] and bn.input("Bias") == ["batch_norm_0.b_0"]
    assert bn.input("Mean") == bn.output("MeanOut") == ["batch_norm_0.w_1"]
    assert bn.input("Variance") == bn.output("VarianceOut") == ["batch_norm_0.w_2"]
    assert bn.output("Y") == ["batch_norm_0.tmp_2"] and y.name == "batch_norm_0.tmp_3"
    assert y.shape == (-1, 3, 4, 4) and block.ops[-1].type == "relu"
    trainable = {p.name for p in main.all_parameters() if p.trainable}
    assert trainable == {"batch_norm_0.w_0", "batch_norm_0.b_0"}
    for name in ("batch_norm_0.w_1", "batch_norm_0.w_2"):
        v = block.var(name)
        assert v.persistable and v.stop_gradient and v.shape == (3,)
    exe = exe_with(startup)
    scope = static.global_scope()
    for name, value in [("w_0", 1.0), ("b_0", 0.0), ("w_1", 0.0), ("w_2", 1.0)]:
        np.testing.assert_array_equal(scope.get(f"batch_norm_0.{name}"), np.full(3, value, "f"))
    x = np.random.default_rng(0).normal(size=(2, 3, 4, 4)).astype("float32")
    out, = exe.run(main, feed={"x": x}, fetch_list=[y])
    mu, var = x.mean(axis=(0, 2, 3), keepdims=True), x.var(axis=(0, 2, 3), keepdims=True)
    np.testing.assert_allclose(out, np.maximum((x - mu) / np.sqrt(var + 1e-5), 0), rtol=1e-4,
                               atol=1e-5)


def test_pool_embedding_dropout_shapes_and_names():
    def net():
        img = static.data("img", [None, 3, 7, 7])
        ids = static.data("ids", [None, 5], "int64")
        return (POOL.max_pool2d(img, 2), POOL.max_pool2d(img, 3, stride=2, padding=1),
                POOL.avg_pool2d(img, 2, ceil_mode=True), POOL.avg_pool2d(img, 3, 2, padding="SAME"),
                POOL.fluid_pool2d(img, global_pooling=True, pool_type="avg"),
                POOL.max_pool2d(static.data("nhwc", [None, 6, 6, 2]), 2, data_format="NHWC"),
                NN.static_embedding(ids, size=[10, 4], padding_idx=-1),
                NN.dropout(img, 0.5))
    main, startup, outs = build(net)
    verify(main)
    assert [o.shape for o in outs[:7]] == [(-1, 3, 3, 3), (-1, 3, 4, 4), (-1, 3, 4, 4),
                                           (-1, 3, 4, 4), (-1, 3, 1, 1), (-1, 3, 3, 2),
                                           (-1, 5, 4)]
    assert outs[0].name == "pool2d_0.tmp_0"
    block = main.global_block()
    look = next(op for op in block.ops if op.type == "lookup_table_v2")
    assert look.input("W") == ["embedding_0.w_0"] and look.attr("padding_idx") == 9
    drop = next(op for op in block.ops if op.type == "dropout")
    mask = block.var(drop.output("Mask")[0])
    assert outs[7].name == "dropout_0.tmp_0" and mask.name == "dropout_0.tmp_1"
    assert mask.dtype == np.uint8 and mask.stop_gradient
    assert drop.attr("dropout_implementation") == "upscale_in_train"
    assert drop.attr("seed") != 0 and not drop.attr("fix_seed")    # from numbaflow.seed
    # every shape agrees with what the kernels produce
    exe = exe_with(startup)
    rng = np.random.default_rng(0)
    got = exe.run(main, feed={"img": rng.normal(size=(2, 3, 7, 7)).astype("f"),
                              "ids": rng.integers(0, 10, (2, 5)),
                              "nhwc": rng.normal(size=(2, 6, 6, 2)).astype("f")},
                  fetch_list=list(outs))
    for o, g in zip(outs, got):
        assert g.shape == tuple(2 if d == -1 else d for d in o.shape)


def test_max_pool_gradient_goes_to_the_first_maximum_of_each_window():
    """Paddle's MaxPool2dGradFunctor: on ties, the first element in row-major order."""
    x = np.zeros((1, 1, 4, 4))
    x[0, 0, 1, 1] = x[0, 0, 0, 3] = x[0, 0, 1, 2] = 1.0     # window 2 ties at (0,3), (1,2)
    out = run_op("pool2d", {"X": x}, {"ksize": [2, 2], "strides": [2, 2]})["Out"]
    dx = run_op("pool2d_grad", {"X": x, "Out": out, "Out@GRAD": np.ones_like(out)},
                {"ksize": [2, 2], "strides": [2, 2]})["X@GRAD"][0, 0]
    want = np.zeros((4, 4))
    want[1, 1] = want[0, 3] = want[2, 0] = want[2, 2] = 1.0
    np.testing.assert_array_equal(dx, want)


# ---------------------------------------------------------------- batch norm statistics
def _bn_net(momentum=0.9, shape=(None, 3, 2, 2)):
    x = static.data("x", list(shape))
    y = NN.static_batch_norm(x, momentum=momentum)
    loss = paddle.mean(paddle.square(y))
    paddle.optimizer.SGD(learning_rate=0.1).minimize(loss)
    return x, y, loss


@pytest.mark.parametrize("shape", [(None, 3, 2, 2), (None, 3)], ids=["4d", "2d"])
def test_batch_norm_running_stats_after_two_steps_match_numpy(shape):
    main, startup, (x, y, loss) = build(lambda: _bn_net(0.8, shape))
    exe = exe_with(startup)
    scope = static.global_scope()
    rng = np.random.default_rng(1)
    full = (6,) + tuple(shape[1:])
    axes = (0, 2, 3) if len(shape) == 4 else (0,)
    mean, var = np.zeros(3), np.ones(3)
    sh = (1, 3) + (1,) * (len(shape) - 2)
    for step in range(2):
        xb = rng.normal(2.0, 3.0, size=full).astype("float32")
        scale, bias = (scope.get(f"batch_norm_0.{n}").reshape(sh).copy() for n in ("w_0", "b_0"))
        y_val, = exe.run(main, feed={"x": xb}, fetch_list=[y])
        mean = 0.8 * mean + 0.2 * xb.mean(axis=axes)
        var = 0.8 * var + 0.2 * xb.var(axis=axes)         # biased batch variance, as Paddle
        np.testing.assert_allclose(scope.get("batch_norm_0.w_1"), mean, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(scope.get("batch_norm_0.w_2"), var, rtol=1e-5)
        # the step normalised with the batch statistics and the pre-update scale / bias
        xhat = (xb - xb.mean(axis=axes).reshape(sh)) / np.sqrt(xb.var(axis=axes).reshape(sh) +
                                                                 1e-5)
        np.testing.assert_allclose(y_val, xhat * scale + bias, rtol=1e-4, atol=1e-5)


def test_clone_for_test_uses_running_stats_and_leaves_them_unchanged():
    main, startup, (x, y, loss) = build(_bn_net)
    test_prog = main.clone(for_test=True)
    bn = [op for op in test_prog.global_block().ops if op.type == "batch_norm"]
    assert len(bn) == 1 and bn[0].attr("is_test") is True
    assert not any(op.type.endswith("_grad") or op.type == "sgd"
                   for op in test_prog.global_block().ops)
    exe = exe_with(startup)
    scope = static.global_scope()
    rng = np.random.default_rng(2)
    for _ in range(3):
        exe.run(main, feed={"x": rng.normal(1.0, 2.0, (4, 3, 2, 2)).astype("f")})
    before = {n: scope.get(f"batch_norm_0.{n}").copy() for n in ("w_0", "b_0", "w_1", "w_2")}
    xt = rng.normal(size=(5, 3, 2, 2)).astype("float32")
    out1, = exe.run(test_prog, feed={"x": xt}, fetch_list=[y])
    out2, = exe.run(test_prog, feed={"x": xt[:1]}, fetch_list=[y])  # batch-independent
    for n, v in before.items():
        np.testing.assert_array_equal(scope.get(f"batch_norm_0.{n}"), v)
    sh = (1, 3, 1, 1)
    want = ((xt - before["w_1"].reshape(sh)) / np.sqrt(before["w_2"].reshape(sh) + 1e-5) *
            before["w_0"].reshape(sh) + before["b_0"].reshape(sh))
    np.testing.assert_allclose(out1, want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out2, want[:1], rtol=1e-5, atol=1e-6)


def test_functional_batch_norm_training_flag_and_use_global_stats():
    # persistable running statistics and parameters, filled by the startup program
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        x = static.data("x", [None, 2])
        v = {name: paddle.optimizer.Optimizer._persistable(main.global_block(), name, [2],
                                                            "float32", value)
             for name, value in [("rm", 0.5), ("rv", 2.0), ("w", 1.5), ("b", -1.0)]}
        y_train = NN.batch_norm(x, v["rm"], v["rv"], v["w"], v["b"], training=True,
                                momentum=0.5)
        y_eval = NN.batch_norm(x, v["rm"], v["rv"], v["w"], v["b"])
    ops = [op for op in main.global_block().ops if op.type == "batch_norm"]
    assert ops[0].attr("is_test") is False and ops[0].attr("use_global_stats") is False
    assert ops[1].attr("is_test") is True and ops[1].attr("use_global_stats") is True
    exe = exe_with(startup)
    xb = np.array([[1.0, 2.0], [3.0, 6.0]], "float32")
    yt, ye = exe.run(main, feed={"x": xb}, fetch_list=[y_train, y_eval])
    np.testing.assert_allclose(yt, (xb - xb.mean(0)) / np.sqrt(xb.var(0) + 1e-5) * 1.5 - 1.0,
                               rtol=1e-5)
    rm, rv = 0.5 * 0.5 + 0.5 * xb.mean(0), 0.5 * 2.0 + 0.5 * xb.var(0)
    np.testing.assert_allclose(static.global_scope().get("rm"), rm, rtol=1e-6)
    # the eval op runs after the training op's update, on the updated statistics
    np.testing.assert_allclose(ye, (xb - rm) / np.sqrt(rv + 1e-5) * 1.5 - 1.0, rtol=1e-5)


# ---------------------------------------------------------------- dropout
N_DROP = (200, 100)


def _dropout_prog(fn, shape=N_DROP):
    def net():
        x = static.data("x", [None, shape[1]])
        x.stop_gradient = False
        return x, fn(x)
    main, startup, (x, out) = build(net)
    drop = next(op for op in main.global_block().ops if op.type == "dropout")
    return main, startup, x, out, main.global_block().var(drop.output("Mask")[0])


def test_dropout_statistics_and_upscale_scaling():
    main, startup, x, out, mask = _dropout_prog(lambda x: NN.dropout(x, p=0.3))
    exe = exe_with(startup)
    xs = np.random.default_rng(0).uniform(1.0, 2.0, N_DROP).astype("float32")
    o, m = exe.run(main, feed={"x": xs}, fetch_list=[out, mask])
    frac = 1.0 - m.mean()
    assert abs(frac - 0.3) < 5 * np.sqrt(0.3 * 0.7 / m.size), frac
    assert m.dtype == np.uint8 and set(np.unique(m)) == {0, 1}
    np.testing.assert_array_equal(o == 0, m == 0)
    np.testing.assert_allclose(o[m == 1], xs[m == 1] / 0.7, rtol=1e-6)
    # downgrade_in_infer (fluid's default) keeps values unscaled in training
    main, startup, x, out, mask = _dropout_prog(lambda x: NN.fluid_dropout(x, 0.6))
    o, m = exe_with(startup).run(main, feed={"x": xs}, fetch_list=[out, mask])
    assert abs((1.0 - m.mean()) - 0.6) < 5 * np.sqrt(0.6 * 0.4 / m.size)
    np.testing.assert_array_equal(o, xs * m)


def _masks(seed, runs=2, fn=lambda x: NN.dropout(x, 0.5)):
    paddle.seed(seed)
    with unique_name.guard(), static.scope_guard(static.Scope()):
        main, startup, x, out, mask = _dropout_prog(fn, (4, 8))
        exe = exe_with(startup)
        xs = np.ones((4, 8), "float32")
        return [exe.run(main, feed={"x": xs}, fetch_list=[mask])[0] for _ in range(runs)]


def test_dropout_is_reproducible_under_seed_and_draws_a_new_mask_each_run():
    a1, a2 = _masks(11)
    b1, b2 = _masks(11)
    np.testing.assert_array_equal(a1, b1)
    np.testing.assert_array_equal(a2, b2)
    assert not np.array_equal(a1, a2)            # the generator advances between runs
    c1, _ = _masks(12)
    assert not np.array_equal(a1, c1)


def test_fluid_dropout_with_a_seed_fixes_the_mask_as_paddle():
    m1, m2 = _masks(3, fn=lambda x: NN.fluid_dropout(x, 0.5, seed=77))
    np.testing.assert_array_equal(m1, m2)
    n1, _ = _masks(4, fn=lambda x: NN.fluid_dropout(x, 0.5, seed=77))
    np.testing.assert_array_equal(m1, n1)


def test_dropout_test_modes():
    xs = np.random.default_rng(3).normal(size=(4, 6)).astype("float32")
    cases = [(lambda x: NN.dropout(x, 0.4, training=False), xs),
             (lambda x: NN.dropout(x, 0.4, training=False, mode="downscale_in_infer"),
              xs * np.float32(0.6)),
             (lambda x: NN.fluid_dropout(x, 0.4, is_test=True), xs * np.float32(0.6)),
             (lambda x: NN.fluid_dropout(x, 0.4, is_test=True,
                                         dropout_implementation="upscale_in_train"), xs)]
    for fn, want in cases:
        with unique_name.guard():
            main, startup, x, out, mask = _dropout_prog(fn, (4, 6))
            o, = exe_with(startup).run(main, feed={"x": xs}, fetch_list=[out])
        np.testing.assert_allclose(o, want, rtol=1e-6)
    # a training program cloned for test: identity (upscale) / (1 - p) (downgrade)
    for fn, scale in [(lambda x: NN.dropout(x, 0.4), 1.0), (lambda x: NN.fluid_dropout(x, 0.4),
                                                            0.6)]:
        with unique_name.guard():
            main, startup, x, out, mask = _dropout_prog(fn, (4, 6))
        test_prog = main.clone(for_test=True)
        o, = exe_with(startup).run(test_prog, feed={"x": xs}, fetch_list=[out.name])
        np.testing.assert_allclose(o, xs * np.float32(scale), rtol=1e-6)
    # p == 0 is no op at all, as in Paddle
    def net():
        x = static.data("x", [None, 3])
        return x, NN.dropout(x, 0.0), NN.fluid_dropout(x, 0.0)
    main, startup, (x, out, fluid_out) = build(net)
    assert out is x and fluid_out is x and not main.global_block().ops


@pytest.mark.parametrize("mode,scale", [("upscale_in_train", 1 / 0.75),
                                        ("downscale_in_infer", 1.0)])
def test_dropout_gradient_is_the_scaled_mask(mode, scale):
    main, startup, x, out, mask = _dropout_prog(lambda x: NN.dropout(x, 0.25, mode=mode), (6, 5))
    with static.program_guard(main, startup):
        w = static.data("w", [6, 5])
        loss = paddle.sum(paddle.multiply(out, w))
        dx, = static.gradients([loss], [x])
    assert "dropout_grad" in [op.type for op in main.global_block().ops]
    rng = np.random.default_rng(4)
    ws = rng.normal(size=(6, 5)).astype("float32")
    g, m = exe_with(startup).run(main, feed={"x": np.ones((6, 5), "f"), "w": ws},
                                 fetch_list=[dx, mask])
    assert 0 < m.sum() < m.size
    np.testing.assert_allclose(g, ws * m * np.float32(scale), rtol=1e-6)


def test_dropout_program_survives_save_and_load_inference_model(tmp_path):
    def net():
        x = static.data("x", [None, 4])
        return x, NN.dropout(static.nn.fc(x, 3), 0.5)
    main, startup, (x, y) = build(net)
    exe = exe_with(startup)
    prefix = os.path.join(str(tmp_path), "model")
    static.save_inference_model(prefix, [x], [y], exe, program=main.clone(for_test=True))
    prog, feeds, fetches = static.load_inference_model(prefix, exe)
    xs = np.ones((2, 4), "float32")
    np.testing.assert_allclose(exe.run(prog, feed={feeds[0]: xs}, fetch_list=fetches)[0],
                               exe.run(main.clone(for_test=True), feed={"x": xs},
                                       fetch_list=[y])[0])


# ---------------------------------------------------------------- embedding
def test_embedding_padding_rows_are_zero_and_get_no_gradient():
    def net():
        ids = static.data("ids", [None, 3], "int64")
        emb = NN.static_embedding(ids, size=[6, 2], padding_idx=0)
        w = static.data("w", [None, 3, 2])
        loss = paddle.sum(paddle.multiply(emb, w))
        return ids, emb, loss
    main, startup, (ids, emb, loss) = build(net)
    with static.program_guard(main, startup):
        (param, grad), = static.append_backward(loss)
    assert param.name == "embedding_0.w_0" and param.shape == (6, 2)
    exe = exe_with(startup)
    table = static.global_scope().get("embedding_0.w_0").copy()
    id_vals = np.array([[0, 2, 2], [5, 0, 2]])
    ws = np.random.default_rng(5).normal(size=(2, 3, 2)).astype("float32")
    e, g = exe.run(main, feed={"ids": id_vals, "w": ws}, fetch_list=[emb, grad])
    want = table[id_vals]
    want[id_vals == 0] = 0.0
    np.testing.assert_array_equal(e, want)
    want_g = np.zeros((6, 2), "float32")
    for i, k in np.ndenumerate(id_vals):
        if k != 0:
            want_g[k] += ws[i]                   # repeated ids accumulate
    np.testing.assert_allclose(g, want_g, rtol=1e-6)
    assert not g[0].any()


def test_functional_embedding_negative_padding_idx_counts_from_the_end():
    def net():
        ids = static.data("ids", [4], "int64")
        weight = paddle.optimizer.Optimizer._persistable(
            static.default_main_program().global_block(), "table", [5, 3], "float32", 1.0)
        return NN.embedding(ids, weight, padding_idx=-1)
    main, startup, out = build(net)
    op = main.global_block().ops[-1]
    assert op.type == "lookup_table_v2" and op.attr("padding_idx") == 4
    o, = exe_with(startup).run(main, feed={"ids": np.array([4, 1, 4, 0])}, fetch_list=[out])
    np.testing.assert_array_equal(o.sum(axis=1), [0.0, 3.0, 0.0, 3.0])


# ---------------------------------------------------------------- errors
def test_out_of_range_ids_raise_naming_the_op_and_leave_state_unchanged():
    def net():
        x = static.data("x", [None, 2])
        ids = static.data("ids", [None], "int64")
        h = NN.static_batch_norm(x)          # updates running stats before the lookup
        e = NN.static_embedding(ids, size=[4, 2])
        return x, ids, paddle.add(paddle.mean(h), paddle.mean(e))
    main, startup, (x, ids, loss) = build(net)
    exe = exe_with(startup)
    scope = static.global_scope()
    before = scope.get("batch_norm_0.w_1").copy()
    with pytest.raises(ValueError, match=r"lookup_table_v2.*id 7 .*outside \[0, 4\)"):
        exe.run(main, feed={"x": np.ones((3, 2), "f") * 5, "ids": np.array([1, 7, 2])},
                fetch_list=[loss])
    np.testing.assert_array_equal(scope.get("batch_norm_0.w_1"), before)
    with pytest.raises(ValueError, match="outside"):
        exe.run(main, feed={"x": np.ones((3, 2), "f"), "ids": np.array([-1])}, fetch_list=[loss])


@pytest.mark.parametrize("call,err,match", [
    (lambda x: POOL.max_pool2d(x, 0), ValueError, "kernel_size must be positive"),
    (lambda x: POOL.max_pool2d(x, 9), ValueError, "pool2d: output size"),
    (lambda x: POOL.max_pool2d(x, 2, padding=[1, 2, 3]), ValueError, "padding must be"),
    (lambda x: POOL.max_pool2d(x, 2, padding=-1), ValueError, "padding must be >= 0"),
    (lambda x: POOL.max_pool2d(x, 2, padding="VALID", ceil_mode=True), ValueError, "ceil_mode"),
    (lambda x: POOL.max_pool2d(x, 2, data_format="NWHC"), ValueError, "data_format"),
    (lambda x: POOL.avg_pool2d(x, 2, divisor_override=3), ValueError, "divisor_override"),
    (lambda x: POOL.fluid_pool2d(x), ValueError, "pool_size must be given"),
    (lambda x: POOL.fluid_pool2d(x, 2, pool_type="min"), ValueError, "pool_type"),
    (lambda x: POOL.max_pool2d(paddle.reshape(x, [-1, 48]), 2), ValueError, "must be 4-D"),
    (lambda x: NN.dropout(x, 1.5), ValueError, r"in \[0, 1\]"),
    (lambda x: NN.dropout(x, "0.5"), TypeError, "float"),
    (lambda x: NN.dropout(x, 0.5, axis=5), ValueError, "axis must be dims of x"),
    (lambda x: NN.dropout(x, 0.5, mode="scale"), ValueError, "mode"),
    (lambda x: NN.static_batch_norm(x, data_layout="CHWN"), ValueError, "data format"),
    (lambda x: NN.static_embedding(x, size=[4, 2]), TypeError, "int64"),
    (lambda x: NN.static_embedding(paddle.cast(x, "int64"), size=[4, 2], padding_idx=4),
     ValueError, "padding_idx"),
    (lambda x: NN.embedding(paddle.cast(x, "int64"), x), ValueError, "2-D"),
])
def test_bad_arguments_raise(call, err, match):
    def net():
        x = static.data("x", [None, 3, 4, 4])
        with pytest.raises(err, match=match):
            call(x)
    build(net)


def test_batch_norm_op_checks_parameter_shapes():
    main = static.Program()
    block = main.global_block()
    x = block.create_var("x", (2, 3, 4), "float32", is_data=True)
    stats = {s: block.create_var(s, (4,), "float32") for s in ("Scale", "Bias", "Mean",
                                                               "Variance")}
    with pytest.raises(ValueError, match=r"batch_norm: Scale Scale must have shape \(3,\)"):
        block.append_op("batch_norm", dict(X=x, **stats),
                        {s: block.create_var(f"o{s}") for s in ("Y", "SavedMean",
                                                                "SavedVariance")})


# ---------------------------------------------------------------- a small network trains
@pytest.mark.slow
def test_pool_fc_batch_norm_dropout_net_trains():
    rng = np.random.default_rng(0)
    n, classes = 240, 3
    labels = rng.integers(0, classes, n)
    centers = rng.normal(0, 1.5, (classes, 2, 4, 4))
    imgs = (centers[labels] + rng.normal(0, 1.0, (n, 2, 4, 4))).astype("float32")

    def net():
        img = static.data("img", [None, 2, 4, 4])
        label = static.data("label", [None, 1], "int64")
        pooled = POOL.avg_pool2d(img, 2)                            # (N, 2, 2, 2)
        peak = POOL.max_pool2d(img, 3, stride=1, padding=1)         # (N, 2, 4, 4)
        h = static.nn.fc([pooled, peak], 32)
        h = NN.static_batch_norm(h, act="relu")
        h = NN.dropout(h, 0.2)
        logits = static.nn.fc(h, classes)
        loss = F.cross_entropy(logits, label)
        paddle.optimizer.Adam(learning_rate=0.02).minimize(loss)
        return img, label, logits, loss
    main, startup, (img, label, logits, loss) = build(net)
    verify(main)
    test_prog = main.clone(for_test=True)
    exe = exe_with(startup)
    losses = []
    for epoch in range(6):
        for i in range(0, n, 40):
            lv, = exe.run(main, feed={"img": imgs[i:i + 40], "label": labels[i:i + 40, None]},
                          fetch_list=[loss])
            losses.append(float(lv))
    assert np.mean(losses[-6:]) < 0.5 * np.mean(losses[:6]), losses
    out, = exe.run(test_prog, feed={"img": imgs}, fetch_list=[logits.name])
    assert (out.argmax(1) == labels).mean() > 0.9
