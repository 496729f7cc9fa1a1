"""numbaflow.nn: Paddle 2.x's layers in static mode (`nn.Layer`, `nn.Linear`, `nn.Conv2D`,
... in numbaflow/nn/layer/: calling one appends ops to the current program), functional
ops (`nn.functional`), initializers (`nn.initializer`) and gradient clipping.

>>> clip = paddle.nn.ClipGradByGlobalNorm(clip_norm=1.0)
>>> init = paddle.nn.initializer.Normal(std=0.01)
>>> paddle.nn.Linear(4, 2)(static.data('x', [None, 4])).shape
(-1, 2)
"""
from . import functional, initializer, layer  # noqa: F401
from .clip import ClipGradByGlobalNorm, ClipGradByNorm  # noqa: F401
from .layer import *  # noqa: F401,F403
from .layer import __all__ as _layers
from .layer import loss  # noqa: F401  (paddle.nn.loss.CrossEntropyLoss, as Paddle spells it)

__all__ = ["ClipGradByGlobalNorm", "ClipGradByNorm", "functional", "initializer"] + _layers


def __getattr__(name):
    # a Paddle 2.6 layer numbaflow lacks, or a misspelling: name the closest supported one
    from .paddle_names import PADDLE_NN, missing_name
    from ..utils.hints import dygraph_attribute
    if name.startswith("__"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    err = missing_name(__name__, name, [n for n in __all__ if n[0].isupper()], PADDLE_NN,
                       "layer", "; or write it as a paddle.nn.Layer subclass whose forward "
                       "calls paddle.nn.functional / paddle ops")
    raise err or dygraph_attribute(__name__, name)
