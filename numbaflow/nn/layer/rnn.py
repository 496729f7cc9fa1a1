"""Recurrent layers as Paddle 2.6 spells them, in static mode: `SimpleRNNCell`, `LSTMCell`,
`GRUCell`, `RNN` / `BiRNN` over a cell, and the multi-layer `SimpleRNN`, `LSTM`, `GRU`.

The math is the `rnn` op's (kernels/nn/rnn.py) through nn/functional_rnn.py: a cell is that op
over one time step; `LSTM` / `GRU` / `SimpleRNN`, and `RNN` / `BiRNN` over built-in cells
without `sequence_length`, are one op over the whole sequence. `RNN` over a user-defined
cell, reversed, or with `sequence_length` steps the cell once per time step (unrolled at
build time, as Paddle's `rnn()`: past a length the state is kept and the step's output left
as the cell gave it). Parameters and `state_dict()` keys are Paddle's: a cell holds
`weight_ih`, `weight_hh`, `bias_ih`, `bias_hh` (`lstm_cell_N.w_0`, ...); an `LSTM` holds
its `RNN` / `BiRNN` layers (`0.cell.weight_ih`, `0.cell_fw.weight_ih`, ...) and names the
same parameters `weight_ih_l0`, ..., `weight_ih_l0_reverse` as Paddle does.
"""
from __future__ import annotations

import math
from typing import Any

from ... import tensor as M
from ..functional_rnn import rnn as rnn_op
from ...param_init import Uniform
from ...tensor.generator import shared_doc as _shared_doc
from .container import LayerList
from .layers import Layer

__all__ = ["RNNCellBase", "SimpleRNNCell", "LSTMCell", "GRUCell", "RNN", "BiRNN",
           "SimpleRNN", "LSTM", "GRU"]


class RNNCellBase(Layer):
    """The base of the recurrent cells: `forward(inputs, states=None)` -> (outputs,
    new_states) for one time step. Subclass it (with `state_shape`) for a custom cell that
    `RNN` steps through time.

    Args:
        name_scope (str, optional): the stem of the parameters' names (Layer's).
        dtype (str): the parameters' dtype (Layer's).

    Example:
        >>> cell = paddle.nn.GRUCell(3, 4)
        >>> h, _ = cell(static.data('x', [None, 3]))
        >>> h.shape
        (-1, 4)
    """

    mode = None          # the rnn op's mode for the built-in cells

    def _params(self, input_size, hidden_size, gates, attrs):
        std = 1.0 / math.sqrt(hidden_size)
        self.input_size, self.hidden_size = input_size, hidden_size
        shapes = ([gates * hidden_size, input_size], [gates * hidden_size, hidden_size],
                  [gates * hidden_size], [gates * hidden_size])
        for name, shape, attr in zip(("weight_ih", "weight_hh", "bias_ih", "bias_hh"),
                                     shapes, attrs):
            setattr(self, name, self.create_parameter(shape, attr, is_bias=name[0] == "b",
                                                      default_initializer=Uniform(-std, std)))

    def weights(self):
        """[weight_ih, weight_hh, bias_ih, bias_hh] (what the rnn op reads).

        Returns:
            list of Parameter.
        """
        return [self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh]

    def forward(self, inputs: Any, states: Any = None) -> Any:
        """One step: inputs (batch, input_size) and states (each (batch, hidden_size); zeros
        when None) -> (h, new states).

        Args:
            inputs (Variable): this step's input.
            states (Variable or (h, c), optional): the previous state(s).

        Returns:
            tuple: (h, new states: h, or (h, c) for LSTMCell).
        """
        if self.mode is None:
            raise NotImplementedError(f"{type(self).__name__}: a custom cell defines forward")
        x = M.unsqueeze(inputs, 0)
        if states is not None:
            states = [M.unsqueeze(s, 0) for s in
                      (states if isinstance(states, (tuple, list)) else [states])]
        out, fin = rnn_op(x, self.weights(), self.mode, self.hidden_size, time_major=True,
                          initial_states=states)
        fin = tuple(M.squeeze(s, 0) for s in (fin if isinstance(fin, tuple) else [fin]))
        h = M.squeeze(out, 0)
        return h, (fin if len(fin) == 2 else fin[0])

    @property
    def state_shape(self):
        """The state's shape without the batch: (hidden_size,), ((h,), (c,)) for LSTMCell."""
        return (self.hidden_size,)

    def extra_repr(self) -> str:
        """input_size, hidden_size.

        Returns:
            str: e.g. '3, 4'.
        """
        return f"{self.input_size}, {self.hidden_size}"


