"""numbaflow.optimizer: SGD, Momentum, Adam (here), Adagrad, RMSProp, Adamax, AdamW
(adaptive.py) and the learning-rate schedulers (`optimizer.lr`).

`minimize(loss)` = append_backward + gradient clipping + weight decay + one update op
per parameter (role OPTIMIZE). The learning rate is the persistable `learning_rate_N`
(shape [1]), initialised in the startup program; feed it or `Scope.set` it to change it,
or give an `lr.LRScheduler`, whose value is written into it before every run.
"""
from ..regularizer import L1Decay, L2Decay  # noqa: F401
from . import lr  # noqa: F401
from .adaptive import Adagrad, Adamax, AdamW, Lamb, RMSProp  # noqa: F401
from .optimizer import (SGD, Adam, AdamOptimizer, MinimizeTwiceWarning, Momentum,  # noqa: F401
                        MomentumOptimizer, Optimizer, SGDOptimizer)

__all__ = ["Optimizer", "SGD", "Momentum", "Adam", "L1Decay", "L2Decay",
           "SGDOptimizer", "MomentumOptimizer", "AdamOptimizer",
           "Adagrad", "RMSProp", "Adamax", "AdamW", "Lamb", "lr", "MinimizeTwiceWarning"]
