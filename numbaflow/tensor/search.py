"""paddle.tensor.search: arg-max, sorting, top-k and selection."""
from __future__ import annotations

import numbers
from typing import TYPE_CHECKING

from .. import dtypes
from ..graph.program import Variable
from ..layer_helper import LayerHelper
from ._helpers import _var

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

