"""fluid.layers' elementwise binary layers (Paddle 1.8's `elementwise_*(x, y, axis, act)`):
y broadcast against x from `axis`, then an optional activation."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ...graph.program import Variable
from ...layer_helper import LayerHelper
from ...tensor._helpers import activation as _activation
from ...tensor.generator import named

if TYPE_CHECKING:
    from collections.abc import Callable

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


_DOC = """{formula}, y broadcast against x's dims from `axis` (-1: the trailing dims), then
the activation `act` (op `{op}`).

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
    >>> y = fluid.layers.fill_constant([3], 'float32', 1.0)
    >>> fluid.layers.{op}(x, y).shape
    (-1, 3)
"""


def _layer(op: str, formula: str) -> Callable[..., Variable]:
    def layer(x: Variable, y: Variable, axis: int = -1, act: str | None = None,
              name: str | None = None) -> Variable:
        return _elementwise(op, x, y, axis, act, name)
    return named(layer, op, __name__, _DOC.format(op=op, formula=formula))


(elementwise_add, elementwise_sub, elementwise_mul, elementwise_div, elementwise_max,
 elementwise_min, elementwise_pow, elementwise_mod) = (_layer(*row) for row in (
    ("elementwise_add", "x + y"), ("elementwise_sub", "x - y"), ("elementwise_mul", "x * y"),
    ("elementwise_div", "x / y"), ("elementwise_max", "max(x, y)"),
    ("elementwise_min", "min(x, y)"), ("elementwise_pow", "x ** y"),
    ("elementwise_mod", "x mod y with y's sign (an integer 0 in y: ZeroDivisionError)")))
