"""The math functions of the top-level API (paddle.add, paddle.mean, ...).

Each validates its arguments and appends one registered op (sometimes two); Python
scalars mix with Variables as in Paddle (`x * 2.0` is a `scale` op).
"""
from __future__ import annotations

import builtins
import numbers
import sys
from typing import TYPE_CHECKING

import numpy as np

from . import dtypes
from .graph.program import Variable
from .layer_helper import LayerHelper

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from numpy.typing import ArrayLike, DTypeLike


def _var(x, fn, arg="x"):
    if not isinstance(x, Variable):
        raise TypeError(f"{fn}: {arg} must be a Variable, got {type(x).__name__}")
    return x


def _rank1(x):
    """max(rank, 1) (this module defines its own `max`)."""
    return builtins.max(x.ndim, 1)


def _const_like(value, like, helper):
    """A shape-(1,) constant of `like`'s dtype (for scalar-on-the-left arithmetic)."""
    c = helper.create_tmp(like.dtype, stop_gradient=True)
    helper.append_op("fill_constant", outputs={"Out": c},
                     attrs={"shape": [1], "value": float(value), "dtype": str(like.dtype)})
    return c


def _binary(op_type, x, y, name=None):
    helper = LayerHelper(op_type, name)
    if isinstance(x, numbers.Number) and isinstance(y, Variable):
        x = _const_like(x, y, helper)
    elif isinstance(y, numbers.Number) and isinstance(x, Variable):
        y = _const_like(y, x, helper)
    _var(x, op_type, "x"), _var(y, op_type, "y")
    if x.dtype != y.dtype:
        raise TypeError(f"{op_type}: x ({x.name}, {x.dtype}) and y ({y.name}, {y.dtype}) must "
                        f"have the same dtype; cast one with paddle.cast")
    return helper.simple(op_type, {"X": x, "Y": y}, {"axis": -1})


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


def add(x: Variable | float, y: Variable | float, name: str | None = None) -> Variable:
    """x + y, elementwise with numpy broadcasting (op `elementwise_add`). A number on
    either side gives a `scale` op.

    Args:
        x (Variable or float): the first operand; a Python number becomes a constant.
        y (Variable or float): the second operand, of x's dtype.
        name (str, optional): a prefix for the output's name.

    Returns:
        Variable: the broadcast shape of x and y.

    Example:
        >>> x = static.data('x', [None, 3])
        >>> b = static.data('b', [3])
        >>> paddle.add(x, b).shape
        (-1, 3)
    """
    if isinstance(y, numbers.Number) and isinstance(x, Variable):
        return scale(x, 1.0, float(y), name=name)
    if isinstance(x, numbers.Number) and isinstance(y, Variable):
        return scale(y, 1.0, float(x), name=name)
    return _binary("elementwise_add", x, y, name)


def subtract(x: Variable | float, y: Variable | float, name: str | None = None) -> Variable:
    """x - y, elementwise with numpy broadcasting (op `elementwise_sub`). A number on
    either side gives a `scale` op.

    Args:
        x (Variable or float): the first operand; a Python number becomes a constant.
        y (Variable or float): the second operand, of x's dtype.
        name (str, optional): a prefix for the output's name.

    Returns:
        Variable: the broadcast shape of x and y.

    Example:
        >>> x = static.data('x', [None, 3])
        >>> b = static.data('b', [3])
        >>> paddle.subtract(x, b).shape
        (-1, 3)
    """
    if isinstance(y, numbers.Number) and isinstance(x, Variable):
        return scale(x, 1.0, -float(y), name=name)
    if isinstance(x, numbers.Number) and isinstance(y, Variable):
        return scale(y, -1.0, float(x), name=name)
    return _binary("elementwise_sub", x, y, name)


def multiply(x: Variable | float, y: Variable | float, name: str | None = None) -> Variable:
    """x * y, elementwise with numpy broadcasting (op `elementwise_mul`). A number on
    either side gives a `scale` op.

    Args:
        x (Variable or float): the first operand; a Python number becomes a constant.
        y (Variable or float): the second operand, of x's dtype.
        name (str, optional): a prefix for the output's name.

    Returns:
        Variable: the broadcast shape of x and y.

    Example:
        >>> x = static.data('x', [None, 3])
        >>> b = static.data('b', [3])
        >>> paddle.multiply(x, b).shape
        (-1, 3)
    """
    if isinstance(y, numbers.Number) and isinstance(x, Variable):
        return scale(x, float(y), name=name)
    if isinstance(x, numbers.Number) and isinstance(y, Variable):
        return scale(y, float(x), name=name)
    return _binary("elementwise_mul", x, y, name)


