"""Recurrent networks as one `rnn` op (Paddle's cuDNN-style op): the parameters in Paddle's
layout and names, and the function that appends the op.

`rnn_parameters` creates, per layer and direction, `weight_ih_l{k}`, `weight_hh_l{k}`,
`bias_ih_l{k}`, `bias_hh_l{k}` (`_reverse` appended for the backward direction) with
Paddle's shapes ([gates*hidden, in], [gates*hidden, hidden], [gates*hidden]) and its
initialiser, Uniform(-1/sqrt(hidden), 1/sqrt(hidden)); `rnn` appends the op over them.
`paddle.nn.LSTM` / `GRU` / `SimpleRNN` and `fluid.layers.lstm` are thin on top.

>>> from numbaflow.nn.functional_rnn import rnn, rnn_parameters
>>> x = static.data('x', [None, 5, 3])
>>> ws = rnn_parameters('LSTM', 3, 4, name='enc')
>>> [w.name for w in ws]
['enc.weight_ih_l0', 'enc.weight_hh_l0', 'enc.bias_ih_l0', 'enc.bias_hh_l0']
>>> out, (h, c) = rnn(x, ws, 'LSTM', 4)
>>> out.shape, h.shape
((-1, 5, 4), (1, -1, 4))
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

from .. import tensor as M
from ..graph.program import Variable
from ..kernels.nn.rnn import GATES
from ..layer_helper import LayerHelper
from ..param_attr import ParamAttr
from ..tensor._helpers import check_variable as _var
from ..param_init import Uniform

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["rnn", "rnn_parameters", "DIRECTIONS"]

DIRECTIONS = {"forward": 1, "bidirect": 2, "bidirectional": 2}


def _check(mode, hidden_size, num_layers, direction, fn):
    if mode not in GATES:
        raise ValueError(f"{fn}: mode must be one of {sorted(GATES)}; got {mode!r}")
    if direction not in DIRECTIONS:
        raise ValueError(f"{fn}: direction must be 'forward' or 'bidirect' (or "
                         f"'bidirectional'); got {direction!r}")
    for arg, v in (("hidden_size", hidden_size), ("num_layers", num_layers)):
        if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
            raise ValueError(f"{fn}: {arg} must be a positive int; got {v!r}")
    return DIRECTIONS[direction]


def rnn_parameters(mode: str, input_size: int, hidden_size: int, num_layers: int = 1,
                   direction: str = "forward", dtype: str = "float32",
                   weight_ih_attr: ParamAttr | None = None,
                   weight_hh_attr: ParamAttr | None = None,
                   bias_ih_attr: ParamAttr | None = None,
                   bias_hh_attr: ParamAttr | None = None,
                   name: str | None = None) -> list:
    """Create the parameters of a `num_layers` (bi)directional `mode` network, in Paddle's
    order: per layer, per direction, weight_ih, weight_hh, bias_ih, bias_hh.

    Args:
        mode (str): 'LSTM', 'GRU', 'RNN_TANH' or 'RNN_RELU'.
        input_size (int): features of the first layer's input.
        hidden_size (int): units per direction.
        num_layers (int): stacked layers.
        direction (str): 'forward' or 'bidirect'.
        dtype (str): the parameters' dtype.
        weight_ih_attr, weight_hh_attr, bias_ih_attr, bias_hh_attr (ParamAttr, optional):
            initializer / learning rate / regularizer / trainable of each kind (their
            `name` is replaced: each parameter gets its Paddle name).
        name (str, optional): the names' prefix (default a unique 'rnn_N').

    Returns:
        list of Parameter: 4 * num_layers * directions parameters.

    Example:
        >>> from numbaflow.nn.functional_rnn import rnn_parameters
        >>> ws = rnn_parameters('GRU', 3, 2, direction='bidirect', name='g')
        >>> [(w.name, w.shape) for w in ws[4:6]]
        [('g.weight_ih_l0_reverse', (6, 3)), ('g.weight_hh_l0_reverse', (6, 2))]
    """
    fn = "rnn_parameters"
    dirs = _check(mode, hidden_size, num_layers, direction, fn)
    helper = LayerHelper(mode.lower(), name)
    prefix = name or helper.name
    std = 1.0 / math.sqrt(hidden_size)
    g = GATES[mode] * hidden_size
    attrs = [a if isinstance(a, ParamAttr) else ParamAttr(initializer=a)
             if a is not None and hasattr(a, "_init_op") else ParamAttr()
             for a in (weight_ih_attr, weight_hh_attr, bias_ih_attr, bias_hh_attr)]
    params = []
    for layer in range(num_layers):
        n_in = input_size if layer == 0 else dirs * hidden_size
        for d in range(dirs):
            suffix = f"l{layer}" + ("_reverse" if d else "")
            for kind, shape, attr in zip(("weight_ih", "weight_hh", "bias_ih", "bias_hh"),
                                         ([g, n_in], [g, hidden_size], [g], [g]), attrs):
                named = ParamAttr(name=f"{prefix}.{kind}_{suffix}",
                                  initializer=attr.initializer or Uniform(-std, std),
                                  learning_rate=attr.learning_rate,
                                  regularizer=attr.regularizer, trainable=attr.trainable)
                params.append(helper.create_parameter(named, shape, dtype,
                                                      is_bias=kind.startswith("bias")))
    return params


def _zero_states(x, count, n_states, hidden_size, batch_axis):
    """Zero initial states (count, batch, hidden) whose batch dim follows x's at run time."""
    pick = [slice(0, 1)] * 3
    pick[batch_axis] = slice(None)
    batch = M.transpose(x[tuple(pick)], [0, 1, 2] if batch_axis == 1 else [1, 0, 2])
    zero_batch = M.zeros_like(batch)                       # (1, B, 1)
    return [M.zeros([count, 1, hidden_size], x.dtype) + zero_batch for _ in range(n_states)]


