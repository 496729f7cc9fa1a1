"""Beam-search decoding as Paddle 2.6 spells it (`paddle.nn.BeamSearchDecoder`,
`paddle.nn.dynamic_decode`), built from `static.nn.while_loop`, tensor arrays and existing
ops (softmax, topk, take_along_axis, where): no op of its own.

It lives with the control flow (it is built on `while_loop`); the top-level package binds
the two names into `paddle.nn` as Paddle has them. The step follows Paddle's
`python/paddle/nn/decode.py` op for op, so the numbers are Paddle's.

Limit (static-shape plans): `dynamic_decode` needs `max_step_num`, and its outputs always
have `max_step_num + 1` steps; the steps after every beam finished (where Paddle's
outputs end) hold `end_token` (`sequence_lengths` gives each beam's length).
"""
from __future__ import annotations

import collections
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import tensor as M
from ..graph.program import Variable, default_main_program
from ..nn import functional as F
from .control_flow import flatten_nest, while_loop

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["Decoder", "BeamSearchDecoder", "dynamic_decode"]


def _map(fn, *values):
    """fn over the Variables of nests of lists/tuples (paddle.utils.map_structure)."""
    leaves, rebuild = flatten_nest(values[0], "map_structure")
    others = [flatten_nest(v, "map_structure")[0] for v in values[1:]]
    return rebuild([fn(*xs) for xs in zip(leaves, *others)])


class Decoder:
    """The base of the decoders `dynamic_decode` drives: `initialize(inits)` ->
    (inputs, states, finished), `step(time, inputs, states)` -> (outputs, next states,
    next inputs, finished), `finalize(outputs, final_states, sequence_lengths)`.

    Example:
        >>> paddle.nn.Decoder().tracks_own_finished
        False
    """

    def initialize(self, inits: Any) -> tuple:
        """The first inputs, states and finished flags.

        Args:
            inits: what dynamic_decode was given (e.g. the cell's initial states).

        Returns:
            tuple: (inputs, states, finished).
        """
        raise NotImplementedError

    def step(self, time: Variable, inputs: Any, states: Any, **kwargs: Any) -> tuple:
        """One decoding step.

        Args:
            time (Variable): the step index, int64 [1].
            inputs, states: the previous step's next inputs and states.
            **kwargs: what dynamic_decode was given.

        Returns:
            tuple: (outputs, next states, next inputs, finished).
        """
        raise NotImplementedError

    def finalize(self, outputs: Any, final_states: Any, sequence_lengths: Variable) -> tuple:
        """The outputs stacked over time -> the final outputs.

        Args:
            outputs: each output stacked over time ([time, batch, ...]).
            final_states: the last states.
            sequence_lengths (Variable): each entry's length.

        Returns:
            tuple: (final outputs, final states).
        """
        raise NotImplementedError

    @property
    def tracks_own_finished(self):
        """Whether the decoder keeps its own finished flags (beams reorder)."""
        return False