class SimpleRNNCell(RNNCellBase):
    """h = act(W_ih x + b_ih + W_hh h' + b_hh), act tanh or relu; parameters Uniform(-1/sqrt(H),
    1/sqrt(H)) as in Paddle.

    Args:
        input_size (int), hidden_size (int), activation (str): 'tanh' or 'relu'.
        weight_ih_attr, weight_hh_attr, bias_ih_attr, bias_hh_attr (ParamAttr, optional).
        name (str, optional): accepted for Paddle compatibility.

    Example:
        >>> cell = paddle.nn.SimpleRNNCell(3, 4, activation='relu')
        >>> cell.weight_hh.shape
        (4, 4)
    """

    def __init__(self, input_size: int, hidden_size: int, activation: str = "tanh",
                 weight_ih_attr: Any = None, weight_hh_attr: Any = None,
                 bias_ih_attr: Any = None, bias_hh_attr: Any = None, name: str | None = None):
        super().__init__()
        if activation not in ("tanh", "relu"):
            raise ValueError(f"SimpleRNNCell: activation must be 'tanh' or 'relu'; got "
                             f"{activation!r}")
        self.activation, self.mode = activation, "RNN_" + activation.upper()
        self._params(input_size, hidden_size, 1,
                     (weight_ih_attr, weight_hh_attr, bias_ih_attr, bias_hh_attr))


class LSTMCell(RNNCellBase):
    """Paddle's LSTM step, gates i, f, g, o: c = f*c' + i*g, h = o*tanh(c).

    Args:
        input_size (int), hidden_size (int).
        weight_ih_attr, weight_hh_attr, bias_ih_attr, bias_hh_attr (ParamAttr, optional).
        name (str, optional): accepted for Paddle compatibility.

    Example:
        >>> cell = paddle.nn.LSTMCell(3, 4)
        >>> h, (h2, c) = cell(static.data('x', [None, 3]))
        >>> cell.weight_ih.shape, c.shape
        ((16, 3), (-1, 4))
    """
    mode = "LSTM"

    def __init__(self, input_size: int, hidden_size: int, weight_ih_attr: Any = None,
                 weight_hh_attr: Any = None, bias_ih_attr: Any = None,
                 bias_hh_attr: Any = None, name: str | None = None):
        super().__init__()
        self._params(input_size, hidden_size, 4,
                     (weight_ih_attr, weight_hh_attr, bias_ih_attr, bias_hh_attr))

    @property
    def state_shape(self):
        """((hidden_size,), (hidden_size,)): h and c."""
        return ((self.hidden_size,), (self.hidden_size,))


class GRUCell(RNNCellBase):
    """Paddle's GRU step, gates r, z, c: c = tanh(x_c + r*(W_hc h' + b_hc)), h = (h' - c)*z + c.

    Args:
        input_size (int), hidden_size (int).
        weight_ih_attr, weight_hh_attr, bias_ih_attr, bias_hh_attr (ParamAttr, optional).
        name (str, optional): accepted for Paddle compatibility.

    Example:
        >>> paddle.nn.GRUCell(3, 4).bias_hh.shape
        (12,)
    """
    mode = "GRU"

    def __init__(self, input_size: int, hidden_size: int, weight_ih_attr: Any = None,
                 weight_hh_attr: Any = None, bias_ih_attr: Any = None,
                 bias_hh_attr: Any = None, name: str | None = None):
        super().__init__()
        self._params(input_size, hidden_size, 3,
                     (weight_ih_attr, weight_hh_attr, bias_ih_attr, bias_hh_attr))


def _as_list(states):
    return list(states) if isinstance(states, (tuple, list)) else [states]