def rnn(x: Variable, weights: Sequence[Variable], mode: str, hidden_size: int,
        num_layers: int = 1, direction: str = "forward", time_major: bool = False,
        dropout: float = 0.0, initial_states=None, sequence_length: Variable | None = None,
        training: bool = True, name: str | None = None):
    """A (multi-layer, bidirectional) recurrent network as one `rnn` op.

    Args:
        x (Variable): (batch, time, features), or (time, batch, features) if `time_major`.
        weights (list of Variable): per layer and direction weight_ih, weight_hh, bias_ih,
            bias_hh (the order `rnn_parameters` returns).
        mode (str): 'LSTM', 'GRU', 'RNN_TANH' or 'RNN_RELU'.
        hidden_size (int): units per direction.
        num_layers (int): stacked layers.
        direction (str): 'forward' or 'bidirect'.
        time_major (bool): whether x's first dim is time.
        dropout (float): dropout between layers (training only).
        initial_states (Variable or (h, c), optional): each (num_layers * directions, batch,
            hidden_size); zeros when None.
        sequence_length (Variable, optional): int (batch,) lengths: past its length a
            sequence's state is frozen and its output is zero.
        training (bool): False turns the dropout off (the op's `is_test`).
        name (str, optional): a prefix for the outputs' names.

    Returns:
        (Variable, Variable or (Variable, Variable)): the outputs (x's layout, last dim
        directions * hidden_size) and the final states (h, c for LSTM, else h), each
        (num_layers * directions, batch, hidden_size).

    Example:
        >>> from numbaflow.nn.functional_rnn import rnn, rnn_parameters
        >>> x = static.data('x', [None, 6, 3])
        >>> ws = rnn_parameters('GRU', 3, 4, num_layers=2, direction='bidirect')
        >>> out, h = rnn(x, ws, 'GRU', 4, num_layers=2, direction='bidirect')
        >>> out.shape, h.shape
        ((-1, 6, 8), (4, -1, 4))
    """
    fn = "rnn"
    dirs = _check(mode, hidden_size, num_layers, direction, fn)
    _var(x, fn)
    if x.ndim != 3:
        raise ValueError(f"{fn}: x must be 3-D ({'time, batch' if time_major else 'batch, time'}"
                         f", features); got {x.name} of shape {x.shape}")
    weights = list(weights)
    if len(weights) != 4 * num_layers * dirs:
        raise ValueError(f"{fn}: expected 4 * num_layers * directions = "
                         f"{4 * num_layers * dirs} weights (weight_ih, weight_hh, bias_ih, "
                         f"bias_hh per layer and direction), got {len(weights)}")
    if not 0.0 <= float(dropout) < 1.0:
        raise ValueError(f"{fn}: dropout must be in [0, 1); got {dropout!r}")
    n_states = 2 if mode == "LSTM" else 1
    if initial_states is None:
        states = _zero_states(x, num_layers * dirs, n_states, hidden_size,
                              1 if time_major else 0)
    else:
        states = [initial_states] if isinstance(initial_states, Variable) else \
            list(initial_states)
        if len(states) != n_states:
            raise ValueError(f"{fn}: {mode} takes {n_states} initial state(s) "
                             f"({'(h, c)' if n_states == 2 else 'h'}); got {len(states)}")
    seq = x if time_major else M.transpose(x, [1, 0, 2])
    helper = LayerHelper("rnn", name)
    out = helper.create_tmp(x.dtype)
    finals = [helper.create_tmp(x.dtype) for _ in range(n_states)]
    reserve = helper.create_tmp(x.dtype, stop_gradient=True)
    flat = [w for k in range(0, len(weights), 4) for w in weights[k:k + 2]] + \
        [b for k in range(0, len(weights), 4) for b in weights[k + 2:k + 4]]
    inputs = {"Input": seq, "PreState": states, "WeightList": flat}
    if sequence_length is not None:
        inputs["SequenceLength"] = _var(sequence_length, fn, "sequence_length")
    helper.append_op("rnn", inputs, {"Out": out, "State": finals, "Reserve": reserve},
                     {"mode": mode, "hidden_size": hidden_size,
                      "input_size": int(x.shape[2]), "num_layers": num_layers,
                      "is_bidirec": dirs == 2, "dropout_prob": float(dropout),
                      "is_test": not training})
    out = out if time_major else M.transpose(out, [1, 0, 2])
    return out, (tuple(finals) if n_states == 2 else finals[0])