def divide(x: Variable | float, y: Variable | float, name: str | None = None) -> Variable:
    """x / y, elementwise with numpy broadcasting (op `elementwise_div`). A number y
    gives a `scale` op.

    Args:
        x (Variable or float): the first operand; a Python number becomes a constant.
        y (Variable or float): the second operand, of x's dtype.
        name (str, optional): a prefix for the output's name.

    Returns:
        Variable: the broadcast shape of x and y.

    Example:
        >>> x = static.data('x', [None, 3])
        >>> b = static.data('b', [3])
        >>> paddle.divide(x, b).shape
        (-1, 3)
    """
    if isinstance(y, numbers.Number) and isinstance(x, Variable):
        return scale(x, 1.0 / float(y), name=name)
    return _binary("elementwise_div", x, y, name)


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


def maximum(x: Variable | float, y: Variable | float, name: str | None = None) -> Variable:
    """max(x, y), elementwise with numpy broadcasting (op `elementwise_max`).

    Args:
        x (Variable or float): the first operand; a Python number becomes a constant.
        y (Variable or float): the second operand, of x's dtype.
        name (str, optional): a prefix for the output's name.

    Returns:
        Variable: the broadcast shape of x and y.

    Example:
        >>> x = static.data('x', [None, 3])
        >>> b = static.data('b', [3])
        >>> paddle.maximum(x, b).shape
        (-1, 3)
    """
    return _binary("elementwise_max", x, y, name)


def minimum(x: Variable | float, y: Variable | float, name: str | None = None) -> Variable:
    """min(x, y), elementwise with numpy broadcasting (op `elementwise_min`).

    Args:
        x (Variable or float): the first operand; a Python number becomes a constant.
        y (Variable or float): the second operand, of x's dtype.
        name (str, optional): a prefix for the output's name.

    Returns:
        Variable: the broadcast shape of x and y.

    Example:
        >>> x = static.data('x', [None, 3])
        >>> b = static.data('b', [3])
        >>> paddle.minimum(x, b).shape
        (-1, 3)
    """
    return _binary("elementwise_min", x, y, name)


def matmul(x: Variable, y: Variable, transpose_x: bool = False, transpose_y: bool = False,
           name: str | None = None) -> Variable:
    """numpy-style matmul (batch dims broadcast) with optional transposes (op `matmul_v2`).

    Args:
        x (Variable): the left operand.
        y (Variable): the right operand, of x's dtype.
        transpose_x (bool): use x's last two dims swapped.
        transpose_y (bool): use y's last two dims swapped.
        name (str, optional): a prefix for the output's name.

    Returns:
        Variable: the product.

    Example:
        >>> x = static.data('x', [None, 3])
        >>> w = static.data('w', [3, 4])
        >>> paddle.matmul(x, w).shape
        (-1, 4)
    """
    _var(x, "matmul", "x"), _var(y, "matmul", "y")
    if x.dtype != y.dtype:
        raise TypeError(f"matmul: x ({x.dtype}) and y ({y.dtype}) must have the same dtype")
    return LayerHelper("matmul_v2", name).simple(
        "matmul_v2", {"X": x, "Y": y}, {"trans_x": bool(transpose_x), "trans_y": bool(transpose_y)})


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


def mean(x: Variable, axis: int | Sequence[int] | None = None, keepdim: bool = False,
         name: str | None = None) -> Variable:
    """Mean over `axis` (op `reduce_mean`); all axes by default, giving a 0-D result.

    Args:
        x (Variable): the input.
        axis (int or list of int, optional): the axes to reduce; None for all.
        keepdim (bool): keep the reduced axes with size 1.
        name (str, optional): a prefix for the output's name.

    Returns:
        Variable: x's dtype, the reduced shape.

    Example:
        >>> x = static.data('x', [None, 3])
        >>> paddle.mean(x).shape, paddle.mean(x, axis=1).shape
        ((), (-1,))
        >>> paddle.mean(x, axis=0, keepdim=True).shape
        (1, 3)
    """
    return _reduce("reduce_mean", "mean", x, axis, keepdim, name)


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


