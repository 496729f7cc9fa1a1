"""paddle.tensor.math: elementwise arithmetic, activations, reductions, clip.

Each function validates its arguments and appends one registered op (sometimes two);
Python scalars mix with Variables as in Paddle (`x * 2.0` is a `scale` op).
"""
from __future__ import annotations

import numbers
from typing import TYPE_CHECKING

from .. import dtypes
from ..graph.program import Variable
from ..layer_helper import LayerHelper
from ._helpers import activation as _activation, binary as _binary, check_variable as _var, \
    rank1 as _rank1
from .generator import elementwise, named
from .manipulation import cast

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from numpy.typing import DTypeLike


def scale(x: Variable, scale: float = 1.0, bias: float = 0.0, bias_after_scale: bool = True,
          act: str | None = None, name: str | None = None) -> Variable:
    """scale * x + bias (or scale * (x + bias)), then the activation `act` (op `scale`).

    Args:
        x (Variable): the input.
        scale (float): the factor.
        bias (float): the offset.
        bias_after_scale (bool): add `bias` after scaling (default) or before.
        act (str, optional): an activation name such as 'relu'.
        name (str, optional): a prefix for the output's name.

    Returns:
        Variable: x's shape and dtype.

    Example:
        >>> x = static.data('x', [None, 3])
        >>> paddle.scale(x, scale=2.0, bias=1.0).shape
        (-1, 3)
    """
    out = LayerHelper("scale", name).simple(
        "scale", {"X": _var(x, "scale")},
        {"scale": float(scale), "bias": float(bias), "bias_after_scale": bool(bias_after_scale)})
    return _activation(out, act)


_BINARY_DOC = """{formula}, elementwise with numpy broadcasting (op `{op}`).{numbers}

Args:
    x (Variable or float): the first operand; a Python number becomes a constant.
    y (Variable or float): the second operand, of x's dtype.
    name (str, optional): a prefix for the output's name.

Returns:
    Variable: the broadcast shape of x and y.

Example:
    >>> x = static.data('x', [None, 3])
    >>> b = static.data('b', [3])
    >>> paddle.{fn}(x, b).shape
    (-1, 3)
"""

# function: (op, formula, (scale, bias) of x when y is a number, (scale, bias) of y when x
# is a number, or None where a number goes through the op as a constant)
_BINARY = {
    "add": ("elementwise_add", "x + y", lambda y: (1.0, y), lambda x: (1.0, x)),
    "subtract": ("elementwise_sub", "x - y", lambda y: (1.0, -y), lambda x: (-1.0, x)),
    "multiply": ("elementwise_mul", "x * y", lambda y: (y, 0.0), lambda x: (x, 0.0)),
    "divide": ("elementwise_div", "x / y", lambda y: (1.0 / y, 0.0), None),
    "maximum": ("elementwise_max", "max(x, y)", None, None),
    "minimum": ("elementwise_min", "min(x, y)", None, None),
    "remainder": ("elementwise_mod", "x mod y", None, None),
    "floor_divide": ("elementwise_floordiv", "floor(x / y)", None, None),
}
_NOTES = {
    "remainder": " The result takes y's sign, as Python's % (-7 % 3 = 2, 7 % -3 = -2)\n"
                 "for integers and floats. An integer y holding a 0 raises ZeroDivisionError "
                 "when\nthe program runs; a float one gives NaN. Not differentiable (Paddle has "
                 "no gradient\nfor it either). `paddle.mod`, `paddle.floor_mod` and `x % y` "
                 "are the same.",
    "floor_divide": " Python's //, for integers too: -7 // 2 = -4. An integer y holding\n"
                    "a 0 raises ZeroDivisionError when the program runs. Not differentiable "
                    "(as in Paddle).",
}


def _binary_function(fn: str) -> Callable[..., Variable]:
    op, formula, y_number, x_number = _BINARY[fn]

    def binary(x: Variable | float, y: Variable | float, name: str | None = None) -> Variable:
        if y_number and isinstance(y, numbers.Number) and isinstance(x, Variable):
            return scale(x, *y_number(float(y)), name=name)
        if x_number and isinstance(x, numbers.Number) and isinstance(y, Variable):
            return scale(y, *x_number(float(x)), name=name)
        return _binary(op, x, y, name)
    sides = " A number on either side" if x_number else " A number y" if y_number else ""
    return named(binary, fn, __name__, _BINARY_DOC.format(
        formula=formula, op=op, fn=fn,
        numbers=(sides and sides + " gives a `scale` op.") + _NOTES.get(fn, "")))


