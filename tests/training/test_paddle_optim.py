"""Adagrad, RMSProp, Adamax, AdamW and the learning-rate schedules (paddle.optimizer.lr and
fluid.layers.*_decay), each against a numpy transcription of Paddle's update rule or
schedule formula written here."""
import math

import numpy as np
import pytest

import numbaflow as paddle
import numbaflow.fluid as fluid
import numbaflow.static as static

pytestmark = pytest.mark.usefixtures("fresh_graph_state")

STEPS = 4
X = np.random.default_rng(0).uniform(-1, 1, (6, 3)).astype("float32")
W0 = np.array([[0.5], [-0.3], [0.2]], np.float32)


def _train(make_opt, steps=STEPS):
    """A linear model y = x @ w, loss = mean(y^2); returns [w after each step], grads."""
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        x = static.data("x", [None, 3])
        y = static.nn.fc(x, 1, weight_attr=paddle.ParamAttr(
            name="w", initializer=paddle.nn.initializer.Assign(W0)), bias_attr=False)
        loss = paddle.mean(y * y)
        make_opt().minimize(loss)
    exe, scope = static.Executor(paddle.CPUPlace()), static.Scope()
    exe.run(startup, scope=scope)
    ws = []
    for _ in range(steps):
        exe.run(main, feed={"x": X}, fetch_list=[loss], scope=scope)
        ws.append(scope.get("w").astype(np.float64))
    return ws


def _grad(w):
    # d/dw mean((x w)^2) = 2 x^T (x w) / N
    x = X.astype(np.float64)
    return 2.0 * x.T @ (x @ w) / len(x)


def _reference(update, state):
    w, out = W0.astype(np.float64), []
    for t in range(1, STEPS + 1):
        w = update(w, _grad(w), state, t)
        out.append(w)
    return out


def _check(got, want, rtol=1e-4):
    for k, (g, r) in enumerate(zip(got, want)):
        np.testing.assert_allclose(g, r, rtol=rtol, atol=1e-5, err_msg=f"step {k}")


def test_adagrad_matches_numpy():
    def update(w, g, s, t):
        s["m"] = s.get("m", 0.1) + g * g
        return w - 0.1 * g / (np.sqrt(s["m"]) + 1e-6)
    _check(_train(lambda: fluid.optimizer.Adagrad(learning_rate=0.1,
                                                  initial_accumulator_value=0.1)),
           _reference(update, {}))


@pytest.mark.parametrize("centered", [False, True])
def test_rmsprop_matches_numpy(centered):
    rho, eps, mom_c, lr = 0.9, 1e-6, 0.5, 0.05

    def update(w, g, s, t):
        s["ms"] = rho * s.get("ms", 0.0) + (1 - rho) * g * g
        s["mg"] = rho * s.get("mg", 0.0) + (1 - rho) * g
        denom = s["ms"] - s["mg"] ** 2 if centered else s["ms"]
        s["mom"] = mom_c * s.get("mom", 0.0) + lr * g / np.sqrt(denom + eps)
        return w - s["mom"]
    _check(_train(lambda: paddle.optimizer.RMSProp(lr, rho=rho, epsilon=eps, momentum=mom_c,
                                                   centered=centered)),
           _reference(update, {}))


def test_adamax_matches_numpy():
    b1, b2, eps, lr = 0.9, 0.999, 1e-8, 0.1

    def update(w, g, s, t):
        s["m"] = b1 * s.get("m", 0.0) + (1 - b1) * g
        s["u"] = np.maximum(b2 * s.get("u", 0.0) + eps, np.abs(g))
        return w - lr / (1 - b1 ** t) * s["m"] / s["u"]
    _check(_train(lambda: fluid.optimizer.AdamaxOptimizer(learning_rate=lr)),
           _reference(update, {}))


@pytest.mark.parametrize("decay_w", [True, False])
def test_adamw_matches_numpy(decay_w):
    b1, b2, eps, lr, wd = 0.9, 0.999, 1e-8, 0.1, 0.2

    def update(w, g, s, t):
        if decay_w:
            w = w - lr * wd * w                   # decoupled decay, before the Adam step
        s["m"] = b1 * s.get("m", 0.0) + (1 - b1) * g
        s["v"] = b2 * s.get("v", 0.0) + (1 - b2) * g * g
        mh, vh = s["m"] / (1 - b1 ** t), s["v"] / (1 - b2 ** t)
        return w - lr * mh / (np.sqrt(vh) + eps)
    _check(_train(lambda: paddle.optimizer.AdamW(
        lr, weight_decay=wd, apply_decay_param_fun=lambda name: decay_w)),
        _reference(update, {}))


