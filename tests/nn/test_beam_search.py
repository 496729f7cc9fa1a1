"""paddle.nn.BeamSearchDecoder + paddle.nn.dynamic_decode (issue 29 item 7): a GRUCell and an
LSTMCell decoder (Embedding -> cell -> Linear) decode from given initial states, checked
against a beam search written in numpy from the maths and against real Paddle 2.6.2's
numbers from the same weights (tests/fixtures/make_paddle_decode.py)."""
import numpy as np
import pytest

import numbaflow as paddle
import numbaflow.static as static
from locations import TESTS

pytestmark = pytest.mark.usefixtures("fresh_graph_state")
FIXTURES = TESTS / "fixtures" / "paddle_decode"
START, END, K, MAX_STEP = 0, 1, 3, 6


def _sigmoid(a):
    return 1.0 / (1.0 + np.exp(-a))


def _cell_step(kind, p, x, state):
    gates = x @ p["w_ih"].T + p["b_ih"]
    if kind == "GRUCell":          # Paddle's GRU: the reset gate on W_hc h + b_hc
        xr, xz, xc = np.split(gates, 3, axis=-1)
        hr, hz, hc = np.split(state @ p["w_hh"].T + p["b_hh"], 3, axis=-1)
        r, z = _sigmoid(xr + hr), _sigmoid(xz + hz)
        c = np.tanh(xc + r * hc)
        h = (state - c) * z + c
        return h, h
    h, c = state
    i, f, g, o = np.split(gates + h @ p["w_hh"].T + p["b_hh"], 4, axis=-1)
    c = _sigmoid(f) * c + _sigmoid(i) * np.tanh(g)
    h = _sigmoid(o) * np.tanh(c)
    return h, (h, c)


def _numpy_beam_search(kind, p, init):
    """Beam search from the maths: a beam's score is the sum of its tokens' log-softmax;
    a finished beam only extends with END at no cost; the K best (beam, token) pairs of
    each batch entry survive; the sequences are read back through the parent beams."""
    batch, vocab = init[0].shape[0], p["proj_b"].shape[0]
    state = tuple(np.repeat(s, K, axis=0) for s in init)     # [batch * K, H]
    state = state if kind == "LSTMCell" else state[0]
    scores = np.tile([0.0] + [-1e9] * (K - 1), (batch, 1))
    tokens = np.full((batch, K), START)
    finished = np.zeros((batch, K), bool)
    lengths = np.zeros((batch, K), int)
    ids, parents = [], []
    for _ in range(MAX_STEP + 1):
        out, state = _cell_step(kind, p, p["emb"][tokens.reshape(-1)], state)
        logits = (out @ p["proj_w"] + p["proj_b"]).reshape(batch, K, vocab)
        logp = logits - logits.max(-1, keepdims=True)
        logp = logp - np.log(np.exp(logp).sum(-1, keepdims=True))
        logp[finished] = np.where(np.arange(vocab) == END, 0.0, -1e9)
        total = (logp + scores[:, :, None]).reshape(batch, K * vocab)
        best = np.argsort(-total, axis=1, kind="stable")[:, :K]
        beam, tokens = best // vocab, best % vocab
        scores = np.take_along_axis(total, best, 1)
        flat = (np.arange(batch)[:, None] * K + beam).reshape(-1)
        state = tuple(s[flat] for s in state) if kind == "LSTMCell" else state[flat]
        was = np.take_along_axis(finished, beam, 1)
        lengths = np.take_along_axis(lengths, beam, 1) + ~was
        finished = was | (tokens == END)
        ids.append(tokens)
        parents.append(beam)
        if finished.all():
            break
    out, parent = [], np.tile(np.arange(K), (batch, 1))
    for t in reversed(range(len(ids))):
        out.append(np.take_along_axis(ids[t], parent, 1))
        parent = np.take_along_axis(parents[t], parent, 1)
    return np.stack(out[::-1], axis=1), lengths          # [batch, time, K]


