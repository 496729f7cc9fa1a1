"""Argument checks shared by the tensor families."""
from __future__ import annotations

from ..graph.program import Variable


def check_variable(x, fn, arg="x"):
    """x itself, or a TypeError naming the function `fn` and its argument `arg`."""
    if not isinstance(x, Variable):
        raise TypeError(f"{fn}: {arg} must be a Variable, got {type(x).__name__}")
    return x


def rank1(x):
    """max(rank, 1): a 0-D tensor accepts axis 0 or -1, as in Paddle."""
    return max(x.ndim, 1)

