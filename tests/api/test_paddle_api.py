"""Names Paddle programs use (issue 10): program introspection, fluid.core / framework /
compiler / executor modules, Variable indexing, creation functions, fluid.layers
additions, fluid.nets, initializers, weight sharing by ParamAttr name and Paddle 1.x's
(1,) full reductions, each checked against numpy or the equivalent 2.x spelling."""
import math
import re

import numpy as np
import pytest

import numbaflow as paddle
import numbaflow.fluid as fluid
import numbaflow.static as static
from numbaflow.utils import unique_name

RNG = np.random.default_rng(0)


def run(build, feed, scope=None):
    """Build under fresh programs, run startup and main once; (main, fetched values)."""
    main, startup = static.Program(), static.Program()
    # fresh names (conv2d_0.w_0, ...) whatever earlier tests in this process built
    with static.program_guard(main, startup), unique_name.guard():
        outs = build()
    exe, scope = static.Executor(paddle.CPUPlace()), scope or static.Scope()
    exe.run(startup, scope=scope)
    outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
    return main, exe.run(main, feed=feed, fetch_list=outs, scope=scope), scope


# ---------------------------------------------------------------- introspection, modules
def test_operator_introspection_as_in_paddles_clone_docs():
    from numbaflow.utils import unique_name
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup), unique_name.guard():
        x = static.data("x", [None, 4])
        loss = paddle.mean(static.nn.fc(x, 2, activation="relu"))
        paddle.optimizer.SGD(0.1).minimize(loss)
    ops = main.global_block().ops
    mul = ops[0]
    assert mul.type == "mul" and mul.input("X") == ["x"] and mul.input("Y") == ["fc_0.w_0"]
    assert mul.output("Out") == ["fc_0.tmp_0"]
    assert mul.all_attrs() == {"x_num_col_dims": 1, "y_num_col_dims": 1}
    assert mul.attr("x_num_col_dims") == 1
    with pytest.raises(ValueError, match="no attribute 'nope'"):
        mul.attr("nope")
    sgd = [op for op in ops if op.type == "sgd"]
    assert {op.input("Param")[0] for op in sgd} == {"fc_0.w_0", "fc_0.b_0"}


def test_core_framework_compiler_executor_modules():
    from numbaflow.fluid import compiler, core, executor
    assert isinstance(core.CPUPlace(), paddle.CPUPlace)
    assert isinstance(core.Scope(), static.Scope)
    assert core.is_compiled_with_cuda() in (True, False)
    assert core.get_cuda_device_count() >= 0
    assert compiler.CompiledProgram is static.CompiledProgram
    assert compiler.BuildStrategy is static.BuildStrategy
    assert executor.Executor is static.Executor and executor.global_scope is static.global_scope
    assert paddle.framework.core is core
    assert paddle.framework.default_main_program is static.default_main_program
    assert len(fluid.cpu_places(3)) == 3 and fluid.cuda_places is static.cuda_places
    t = core.LoDTensor()
    t.set(np.arange(3.0), core.CPUPlace())
    np.testing.assert_array_equal(np.array(t), np.arange(3.0))
    assert core.VarDesc.VarType.FP32 == np.float32


# ---------------------------------------------------------------- Variable.__getitem__
def test_getitem_values_fetch_and_gradient():
    xv = RNG.uniform(-1, 1, (5, 4, 3)).astype("float32")

    def build():
        x = static.data("x", [None, 4, 3])
        x.stop_gradient = False
        parts = [x[0], x[:, 1:3], x[1, -1], x[..., 2], x[-2:, :, 0:1], x[::-1], x[:, ::2, 1],
                 x[1:, 3:0:-2]]
        loss = paddle.sum(x[:, 1:3] * 2.0) + paddle.sum(x[1, -1]) + paddle.sum(x[:, ::-3])
        (g,) = static.gradients([loss], [x])
        return parts + [g]
    _, got, _ = run(build, {"x": xv})
    want = [xv[0], xv[:, 1:3], xv[1, -1], xv[..., 2], xv[-2:, :, 0:1], xv[::-1], xv[:, ::2, 1],
            xv[1:, 3:0:-2]]
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    grad = np.zeros_like(xv)
    grad[:, 1:3] += 2.0
    grad[1, -1] += 1.0
    grad[:, ::-3] += 1.0
    np.testing.assert_array_equal(got[-1], grad)