def _unrolled(cell, x, states, lengths, reverse):
    """Step `cell` over time-major x (T known), Paddle's rnn(): past a sequence's length its
    states are kept (the step's outputs are left as the cell gave them)."""
    steps = int(x.shape[0])
    if steps < 0:
        raise ValueError(f"RNN over {type(cell).__name__}: the number of time steps must be "
                         f"known to step a cell (input {x.name} has shape {x.shape})")
    outs = [None] * steps
    for t in (range(steps - 1, -1, -1) if reverse else range(steps)):
        out, new = cell(x[t], states)
        if lengths is not None and states is not None:
            keep = M.cast(M.greater_than(lengths, M.full([1], t, lengths.dtype)), x.dtype)
            keep = M.unsqueeze(keep, 1)
            new = [n * keep + s * (1.0 - keep) for n, s in zip(_as_list(new), _as_list(states))]
            new = tuple(new) if len(new) > 1 else new[0]
        states, outs[t] = new, out
    return M.stack(outs, 0), states


def _zero_like_states(cell, x):
    """The cell's zero states for a time-major x."""
    one = M.zeros_like(M.transpose(x[0:1, :, 0:1], [1, 0, 2]))[:, 0]        # (B, 1)
    shape = cell.state_shape
    shapes = shape if isinstance(shape[0], (tuple, list)) else (shape,)
    zs = tuple(M.zeros([1, int(s[0])], x.dtype) + one for s in shapes)
    return zs if len(zs) > 1 else zs[0]


class RNN(Layer):
    """A cell stepped through time: (inputs, initial_states, sequence_length) -> (outputs,
    final_states). A built-in cell without sequence_length or is_reverse is one rnn op.

    Args:
        cell (RNNCellBase): the step.
        is_reverse (bool): run from the last step to the first.
        time_major (bool): inputs are (time, batch, ...).

    Example:
        >>> rnn = paddle.nn.RNN(paddle.nn.LSTMCell(3, 4))
        >>> out, (h, c) = rnn(static.data('x', [None, 5, 3]))
        >>> out.shape, h.shape
        ((-1, 5, 4), (-1, 4))
    """

    def __init__(self, cell: Layer, is_reverse: bool = False, time_major: bool = False):
        super().__init__()
        self.cell, self.is_reverse, self.time_major = cell, is_reverse, time_major

    def forward(self, inputs, initial_states=None, sequence_length=None, **kwargs):
        """Run the cell over the sequence.

        Args:
            inputs (Variable): (batch, time, features) or time-major.
            initial_states (optional): the cell's states at the start (zeros when None).
            sequence_length (Variable, optional): int (batch,) lengths.

        Returns:
            tuple: (outputs in inputs' layout, final states).
        """
        return _run_cell(self.cell, inputs, initial_states, sequence_length,
                         self.is_reverse, self.time_major)


def _run_cell(cell, inputs, initial_states, lengths, reverse, time_major):
    if cell.mode is not None and lengths is None and not reverse:
        states = None if initial_states is None else \
            [M.unsqueeze(s, 0) for s in _as_list(initial_states)]
        out, fin = rnn_op(inputs, cell.weights(), cell.mode, cell.hidden_size,
                          time_major=time_major, initial_states=states)
        fin = tuple(M.squeeze(s, 0) for s in _as_list(fin))
        return out, (fin if len(fin) > 1 else fin[0])
    x = inputs if time_major else M.transpose(inputs, [1, 0, 2])
    states = initial_states if initial_states is not None else _zero_like_states(cell, x)
    out, fin = _unrolled(cell, x, states, lengths, reverse)
    return (out if time_major else M.transpose(out, [1, 0, 2])), fin


