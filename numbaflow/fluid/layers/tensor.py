"""fluid.layers tensor creation and combination (Paddle 1.8's `layers.tensor` names)."""
from __future__ import annotations

import numbers
from typing import TYPE_CHECKING

from ... import dtypes
from ... import tensor as M
from ...graph.program import Variable
from ...layer_helper import LayerHelper
from ...tensor.creation import create_global_var  # noqa: F401  (its home)
from ...utils import unique_name

if TYPE_CHECKING:
    from collections.abc import Sequence

    from numpy.typing import DTypeLike

__all__ = ["uniform_random", "zeros", "ones", "zeros_like", "ones_like", "assign", "create_tensor",
           "create_parameter", "create_global_var", "sums"]


def zeros(shape: Sequence[int], dtype: DTypeLike, force_cpu: bool = False,
          name: str | None = None) -> Variable:
    """A Variable of `shape` filled with 0 (op fill_constant).

    Args:
        shape (list of int): the shape.
        dtype (str): the element type.
        force_cpu (bool): accepted for Paddle compatibility.
        name (str, optional): a prefix for the output's name.

    Returns:
        Variable: the constant.

    Example:
        >>> fluid.layers.zeros([2, 3], 'float32').shape
        (2, 3)
    """
    return M.zeros(shape, dtype, name)


def ones(shape: Sequence[int], dtype: DTypeLike, force_cpu: bool = False,
         name: str | None = None) -> Variable:
    """A Variable of `shape` filled with 1 (op fill_constant).

    Args:
        shape (list of int): the shape.
        dtype (str): the element type.
        force_cpu (bool): accepted for Paddle compatibility.
        name (str, optional): a prefix for the output's name.

    Returns:
        Variable: the constant.

    Example:
        >>> fluid.layers.ones([2], 'int64').shape
        (2,)
    """
    return M.ones(shape, dtype, name)


def zeros_like(x: Variable, out: Variable | None = None) -> Variable:
    """Zeros shaped like `x` (op fill_any_like), into `out` if given.

    Args:
        x (Variable): gives the shape and dtype.
        out (Variable, optional): receives the result.

    Returns:
        Variable: x's shape.

    Example:
        >>> x = fluid.layers.data('x', [3])
        >>> fluid.layers.zeros_like(x).shape
        (-1, 3)
    """
    return _into(M.zeros_like(x), out)


def ones_like(x: Variable, out: Variable | None = None) -> Variable:
    """Ones shaped like `x` (op fill_any_like), into `out` if given.

    Args:
        x (Variable): gives the shape and dtype.
        out (Variable, optional): receives the result.

    Returns:
        Variable: x's shape.

    Example:
        >>> x = fluid.layers.data('x', [3])
        >>> fluid.layers.ones_like(x).shape
        (-1, 3)
    """
    return _into(M.ones_like(x), out)


def _into(v, out):
    if out is None:
        return v
    return M.assign(v, out)


def assign(input: Variable | object, output: Variable | None = None) -> Variable:
    """Copy a Variable, or a numpy array / list as a constant, into `output` (or a new var).

    Args:
        input (Variable or array-like): what to copy.
        output (Variable, optional): receives the copy.

    Returns:
        Variable: the copy.

    Example:
        >>> fluid.layers.assign(np.array([1, 2, 3], 'int64')).shape
        (3,)
    """
    return M.assign(input, output)


def create_tensor(dtype: DTypeLike, name: str | None = None,
                  persistable: bool = False) -> Variable:
    """An empty Variable of `dtype` to be written by a later op (e.g. `assign(x, t)`).

    Args:
        dtype (str): the element type.
        name (str, optional): its name (default a fresh one).
        persistable (bool): keep it in the scope between runs.

    Returns:
        Variable: shape () until an op writes it.

    Example:
        >>> t = fluid.layers.create_tensor('float32')
        >>> x = fluid.layers.data('x', [3])
        >>> fluid.layers.assign(x, t).shape
        (-1, 3)
    """
    block = LayerHelper("create_tensor").block
    name = name or unique_name.generate("create_tensor.tmp")
    return block.create_var(name, (), dtypes.convert_dtype(dtype), persistable=persistable)


def create_parameter(shape: Sequence[int], dtype: DTypeLike, name: str | None = None,
                     attr: object = None, is_bias: bool = False,
                     default_initializer: object = None) -> Variable:
    """A trainable parameter (see paddle.create_parameter).

    Args:
        shape (list of int): fully known.
        dtype (str): the element type.
        name (str, optional): its name (a name already used shares that parameter).
        attr (ParamAttr, optional): name, initializer, learning rate, trainable.
        is_bias (bool): zero-initialised by default.
        default_initializer (Initializer, optional): used when `attr` gives none.

    Returns:
        Parameter: the parameter.

    Example:
        >>> fluid.layers.create_parameter([3, 4], 'float32', name='w').name
        'w'
    """
    return M.create_parameter(shape, dtype, name, attr, is_bias, default_initializer)


def sums(input: Sequence[Variable] | Variable, out: Variable | None = None) -> Variable:
    """The elementwise sum of a list of Variables of one shape (op sum).

    Args:
        input (list of Variable): the addends.
        out (Variable, optional): receives the sum.

    Returns:
        Variable: the sum.

    Example:
        >>> x = fluid.layers.data('x', [3])
        >>> fluid.layers.sums([x, x, x]).shape
        (-1, 3)
    """
    xs = list(input) if isinstance(input, (list, tuple)) else [input]
    for i, v in enumerate(xs):
        if not isinstance(v, Variable):
            raise TypeError(f"sums: input[{i}] must be a Variable, got {type(v).__name__}")
    helper = LayerHelper("sum")
    if out is None:
        return helper.simple("sum", {"X": xs})
    helper.append_op("sum", {"X": xs}, {"Out": out})
    return out


def uniform_random(shape: Sequence[int], dtype: DTypeLike = "float32", min: float = -1.0,
                   max: float = 1.0, seed: int = 0, name: str | None = None) -> Variable:
    """Paddle 1.x's spelling of `paddle.uniform` (op `uniform_random`): floats uniform in
    [min, max).

    Args:
        shape (list of int): fully known.
        dtype (str): float32 (default) or float64.
        min (float): the lower bound.
        max (float): the upper bound.
        seed (int): 0 derives one from `paddle.seed`.
        name (str, optional): a prefix for the output's name.

    Returns:
        Variable: the draws, stop_gradient=True.

    Example:
        >>> fluid.layers.uniform_random([2, 3], min=0.0, max=1.0).shape
        (2, 3)
    """
    return M.uniform(shape, dtype, min, max, seed, name)
