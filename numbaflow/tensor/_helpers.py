"""Argument checks and the activation helper shared by the tensor families and the layers
(static.nn, nn.functional, fluid.layers)."""
from __future__ import annotations

from ..graph.program import Variable
from ..layer_helper import LayerHelper

ACTIVATIONS = ("relu", "sigmoid", "tanh", "gelu", "leaky_relu", "softmax", "log_softmax",
               "exp", "sqrt", "square", "abs")


def activation(x, act, helper=None):
    """Apply activation `act` (a name) to x; with `helper`, the output is named after the
    layer (fc's activation output is `fc_0.tmp_2`, as in Paddle)."""
    if act is None:
        return x
    if act not in ACTIVATIONS:
        raise ValueError(f"unknown activation {act!r}; use one of {', '.join(ACTIVATIONS)}")
    return (helper or LayerHelper(act)).simple(act, {"X": x})


def check_variable(x, fn, arg="x"):
    """x itself, or a TypeError naming the function `fn` and its argument `arg`."""
    if not isinstance(x, Variable):
        raise TypeError(f"{fn}: {arg} must be a Variable, got {type(x).__name__}")
    return x


def rank1(x):
    """max(rank, 1): a 0-D tensor accepts axis 0 or -1, as in Paddle."""
    return max(x.ndim, 1)

