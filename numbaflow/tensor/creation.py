"""paddle.tensor.creation: constants, copies, parameters, ranges and triangles."""
from __future__ import annotations

import numbers
from typing import TYPE_CHECKING

import numpy as np

from .. import dtypes
from ..graph.program import Variable, default_startup_program
from ..layer_helper import LayerHelper
from ..utils import unique_name
from ._helpers import check_variable as _var
from .generator import named

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from numpy.typing import ArrayLike, DTypeLike


def assign(x: Variable | ArrayLike, output: Variable | None = None) -> Variable:
    """Copy a Variable (op `assign`), or a numpy array / list as a constant (op `assign_value`;
    float64 data becomes float32), into `output` or a new Variable.

    Args:
        x (Variable or array_like): what to copy.
        output (Variable, optional): the Variable to write; a new one by default.

    Returns:
        Variable: `output`, or the new Variable.

    Example:
        >>> c = paddle.assign(np.array([[1.0, 2.0]]))
        >>> c.shape, c.dtype
        ((1, 2), dtype('float32'))
    """
    helper = LayerHelper("assign")
    if isinstance(x, Variable):
        out = output or helper.create_tmp(x.dtype)
        helper.append_op("assign", {"X": x}, {"Out": out})
        return out
    arr = np.asarray(x)
    if arr.dtype == np.float64:
        arr = arr.astype(np.float32)
    out = output or helper.create_tmp(arr.dtype, stop_gradient=True)
    helper.append_op("assign_value", outputs={"Out": out},
                     attrs={"shape": list(arr.shape), "dtype": str(arr.dtype),
                            "values": arr.reshape(-1).tolist()})
    return out


def full(shape: int | Sequence[int], fill_value: float, dtype: DTypeLike | None = None,
         name: str | None = None) -> Variable:
    """A constant tensor filled with `fill_value` (op `fill_constant`).

    Args:
        shape (int or list of int): the shape.
        fill_value (float): the value of every element.
        dtype (str or numpy dtype, optional): default float32.
        name (str, optional): a prefix for the output's name.

    Returns:
        Variable: the constant (stop_gradient=True).

    Example:
        >>> paddle.full([2, 3], 1.5).shape
        (2, 3)
    """
    dt = dtypes.convert_dtype(dtype or "float32")
    shape = [int(d) for d in (shape if isinstance(shape, (list, tuple)) else [shape])]
    helper = LayerHelper("full", name)
    out = helper.create_tmp(dt, stop_gradient=True)
    helper.append_op("fill_constant", outputs={"Out": out},
                     attrs={"shape": shape, "value": float(fill_value), "dtype": str(dt)})
    return out


_FILLED_DOC = """A constant Variable of `shape` filled with {value} (op fill_constant).

Args:
    shape (list of int): the shape.
    dtype (str, optional): default float32.
    name (str, optional): a prefix for the output's name.

Returns:
    Variable: the constant.

Example:
    >>> paddle.{fn}([2, 3]).shape, str(paddle.{fn}([2], 'int64').dtype)
    ((2, 3), 'int64')
"""


def _filled(fn: str, value: float) -> Callable[..., Variable]:
    def filled(shape: Sequence[int] | int, dtype: DTypeLike = None,
               name: str | None = None) -> Variable:
        return full(shape, value, dtype, name)
    return named(filled, fn, __name__, _FILLED_DOC.format(fn=fn, value=int(value)))


zeros, ones = _filled("zeros", 0.0), _filled("ones", 1.0)


_LIKE_DOC = """{what} shaped like `x` ({how}).

Args:
    x (Variable): gives the shape.
{extra}    dtype (str, optional): default x's dtype.
    name (str, optional): a prefix for the output's name.

Returns:
    Variable: x's shape.

Example:
    >>> x = static.data('x', [None, 3])
    >>> paddle.{fn}(x{value}).shape, str(paddle.{fn}(x{value}, 'float64').dtype)
    ((-1, 3), 'float64')
"""


def full_like(x: Variable, fill_value: float, dtype: DTypeLike = None,
              name: str | None = None) -> Variable:
    _var(x, "full_like")
    if not isinstance(fill_value, (numbers.Number, bool)):
        raise TypeError(f"full_like: fill_value must be a number, got "
                        f"{type(fill_value).__name__}")
    dt = dtypes.convert_dtype(dtype) if dtype is not None else x.dtype
    return LayerHelper("full_like", name).simple(
        "fill_any_like", {"X": x}, {"value": float(fill_value), "dtype": str(dt)}, dtype=dt)


