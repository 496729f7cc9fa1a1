"""Argument checks and the activation helper shared by the tensor families and the layers
(static.nn, nn.functional, fluid.layers)."""
from __future__ import annotations

import numbers

from ..graph.program import Variable
from ..kernels.registry import ACTIVATION, op_types_with
from ..layer_helper import LayerHelper


def activation(x, act, helper=None):
    """Apply activation `act` (a name) to x; with `helper`, the output is named after the
    layer (fc's activation output is `fc_0.tmp_2`, as in Paddle)."""
    if act is None:
        return x
    if act not in op_types_with(ACTIVATION):
        raise ValueError(f"unknown activation {act!r}; use one of "
                         f"{', '.join(op_types_with(ACTIVATION))}")
    return (helper or LayerHelper(act)).simple(act, {"X": x})


def check_variable(x, fn, arg="x"):
    """x itself, or a TypeError naming the function `fn` and its argument `arg`."""
    if not isinstance(x, Variable):
        raise TypeError(f"{fn}: {arg} must be a Variable, got {type(x).__name__}")
    return x


def rank1(x):
    """max(rank, 1): a 0-D tensor accepts axis 0 or -1, as in Paddle."""
    return max(x.ndim, 1)


def binary(op_type, x, y, name=None):
    """The elementwise op `op_type` of x and y (a number on either side becomes a constant
    of the other's dtype); TypeError for two dtypes."""
    helper = LayerHelper(op_type, name)
    if isinstance(x, numbers.Number) and isinstance(y, Variable):
        x = const_like(x, y, helper)
    elif isinstance(y, numbers.Number) and isinstance(x, Variable):
        y = const_like(y, x, helper)
    check_variable(x, op_type, "x"), check_variable(y, op_type, "y")
    if x.dtype != y.dtype:
        raise TypeError(f"{op_type}: x ({x.name}, {x.dtype}) and y ({y.name}, {y.dtype}) must "
                        f"have the same dtype; cast one with paddle.cast")
    return helper.simple(op_type, {"X": x, "Y": y}, {"axis": -1})


def const_like(value, like, helper):
    """A shape-(1,) constant of `like`'s dtype (for scalar-on-the-left arithmetic)."""
    c = helper.create_tmp(like.dtype, stop_gradient=True)
    helper.append_op("fill_constant", outputs={"Out": c},
                     attrs={"shape": [1], "value": float(value), "dtype": str(like.dtype)})
    return c