class BeamSearchDecoder(Decoder):
    """Beam search over a cell (Paddle's `paddle.nn.BeamSearchDecoder`): each step runs the
    cell on every beam, adds the log-softmax of `output_fn(cell output)` to the beams'
    scores and keeps the `beam_size` best (beam, token) pairs; a finished beam only
    extends with `end_token` at no cost.

    Args:
        cell (RNNCellBase): a cell (`forward(inputs, states)` -> (outputs, new states)).
        start_token (int): the first input token.
        end_token (int): the token that finishes a beam.
        beam_size (int): the number of beams.
        embedding_fn (callable, optional): token ids -> the cell's inputs.
        output_fn (callable, optional): the cell's output -> logits.

    Example:
        >>> emb = paddle.nn.Embedding(10, 4)
        >>> cell = paddle.nn.GRUCell(4, 4)
        >>> decoder = paddle.nn.BeamSearchDecoder(cell, 0, 1, 3, emb, paddle.nn.Linear(4, 10))
        >>> h = paddle.zeros([2, 4])
        >>> ids, _ = paddle.nn.dynamic_decode(decoder, h, max_step_num=4)
        >>> exe = static.Executor(paddle.CPUPlace())
        >>> _ = exe.run(static.default_startup_program())
        >>> exe.run(fetch_list=[ids])[0].shape
        (2, 5, 3)
    """

    OutputWrapper = collections.namedtuple("OutputWrapper",
                                           ("scores", "predicted_ids", "parent_ids"))
    StateWrapper = collections.namedtuple("StateWrapper",
                                          ("cell_states", "log_probs", "finished", "lengths"))
    kinf = 1e9

    def __init__(self, cell: Callable, start_token: int, end_token: int, beam_size: int,
                 embedding_fn: Callable | None = None, output_fn: Callable | None = None):
        if not callable(cell):
            raise TypeError(f"BeamSearchDecoder: cell must be a cell layer, got {cell!r}")
        if isinstance(beam_size, bool) or not isinstance(beam_size, int) or beam_size < 1:
            raise ValueError(f"BeamSearchDecoder: beam_size must be an int >= 1, got "
                             f"{beam_size!r}")
        self.cell, self.embedding_fn, self.output_fn = cell, embedding_fn, output_fn
        self.start_token, self.end_token = int(start_token), int(end_token)
        self.beam_size = beam_size

    @staticmethod
    def tile_beam_merge_with_batch(x: Variable, beam_size: int) -> Variable:
        """[batch, ...] -> [batch * beam_size, ...], each entry repeated beam_size times
        (for tensors the cell reads besides its state, e.g. an encoder's output).

        Args:
            x (Variable): [batch, ...].
            beam_size (int): the number of beams.

        Returns:
            Variable: [batch * beam_size, ...].

        Example:
            >>> x = paddle.full([2, 3], 1.0)
            >>> paddle.nn.BeamSearchDecoder.tile_beam_merge_with_batch(x, 4).shape
            (8, 3)
        """
        x = M.tile(M.unsqueeze(x, [1]), [1, beam_size] + [1] * (len(x.shape) - 1))
        return M.reshape(x, [-1] + list(x.shape[2:]))

    def _split_batch_beams(self, x):
        return M.reshape(x, [-1, self.beam_size] + list(x.shape[1:]))

    def _merge_batch_beams(self, x):
        return M.reshape(x, [-1] + list(x.shape[2:]))

    def _expand_to_beam_size(self, x):
        return M.tile(M.unsqueeze(x, [1]), [1, self.beam_size] + [1] * (len(x.shape) - 1))

    def _gather(self, x, beams):
        """x [batch, beam, ...] reordered along the beams by beams [batch, beam]."""
        index = beams
        for _ in x.shape[2:]:
            index = M.unsqueeze(index, [-1])
        if len(x.shape) > 2:
            index = M.tile(index, [1, 1] + list(x.shape[2:]))
        return M.take_along_axis(x, index, 1)

    def initialize(self, initial_cell_states: Any) -> tuple:
        """The start of the search.

        Args:
            initial_cell_states: the cell's states [batch, ...] (a nest of them).

        Returns:
            tuple: (inputs: the start tokens, embedded; StateWrapper(cell states tiled to
            the beams, log_probs [0, -1e9, ...], finished False, lengths 0); finished).
        """
        state = flatten_nest(initial_cell_states, "initial_cell_states")[0][0]
        cell_states = _map(self._expand_to_beam_size, initial_cell_states)
        first = M.unsqueeze(M.sum(state * 0, axis=list(range(1, len(state.shape)))),
                            [1])                           # zeros [batch, 1]
        zeros = M.cast(M.tile(first, [1, self.beam_size]), "int64")
        init_inputs = zeros + self.start_token
        log_probs = M.assign(np.array([[0.0] + [-self.kinf] * (self.beam_size - 1)],
                                      "float32")) + M.cast(zeros, "float32")
        finished = M.cast(zeros, "bool")
        inputs = self.embedding_fn(init_inputs) if self.embedding_fn else init_inputs
        return inputs, self.StateWrapper(cell_states, log_probs, finished, zeros), finished

    def _beam_search_step(self, logits, next_cell_states, beam_state):
        vocab = logits.shape[-1]
        noend = np.full(vocab, -self.kinf, "float32")
        noend[self.end_token] = 0.0
        step_log_probs = M.log(F.softmax(logits))
        done = M.unsqueeze(M.cast(beam_state.finished, step_log_probs.dtype), [2])
        # a finished beam gives all its probability to end_token (Paddle's _mask_probs)
        step_log_probs = done * M.assign(noend) - step_log_probs * (done - 1.0)
        log_probs = step_log_probs + M.unsqueeze(beam_state.log_probs, [2])
        scores = M.reshape(log_probs, [-1, self.beam_size * vocab])
        top_scores, top_indices = M.topk(scores, k=self.beam_size)
        beams = M.floor_divide(top_indices, M.full([1], vocab, "int64"))
        tokens = M.remainder(top_indices, M.full([1], vocab, "int64"))
        next_log_probs = M.take_along_axis(scores, top_indices, 1)
        next_cell_states = _map(lambda x: self._gather(x, beams), next_cell_states)
        prev_finished = self._gather(M.cast(beam_state.finished, "int64"), beams)
        lengths = self._gather(beam_state.lengths, beams) + (1 - prev_finished)
        ended = M.cast(M.equal(tokens, M.full([1], self.end_token, "int64")), "int64")
        finished = M.cast(prev_finished + ended, "bool")
        return (self.OutputWrapper(top_scores, tokens, beams),
                self.StateWrapper(next_cell_states, next_log_probs, finished, lengths))

    def step(self, time: Variable, inputs: Any, states: Any, **kwargs: Any) -> tuple:
        """One beam-search step.

        Args:
            time (Variable): the step index.
            inputs: the beams' inputs [batch, beam, ...].
            states (StateWrapper): the beams' states.
            **kwargs: passed to the cell.

        Returns:
            tuple: (OutputWrapper(scores, predicted_ids, parent_ids), StateWrapper, next
            inputs, finished).
        """
        inputs = _map(self._merge_batch_beams, inputs)
        cell_states = _map(self._merge_batch_beams, states.cell_states)
        outputs, next_states = self.cell(inputs, cell_states, **kwargs)
        outputs = _map(self._split_batch_beams, outputs)
        next_states = _map(self._split_batch_beams, next_states)
        if self.output_fn is not None:
            outputs = self.output_fn(outputs)
        out, state = self._beam_search_step(outputs, next_states, states)
        ids = out.predicted_ids
        ids.stop_gradient = True
        return out, state, self.embedding_fn(ids) if self.embedding_fn else ids, \
            state.finished

    def _padding(self, final_states):
        """The outputs of the steps after every beam finished: each beam extends itself
        with end_token at no cost (what Paddle's step would give if it went on)."""
        zeros = final_states.lengths * 0
        keep = M.unsqueeze(M.arange(0, self.beam_size, 1, "int64"), [0])
        return self.OutputWrapper(final_states.log_probs, zeros + self.end_token,
                                  zeros + keep)

    def finalize(self, outputs: Any, final_states: Any, sequence_lengths: Variable) -> tuple:
        """Backtrack the parent ids (Paddle's gather_tree).

        Args:
            outputs (OutputWrapper): scores, predicted_ids, parent_ids, [time, batch, beam].
            final_states (StateWrapper): the last states.
            sequence_lengths (Variable): each beam's length.

        Returns:
            tuple: (the predicted ids [time, batch, beam] of each final beam's whole
            sequence, final_states).
        """
        return gather_tree(outputs.predicted_ids, outputs.parent_ids), final_states

    @property
    def tracks_own_finished(self):
        """True: beams reorder, so the decoder keeps their finished flags."""
        return True