def max(x: Variable, axis: int | Sequence[int] | None = None, keepdim: bool = False,
        name: str | None = None) -> Variable:
    """Maximum over `axis` (op `reduce_max`); all axes by default, giving a 0-D result.

    Args:
        x (Variable): the input.
        axis (int or list of int, optional): the axes to reduce; None for all.
        keepdim (bool): keep the reduced axes with size 1.
        name (str, optional): a prefix for the output's name.

    Returns:
        Variable: x's dtype, the reduced shape.

    Example:
        >>> x = static.data('x', [None, 3])
        >>> paddle.max(x).shape, paddle.max(x, axis=1).shape
        ((), (-1,))
        >>> paddle.max(x, axis=0, keepdim=True).shape
        (1, 3)
    """
    return _reduce("reduce_max", "max", x, axis, keepdim, name)


def min(x: Variable, axis: int | Sequence[int] | None = None, keepdim: bool = False,
        name: str | None = None) -> Variable:
    """Minimum over `axis` (op `reduce_min`); all axes by default, giving a 0-D result.

    Args:
        x (Variable): the input.
        axis (int or list of int, optional): the axes to reduce; None for all.
        keepdim (bool): keep the reduced axes with size 1.
        name (str, optional): a prefix for the output's name.

    Returns:
        Variable: x's dtype, the reduced shape.

    Example:
        >>> x = static.data('x', [None, 3])
        >>> paddle.min(x).shape, paddle.min(x, axis=1).shape
        ((), (-1,))
        >>> paddle.min(x, axis=0, keepdim=True).shape
        (1, 3)
    """
    return _reduce("reduce_min", "min", x, axis, keepdim, name)


_UNARY_DOC = """Elementwise {op} of x (op `{op}`).

Args:
    x (Variable): the input.
    name (str, optional): a prefix for the output's name.

Returns:
    Variable: x's shape and dtype.

Example:
    >>> x = static.data('x', [None, 3])
    >>> paddle.{op}(x).shape
    (-1, 3)
"""


def _unary(op_type: str) -> Callable[..., Variable]:
    def fn(x: Variable, name: str | None = None) -> Variable:
        return LayerHelper(op_type, name).simple(op_type, {"X": _var(x, op_type)})
    fn.__name__ = op_type
    fn.__doc__ = _UNARY_DOC.format(op=op_type)
    return fn


exp, log, sqrt, square, abs, tanh = (_unary(t) for t in ("exp", "log", "sqrt", "square",
                                                           "abs", "tanh"))


_ACTIVATIONS = ("relu", "sigmoid", "tanh", "gelu", "leaky_relu", "softmax", "log_softmax",
                "exp", "sqrt", "square", "abs")


def _activation(x, act, helper=None):
    """Apply activation `act` (a name) to x; with `helper`, the output is named after the
    layer (fc's activation output is `fc_0.tmp_2`, as in Paddle)."""
    if act is None:
        return x
    if act not in _ACTIVATIONS:
        raise ValueError(f"unknown activation {act!r}; use one of {', '.join(_ACTIVATIONS)}")
    return (helper or LayerHelper(act)).simple(act, {"X": x})


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


def cast(x: Variable, dtype: DTypeLike) -> Variable:
    """Convert x to `dtype` (op `cast`).

    Args:
        x (Variable): the input.
        dtype (str or numpy dtype): 'float32', 'float64', 'int32', 'int64' or 'bool'.

    Returns:
        Variable: x's shape, dtype `dtype`.

    Example:
        >>> x = static.data('x', [None, 3])
        >>> paddle.cast(x, 'int64').dtype
        dtype('int64')
    """
    _var(x, "cast")
    dt = dtypes.convert_dtype(dtype)
    return LayerHelper("cast").simple("cast", {"X": x},
                                      {"in_dtype": str(x.dtype), "out_dtype": str(dt)}, dtype=dt)


