"""fluid.layers tensor creation and combination (Paddle 1.8's `layers.tensor` names)."""
from __future__ import annotations

import numbers
from typing import TYPE_CHECKING

from ... import dtypes
from ... import tensor as M
from ...graph.program import Variable
from ...layer_helper import LayerHelper
from ...tensor.creation import create_global_var  # noqa: F401  (its home)
from ...tensor.generator import named
from ...utils import unique_name

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from numpy.typing import DTypeLike

__all__ = ["uniform_random", "zeros", "ones", "zeros_like", "ones_like", "assign", "create_tensor",
           "create_parameter", "create_global_var", "sums"]


_CONSTANT_DOC = """A Variable of `shape` filled with {value} (op fill_constant).

Args:
    shape (list of int): the shape.
    dtype (str): the element type.
    force_cpu (bool): accepted for Paddle compatibility.
    name (str, optional): a prefix for the output's name.

Returns:
    Variable: the constant.

Example:
    >>> fluid.layers.{fn}([2, 3], 'float32').shape
    (2, 3)
"""


def _constant_layer(fn: str, value: int) -> Callable[..., Variable]:
    make = getattr(M, fn)

    def constant(shape: Sequence[int], dtype: DTypeLike, force_cpu: bool = False,
                 name: str | None = None) -> Variable:
        return make(shape, dtype, name)
    return named(constant, fn, __name__, _CONSTANT_DOC.format(fn=fn, value=value))


zeros, ones = _constant_layer("zeros", 0), _constant_layer("ones", 1)


_LIKE_DOC = """{what} shaped like `x` (op fill_any_like), into `out` if given.

Args:
    x (Variable): gives the shape and dtype.
    out (Variable, optional): receives the result.

Returns:
    Variable: x's shape.

Example:
    >>> x = fluid.layers.data('x', [3])
    >>> fluid.layers.{fn}(x).shape
    (-1, 3)
"""


def _like_layer(fn: str, what: str) -> Callable[..., Variable]:
    make = getattr(M, fn)

    def like(x: Variable, out: Variable | None = None) -> Variable:
        return _into(make(x), out)
    return named(like, fn, __name__, _LIKE_DOC.format(fn=fn, what=what))


zeros_like, ones_like = _like_layer("zeros_like", "Zeros"), _like_layer("ones_like", "Ones")


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


# Paddle 1.x's spelling of paddle.uniform: the same function
uniform_random = M.uniform
