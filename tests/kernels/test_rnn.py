"""Recurrent networks built with nn/functional_rnn.py (one `rnn` op) in static programs:
outputs and final states against the numpy reference written from the cell equations
(numbaflow.testing.rnn_reference), Paddle's own numbers and gradients (fixtures made by
tests/fixtures/make_paddle_rnn.py with Paddle 2.6), and an LSTM trained by SGD equal to
SGD on the numpy reference with finite-difference gradients. The op's own rows (every
mode, finite-difference BPTT) are in tests/op_rows/rnn.py."""
import os

import numpy as np
import pytest

import numbaflow as paddle
import numbaflow.static as static
from numbaflow.nn.functional_rnn import rnn, rnn_parameters
from numbaflow.testing.rnn_reference import rnn_reference
from locations import TESTS
from simulator import run_sim

pytestmark = pytest.mark.usefixtures("fresh_graph_state")

FIXTURES = os.path.join(str(TESTS), "fixtures", "paddle_rnn")
KINDS = {"lstm": "LSTM", "gru": "GRU", "simple_rnn_tanh": "RNN_TANH",
         "simple_rnn_relu": "RNN_RELU"}


def _build(mode, in_size, hidden, layers, direction, dtype="float32", time_major=False,
           with_states=True, with_lengths=True, x_grad=False):
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        shape = [None, None, in_size]
        x = static.data("x", shape, dtype)
        x.stop_gradient = not x_grad
        dirs = 2 if direction == "bidirect" else 1
        n = 2 if mode == "LSTM" else 1
        states = [static.data(f"s{i}", [layers * dirs, None, hidden], dtype)
                  for i in range(n)] if with_states else None
        lens = static.data("lens", [None], "int64") if with_lengths else None
        ws = rnn_parameters(mode, in_size, hidden, layers, direction, dtype, name="net")
        out, fin = rnn(x, ws, mode, hidden, layers, direction, time_major=time_major,
                       initial_states=states, sequence_length=lens)
    fin = list(fin) if isinstance(fin, tuple) else [fin]
    return main, startup, x, ws, out, fin


def _weights_in_layout(named, ws):
    """The reference's flattened WeightList from weights by Paddle name (net.<name>)."""
    per = [named[w.name.split(".", 1)[1]] for w in ws]
    return [w for k in range(0, len(per), 4) for w in per[k:k + 2]] + \
        [b for k in range(0, len(per), 4) for b in per[k + 2:k + 4]]


@pytest.mark.parametrize("mode", ["LSTM", "GRU", "RNN_TANH", "RNN_RELU"])
def test_bidirectional_two_layers_padded_matches_reference(mode):
    main, startup, x, ws, out, fin = _build(mode, 3, 4, 2, "bidirect", "float64")
    exe, scope = static.Executor(static.CPUPlace()), static.global_scope()
    exe.run(startup)
    rng = np.random.default_rng(3)
    named = {w.name.split(".", 1)[1]: rng.uniform(-0.6, 0.6, w.shape) for w in ws}
    for w in ws:
        scope.set(w.name, named[w.name.split(".", 1)[1]])
    xb = rng.uniform(-1, 1, (3, 6, 3))
    lens = np.array([6, 2, 4])
    feed = {"x": xb, "lens": lens}
    states = [rng.uniform(-1, 1, (4, 3, 4)) for _ in fin]
    feed.update({f"s{i}": s for i, s in enumerate(states)})
    got = exe.run(main, feed=feed, fetch_list=[out] + fin)
    want_out, want_states = rnn_reference(xb.transpose(1, 0, 2), states,
                                          _weights_in_layout(named, ws), mode, 4, 2, True, lens)
    np.testing.assert_allclose(got[0], want_out.transpose(1, 0, 2), rtol=1e-10, atol=1e-12)
    for g, w in zip(got[1:], want_states):
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)
    assert not got[0][1, 2:].any()     # zero past the length, as Paddle


