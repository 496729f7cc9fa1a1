"""paddle.Model over a Layer: fit / evaluate / predict against numpy computed from the
model's own weights, save / load and resuming, and the callbacks."""
import os

import numpy as np
import pytest

import numbaflow as paddle
from numbaflow import static
from numbaflow.utils import unique_name
from locations import TESTS

pytestmark = pytest.mark.usefixtures("fresh_graph_state")


class Data(paddle.io.Dataset):
    def __init__(self, n, seed):
        rng = np.random.default_rng(seed)
        self.x = rng.normal(size=(n, 4)).astype("float32")
        self.y = (self.x[:, :1] + self.x[:, 1:2] > 0).astype("int64")

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return self.x[i], self.y[i]


def _model(lr=0.5, metrics=None):
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup), unique_name.guard():
        net = paddle.nn.Sequential(paddle.nn.Linear(4, 8), paddle.nn.ReLU(),
                                   paddle.nn.Linear(8, 2))
        model = paddle.Model(net, static.InputSpec([None, 4], "float32", "x"),
                             static.InputSpec([None, 1], "int64", "y"))
        model.prepare(paddle.optimizer.SGD(lr, parameters=model.parameters()),
                      paddle.nn.CrossEntropyLoss(),
                      metrics if metrics is not None else paddle.metric.Accuracy())
    return model


def _weights(model):
    scope = static.global_scope()
    return [np.array(scope.get(p.name)) for p in model.parameters()]


def _numpy_forward(w, x):
    h = np.maximum(x @ w[0] + w[1], 0)
    return h @ w[2] + w[3]


def _numpy_loss_acc(w, x, y):
    z = _numpy_forward(w, x)
    z = z - z.max(axis=1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    return -logp[np.arange(len(y)), y[:, 0]].mean(), np.mean(z.argmax(axis=1) == y[:, 0])


def test_fit_evaluate_predict_against_numpy(tmp_path, capsys):
    model = _model()
    data, test = Data(64, 0), Data(32, 1)
    w0 = _weights(model)
    (loss,), (acc,) = model.train_batch([data.x[:16]], [data.y[:16]])
    want_loss, want_acc = _numpy_loss_acc(w0, data.x[:16], data.y[:16])
    assert float(loss) == pytest.approx(want_loss, rel=1e-5) and acc == want_acc
    model.fit(data, test, batch_size=16, epochs=3, log_freq=2, save_dir=str(tmp_path),
              verbose=2, shuffle=False)
    out = capsys.readouterr().out
    assert "Epoch 3/3" in out and "step 4/4 - loss: " in out and "Eval: loss: " in out
    w = _weights(model)
    logs = model.evaluate(test, batch_size=32, verbose=0)
    want_loss, want_acc = _numpy_loss_acc(w, test.x, test.y)
    assert logs["loss"][0] == pytest.approx(want_loss, rel=1e-5)
    assert logs["acc"] == pytest.approx(want_acc)
    (pred,) = model.predict(test, batch_size=8, stack_outputs=True)
    np.testing.assert_allclose(pred, _numpy_forward(w, test.x), rtol=1e-4, atol=1e-5)
    assert sorted(os.listdir(tmp_path)) == sorted(
        f"{e}.{ext}" for e in ("0", "1", "2", "final") for ext in ("pdparams", "pdopt"))


def test_save_load_and_resume_continue_as_one_run(tmp_path):
    data = Data(48, 2)
    whole = _model()
    init = _weights(whole)
    whole.fit(data, batch_size=16, epochs=2, verbose=0, shuffle=False)
    want = _weights(whole)

    first = _model()        # (the same parameter names, in the same global scope)
    for p, v in zip(first.parameters(), init):
        static.global_scope().set(p.name, v)
    first.fit(data, batch_size=16, epochs=1, verbose=0, shuffle=False)
    first.save(str(tmp_path / "ckpt"))
    resumed = _model()
    resumed.load(str(tmp_path / "ckpt"))
    resumed.fit(data, batch_size=16, epochs=1, verbose=0, shuffle=False)
    for a, b in zip(_weights(resumed), want):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)


