"""paddle.nn.LSTM / GRU / SimpleRNN, the cells and RNN / BiRNN (numbaflow/nn/layer/rnn.py) in
static mode: Paddle's parameter names and state_dict keys, Paddle's numbers through a
state_dict keyed as Paddle's (fixtures by tests/fixtures/make_paddle_rnn.py), and the cells
and RNN / BiRNN against the numpy reference (numbaflow.testing.rnn_reference)."""
import os

import numpy as np
import pytest

import numbaflow as paddle
import numbaflow.static as static
from numbaflow.testing.rnn_reference import cell_step, rnn_reference
from locations import TESTS

pytestmark = pytest.mark.usefixtures("fresh_graph_state")

FIXTURES = os.path.join(str(TESTS), "fixtures", "paddle_rnn")


def _net(kind):
    if kind == "simple_rnn_relu":
        return paddle.nn.SimpleRNN(3, 4, num_layers=2, direction="bidirect", activation="relu")
    cls = {"lstm": paddle.nn.LSTM, "gru": paddle.nn.GRU, "simple_rnn_tanh": paddle.nn.SimpleRNN}
    return cls[kind](3, 4, num_layers=2, direction="bidirect")


@pytest.mark.parametrize("kind", ["lstm", "gru", "simple_rnn_tanh", "simple_rnn_relu"])
def test_layer_loads_paddle_weights_and_gives_paddle_numbers(kind):
    d = np.load(os.path.join(FIXTURES, kind + ".npz"))
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        net = _net(kind)
        x = static.data("x", [None, 5, 3], "float32")
        lens = static.data("lens", [None], "int64")
        n = 2 if kind == "lstm" else 1
        states = [static.data(f"s{i}", [4, None, 4], "float32") for i in range(n)]
        out, fin = net(x, tuple(states) if n == 2 else states[0], lens)
    fin = list(fin) if isinstance(fin, tuple) else [fin]
    exe = static.Executor(static.CPUPlace())
    exe.run(startup)
    keys = list(net.state_dict(keys_only=True))
    assert keys[:4] == ["weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0"]
    assert "weight_hh_l1_reverse" in keys
    missing, unexpected = net.set_state_dict({k: d[k] for k in d.files if k in keys})
    assert not missing
    feed = {"x": d["x"], "lens": d["lengths"], "s0": d["h0"]}
    if n == 2:
        feed["s1"] = d["c0"]
    got = exe.run(main, feed=feed, fetch_list=[out] + fin)
    for g, key in zip(got, ["out", "h", "c"]):
        np.testing.assert_allclose(g, d[key], rtol=1e-5, atol=2e-6, err_msg=key)
    # the same Parameters under the cells' names: the first cell is lstm_cell_0 etc.
    assert net.weight_ih_l0 is net[0].cell_fw.weight_ih
    assert net.weight_ih_l0.name.endswith("_cell_0.w_0")


@pytest.mark.parametrize("cls,mode", [(paddle.nn.LSTMCell, "LSTM"), (paddle.nn.GRUCell, "GRU"),
                                      (paddle.nn.SimpleRNNCell, "RNN_TANH")])
def test_cell_rnn_and_birnn_match_reference(cls, mode):
    B, T, IN, H = 3, 4, 2, 3
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        x = static.data("x", [None, T, IN], "float32")
        lens = static.data("lens", [None], "int64")
        cell, cell_bw = cls(IN, H), cls(IN, H)
        step_h, _ = cell(x[:, 0])
        seq_out, seq_fin = paddle.nn.RNN(cell)(x)
        masked_out, masked_fin = paddle.nn.RNN(cell, is_reverse=True)(x, sequence_length=lens)
        bi_out, _ = paddle.nn.BiRNN(cell, cell_bw)(x)
    exe = static.Executor(static.CPUPlace())
    exe.run(startup)
    scope = static.global_scope()
    rng = np.random.default_rng(5)
    xb, lb = rng.uniform(-1, 1, (B, T, IN)).astype("float32"), np.array([4, 1, 2])
    got = exe.run(main, feed={"x": xb, "lens": lb},
                  fetch_list=[step_h, seq_out, masked_fin if mode != "LSTM" else masked_fin[0],
                              bi_out])
    w = [np.array(scope.get(p.name), np.float64) for p in cell.weights()]
    wb = [np.array(scope.get(p.name), np.float64) for p in cell_bw.weights()]
    zeros = [np.zeros((1, B, H))] * 2
    h1 = np.stack([cell_step(mode, xb[b, 0], np.zeros(H), np.zeros(H), *w)[0] for b in range(B)])
    np.testing.assert_allclose(got[0], h1, rtol=1e-5, atol=1e-6)
    want, _ = rnn_reference(xb.transpose(1, 0, 2), zeros, w[:2] + w[2:], mode, H, 1, False)
    np.testing.assert_allclose(got[1], want.transpose(1, 0, 2), rtol=1e-5, atol=1e-6)
    # reversed with lengths: the final state is the reverse direction's over each length
    _, rev = rnn_reference(xb.transpose(1, 0, 2), [np.zeros((2, B, H))] * 2,
                           wb[:2] + w[:2] + wb[2:] + w[2:], mode, H, 1, True, lb)
    np.testing.assert_allclose(got[2], rev[0][1], rtol=1e-5, atol=1e-6)
    want_bi, _ = rnn_reference(xb.transpose(1, 0, 2), [np.zeros((2, B, H))] * 2,
                               w[:2] + wb[:2] + w[2:] + wb[2:], mode, H, 1, True)
    np.testing.assert_allclose(got[3], want_bi.transpose(1, 0, 2), rtol=1e-5, atol=1e-6)


