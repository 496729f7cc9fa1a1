"""paddle.tensor: the tensor functions of the top-level API (paddle.add, paddle.triu, ...),
grouped by family as in Paddle: `creation`, `math`, `manipulation`, `search`, `linalg`,
`random`. Each function validates its arguments and appends registered ops.

Example:
    >>> x = static.data('x', [None, 3])
    >>> paddle.tensor.add(x, x).shape
    (-1, 3)
"""
from __future__ import annotations

import sys

from ..graph.program import Variable as _Variable
from .creation import (assign, create_parameter, full, full_like, ones, ones_like,  # noqa: F401
                       zeros, zeros_like)
from .linalg import matmul  # noqa: F401
from .manipulation import (_slice_op, cast, concat, flatten, reshape, split,  # noqa: F401
                           squeeze, transpose, unsqueeze)
from .math import (_activation, abs, add, clip, divide, exp, log, max, maximum,  # noqa: F401
                   mean, min, minimum, multiply, pow, scale, sqrt, square, subtract, sum, tanh)
from .search import argmax  # noqa: F401

__all__ = [
    # creation
    "assign", "create_parameter", "full", "full_like", "ones", "ones_like", "zeros",
    "zeros_like",
    # linalg
    "matmul",
    # manipulation
    "cast", "concat", "flatten", "reshape", "split", "squeeze", "transpose", "unsqueeze",
    # math
    "abs", "add", "clip", "divide", "exp", "log", "max", "maximum", "mean", "min", "minimum",
    "multiply", "pow", "scale", "sqrt", "square", "subtract", "sum", "tanh",
    # search
    "argmax",
]

# Variable's operators (+, -, *, /, **, @, unary -, x[...]) call the functions of this package
_Variable._math_functions = sys.modules[__name__]