def test_callbacks_early_stopping_and_lr_scheduler(tmp_path):
    class Recorder(paddle.callbacks.Callback):
        def __init__(self):
            super().__init__()
            self.events = []

        def on_epoch_end(self, epoch, logs=None):
            self.events.append(("epoch", epoch))

        def on_eval_end(self, logs=None):
            self.events.append(("eval", round(logs["loss"][0], 6)))

    rec = Recorder()
    model = _model(lr=0.0)          # never improves: stops after patience + 1 evaluations
    stop = paddle.callbacks.EarlyStopping(monitor="loss", patience=1, verbose=0,
                                          save_best_model=False)
    model.fit(Data(32, 3), Data(16, 4), batch_size=16, epochs=10, verbose=0,
              callbacks=[rec, stop])
    assert [e for e in rec.events if e[0] == "epoch"] == [("epoch", 0), ("epoch", 1),
                                                           ("epoch", 2)]
    with pytest.raises(ValueError, match="exactly one"):
        paddle.callbacks.LRScheduler(by_step=True, by_epoch=True)


def test_prepare_twice_and_unprepared_use_say_what_to_do():
    model = _model()
    with pytest.raises(RuntimeError, match="already prepared"):
        model.prepare()
    with pytest.raises(ValueError, match="InputSpec"):
        paddle.Model(paddle.nn.Linear(2, 2))


def test_fit_and_evaluate_give_real_paddles_numbers():
    """The same net, weights and data through real Paddle 2.6's Model.fit / evaluate
    (tests/fixtures/paddle_model/make_model_fixture.py)."""
    ref = np.load(os.path.join(str(TESTS), "fixtures", "paddle_model", "fit.npz"))

    class Pairs(paddle.io.Dataset):
        def __init__(self, x, y):
            self.x, self.y = x, y

        def __len__(self):
            return len(self.x)

        def __getitem__(self, i):
            return self.x[i], self.y[i]

    class Log(paddle.callbacks.Callback):
        def __init__(self):
            super().__init__()
            self.loss, self.acc = [], []

        def on_train_batch_end(self, step, logs=None):
            self.loss.append(logs["loss"][0])
            self.acc.append(logs["acc"])

    model = _model(metrics=paddle.metric.Accuracy())
    names = [p.name for p in model.parameters()]
    for name in names:
        static.global_scope().set(name, ref[f"init/{name}"])
    log = Log()
    model.fit(Pairs(ref["x"], ref["y"]), batch_size=16, epochs=2, shuffle=False, verbose=0,
              callbacks=[log])
    np.testing.assert_allclose(log.loss, ref["losses"], rtol=1e-5)
    np.testing.assert_allclose(log.acc, ref["accs"])
    for name, w in zip(names, _weights(model)):
        np.testing.assert_allclose(w, ref[f"after/{name}"], rtol=1e-5, atol=1e-6)
    result = model.evaluate(Pairs(ref["xe"], ref["ye"]), batch_size=10, verbose=0)
    assert result["acc"] == pytest.approx(float(ref["eval_acc"]))
    # Paddle's evaluate reports the last batch's loss; numbaflow's is the mean of the batches
    (last,) = model.eval_batch([ref["xe"][10:]], [ref["ye"][10:]])[0]
    assert float(last) == pytest.approx(float(ref["eval_loss"]), rel=1e-5)
    (first,) = model.eval_batch([ref["xe"][:10]], [ref["ye"][:10]])[0]
    assert result["loss"][0] == pytest.approx((float(first) + float(last)) / 2, rel=1e-6)


def test_summary_counts_parameters_and_shapes(capsys):
    from numbaflow.utils import unique_name
    from numbaflow.vision.models import LeNet
    with paddle.static.program_guard(paddle.static.Program(), paddle.static.Program()), \
            unique_name.guard():    # Paddle's names (linear_0.w_0), whatever ran before
        info = paddle.summary(LeNet(), (-1, 1, 28, 28))
        with pytest.raises(ValueError, match="input_size"):
            paddle.summary(paddle.nn.Linear(2, 2))
    assert info == {"total_params": 61610, "trainable_params": 61610}   # Paddle's LeNet figure
    out = capsys.readouterr().out
    assert "features.0 (Conv2D)" in out and "[-1, 6, 28, 28]" in out and "48,120" in out


def test_save_for_inference_writes_numbaflows_pair_that_loads(tmp_path):
    model = _model()
    x = Data(8, 6).x
    (want,) = model.predict_batch([x])
    model.save(str(tmp_path / "infer"), training=False)
    assert sorted(os.listdir(tmp_path)) == ["infer.nfmodel", "infer.nfparams"]
    exe = static.Executor()
    with static.scope_guard(static.Scope()):
        program, feeds, fetches = static.load_inference_model(str(tmp_path / "infer"), exe)
        (got,) = exe.run(program, feed={feeds[0]: x}, fetch_list=fetches)
    np.testing.assert_allclose(got, want, rtol=1e-6)
