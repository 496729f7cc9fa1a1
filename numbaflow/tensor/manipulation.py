"""paddle.tensor.manipulation: dtype, shape and layout changes, joins and splits."""
from __future__ import annotations

from typing import TYPE_CHECKING

from .. import dtypes
from ..graph.program import Variable
from ..layer_helper import LayerHelper
from ._helpers import _rank1, _var

if TYPE_CHECKING:
    from collections.abc import Sequence

    from numpy.typing import DTypeLike


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


def _slice_op(op_type, x, attrs):
    """`slice` / `strided_slice` of x with `attrs` (Variable.__getitem__ builds them)."""
    return LayerHelper(op_type).simple(op_type, {"Input": x}, attrs)

