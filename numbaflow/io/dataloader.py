"""paddle.io.DataLoader: batches of a dataset (or a generator) as feed dicts.

>>> loader = paddle.io.DataLoader(dataset, feed_list=[x, y], places=paddle.CPUPlace(),
...                               batch_size=32, shuffle=True, num_workers=2,
...                               return_list=False)
>>> for feed in loader():
...     exe.run(main, feed=feed, fetch_list=[loss])

With `return_list=False` each item is a feed dict {name: ndarray} for one place, or, with
D > 1 places, a list of D such dicts made from D consecutive batches (as Paddle gives each
device its own batch); `return_list=True` (Paddle 2.x's default) gives the list of
arrays instead. Loading runs ahead of the consumer in a background thread (and in
`num_workers` worker processes), so the executor does not wait for data it could have.
"""
from __future__ import annotations

import numbers
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from ..executor.feed import samples_to_array
from ..executor.place import CPUPlace, CUDAPlace
from ..graph.program import Variable
from ..utils import profiling_hook
from . import _workers
from .dataset import BatchSampler, IterableDataset


def default_collate_fn(batch: Sequence[Any]) -> Any:
    """Stack a list of samples field by field: a list of (x, y) tuples becomes [X, Y];
    dict samples become a dict; array/number samples one array.

    Args:
        batch (list): the samples of one batch.

    Returns:
        list, dict or ndarray: the stacked fields.

    Raises:
        ValueError: samples with different numbers of fields.
        TypeError: samples of a type it cannot stack.

    Example:
        >>> X, Y = paddle.io.default_collate_fn([(np.zeros(2), 1), (np.ones(2), 2)])
        >>> X.shape, Y.tolist()
        ((2, 2), [1, 2])
    """
    return _collate(list(batch), "")


def _tagged(error, sample, top):
    """`error` marked with the sample (its place in the batch) and the top-level field
    (index or key) it is about, for `_Fetch` to name the dataset index and fed variable."""
    error.sample, error.field = sample, top
    return error


def _collate(batch, field, top=None):
    """default_collate_fn of one field (`field`: where it is, for messages; `top`: the
    index or key of the sample's field it is in)."""
    def where(k):
        return f"DataLoader: sample #{k} of the batch{field}"
    first = batch[0]
    for k, s in enumerate(batch):
        if s is None or isinstance(s, (str, bytes)):
            raise _tagged(TypeError(where(k) + f" is {type(s).__name__} {s!r}; expected a "
                                    f"number, an array, or a tuple/dict of them (one field "
                                    f"per fed variable)"), k, top)
    if isinstance(first, dict):
        for k, s in enumerate(batch):
            missing = [key for key in first if not isinstance(s, dict) or key not in s]
            if missing:
                raise _tagged(ValueError(where(k) + f" has no key {missing[0]!r}, which "
                                         f"sample #0 has; every sample needs the same keys"),
                              k, missing[0] if top is None else top)
        return {key: _collate([s[key] for s in batch], f"{field}, key {key!r}",
                              key if top is None else top)
                for key in first}
    if isinstance(first, (list, tuple)):
        for k, s in enumerate(batch):
            if not isinstance(s, (list, tuple)) or len(s) != len(first):
                n = len(s) if isinstance(s, (list, tuple)) else f"a single {type(s).__name__}"
                raise _tagged(ValueError(where(k) + f" has {n} field(s) but sample #0 has "
                                         f"{len(first)}; each sample must have one field per "
                                         f"fed variable"), k, top)
        return [_collate(list(f), f"{field}, field #{i}", i if top is None else top)
                for i, f in enumerate(zip(*batch))]
    if isinstance(first, (np.ndarray, numbers.Number, np.generic)):
        arrays = [np.asarray(s) for s in batch]
        for k, a in enumerate(arrays):
            if a.shape != arrays[0].shape:
                raise _tagged(ValueError(where(k) + f" has shape {a.shape} but sample #0 has "
                                         f"{arrays[0].shape}; a field must have one shape in "
                                         f"a batch"), k, top)
        return np.stack(arrays)
    raise TypeError(f"DataLoader: cannot collate samples of type {type(first).__name__}"
                    f"{field}; give arrays, numbers, or tuples/dicts of them, or a collate_fn")


def _num_places(places):
    if places is None or isinstance(places, (CPUPlace, CUDAPlace, str)):
        return 1
    places = list(places)
    if not places:
        raise ValueError("DataLoader: places must not be empty")
    return len(places)


