"""paddle.tensor.manipulation: dtype, shape and layout changes, joins and splits."""
from __future__ import annotations

import numbers
from typing import TYPE_CHECKING

from .. import dtypes
from ..graph.program import Variable
from ..layer_helper import LayerHelper
from ._helpers import check_variable as _var, rank1 as _rank1
from .creation import full

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


def slice_op(op_type, x, attrs):
    """`slice` / `strided_slice` of x with `attrs` (Variable.__getitem__ builds them)."""
    return LayerHelper(op_type).simple(op_type, {"Input": x}, attrs)



def _int_list(v, fn, arg):
    if isinstance(v, Variable):
        raise TypeError(f"{fn}: {arg} must be a list of ints in a static graph, got "
                        f"Variable {v.name}")
    vals = [v] if isinstance(v, numbers.Integral) else list(v)
    if not all(isinstance(d, numbers.Integral) and not isinstance(d, bool) for d in vals):
        raise TypeError(f"{fn}: {arg} must be a list of ints, got {v!r}")
    return [int(d) for d in vals]


def expand_as(x: Variable, y: Variable, name: str | None = None) -> Variable:
    """x broadcast to y's shape (op `expand_as_v2`; y's values are not read). The
    gradient sums back down to x's shape.

    Args:
        x (Variable): the input; its dims are 1 or y's.
        y (Variable): gives the shape, rank >= x's.
        name (str, optional): a prefix for the output's name.

    Returns:
        Variable: y's shape, x's dtype.

    Example:
        >>> x = static.data('x', [1, 3])
        >>> y = static.data('y', [None, 3])
        >>> paddle.expand_as(x, y).shape
        (-1, 3)
    """
    _var(x, "expand_as"), _var(y, "expand_as", "y")
    if y.ndim < x.ndim:
        raise ValueError(f"expand_as: y {y.name} {y.shape} must have at least the rank of "
                         f"x {x.name} {x.shape}")
    out = LayerHelper("expand_as", name).simple(
        "expand_as_v2", {"X": x, "Y": y}, {"target_shape": list(y.shape)}, dtype=x.dtype)
    out.stop_gradient = x.stop_gradient
    return out


def expand(x: Variable, shape: Sequence[int], name: str | None = None) -> Variable:
    """x broadcast to `shape` (op `expand_as_v2` against a constant of that shape); -1
    keeps x's dim. The gradient sums back down to x's shape.

    Args:
        x (Variable): the input; its dims are 1 or the target's.
        shape (list of int): the target, rank >= x's.
        name (str, optional): a prefix for the output's name.

    Returns:
        Variable: the expanded tensor.

    Example:
        >>> x = static.data('x', [None, 1])
        >>> paddle.expand(x, [-1, 4]).shape
        (-1, 4)
    """
    _var(x, "expand")
    shape = _int_list(shape, "expand", "shape")
    if len(shape) < x.ndim:
        raise ValueError(f"expand: shape {shape} must have at least the rank of x {x.name} "
                         f"{x.shape}")
    lead = len(shape) - x.ndim
    target = [x.shape[i - lead] if d == -1 and i >= lead else d for i, d in enumerate(shape)]
    if any(d < 1 and d != -1 for d in target) or any(d == -1 for d in target[:lead]):
        raise ValueError(f"expand: shape {shape} must be positive (-1 only where x {x.shape} "
                         f"has a dim to keep)")
    # an unknown dim (x's batch) broadcasts from the constant's 1
    like = full([1 if d == -1 else d for d in target], 0.0, x.dtype)
    return expand_as(x, like, name)


def stack(x: Sequence[Variable], axis: int = 0, name: str | None = None) -> Variable:
    """Join equally shaped Variables along a new axis (`unsqueeze2` each, then `concat`).

    Args:
        x (list of Variable): the inputs, one shape and dtype.
        axis (int): where the new axis goes (-(rank+1) .. rank).
        name (str, optional): a prefix for the output's name.

    Returns:
        Variable: rank + 1, len(x) along `axis`.

    Example:
        >>> a = static.data('a', [None, 3])
        >>> b = static.data('b', [None, 3])
        >>> paddle.stack([a, b], axis=1).shape
        (-1, 2, 3)
    """
    xs = list(x)
    if not xs:
        raise ValueError("stack: needs at least one input")
    for i, v in enumerate(xs):
        _var(v, "stack", f"x[{i}]")
        if v.shape != xs[0].shape or v.dtype != xs[0].dtype:
            raise ValueError(f"stack: x[{i}] {v.name} {v.shape} {v.dtype} must have the shape "
                             f"and dtype of x[0] {xs[0].shape} {xs[0].dtype}")
    r = xs[0].ndim + 1
    if not -r <= axis < r:
        raise ValueError(f"stack: axis {axis} is out of range [{-r}, {r}) for inputs of rank "
                         f"{r - 1}")
    return concat([unsqueeze(v, axis % r) for v in xs], axis % r, name)


