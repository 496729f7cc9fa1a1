"""paddle.nn.Layer in static mode (issue 28): names as Paddle's, training equal to the
same model written with static.nn, state_dict / set_state_dict (and Paddle's .pdparams),
eval() building the inference ops, hooks and the misuse errors. The Paddle fixture is
tests/fixtures/paddle_layer/ (make_layer_fixture.py, real Paddle 2.6.2)."""
import os
import warnings

import numpy as np
import pytest

import numbaflow as paddle
import numbaflow.nn.functional as F
from numbaflow import static
from numbaflow.utils import unique_name
from locations import TESTS

FIXTURE = os.path.join(str(TESTS), "fixtures", "paddle_layer")


class Net(paddle.nn.Layer):
    """The fixture's model (make_layer_fixture.py)."""

    def __init__(self, p=0.5):
        super().__init__()
        self.features = paddle.nn.Sequential(paddle.nn.Conv2D(3, 4, 3, padding=1),
                                             paddle.nn.ReLU())
        self.bn = paddle.nn.BatchNorm2D(4)
        self.drop = paddle.nn.Dropout(p)
        self.pool = paddle.nn.AdaptiveAvgPool2D(1)
        self.fc = paddle.nn.Linear(4, 5)

    def forward(self, x):
        x = F.relu(self.bn(self.features(x)))
        return self.fc(paddle.flatten(self.drop(self.pool(x)), 1))


def build(make, training=True, lr=0.1):
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup), unique_name.guard():
        x = static.data("x", [None, 3, 6, 6])
        y = static.data("y", [None, 1], "int64")
        model = make()
        if not training:
            model.eval()
        out = model(x) if isinstance(model, paddle.nn.Layer) else model
        loss = F.cross_entropy(out, y)
        if training:
            paddle.optimizer.SGD(lr).minimize(loss)
    return main, startup, model, out, loss


@pytest.fixture
def fixture_data():
    return np.load(os.path.join(FIXTURE, "data.npz"))


def test_parameter_names_and_state_keys_are_paddles(fixture_data):
    _, _, model, _, _ = build(lambda: Net(0.0))
    assert [p.name for p in model.parameters()] == list(fixture_data["param_names"])
    assert list(model.state_dict(keys_only=True)) == list(fixture_data["state_keys"])
    assert model.full_name() == "net_0" and model.bn.full_name() == "batch_norm2d_0"
    assert not model.bn._mean.trainable and model.bn._mean.stop_gradient


@pytest.mark.slow
def test_training_from_paddles_weights_gives_paddles_losses_and_eval_output(fixture_data):
    main, startup, model, _, loss = build(lambda: Net(0.0))
    scope, exe = static.Scope(), static.Executor()
    exe.run(startup, scope=scope)
    init = {k[5:]: fixture_data[k] for k in fixture_data.files if k.startswith("init/")}
    model.set_state_dict(init, scope=scope)
    feed = {"x": fixture_data["x"], "y": fixture_data["y"]}
    losses = [float(exe.run(main, feed=feed, fetch_list=[loss], scope=scope)[0])
              for _ in range(3)]
    np.testing.assert_allclose(losses, fixture_data["losses"], rtol=1e-5)
    # Paddle's trained state, saved by Paddle as .pdparams, into an eval-mode model
    emain, estartup, emodel, eout, _ = build(lambda: Net(0.5), training=False)
    escope = static.Scope()
    exe.run(estartup, scope=escope)
    missing, unexpected = emodel.set_state_dict(
        paddle.load(os.path.join(FIXTURE, "state.pdparams")), scope=escope)
    assert missing == [] and unexpected == []
    (got,) = exe.run(emain, feed=feed, fetch_list=[eout], scope=escope)
    np.testing.assert_allclose(got, fixture_data["eval_out"], rtol=1e-5, atol=1e-6)


class Mlp(paddle.nn.Layer):
    def __init__(self):
        super().__init__()
        self.fc1 = paddle.nn.Linear(4, 8)
        self.fc2 = paddle.nn.Linear(8, 3)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