full_like.__doc__ = _LIKE_DOC.format(
    what="A Variable of `fill_value`", how="batch dim included; op fill_any_like, x's values "
    "are not read", fn="full_like", extra="    fill_value (float): the value.\n", value=", 7.0")




def _filled_like(fn: str, value: float, what: str) -> Callable[..., Variable]:
    def filled_like(x: Variable, dtype: DTypeLike = None, name: str | None = None) -> Variable:
        return full_like(x, value, dtype, name)
    return named(filled_like, fn, __name__, _LIKE_DOC.format(
        fn=fn, what=what, how="see full_like", extra="", value=""))


zeros_like, ones_like = _filled_like("zeros_like", 0.0, "Zeros"), _filled_like("ones_like", 1.0,
                                                                                "Ones")


def create_global_var(shape: Sequence[int], value: float, dtype: DTypeLike,
                      persistable: bool = False, force_cpu: bool = False,
                      name: str | None = None) -> Variable:
    """A Variable of the main program filled with `value` by the startup program (a global
    step counter, a fixed learning rate...).

    Args:
        shape (list of int): the shape.
        value (float): the initial value.
        dtype (str): the element type.
        persistable (bool): keep it in the scope between runs.
        force_cpu (bool): accepted for Paddle compatibility.
        name (str, optional): its name (default a fresh one).

    Returns:
        Variable: the variable.

    Example:
        >>> v = fluid.layers.create_global_var([1], 0.5, 'float32', persistable=True)
        >>> v.shape, v.persistable
        ((1,), True)
    """
    if not isinstance(value, numbers.Number):
        raise TypeError(f"create_global_var: value must be a number, got {type(value).__name__}")
    shape = [int(d) for d in shape]
    dt = dtypes.convert_dtype(dtype)
    block = LayerHelper("global_var").global_block    # global even inside a cond
    name = name or unique_name.generate("global_var")
    var = block.create_var(name, shape, dt, persistable=persistable, stop_gradient=True)
    sblock = default_startup_program().global_block()
    svar = sblock.vars.get(name) or sblock.create_var(name, shape, dt, persistable=True)
    sblock.append_op("fill_constant", outputs={"Out": svar},
                     attrs={"shape": shape, "value": float(value), "dtype": str(dt)})
    return var


def create_parameter(shape: Sequence[int], dtype: DTypeLike, name: str | None = None,
                     attr: object = None, is_bias: bool = False,
                     default_initializer: object = None) -> Variable:
    """A trainable parameter of `shape` in the main program, initialised in the startup
    program (Xavier for weights, 0 for biases unless `default_initializer` or `attr` say).

    Args:
        shape (list of int): fully known.
        dtype (str): the element type.
        name (str, optional): the parameter's name (a name already used shares it).
        attr (ParamAttr, optional): name, initializer, learning rate, trainable.
        is_bias (bool): zero-initialised by default.
        default_initializer (Initializer, optional): used when `attr` gives none.

    Returns:
        Parameter: the new (or shared) parameter.

    Example:
        >>> w = paddle.create_parameter(shape=[784, 10], dtype='float32')
        >>> w.shape, w.persistable
        ((784, 10), True)
    """
    import copy
    from ..param_attr import ParamAttr
    shape = [int(d) for d in shape]
    attr = copy.copy(ParamAttr._to_attr(attr))     # the caller's ParamAttr is not changed
    if name is not None and attr.name is None:
        attr.name = name
    helper = LayerHelper("create_parameter")
    return helper.create_parameter(attr, shape, dtypes.convert_dtype(dtype), is_bias,
                                   default_initializer)



def _number(v, fn, arg):
    if isinstance(v, Variable):
        raise TypeError(f"{fn}: {arg} must be a Python number in a static graph (the length "
                        f"of the result is fixed when the program is built), got Variable "
                        f"{v.name}")
    if not isinstance(v, numbers.Number) or isinstance(v, bool):
        raise TypeError(f"{fn}: {arg} must be a number, got {type(v).__name__}")
    return v


