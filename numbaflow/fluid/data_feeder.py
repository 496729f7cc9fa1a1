"""fluid.DataFeeder: turn a minibatch (a list of sample tuples) into a feed dict.

>>> feeder = fluid.DataFeeder(feed_list=[x, y], place=fluid.CPUPlace())
>>> for data in paddle.batch(reader, 32)():
...     exe.run(main, feed=feeder.feed(data), fetch_list=[loss])
"""
import numpy as np

from ..distributed.feed import split_sizes
from ..graph.program import Variable, default_main_program


class DataFeeder:
    """Convert minibatches for the variables of `feed_list` (Variables or names of
    `program`, default the main program). Sample field i goes to feed_list[i]."""

    def __init__(self, feed_list, place=None, program=None):
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

    def feed(self, iterable):
        """{name: ndarray} of one minibatch: field i of every sample is stacked, cast to
        the variable's dtype and (when ranks differ) reshaped to its shape."""
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

    def feed_parallel(self, iterable, num_places=None):
        """One feed dict per place: each element of `iterable` is one place's minibatch,
        or (with `num_places`) a single minibatch split evenly over the places."""
        if num_places is not None:
            samples = list(iterable)
            out, start = [], 0
            for size in split_sizes(len(samples), int(num_places)):
                if size:
                    out.append(self.feed(samples[start:start + size]))
                start += size
            return out
        return [self.feed(mb) for mb in iterable]

    def decorate_reader(self, reader, multi_devices, num_places=None, drop_last=True):
        """A reader of feed dicts (or per-device lists with `multi_devices`) from a reader
        of minibatches."""
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
