"""paddle.tensor.linalg: matrix products."""
from __future__ import annotations

from ..graph.program import Variable
from ..layer_helper import LayerHelper
from ._helpers import _var


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