def _feed_vars(feed_list, fn):
    if feed_list is None:
        return None
    if not isinstance(feed_list, (list, tuple)) or not all(
            isinstance(v, Variable) for v in feed_list):
        raise TypeError(f"{fn}: feed_list must be a list of Variables (from static.data), got "
                        f"{feed_list!r}")
    return list(feed_list)


def _as_feed(fields, feed_vars, return_list, fn, lossy=False):
    """One batch (a list of per-variable arrays) as a feed dict, or the list itself,
    converted under exe.run's feed rules (`lossy`: numpy's casts instead)."""
    if isinstance(fields, dict):
        missing = [v.name for v in feed_vars or () if v.name not in fields]
        if missing:
            raise ValueError(f"{fn}: a batch is a dict without the fed variable "
                             f"{missing[0]!r} (its keys: {sorted(map(str, fields))}); dict "
                             f"samples need one key per variable of feed_list")
        fields = [fields[v.name] for v in feed_vars] if feed_vars else list(fields.values())
    elif not isinstance(fields, (list, tuple)):
        fields = [fields]
    if feed_vars is None:
        return [np.asarray(f) for f in fields]
    if len(fields) != len(feed_vars):
        raise ValueError(f"{fn}: a batch has {len(fields)} fields but feed_list has "
                         f"{len(feed_vars)} variables ({[v.name for v in feed_vars]})")
    arrays = [samples_to_array(v, f, lossy, fn) for v, f in zip(feed_vars, fields)]
    if return_list:
        return arrays
    return {v.name: a for v, a in zip(feed_vars, arrays)}


def _grouped(items, num_places, drop_last):
    """Items one by one for one place; lists of `num_places` consecutive items otherwise."""
    if num_places == 1:
        yield from items
        return
    group = []
    for item in items:
        group.append(item)
        if len(group) == num_places:
            yield group
            group = []
    if group and not drop_last:
        yield group


def _first(batch):
    """The collate of batch_size=None: the one item, already a batch."""
    return batch[0]


class _Fetch:
    """Collate the samples at some indices (a module-level callable: workers call it)."""

    def __init__(self, dataset, collate_fn, feed_names=None):
        self.dataset, self.collate_fn, self.feed_names = dataset, collate_fn, feed_names

    def __call__(self, indices):
        indices = list(indices)
        samples = [self.dataset[i] for i in indices]
        try:
            return self.collate_fn(samples)
        except (TypeError, ValueError) as e:
            if getattr(e, "sample", None) is None or self.collate_fn is not default_collate_fn:
                raise
            # the sample's place in the dataset, and the variable its field feeds
            said = f"dataset index {indices[e.sample]!r}"
            names = self.feed_names or []
            if isinstance(e.field, int) and e.field < len(names):
                said += f"; field #{e.field} feeds {names[e.field]!r}"
            elif isinstance(e.field, str):
                said += f"; key {e.field!r} feeds the variable {e.field!r}"
            raise type(e)(f"{e} ({said})") from None


def _iterable_batches(dataset, batch_size, drop_last, collate_fn):
    batch = []
    for sample in dataset:
        batch.append(sample)
        if len(batch) == batch_size:
            yield collate_fn(batch)
            batch = []
    if batch and not drop_last:
        yield collate_fn(batch)