def test_getitem_rejects_what_it_cannot_do():
    with static.program_guard(static.Program(), static.Program()):
        x = static.data("x", [2, 3])
        with pytest.raises(ValueError, match="step cannot be zero"):
            x[::0]
        with pytest.raises(IndexError, match="out of range"):
            x[5]
        with pytest.raises(TypeError, match="index lists"):
            x[[0, 1]]


# ---------------------------------------------------------------- creation
def test_creation_functions():
    xv = RNG.uniform(-1, 1, (3, 2)).astype("float32")

    def build():
        x = static.data("x", [None, 2])
        t = fluid.layers.create_tensor("float32")
        fluid.layers.assign(x * 2.0, t)
        p = paddle.create_parameter([2, 2], "float32",
                                    default_initializer=paddle.nn.initializer.Constant(0.5))
        q = fluid.layers.create_parameter([2], "float32", name="q",
                                          default_initializer=fluid.initializer.Constant(3.0))
        return [paddle.zeros([2, 3]), paddle.ones([2], "int64"), paddle.full_like(x, 7.0),
                paddle.zeros_like(x), paddle.ones_like(x, "float64"),
                fluid.layers.zeros([1], "float32"), fluid.layers.ones([2, 1], "float32"),
                fluid.layers.fill_constant([2], "int32", 4), t, p, q,
                fluid.layers.sums([x, x, x]), fluid.layers.assign(np.array([1, 2], "int64"))]
    main, got, _ = run(build, {"x": xv})
    want = [np.zeros((2, 3), "f4"), np.ones(2, "i8"), np.full((3, 2), 7, "f4"),
            np.zeros((3, 2), "f4"), np.ones((3, 2), "f8"), np.zeros(1, "f4"),
            np.ones((2, 1), "f4"), np.full(2, 4, "i4"), xv * 2, np.full((2, 2), 0.5, "f4"),
            np.full(2, 3.0, "f4"), xv * 3, np.array([1, 2], "i8")]
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-6)
    # the unnamed parameter's number depends on what other tests created in this process
    names = {p.name for p in main.all_parameters()}
    assert "q" in names
    assert any(re.fullmatch(r"create_parameter_\d+\.w_0", n) for n in names), names


# ---------------------------------------------------------------- fluid.layers additions
def _sigmoid_ce(x, lab, ignore):
    p = 1 / (1 + np.exp(-x))
    out = -lab * np.log(p) - (1 - lab) * np.log(1 - p)
    return np.where(lab == ignore, 0.0, out)


def test_fluid_layers_new_ops_against_numpy():
    xv = RNG.uniform(-1, 1, (4, 6)).astype("float32")
    ids = np.array([[1], [0], [3], [1]], "int64")
    lab = RNG.uniform(0, 1, (4, 6)).astype("float32")
    lab[0, 0] = -1

    def build():
        L = fluid.layers
        x, i = L.data("x", [6]), L.data("ids", [1], dtype="int64")
        y = L.data("lab", [6])
        vals, idx = L.topk(x, 2)
        ln = L.layer_norm(x, begin_norm_axis=1, epsilon=1e-5)
        emb = L.embedding(i, size=[5, 3], param_attr=fluid.ParamAttr(
            name="emb", initializer=paddle.nn.initializer.Assign(np.arange(15.).reshape(5, 3))))
        return [L.one_hot(i, 4), vals, idx, ln, L.sigmoid_cross_entropy_with_logits(x, y, -1),
                L.sigmoid_cross_entropy_with_logits(x, y, -1, normalize=True),
                L.scale(x, 2.0, 1.0), L.transpose(x, [1, 0]), L.elementwise_max(x, y),
                emb, fluid.embedding(i, size=[5, 3], param_attr="emb"),
                fluid.one_hot(i[:, 0], 4)]
    _, got, _ = run(build, {"x": xv, "ids": ids, "lab": lab})
    order = np.argsort(-xv, axis=1, kind="stable")[:, :2]
    mu, var = xv.mean(1, keepdims=True), xv.var(1, keepdims=True)
    ce = _sigmoid_ce(xv.astype("f8"), lab, -1)
    table = np.arange(15.).reshape(5, 3)
    want = [np.eye(4)[ids[:, 0]], np.take_along_axis(xv, order, 1), order,
            (xv - mu) / np.sqrt(var + 1e-5), ce, ce / (lab != -1).sum(), 2 * xv + 1, xv.T,
            np.maximum(xv, lab), table[ids[:, 0]], table[ids], np.eye(4)[ids[:, 0]]]
    for k, (g, w) in enumerate(zip(got, want)):
        assert g.shape == w.shape, (k, g.shape, w.shape)
        np.testing.assert_allclose(g, w, rtol=2e-5, atol=1e-5, err_msg=str(k))