def assign(x: Variable | ArrayLike, output: Variable | None = None) -> Variable:
    """Copy a Variable (op `assign`), or a numpy array / list as a constant (op `assign_value`;
    float64 data becomes float32), into `output` or a new Variable.

    Args:
        x (Variable or array_like): what to copy.
        output (Variable, optional): the Variable to write; a new one by default.

    Returns:
        Variable: `output`, or the new Variable.

    Example:
        >>> c = paddle.assign(np.array([[1.0, 2.0]]))
        >>> c.shape, c.dtype
        ((1, 2), dtype('float32'))
    """
    helper = LayerHelper("assign")
    if isinstance(x, Variable):
        out = output or helper.create_tmp(x.dtype)
        helper.append_op("assign", {"X": x}, {"Out": out})
        return out
    arr = np.asarray(x)
    if arr.dtype == np.float64:
        arr = arr.astype(np.float32)
    out = output or helper.create_tmp(arr.dtype, stop_gradient=True)
    helper.append_op("assign_value", outputs={"Out": out},
                     attrs={"shape": list(arr.shape), "dtype": str(arr.dtype),
                            "values": arr.reshape(-1).tolist()})
    return out


def full(shape: int | Sequence[int], fill_value: float, dtype: DTypeLike | None = None,
         name: str | None = None) -> Variable:
    """A constant tensor filled with `fill_value` (op `fill_constant`).

    Args:
        shape (int or list of int): the shape.
        fill_value (float): the value of every element.
        dtype (str or numpy dtype, optional): default float32.
        name (str, optional): a prefix for the output's name.

    Returns:
        Variable: the constant (stop_gradient=True).

    Example:
        >>> paddle.full([2, 3], 1.5).shape
        (2, 3)
    """
    dt = dtypes.convert_dtype(dtype or "float32")
    shape = [int(d) for d in (shape if isinstance(shape, (list, tuple)) else [shape])]
    helper = LayerHelper("full", name)
    out = helper.create_tmp(dt, stop_gradient=True)
    helper.append_op("fill_constant", outputs={"Out": out},
                     attrs={"shape": shape, "value": float(fill_value), "dtype": str(dt)})
    return out


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


# ---------------------------------------------------------------- shape ops
def reshape(x: Variable, shape: Sequence[int], name: str | None = None) -> Variable:
    """Reshape x (op `reshape2`); 0 copies the input dim, -1 is inferred (one at most).

    Args:
        x (Variable): the input.
        shape (list of int): the new shape.
        name (str, optional): a prefix for the output's name.

    Returns:
        Variable: x's data in the new shape.

    Example:
        >>> x = static.data('x', [None, 2, 3])
        >>> paddle.reshape(x, [0, 6]).shape
        (-1, 6)
    """
    shape = [int(d) for d in shape]
    if shape.count(-1) > 1:
        raise ValueError(f"reshape: at most one -1 in shape, got {shape}")
    return LayerHelper("reshape2", name).simple("reshape2", {"X": _var(x, "reshape")},
                                                {"shape": shape})


def transpose(x: Variable, perm: Sequence[int], name: str | None = None) -> Variable:
    """Permute the axes of x (op `transpose2`).

    Args:
        x (Variable): the input.
        perm (list of int): output axis i is input axis perm[i].
        name (str, optional): a prefix for the output's name.

    Returns:
        Variable: the permuted tensor.

    Example:
        >>> x = static.data('x', [None, 2, 3])
        >>> paddle.transpose(x, [0, 2, 1]).shape
        (-1, 3, 2)
    """
    _var(x, "transpose")
    perm = [int(p) for p in perm]
    if sorted(p % _rank1(x) for p in perm) != list(range(x.ndim)):
        raise ValueError(f"transpose: perm {perm} is not a permutation of the {x.ndim} axes of "
                         f"{x.name} {x.shape}")
    return LayerHelper("transpose2", name).simple("transpose2", {"X": x}, {"axis": perm})


def concat(x: Sequence[Variable], axis: int = 0, name: str | None = None) -> Variable:
    """Join Variables along `axis` (op `concat`).

    Args:
        x (list of Variable): the inputs, equal in every other dim.
        axis (int): the axis to join along.
        name (str, optional): a prefix for the output's name.

    Returns:
        Variable: the joined tensor.

    Example:
        >>> a = static.data('a', [None, 2])
        >>> b = static.data('b', [None, 3])
        >>> paddle.concat([a, b], axis=1).shape
        (-1, 5)
    """
    xs = list(x)
    if not xs:
        raise ValueError("concat: needs at least one input")
    for i, v in enumerate(xs):
        _var(v, "concat", f"x[{i}]")
    return LayerHelper("concat", name).simple("concat", {"X": xs}, {"axis": int(axis)})


