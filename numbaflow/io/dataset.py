"""paddle.io datasets and samplers.

>>> class RandomDataset(paddle.io.Dataset):
...     def __init__(self, n): self.n = n
...     def __getitem__(self, i): return np.full(4, i, 'float32'), np.array([i % 2])
...     def __len__(self): return self.n
>>> sampler = paddle.io.BatchSampler(RandomDataset(10), batch_size=4, drop_last=True)
>>> list(sampler)
[[0, 1, 2, 3], [4, 5, 6, 7]]
"""
import random

import numpy as np


class Dataset:
    """A map-style dataset: subclasses define `__getitem__(i)` (one sample: an array or a
    tuple of fields) and `__len__`."""

    def __getitem__(self, idx):
        raise NotImplementedError(f"{type(self).__name__} must define __getitem__")

    def __len__(self):
        raise NotImplementedError(f"{type(self).__name__} must define __len__")


class IterableDataset(Dataset):
    """A stream of samples: subclasses define `__iter__`. With `num_workers > 0` every
    worker iterates its own copy; use `get_worker_info()` inside `__iter__` to shard."""

    def __iter__(self):
        raise NotImplementedError(f"{type(self).__name__} must define __iter__")

    def __getitem__(self, idx):
        raise TypeError("an IterableDataset has no __getitem__; iterate it")

    def __len__(self):
        raise TypeError("an IterableDataset has no len(); iterate it")


class TensorDataset(Dataset):
    """Samples are the i-th rows of equally long arrays."""

    def __init__(self, tensors):
        tensors = [np.asarray(t) for t in tensors]
        if not tensors or any(len(t) != len(tensors[0]) for t in tensors):
            raise ValueError(f"TensorDataset: give arrays with one equal first dimension, got "
                             f"lengths {[len(t) for t in tensors]}")
        self.tensors = tensors

    def __getitem__(self, idx):
        return tuple(t[idx] for t in self.tensors)

    def __len__(self):
        return len(self.tensors[0])


class WorkerInfo:
    """What `get_worker_info()` returns inside a worker: id, num_workers, dataset, seed."""

    def __init__(self, id, num_workers, dataset, seed):
        self.id, self.num_workers, self.dataset, self.seed = id, num_workers, dataset, seed


_worker_info = None       # set once in each worker process (or thread-local in threads)


def get_worker_info():
    """The WorkerInfo of the calling DataLoader worker, or None in the main process."""
    return _worker_info


# ----------------------------------------------------------------------------- samplers
class Sampler:
    """Yields dataset indices."""

    def __init__(self, data_source=None):
        self.data_source = data_source

    def __iter__(self):
        raise NotImplementedError

    def __len__(self):
        return len(self.data_source)


class SequenceSampler(Sampler):
    def __iter__(self):
        return iter(range(len(self.data_source)))


class RandomSampler(Sampler):
    """A random permutation each epoch (Python's `random`, so `random.seed` fixes it)."""

    def __init__(self, data_source, replacement=False, num_samples=None, generator=None):
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
    with `shuffle=True`); the last shorter list is kept unless `drop_last`."""

    def __init__(self, dataset=None, sampler=None, shuffle=False, batch_size=1,
                 drop_last=False):
        if (dataset is None) == (sampler is None):
            raise ValueError("BatchSampler: give exactly one of dataset and sampler")
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size <= 0:
            raise ValueError(f"BatchSampler: batch_size must be a positive int, got "
                             f"{batch_size!r}")
        if sampler is not None and shuffle:
            raise ValueError("BatchSampler: shuffle=True needs dataset=, not sampler= (the "
                             "sampler decides the order)")
        if sampler is None:
            sampler = (RandomSampler if shuffle else SequenceSampler)(dataset)
        self.sampler, self.batch_size, self.drop_last = sampler, batch_size, bool(drop_last)

    def __iter__(self):
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