def test_time_major_zero_initial_states():
    main, startup, x, ws, out, fin = _build("GRU", 2, 3, 1, "forward", "float64",
                                            time_major=True, with_states=False,
                                            with_lengths=False)
    exe = static.Executor(static.CPUPlace())
    exe.run(startup)
    scope = static.global_scope()
    named = {w.name.split(".", 1)[1]: np.array(scope.get(w.name)) for w in ws}
    xt = np.random.default_rng(0).uniform(-1, 1, (5, 4, 2))
    got_out, got_h = exe.run(main, feed={"x": xt}, fetch_list=[out] + fin)
    want_out, (want_h,) = rnn_reference(xt, [np.zeros((1, 4, 3))],
                                        _weights_in_layout(named, ws), "GRU", 3, 1, False)
    np.testing.assert_allclose(got_out, want_out, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(got_h, want_h, rtol=1e-10, atol=1e-12)


def test_parameters_have_paddle_names_shapes_and_init_range():
    ws = rnn_parameters("LSTM", 3, 4, num_layers=2, direction="bidirect", name="enc")
    names = [w.name for w in ws]
    assert names[:8] == ["enc.weight_ih_l0", "enc.weight_hh_l0", "enc.bias_ih_l0",
                         "enc.bias_hh_l0", "enc.weight_ih_l0_reverse",
                         "enc.weight_hh_l0_reverse", "enc.bias_ih_l0_reverse",
                         "enc.bias_hh_l0_reverse"]
    assert [w.shape for w in ws[8:12]] == [(16, 8), (16, 4), (16,), (16,)]
    exe = static.Executor(static.CPUPlace())
    exe.run(static.default_startup_program())
    vals = np.concatenate([np.ravel(static.global_scope().get(n)) for n in names])
    assert np.abs(vals).max() <= 0.5 and vals.std() > 0.1      # Uniform(-1/sqrt(4), 1/sqrt(4))


def _set_fixture_weights(ws, d):
    for w in ws:
        static.global_scope().set(w.name, d[w.name.split(".", 1)[1]])


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_matches_paddle_outputs(kind):
    d = np.load(os.path.join(FIXTURES, kind + ".npz"))
    mode = KINDS[kind]
    main, startup, x, ws, out, fin = _build(mode, 3, 4, 2, "bidirect")
    exe = static.Executor(static.CPUPlace())
    exe.run(startup)
    _set_fixture_weights(ws, d)
    feed = {"x": d["x"], "lens": d["lengths"], "s0": d["h0"]}
    if mode == "LSTM":
        feed["s1"] = d["c0"]
    got = exe.run(main, feed=feed, fetch_list=[out] + fin)
    for g, key in zip(got, ["out", "h", "c"]):
        np.testing.assert_allclose(g, d[key], rtol=1e-5, atol=2e-6, err_msg=key)


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_matches_paddle_gradients(kind):
    """Paddle's gradients of sum(out * cot), padded batch, zero initial states (with given
    initial states Paddle 2.6.2's reverse weight_hh gradient fails its own finite
    differences: see tests/fixtures/make_paddle_rnn.py; ours are checked by finite
    differences in tests/op_rows/rnn.py)."""
    d = np.load(os.path.join(FIXTURES, kind + ".npz"))
    main, startup, x, ws, out, fin = _build(KINDS[kind], 3, 4, 2, "bidirect",
                                            with_states=False, x_grad=True)
    with static.program_guard(main, startup):
        cot = static.data("cot", [None, None, 8], "float32")
        grads = static.gradients(paddle.sum(out * cot), [x] + ws)
    exe = static.Executor(static.CPUPlace())
    exe.run(startup)
    _set_fixture_weights(ws, d)
    got = exe.run(main, feed={"x": d["x"], "lens": d["lengths"], "cot": d["cot"]},
                  fetch_list=[out, fin[0]] + grads)
    np.testing.assert_allclose(got[0], d["out_z"], rtol=1e-5, atol=2e-6)
    np.testing.assert_allclose(got[1], d["h_z"], rtol=1e-5, atol=2e-6)
    np.testing.assert_allclose(got[2], d["dx"], rtol=1e-4, atol=1e-5)
    for w, g in zip(ws, got[3:]):
        np.testing.assert_allclose(g, d["d." + w.name.split(".", 1)[1]], rtol=1e-4, atol=1e-5,
                                   err_msg=w.name)


def test_lstm_sgd_steps_equal_numpy():
    """Three SGD steps on mean((out - y)^2) of a 2-layer LSTM equal the same steps taken on
    the numpy reference with central-difference gradients (float64)."""
    T, B, IN, H, L, lr = 3, 2, 2, 2, 2, 0.5
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        x = static.data("x", [None, T, IN], "float64")
        y = static.data("y", [None, T, H], "float64")
        ws = rnn_parameters("LSTM", IN, H, L, dtype="float64", name="lm")
        out, _ = rnn(x, ws, "LSTM", H, L)
        loss = paddle.mean((out - y) * (out - y))
        paddle.optimizer.SGD(learning_rate=lr).minimize(loss)
    exe = static.Executor(static.CPUPlace())
    exe.run(startup)
    scope = static.global_scope()
    rng = np.random.default_rng(11)
    xb, yb = rng.uniform(-1, 1, (B, T, IN)), rng.uniform(-0.5, 0.5, (B, T, H))
    params = [np.array(scope.get(w.name)) for w in ws]

    def np_loss(ps):
        flat = [w for k in range(0, len(ps), 4) for w in ps[k:k + 2]] + \
            [b for k in range(0, len(ps), 4) for b in ps[k + 2:k + 4]]
        o, _ = rnn_reference(xb.transpose(1, 0, 2), [np.zeros((L, B, H))] * 2, flat, "LSTM",
                             H, L, False)
        return np.mean((o.transpose(1, 0, 2) - yb) ** 2)

    for _ in range(3):
        exe.run(main, feed={"x": xb, "y": yb}, fetch_list=[loss])
        grads = []
        for p in params:
            g = np.zeros_like(p)
            for i in np.ndindex(p.shape):
                old = p[i]
                p[i] = old + 1e-6
                up = np_loss(params)
                p[i] = old - 1e-6
                down = np_loss(params)
                p[i] = old
                g[i] = (up - down) / 2e-6
            grads.append(g)
        params = [p - lr * g for p, g in zip(params, grads)]
    for w, p in zip(ws, params):
        np.testing.assert_allclose(scope.get(w.name), p, rtol=1e-6, atol=1e-8, err_msg=w.name)


def test_bad_arguments_are_refused_early():
    with static.program_guard(static.Program(), static.Program()):  # fresh names
        x = static.data("x", [None, 4, 3], "float32")
        ws = rnn_parameters("GRU", 3, 2)
        with pytest.raises(ValueError, match="mode must be one of"):
            rnn(x, ws, "LSTMX", 2)
        with pytest.raises(ValueError, match="expected 4 \\* num_layers"):
            rnn(x, ws[:3], "GRU", 2)
        with pytest.raises(ValueError, match="direction must be"):
            rnn(x, ws, "GRU", 2, direction="backward")
        with pytest.raises(ValueError, match="takes 1 initial state"):
            rnn(x, ws, "GRU", 2, initial_states=(x, x))


def test_fluid_layers_lstm_is_the_time_major_lstm():
    import numbaflow.fluid as fluid
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        x = static.data("x", [4, None, 3], "float64")
        h0 = static.data("h0", [2, None, 2], "float64")
        c0 = static.data("c0", [2, None, 2], "float64")
        out, h, c = fluid.layers.lstm(x, h0, c0, 4, 2, 1, is_bidirec=True, name="enc")
    exe = static.Executor(static.CPUPlace())
    exe.run(startup)
    scope = static.global_scope()
    names = ["weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0"]
    per = [np.array(scope.get(f"enc.{n}{s}")) for s in ("", "_reverse") for n in names]
    rng = np.random.default_rng(2)
    xb, hb, cb = rng.uniform(-1, 1, (4, 3, 3)), rng.uniform(-1, 1, (2, 3, 2)), \
        rng.uniform(-1, 1, (2, 3, 2))
    got = exe.run(main, feed={"x": xb, "h0": hb, "c0": cb}, fetch_list=[out, h, c])
    flat = per[0:2] + per[4:6] + per[2:4] + per[6:8]
    want_out, (want_h, want_c) = rnn_reference(xb, [hb, cb], flat, "LSTM", 2, 1, True)
    for g, w in zip(got, (want_out, want_h, want_c)):
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)
    with pytest.raises(ValueError, match="max_len=5"):
        fluid.layers.lstm(x, h0, c0, 5, 2, 1)