def split(x: Variable, num_or_sections: int | Sequence[int], axis: int = 0,
          name: str | None = None) -> list[Variable]:
    """Split x along `axis` into equal parts or parts of given sizes (op `split`).

    Args:
        x (Variable): the input.
        num_or_sections (int or list of int): the number of equal parts, or each part's size.
        axis (int): the axis to split.
        name (str, optional): a prefix for the output's name.

    Returns:
        list of Variable: the parts.

    Example:
        >>> x = static.data('x', [None, 6])
        >>> [p.shape for p in paddle.split(x, [2, 4], axis=1)]
        [(-1, 2), (-1, 4)]
    """
    _var(x, "split")
    if isinstance(num_or_sections, int):
        attrs, n = {"num": num_or_sections, "sections": [], "axis": int(axis)}, num_or_sections
    else:
        secs = [int(s) for s in num_or_sections]
        attrs, n = {"num": 0, "sections": secs, "axis": int(axis)}, len(secs)
    helper = LayerHelper("split", name)
    outs = [helper.create_tmp(x.dtype) for _ in range(n)]
    helper.append_op("split", {"X": x}, {"Out": outs}, attrs)
    return outs


def flatten(x: Variable, start_axis: int = 0, stop_axis: int = -1,
            name: str | None = None) -> Variable:
    """Merge axes start_axis..stop_axis into one (op `flatten_contiguous_range`).

    Args:
        x (Variable): the input.
        start_axis (int): the first axis merged.
        stop_axis (int): the last axis merged.
        name (str, optional): a prefix for the output's name.

    Returns:
        Variable: the flattened tensor.

    Example:
        >>> x = static.data('x', [None, 2, 3])
        >>> paddle.flatten(x, start_axis=1).shape
        (-1, 6)
    """
    return LayerHelper("flatten_contiguous_range", name).simple(
        "flatten_contiguous_range", {"X": _var(x, "flatten")},
        {"start_axis": int(start_axis), "stop_axis": int(stop_axis)})


def squeeze(x: Variable, axis: int | Sequence[int] | None = None,
            name: str | None = None) -> Variable:
    """Remove size-1 axes (op `squeeze2`): those in `axis`, or all of them.

    Args:
        x (Variable): the input.
        axis (int or list of int, optional): the axes to remove; None for every size-1 axis.
        name (str, optional): a prefix for the output's name.

    Returns:
        Variable: the squeezed tensor.

    Example:
        >>> x = static.data('x', [None, 1, 3])
        >>> paddle.squeeze(x, axis=1).shape
        (-1, 3)
    """
    axes = [] if axis is None else ([axis] if isinstance(axis, int) else list(axis))
    return LayerHelper("squeeze2", name).simple("squeeze2", {"X": _var(x, "squeeze")},
                                                {"axes": axes})


def unsqueeze(x: Variable, axis: int | Sequence[int], name: str | None = None) -> Variable:
    """Insert size-1 axes at `axis` (op `unsqueeze2`).

    Args:
        x (Variable): the input.
        axis (int or list of int): where the new axes go.
        name (str, optional): a prefix for the output's name.

    Returns:
        Variable: the tensor with the new axes.

    Example:
        >>> x = static.data('x', [None, 3])
        >>> paddle.unsqueeze(x, axis=1).shape
        (-1, 1, 3)
    """
    axes = [axis] if isinstance(axis, int) else list(axis)
    return LayerHelper("unsqueeze2", name).simple("unsqueeze2", {"X": _var(x, "unsqueeze")},
                                                  {"axes": axes})


# ---------------------------------------------------------------- creation
def zeros(shape: Sequence[int] | int, dtype: DTypeLike = None, name: str | None = None) -> Variable:
    """A constant Variable of `shape` filled with 0 (op fill_constant).

    Args:
        shape (list of int): the shape.
        dtype (str, optional): default float32.
        name (str, optional): a prefix for the output's name.

    Returns:
        Variable: the constant.

    Example:
        >>> paddle.zeros([2, 3]).shape
        (2, 3)
    """
    return full(shape, 0.0, dtype, name)


