"""fluid.DataFeeder: turn a minibatch (a list of sample tuples) into a feed dict.

>>> feeder = fluid.DataFeeder(feed_list=[x, y], place=fluid.CPUPlace())
>>> for data in paddle.batch(reader, 32)():
...     exe.run(main, feed=feeder.feed(data), fetch_list=[loss])
"""
from __future__ import annotations

from typing import Any, Callable, Iterable

import numpy as np

from ..distributed.feed import split_sizes
from ..graph.program import Variable, default_main_program


class DataFeeder:
    """Convert minibatches (lists of sample tuples) into feed dicts for the variables of
    `feed_list`: field i of every sample goes to feed_list[i].

    Args:
        feed_list (list of Variable or str): the fed variables (names are looked up in
            `program`).
        place (Place): accepted for Paddle compatibility (feeds are host arrays).
        program (Program, optional): where names are looked up (default: the main program).

    Raises:
        TypeError: feed_list is not a list of Variables or names.
        ValueError: a name the program does not have.

    Example:
        >>> x = fluid.data(name='x', shape=[None, 3], dtype='float32')
        >>> y = fluid.data(name='y', shape=[None, 1], dtype='int64')
        >>> feeder = fluid.DataFeeder(feed_list=[x, y], place=fluid.CPUPlace())
        >>> feed = feeder.feed([(np.zeros(3), 1), (np.ones(3), 0)])
        >>> feed['x'].shape, feed['y'].shape, feed['y'].dtype
        ((2, 3), (2, 1), dtype('int64'))
    """

    def __init__(self, feed_list: list, place: Any = None, program: Any = None) -> None:
        if isinstance(feed_list, (Variable, str)) or not isinstance(feed_list, (list, tuple)):
            raise TypeError(f"DataFeeder: feed_list must be a list of Variables or names, got "
                            f"{type(feed_list).__name__}")
        block = (program if program is not None else default_main_program()).global_block()
        self.feed_vars = []
        for v in feed_list:
            if isinstance(v, str):
                if v not in block.vars:
                    raise ValueError(f"DataFeeder: the program has no variable {v!r}; pass the "
                                     f"Variables (or names) created with fluid.data/layers.data")
                v = block.vars[v]
            if not isinstance(v, Variable):
                raise TypeError(f"DataFeeder: feed_list entries must be Variables or names, got "
                                f"{type(v).__name__}")
            self.feed_vars.append(v)
        self.place = place
        self.feed_names = [v.name for v in self.feed_vars]

    def feed(self, iterable: Iterable[Any]) -> dict:
        """The feed dict of one minibatch: field i of every sample is stacked, cast to
        the variable's dtype and (when only the rank differs) reshaped to its shape.

        Args:
            iterable (list): the samples (tuples with one field per fed variable).

        Returns:
            dict: {name: ndarray}.

        Raises:
            ValueError: a sample with another number of fields, an empty minibatch, or
                fields that do not fit a variable's shape.
        """
        columns = [[] for _ in self.feed_vars]
        for k, sample in enumerate(iterable):
            if isinstance(sample, np.ndarray) or not hasattr(sample, "__len__"):
                sample = (sample,)
            if len(sample) != len(columns):
                raise ValueError(f"DataFeeder.feed: sample #{k} has {len(sample)} fields but "
                                 f"feed_list has {len(columns)} ({self.feed_names}); each "
                                 f"sample must be a tuple with one field per fed variable")
            for col, field in zip(columns, sample):
                col.append(field)
        if not columns[0]:
            raise ValueError("DataFeeder.feed: the minibatch is empty; give at least one sample")
        return {v.name: _column(v, col) for v, col in zip(self.feed_vars, columns)}

    def feed_parallel(self, iterable: Iterable[Any], num_places: int | None = None) -> list:
        """One feed dict per place.

        Args:
            iterable (list): one minibatch per place, or (with `num_places`) a single
                minibatch to split evenly over the places.
            num_places (int, optional): split one minibatch over this many places.

        Returns:
            list of dict: the per-place feed dicts.
        """
        if num_places is not None:
            samples = list(iterable)
            out, start = [], 0
            for size in split_sizes(len(samples), int(num_places)):
                if size:
                    out.append(self.feed(samples[start:start + size]))
                start += size
            return out
        return [self.feed(mb) for mb in iterable]

    def decorate_reader(self, reader: Callable[[], Iterable[Any]], multi_devices: bool,
                        num_places: int | None = None,
                        drop_last: bool = True) -> Callable[[], Iterable[Any]]:
        """Turn a reader of minibatches into a reader of feed dicts.

        Args:
            reader (callable): a reader of minibatches (e.g. `paddle.batch(...)`).
            multi_devices (bool): yield per-device lists (via `feed_parallel`).
            num_places (int, optional): the device count with `multi_devices`.
            drop_last (bool): skip minibatches too small to split over the devices.

        Returns:
            callable: a reader of feed dicts (or of per-device lists).
        """
        def decorated():
            for mb in reader():
                if not multi_devices:
                    yield self.feed(mb)
                    continue
                n = int(num_places or 1)
                mb = list(mb)
                if len(mb) < n:
                    if drop_last:
                        continue
                    raise ValueError(f"DataFeeder.decorate_reader: a minibatch of {len(mb)} "
                                     f"samples cannot be split over {n} places; pass "
                                     f"drop_last=True")
                yield self.feed_parallel(mb, n)
        return decorated


def _column(var, col):
    try:
        arr = np.array(col, dtype=var.dtype)
    except (TypeError, ValueError) as e:
        raise ValueError(f"DataFeeder: cannot convert the samples of {var.name!r} to "
                         f"{var.dtype} arrays: {e}") from None
    shape = tuple(len(col) if d == -1 and i == 0 else d for i, d in enumerate(var.shape))
    if arr.ndim != len(shape) and list(shape).count(-1) <= 1:
        try:
            arr = arr.reshape(shape)
        except ValueError:
            pass                              # reported below with the declared shape
    if arr.ndim != len(shape) or any(d >= 0 and d != a for d, a in zip(shape, arr.shape)):
        raise ValueError(f"DataFeeder: {var.name!r} is declared with shape {var.shape} but "
                         f"the minibatch has shape {arr.shape} ({len(col)} samples); "
                         f"make each sample's field hold {var.shape[1:]} values")
    return arr