class BiRNN(Layer):
    """Two cells over the sequence, one forward and one reversed; outputs concatenated on
    the last axis, final states (states_fw, states_bw).

    Args:
        cell_fw (RNNCellBase), cell_bw (RNNCellBase): the two steps.
        time_major (bool): inputs are (time, batch, ...).

    Example:
        >>> bi = paddle.nn.BiRNN(paddle.nn.GRUCell(3, 4), paddle.nn.GRUCell(3, 4))
        >>> out, (h_fw, h_bw) = bi(static.data('x', [None, 5, 3]))
        >>> out.shape
        (-1, 5, 8)
    """

    def __init__(self, cell_fw: Layer, cell_bw: Layer, time_major: bool = False):
        super().__init__()
        self.cell_fw, self.cell_bw, self.time_major = cell_fw, cell_bw, time_major

    def forward(self, inputs, initial_states=None, sequence_length=None, **kwargs):
        """Run both directions.

        Args:
            inputs (Variable): (batch, time, features) or time-major.
            initial_states (tuple, optional): (states_fw, states_bw).
            sequence_length (Variable, optional): int (batch,) lengths.

        Returns:
            tuple: (outputs, (final states fw, final states bw)).
        """
        init = (None, None) if initial_states is None else tuple(initial_states)
        fw, bw = self.cell_fw, self.cell_bw
        if fw.mode is not None and fw.mode == bw.mode and sequence_length is None:
            # one bidirectional rnn op (without lengths it is exactly the two loops)
            states = None
            if init[0] is not None:
                states = [M.stack([a, b], 0) for a, b in zip(_as_list(init[0]),
                                                             _as_list(init[1]))]
            out, fin = rnn_op(inputs, fw.weights() + bw.weights(), fw.mode, fw.hidden_size,
                              direction="bidirect", time_major=self.time_major,
                              initial_states=states)
            fin = _as_list(fin)
            st_fw = tuple(s[0] for s in fin)
            st_bw = tuple(s[1] for s in fin)
            if len(fin) == 1:
                st_fw, st_bw = st_fw[0], st_bw[0]
            return out, (st_fw, st_bw)
        out_fw, st_fw = _run_cell(fw, inputs, init[0], sequence_length, False, self.time_major)
        out_bw, st_bw = _run_cell(bw, inputs, init[1], sequence_length, True, self.time_major)
        return M.concat([out_fw, out_bw], -1), (st_fw, st_bw)


class _RNNBase(LayerList):
    """num_layers RNN / BiRNN layers of one cell type, run as one rnn op (Paddle's
    RNNBase with its cuDNN path)."""

    def __init__(self, mode, input_size, hidden_size, num_layers=1, direction="forward",
                 time_major=False, dropout=0.0, weight_ih_attr=None, weight_hh_attr=None,
                 bias_ih_attr=None, bias_hh_attr=None, activation="tanh"):
        super().__init__()
        if direction not in ("forward", "bidirect", "bidirectional"):
            raise ValueError(f"{type(self).__name__}: direction should be forward or bidirect "
                             f"(or bidirectional), received direction = {direction}")
        if False in (weight_ih_attr, weight_hh_attr, bias_ih_attr, bias_hh_attr):
            raise NotImplementedError(f"{type(self).__name__}: parameters turned off with "
                                      f"attr=False are not supported (the rnn op reads all four)")
        self.mode, self.input_size, self.hidden_size = mode, input_size, hidden_size
        self.num_layers, self.dropout, self.time_major = num_layers, dropout, time_major
        self.num_directions = 1 if direction == "forward" else 2
        self.direction = direction
        self.state_components = 2 if mode == "LSTM" else 1
        attrs = dict(weight_ih_attr=weight_ih_attr, weight_hh_attr=weight_hh_attr,
                     bias_ih_attr=bias_ih_attr, bias_hh_attr=bias_hh_attr)
        if mode == "LSTM":
            make = lambda n_in: LSTMCell(n_in, hidden_size, **attrs)   # noqa: E731
        elif mode == "GRU":
            make = lambda n_in: GRUCell(n_in, hidden_size, **attrs)    # noqa: E731
        else:
            make = lambda n_in: SimpleRNNCell(n_in, hidden_size, activation,  # noqa: E731
                                              **attrs)
        for layer in range(num_layers):
            n_in = input_size if layer == 0 else self.num_directions * hidden_size
            if self.num_directions == 1:
                self.append(RNN(make(n_in), False, time_major))
            else:
                self.append(BiRNN(make(n_in), make(n_in), time_major))
        for layer, sub in enumerate(self):
            cells = [sub.cell] if self.num_directions == 1 else [sub.cell_fw, sub.cell_bw]
            for d, cell in enumerate(cells):
                suffix = f"l{layer}" + ("_reverse" if d else "")
                for kind, p in zip(("weight_ih", "weight_hh", "bias_ih", "bias_hh"),
                                   cell.weights()):
                    setattr(self, f"{kind}_{suffix}", p)

    def _weights(self):
        cells = [c for sub in self for c in
                 ([sub.cell] if self.num_directions == 1 else [sub.cell_fw, sub.cell_bw])]
        return [w for c in cells for w in c.weights()]

    def forward(self, inputs, initial_states=None, sequence_length=None):
        """Run the network.

        Args:
            inputs (Variable): (batch, time, input_size), or time-major.
            initial_states (optional): h (LSTM: (h, c)), each (num_layers * directions,
                batch, hidden_size); zeros when None.
            sequence_length (Variable, optional): int (batch,) lengths: past one, the state
                is kept and the output is zero.

        Returns:
            tuple: (outputs (..., directions * hidden_size), final states).
        """
        return rnn_op(inputs, self._weights(), self.mode, self.hidden_size, self.num_layers,
                      self.direction, self.time_major, self.dropout, initial_states,
                      sequence_length, training=self.training)

    def extra_repr(self) -> str:
        """input_size, hidden_size and the non-default options.

        Returns:
            str: e.g. '3, 4, num_layers=2'.
        """
        s = f"{self.input_size}, {self.hidden_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.time_major:
            s += f", time_major={self.time_major}"
        if self.dropout:
            s += f", dropout={self.dropout}"
        return s