def ones(shape: Sequence[int] | int, dtype: DTypeLike = None, name: str | None = None) -> Variable:
    """A constant Variable of `shape` filled with 1 (op fill_constant).

    Args:
        shape (list of int): the shape.
        dtype (str, optional): default float32.
        name (str, optional): a prefix for the output's name.

    Returns:
        Variable: the constant.

    Example:
        >>> str(paddle.ones([2], 'int64').dtype)
        'int64'
    """
    return full(shape, 1.0, dtype, name)


def full_like(x: Variable, fill_value: float, dtype: DTypeLike = None,
              name: str | None = None) -> Variable:
    """A Variable shaped like `x` (batch dim included) filled with `fill_value` (op
    fill_any_like; x's values are not read).

    Args:
        x (Variable): gives the shape.
        fill_value (float): the value.
        dtype (str, optional): default x's dtype.
        name (str, optional): a prefix for the output's name.

    Returns:
        Variable: x's shape.

    Example:
        >>> x = static.data('x', [None, 3])
        >>> paddle.full_like(x, 7.0).shape
        (-1, 3)
    """
    _var(x, "full_like")
    if not isinstance(fill_value, (numbers.Number, bool)):
        raise TypeError(f"full_like: fill_value must be a number, got "
                        f"{type(fill_value).__name__}")
    dt = dtypes.convert_dtype(dtype) if dtype is not None else x.dtype
    return LayerHelper("full_like", name).simple(
        "fill_any_like", {"X": x}, {"value": float(fill_value), "dtype": str(dt)}, dtype=dt)


def zeros_like(x: Variable, dtype: DTypeLike = None, name: str | None = None) -> Variable:
    """Zeros shaped like `x` (see full_like).

    Args:
        x (Variable): gives the shape.
        dtype (str, optional): default x's dtype.
        name (str, optional): a prefix for the output's name.

    Returns:
        Variable: x's shape.

    Example:
        >>> x = static.data('x', [None, 3])
        >>> paddle.zeros_like(x).shape
        (-1, 3)
    """
    return full_like(x, 0.0, dtype, name)


def ones_like(x: Variable, dtype: DTypeLike = None, name: str | None = None) -> Variable:
    """Ones shaped like `x` (see full_like).

    Args:
        x (Variable): gives the shape.
        dtype (str, optional): default x's dtype.
        name (str, optional): a prefix for the output's name.

    Returns:
        Variable: x's shape.

    Example:
        >>> x = static.data('x', [None, 3])
        >>> str(paddle.ones_like(x, 'float64').dtype)
        'float64'
    """
    return full_like(x, 1.0, dtype, name)


def create_parameter(shape: Sequence[int], dtype: DTypeLike, name: str | None = None,
                     attr: object = None, is_bias: bool = False,
                     default_initializer: object = None) -> Variable:
    """A trainable parameter of `shape` in the main program, initialised in the startup
    program (Xavier for weights, 0 for biases unless `default_initializer` or `attr` say).

    Args:
        shape (list of int): fully known.
        dtype (str): the element type.
        name (str, optional): the parameter's name (a name already used shares it).
        attr (ParamAttr, optional): name, initializer, learning rate, trainable.
        is_bias (bool): zero-initialised by default.
        default_initializer (Initializer, optional): used when `attr` gives none.

    Returns:
        Parameter: the new (or shared) parameter.

    Example:
        >>> w = paddle.create_parameter(shape=[784, 10], dtype='float32')
        >>> w.shape, w.persistable
        ((784, 10), True)
    """
    import copy
    from .param_attr import ParamAttr
    shape = [int(d) for d in shape]
    attr = copy.copy(ParamAttr._to_attr(attr))     # the caller's ParamAttr is not changed
    if name is not None and attr.name is None:
        attr.name = name
    helper = LayerHelper("create_parameter")
    return helper.create_parameter(attr, shape, dtypes.convert_dtype(dtype), is_bias,
                                   default_initializer)


def _slice_op(op_type, x, attrs):
    """`slice` / `strided_slice` of x with `attrs` (Variable.__getitem__ builds them)."""
    return LayerHelper(op_type).simple(op_type, {"Input": x}, attrs)


# Variable's operators (+, -, *, /, **, @, unary -) call the functions of this module
Variable._math_functions = sys.modules[__name__]