@pytest.mark.slow
def test_a_layer_model_trains_as_the_same_model_written_with_static_nn():
    rng = np.random.default_rng(1)
    w = {"fc1.weight": rng.normal(size=(4, 8)), "fc1.bias": rng.normal(size=8),
         "fc2.weight": rng.normal(size=(8, 3)), "fc2.bias": rng.normal(size=3)}
    w = {k: v.astype("float32") for k, v in w.items()}
    feed = {"x": rng.normal(size=(5, 4)).astype("float32"),
            "y": rng.integers(0, 3, (5, 1)).astype("int64")}

    def run(layer):
        main, startup = static.Program(), static.Program()
        with static.program_guard(main, startup), unique_name.guard():
            x = static.data("x", [None, 4])
            y = static.data("y", [None, 1], "int64")
            if layer:
                model = Mlp()
                out = model(x)
            else:
                out = static.nn.fc(static.nn.fc(x, 8, activation="relu"), 3)
            loss = F.cross_entropy(out, y)
            paddle.optimizer.SGD(0.5).minimize(loss)
        scope, exe = static.Scope(), static.Executor()
        exe.run(startup, scope=scope)
        if layer:
            model.set_state_dict(w, scope=scope)
        else:
            for k, name in zip(w, ["fc_0.w_0", "fc_0.b_0", "fc_1.w_0", "fc_1.b_0"]):
                scope.set(name, w[k])
        return [float(exe.run(main, feed=feed, fetch_list=[loss], scope=scope)[0])
                for _ in range(4)]
    np.testing.assert_allclose(run(True), run(False), rtol=1e-5)


def test_state_dict_round_trips_through_paddles_pdparams(tmp_path):
    _, startup, model, _, _ = build(lambda: Net(0.0))
    scope, exe = static.Scope(), static.Executor()
    exe.run(startup, scope=scope)
    state = model.state_dict(scope=scope)
    path = str(tmp_path / "m.pdparams")
    paddle.save({k: v + 1 for k, v in state.items()}, path, format="paddle")
    model.set_state_dict(paddle.load(path), scope=scope)
    again = model.state_dict(scope=scope)
    for k in state:
        np.testing.assert_array_equal(again[k], state[k] + 1)
    # keyed by parameter name instead
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        missing, _ = model.set_state_dict({"linear_0.w_0": np.zeros((4, 5), "float32")},
                                          use_structured_name=False, scope=scope)
    assert "linear_0.w_0" not in missing and "conv2d_0.w_0" in missing
    assert not model.state_dict(scope=scope)["fc.weight"].any()


def test_set_state_dict_names_each_mis_shaped_and_missing_key():
    _, startup, model, _, _ = build(lambda: Net(0.0))
    scope = static.Scope()
    static.Executor().run(startup, scope=scope)
    state = model.state_dict(scope=scope)
    bad = dict(state, **{"fc.weight": np.zeros((5, 4), "float32"),
                         "bn._mean": np.zeros(3, "float32")})
    with pytest.raises(ValueError) as info:
        model.set_state_dict(bad, scope=scope)
    msg = str(info.value)
    assert "'fc.weight'" in msg and "(4, 5)" in msg and "(5, 4)" in msg
    assert "'bn._mean'" in msg and "(3,)" in msg and "nothing was set" in msg
    del state["bn._variance"], state["fc.bias"]
    with pytest.warns(UserWarning, match=r"no value for \['bn._variance', 'fc.bias'\]"):
        missing, unexpected = model.set_state_dict(dict(state, extra=np.ones(1)), scope=scope)
    assert missing == ["bn._variance", "fc.bias"] and unexpected == ["extra"]


def test_state_dict_before_the_startup_program_says_to_run_it():
    _, _, model, _, _ = build(lambda: Net(0.0))
    with pytest.raises(RuntimeError, match="run the startup program first"):
        model.state_dict(scope=static.Scope())


