"""Checkpoints both ways with real Paddle 2.6.2: its `static.save` and `paddle.save` files
(tests/fixtures/paddle/, 3 training steps done) resume here, and one more step equals
Paddle's 4th step; a checkpoint numbaflow writes with format="paddle" resumes in Paddle
(run where NUMBAFLOW_PADDLE_PYTHON names a Paddle interpreter)."""
import os
import subprocess
import warnings

import numpy as np
import pytest

import numbaflow as paddle
import numbaflow.nn.functional as F
import numbaflow.static as static
from locations import TESTS

pytestmark = pytest.mark.usefixtures("fresh_graph_state")

FIXTURES = os.path.join(str(TESTS), "fixtures", "paddle")
PADDLE_PYTHON = os.environ.get("NUMBAFLOW_PADDLE_PYTHON")


# the training programs of make_fixtures.py, built here (same layers, same names)
def mlp():
    x = static.data("x", [None, 4], "float32")
    y = static.data("y", [None, 1], "float32")
    h = static.nn.fc(x, 8, activation="relu")
    out = static.nn.fc(h, 1)
    loss = paddle.mean(paddle.square(out - y))
    paddle.optimizer.Adam(0.01).minimize(loss)
    return loss


def cnn():
    x = static.data("x", [None, 1, 8, 8], "float32")
    y = static.data("y", [None, 1], "int64")
    h = static.nn.conv2d(x, 4, 3, padding=1)
    h = static.nn.batch_norm(h, act="relu")
    h = F.max_pool2d(h, 2, 2)
    h = F.avg_pool2d(h, 2, 2)
    h = paddle.flatten(h, 1)
    out = static.nn.fc(h, 3)
    loss = paddle.mean(F.cross_entropy(out, y))
    paddle.optimizer.Momentum(0.05, momentum=0.9).minimize(loss)
    return loss


BUILD = {"mlp": mlp, "cnn": cnn}


def build(model):
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        loss = BUILD[model]()
    exe = static.Executor(paddle.CPUPlace())
    exe.run(startup)
    return exe, main, loss


def step(exe, main, loss, model):
    d = np.load(os.path.join(FIXTURES, model, "data.npz"))
    feed = {k[len("step_"):]: d[k] for k in d.files if k.startswith("step_") and k != "step_loss"}
    got, = exe.run(main, feed=feed, fetch_list=[loss])
    return got, feed, d


def assert_matches_paddles_step(model, got_loss, want):
    np.testing.assert_allclose(got_loss, want["step_loss"], rtol=1e-5)
    scope = static.global_scope()
    names = [k for k in want.files if k.startswith("after/")]
    assert names
    for k in names:
        np.testing.assert_allclose(np.asarray(scope.get(k[len("after/"):])).reshape(
            want[k].shape), want[k], rtol=2e-5, atol=1e-6, err_msg=k)


@pytest.mark.parametrize("model", ["mlp", "cnn"])
@pytest.mark.parametrize("how", ["static.load", "set_program_state", "set_state_dict"])
def test_paddle_checkpoint_resumes_with_paddles_next_step(model, how):
    """Paddle keeps scalars (learning_rate_0) 0-D where numbaflow's optimizers hold (1,)."""
    exe, main, loss = build(model)
    prefix = os.path.join(FIXTURES, model, "ckpt")
    if how == "static.load":
        static.load(main, prefix, exe)
    elif how == "set_program_state":
        static.set_program_state(main, static.load_program_state(prefix))
    else:
        main.set_state_dict(paddle.load(os.path.join(FIXTURES, model, "state.pdparams")))
    assert static.global_scope().get("learning_rate_0").shape == (1,)
    got, _, want = step(exe, main, loss, model)
    assert_matches_paddles_step(model, got, want)


