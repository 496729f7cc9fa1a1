"""paddle.io datasets and samplers.

>>> class RandomDataset(paddle.io.Dataset):
...     def __init__(self, n): self.n = n
...     def __getitem__(self, i): return np.full(4, i, 'float32'), np.array([i % 2])
...     def __len__(self): return self.n
>>> sampler = paddle.io.BatchSampler(RandomDataset(10), batch_size=4, drop_last=True)
>>> list(sampler)
[[0, 1, 2, 3], [4, 5, 6, 7]]
"""
from __future__ import annotations

import random
import threading
from typing import Any, Iterator, Sequence

import numpy as np


class Dataset:
    """A map-style dataset: subclasses define `__getitem__(i)` (one sample: an array or a
    tuple of fields) and `__len__`.

    Example:
        >>> class Squares(paddle.io.Dataset):
        ...     def __getitem__(self, i):
        ...         return np.array([i], 'float32'), np.array([i * i], 'int64')
        ...     def __len__(self):
        ...         return 4
        >>> len(Squares()), Squares()[3][1]
        (4, array([9]))
    """

    def __getitem__(self, idx):
        raise NotImplementedError(f"{type(self).__name__} must define __getitem__")

    def __len__(self):
        raise NotImplementedError(f"{type(self).__name__} must define __len__")


class IterableDataset(Dataset):
    """A stream of samples: subclasses define `__iter__`. With `num_workers > 0` every
    worker iterates its own copy; use `get_worker_info()` inside `__iter__` to shard.

    Example:
        >>> class Stream(paddle.io.IterableDataset):
        ...     def __iter__(self):
        ...         for i in range(3):
        ...             yield np.array([i], 'float32')
        >>> [b[0].tolist() for b in paddle.io.DataLoader(Stream(), batch_size=2)]
        [[[0.0], [1.0]], [[2.0]]]
    """

    def __iter__(self):
        raise NotImplementedError(f"{type(self).__name__} must define __iter__")

    def __getitem__(self, idx):
        raise TypeError("an IterableDataset has no __getitem__; iterate it")

    def __len__(self):
        raise TypeError("an IterableDataset has no len(); iterate it")


class TensorDataset(Dataset):
    """A dataset whose i-th sample is the tuple of the i-th rows of equally long arrays.

    Args:
        tensors (list of arrays): arrays with one equal first dimension.

    Raises:
        ValueError: the arrays' first dimensions differ (or none is given).

    Example:
        >>> ds = paddle.io.TensorDataset([np.arange(6).reshape(3, 2), np.arange(3)])
        >>> x, y = ds[1]
        >>> len(ds), x.tolist(), int(y)
        (3, [2, 3], 1)
    """

    def __init__(self, tensors: Sequence[Any]) -> None:
        tensors = [np.asarray(t) for t in tensors]
        if not tensors or any(len(t) != len(tensors[0]) for t in tensors):
            raise ValueError(f"TensorDataset: give arrays with one equal first dimension, got "
                             f"lengths {[len(t) for t in tensors]}")
        self.tensors = tensors

    def __getitem__(self, idx):
        return tuple(t[idx] for t in self.tensors)

    def __len__(self):
        return len(self.tensors[0])


# set in each worker (a worker process's one thread, or a worker thread where there is
# no fork) by _workers.py, so the main thread always sees None (get_worker_info reads it)
worker_local = threading.local()


class WorkerInfo:
    """What `get_worker_info()` returns inside a worker: id, num_workers, dataset, seed."""

    def __init__(self, id: int, num_workers: int, dataset: Any, seed: int) -> None:
        self.id, self.num_workers, self.dataset, self.seed = id, num_workers, dataset, seed


def get_worker_info() -> WorkerInfo | None:
    """Which DataLoader worker is calling (for sharding an IterableDataset).

    Returns:
        WorkerInfo or None: `.id`, `.num_workers`, `.dataset`, `.seed` inside a worker;
        None in the main process.

    Example:
        >>> paddle.io.get_worker_info() is None
        True
    """
    return getattr(worker_local, "info", None)


