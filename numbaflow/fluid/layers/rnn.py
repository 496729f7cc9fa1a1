"""fluid.layers.lstm (Paddle 1.x): a cuDNN-style multi-layer LSTM over time-major input,
built as one `rnn` op (nn/functional_rnn.py).

Paddle 1.x appends a `cudnn_lstm` op over one flat weight parameter in cuDNN's packing;
numbaflow keeps Paddle 2's per-layer parameters (`<name>.weight_ih_l0`, ...), which is how
`paddle.nn.LSTM` checkpoints name them. The numbers are the same LSTM.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ...nn.functional_rnn import rnn, rnn_parameters
from ...param_init import Initializer
from ...param_attr import ParamAttr
from ...tensor._helpers import check_variable as _var

if TYPE_CHECKING:
    from ...graph.program import Variable

__all__ = ["lstm"]


def lstm(input: Variable, init_h: Variable, init_c: Variable, max_len: int,
         hidden_size: int, num_layers: int, dropout_prob: float = 0.0,
         is_bidirec: bool = False, is_test: bool = False, name: str | None = None,
         default_initializer: Initializer | None = None,
         seed: int = -1) -> tuple[Variable, Variable, Variable]:
    """A multi-layer (bidirectional) LSTM over time-major input, without peepholes (gates i,
    f, g, o as `paddle.nn.LSTM`).

    Args:
        input (Variable): (seq_len, batch, input_size).
        init_h (Variable): (num_layers * directions, batch, hidden_size).
        init_c (Variable): same shape as init_h.
        max_len (int): the sequence length (checked against input's when both are known).
        hidden_size (int): units per direction.
        num_layers (int): stacked layers.
        dropout_prob (float): dropout between layers in training.
        is_bidirec (bool): both directions, outputs concatenated.
        is_test (bool): turns the dropout off.
        name (str, optional): the parameters' name prefix.
        default_initializer (Initializer, optional): of every weight and bias (default
            Uniform(-1/sqrt(hidden_size), 1/sqrt(hidden_size))).
        seed (int): accepted for Paddle compatibility.

    Returns:
        tuple: rnn_out (seq_len, batch, directions * hidden_size), last_h, last_c (each
        init_h's shape).

    Example:
        >>> x = static.data('x', [10, None, 8])
        >>> h0 = static.data('h0', [2, None, 16]); c0 = static.data('c0', [2, None, 16])
        >>> out, h, c = fluid.layers.lstm(x, h0, c0, 10, 16, 2)
        >>> out.shape, c.shape
        ((10, -1, 16), (2, -1, 16))
    """
    fn = "fluid.layers.lstm"
    _var(input, fn, "input"), _var(init_h, fn, "init_h"), _var(init_c, fn, "init_c")
    if input.ndim != 3:
        raise ValueError(f"{fn}: input must be (seq_len, batch, input_size); got {input.name} "
                         f"of shape {input.shape}")
    if max_len is not None and input.shape[0] >= 0 and int(max_len) != input.shape[0]:
        raise ValueError(f"{fn}: max_len={max_len} but input {input.name} has "
                         f"{input.shape[0]} time steps (its first dim)")
    direction = "bidirect" if is_bidirec else "forward"
    attr = None if default_initializer is None else ParamAttr(initializer=default_initializer)
    ws = rnn_parameters("LSTM", int(input.shape[2]), hidden_size, num_layers, direction,
                        str(input.dtype), attr, attr, attr, attr, name=name)
    out, (last_h, last_c) = rnn(input, ws, "LSTM", hidden_size, num_layers, direction,
                                time_major=True, dropout=dropout_prob,
                                initial_states=(init_h, init_c), training=not is_test)
    return out, last_h, last_c


# Paddle 1.x's LoD sequence layers (issue 29: padded batches are the supported form)
_LOD_RNN = {
    "dynamic_lstm": ("peephole connections W_ic, W_fc, W_oc by default, gates over a "
                     "pre-projected input of width 4 * size", "paddle.nn.LSTM"),
    "dynamic_lstmp": ("peepholes and a recurrent projection",
                      "paddle.nn.LSTM (proj_size is not supported either)"),
    "dynamic_gru": ("the reset gate applied to h before W_hc, not to W_hc h + b_hc, over "
                    "a pre-projected input of width 3 * size", "paddle.nn.GRU"),
}


def not_provided(name: str) -> str | None:
    """Why fluid.layers.<name> is missing and what to use instead, for the LoD sequence
    layers (None for any other name).

    Example:
        >>> 'LoDTensor' in fluid.layers.rnn.not_provided('dynamic_gru')
        True
    """
    if name not in _LOD_RNN:
        return None
    cell, instead = _LOD_RNN[name]
    return (f"fluid.layers.{name} is not provided: it runs over a LoDTensor (variable-length "
            f"sequences packed end to end, with LoD), which numbaflow does not have, and its "
            f"cell differs from paddle.nn's ({cell}). Pad the sequences to one length and "
            f"use {instead} with sequence_length=")