def test_layer_norm_and_topk_train_with_gradients():
    """A layer_norm + topk net trains: loss falls (their gradient ops run in backward)."""
    xv = RNG.uniform(-1, 1, (16, 8)).astype("float32")
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.layers.data("x", [8])
        h = fluid.layers.layer_norm(fluid.layers.fc(x, 6), act="relu")
        top, _ = fluid.layers.topk(h, 3)
        loss = fluid.layers.mean(fluid.layers.square(top - 1.0))
        fluid.optimizer.Adam(0.05).minimize(loss)
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    exe.run(startup, scope=scope)
    losses = [exe.run(main, feed={"x": xv}, fetch_list=[loss], scope=scope)[0][0]
              for _ in range(25)]
    assert losses[-1] < 0.5 * losses[0]
    types = {op.type for op in main.global_block().ops}
    assert {"layer_norm_grad", "top_k_grad"} <= types


# ---------------------------------------------------------------- 1.x scalar shapes
def test_fluid_full_reductions_have_shape_1_and_2x_keeps_0d():
    xv = RNG.uniform(-1, 1, (4, 3)).astype("float32")
    lab = np.array([[0], [1], [2], [0]], "int64")

    def build():
        x, y = fluid.layers.data("x", [3]), fluid.layers.data("y", [1], dtype="int64")
        L = fluid.layers
        return [L.mean(x), L.reduce_sum(x), L.reduce_mean(x, dim=[0, 1]), L.reduce_max(x),
                L.accuracy(L.softmax(x), y), L.reduce_sum(x, dim=1), paddle.mean(x),
                static.accuracy(x, y)]
    _, got, _ = run(build, {"x": xv, "y": lab})
    shapes = [g.shape for g in got]
    assert shapes == [(1,), (1,), (1,), (1,), (1,), (4,), (), ()]
    np.testing.assert_allclose(got[0][0], xv.mean(), rtol=1e-6)
    np.testing.assert_allclose(got[1][0], xv.sum(), rtol=1e-5)
    np.testing.assert_allclose(got[3][0], xv.max())
    acc = np.mean(xv.argmax(1) == lab[:, 0])
    assert got[4][0] == pytest.approx(acc) and got[7] == pytest.approx(acc)


# ---------------------------------------------------------------- weight sharing
def test_weight_sharing_by_param_attr_name_sums_gradients():
    xv = RNG.uniform(-1, 1, (5, 3)).astype("float32")
    w0 = RNG.uniform(-1, 1, (3, 3)).astype("float32")
    init = paddle.nn.initializer.Assign(w0)

    def build():
        x = fluid.layers.data("x", [3])
        h = fluid.layers.fc(x, 3, param_attr=fluid.ParamAttr(name="w", initializer=init),
                            bias_attr=False)
        y = fluid.layers.fc(h, 3, param_attr=fluid.ParamAttr(name="w"), bias_attr=False)
        loss = paddle.sum(y)
        _, pg = fluid.optimizer.SGD(0.0).minimize(loss)
        return [loss, pg[0][1]]
    main, (loss, grad), _ = run(build, {"x": xv})
    assert [p.name for p in main.all_parameters()] == ["w"]
    # loss = sum(x W W): dL/dW = x^T 1 W^T + (x W)^T 1
    x, w = xv.astype("f8"), w0.astype("f8")
    ones = np.ones((5, 3))
    np.testing.assert_allclose(grad, x.T @ ones @ w.T + (x @ w).T @ ones, rtol=1e-5)
    np.testing.assert_allclose(loss, (x @ w @ w).sum(), rtol=1e-5)