def arange(start: float = 0, end: float | None = None, step: float = 1,
           dtype: DTypeLike | None = None, name: str | None = None) -> Variable:
    """start, start + step, ... below end, as numpy's arange (op `range`); with one
    argument, 0 .. start - 1. Integer dtypes count exactly in integers.

    Args:
        start (int or float): the first value (the end when `end` is None).
        end (int or float, optional): the bound, not included.
        step (int or float): the spacing, not 0.
        dtype (str, optional): int64 when start, end and step are ints, else float32.
        name (str, optional): a prefix for the output's name.

    Returns:
        Variable: 1-D, stop_gradient=True.

    Raises:
        ValueError: step is 0.

    Example:
        >>> paddle.arange(5).shape, str(paddle.arange(5).dtype)
        ((5,), 'int64')
        >>> paddle.arange(0.0, 1.0, 0.25).shape
        (4,)
    """
    if end is None:
        start, end = 0, start
    for v, arg in ((start, "start"), (end, "end"), (step, "step")):
        _number(v, "arange", arg)
    if step == 0:
        raise ValueError("arange: step must not be 0")
    if dtype is None:
        ints = all(isinstance(v, numbers.Integral) for v in (start, end, step))
        dtype = "int64" if ints else "float32"
    dt = dtypes.convert_dtype(dtype)
    helper = LayerHelper("arange", name)
    out = helper.create_tmp(dt, stop_gradient=True)
    helper.append_op("range", outputs={"Out": out},
                     attrs={"start": start, "end": end, "step": step, "dtype": str(dt)})
    return out


def linspace(start: float, stop: float, num: int, dtype: DTypeLike | None = None,
             name: str | None = None) -> Variable:
    """`num` evenly spaced values from start to stop, both included (op `linspace`).

    Args:
        start (float): the first value.
        stop (float): the last value.
        num (int): how many, >= 1.
        dtype (str, optional): default float32.
        name (str, optional): a prefix for the output's name.

    Returns:
        Variable: shape (num,), stop_gradient=True.

    Example:
        >>> paddle.linspace(0.0, 1.0, 5).shape
        (5,)
    """
    _number(start, "linspace", "start"), _number(stop, "linspace", "stop")
    if not isinstance(num, numbers.Integral) or num < 1:
        raise ValueError(f"linspace: num must be an int >= 1, got {num!r}")
    dt = dtypes.convert_dtype(dtype or "float32")
    helper = LayerHelper("linspace", name)
    out = helper.create_tmp(dt, stop_gradient=True)
    helper.append_op("linspace", outputs={"Out": out},
                     attrs={"start": float(start), "stop": float(stop), "num": int(num),
                            "dtype": str(dt)})
    return out


_TRIANGLE_DOC = """The {which} triangle of each matrix (last two dims) of x, zeros {other}
(op `tril_triu`): elements with col - row {cmp} diagonal are kept.{note}

Args:
    x (Variable): rank >= 2.
    diagonal (int): 0 the main diagonal, > 0 above it, < 0 below.
    name (str, optional): a prefix for the output's name.

Returns:
    Variable: x's shape and dtype.

Example:
    >>> x = static.data('x', [None, 4, 4])
    >>> paddle.{fn}(x).shape, paddle.{fn}(paddle.ones([3, 3]), diagonal=1).shape
    ((-1, 4, 4), (3, 3))
"""


def _triangle(fn: str, lower: bool) -> Callable[..., Variable]:
    def triangle(x: Variable, diagonal: int = 0, name: str | None = None) -> Variable:
        _var(x, fn)
        if x.ndim < 2:
            raise ValueError(f"{fn}: x must have at least 2 dims, got {x.name} of shape "
                             f"{x.shape}")
        if not isinstance(diagonal, numbers.Integral) or isinstance(diagonal, bool):
            raise TypeError(f"{fn}: diagonal must be an int, got {diagonal!r}")
        return LayerHelper(fn, name).simple("tril_triu", {"X": x},
                                            {"diagonal": int(diagonal), "lower": lower})
    note = "" if lower else " A causal mask is\n`paddle.triu(paddle.full([T, T], -1e9), 1)`."
    return named(triangle, fn, __name__, _TRIANGLE_DOC.format(
        fn=fn, which="lower" if lower else "upper", other="above" if lower else "below",
        cmp="<=" if lower else ">=", note=note))


tril, triu = _triangle("tril", True), _triangle("triu", False)
