"""numbaflow.nn: functional ops (`nn.functional`), initializers (`nn.initializer`) and
gradient clipping.

>>> clip = paddle.nn.ClipGradByGlobalNorm(clip_norm=1.0)
>>> init = paddle.nn.initializer.Normal(std=0.01)
"""
from . import functional, initializer  # noqa: F401
from .clip import ClipGradByGlobalNorm, ClipGradByNorm  # noqa: F401

__all__ = ["ClipGradByGlobalNorm", "ClipGradByNorm", "functional", "initializer"]


def __getattr__(name):
    # dygraph layers (nn.Linear, nn.Conv2D, nn.Layer, ...) say what to write instead
    from ..utils.hints import dygraph_attribute
    raise dygraph_attribute(__name__, name)
