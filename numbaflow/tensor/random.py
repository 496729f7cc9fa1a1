"""paddle.tensor.random: random tensors and sampling.

The random ops carry a `seed` attribute fixed when the op is built (from
`numbaflow.seed(n)`, else fresh entropy), so a seeded program is reproducible.
"""
from __future__ import annotations

import numbers
from typing import TYPE_CHECKING

from .. import dtypes
from ..graph.program import Variable
from ..kernels.tensor.creation import next_op_seed
from ..layer_helper import LayerHelper
from ._helpers import check_variable as _var
from .generator import named

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from numpy.typing import DTypeLike


def _shape(shape, fn):
    dims = [shape] if isinstance(shape, numbers.Integral) else list(shape)
    if not all(isinstance(d, numbers.Integral) and not isinstance(d, bool) and d >= 1
               for d in dims):
        raise ValueError(f"{fn}: shape must be a list of positive ints (random tensors have "
                         f"fully known shapes), got {shape!r}")
    return [int(d) for d in dims]


def _float_dtype(dtype, fn):
    dt = dtypes.convert_dtype(dtype or "float32")
    if dt.kind != "f":
        raise TypeError(f"{fn}: dtype must be float32 or float64, got {dt}")
    return dt


def _draw(op, fn, shape, dtype, attrs, seed, name):
    dt = _float_dtype(dtype, fn)
    helper = LayerHelper(fn, name)
    out = helper.create_tmp(dt, stop_gradient=True)
    helper.append_op(op, outputs={"Out": out},
                     attrs=dict(attrs, shape=_shape(shape, fn), dtype=str(dt),
                                seed=int(seed) or next_op_seed()))
    return out


def uniform(shape: Sequence[int], dtype: DTypeLike | None = None, min: float = -1.0,
            max: float = 1.0, seed: int = 0, name: str | None = None) -> Variable:
    """Floats uniform in [min, max) (op `uniform_random`).

    Args:
        shape (list of int): fully known.
        dtype (str, optional): float32 (default) or float64.
        min (float): the lower bound.
        max (float): the upper bound.
        seed (int): 0 derives one from `paddle.seed`.
        name (str, optional): a prefix for the output's name.

    Returns:
        Variable: the draws, stop_gradient=True.

    Example:
        >>> paddle.uniform([2, 3], min=0.0, max=1.0).shape
        (2, 3)
    """
    if not min < max:
        raise ValueError(f"uniform: min ({min}) must be < max ({max})")
    return _draw("uniform_random", "uniform", shape, dtype,
                 {"min": float(min), "max": float(max)}, seed, name)


_STANDARD_DOC = """{what} floats (op `{op}`).

Args:
    shape (list of int): fully known.
    dtype (str, optional): float32 (default) or float64.
    name (str, optional): a prefix for the output's name.

Returns:
    Variable: the draws, stop_gradient=True.

Example:
    >>> paddle.{fn}([2, 3]).shape
    (2, 3)
"""


def _standard(fn: str, op: str, attrs: dict, what: str) -> Callable[..., Variable]:
    def draws(shape: Sequence[int], dtype: DTypeLike | None = None,
              name: str | None = None) -> Variable:
        return _draw(op, fn, shape, dtype, dict(attrs), 0, name)
    return named(draws, fn, __name__, _STANDARD_DOC.format(fn=fn, op=op, what=what))


rand = _standard("rand", "uniform_random", {"min": 0.0, "max": 1.0}, "Uniform [0, 1)")
randn = _standard("randn", "gaussian_random", {"mean": 0.0, "std": 1.0}, "Standard normal")


def randint(low: int = 0, high: int | None = None, shape: Sequence[int] = (1,),
            dtype: DTypeLike | None = None, name: str | None = None) -> Variable:
    """Integers uniform in [low, high) (op `randint`); with high None, in [0, low).

    Args:
        low (int): the least value (the bound when high is None).
        high (int, optional): the bound, not included.
        shape (list of int): fully known.
        dtype (str, optional): int64 (default) or int32.
        name (str, optional): a prefix for the output's name.

    Returns:
        Variable: the draws, stop_gradient=True.

    Example:
        >>> x = paddle.randint(0, 10, [2, 3])
        >>> x.shape, str(x.dtype)
        ((2, 3), 'int64')
    """
    low, high = (0, low) if high is None else (low, high)
    if not all(isinstance(v, numbers.Integral) for v in (low, high)) or not low < high:
        raise ValueError(f"randint: needs ints low < high, got low={low!r}, high={high!r}")
    dt = dtypes.convert_dtype(dtype or "int64")
    if dt not in (dtypes.convert_dtype("int32"), dtypes.convert_dtype("int64")):
        raise TypeError(f"randint: dtype must be int32 or int64, got {dt}")
    helper = LayerHelper("randint", name)
    out = helper.create_tmp(dt, stop_gradient=True)
    helper.append_op("randint", outputs={"Out": out},
                     attrs={"low": int(low), "high": int(high), "shape": _shape(shape, "randint"),
                            "dtype": str(dt), "seed": next_op_seed()})
    return out


def normal(mean: float = 0.0, std: float = 1.0, shape: Sequence[int] | None = None,
           name: str | None = None) -> Variable:
    """Normal(mean, std) floats (op `gaussian_random`), float32.

    Args:
        mean (float): the mean (a Python number in a static graph).
        std (float): the standard deviation, >= 0.
        shape (list of int): fully known.
        name (str, optional): a prefix for the output's name.

    Returns:
        Variable: the draws, stop_gradient=True.

    Example:
        >>> paddle.normal(0.0, 2.0, [3]).shape
        (3,)
    """
    if isinstance(mean, Variable) or isinstance(std, Variable):
        raise TypeError("normal: mean and std must be Python numbers in a static graph; "
                        "for per-element parameters use mean + std * paddle.randn(shape)")
    if shape is None:
        raise ValueError("normal: pass shape (a list of ints)")
    if std < 0:
        raise ValueError(f"normal: std must be >= 0, got {std}")
    return _draw("gaussian_random", "normal", shape, None,
                 {"mean": float(mean), "std": float(std)}, 0, name)


def multinomial(x: Variable, num_samples: int = 1, replacement: bool = False,
                name: str | None = None) -> Variable:
    """Category indices drawn with probabilities proportional to the rows of x (op
    `multinomial`). Each run draws anew; `paddle.seed(n)` before building makes the
    sequence reproducible. A row with a negative weight or a zero sum raises.

    Args:
        x (Variable): float weights >= 0, 1-D or 2-D (one distribution per row).
        num_samples (int): draws per row.
        replacement (bool): draw with replacement (else at most the row's categories).
        name (str, optional): a prefix for the output's name.

    Returns:
        Variable: int64, x's shape with num_samples as the last dim.

    Example:
        >>> probs = static.data('probs', [None, 10])
        >>> paddle.multinomial(probs, num_samples=2).shape
        (-1, 2)
    """
    _var(x, "multinomial")
    if not isinstance(num_samples, numbers.Integral) or num_samples < 1:
        raise ValueError(f"multinomial: num_samples must be an int >= 1, got {num_samples!r}")
    helper = LayerHelper("multinomial", name)
    out = helper.create_tmp("int64", stop_gradient=True)
    helper.append_op("multinomial", {"X": x}, {"Out": out},
                     {"num_samples": int(num_samples), "replacement": bool(replacement),
                      "seed": next_op_seed()})
    return out