# the arguments SimpleRNN, LSTM and GRU share, documented once
_RNN_DOC = dict(
    rnn_args="""input_size (int): features of the input.
        hidden_size (int): units per direction.
        num_layers (int): stacked layers.
        direction (str): 'forward' or 'bidirect' (or 'bidirectional').
        time_major (bool): inputs are (time, batch, features).
        dropout (float): dropout between layers in training.""",
    rnn_attrs="""weight_ih_attr, weight_hh_attr, bias_ih_attr, bias_hh_attr (ParamAttr, optional):
            the parameters' initializer / learning rate / regularizer.
        name (str, optional): accepted for Paddle compatibility.""")


@_shared_doc(**_RNN_DOC)
class SimpleRNN(_RNNBase):
    """Multi-layer Elman network (tanh or relu), one rnn op.

    Args:
        {rnn_args}
        activation (str): 'tanh' or 'relu'.
        {rnn_attrs}

    Example:
        >>> net = paddle.nn.SimpleRNN(3, 4, num_layers=2)
        >>> out, h = net(static.data('x', [None, 5, 3]))
        >>> out.shape, h.shape
        ((-1, 5, 4), (2, -1, 4))
    """

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1,
                 direction: str = "forward", time_major: bool = False, dropout: float = 0.0,
                 activation: str = "tanh", weight_ih_attr: Any = None,
                 weight_hh_attr: Any = None, bias_ih_attr: Any = None,
                 bias_hh_attr: Any = None, name: str | None = None) -> None:
        if activation not in ("tanh", "relu"):
            raise ValueError(f"SimpleRNN: activation must be 'tanh' or 'relu'; got "
                             f"{activation!r}")
        super().__init__("RNN_" + activation.upper(), input_size, hidden_size, num_layers,
                         direction, time_major, dropout, weight_ih_attr, weight_hh_attr,
                         bias_ih_attr, bias_hh_attr, activation)


class _Gated(_RNNBase):
    """LSTM and GRU: the same arguments, the rnn op's mode from the class."""
    MODE = ""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1,
                 direction: str = "forward", time_major: bool = False, dropout: float = 0.0,
                 weight_ih_attr: Any = None, weight_hh_attr: Any = None,
                 bias_ih_attr: Any = None, bias_hh_attr: Any = None,
                 name: str | None = None) -> None:
        super().__init__(self.MODE, input_size, hidden_size, num_layers, direction, time_major,
                         dropout, weight_ih_attr, weight_hh_attr, bias_ih_attr, bias_hh_attr)


@_shared_doc(**_RNN_DOC)
class LSTM(_Gated):
    """Multi-layer (bidirectional) LSTM, one rnn op; returns (outputs, (h, c)).

    Args:
        {rnn_args}
        {rnn_attrs}

    Example:
        >>> net = paddle.nn.LSTM(3, 4, num_layers=2, direction='bidirect')
        >>> out, (h, c) = net(static.data('x', [None, 5, 3]))
        >>> out.shape, c.shape
        ((-1, 5, 8), (4, -1, 4))
        >>> list(net.state_dict(keys_only=True))[:2]
        ['weight_ih_l0', 'weight_hh_l0']
    """

    MODE = "LSTM"


@_shared_doc(**_RNN_DOC)
class GRU(_Gated):
    """Multi-layer (bidirectional) GRU, one rnn op.

    Args:
        {rnn_args}
        {rnn_attrs}

    Example:
        >>> out, h = paddle.nn.GRU(3, 4)(static.data('x', [None, 5, 3]))
        >>> out.shape, h.shape
        ((-1, 5, 4), (1, -1, 4))
    """

    MODE = "GRU"
