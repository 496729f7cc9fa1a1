"""Greedy seq2seq decoding with while_loop (issue 29 item 7): a GRU encoder (the `rnn` op),
then a loop that embeds the last token, steps a GRUCell, projects to the vocabulary, takes
the argmax and writes it into a tensor array, until every sequence has emitted EOS or the
length limit is reached (a run-time trip count). Checked against the same decoder written
in numpy from Paddle's GRU equations, with the parameters the program initialised."""
import numpy as np
import pytest

import numbaflow as paddle
import numbaflow.static as static

pytestmark = pytest.mark.usefixtures("fresh_graph_state")
V, E, H, B, S = 7, 4, 5, 2, 3
BOS, EOS = 0, 1


def _sigmoid(a):
    return 1.0 / (1.0 + np.exp(-a))


def _gru_step(x, h, w_ih, w_hh, b_ih, b_hh):
    """Paddle's GRU cell: gates r, z, c; the reset gate applied to W_hc h + b_hc."""
    xr, xz, xc = np.split(x @ w_ih.T + b_ih, 3, axis=-1)
    hr, hz, hc = np.split(h @ w_hh.T + b_hh, 3, axis=-1)
    r, z = _sigmoid(xr + hr), _sigmoid(xz + hz)
    c = np.tanh(xc + r * hc)
    return (h - c) * z + c


def _numpy_decode(src, p, max_len):
    emb = p["emb"]
    h = np.zeros((B, H))
    for t in range(S):
        h = _gru_step(emb[src[:, t]], h, *p["enc"])
    tok, out = np.full(B, BOS), []
    while len(out) < max_len and (tok != EOS).any():
        h = _gru_step(emb[tok], h, *p["dec"])
        tok = np.argmax(h @ p["proj_w"] + p["proj_b"], axis=-1)
        out.append(tok)
    return out


@pytest.mark.slow       # ~35 s, mostly compiling the GRU and the loop body
def test_greedy_decode_with_while_loop_matches_numpy():
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        src = static.data("src", [B, S], "int64")
        max_len = static.data("max_len", [1], "int64")
        emb = paddle.nn.Embedding(V, E)
        encoder = paddle.nn.GRU(E, H)
        cell = paddle.nn.GRUCell(E, H)
        proj = paddle.nn.Linear(H, V)
        _, h_enc = encoder(emb(src))
        tokens = paddle.tensor.create_array("int64")
        eos = paddle.full([B], EOS, "int64")

        def go_on(i, tok, h):
            unfinished = paddle.sum(paddle.cast(paddle.not_equal(tok, eos), "int64"))
            return paddle.cast(paddle.cast(i < max_len, "int64") * unfinished, "bool")

        def step(i, tok, h):
            _, h = cell(emb(tok), h)
            tok = paddle.argmax(proj(h), axis=-1)
            paddle.tensor.array_write(tok, i, tokens)
            return [i + 1, tok, h]
        i, _, _ = static.nn.while_loop(
            lambda i, tok, h: paddle.reshape(go_on(i, tok, h), [1]), step,
            [paddle.full([1], 0, "int64"), paddle.full([B], BOS, "int64"),
             paddle.reshape(h_enc, [B, H])])
    exe = static.Executor(paddle.CPUPlace())
    exe.run(startup)
    scope = static.global_scope()

    def cell_params(c):
        return [np.float64(scope.get(q.name)) for q in
                (c.weight_ih, c.weight_hh, c.bias_ih, c.bias_hh)]
    p = {"emb": np.float64(scope.get(emb.weight.name)),
         "enc": cell_params(encoder[0].cell),
         "dec": cell_params(cell), "proj_w": np.float64(scope.get(proj.weight.name)),
         "proj_b": np.float64(scope.get(proj.bias.name))}
    rng = np.random.default_rng(3)
    lengths = set()
    for trial in range(6):
        srcv = rng.integers(2, V, size=(B, S))
        limit = 2 + trial
        want = _numpy_decode(srcv, p, limit)
        got_tokens, got_i = exe.run(main, feed={"src": srcv, "max_len": np.array([limit])},
                                    fetch_list=[tokens, i])
        assert int(got_i[0]) == len(want) == len(got_tokens)
        for g, w in zip(got_tokens, want):
            np.testing.assert_array_equal(g, w)
        lengths.add(len(want))
    assert len(lengths) > 1     # the trip count changes with the fed limit