def test_lstm_trains_with_adam_and_loss_falls():
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        x = static.data("x", [None, 6, 2], "float32")
        y = static.data("y", [None, 1], "float32")
        net = paddle.nn.LSTM(2, 8)
        head = paddle.nn.Linear(8, 1)
        out, (h, c) = net(x)
        pred = head(h[0])
        loss = paddle.mean((pred - y) * (pred - y))
        paddle.optimizer.Adam(0.05).minimize(loss)
    exe = static.Executor(static.CPUPlace())
    exe.run(startup)
    rng = np.random.default_rng(0)
    xb = rng.uniform(-1, 1, (16, 6, 2)).astype("float32")
    yb = xb[:, :, 0].sum(1, keepdims=True).astype("float32")       # a running sum
    losses = [float(exe.run(main, feed={"x": xb, "y": yb}, fetch_list=[loss])[0])
              for _ in range(60)]
    assert losses[-1] < 0.2 * losses[0], losses[::10]


def test_paddle_inference_model_with_rnn_op_loads_and_gives_paddle_numbers():
    d = np.load(os.path.join(FIXTURES, "lstm_infer.npz"))
    exe = static.Executor(static.CPUPlace())
    prog, feeds, fetches = static.load_inference_model(os.path.join(FIXTURES, "lstm_infer"), exe)
    assert "rnn" in [op.type for op in prog.global_block().ops]
    (got,) = exe.run(prog, feed={k: d[k] for k in ("x", "h0", "c0")}, fetch_list=fetches)
    np.testing.assert_allclose(got, d["out"], rtol=1e-5, atol=2e-6)


def test_rnn_over_a_custom_cell_is_stepped_through_time():
    class Accum(paddle.nn.RNNCellBase):
        """h = tanh(x W + h') : a user-written cell (no rnn op)."""
        def __init__(self):
            super().__init__()
            self.fc = paddle.nn.Linear(2, 3)
            self.hidden_size = 3

        def forward(self, x, h):
            h = paddle.tanh(self.fc(x) + h)
            return h, h

    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        x = static.data("x", [None, 4, 2], "float32")
        lens = static.data("lens", [None], "int64")
        cell = Accum()
        out, h = paddle.nn.RNN(cell)(x, sequence_length=lens)
    exe = static.Executor(static.CPUPlace())
    exe.run(startup)
    w, b = (np.array(static.global_scope().get(p.name)) for p in (cell.fc.weight, cell.fc.bias))
    xb = np.random.default_rng(1).uniform(-1, 1, (2, 4, 2)).astype("float32")
    lb = np.array([4, 2])
    got_out, got_h = exe.run(main, feed={"x": xb, "lens": lb}, fetch_list=[out, h])
    for r in range(2):
        hr = np.zeros(3)
        for t in range(4):
            new = np.tanh(xb[r, t] @ w + b + hr)
            np.testing.assert_allclose(got_out[r, t], new, rtol=1e-5, atol=1e-6)
            hr = new if t < lb[r] else hr       # frozen past the length (Paddle's rnn())
        np.testing.assert_allclose(got_h[r], hr, rtol=1e-5, atol=1e-6)
