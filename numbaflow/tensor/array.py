"""paddle.tensor.array: tensor arrays (Paddle's LoDTensorArray) as run-time values:
`create_array`, `array_write`, `array_read`, `array_length` (ops `write_to_array`,
`read_from_array`, `lod_array_length`: kernels/tensor/tensor_array.py).

An array is a Variable with `is_tensor_array` set; a `while_loop` body may write it
(how Paddle programs collect per-step outputs) and it keeps its elements across
iterations. Fetching it gives a list of numpy arrays. Limits: its elements have one
shape (the last write's when the program is built), and no gradient flows through it
yet.
"""
from __future__ import annotations

import numbers

from ..graph.program import Variable
from ..layer_helper import LayerHelper

__all__ = ["create_array", "array_write", "array_read", "array_length"]


def _check_array(array, fn):
    if not isinstance(array, Variable) or not array.is_tensor_array:
        raise TypeError(f"{fn}: array must be a tensor array (made by paddle.tensor."
                        f"create_array or array_write), got {array!r}")


def _index(i, fn):
    """The index as an int64 Variable of shape [1] (a Python int becomes a constant)."""
    from .creation import full
    if isinstance(i, numbers.Integral) and not isinstance(i, bool):
        if i < 0:
            raise IndexError(f"{fn}: i must be >= 0, got {i}")
        return full([1], int(i), "int64")
    if not isinstance(i, Variable) or i.dtype.kind not in "iu" or \
            any(d not in (1, -1) for d in i.shape):
        raise TypeError(f"{fn}: i must be an int64 Variable of shape [1] (or a Python int), "
                        f"got {i!r}")
    return i


def create_array(dtype: object = "float32", initialized_list: list | None = None
                 ) -> Variable:
    """An empty tensor array of `dtype` elements (or one holding `initialized_list`).

    Args:
        dtype (str): the element dtype.
        initialized_list (list of Variable, optional): the first elements, written in
            order.

    Returns:
        Variable: the array (`is_tensor_array` is True).

    Example:
        >>> arr = paddle.tensor.create_array('float32')
        >>> n = paddle.tensor.array_length(arr)
        >>> static.Executor(paddle.CPUPlace()).run(fetch_list=[n])[0]
        array([0])
    """
    helper = LayerHelper("array")
    arr = helper.block.create_var(f"{helper.name}.out", (), dtype)
    arr.is_tensor_array = True
    for k, x in enumerate(initialized_list or []):
        array_write(x, k, arr)
    return arr


def array_write(x: Variable, i: Variable | int, array: Variable | None = None) -> Variable:
    """Write a copy of `x` at position `i` of `array` (a new array when None); the array
    grows to hold position i (op `write_to_array`).

    Args:
        x (Variable): the value.
        i (Variable or int): the position, an int64 Variable of shape [1] (computed when
            the program runs) or a Python int.
        array (Variable, optional): the tensor array to write.

    Returns:
        Variable: the array.

    Example:
        >>> tmp = paddle.full([3, 2], 5, 'int64')
        >>> i = paddle.full([1], 10, 'int64')
        >>> arr = paddle.tensor.array_write(tmp, i=i)
        >>> item = paddle.tensor.array_read(arr, i)
        >>> got = static.Executor(paddle.CPUPlace()).run(fetch_list=[item, arr])
        >>> got[0].tolist(), len(got[1])
        ([[5, 5], [5, 5], [5, 5]], 11)
    """
    if not isinstance(x, Variable):
        raise TypeError(f"array_write: x must be a Variable, got {type(x).__name__}")
    if array is None:
        array = create_array(x.dtype)
    _check_array(array, "array_write")
    if array.dtype != x.dtype:
        raise TypeError(f"array_write: x is {x.dtype} but the array holds {array.dtype}; "
                        f"cast x (paddle.cast)")
    helper = LayerHelper("array_write")
    helper.append_op("write_to_array", {"X": x, "I": _index(i, "array_write")},
                     {"Out": array})
    return array


def array_read(array: Variable, i: Variable | int) -> Variable:
    """The element at position `i` of `array` (op `read_from_array`).

    Args:
        array (Variable): the tensor array.
        i (Variable or int): the position, an int64 Variable of shape [1] or a Python int.

    Returns:
        Variable: the element (the shape of the array's elements).

    Raises:
        IndexError: when the program runs, i is outside the array.

    Example:
        >>> arr = paddle.tensor.create_array('float32', [paddle.full([2], 1.0),
        ...                                              paddle.full([2], 2.0)])
        >>> second = paddle.tensor.array_read(arr, 1)
        >>> static.Executor(paddle.CPUPlace()).run(fetch_list=[second])[0]
        array([2., 2.], dtype=float32)
    """
    _check_array(array, "array_read")
    helper = LayerHelper("array_read")
    out = helper.create_tmp(array.dtype)
    helper.append_op("read_from_array", {"X": array, "I": _index(i, "array_read")},
                     {"Out": out})
    return out


def array_length(array: Variable) -> Variable:
    """The number of elements of `array` when the program runs (op `lod_array_length`).

    Args:
        array (Variable): the tensor array.

    Returns:
        Variable: int64 of shape [1]; stop_gradient=True.

    Example:
        >>> arr = paddle.tensor.array_write(paddle.ones([2]), 2)
        >>> n = paddle.tensor.array_length(arr)
        >>> static.Executor(paddle.CPUPlace()).run(fetch_list=[n])[0]
        array([3])
    """
    _check_array(array, "array_length")
    helper = LayerHelper("array_length")
    out = helper.create_tmp("int64", stop_gradient=True)
    helper.append_op("lod_array_length", {"X": array}, {"Out": out})
    return out