@pytest.mark.slow
@pytest.mark.gpu
def test_rnn_on_simulated_gpu_equals_cpu():
    """On a GPU the rnn ops run their CPU kernels on host copies (host_staged): same numbers."""
    assert "checked 8" in run_sim("rnn").stdout


def test_dropout_between_layers_scales_kept_units_and_its_gradient_agrees():
    """Training dropout between layers (upscale_in_train): with a fixed seed each fresh
    kernel draws the same mask, so finite differences through the op see the mask the
    gradient used; with is_test the output is the reference's, without dropout."""
    from numbaflow.kernels.registry import run_op
    from numbaflow.testing.rnn_reference import rnn_weights
    rng = np.random.default_rng(4)
    T, B, IN, H = 4, 3, 2, 3
    ws = rnn_weights(rng, "GRU", IN, H, 2, 2)
    x, h0 = rng.uniform(-1, 1, (T, B, IN)), rng.uniform(-1, 1, (4, B, H))
    attrs = dict(mode="GRU", hidden_size=H, input_size=IN, num_layers=2, is_bidirec=True,
                 dropout_prob=0.4, seed=7)

    def fwd(xx, **kw):
        return run_op("rnn", {"Input": xx, "PreState": [h0], "WeightList": ws},
                      dict(attrs, **kw))

    want, _ = rnn_reference(x, [h0], ws, "GRU", H, 2, True)
    np.testing.assert_allclose(fwd(x, is_test=True)["Out"], want, rtol=1e-12, atol=1e-12)
    r = fwd(x)
    assert not np.allclose(r["Out"], want)
    cot = rng.uniform(-1, 1, r["Out"].shape)
    g = run_op("rnn_grad", {"Input": x, "PreState": [h0], "WeightList": ws,
                            "Reserve": r["Reserve"], "Out@GRAD": cot,
                            "State@GRAD": [np.zeros_like(h0)]}, attrs)
    for idx in [(0, 0, 0), (1, 2, 1), (3, 1, 0)]:
        xp, xm = x.copy(), x.copy()
        xp[idx] += 1e-6
        xm[idx] -= 1e-6
        fd = ((fwd(xp)["Out"] * cot).sum() - (fwd(xm)["Out"] * cot).sum()) / 2e-6
        assert abs(g["Input@GRAD"][idx] - fd) < 1e-6 * max(1.0, abs(fd)), (idx, fd)