def test_state_dict_modes_and_round_trip(tmp_path):
    exe, main, loss = build("mlp")
    params, opt, full = (main.state_dict(m) for m in ("param", "opt", "all"))
    assert sorted(params) == ["fc_0.b_0", "fc_0.w_0", "fc_1.b_0", "fc_1.w_0"]
    assert "learning_rate_0" in opt and "fc_0.w_0_moment1_0" in opt
    assert sorted(full) == sorted({**params, **opt})
    paddle.save(full, str(tmp_path / "s.pdparams"))
    before = main.state_dict()
    static.global_scope().set("fc_0.w_0", np.zeros((4, 8), "float32"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        main.set_state_dict(paddle.load(str(tmp_path / "s.pdparams")))
    for k, a in before.items():
        np.testing.assert_array_equal(static.global_scope().get(k), a)
    with pytest.raises(ValueError, match="mode must be"):
        main.state_dict("params")


def test_scalars_fit_both_ways_and_mismatches_are_listed_per_variable():
    exe, main, loss = build("mlp")
    state = main.state_dict()
    state["learning_rate_0"] = np.array(0.5, "float32")        # Paddle's 0-D scalar
    main.set_state_dict(state)
    assert static.global_scope().get("learning_rate_0").tolist() == [0.5]
    state["fc_0.w_0"] = np.zeros((8, 4), "float32")
    state["fc_1.b_0"] = np.zeros(1, "float64")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        main.set_state_dict({"fc_0.b_0": state["fc_0.b_0"], "extra": np.ones(2)})
    said = [str(w.message) for w in caught]
    assert any("no persistable ['extra']" in m for m in said), said
    assert any("no value for ['fc_0.w_0'" in m for m in said), said
    with pytest.raises(ValueError) as e:
        main.set_state_dict(state)
    msg = str(e.value)
    assert "2 of 21 variables" in msg and "'fc_0.w_0': expected shape (4, 8)" in msg and \
        "'fc_1.b_0': expected shape (1,), dtype float32; found shape (1,), dtype float64" in msg
    assert static.global_scope().get("learning_rate_0").tolist() == [0.5]   # nothing set


def test_paddle_format_checkpoint_reads_back(tmp_path):
    exe, main, loss = build("cnn")
    before = main.state_dict()
    for protocol in (2, 4):
        prefix = str(tmp_path / f"p{protocol}")
        static.save(main, prefix, protocol=protocol, format="paddle")
        with open(prefix + ".pdparams", "rb") as f:
            assert f.read(2) == bytes([0x80, protocol])       # a pickle, as Paddle's
        with static.scope_guard(static.Scope()):
            static.load(main, prefix, exe)
            for k, a in before.items():
                np.testing.assert_array_equal(static.global_scope().get(k), a)
    with pytest.raises(ValueError, match="format must be"):
        static.save(main, str(tmp_path / "x"), format="pickle")


@pytest.mark.slow
@pytest.mark.skipif(not PADDLE_PYTHON, reason="set NUMBAFLOW_PADDLE_PYTHON to a Paddle 2.6 "
                    "interpreter to run real Paddle")
@pytest.mark.parametrize("model, protocol", [("mlp", 4), ("cnn", 2)])
def test_checkpoint_written_here_resumes_in_paddle(model, protocol, tmp_path, monkeypatch):
    from numbaflow.persistence import paddle_pickle as _pickle
    monkeypatch.setattr(_pickle, "_SPLIT_BYTES", 64)       # protocol 2: big arrays split
    exe, main, loss = build(model)
    static.load(main, os.path.join(FIXTURES, model, "ckpt"), exe)   # Paddle's 3 steps
    got, feed, _ = step(exe, main, loss, model)                        # a 4th step here
    static.save(main, str(tmp_path / "ckpt"), protocol=protocol, format="paddle")
    d = np.load(os.path.join(FIXTURES, model, "data.npz"))
    np.savez(tmp_path / "feed.npz", **feed)                   # a 5th step: here and Paddle
    got5, = exe.run(main, feed=feed, fetch_list=[loss])
    subprocess.run([PADDLE_PYTHON, os.path.join(FIXTURES, "make_fixtures.py"), "resume",
                    model, str(tmp_path / "ckpt"), str(tmp_path / "feed.npz"),
                    str(tmp_path / "out.npz")], check=True, capture_output=True, timeout=300)
    assert_matches_paddles_step(model, got5, np.load(tmp_path / "out.npz"))
    assert d["step_loss"] == pytest.approx(float(got), rel=1e-5)


def test_protocol_2_splits_big_arrays_as_paddle_does(tmp_path, monkeypatch):
    """Protocols 2-3 cannot pickle an object over 4 GiB: Paddle splits big arrays into
    slices listed under `UnpackBigParamInfor@@`; the split is shrunk here to 64 bytes."""
    import pickle

    from numbaflow.persistence import paddle_pickle as _pickle
    monkeypatch.setattr(_pickle, "_SPLIT_BYTES", 64)
    exe, main, loss = build("mlp")
    before = main.state_dict()
    static.save(main, str(tmp_path / "ck"), protocol=2, format="paddle")
    with open(tmp_path / "ck.pdparams", "rb") as f:
        raw = pickle.load(f)       # plain pickle: what Paddle's loader sees
    info = raw["UnpackBigParamInfor@@"]["fc_0.w_0"]     # 4x8 float32 = 128 bytes
    assert info["OriginShape"] == (4, 8) and len(info["slices"]) == 2
    with static.scope_guard(static.Scope()):
        static.load(main, str(tmp_path / "ck"), exe)
        for k, a in before.items():
            np.testing.assert_array_equal(static.global_scope().get(k), a)
