"""fluid.DataFeeder: turn a minibatch (a list of sample tuples) into a feed dict.

>>> feeder = fluid.DataFeeder(feed_list=[x, y], place=fluid.CPUPlace())
>>> for data in paddle.batch(reader, 32)():
...     exe.run(main, feed=feeder.feed(data), fetch_list=[loss])
"""
from __future__ import annotations

from typing import Any, Callable, Iterable

from ..distributed.feed import split_sizes
from ..executor.feed import samples_to_array
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
        return {v.name: samples_to_array(v, col, self.lossy_cast, "DataFeeder.feed")
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
