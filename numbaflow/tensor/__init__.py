"""paddle.tensor: the tensor functions of the top-level API (paddle.add, paddle.triu, ...),
grouped by family as in Paddle: `creation`, `math`, `logic`, `manipulation`, `search`,
`linalg`, `random`. Each function validates its arguments and appends registered ops.

Example:
    >>> x = static.data('x', [None, 3])
    >>> paddle.tensor.add(x, x).shape
    (-1, 3)
"""
from __future__ import annotations

import sys

from ..graph.program import Variable as _Variable
from .array import array_length, array_read, array_write, create_array  # noqa: F401
from .attribute import shape  # noqa: F401
from .creation import (arange, assign, create_parameter, full, full_like, linspace,  # noqa: F401
                       ones, ones_like, tril, triu, zeros, zeros_like)
from .linalg import bmm, einsum, matmul  # noqa: F401
from .logic import (equal, greater_equal, greater_than, less_equal,  # noqa: F401
                    less_than, logical_not, not_equal)
from .manipulation import (cast, concat, expand, expand_as, flatten, gather,  # noqa: F401
                           reshape, slice_op, split, squeeze, stack, take_along_axis, tile,
                           transpose, unsqueeze)
from .math import (abs, add, clip, cos, cumsum, divide, erf, exp, floor_divide,  # noqa: F401
                   floor_mod, increment, log, max, maximum, mean, min, minimum, mod, multiply,
                   pow, remainder, rsqrt, scale, sin, sqrt, sign, square, subtract, sum, tanh)
from .random import multinomial, normal, rand, randint, randn, uniform  # noqa: F401
from .search import argmax, argsort, masked_fill, sort, topk, where  # noqa: F401

__all__ = [
    # array
    "array_length", "array_read", "array_write", "create_array",
    # attribute
    "shape",
    # creation
    "arange", "assign", "create_parameter", "full", "full_like", "linspace", "ones",
    "ones_like", "tril", "triu", "zeros", "zeros_like",
    # linalg
    "bmm", "einsum", "matmul",
    # logic
    "equal", "greater_equal", "greater_than", "less_equal", "less_than", "logical_not",
    "not_equal",
    # manipulation
    "cast", "concat", "expand", "expand_as", "flatten", "gather", "reshape", "split",
    "squeeze", "stack", "take_along_axis", "tile", "transpose", "unsqueeze",
    # math
    "abs", "add", "clip", "cos", "cumsum", "divide", "erf", "exp", "floor_divide", "floor_mod",
    "increment", "log", "max", "sin",
    "maximum", "mean", "min", "minimum", "mod", "multiply", "pow", "remainder", "rsqrt",
    "scale", "sign", "sqrt", "square", "subtract", "sum", "tanh",
    # random
    "multinomial", "normal", "rand", "randint", "randn", "uniform",
    # search
    "argmax", "argsort", "masked_fill", "sort", "topk", "where",
]

# Variable's operators (+, -, *, /, %, **, @, unary -, x[...]) call the functions of this
# package by name (x[...] calls slice_op, which is not Paddle API: not in __all__)
_Variable._math_functions = sys.modules[__name__]
# and x.reshape(...), x.sum(), ... call them too: those of Paddle 2.6's tensor_method_func
# that this package has (Paddle patches the same onto its static Variable)
_Variable._methods = frozenset(__all__) - {
    "array_length", "array_read", "array_write", "create_array", "arange", "assign",
    "full", "full_like", "linspace", "ones", "ones_like", "zeros", "zeros_like", "einsum",
    "normal", "rand", "randint", "randn", "uniform"}