add, subtract, multiply, divide, maximum, minimum, remainder, floor_divide = map(
    _binary_function, _BINARY)
mod = floor_mod = remainder



def pow(x: Variable, y: Variable | float, name: str | None = None) -> Variable:
    """x ** y elementwise: op `pow` for a number y, else `elementwise_pow` (broadcasting).

    Args:
        x (Variable): the input.
        y (Variable or float): the exponent.
        name (str, optional): a prefix for the output's name.

    Returns:
        Variable: the broadcast shape of x and y.

    Example:
        >>> x = static.data('x', [None, 3])
        >>> paddle.pow(x, 2.0).shape
        (-1, 3)
    """
    if isinstance(y, numbers.Number) and isinstance(x, Variable):
        return LayerHelper("pow", name).simple("pow", {"X": x}, {"factor": float(y)})
    return _binary("elementwise_pow", x, y, name)


def _reduce(op_type, layer, x, axis, keepdim, name):
    _var(x, layer)
    if axis is None or (isinstance(axis, (list, tuple)) and len(axis) == 0):
        attrs = {"dim": [0], "keep_dim": bool(keepdim), "reduce_all": True}
    else:
        dims = [axis] if isinstance(axis, numbers.Integral) else \
            list(axis) if isinstance(axis, (list, tuple)) else [axis]
        for d in dims:
            if not isinstance(d, numbers.Integral) or isinstance(d, bool):
                raise TypeError(f"{layer}: axis must be an int or a list of ints, got {axis!r}")
        dims = [int(d) for d in dims]
        for d in dims:
            if not -_rank1(x) <= d < _rank1(x):
                raise ValueError(f"{layer}: axis {d} is out of range for {x.name} of shape "
                                 f"{x.shape}")
        attrs = {"dim": dims, "keep_dim": bool(keepdim),
                 "reduce_all": len({d % _rank1(x) for d in dims}) == x.ndim}
    return LayerHelper(layer, name).simple(op_type, {"X": x}, attrs)


_REDUCE_DOC = """{what} over `axis` (op `{op}`); all axes by default, giving a 0-D result.

Args:
    x (Variable): the input.
    axis (int or list of int, optional): the axes to reduce; None for all.
    keepdim (bool): keep the reduced axes with size 1.
    name (str, optional): a prefix for the output's name.

Returns:
    Variable: x's dtype, the reduced shape.

Example:
    >>> x = static.data('x', [None, 3])
    >>> paddle.{fn}(x).shape, paddle.{fn}(x, axis=1).shape
    ((), (-1,))
    >>> paddle.{fn}(x, axis=0, keepdim=True).shape
    (1, 3)
"""


def _reduce_function(fn: str, op: str, what: str) -> Callable[..., Variable]:
    def reduce(x: Variable, axis: int | Sequence[int] | None = None, keepdim: bool = False,
               name: str | None = None) -> Variable:
        return _reduce(op, fn, x, axis, keepdim, name)
    return named(reduce, fn, __name__, _REDUCE_DOC.format(what=what, op=op, fn=fn))


mean, max, min = (_reduce_function(*row) for row in (
    ("mean", "reduce_mean", "Mean"), ("max", "reduce_max", "Maximum"),
    ("min", "reduce_min", "Minimum")))


def sum(x: Variable, axis: int | Sequence[int] | None = None, dtype: DTypeLike | None = None,
        keepdim: bool = False, name: str | None = None) -> Variable:
    """Sum over `axis` (op `reduce_sum`); all axes by default, giving a 0-D result.

    Args:
        x (Variable): the input.
        axis (int or list of int, optional): the axes to reduce; None for all.
        dtype (str or numpy dtype, optional): cast the result to this dtype.
        keepdim (bool): keep the reduced axes with size 1.
        name (str, optional): a prefix for the output's name.

    Returns:
        Variable: x's dtype (int64 for bool and integers narrower than 64 bits, as numpy
        and Paddle), the reduced shape.

    Example:
        >>> x = static.data('x', [None, 3])
        >>> paddle.sum(x).shape, paddle.sum(x, axis=1).shape
        ((), (-1,))
        >>> paddle.sum(x, axis=0, keepdim=True).shape
        (1, 3)
    """
    out = _reduce("reduce_sum", "sum", x, axis, keepdim, name)
    return cast(out, dtype) if dtype is not None and dtypes.convert_dtype(dtype) != out.dtype else out