class DataLoader:
    """Batches of `dataset` for the executor, loaded ahead in the background.

    Iterating it (or calling it) yields, per batch, a feed dict {name: ndarray}
    (`return_list=False`), or with D > 1 `places` a list of D such dicts made from D
    consecutive batches (each device gets its own batch, as in Paddle); with
    `return_list=True` (Paddle 2.x's default) the list of field arrays instead. A worker's
    exception is re-raised here with its traceback attached (`RemoteTraceback`); a dead
    worker or a wait past `timeout` raises RuntimeError, never a hang.

    Args:
        dataset (Dataset or IterableDataset): the samples (tuples of fields).
        feed_list (list of Variable, optional): the variables fed, in field order; needed
            for feed dicts. Fields are cast to their dtypes and reshaped when only the rank
            differs (a scalar label becomes [B, 1]).
        places (Place or list of Places, optional): one place, or the D places of a
            data-parallel CompiledProgram.
        return_list (bool): yield lists of arrays (default True) instead of feed dicts.
        batch_sampler (BatchSampler, optional): instead of batch_size/shuffle/drop_last.
        batch_size (int or None): samples per batch (default 1); None: every dataset item
            already is a batch.
        shuffle (bool): a random order each epoch. Default False.
        drop_last (bool): drop the last short batch (and an incomplete group of D).
        collate_fn (callable, optional): samples -> batch (default `default_collate_fn`).
        num_workers (int): loading processes (0: load in a background thread only).
        use_buffer_reader (bool): load ahead in a background thread. Default True.
        prefetch_factor (int): batches in flight per worker. Default 2.
        use_shared_memory (bool): accepted for Paddle compatibility; ignored.
        timeout (float): seconds to wait for one batch from the workers (0: no limit).
        worker_init_fn (callable, optional): called with the worker id in each worker.
        persistent_workers (bool): accepted for Paddle compatibility; ignored.
        lossy_cast (bool): cast fields to the fed variables' dtypes as numpy does. By
            default exe.run's feed rules apply: a value the dtype cannot hold (1.7 or NaN
            into an int64 label, 1e300 into float32) raises, naming the variable, the
            sample and the value.

    Raises:
        ValueError: inconsistent arguments (e.g. return_list=False without feed_list).

    Example:
        >>> x = static.data('x', [None, 2], 'float32')
        >>> y = static.data('y', [None, 1], 'int64')
        >>> ds = paddle.io.TensorDataset([np.ones((5, 2), 'float32'), np.arange(5)])
        >>> loader = paddle.io.DataLoader(ds, feed_list=[x, y], batch_size=2,
        ...                               drop_last=True, return_list=False)
        >>> [{k: v.shape for k, v in feed.items()} for feed in loader()]
        [{'x': (2, 2), 'y': (2, 1)}, {'x': (2, 2), 'y': (2, 1)}]
    """

    def __init__(self, dataset: Any, feed_list: Sequence[Variable] | None = None,
                 places: Any = None, return_list: bool = True,
                 batch_sampler: BatchSampler | None = None, batch_size: int | None = 1,
                 shuffle: bool = False, drop_last: bool = False,
                 collate_fn: Callable[[list], Any] | None = None, num_workers: int = 0,
                 use_buffer_reader: bool = True, prefetch_factor: int = 2,
                 use_shared_memory: bool = True, timeout: float = 0,
                 worker_init_fn: Callable[[int], Any] | None = None,
                 persistent_workers: bool = False, lossy_cast: bool = False) -> None:
        self.dataset = dataset
        self.lossy_cast = bool(lossy_cast)
        self.feed_vars = _feed_vars(feed_list, "DataLoader")
        if not return_list and self.feed_vars is None:
            raise ValueError("DataLoader: return_list=False yields feed dicts, which needs "
                             "feed_list=[the static.data variables]")
        self.return_list = bool(return_list)
        self.num_places = _num_places(places)
        if isinstance(num_workers, bool) or not isinstance(num_workers, int) or num_workers < 0:
            raise ValueError(f"DataLoader: num_workers must be an int >= 0, got {num_workers!r}")
        if not isinstance(prefetch_factor, int) or prefetch_factor < 1:
            raise ValueError(f"DataLoader: prefetch_factor must be an int >= 1, got "
                             f"{prefetch_factor!r}")
        if not isinstance(timeout, numbers.Real) or timeout < 0:
            raise ValueError(f"DataLoader: timeout must be a number >= 0, got {timeout!r}")
        self.num_workers, self.prefetch_factor = num_workers, prefetch_factor
        self.timeout, self.worker_init_fn = timeout, worker_init_fn
        self.use_buffer_reader = bool(use_buffer_reader)
        if collate_fn is not None and not callable(collate_fn):
            raise TypeError(f"DataLoader: collate_fn must be a callable (samples -> batch) or "
                            f"None for default_collate_fn, got {type(collate_fn).__name__} "
                            f"{collate_fn!r}")
        for name, flag in (("shuffle", shuffle), ("drop_last", drop_last)):
            if not isinstance(flag, (bool, np.bool_)):
                raise TypeError(f"DataLoader: {name} must be a bool (True or False), got "
                                f"{type(flag).__name__} {flag!r}")
        self.collate_fn = collate_fn or default_collate_fn
        self.drop_last = bool(drop_last)
        self._iterable = isinstance(dataset, IterableDataset)
        if self._iterable:
            if batch_sampler is not None or shuffle:
                raise ValueError("DataLoader: an IterableDataset takes neither batch_sampler "
                                 "nor shuffle (it decides its own order)")
            if isinstance(batch_size, bool) or not isinstance(batch_size, int) or \
                    batch_size <= 0:
                raise ValueError(f"DataLoader: batch_size must be a positive int for an "
                                 f"IterableDataset, got {batch_size!r}")
            self.batch_size, self.batch_sampler = batch_size, None
        elif batch_size is None:
            # no automatic batching: every item of the dataset already is a batch
            if batch_sampler is not None or drop_last:
                raise ValueError("DataLoader: batch_size=None (each item is a batch) takes "
                                 "neither batch_sampler nor drop_last")
            self.batch_sampler = BatchSampler(dataset, shuffle=shuffle, batch_size=1)
            self.collate_fn = collate_fn or _first
        elif batch_sampler is not None:
            if batch_size != 1 or shuffle or drop_last:
                raise ValueError("DataLoader: give batch_sampler or batch_size/shuffle/"
                                 "drop_last, not both")
            self.batch_sampler = batch_sampler
        else:
            self.batch_sampler = BatchSampler(dataset, shuffle=shuffle, batch_size=batch_size,
                                              drop_last=drop_last)

    def __len__(self):
        if self._iterable:
            raise TypeError("DataLoader over an IterableDataset has no len()")
        n, d = len(self.batch_sampler), self.num_places
        return n // d if self.drop_last else -(-n // d)     # groups of one batch per place

    def __call__(self) -> Iterator[Any]:
        return self.__iter__()

    def _batches(self):
        if self._iterable:
            def one():
                return _iterable_batches(self.dataset, self.batch_size, self.drop_last,
                                         self.collate_fn)
            if self.num_workers == 0:
                return one()
            return _workers.streamed([one] * self.num_workers, self.dataset,
                                     self.worker_init_fn, self.timeout,
                                     self.num_workers * self.prefetch_factor)
        fetch = _Fetch(self.dataset, self.collate_fn,
                       [v.name for v in self.feed_vars] if self.feed_vars else None)
        if self.num_workers == 0:
            return (fetch(indices) for indices in self.batch_sampler)
        return _workers.indexed_batches(iter(self.batch_sampler), fetch, self.dataset,
                                        self.num_workers, self.prefetch_factor,
                                        self.worker_init_fn, self.timeout)

    def __iter__(self):
        feeds = (_as_feed(b, self.feed_vars, self.return_list, f"DataLoader batch #{i}",
                          self.lossy_cast) for i, b in enumerate(self._batches()))
        items = _grouped(feeds, self.num_places, self.drop_last)
        if self.use_buffer_reader:
            items = _workers.prefetched(items, self.prefetch_factor * max(1, self.num_workers))
        return profiling_hook.watched(items)    # timed while a profiler is open

    @staticmethod
    def from_generator(feed_list: Sequence[Variable] | None = None,
                       capacity: int | None = None, use_double_buffer: bool = True,
                       iterable: bool = True, return_list: bool = False,
                       use_multiprocess: bool = False, drop_last: bool = True,
                       lossy_cast: bool = False) -> Any:
        """A loader fed by a Python generator: give it data with `set_sample_generator`
        (samples), `set_sample_list_generator` (lists of samples, e.g. `paddle.batch`) or
        `set_batch_generator` (whole batches), then iterate it for feed dicts.

        Args:
            feed_list (list of Variable): the variables fed, in field order.
            capacity (int, optional): batches read ahead (default 2).
            use_double_buffer (bool): read ahead in a background thread. Default True.
            iterable (bool): must be True (the start()/reset() queue mode is not
                supported).
            return_list (bool): yield lists of arrays instead of feed dicts.
            use_multiprocess (bool): run the generator in a background process.
            drop_last (bool): with D > 1 places, drop an incomplete last group of D.
            lossy_cast (bool): numpy's casts instead of the feed rules (see DataLoader).

        Returns:
            GeneratorLoader: set its source, then iterate it (or call it).

        Raises:
            ValueError: iterable=False, or return_list=False without feed_list.

        Example:
            >>> x = static.data('x', [None, 2], 'float32')
            >>> loader = paddle.io.DataLoader.from_generator(feed_list=[x], capacity=4)
            >>> samples = lambda: ((np.full(2, i, 'float32'),) for i in range(4))
            >>> _ = loader.set_sample_list_generator(paddle.batch(samples, 2))
            >>> [feed['x'][:, 0].tolist() for feed in loader()]
            [[0.0, 1.0], [2.0, 3.0]]
        """
        return GeneratorLoader(feed_list, capacity, use_double_buffer, iterable, return_list,
                               use_multiprocess, drop_last, lossy_cast)