def _select_row(buf, t, row):
    """buf [T, ...] with row t replaced by row [...]."""
    steps = buf.shape[0]
    mask = M.equal(M.arange(0, steps, 1, "int64"), M.reshape(t, [1]))
    mask = M.reshape(mask, [steps] + [1] * (len(buf.shape) - 1))
    return M.where(mask, M.unsqueeze(row, [0]) + buf * 0, buf)


def gather_tree(ids: Variable, parents: Variable) -> Variable:
    """Paddle's `nn.functional.gather_tree`: the full sequences of the final beams, found
    by following the parent ids back from the last step, as a `while_loop` over time.

    Args:
        ids (Variable): int64 [time, batch, beam], each step's chosen tokens.
        parents (Variable): int64 [time, batch, beam], the beam each came from.

    Returns:
        Variable: int64 [time, batch, beam].

    Example:
        >>> ids = paddle.assign(np.array([[[2, 3]], [[4, 5]]], 'int64'))
        >>> parents = paddle.assign(np.array([[[0, 0]], [[1, 0]]], 'int64'))
        >>> out = paddle.static.decode.gather_tree(ids, parents)
        >>> static.Executor(paddle.CPUPlace()).run(fetch_list=[out])[0].tolist()
        [[[3, 2]], [[4, 5]]]
    """
    steps, beam = ids.shape[0], ids.shape[-1]
    last = M.reshape(M.gather(parents, M.full([1], steps - 1, "int64"), axis=0),
                     list(ids.shape[1:]))
    parent = M.unsqueeze(M.arange(0, beam, 1, "int64"), [0]) + last * 0

    def body(t, parent, out):
        ids_t = M.reshape(M.gather(ids, t, axis=0), list(ids.shape[1:]))
        parents_t = M.reshape(M.gather(parents, t, axis=0), list(ids.shape[1:]))
        out = _select_row(out, t, M.take_along_axis(ids_t, parent, 1))
        return [t - 1, M.take_along_axis(parents_t, parent, 1), out]
    t = M.full([1], steps - 1, "int64")
    return while_loop(lambda t, p, o: t >= 0, body, [t, parent, ids * 0])[2]


