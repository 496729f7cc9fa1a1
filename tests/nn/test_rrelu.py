"""RReLU (issue 28): F.rrelu / nn.RReLU write Paddle 2.6.2's `rrelu` op and its gradient op
with Paddle's values (tests/fixtures/paddle_rrelu/, written by
tests/fixtures/make_paddle_rrelu.py), a Paddle-saved program with them loads and runs, and
the training slopes are uniform in [lower, upper), a new draw each run, the gradient the
same slope as the forward."""
import json
import os
import sys

import numpy as np
import pytest

import numbaflow as paddle
import numbaflow.nn.functional as F
from numbaflow import static
from numbaflow.utils import unique_name
from locations import TESTS

pytestmark = pytest.mark.usefixtures("fresh_graph_state")

HERE = os.path.join(str(TESTS), "fixtures")
sys.path.insert(0, HERE)
from make_paddle_rrelu import FETCHES, build, feeds  # noqa: E402

DATA = np.load(os.path.join(HERE, "paddle_rrelu", "data.npz"))


def check_training(x, w, out, dx, lower, upper):
    neg = x < 0
    slope = np.where(neg, out / np.where(neg, x, 1), 1.0)
    np.testing.assert_array_equal(out[~neg], x[~neg])
    assert lower - 1e-6 <= slope[neg].min() and slope[neg].max() < upper + 1e-6
    np.testing.assert_allclose(dx, slope * w, rtol=1e-5)       # the forward's slopes


def test_functional_and_layer_write_paddles_ops_with_paddles_values():
    main, startup = static.Program(), static.Program()
    data = feeds()
    with static.program_guard(main, startup), unique_name.guard():
        v = {k: static.data(k, [None, *a.shape[1:]], str(a.dtype)) for k, a in data.items()}
        v["x"].stop_gradient = False
        outs = build(paddle, F, v)
    with open(os.path.join(HERE, "paddle_rrelu", "ops.json"), encoding="utf-8") as f:
        paddles = json.load(f)["ops"]
    assert [t for t in (op.type for op in main.global_block().ops) if "rrelu" in t] == \
        [t for t in paddles if "rrelu" in t]
    exe = static.Executor(paddle.CPUPlace())
    exe.run(startup)
    names = list(FETCHES) + ["train", "dtrain"]
    got = dict(zip(names, exe.run(main, feed=data, fetch_list=[outs[k] for k in names])))
    for name in FETCHES:
        np.testing.assert_allclose(got[name], DATA[name], rtol=1e-6, atol=1e-7, err_msg=name)
    for run in (got, DATA):       # ours and Paddle's training run obey the same rule
        check_training(data["x"], data["w"], run["train"], run["dtrain"], 0.1, 0.3)


def test_paddle_saved_inference_model_with_rrelu_loads_and_runs():
    # Paddle's export drops the intermediate Noise output (and writes no .pdiparams)
    exe = static.Executor(paddle.CPUPlace())
    program, feed_names, fetches = static.load_inference_model(
        os.path.join(HERE, "paddle_rrelu", "infer"), exe)
    ops = [op for op in program.global_block().ops if op.type == "rrelu"]
    assert len(ops) == 2 and all("Noise" not in op.outputs for op in ops)
    got = exe.run(program, feed={k: DATA[k] for k in feed_names}, fetch_list=fetches)
    assert len(got) == 2
    for name, value in zip(FETCHES, got):
        np.testing.assert_allclose(value, DATA[name], rtol=1e-6, atol=1e-7, err_msg=name)


def test_training_slopes_are_uniform_new_each_run_and_seeded():
    def draw_twice():
        with static.program_guard(static.Program(), static.Program()):
            x = static.data("x", [20000])
            out = F.rrelu(x, 0.2, 0.5)
            exe = static.Executor()
            feed = {"x": -np.ones(20000, "float32")}
            return [-exe.run(feed=feed, fetch_list=[out])[0] for _ in range(2)]
    paddle.seed(4)
    a, b = draw_twice()
    for s in (a, b):
        assert 0.2 <= s.min() and s.max() < 0.5
        assert abs(s.mean() - 0.35) < 0.005 and abs(s.var() - 0.3 ** 2 / 12) < 0.0005
    assert not np.array_equal(a, b)
    paddle.seed(4)
    np.testing.assert_array_equal(draw_twice()[0], a)


def test_layer_follows_train_and_eval_and_bad_bounds_are_refused():
    with static.program_guard(static.Program(), static.Program()):
        x = static.data("x", [None, 3])
        act = paddle.nn.RReLU(0.1, 0.3)
        assert repr(act) == "RReLU(lower=0.1, upper=0.3)" and act.parameters() == []
        act(x)
        act.eval()
        act(x)
        ops = [op for op in static.default_main_program().global_block().ops]
        assert [op.attrs["is_test"] for op in ops if op.type == "rrelu"] == [False, True]
        with pytest.raises(TypeError, match="rrelu: lower and upper must be floats"):
            F.rrelu(x, 0, 0.3)
        with pytest.raises(ValueError, match=r"0 <= lower <= upper <= 1, got lower 0.5, "
                                             r"upper 0.3"):
            F.rrelu(x, 0.5, 0.3)