@pytest.mark.parametrize("exclude", [False, True])
def test_lamb_matches_numpy(exclude):
    b1, b2, eps, lr, wd = 0.9, 0.999, 1e-6, 0.05, 0.1

    def update(w, g, s, t):
        s["m"] = b1 * s.get("m", 0.0) + (1 - b1) * g
        s["v"] = b2 * s.get("v", 0.0) + (1 - b2) * g * g
        r = (s["m"] / (1 - b1 ** t)) / (np.sqrt(s["v"] / (1 - b2 ** t)) + eps)
        r = r + (0.0 if exclude else wd) * w
        return w - lr * np.linalg.norm(w) / np.linalg.norm(r) * r
    _check(_train(lambda: paddle.optimizer.Lamb(
        lr, lamb_weight_decay=wd, exclude_from_weight_decay_fn=lambda p: exclude)),
        _reference(update, {}))


# ---------------------------------------------------------------- paddle.optimizer.lr
LR = paddle.optimizer.lr
N_EPOCHS = 12
SCHEDULES = [   # (scheduler factory, value at epoch e)
    (lambda: LR.StepDecay(0.5, step_size=3, gamma=0.1), lambda e: 0.5 * 0.1 ** (e // 3)),
    (lambda: LR.MultiStepDecay(0.5, milestones=[2, 5], gamma=0.5),
     lambda e: 0.5 * 0.5 ** sum(e >= m for m in (2, 5))),
    (lambda: LR.ExponentialDecay(0.5, gamma=0.9), lambda e: 0.5 * 0.9 ** e),
    (lambda: LR.NaturalExpDecay(0.5, gamma=0.1), lambda e: 0.5 * math.exp(-0.1 * e)),
    (lambda: LR.InverseTimeDecay(0.5, gamma=0.1), lambda e: 0.5 / (1 + 0.1 * e)),
    (lambda: LR.PiecewiseDecay([3, 6], [1.0, 0.5, 0.1]),
     lambda e: 1.0 if e < 3 else (0.5 if e < 6 else 0.1)),
    (lambda: LR.NoamDecay(d_model=64, warmup_steps=4, learning_rate=2.0),
     lambda e: 2.0 * 64 ** -0.5 * min(1.0 if e == 0 else e ** -0.5, 4 ** -1.5 * e)),
    (lambda: LR.PolynomialDecay(0.5, decay_steps=5, end_lr=0.1, power=2.0),
     lambda e: (0.5 - 0.1) * (1 - min(e, 5) / 5) ** 2 + 0.1),
    (lambda: LR.PolynomialDecay(0.5, decay_steps=5, end_lr=0.1, cycle=True),
     lambda e: (0.5 - 0.1) * (1 - e / (5 * max(1, math.ceil(e / 5)))) + 0.1),
    (lambda: LR.LinearWarmup(0.5, warmup_steps=4, start_lr=0.0, end_lr=0.5),
     lambda e: 0.5 * e / 4 if e < 4 else 0.5),
    (lambda: LR.LinearWarmup(LR.ExponentialDecay(0.5, 0.9), warmup_steps=3, start_lr=0.1,
                             end_lr=0.5),
     lambda e: 0.1 + 0.4 * e / 3 if e < 3 else 0.5 * 0.9 ** (e - 3)),
    (lambda: LR.CosineAnnealingDecay(0.5, T_max=5, eta_min=0.1),
     lambda e: 0.1 + 0.4 * (1 + math.cos(math.pi * e / 5)) / 2),
    (lambda: LR.LambdaDecay(0.5, lambda e: 0.8 ** e), lambda e: 0.5 * 0.8 ** e),
]


@pytest.mark.parametrize("k", range(len(SCHEDULES)))
def test_scheduler_values_per_step(k):
    make, formula = SCHEDULES[k]
    sched = make()
    got = []
    for _ in range(N_EPOCHS):
        got.append(sched())
        sched.step()
    np.testing.assert_allclose(got, [formula(e) for e in range(N_EPOCHS)], rtol=1e-9,
                               atol=1e-12)


def test_scheduler_step_updates_the_learning_rate_variable():
    sched = LR.StepDecay(0.1, step_size=1, gamma=0.5)
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        x = static.data("x", [None, 3])
        loss = paddle.mean(static.nn.fc(x, 1))
        opt = paddle.optimizer.SGD(learning_rate=sched)
        opt.minimize(loss)
    lr_name = [v.name for v in main.list_vars() if v.name.startswith("learning_rate")][0]
    exe, scope = static.Executor(paddle.CPUPlace()), static.Scope()
    exe.run(startup, scope=scope)
    w_name = [p.name for p in main.all_parameters() if ".w_" in p.name][0]
    seen = []
    for epoch in range(4):
        w = scope.get(w_name)
        (lr,) = exe.run(main, feed={"x": X}, fetch_list=[lr_name], scope=scope)
        seen.append(float(lr[0]))
        w_new = scope.get(w_name)
        # the SGD step used this epoch's rate: w_new = w - lr * grad, grad = mean of x rows
        np.testing.assert_allclose(w_new, w - lr[0] * X.mean(0)[:, None], rtol=1e-5, atol=1e-7)
        assert opt.get_lr() == pytest.approx(0.1 * 0.5 ** epoch)
        sched.step()
    assert seen == pytest.approx([0.1, 0.05, 0.025, 0.0125])


# ---------------------------------------------------------------- fluid.layers.*_decay
L = fluid.layers
DECAYS = [   # (builder, value at run k)
    (lambda: L.exponential_decay(0.5, decay_steps=2, decay_rate=0.5),
     lambda k: 0.5 * 0.5 ** (k / 2)),
    (lambda: L.exponential_decay(0.5, decay_steps=2, decay_rate=0.5, staircase=True),
     lambda k: 0.5 * 0.5 ** (k // 2)),
    (lambda: L.natural_exp_decay(0.5, decay_steps=2, decay_rate=0.3),
     lambda k: 0.5 * math.exp(-0.3 * k / 2)),
    (lambda: L.inverse_time_decay(0.5, decay_steps=2, decay_rate=0.3, staircase=True),
     lambda k: 0.5 / (1 + 0.3 * (k // 2))),
    (lambda: L.polynomial_decay(0.5, decay_steps=3, end_learning_rate=0.1, power=2.0),
     lambda k: 0.4 * (1 - min(k, 3) / 3) ** 2 + 0.1),
    (lambda: L.piecewise_decay([2, 4], [0.3, 0.2, 0.1]),
     lambda k: 0.3 if k < 2 else (0.2 if k < 4 else 0.1)),
    (lambda: L.noam_decay(d_model=16, warmup_steps=3),
     lambda k: 16 ** -0.5 * min((k + 1) ** -0.5, 3 ** -1.5 * (k + 1))),
    (lambda: L.cosine_decay(0.5, step_each_epoch=2, epochs=3),
     lambda k: 0.5 * 0.5 * (math.cos((k // 2) * math.pi / 3) + 1)),
    (lambda: L.linear_lr_warmup(0.5, warmup_steps=3, start_lr=0.1, end_lr=0.4),
     lambda k: 0.1 + 0.3 * k / 3 if k < 3 else 0.5),
]


@pytest.mark.parametrize("k", range(len(DECAYS)))
def test_fluid_decay_values_per_run(k):
    build, formula = DECAYS[k]
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.layers.data(name="x", shape=[3])
        loss = fluid.layers.mean(fluid.layers.fc(x, 1))
        lr = build()
        fluid.optimizer.SGD(learning_rate=lr).minimize(loss)
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    got = [float(exe.run(main, feed={"x": X}, fetch_list=[lr], scope=scope)[0][0])
           for _ in range(7)]
    np.testing.assert_allclose(got, [formula(i) for i in range(7)], rtol=1e-6)
    # a test clone does not advance the schedule
    test = main.clone(for_test=True)
    exe.run(test, feed={"x": X}, fetch_list=[loss], scope=scope)
    assert int(scope.get("@LR_DECAY_COUNTER@")[0]) == 6


def test_scheduler_value_survives_rerunning_the_startup_program():
    sched = LR.ExponentialDecay(0.4, gamma=0.5)
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        x = static.data("x", [None, 3])
        loss = paddle.mean(static.nn.fc(x, 1))
        paddle.optimizer.Adam(learning_rate=sched).minimize(loss)
    exe, scope = static.Executor(paddle.CPUPlace()), static.Scope()
    exe.run(startup, scope=scope)
    sched.step()
    sched.step()
    exe.run(main, feed={"x": X}, scope=scope)
    exe.run(startup, scope=scope)               # re-initialises learning_rate_0 to 0.4
    (lr,) = exe.run(main, feed={"x": X}, fetch_list=["learning_rate_0"], scope=scope)
    assert lr[0] == pytest.approx(0.1)


def test_schedules_drive_a_data_parallel_program():
    """The rate reaches every replica of a with_data_parallel program (2 CPU places): one
    step there equals one single-device step at the same rate."""
    sched = LR.PiecewiseDecay([1], [0.5, 0.05])
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        x = static.data("x", [None, 3])
        y = static.nn.fc(x, 1, weight_attr=paddle.ParamAttr(
            name="w", initializer=paddle.nn.initializer.Assign(W0)), bias_attr=False)
        loss = paddle.mean(y * y)
        paddle.optimizer.SGD(learning_rate=sched).minimize(loss)
    compiled = static.CompiledProgram(main).with_data_parallel(
        loss_name=loss.name, places=static.cpu_places(2))
    exe, scope = static.Executor(paddle.CPUPlace()), static.Scope()
    exe.run(startup, scope=scope)
    w = W0.astype(np.float64)
    for lr in (0.5, 0.05):
        exe.run(compiled, feed={"x": X}, fetch_list=[loss], scope=scope)
        w = w - lr * _grad(w)
        np.testing.assert_allclose(scope.get("w"), w, rtol=1e-5, atol=1e-6)
        sched.step()


def test_autoincreased_step_counter_counts_runs():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.layers.data(name="x", shape=[3])
        out = fluid.layers.mean(x)
        step = fluid.layers.autoincreased_step_counter(begin=5, step=2)
        assert fluid.layers.autoincreased_step_counter() is step
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    got = [int(exe.run(main, feed={"x": X}, fetch_list=[out, step], scope=scope)[1][0])
           for _ in range(3)]
    assert got == [5, 7, 9]
