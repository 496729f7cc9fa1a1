"""fluid.layers' elementwise binary layers (Paddle 1.8's `elementwise_*(x, y, axis, act)`):
y broadcast against x from `axis`, then an optional activation."""
from __future__ import annotations

from ...graph.program import Variable
from ...layer_helper import LayerHelper
from ...tensor._helpers import activation as _activation

__all__ = ["elementwise_add", "elementwise_sub", "elementwise_mul", "elementwise_div",
           "elementwise_max", "elementwise_min", "elementwise_pow", "elementwise_mod"]


def _elementwise(op_type, x, y, axis, act, name):
    for arg, v in (("x", x), ("y", y)):
        if not isinstance(v, Variable):
            raise TypeError(f"{op_type}: {arg} must be a Variable, got {type(v).__name__}")
    if x.dtype != y.dtype:
        raise TypeError(f"{op_type}: x ({x.name}, {x.dtype}) and y ({y.name}, {y.dtype}) must "
                        f"have the same dtype; cast one with fluid.layers.cast")
    out = LayerHelper(op_type, name).simple(op_type, {"X": x, "Y": y}, {"axis": int(axis)})
    return _activation(out, act)


def elementwise_add(x: Variable, y: Variable, axis: int = -1, act: str | None = None,
                    name: str | None = None) -> Variable:
    """x + y (op `elementwise_add`); `y` is broadcast against x's dims starting at `axis`
    (-1: the trailing dims), then the activation `act`.

    Args:
        x (Variable): the first operand.
        y (Variable): the second operand, of x's dtype.
        axis (int): where y's dims align with x's.
        act (str, optional): an activation applied after.
        name (str, optional): a prefix for the output's name.

    Returns:
        Variable: x's shape.

    Example:
        >>> x = fluid.layers.data('x', [3])
        >>> b = fluid.layers.fill_constant([3], 'float32', 1.0)
        >>> fluid.layers.elementwise_add(x, b).shape
        (-1, 3)
    """
    return _elementwise("elementwise_add", x, y, axis, act, name)


def elementwise_sub(x: Variable, y: Variable, axis: int = -1, act: str | None = None,
                    name: str | None = None) -> Variable:
    """x - y (op `elementwise_sub`); `y` is broadcast against x's dims starting at `axis`
    (-1: the trailing dims), then the activation `act`.

    Args:
        x (Variable): the first operand.
        y (Variable): the second operand, of x's dtype.
        axis (int): where y's dims align with x's.
        act (str, optional): an activation applied after.
        name (str, optional): a prefix for the output's name.

    Returns:
        Variable: x's shape.

    Example:
        >>> x = fluid.layers.data('x', [3])
        >>> b = fluid.layers.fill_constant([3], 'float32', 1.0)
        >>> fluid.layers.elementwise_sub(x, b).shape
        (-1, 3)
    """
    return _elementwise("elementwise_sub", x, y, axis, act, name)


def elementwise_mul(x: Variable, y: Variable, axis: int = -1, act: str | None = None,
                    name: str | None = None) -> Variable:
    """x * y (op `elementwise_mul`); `y` is broadcast against x's dims starting at `axis`
    (-1: the trailing dims), then the activation `act`.

    Args:
        x (Variable): the first operand.
        y (Variable): the second operand, of x's dtype.
        axis (int): where y's dims align with x's.
        act (str, optional): an activation applied after.
        name (str, optional): a prefix for the output's name.

    Returns:
        Variable: x's shape.

    Example:
        >>> x = fluid.layers.data('x', [3])
        >>> b = fluid.layers.fill_constant([3], 'float32', 1.0)
        >>> fluid.layers.elementwise_mul(x, b).shape
        (-1, 3)
    """
    return _elementwise("elementwise_mul", x, y, axis, act, name)


def elementwise_div(x: Variable, y: Variable, axis: int = -1, act: str | None = None,
                    name: str | None = None) -> Variable:
    """x / y (op `elementwise_div`); `y` is broadcast against x's dims starting at `axis`
    (-1: the trailing dims), then the activation `act`.

    Args:
        x (Variable): the first operand.
        y (Variable): the second operand, of x's dtype.
        axis (int): where y's dims align with x's.
        act (str, optional): an activation applied after.
        name (str, optional): a prefix for the output's name.

    Returns:
        Variable: x's shape.

    Example:
        >>> x = fluid.layers.data('x', [3])
        >>> b = fluid.layers.fill_constant([3], 'float32', 1.0)
        >>> fluid.layers.elementwise_div(x, b).shape
        (-1, 3)
    """
    return _elementwise("elementwise_div", x, y, axis, act, name)


def _elementwise_doc(fn, formula):
    fn.__doc__ = f"""{formula} elementwise, y broadcast against x from `axis` (op
    {fn.__name__}), then `act`.

    Args:
        x (Variable): the left operand.
        y (Variable): the right operand (x's dtype).
        axis (int): where y's dims start in x's (-1: the trailing dims).
        act (str, optional): an activation applied last.
        name (str, optional): a prefix for the output's name.

    Returns:
        Variable: x's shape.

    Example:
        >>> x = fluid.layers.data('x', [3])
        >>> y = fluid.layers.data('y', [3])
        >>> fluid.layers.{fn.__name__}(x, y).shape
        (-1, 3)
    """
    return fn


def elementwise_max(x: Variable, y: Variable, axis: int = -1, act: str | None = None,
                    name: str | None = None) -> Variable:
    return _elementwise("elementwise_max", x, y, axis, act, name)


def elementwise_min(x: Variable, y: Variable, axis: int = -1, act: str | None = None,
                    name: str | None = None) -> Variable:
    return _elementwise("elementwise_min", x, y, axis, act, name)


def elementwise_pow(x: Variable, y: Variable, axis: int = -1, act: str | None = None,
                    name: str | None = None) -> Variable:
    return _elementwise("elementwise_pow", x, y, axis, act, name)


def elementwise_mod(x: Variable, y: Variable, axis: int = -1, act: str | None = None,
                    name: str | None = None) -> Variable:
    return _elementwise("elementwise_mod", x, y, axis, act, name)


_elementwise_doc(elementwise_max, "max(x, y)")
_elementwise_doc(elementwise_min, "min(x, y)")
_elementwise_doc(elementwise_pow, "x ** y")
_elementwise_doc(elementwise_mod, "x mod y with y's sign (an integer 0 in y: ZeroDivisionError)")