# ----------------------------------------------------------------------------- samplers
class Sampler:
    """Base class of index samplers: iterating one yields dataset indices.

    Args:
        data_source (Dataset): the dataset sampled.

    Example:
        >>> class Reverse(paddle.io.Sampler):
        ...     def __iter__(self):
        ...         return iter(range(len(self.data_source) - 1, -1, -1))
        >>> list(Reverse(paddle.io.TensorDataset([np.zeros(3)])))
        [2, 1, 0]
    """

    def __init__(self, data_source: Any = None) -> None:
        self.data_source = data_source

    def __iter__(self):
        raise NotImplementedError

    def __len__(self):
        return len(self.data_source)


class SequenceSampler(Sampler):
    """Indices 0, 1, ..., len(data_source) - 1.

    Args:
        data_source (Dataset): the dataset sampled.

    Example:
        >>> list(paddle.io.SequenceSampler(paddle.io.TensorDataset([np.zeros(3)])))
        [0, 1, 2]
    """

    def __init__(self, data_source: Any = None) -> None:
        super().__init__(data_source)

    def __iter__(self):
        return iter(range(len(self.data_source)))


class RandomSampler(Sampler):
    """A random permutation of the indices each epoch (Python's `random`, so
    `random.seed` fixes it), or draws with replacement.

    Args:
        data_source (Dataset): the dataset sampled.
        replacement (bool): draw with replacement. Default False.
        num_samples (int, optional): how many indices per epoch (default: all).
        generator: accepted for Paddle compatibility; ignored.

    Example:
        >>> ds = paddle.io.TensorDataset([np.zeros(5)])
        >>> sorted(paddle.io.RandomSampler(ds))
        [0, 1, 2, 3, 4]
    """

    def __init__(self, data_source: Any, replacement: bool = False,
                 num_samples: int | None = None, generator: Any = None) -> None:
        super().__init__(data_source)
        self.replacement = replacement
        self._num = num_samples

    def __len__(self):
        return self._num if self._num is not None else len(self.data_source)

    def __iter__(self):
        n = len(self.data_source)
        if self.replacement:
            return iter([random.randrange(n) for _ in range(len(self))])
        order = list(range(n))
        random.shuffle(order)
        return iter(order[:len(self)])


class BatchSampler(Sampler):
    """Lists of `batch_size` indices from `sampler` (or from `dataset` in order, shuffled
    with `shuffle=True`); the last shorter list is kept unless `drop_last`.

    Args:
        dataset (Dataset, optional): sample its indices (give this or `sampler`).
        sampler (Sampler, optional): the index order to batch.
        shuffle (bool): with `dataset`, a random order each epoch. Default False.
        batch_size (int): indices per list (> 0). Default 1.
        drop_last (bool): drop the last shorter list. Default False.

    Raises:
        ValueError: both or neither of dataset and sampler; batch_size <= 0.

    Example:
        >>> ds = paddle.io.TensorDataset([np.zeros(5)])
        >>> list(paddle.io.BatchSampler(ds, batch_size=2))
        [[0, 1], [2, 3], [4]]
    """

    def __init__(self, dataset: Any = None, sampler: Sampler | None = None,
                 shuffle: bool = False, batch_size: int = 1, drop_last: bool = False) -> None:
        if (dataset is None) == (sampler is None):
            raise ValueError("BatchSampler: give exactly one of dataset and sampler")
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size <= 0:
            raise ValueError(f"BatchSampler: batch_size must be a positive int, got "
                             f"{batch_size!r}")
        if sampler is not None and shuffle:
            raise ValueError("BatchSampler: shuffle=True needs dataset=, not sampler= (the "
                             "sampler decides the order)")
        if sampler is None:
            _check_map_style(dataset)
            sampler = (RandomSampler if shuffle else SequenceSampler)(dataset)
        self.sampler, self.batch_size, self.drop_last = sampler, batch_size, bool(drop_last)

    def __iter__(self) -> Iterator[list]:
        batch = []
        for idx in self.sampler:
            batch.append(idx)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self):
        n = len(self.sampler)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)


def _check_map_style(dataset):
    """A dataset indexed by position must have a length: say so at construction, with the
    two ways out, rather than fail inside the first epoch."""
    try:
        n = len(dataset)
        ok = isinstance(n, int) and n >= 0 and hasattr(dataset, "__getitem__")
    except (TypeError, NotImplementedError):
        ok = False
    if not ok:
        raise TypeError(f"DataLoader: the dataset (a {type(dataset).__name__}) is read by "
                        f"index, so it needs __len__ (the number of samples) and "
                        f"__getitem__(i); define them, or for a stream without a length "
                        f"subclass paddle.io.IterableDataset and define __iter__")
