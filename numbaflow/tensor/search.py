"""paddle.tensor.search: arg-max, sorting, top-k and selection."""
from __future__ import annotations

import numbers
from typing import TYPE_CHECKING

import numpy as np

from .. import dtypes
from ..graph.program import Variable
from ..layer_helper import LayerHelper
from ._helpers import check_variable as _var
from .creation import full
from ._helpers import const_like as _const_like
from .generator import shared_doc as _shared_doc

if TYPE_CHECKING:
    from numpy.typing import DTypeLike


def argmax(x: Variable, axis: int | None = None, keepdim: bool = False,
           dtype: DTypeLike = "int64", name: str | None = None) -> Variable:
    """Index of the largest element along `axis` (op `arg_max`); of the flattened x if None.

    Args:
        x (Variable): the input.
        axis (int, optional): the axis; None flattens x first.
        keepdim (bool): keep the reduced axis with size 1.
        dtype (str or numpy dtype): int64 (default) or int32.
        name (str, optional): a prefix for the output's name.

    Returns:
        Variable: the indices.

    Example:
        >>> x = static.data('x', [None, 10])
        >>> paddle.argmax(x, axis=1).shape
        (-1,)
    """
    _var(x, "argmax")
    if axis is not None and (not isinstance(axis, numbers.Integral) or isinstance(axis, bool)):
        raise TypeError(f"argmax: axis must be an int or None, got {axis!r}")
    attrs = {"axis": -1 if axis is None else int(axis), "keepdims": bool(keepdim),
             "flatten": axis is None, "dtype": str(dtypes.convert_dtype(dtype))}
    return LayerHelper("arg_max", name).simple("arg_max", {"X": x}, attrs, dtype=attrs["dtype"])



def _axis_of(x, axis, fn):
    if not isinstance(axis, numbers.Integral) or isinstance(axis, bool):
        raise TypeError(f"{fn}: axis must be an int, got {axis!r}")
    if not -max(x.ndim, 1) <= axis < max(x.ndim, 1):
        raise ValueError(f"{fn}: axis {axis} is out of range for {x.name} of shape {x.shape}")
    return int(axis) % max(x.ndim, 1)


# the arguments argsort and sort share, documented once
_SORT_ARGS = """x (Variable): the input.
        axis (int): the axis to sort along.
        descending (bool): largest first.
        name (str, optional): a prefix for the output's name."""


@_shared_doc(sort_args=_SORT_ARGS)
def argsort(x: Variable, axis: int = -1, descending: bool = False,
            name: str | None = None) -> Variable:
    """The positions that sort x along `axis` (op `argsort`, stable: equal values keep
    their order).

    Args:
        {sort_args}

    Returns:
        Variable: int64 indices, x's shape.

    Example:
        >>> x = static.data('x', [None, 5])
        >>> str(paddle.argsort(x, descending=True).dtype)
        'int64'
    """
    return _sort(x, axis, descending, "argsort", name)[1]


@_shared_doc(sort_args=_SORT_ARGS)
def sort(x: Variable, axis: int = -1, descending: bool = False,
         name: str | None = None) -> Variable:
    """x sorted along `axis` (op `argsort`); differentiable (the gradient goes back to
    each value's position).

    Args:
        {sort_args}

    Returns:
        Variable: x's shape and dtype.

    Example:
        >>> x = static.data('x', [None, 5])
        >>> paddle.sort(x).shape
        (-1, 5)
    """
    return _sort(x, axis, descending, "sort", name)[0]


def _sort(x, axis, descending, fn, name):
    _var(x, fn)
    ax = _axis_of(x, axis, fn)
    helper = LayerHelper(fn, name)
    out, idx = helper.create_tmp(x.dtype), helper.create_tmp("int64", stop_gradient=True)
    helper.append_op("argsort", {"X": x}, {"Out": out, "Indices": idx},
                     {"axis": ax, "descending": bool(descending)})
    out.stop_gradient = x.stop_gradient
    return out, idx