def _decode(kind, data):
    """Our decode of the fixture's network: (ids [batch, MAX_STEP + 1, K], lengths)."""
    main, startup = static.Program(), static.Program()
    vocab, emb_dim = data["emb"].shape
    hidden = data["h0"].shape[1]
    with static.program_guard(main, startup):
        emb = paddle.nn.Embedding(vocab, emb_dim)
        cell = getattr(paddle.nn, kind)(emb_dim, hidden)
        proj = paddle.nn.Linear(hidden, vocab)
        h0 = static.data("h0", list(data["h0"].shape), "float32")
        init = h0
        if kind == "LSTMCell":
            init = (h0, static.data("c0", list(data["c0"].shape), "float32"))
        decoder = paddle.nn.BeamSearchDecoder(cell, START, END, K, emb, proj)
        ids, _, lengths = paddle.nn.dynamic_decode(decoder, init, max_step_num=MAX_STEP,
                                                   return_length=True)
    exe = static.Executor(paddle.CPUPlace())
    exe.run(startup)
    scope = static.global_scope()
    for key, param in (("emb", emb.weight), ("w_ih", cell.weight_ih),
                       ("w_hh", cell.weight_hh), ("b_ih", cell.bias_ih),
                       ("b_hh", cell.bias_hh), ("proj_w", proj.weight),
                       ("proj_b", proj.bias)):
        scope.find_var(param.name).get_tensor().set(data[key], paddle.CPUPlace())
    feed = {k: data[k] for k in ("h0", "c0") if k in data}
    return exe.run(main, feed=feed, fetch_list=[ids, lengths])


@pytest.mark.slow       # compiling the decode loop and its two finalize loops
@pytest.mark.parametrize("kind", ["GRUCell", "LSTMCell"])
def test_beam_search_matches_numpy_and_paddle(kind):
    data = dict(np.load(FIXTURES / f"{kind}.npz"))
    p = {k: np.float64(v) for k, v in data.items()}
    init = [p["h0"]] + ([p["c0"]] if kind == "LSTMCell" else [])
    want_ids, want_lengths = _numpy_beam_search(kind, p, init)
    # the reference agrees with Paddle (which ends its outputs when every beam finished)
    np.testing.assert_array_equal(want_ids, data["ids"])
    np.testing.assert_array_equal(want_lengths, data["lengths"])
    ids, lengths = _decode(kind, data)
    steps = want_ids.shape[1]
    assert ids.shape == (want_ids.shape[0], MAX_STEP + 1, K)
    np.testing.assert_array_equal(ids[:, :steps], want_ids)
    assert (ids[:, steps:] == END).all()        # static-shape padding after the end
    np.testing.assert_array_equal(lengths, want_lengths)


def test_dynamic_decode_needs_max_step_num():
    cell = paddle.nn.GRUCell(4, 4)
    decoder = paddle.nn.BeamSearchDecoder(cell, 0, 1, 2, paddle.nn.Embedding(6, 4))
    with pytest.raises(ValueError, match="max_step_num"):
        paddle.nn.dynamic_decode(decoder, paddle.zeros([2, 4]))


class _CountDecoder(paddle.nn.Decoder):
    """A counter per entry that finishes when it reaches the entry's limit: the
    dynamic_decode bookkeeping for decoders that do not track their own finished flags."""

    def initialize(self, limits):
        self.limits = limits
        zeros = paddle.reshape(limits * 0.0, [-1, 1])
        return zeros, zeros, paddle.cast(paddle.reshape(zeros, [-1]), "bool")

    def step(self, time, inputs, states, **kwargs):
        new = states + 1.0
        finished = paddle.reshape(new, [-1]) >= self.limits
        return states * 10.0, new, inputs, finished


@pytest.mark.slow       # compiling the loop and the stacking loop
def test_dynamic_decode_imputes_finished_states_and_pads_outputs():
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        limits = static.data("limits", [2], "float32")
        out, states, lengths = paddle.nn.dynamic_decode(
            _CountDecoder(), limits, max_step_num=5, output_time_major=True,
            impute_finished=True, return_length=True)
    exe = static.Executor(paddle.CPUPlace())
    exe.run(startup)
    got_out, got_states, got_lengths = exe.run(
        main, feed={"limits": np.array([2.0, 4.0], "float32")},
        fetch_list=[out, states, lengths])
    # entry 0 finishes at step 1 and keeps its state 2 (imputed), entry 1 at step 3;
    # the outputs have max_step_num + 1 steps, zeros after the last step taken
    want = np.zeros((6, 2, 1))
    want[:4, :, 0] = [[0, 0], [10, 10], [20, 20], [20, 30]]
    np.testing.assert_array_equal(got_out, want)
    np.testing.assert_array_equal(got_states[:, 0], [2.0, 4.0])
    np.testing.assert_array_equal(got_lengths, [2, 4])
