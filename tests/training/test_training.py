"""End to end: an MLP (relu, softmax cross-entropy) trained 3 steps with SGD, Momentum
and Adam (also with weight decay and global-norm clipping) equals an independent numpy
implementation of the same math, parameter by parameter."""
import numpy as np
import pytest

import numbaflow as paddle
import numbaflow.static as static
from numbaflow.graph import verify
from numbaflow.utils import unique_name

B, D, H, C = 16, 8, 12, 4


def build(opt, dtype="float32"):
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup), unique_name.guard():
        x = static.data("x", [None, D], dtype)
        y = static.data("y", [None, 1], "int64")
        h = static.nn.fc(x, H, activation="relu")
        logits = static.nn.fc(h, C)
        loss = paddle.nn.functional.cross_entropy(logits, y)
        opt.minimize(loss)
    verify(main)
    verify(startup)
    return main, startup, loss


def numpy_grads(p, x, y, weight_decay=0.0, clip=None):
    """Forward + backward of the same MLP, written from the math."""
    h_pre = x @ p["fc_0.w_0"] + p["fc_0.b_0"]
    h = np.maximum(h_pre, 0)
    logits = h @ p["fc_1.w_0"] + p["fc_1.b_0"]
    z = logits - logits.max(1, keepdims=True)
    prob = np.exp(z) / np.exp(z).sum(1, keepdims=True)
    n = len(x)
    loss = -np.log(prob[np.arange(n), y[:, 0]]).mean()
    d = prob.copy()
    d[np.arange(n), y[:, 0]] -= 1
    d /= n
    g = {"fc_1.w_0": h.T @ d, "fc_1.b_0": d.sum(0)}
    dh = (d @ p["fc_1.w_0"].T) * (h_pre > 0)
    g["fc_0.w_0"], g["fc_0.b_0"] = x.T @ dh, dh.sum(0)
    if clip is not None:
        norm = np.sqrt(sum((v ** 2).sum() for v in g.values()))
        g = {k: v * clip / max(norm, clip) for k, v in g.items()}
    if weight_decay:
        g = {k: v + weight_decay * p[k] for k, v in g.items()}
    return loss, g


class NumpySGD:
    def __init__(self, lr):
        self.lr = lr

    def step(self, p, g):
        for k in p:
            p[k] = p[k] - self.lr * g[k]


class NumpyMomentum:
    def __init__(self, lr, mu, nesterov=False):
        self.lr, self.mu, self.nesterov, self.v = lr, mu, nesterov, {}

    def step(self, p, g):
        for k in p:
            v = self.v[k] = self.mu * self.v.get(k, 0.0) + g[k]
            p[k] = p[k] - self.lr * (g[k] + self.mu * v if self.nesterov else v)


class NumpyAdam:
    def __init__(self, lr, b1=0.9, b2=0.999, eps=1e-8):
        self.lr, self.b1, self.b2, self.eps = lr, b1, b2, eps
        self.m1, self.m2, self.b1p, self.b2p = {}, {}, b1, b2

    def step(self, p, g):
        for k in p:
            m1 = self.m1[k] = self.b1 * self.m1.get(k, 0.0) + (1 - self.b1) * g[k]
            m2 = self.m2[k] = self.b2 * self.m2.get(k, 0.0) + (1 - self.b2) * g[k] ** 2
            lr_t = self.lr * np.sqrt(1 - self.b2p) / (1 - self.b1p)
            p[k] = p[k] - lr_t * m1 / (np.sqrt(m2) + self.eps * np.sqrt(1 - self.b2p))
        self.b1p *= self.b1
        self.b2p *= self.b2


CASES = {
    "sgd": (lambda: paddle.optimizer.SGD(learning_rate=0.1), lambda: NumpySGD(0.1), {}),
    "momentum": (lambda: paddle.optimizer.Momentum(learning_rate=0.05, momentum=0.9),
                 lambda: NumpyMomentum(0.05, 0.9), {}),
    "momentum_nesterov": (lambda: paddle.optimizer.Momentum(0.05, 0.9, use_nesterov=True),
                          lambda: NumpyMomentum(0.05, 0.9, nesterov=True), {}),
    "adam": (lambda: paddle.optimizer.Adam(learning_rate=0.01), lambda: NumpyAdam(0.01), {}),
    "sgd_weight_decay": (lambda: paddle.optimizer.SGD(0.1, weight_decay=0.01),
                         lambda: NumpySGD(0.1), {"weight_decay": 0.01}),
    "adam_clip": (lambda: paddle.optimizer.Adam(
        0.01, grad_clip=paddle.nn.ClipGradByGlobalNorm(0.05)), lambda: NumpyAdam(0.01),
        {"clip": 0.05}),
}


@pytest.mark.parametrize("case", list(CASES))
def test_mlp_three_steps_match_numpy(case):
    make_opt, make_ref, grad_kw = CASES[case]
    paddle.seed(123)
    main, startup, loss = build(make_opt())
    scope = static.Scope()
    exe = static.Executor(paddle.CPUPlace())
    exe.run(startup, scope=scope)
    names = ["fc_0.w_0", "fc_0.b_0", "fc_1.w_0", "fc_1.b_0"]
    ref = {k: scope.get(k).astype(np.float64) for k in names}
    assert np.abs(ref["fc_0.w_0"]).sum() > 0          # initialised (Xavier), not zeros
    ref_opt = make_ref()
    rng = np.random.default_rng(7)
    for step in range(3):
        x = rng.standard_normal((B, D)).astype(np.float32)
        y = rng.integers(0, C, (B, 1)).astype(np.int64)
        ref_loss, g = numpy_grads(ref, x.astype(np.float64), y, **grad_kw)
        got_loss, = exe.run(main, feed={"x": x, "y": y}, fetch_list=[loss], scope=scope)
        np.testing.assert_allclose(got_loss, ref_loss, rtol=1e-5)
        ref_opt.step(ref, g)
        for k in names:
            np.testing.assert_allclose(scope.get(k), ref[k], rtol=1e-5, atol=1e-6,
                                       err_msg=f"{case} step {step} {k}")


def test_seed_makes_initialisation_reproducible():
    vals = []
    for _ in range(2):
        paddle.seed(5)
        main, startup, loss = build(paddle.optimizer.SGD(0.1))
        scope = static.Scope()
        static.Executor().run(startup, scope=scope)
        vals.append(scope.get("fc_0.w_0"))
    np.testing.assert_array_equal(vals[0], vals[1])
    paddle.seed(6)
    main, startup, loss = build(paddle.optimizer.SGD(0.1))
    scope = static.Scope()
    static.Executor().run(startup, scope=scope)
    assert not np.array_equal(vals[0], scope.get("fc_0.w_0"))
    limit = np.sqrt(6.0 / (D + H))                     # Xavier uniform bound
    assert np.abs(vals[0]).max() <= limit