def topk(x: Variable, k: int, axis: int | None = None, largest: bool = True,
         sorted: bool = True, name: str | None = None) -> tuple[Variable, Variable]:
    """The k largest (or smallest) values along `axis` and their int64 indices, best
    first; equal values: the lower index first. Op `top_k` for the largest along the last
    axis, else `argsort` + `slice` + `take_along_axis`. Differentiable in the values.

    Args:
        x (Variable): the input.
        k (int): how many, 1 .. the axis' size.
        axis (int, optional): default the last.
        largest (bool): the largest (default) or the smallest.
        sorted (bool): accepted; the result is always sorted.
        name (str, optional): a prefix for the output's name.

    Returns:
        tuple of Variable: (values, indices), x's shape with `k` along `axis`.

    Example:
        >>> x = static.data('x', [None, 10])
        >>> values, indices = paddle.topk(x, k=3)
        >>> values.shape, str(indices.dtype)
        ((-1, 3), 'int64')
    """
    _var(x, "topk")
    ax = _axis_of(x, -1 if axis is None else axis, "topk")
    if not isinstance(k, numbers.Integral) or isinstance(k, bool):
        raise TypeError(f"topk: k must be an int, got {k!r}")
    n = x.shape[ax] if x.ndim else 1
    if k < 1 or (n != -1 and k > n):
        raise ValueError(f"topk: k={k} must be between 1 and {n}, the size of axis {ax} of "
                         f"{x.name} {x.shape}")
    helper = LayerHelper("topk", name)
    if largest and ax == x.ndim - 1:
        values, idx = helper.create_tmp(x.dtype), helper.create_tmp("int64", True)
        helper.append_op("top_k", {"X": x}, {"Out": values, "Indices": idx}, {"k": int(k)})
        values.stop_gradient = x.stop_gradient
        return values, idx
    _, order = _sort(x, ax, largest, "topk", name)
    idx = helper.simple("slice", {"Input": order},
                        {"axes": [ax], "starts": [0], "ends": [int(k)], "decrease_axis": []})
    values = helper.simple("take_along_axis", {"Input": x, "Index": idx}, {"Axis": ax},
                           out_slot="Result")
    values.stop_gradient = x.stop_gradient
    return values, idx


def _operand(v, like, helper, fn, arg):
    """v itself, or a Python number as a shape-(1,) constant of `like`'s dtype (int64 or
    float32, as the number, when both operands are numbers)."""
    if isinstance(v, Variable):
        return v
    if isinstance(v, numbers.Number):
        if like is None:
            return full([1], v, "int64" if isinstance(v, numbers.Integral) else "float32")
        return _const_like(v, like, helper)
    raise TypeError(f"{fn}: {arg} must be a Variable or a number, got {type(v).__name__}")


def where(condition: Variable, x: Variable | float | None = None,
          y: Variable | float | None = None, name: str | None = None) -> Variable:
    """x where `condition` is True, else y, elementwise with numpy broadcasting of all
    three (op `where`). A number for x or y becomes a constant of the other's dtype.

    Args:
        condition (Variable): bool.
        x (Variable or number): taken where condition is True.
        y (Variable or number): taken elsewhere, of x's dtype.
        name (str, optional): a prefix for the output's name.

    Returns:
        Variable: the broadcast shape, x's dtype.

    Raises:
        NotImplementedError: x and y are None (the indices of the True elements have a
            data-dependent shape, which a static graph cannot declare).

    Example:
        >>> x = static.data('x', [None, 3])
        >>> paddle.where(x > 0.0, x, 0.0).shape
        (-1, 3)
    """
    _var(condition, "where", "condition")
    if x is None and y is None:
        raise NotImplementedError(
            "where: with only a condition Paddle returns the indices of its True elements, "
            "whose count depends on the data; a static graph needs fixed shapes. Pass x and "
            "y (e.g. paddle.where(cond, x, paddle.zeros_like(x)))")
    if condition.dtype != np.bool_:
        raise TypeError(f"where: condition must be bool, got {condition.name} of dtype "
                        f"{condition.dtype}; compare first (e.g. x > 0)")
    helper = LayerHelper("where", name)
    like = x if isinstance(x, Variable) else y if isinstance(y, Variable) else None
    x, y = _operand(x, like, helper, "where", "x"), _operand(y, like, helper, "where", "y")
    if x.dtype != y.dtype:
        raise TypeError(f"where: x ({x.dtype}) and y ({y.dtype}) must have the same dtype; "
                        f"cast one with paddle.cast")
    out = helper.simple("where", {"Condition": condition, "X": x, "Y": y}, dtype=x.dtype)
    out.stop_gradient = x.stop_gradient and y.stop_gradient
    return out


def masked_fill(x: Variable, mask: Variable, value: Variable | float,
                name: str | None = None) -> Variable:
    """x with `value` where `mask` is True (mask broadcasts against x): op `where`.

    Args:
        x (Variable): the input.
        mask (Variable): bool.
        value (Variable or number): the fill; a Variable of one element, x's dtype.
        name (str, optional): a prefix for the output's name.

    Returns:
        Variable: the broadcast shape of x and mask, x's dtype.

    Example:
        >>> scores = static.data('scores', [None, 4, 4])
        >>> causal = paddle.triu(paddle.ones([4, 4]), 1) > 0.5
        >>> paddle.masked_fill(scores, causal, -1e9).shape
        (-1, 4, 4)
    """
    _var(x, "masked_fill")
    return where(mask, value, x, name=name)