exp, log, sqrt, square, abs, tanh, rsqrt, erf, sign, sin, cos = (
    elementwise(op, op, f"{op}(x)", __name__, f"paddle.{op}")
    for op in ("exp", "log", "sqrt", "square", "abs", "tanh", "rsqrt", "erf", "sign", "sin",
               "cos"))


def increment(x: Variable, value: float = 1.0, name: str | None = None) -> Variable:
    """x + value written back into x (op `increment`, in place: a loop counter).

    Args:
        x (Variable): a one-element Variable.
        value (float): the step.
        name (str, optional): accepted for Paddle compatibility.

    Returns:
        Variable: x itself.

    Example:
        >>> i = paddle.full([1], 0, 'int64')
        >>> j = paddle.increment(i, 2)
        >>> j is i, static.Executor(paddle.CPUPlace()).run(fetch_list=[i])[0]
        (True, array([2]))
    """
    _var(x, "increment")
    if any(d not in (1, -1) for d in x.shape):
        raise ValueError(f"increment: x must hold one element (shape [1]), got {x.name!r} of "
                         f"shape {list(x.shape)}; use paddle.scale or x + value instead")
    LayerHelper("increment", name).append_op("increment", {"X": x}, {"Out": x},
                                             {"step": float(value)})
    return x


def clip(x: Variable, min: float | None = None, max: float | None = None,
         name: str | None = None) -> Variable:
    """Limit every element of x to [min, max] (op `clip`).

    Args:
        x (Variable): the input.
        min (float, optional): the lower bound; None for none.
        max (float, optional): the upper bound; None for none.
        name (str, optional): a prefix for the output's name.

    Returns:
        Variable: x's shape and dtype.

    Raises:
        ValueError: min > max.

    Example:
        >>> x = static.data('x', [None, 3])
        >>> paddle.clip(x, min=0.0, max=1.0).shape
        (-1, 3)
    """
    lo = float("-inf") if min is None else float(min)
    hi = float("inf") if max is None else float(max)
    if lo > hi:
        raise ValueError(f"clip: min ({lo}) must be <= max ({hi})")
    return LayerHelper("clip", name).simple("clip", {"X": _var(x, "clip")}, {"min": lo, "max": hi})



def cumsum(x: Variable, axis: int | None = None, dtype: DTypeLike | None = None,
           name: str | None = None) -> Variable:
    """Running sum along `axis`, of the flattened x when axis is None (op `cumsum`);
    integers sum exactly in their dtype.

    Args:
        x (Variable): the input.
        axis (int, optional): the axis; None flattens x (a 1-D result).
        dtype (str, optional): cast x to this dtype first.
        name (str, optional): a prefix for the output's name.

    Returns:
        Variable: x's shape (1-D when axis is None).

    Example:
        >>> x = static.data('x', [None, 4])
        >>> paddle.cumsum(x, axis=1).shape
        (-1, 4)
    """
    _var(x, "cumsum")
    if dtype is not None and dtypes.convert_dtype(dtype) != x.dtype:
        x = cast(x, dtype)
    if axis is not None:
        if not isinstance(axis, numbers.Integral) or isinstance(axis, bool):
            raise TypeError(f"cumsum: axis must be an int or None, got {axis!r}")
        if not -_rank1(x) <= axis < _rank1(x):
            raise ValueError(f"cumsum: axis {axis} is out of range for {x.name} of shape "
                             f"{x.shape}")
    return LayerHelper("cumsum", name).simple(
        "cumsum", {"X": x}, {"axis": -1 if axis is None else int(axis),
                             "flatten": axis is None, "exclusive": False, "reverse": False})
