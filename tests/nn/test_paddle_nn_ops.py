"""Paddle's own loss, prelu and unfold ops (huber_loss, bce_loss, kldiv_loss, nll_loss, prelu,
unfold and their gradient ops) against real Paddle 2.6.2 (tests/fixtures/paddle_nn_ops/, written by
tests/fixtures/make_paddle_nn_ops.py): numbaflow's functionals write the ops Paddle's
write, in the same order, and their gradient ops, with Paddle's values and gradients; the program Paddle saved
with them loads with `load_inference_model` and gives Paddle's outputs; nn.PReLU has
Paddle's names; nn.Unfold is F.unfold."""
import json
import os
import sys

import numpy as np
import pytest

import numbaflow as paddle
import numbaflow.nn.functional as F
import numbaflow.static as static
from numbaflow.utils import unique_name
from locations import TESTS

pytestmark = pytest.mark.usefixtures("fresh_graph_state")

HERE = os.path.join(str(TESTS), "fixtures")
sys.path.insert(0, HERE)
from make_paddle_nn_ops import FETCHES, build, feeds  # noqa: E402

DATA = np.load(os.path.join(HERE, "paddle_nn_ops", "data.npz"))
OPS = ("huber_loss", "bce_loss", "kldiv_loss", "prelu", "unfold", "nll_loss")


def _ours(types):
    return [t for t in types if t.split("_grad")[0] in OPS]


def test_functionals_write_paddles_ops_with_paddles_values():
    main, startup = static.Program(), static.Program()
    data = feeds()
    with static.program_guard(main, startup):
        v = {k: static.data(k, [None, *a.shape[1:]], str(a.dtype)) for k, a in data.items()}
        v["x"].stop_gradient = False
        fetch = build(paddle, F, v)
    with open(os.path.join(HERE, "paddle_nn_ops", "ops.json"), encoding="utf-8") as f:
        paddles = json.load(f)["ops"]
    ours = _ours(op.type for op in main.global_block().ops)
    # the forward ops in Paddle's order; the same gradient ops (numbaflow's backward also
    # differentiates prelu's second slope, which Paddle prunes as nobody asked for it)
    assert [t for t in ours if "_grad" not in t] == [t for t in _ours(paddles) if "_grad" not in t]
    assert set(ours) == set(_ours(paddles))
    exe = static.Executor(paddle.CPUPlace())
    exe.run(startup)
    got = exe.run(main, feed=data, fetch_list=fetch)
    for name, value in zip(FETCHES, got):
        np.testing.assert_allclose(value, DATA[name], rtol=1e-5, atol=1e-6, err_msg=name)


def test_paddle_saved_program_with_these_ops_loads_and_runs():
    exe = static.Executor(paddle.CPUPlace())
    program, feed_names, fetches = static.load_inference_model(
        os.path.join(HERE, "paddle_nn_ops", "infer"), exe)
    types = {op.type for op in program.global_block().ops}
    assert set(OPS) | {f"{t}_grad" for t in OPS} <= types    # Paddle's grad ops load too
    got = exe.run(program, feed={k: DATA[k] for k in feed_names}, fetch_list=fetches)
    for name, value in zip(FETCHES, got):
        np.testing.assert_allclose(value, DATA[name], rtol=1e-5, atol=1e-6, err_msg=name)


def test_prelu_layer_names_and_refusals():
    with static.program_guard(static.Program(), static.Program()), unique_name.guard():
        x = static.data("x", [None, 3, 4, 4])
        act = paddle.nn.PReLU(3, init=0.1)
        assert act(x).shape == (-1, 3, 4, 4)
        assert [p.name for p in act.parameters()] == ["p_re_lu_0.w_0"]
        assert list(act.state_dict(keys_only=True)) == ["_weight"]
        with pytest.raises(ValueError, match=r"prelu: weight of shape \(4,\) needs x with 4 "
                                             r"channels in dim 1 \(NCHW\)"):
            paddle.nn.PReLU(4)(x)
        with pytest.raises(ValueError, match="same shape"):
            F.binary_cross_entropy(x, static.data("y", [None, 3, 4, 1]))
        block = static.default_main_program().global_block()
        with pytest.raises(ValueError, match="kldiv_loss: reduction 'mean' is not supported"):
            block.append_op("kldiv_loss", {"X": x, "Target": x},
                            {"Loss": block.create_var("kl", (), "float32")},
                            {"reduction": "mean"})