def test_weight_sharing_with_another_shape_raises_naming_both():
    with static.program_guard(static.Program(), static.Program()):
        x = fluid.layers.data("x", [3])
        fluid.layers.fc(x, 4, param_attr=fluid.ParamAttr(name="w"))
        with pytest.raises(ValueError, match=r"'w'.*\(3, 5\).*\(3, 4\)"):
            fluid.layers.fc(x, 5, param_attr=fluid.ParamAttr(name="w"))


# ---------------------------------------------------------------- nets
def _conv_np(x, w, b):
    N, C, H, W = x.shape
    F, _, K, _ = w.shape
    out = np.zeros((N, F, H - K + 1, W - K + 1))
    for i in range(H - K + 1):
        for j in range(W - K + 1):
            out[:, :, i, j] = np.einsum("nckl,fckl->nf", x[:, :, i:i + K, j:j + K], w)
    return out + b[None, :, None, None]


def test_simple_img_conv_pool_matches_numpy():
    xv = RNG.uniform(-1, 1, (2, 1, 6, 6)).astype("float32")

    def build():
        img = fluid.layers.data("img", [1, 6, 6])
        return fluid.nets.simple_img_conv_pool(img, num_filters=2, filter_size=3, pool_size=2,
                                               pool_stride=2, act="relu")
    main, (got,), scope = run(build, {"img": xv})
    w, b = scope.get("conv2d_0.w_0"), scope.get("conv2d_0.b_0")
    conv = np.maximum(_conv_np(xv.astype("f8"), w.astype("f8"), b.astype("f8")), 0)
    want = conv.reshape(2, 2, 2, 2, 2, 2).max(axis=(3, 5))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_img_conv_group_builds_the_vgg_block():
    xv = RNG.uniform(-1, 1, (2, 3, 8, 8)).astype("float32")

    def build():
        img = fluid.layers.data("img", [3, 8, 8])
        return fluid.nets.img_conv_group(img, conv_num_filter=[4, 4], pool_size=2,
                                         conv_act="relu", conv_with_batchnorm=True,
                                         conv_batchnorm_drop_rate=[0.0, 0.3], pool_stride=2)
    main, (got,), _ = run(build, {"img": xv})
    types = [op.type for op in main.global_block().ops]
    assert types.count("conv2d") == 2 and types.count("batch_norm") == 2
    assert types.count("dropout") == 1 and types[-1] == "pool2d"
    assert got.shape == (2, 4, 4, 4) and (got >= 0).all()


# ---------------------------------------------------------------- initializers
def _init_values(init, shape=(200, 100)):
    def build():
        return fluid.layers.create_parameter(list(shape), "float32", attr=fluid.ParamAttr(
            initializer=init))
    return run(build, {})[1][0].astype(np.float64)


def test_fluid_initializers_have_paddle_1x_meanings():
    fan_in, fan_out = 200, 100
    n = _init_values(fluid.initializer.Normal(loc=1.0, scale=2.0, seed=3))
    assert abs(n.mean() - 1.0) < 0.05 and abs(n.std() - 2.0) < 0.05
    u = _init_values(fluid.initializer.Uniform(low=-0.5, high=1.5, seed=4))
    assert u.min() >= -0.5 and u.max() <= 1.5 and abs(u.mean() - 0.5) < 0.02
    t = _init_values(fluid.initializer.TruncatedNormal(loc=0.0, scale=1.0))
    assert np.abs(t).max() <= 2.0 + 1e-6
    xu = _init_values(fluid.initializer.Xavier())
    limit = math.sqrt(6.0 / (fan_in + fan_out))
    assert np.abs(xu).max() <= limit and np.abs(xu).max() > 0.95 * limit
    xn = _init_values(fluid.initializer.Xavier(uniform=False))
    assert abs(xn.std() - math.sqrt(2.0 / (fan_in + fan_out))) < 0.003
    mu = _init_values(fluid.initializer.MSRA())
    assert np.abs(mu).max() <= math.sqrt(6.0 / fan_in) + 1e-7
    assert np.abs(mu).max() > 0.95 * math.sqrt(6.0 / fan_in)
    mn = _init_values(fluid.initializer.MSRA(uniform=False))
    assert abs(mn.std() - math.sqrt(2.0 / fan_in)) < 0.003
    np.testing.assert_array_equal(_init_values(fluid.initializer.Constant(0.25), (2, 2)),
                                  np.full((2, 2), 0.25))
    # a given seed reproduces the values
    np.testing.assert_array_equal(_init_values(fluid.initializer.Normal(seed=9), (3, 3)),
                                  _init_values(fluid.initializer.Normal(seed=9), (3, 3)))
    assert paddle.initializer.MSRA is fluid.initializer.MSRA


