"""fluid.DataFeeder: turn a minibatch (a list of sample tuples) into a feed dict.

>>> feeder = fluid.DataFeeder(feed_list=[x, y], place=fluid.CPUPlace())
>>> for data in paddle.batch(reader, 32)():
...     exe.run(main, feed=feeder.feed(data), fetch_list=[loss])
"""
from __future__ import annotations

from typing import Any, Callable, Iterable

import numpy as np

from ..distributed.feed import split_sizes
from ..executor.feed import unrepresentable
from ..graph.program import Variable, default_main_program


class DataFeeder:
    """Convert minibatches (lists of sample tuples) into feed dicts for the variables of
    `feed_list`: field i of every sample goes to feed_list[i].

    Args:
        feed_list (list of Variable or str): the fed variables (names are looked up in
            `program`).
        place (Place): accepted for Paddle compatibility (feeds are host arrays).
        program (Program, optional): where names are looked up (default: the main program).
        lossy_cast (bool): cast every value as numpy does. By default the feed rules of
            `exe.run` apply: a value the variable's dtype cannot hold (1.7 or NaN into an
            int64 label, 1e300 into float32) raises, naming the variable, the sample and
            the value; rounding a float to float32 is fine.

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

    def __init__(self, feed_list: list, place: Any = None, program: Any = None,
                 lossy_cast: bool = False) -> None:
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
        self.lossy_cast = bool(lossy_cast)

    def feed(self, iterable: Iterable[Any]) -> dict:
        """The feed dict of one minibatch: field i of every sample is stacked, cast to
        the variable's dtype and (when only the rank differs) reshaped to its shape.

        Args:
            iterable (list): the samples (tuples with one field per fed variable).

        Returns:
            dict: {name: ndarray}.

        Raises:
            ValueError: a sample with another number of fields, a dict sample without a
                fed name, an empty minibatch, fields that do not fit a variable's shape,
                or a value its dtype cannot hold (without `lossy_cast`); each names the
                sample.
            TypeError: a sample that is None or a string.
        """
        columns = [[] for _ in self.feed_vars]
        for k, sample in enumerate(iterable):
            for col, field in zip(columns, sample_fields(k, sample, self.feed_names,
                                                         "DataFeeder.feed")):
                col.append(field)
        if not columns[0]:
            raise ValueError("DataFeeder.feed: the minibatch is empty; give at least one sample")
        return {v.name: _column(v, col, self.lossy_cast, "DataFeeder.feed")
                for v, col in zip(self.feed_vars, columns)}

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


def sample_fields(k, sample, names, where):
    """The fields of sample #k, one per fed variable in `names` (a dict sample gives its
    values at those keys); a malformed sample (a string, None, another number of fields,
    a dict without a fed key) raises naming the sample, the field and what was expected."""
    expected = (f"expected a tuple of {len(names)} field{'s' * (len(names) != 1)}, one per "
                f"fed variable {names}")
    if isinstance(sample, dict):
        missing = [n for n in names if n not in sample]
        if missing:
            raise ValueError(f"{where}: sample #{k} is a dict without the key {missing[0]!r} "
                             f"(it has {sorted(map(str, sample))}); a dict sample needs one "
                             f"key per fed variable {names}")
        return [sample[n] for n in names]
    if sample is None or isinstance(sample, (str, bytes)):
        raise TypeError(f"{where}: sample #{k} is {type(sample).__name__} {sample!r}; "
                        f"{expected}")
    if isinstance(sample, (list, tuple)):
        if len(sample) != len(names):
            raise ValueError(f"{where}: sample #{k} has {len(sample)} field"
                             f"{'s' * (len(sample) != 1)}; {expected}")
        return list(sample)
    if len(names) != 1:
        raise ValueError(f"{where}: sample #{k} is a single {type(sample).__name__}; "
                         f"{expected}")
    return [sample]


def _bad_sample(col):
    """(sample index, value) of the first entry of the list `col` that is not a number
    or an array of numbers (None, a string, ...), or None."""
    for k, field in enumerate(col):
        try:
            kind = np.asarray(field).dtype.kind
        except (TypeError, ValueError):
            return k, field
        if kind not in "biuf":
            return k, field
    return None


def _column(var, col, lossy=False, where="DataFeeder"):
    """The samples' fields for `var` (a list of them, or one stacked array) as one array
    of its dtype and shape, under exe.run's feed rules: a value the dtype cannot hold (a
    fraction or NaN into an int, an overflow to inf, an int out of range) raises naming
    the variable, the sample and the value, unless `lossy` (then numpy's cast applies)."""
    dt = np.dtype(var.dtype)
    n = len(col)
    try:
        raw = np.asarray(col)
    except (TypeError, ValueError) as e:       # ragged fields
        raw, why = None, str(e)
    if raw is None or raw.dtype.kind not in "biuf":
        bad = _bad_sample(col)
        what = (f"sample #{bad[0]} holds {type(bad[1]).__name__} {bad[1]!r}" if bad else
                f"the samples' fields do not form one array ({why if raw is None else raw.dtype})")
        raise ValueError(f"{where}: cannot feed {var.name!r} ({dt}, shape {var.shape}): "
                         f"{what}; expected a number or an array of numbers in each sample")
    if not lossy:
        value = unrepresentable(raw, dt)
        if value is not None:
            flat = raw.ravel()
            at = np.flatnonzero(np.isnan(flat) if value != value else flat == value)[0]
            k = int(at) // max(1, raw.size // max(1, n))
            raise ValueError(f"{where}: sample #{k} of {var.name!r} holds {value!r}, which "
                             f"{dt} cannot represent (casting would truncate, wrap or "
                             f"overflow it); fix the data, or pass lossy_cast=True to cast "
                             f"as numpy does")
    with np.errstate(all="ignore"):
        arr = raw.astype(dt)
    shape = tuple(n if d == -1 and i == 0 else d for i, d in enumerate(var.shape))
    if arr.ndim != len(shape) and list(shape).count(-1) <= 1:
        try:
            arr = arr.reshape(shape)
        except ValueError:
            pass                              # reported below with the declared shape
    if arr.ndim != len(shape) or any(d >= 0 and d != a for d, a in zip(shape, arr.shape)):
        raise ValueError(f"{where}: {var.name!r} is declared with shape {var.shape} but "
                         f"the minibatch has shape {arr.shape} ({n} samples); "
                         f"make each sample's field hold {var.shape[1:]} values")
    return arr