@pytest.mark.slow
def test_eval_builds_inference_ops_checked_against_numpy():
    rng = np.random.default_rng(2)
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup), unique_name.guard():
        x = static.data("x", [None, 3, 2, 2])
        model = paddle.nn.Sequential(paddle.nn.BatchNorm2D(3), paddle.nn.Dropout(0.9))
        model.eval()
        out = model(x)
    assert {op.type for op in main.global_block().ops} >= {"batch_norm"}
    assert all(op.attrs.get("is_test", True) for op in main.global_block().ops
               if op.type in ("batch_norm", "dropout"))
    scope, exe = static.Scope(), static.Executor()
    exe.run(startup, scope=scope)
    st = {"0.weight": rng.uniform(0.5, 2, 3), "0.bias": rng.normal(size=3),
          "0._mean": rng.normal(size=3), "0._variance": rng.uniform(0.5, 2, 3)}
    st = {k: v.astype("float32") for k, v in st.items()}
    model.set_state_dict(st, scope=scope)
    xv = rng.normal(size=(4, 3, 2, 2)).astype("float32")
    (got,) = exe.run(main, feed={"x": xv}, fetch_list=[out], scope=scope)
    c = (slice(None), None, None)
    want = ((xv - st["0._mean"][c]) / np.sqrt(st["0._variance"][c] + 1e-5)
            * st["0.weight"][c] + st["0.bias"][c])
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    # the running statistics were read, not updated
    np.testing.assert_array_equal(model.state_dict(scope=scope)["0._mean"], st["0._mean"])


@pytest.mark.slow
def test_train_mode_dropout_and_batch_statistics():
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup), unique_name.guard():
        x = static.data("x", [None, 2, 50, 50])
        bn, drop = paddle.nn.BatchNorm2D(2), paddle.nn.Dropout(0.5)
        out = drop(bn(x))
    scope, exe = static.Scope(), static.Executor()
    exe.run(startup, scope=scope)
    xv = np.random.default_rng(3).normal(3.0, 2.0, size=(2, 2, 50, 50)).astype("float32")
    (got,) = exe.run(main, feed={"x": xv}, fetch_list=[out], scope=scope)
    zero = (got == 0).mean()
    assert 0.45 < zero < 0.55
    kept = got[got != 0] / 2.0        # upscale_in_train: kept values are doubled
    assert abs(kept.mean()) < 0.1 and abs(kept.std() - 1.0) < 0.05   # batch statistics
    mean = bn.state_dict(scope=scope)["_mean"]
    np.testing.assert_allclose(mean, 0.1 * xv.mean(axis=(0, 2, 3)), rtol=1e-4)


def test_registration_walking_hooks_and_modes():
    class Block(paddle.nn.Layer):
        def __init__(self):
            super().__init__()
            self.inner = paddle.nn.Sequential(paddle.nn.Linear(2, 2), paddle.nn.ReLU())
            self.scale = self.create_parameter([1], default_initializer=None)
            self.register_buffer("steps", np.zeros([1], "float32"))
            self.register_buffer("tmp", np.zeros([1], "float32"), persistable=False)
            self.plain = 3

        def forward(self, x):
            return self.inner(x) * self.scale

    with static.program_guard(static.Program(), static.Program()), unique_name.guard():
        b = Block()
        assert [n for n, _ in b.named_parameters()] == ["scale", "inner.0.weight",
                                                        "inner.0.bias"]
        assert b.scale.name == "block_0.w_0"
        assert [n for n, _ in b.named_sublayers()] == ["inner", "inner.0", "inner.1"]
        assert [type(c).__name__ for c in b.children()] == ["Sequential"]
        assert list(b.state_dict(keys_only=True)) == ["scale", "steps", "inner.0.weight",
                                                      "inner.0.bias"]
        assert [n for n, _ in b.named_buffers()] == ["steps", "tmp"]
        assert b.plain == 3 and b.to("gpu") is b
        seen = []
        b.apply(lambda layer: seen.append(type(layer).__name__))
        assert seen == ["Linear", "ReLU", "Sequential", "Block"]
        assert not any(layer.training for layer in b.eval().sublayers(include_self=True))
        assert all(layer.training for layer in b.train().sublayers(include_self=True))
        calls = []
        pre = b.register_forward_pre_hook(lambda layer, inp: calls.append("pre"))
        b.register_forward_post_hook(lambda layer, inp, out: out * 2.0)
        x = static.data("x", [None, 2])
        out = b(x)
        assert calls == ["pre"] and out.block.ops[-1].type == "scale"
        pre.remove()
        b(x)
        assert calls == ["pre"]
        del b.inner
        assert [n for n, _ in b.named_parameters()] == ["scale"]