class GeneratorLoader:
    """What `DataLoader.from_generator` returns: set its source with one of the
    `set_*_generator` methods (each returns the loader), then iterate it or call it."""

    def __init__(self, feed_list, capacity, use_double_buffer, iterable, return_list,
                 use_multiprocess, drop_last, lossy_cast=False):
        self.lossy_cast = bool(lossy_cast)
        if not iterable:
            raise ValueError("DataLoader.from_generator(iterable=False) makes the program read "
                             "from a queue with start()/reset(), which numbaflow's executor "
                             "does not do; use iterable=True and pass each item as feed=")
        self.feed_vars = _feed_vars(feed_list, "DataLoader.from_generator")
        if not return_list and self.feed_vars is None:
            raise ValueError("DataLoader.from_generator: return_list=False yields feed dicts, "
                             "which needs feed_list=[the static.data variables]")
        if capacity is not None and (not isinstance(capacity, int) or capacity < 1):
            raise ValueError(f"DataLoader.from_generator: capacity must be a positive int, "
                             f"got {capacity!r}")
        self.capacity = capacity or 2
        self.use_double_buffer = bool(use_double_buffer)
        self.return_list = bool(return_list)
        self.use_multiprocess = bool(use_multiprocess)
        self.drop_last = bool(drop_last)
        self._source, self.num_places = None, 1

    def _set(self, reader, places, make):
        if not callable(reader):
            raise TypeError(f"the reader must be a function returning an iterable (a reader "
                            f"creator), got {type(reader).__name__}; pass the function, not "
                            f"its result")
        self.num_places = _num_places(places)
        self._source = lambda: make(reader())
        return self

    def set_sample_generator(self, reader: Callable[[], Any], batch_size: int,
                             drop_last: bool = True, places: Any = None) -> GeneratorLoader:
        """Feed from a reader of samples, batched here.

        Args:
            reader (callable): a reader creator yielding samples (tuples with one field
                per fed variable).
            batch_size (int): samples per batch.
            drop_last (bool): drop the last short batch. Default True.
            places (Place or list, optional): D > 1 places give per-device lists.

        Returns:
            GeneratorLoader: self.
        """
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size <= 0:
            raise ValueError(f"set_sample_generator: batch_size must be a positive int, got "
                             f"{batch_size!r}")
        return self._set(reader, places, lambda it: _iterable_batches(
            it, batch_size, drop_last, default_collate_fn))

    def set_sample_list_generator(self, reader: Callable[[], Any],
                                  places: Any = None) -> GeneratorLoader:
        """Feed from a reader of lists of samples (e.g. `paddle.batch(reader, n)`).

        Args:
            reader (callable): a reader creator yielding lists of samples.
            places (Place or list, optional): D > 1 places give per-device lists.

        Returns:
            GeneratorLoader: self.
        """
        return self._set(reader, places, lambda it: (default_collate_fn(list(b)) for b in it))

    def set_batch_generator(self, reader: Callable[[], Any],
                            places: Any = None) -> GeneratorLoader:
        """Feed from a reader of whole batches.

        Args:
            reader (callable): a reader creator yielding one list/tuple of arrays (one per
                fed variable) per batch.
            places (Place or list, optional): D > 1 places give per-device lists.

        Returns:
            GeneratorLoader: self.
        """
        return self._set(reader, places, lambda it: it)

    def __call__(self):
        return self.__iter__()

    def __iter__(self):
        if self._source is None:
            raise RuntimeError("DataLoader.from_generator: no data source; call "
                               "set_sample_generator, set_sample_list_generator or "
                               "set_batch_generator first")
        source = self._source

        def convert():
            for i, b in enumerate(source()):
                yield _as_feed(b, self.feed_vars, self.return_list, f"DataLoader batch #{i}",
                               self.lossy_cast)
        if self.use_multiprocess:
            feeds = _workers.streamed([convert], None, None, 0, self.capacity)
        else:
            feeds = convert()
        items = _grouped(feeds, self.num_places, self.drop_last)
        if self.use_double_buffer:
            items = _workers.prefetched(items, self.capacity)
        return profiling_hook.watched(items)    # timed while a profiler is open