def test_unfold_layer_is_the_functional_with_paddles_argument_order():
    x = np.random.default_rng(0).uniform(-1, 1, (2, 3, 4, 4)).astype("float32")
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        a = static.data("a", [None, 3, 4, 4])
        layer = paddle.nn.Unfold([2, 2], 1, 0, 2)           # kernel, dilations, paddings, strides
        fetch = [layer(a), F.unfold(a, [2, 2], strides=2)]
    got, want = static.Executor().run(main, feed={"a": x}, fetch_list=fetch)
    np.testing.assert_array_equal(got, want)
    # column (1, 0) is the 2x2 block at rows 2..3, columns 0..1 of every channel
    np.testing.assert_array_equal(got[:, :, 2], x[:, :, 2:4, 0:2].reshape(2, -1))


def test_nll_loss_refuses_a_label_out_of_range_and_views_3d_input_as_paddle():
    x = np.log(np.full((2, 3, 4), 1 / 3, "float32"))
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        a = static.data("a", [None, 3, 4])
        lab = static.data("lab", [None, 4], "int64")
        out = F.nll_loss(a, lab, reduction="none")
    assert [op.type for op in main.global_block().ops] == ["reshape2", "reshape2", "nll_loss",
                                                           "reshape2"]
    exe = static.Executor()
    got, = exe.run(main, feed={"a": x, "lab": np.zeros((2, 4), "int64")}, fetch_list=[out])
    np.testing.assert_allclose(got, np.full((2, 4), np.log(3)), rtol=1e-6)
    with pytest.raises(ValueError, match=r"nll_loss: label 3 \(position 5\) is outside \[0, 3\)"):
        exe.run(main, feed={"a": x, "lab": np.array([[0, 1, 2, 0], [1, 3, 0, 0]])},
                fetch_list=[out])


def test_channel_prelu_fuses_with_its_slope_aligned_at_dim_1():
    """Auto-fusion aligns prelu's [C] slope at dim 1 (OpDef.axis) in the fused kernel and
    sums Alpha@GRAD down to [C]: the fused program's output and slope update equal the
    plain program's and numpy's."""
    xv = np.random.default_rng(0).uniform(-1, 1, (2, 3, 2, 2)).astype("float32")
    alpha = np.array([0.1, -0.3, 0.6], "float32")
    results = []
    for fuse in (False, True):
        main, startup = static.Program(), static.Program()
        with static.program_guard(main, startup), unique_name.guard():
            x = static.data("x", [None, 3, 2, 2])
            w = static.create_parameter([3], "float32", name="slope",
                                        default_initializer=paddle.nn.initializer.Assign(alpha))
            y = paddle.scale(F.relu(paddle.scale(F.prelu(paddle.scale(x, 2.0), w), 3.0)), 0.5)
            paddle.optimizer.SGD(0.1).minimize(paddle.sum(y))
        scope, exe = static.Scope(), static.Executor()
        exe.run(startup, scope=scope)
        strategy = static.BuildStrategy()
        strategy.enable_auto_fusion = fuse
        results.append(exe.run(static.CompiledProgram(main, build_strategy=strategy),
                               feed={"x": xv}, fetch_list=[y, w], scope=scope))
    z = 2 * xv
    want = 0.5 * np.maximum(3 * np.where(z > 0, z, alpha.reshape(1, 3, 1, 1) * z), 0)
    np.testing.assert_allclose(results[1][0], want, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(results[1][1], results[0][1], rtol=1e-6, atol=1e-7)
    assert not np.allclose(results[1][1], alpha)          # the slope was trained