def test_misuse_errors_name_the_layer_and_both_sizes():
    with static.program_guard(static.Program(), static.Program()), unique_name.guard():
        fc = paddle.nn.Linear(in_features=16, out_features=4)
        with pytest.raises(ValueError) as info:
            fc(static.data("x", [None, 8]))
        msg = str(info.value)
        assert "linear_0" in msg and "16" in msg and " 8 " in msg and "in_features=16" in msg
        conv = paddle.nn.Conv2D(3, 4, 3)
        with pytest.raises(ValueError, match=r"conv2d_0.*channel dim 1 5 is not the layer's 3"):
            conv(static.data("img", [None, 5, 8, 8]))

        class NoForward(paddle.nn.Layer):
            pass
        with pytest.raises(NotImplementedError, match=r"NoForward \(no_forward_0\) has no "
                                                      r"forward\(\)"):
            NoForward()(static.data("z", [None, 2]))

        class NoSuper(paddle.nn.Layer):
            def __init__(self):
                self.fc = paddle.nn.Linear(2, 2)
        with pytest.raises(RuntimeError, match="super\\(\\).__init__\\(\\)"):
            NoSuper()
        with pytest.raises(TypeError, match="'weight' is a parameter"):
            fc.weight = np.zeros((16, 4))


def test_missing_nn_names_name_the_closest_supported_spelling():
    with pytest.raises(AttributeError, match="Conv3DTranspose is Paddle 2.6's but not "
                                             "implemented.*Conv2DTranspose"):
        paddle.nn.Conv3DTranspose
    with pytest.raises(AttributeError, match="did you mean Linear"):
        paddle.nn.Linaer
    assert not hasattr(paddle.nn, "Conv3DTranspose")


@pytest.mark.slow
def test_a_layer_built_outside_program_guard_trains_and_serves_a_test_program():
    # built in one program pair (as if the defaults), called in `main`: main's optimizer
    # must see the parameters (else they silently would not train); a test program
    # shares them by name
    outer, outer_startup = static.Program(), static.Program()
    with static.program_guard(outer, outer_startup), unique_name.guard():
        fc = paddle.nn.Linear(4, 1)
        main, startup = static.Program(), static.Program()
        with static.program_guard(main, startup):
            x = static.data("x", [None, 4])
            loss = paddle.mean(fc(x))
            paddle.optimizer.SGD(0.5).minimize(loss)
        test = static.Program()
        with static.program_guard(test, static.Program()):
            out = fc.eval()(static.data("x", [None, 4]))
    assert [p.name for p in main.all_parameters()] == ["linear_0.w_0", "linear_0.b_0"]
    scope, exe = static.Scope(), static.Executor()
    exe.run(outer_startup, scope=scope)     # the layer's initialisers
    exe.run(startup, scope=scope)           # the optimizer's
    w0 = fc.state_dict(scope=scope)["weight"]
    feed = {"x": np.ones((2, 4), "float32")}
    exe.run(main, feed=feed, fetch_list=[loss], scope=scope)
    w1 = fc.state_dict(scope=scope)["weight"]
    np.testing.assert_allclose(w1, w0 - 0.5, rtol=1e-6)     # d mean(x @ w + b) / dw = 1
    (got,) = exe.run(test, feed=feed, fetch_list=[out], scope=scope)
    np.testing.assert_allclose(got, feed["x"] @ w1 + fc.state_dict(scope=scope)["bias"],
                               rtol=1e-5)


def test_a_shared_parameter_is_in_the_state_dict_under_each_name_as_paddle():
    class Tied(paddle.nn.Layer):
        def __init__(self):
            super().__init__()
            self.emb = paddle.nn.Embedding(5, 3)
            self.out = paddle.nn.Linear(5, 3, bias_attr=False)
            self.out.weight = self.emb.weight          # weight tying

        def forward(self, ids):
            return self.out(F.one_hot(ids, 5))

    with static.program_guard(static.Program(), static.Program()), unique_name.guard():
        tied = Tied()
    assert list(tied.state_dict(keys_only=True, structured_name_prefix="m.")) == [
        "m.emb.weight", "m.out.weight"]
    assert [p.name for p in tied.parameters()] == ["embedding_0.w_0"]