def test_unsupported_fluid_modules_say_so():
    with pytest.raises(AttributeError, match="only static graphs"):
        fluid.dygraph.guard()
    with pytest.raises(RuntimeError, match="only static graphs"):
        paddle.disable_static()
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        fluid.nope


def test_fluid_layers_wrappers_against_numpy():
    xv = RNG.uniform(0.5, 1.5, (2, 3, 4)).astype("float32")

    def build():
        L = fluid.layers
        x = L.data("x", [3, 4])
        g = L.create_global_var([2], 1.5, "float32", persistable=True, name="gv")
        a, b = L.split(x, [1, 2], dim=1)
        return [g, L.flatten(x, axis=2), L.flatten(x, axis=0), a, b,
                L.squeeze(L.unsqueeze(x, [1]), [1]), L.leaky_relu(x - 1.0, alpha=0.1),
                L.clip(x, 0.8, 1.2), L.log_softmax(x), L.reduce_min(x), L.reduce_max(x, dim=2),
                L.elementwise_min(x, x * 0.0 + 1.0), L.elementwise_pow(x, x),
                L.exp(x), L.log(x), L.sqrt(x), L.square(x), L.abs(x - 1.0)]
    main, got, scope = run(build, {"x": xv})
    e = np.exp(xv - xv.max(-1, keepdims=True))
    want = [np.full(2, 1.5, "f4"), xv.reshape(6, 4), xv.reshape(1, 24), xv[:, :1], xv[:, 1:],
            xv, np.where(xv > 1, xv - 1, 0.1 * (xv - 1)), np.clip(xv, 0.8, 1.2),
            np.log(e / e.sum(-1, keepdims=True)), [xv.min()], xv.max(2),
            np.minimum(xv, 1.0), xv ** xv, np.exp(xv), np.log(xv), np.sqrt(xv), xv ** 2,
            np.abs(xv - 1)]
    for k, (g, w) in enumerate(zip(got, want)):
        assert g.shape == np.shape(w), (k, g.shape, np.shape(w))
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6, err_msg=str(k))
    assert main.global_block().var("gv").persistable and scope.find_var("gv") is not None


def _bucket_auc(p, lab, nt):
    s = np.clip((p.astype(np.float64) * nt).astype(np.int64), 0, nt)
    d = s[lab == 1][:, None] - s[lab == 0][None, :]
    return ((d > 0) + 0.5 * (d == 0)).mean()


def test_auc_global_and_batch_over_runs():
    rng = np.random.default_rng(5)
    batches = []
    for _ in range(3):
        lab = rng.integers(0, 2, (16, 1))
        p = np.clip(0.3 * lab[:, 0] + rng.uniform(0, 0.7, 16), 0, 1)
        batches.append((np.stack([1 - p, p], 1).astype("float32"), lab.astype("int64")))
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        x = static.data("p", [None, 2])
        y = static.data("y", [None, 1], "int64")
        auc_out, batch_auc, states = static.auc(x, y, num_thresholds=50)
        f_auc, _, _ = fluid.layers.auc(x, y, num_thresholds=50)
    exe, scope = static.Executor(paddle.CPUPlace()), static.Scope()
    exe.run(startup, scope=scope)
    seen_p, seen_l = [], []
    for p, lab in batches:
        g, b, f = exe.run(main, feed={"p": p, "y": lab}, fetch_list=[auc_out, batch_auc, f_auc],
                          scope=scope)
        seen_p.append(p[:, 1]), seen_l.append(lab[:, 0])
        want = _bucket_auc(np.concatenate(seen_p), np.concatenate(seen_l), 50)
        assert g.shape == () and f.shape == (1,)
        assert g == pytest.approx(want, abs=1e-6) and f[0] == pytest.approx(want, abs=1e-6)
        assert b == pytest.approx(_bucket_auc(p[:, 1], lab[:, 0], 50), abs=1e-6)
    assert scope.get(states[2].name).sum() + scope.get(states[3].name).sum() == 48
