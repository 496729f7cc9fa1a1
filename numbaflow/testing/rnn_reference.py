"""A numpy reference of Paddle's multi-layer recurrent networks, written from the cell
equations in Paddle's `LSTMCell` / `GRUCell` / `SimpleRNNCell` docs, one time step and
one sequence at a time (no shared code with the `rnn` kernels). Used by the `rnn` op's
test rows and tests/kernels/test_rnn.py.

>>> import numpy as np
>>> ws = rnn_weights(np.random.default_rng(0), "GRU", 3, 2, 1, 1)
>>> out, states = rnn_reference(np.ones((4, 1, 3)), [np.zeros((1, 1, 2))], ws, "GRU", 2, 1, False)
>>> out.shape, states[0].shape
((4, 1, 2), (1, 1, 2))
"""
import numpy as np

GATES = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}


def _sig(a):
    return 1.0 / (1.0 + np.exp(-a))


def cell_step(mode, x, h, c, w_ih, w_hh, b_ih, b_hh):
    """One step of one sequence: x (In,), h, c (H,) -> (h, c)."""
    if mode == "LSTM":
        i, f, g, o = np.split(w_ih @ x + b_ih + w_hh @ h + b_hh, 4)
        c = _sig(f) * c + _sig(i) * np.tanh(g)
        return _sig(o) * np.tanh(c), c
    if mode == "GRU":
        xr, xz, xc = np.split(w_ih @ x + b_ih, 3)
        hr, hz, hc = np.split(w_hh @ h + b_hh, 3)
        r, z = _sig(xr + hr), _sig(xz + hz)
        cand = np.tanh(xc + r * hc)
        return z * h + (1.0 - z) * cand, c
    a = w_ih @ x + b_ih + w_hh @ h + b_hh
    return (np.tanh(a) if mode == "RNN_TANH" else np.maximum(a, 0.0)), c


def rnn_weights(rng, mode, input_size, hidden, num_layers, directions, scale=0.5):
    """Paddle's flattened WeightList: every (W_ih, W_hh) per layer and direction, then every
    (b_ih, b_hh)."""
    g = GATES[mode] * hidden
    weights, biases = [], []
    for l in range(num_layers):
        for _ in range(directions):
            n_in = input_size if l == 0 else directions * hidden
            weights += [rng.uniform(-scale, scale, (g, n_in)),
                        rng.uniform(-scale, scale, (g, hidden))]
            biases += [rng.uniform(-scale, scale, g), rng.uniform(-scale, scale, g)]
    return weights + biases


def rnn_reference(x, pre_states, weights, mode, hidden, num_layers, bidirec, lengths=None):
    """Time-major x (T, B, In) -> (out (T, B, D*H), [final h (L*D, B, H)(, final c)]).
    Past a sequence's length its state is frozen and its output zero; the reverse
    direction starts at the sequence's last valid step."""
    x = np.asarray(x, np.float64)
    T, B, _ = x.shape
    D = 2 if bidirec else 1
    lengths = np.full(B, T) if lengths is None else np.asarray(lengths)
    n = 2 * num_layers * D
    h_fin = np.zeros((num_layers * D, B, hidden))
    c_fin = np.zeros_like(h_fin)
    layer_in = x
    for l in range(num_layers):
        out = np.zeros((T, B, D * hidden))
        for d in range(D):
            k = l * D + d
            w_ih, w_hh = weights[2 * k], weights[2 * k + 1]
            b_ih, b_hh = weights[n + 2 * k], weights[n + 2 * k + 1]
            for b in range(B):
                h = np.array(pre_states[0][k, b], np.float64)
                c = np.array(pre_states[1][k, b], np.float64) if mode == "LSTM" else h * 0
                steps = range(lengths[b])
                for t in (reversed(steps) if d == 1 else steps):
                    h, c = cell_step(mode, layer_in[t, b], h, c, w_ih, w_hh, b_ih, b_hh)
                    out[t, b, d * hidden:(d + 1) * hidden] = h
                h_fin[k, b], c_fin[k, b] = h, c
        layer_in = out
    return layer_in, ([h_fin, c_fin] if mode == "LSTM" else [h_fin])
