"""numbaflow.io (paddle.io): datasets, samplers and the DataLoader.

>>> ds = paddle.io.TensorDataset([np.arange(8, dtype='float32').reshape(4, 2), np.arange(4)])
>>> [x.shape for x, y in paddle.io.DataLoader(ds, batch_size=3)]
[(3, 2), (1, 2)]

Data in only: state out and back (checkpoints, inference models) lives in
`numbaflow/persistence/`.
"""
from .dataset import (BatchSampler, Dataset, IterableDataset, RandomSampler,  # noqa: F401
                      Sampler, SequenceSampler, TensorDataset, get_worker_info)
from .dataloader import DataLoader, default_collate_fn  # noqa: F401
from ._workers import RemoteTraceback  # noqa: F401

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "Sampler", "SequenceSampler",
           "RandomSampler", "BatchSampler", "get_worker_info", "DataLoader",
           "default_collate_fn", "RemoteTraceback"]
