"""Other frameworks doing the same model step, when they are installed.

Each factory takes the dense-stack parameters [w0, b0, w1, b1, ...] (relu between
layers), a batch and the loss ("mean" for the seed model, "ce" for softmax
cross-entropy with int labels), and returns a step function that applies SGD and
returns the loss as a Python float (so asynchronous frameworks finish the step).
A factory raises Skip when its framework is not importable.
"""
import importlib.util
import os

import numpy as np

from .harness import Skip

PEERS = ("torch", "jax", "paddle")


def installed(name):
    """True when `name` can be imported (checked without importing it)."""
    return importlib.util.find_spec(name) is not None


def _need(name):
    if not installed(name):
        raise Skip(f"{name} not installed")


def torch_step(params, x, y, lr, loss):
    """Eager torch: forward, backward, optim.SGD step, loss.item()."""
    _need("torch")
    import torch
    import torch.nn.functional as F

    ps = [torch.tensor(p, requires_grad=True) for p in params]
    xt = torch.from_numpy(x)
    yt = None if y is None else torch.from_numpy(y.reshape(-1))  # the seed model has no labels
    opt = torch.optim.SGD(ps, lr=lr)

    def step():
        h = xt
        for i in range(0, len(ps), 2):
            h = (torch.relu(h) if i else h) @ ps[i] + ps[i + 1]
        value = h.mean() if loss == "mean" else F.cross_entropy(h, yt)
        opt.zero_grad(set_to_none=True)
        value.backward()
        opt.step()
        return value.item()

    return step


def jax_step(params, x, y, lr, loss):
    """jax.jit of the whole train step; float(loss) waits for it."""
    _need("jax")
    import jax
    import jax.numpy as jnp

    def loss_fn(ps, x, y):
        h = x
        for i in range(0, len(ps), 2):
            h = (jax.nn.relu(h) if i else h) @ ps[i] + ps[i + 1]
        if loss == "mean":
            return h.mean()
        return -jnp.take_along_axis(jax.nn.log_softmax(h), y, axis=1).mean()

    @jax.jit
    def train_step(ps, x, y):
        value, grads = jax.value_and_grad(loss_fn)(ps, x, y)
        return [p - lr * g for p, g in zip(ps, grads)], value

    state = [[jnp.asarray(p) for p in params]]
    xj = jnp.asarray(x)
    yj = None if y is None else jnp.asarray(y)  # the seed model has no labels

    def step():
        state[0], value = train_step(state[0], xj, yj)
        return float(value)

    return step


def paddle_step(build, params, names, feed):
    """Paddle's static graph, built by the same `build(module)` as the numbaflow program."""
    _need("paddle")
    # Paddle 3 runs the old static Program API only with PIR switched off (PERF_ANCHORS).
    os.environ.setdefault("FLAGS_enable_pir_api", "0")
    import paddle

    paddle.enable_static()
    main, startup, loss = build(paddle)
    place = paddle.CPUPlace()
    exe, scope = paddle.static.Executor(place), paddle.static.Scope()
    exe.run(startup, scope=scope)
    for name, value in zip(names, params):  # start from numbaflow's initial parameters
        scope.find_var(name).get_tensor().set(np.ascontiguousarray(value), place)

    def step():
        return float(exe.run(main, feed=feed, fetch_list=[loss.name], scope=scope)[0])

    return step