def tile(x: Variable, repeat_times: Sequence[int], name: str | None = None) -> Variable:
    """x repeated `repeat_times[i]` times along each dim i (as numpy's tile): built as
    `unsqueeze2` + `expand_as_v2` + `reshape2`, so the gradient sums the copies.

    Args:
        x (Variable): the input; at most one unknown (-1) dim.
        repeat_times (list of int): per dim, >= 1 (shorter lists apply to the last dims).
        name (str, optional): a prefix for the output's name.

    Returns:
        Variable: the tiled tensor.

    Example:
        >>> x = static.data('x', [2, 3])
        >>> paddle.tile(x, [2, 1]).shape
        (4, 3)
    """
    _var(x, "tile")
    reps = _int_list(repeat_times, "tile", "repeat_times")
    if any(r < 1 for r in reps):
        raise ValueError(f"tile: repeat_times {reps} must all be >= 1")
    r = max(len(reps), x.ndim)
    reps = [1] * (r - len(reps)) + reps
    dims = [1] * (r - x.ndim) + list(x.shape)
    if dims.count(-1) > 1:
        raise ValueError(f"tile: x {x.name} {x.shape} may have at most one unknown dim")
    # (d0, d1, ..) -> (1, d0, 1, d1, ..) -> (r0, d0, r1, d1, ..) -> (r0*d0, r1*d1, ..)
    pairs = reshape(x, dims) if r > x.ndim else x
    pairs = unsqueeze(pairs, [2 * i for i in range(r)])
    pairs = expand(pairs, [v for rep in reps for v in (rep, -1)])
    return reshape(pairs, [-1 if d == -1 else d * rep for d, rep in zip(dims, reps)], name)


def _build_time_int(v, fn, arg):
    """The value of `v`, a Variable holding one number made by fill_constant or
    assign_value (paddle.full, paddle.to_tensor, fill_constant, assign): numbaflow fixes
    shapes when the program is built, so a shape-deciding argument must be known then."""
    op = v.block.producer(v)
    values = (None if op is None else [op.attrs["value"]] if op.type == "fill_constant" else
              list(op.attrs.get("values", [])) if op.type == "assign_value" else None)
    if values is None or len(values) != 1:
        raise TypeError(f"{fn}: {arg} {v.name} is a Variable computed when the program runs; "
                        f"numbaflow fixes shapes when the program is built, so {arg} must be "
                        f"an int or a one-number constant (paddle.full([1], n, 'int64'))")
    return int(values[0])


def gather(x: Variable, index: Variable, axis: int | Variable | None = None,
           name: str | None = None) -> Variable:
    """The slices of x at positions `index` along `axis` (op `gather`); differentiable in
    x (repeated positions add up). An index outside [-n, n) raises when the program runs.

    Args:
        x (Variable): the input.
        index (Variable): 1-D (or 0-D, which drops the axis) int32 / int64 positions.
        axis (int or Variable, optional): default 0; a Variable must be a one-number
            constant (paddle.full), read when the program is built.
        name (str, optional): a prefix for the output's name.

    Returns:
        Variable: x's shape with len(index) along `axis`.

    Example:
        >>> x = static.data('x', [None, 5])
        >>> idx = static.data('idx', [3], 'int64')
        >>> paddle.gather(x, idx, axis=1).shape
        (-1, 3)
    """
    _var(x, "gather"), _var(index, "gather", "index")
    if isinstance(axis, Variable):
        axis = _build_time_int(axis, "gather", "axis")
    ax = 0 if axis is None else int(axis)
    if not -_rank1(x) <= ax < _rank1(x):
        raise ValueError(f"gather: axis {axis} is out of range for {x.name} {x.shape}")
    ax %= _rank1(x)
    if index.ndim > 1:
        raise ValueError(f"gather: index {index.name} must be 1-D or 0-D, got {index.shape}")
    idx = reshape(index, [1]) if index.ndim == 0 else index
    out = LayerHelper("gather", name).simple("gather", {"X": x, "Index": idx}, {"axis": ax})
    return squeeze(out, [ax]) if index.ndim == 0 else out


def _broadcast_dim(a, d, arr, indices):
    if a == d or d == 1:
        return a
    if a == 1:
        return d
    if -1 in (a, d):
        return a if d == -1 else d
    raise ValueError(f"take_along_axis: arr {arr.name} {arr.shape} and indices "
                     f"{indices.name} {indices.shape} do not broadcast")


def take_along_axis(arr: Variable, indices: Variable, axis: int,
                    broadcast: bool = True) -> Variable:
    """arr's elements at `indices` along `axis` (op `take_along_axis`, as numpy's);
    differentiable in arr. With broadcast, the other dims of arr and indices broadcast.

    Args:
        arr (Variable): the input.
        indices (Variable): int positions, arr's rank.
        axis (int): the axis to take along.
        broadcast (bool): broadcast the dims other than `axis` first.

    Returns:
        Variable: indices' (broadcast) shape, arr's dtype.

    Example:
        >>> x = static.data('x', [None, 5])
        >>> idx = static.data('idx', [None, 2], 'int64')
        >>> paddle.take_along_axis(x, idx, axis=1).shape
        (-1, 2)
    """
    _var(arr, "take_along_axis", "arr"), _var(indices, "take_along_axis", "indices")
    if arr.ndim != indices.ndim:
        raise ValueError(f"take_along_axis: indices {indices.name} {indices.shape} must have "
                         f"the rank of arr {arr.name} {arr.shape}")
    if not -_rank1(arr) <= axis < _rank1(arr):
        raise ValueError(f"take_along_axis: axis {axis} is out of range for {arr.shape}")
    ax = int(axis) % _rank1(arr)
    if broadcast:
        target = [-1 if i == ax else _broadcast_dim(a, d, arr, indices)
                  for i, (a, d) in enumerate(zip(arr.shape, indices.shape))]
        if any(t != a for i, (t, a) in enumerate(zip(target, arr.shape)) if i != ax):
            arr = expand(arr, target)
        if any(t != d for i, (t, d) in enumerate(zip(target, indices.shape)) if i != ax):
            indices = expand(indices, target)
    out = LayerHelper("take_along_axis").simple(
        "take_along_axis", {"Input": arr, "Index": indices}, {"Axis": ax}, out_slot="Result")
    out.stop_gradient = arr.stop_gradient
    return out
