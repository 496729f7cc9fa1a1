"""numbaflow.io (paddle.io): datasets, samplers and the DataLoader.

The private modules `_atomic`, `_arrays` and `_pickle` hold the checkpoint file machinery
that `static.save/load` and `save_inference_model` use.
"""
from .dataset import (BatchSampler, Dataset, IterableDataset, RandomSampler,  # noqa: F401
                      Sampler, SequenceSampler, TensorDataset, get_worker_info)
from .dataloader import DataLoader, default_collate_fn  # noqa: F401
from ._workers import RemoteTraceback  # noqa: F401
