"""fluid.layers' tensor arrays (create_array, array_write, array_read, array_length) for
indices known when the program is built.

Paddle's LoDTensorArray is a run-time list that while-loops index with computed
positions. numbaflow has no control flow in its graphs, so an array here is a build-time
list of Variables: an index must be a Python int or a Variable made by fill_constant
(`fluid.layers.fill_constant([1], 'int64', 3)`, `zeros`, ...), whose value is read from
the op. Anything else raises NotImplementedError saying so.
"""
from __future__ import annotations

import numbers

from ... import tensor as M
from ...graph.program import Variable

__all__ = ["create_array", "array_write", "array_read", "array_length", "cond", "while_loop",
           "case", "switch_case"]


class TensorArray(list):
    """The build-time array: a list of Variables (None where nothing was written)."""

    def __init__(self, dtype: object = "float32") -> None:
        super().__init__()
        self.dtype = dtype


def _position(i, fn):
    if isinstance(i, numbers.Integral) and not isinstance(i, bool):
        return int(i)
    if isinstance(i, Variable):
        op = i.block.producer(i)
        if op is not None and op.type == "fill_constant":
            return int(op.attr("value"))
        if op is not None and op.type == "assign":
            return _position(i.block.var(op.input("X")[0]), fn)
    raise NotImplementedError(
        f"{fn}: the index must be known when the program is built (a Python int or a "
        f"fill_constant Variable); numbaflow has no run-time tensor arrays (while loops). "
        f"Got {i!r}")


def create_array(dtype: object = "float32", initialized_list: list | None = None
                 ) -> TensorArray:
    """An empty tensor array (or one holding `initialized_list`).

    Args:
        dtype (str): the element dtype.
        initialized_list (list of Variable, optional): the first elements.

    Returns:
        TensorArray: a list of Variables.

    Example:
        >>> arr = fluid.layers.create_array('float32')
        >>> len(arr)
        0
    """
    arr = TensorArray(dtype)
    arr.extend(initialized_list or [])
    return arr


def array_write(x: Variable, i: Variable | int, array: TensorArray | None = None
                ) -> TensorArray:
    """Store x at position i of `array` (a new array when None); a copy (op `assign`).

    Args:
        x (Variable): the value.
        i (Variable or int): the position, known at build time.
        array (TensorArray, optional): the array to write.

    Returns:
        TensorArray: the array.

    Example:
        >>> tmp = fluid.layers.fill_constant(shape=[3, 2], dtype='int64', value=5)
        >>> i = fluid.layers.fill_constant(shape=[1], dtype='int64', value=10)
        >>> arr = fluid.layers.array_write(tmp, i=i)
        >>> fluid.layers.array_read(arr, i).shape
        (3, 2)
    """
    if not isinstance(x, Variable):
        raise TypeError(f"array_write: x must be a Variable, got {type(x).__name__}")
    arr = create_array(x.dtype) if array is None else array
    k = _position(i, "array_write")
    arr.extend([None] * (k + 1 - len(arr)))
    arr[k] = M.assign(x)
    return arr


def array_read(array: TensorArray, i: Variable | int) -> Variable:
    """The Variable at position i of `array`.

    Args:
        array (TensorArray): the array.
        i (Variable or int): the position, known at build time.

    Returns:
        Variable: the element.

    Example:
        >>> arr = fluid.layers.array_write(fluid.layers.ones([2], 'float32'), i=0)
        >>> fluid.layers.array_read(arr, 0).shape
        (2,)
    """
    k = _position(i, "array_read")
    if not 0 <= k < len(array) or array[k] is None:
        raise IndexError(f"array_read: nothing was written at position {k} (the array "
                         f"has {len(array)} slots)")
    return array[k]


def array_length(array: TensorArray) -> Variable:
    """The array's length as an int64 Variable of shape [1].

    Args:
        array (TensorArray): the array.

    Returns:
        Variable: the length.

    Example:
        >>> arr = fluid.layers.array_write(fluid.layers.ones([2], 'float32'), i=2)
        >>> str(fluid.layers.array_length(arr).dtype)
        'int64'
    """
    return M.full([1], len(array), "int64")


# Paddle 1.8 / 2.x spell these fluid.layers.*: the same functions as static.nn.*
from ...static.control_flow import case, cond, switch_case, while_loop  # noqa: E402,F401