def _stack(array, length, steps, pad):
    """The `length` elements of a tensor array stacked into [steps, ...], the rows from
    `length` on holding `pad`."""
    buf = M.tile(M.unsqueeze(pad, [0]), [steps] + [1] * len(pad.shape))

    def body(t, buf):
        return [t + 1, _select_row(buf, t, M.array_read(array, t))]
    t = M.full([1], 0, "int64")
    return while_loop(lambda t, b: t < length, body, [t, buf])[1]


def dynamic_decode(decoder: Decoder, inits: Any = None, max_step_num: int | None = None,
                   output_time_major: bool = False, impute_finished: bool = False,
                   is_test: bool = False, return_length: bool = False, **kwargs: Any) -> tuple:
    """Run `decoder.step` until every entry is finished or `max_step_num` steps are done
    (Paddle's `paddle.nn.dynamic_decode`, its static-mode lowering: one `while` op).

    Args:
        decoder (Decoder): e.g. a BeamSearchDecoder.
        inits: what `decoder.initialize` takes (the cell's initial states).
        max_step_num (int): the last step index; required (static shapes).
        output_time_major (bool): outputs [time, batch, ...] instead of [batch, time, ...].
        impute_finished (bool): keep the states of finished entries (decoders that do not
            track their own finished flags).
        is_test (bool): accepted for Paddle compatibility.
        return_length (bool): also return the sequence lengths.
        **kwargs: passed to `decoder.step`.

    Returns:
        tuple: (final outputs, final states) or (..., sequence lengths). The outputs have
        max_step_num + 1 steps (see the module's limit).

    Example:
        >>> cell = paddle.nn.GRUCell(4, 4)
        >>> decoder = paddle.nn.BeamSearchDecoder(cell, 0, 1, 2, paddle.nn.Embedding(6, 4),
        ...                                       paddle.nn.Linear(4, 6))
        >>> ids, _, n = paddle.nn.dynamic_decode(decoder, paddle.zeros([3, 4]),
        ...                                      max_step_num=2, return_length=True)
        >>> ids.shape, n.shape
        ((3, 3, 2), (3, 2))
    """
    if isinstance(max_step_num, bool) or not isinstance(max_step_num, int) or \
            max_step_num < 0:
        raise ValueError(f"dynamic_decode: numbaflow's plans are static-shape, so "
                         f"max_step_num (an int >= 0) is required; got {max_step_num!r}. "
                         f"Pass the longest decode you need")
    inputs, states, finished = decoder.initialize(inits)
    lengths = M.cast(finished, "int64") * 0
    structure = {}

    def not_done(finished, t):
        unfinished = M.sum(1 - M.cast(finished, "int64"))
        return M.reshape(M.cast(M.cast(t <= max_step_num, "int64") * unfinished, "bool"),
                         [1])

    def body(t, finished, lengths, *leaves):
        inputs = structure["inputs"](leaves[:structure["n_in"]])
        states = structure["states"](leaves[structure["n_in"]:])
        outputs, next_states, next_inputs, next_finished = decoder.step(
            t, inputs, states, **kwargs)
        if decoder.tracks_own_finished:
            next_lengths = getattr(next_states, "lengths", lengths)
        else:
            going = 1 - M.cast(finished, "int64")
            next_finished = M.cast(M.cast(next_finished, "int64") + 1 - going, "bool")
            next_lengths = lengths + going
            if impute_finished:
                next_states = _map(lambda old, new: M.where(
                    M.reshape(finished, list(finished.shape) + [1] * (len(new.shape) - len(
                        finished.shape))) + M.cast(new * 0, "bool"), old, new),
                    states, next_states)
        structure["outputs"] = outputs
        arrays = structure.setdefault("arrays", [])
        for k, x in enumerate(flatten_nest(outputs, "step's outputs")[0]):
            if len(arrays) <= k:     # in the enclosing block, as Paddle's
                program = default_main_program()     # _create_array_out_of_while
                inner, program.current_block_idx = program.current_block_idx, \
                    program.current_block().parent_idx
                arrays.append(M.create_array(x.dtype))
                program.current_block_idx = inner
            M.array_write(x, t, arrays[k])
        return [t + 1, next_finished, next_lengths] + \
            flatten_nest(next_inputs, "")[0] + flatten_nest(next_states, "")[0]

    in_leaves, structure["inputs"] = flatten_nest(inputs, "initialize's inputs")
    st_leaves, structure["states"] = flatten_nest(states, "initialize's states")
    structure["n_in"] = len(in_leaves)
    t = M.full([1], 0, "int64")
    result = while_loop(lambda t, f, n, *rest: not_done(f, t), body,
                        [t, finished, lengths] + in_leaves + st_leaves, is_test=is_test)
    steps_done, lengths = result[0], result[2]
    final_states = structure["states"](result[3 + len(in_leaves):])
    rebuild = flatten_nest(structure["outputs"], "")[1]
    pad = flatten_nest(decoder._padding(final_states), "")[0] if hasattr(decoder, "_padding") \
        else [M.array_read(a, 0) * 0 for a in structure["arrays"]]
    stacked = [_stack(a, steps_done, max_step_num + 1, p)
               for a, p in zip(structure["arrays"], pad)]
    final_outputs = rebuild(stacked)
    try:
        final_outputs, final_states = decoder.finalize(final_outputs, final_states, lengths)
    except NotImplementedError:
        pass
    if not output_time_major:
        final_outputs = _map(lambda x: M.transpose(x, [1, 0] + list(range(2, len(x.shape)))),
                             final_outputs)
    return (final_outputs, final_states, lengths) if return_length else \
        (final_outputs, final_states)
