"""numbaflow.initializer, public as fluid.initializer: Paddle 1.8's initializer classes and
signatures (`Normal(loc, scale)`, `Xavier(uniform=True)`, `MSRA(uniform=True)`, `seed=`),
over the 2.x ones in numbaflow.param_init (paddle.nn.initializer).

>>> w = fluid.ParamAttr(initializer=fluid.initializer.Xavier(uniform=False))
"""
from __future__ import annotations

import math

from . import param_init as _init
from .param_init import (Assign, KaimingNormal, KaimingUniform,  # noqa: F401
                              NumpyArrayInitializer, XavierNormal, XavierUniform)

__all__ = ["Constant", "Uniform", "Normal", "TruncatedNormal", "Xavier", "MSRA",
           "NumpyArrayInitializer", "ConstantInitializer", "UniformInitializer",
           "NormalInitializer", "TruncatedNormalInitializer", "XavierInitializer",
           "MSRAInitializer", "XavierUniform", "XavierNormal", "KaimingNormal",
           "KaimingUniform", "Assign"]


class Constant(_init.Constant):
    """Every element = value.

    Args:
        value (float): the value.
        force_cpu (bool): accepted for Paddle compatibility.

    Example:
        >>> w = fluid.ParamAttr(initializer=fluid.initializer.Constant(0.5))
        >>> x = fluid.layers.data('x', [4])
        >>> fluid.layers.fc(x, size=2, param_attr=w).shape
        (-1, 2)
    """

    def __init__(self, value: float = 0.0, force_cpu: bool = False) -> None:
        super().__init__(value)


class Uniform(_init.Uniform):
    """Uniform in [low, high).

    Args:
        low (float): the lower bound.
        high (float): the upper bound.
        seed (int): a fixed seed (0: the global stream).
        diag_num (int): must be 0 (diagonal initialisation is not supported).
        diag_step (int): accepted for Paddle compatibility.
        diag_val (float): accepted for Paddle compatibility.

    Example:
        >>> w = fluid.ParamAttr(initializer=fluid.initializer.Uniform(low=-0.1, high=0.1))
        >>> x = fluid.layers.data('x', [4])
        >>> fluid.layers.fc(x, size=2, param_attr=w).shape
        (-1, 2)
    """

    def __init__(self, low: float = -1.0, high: float = 1.0, seed: int = 0, diag_num: int = 0,
                 diag_step: int = 0, diag_val: float = 1.0) -> None:
        if diag_num:
            raise ValueError("Uniform: diag_num/diag_step/diag_val are not supported; leave "
                             "them at 0")
        super().__init__(low, high)
        self.seed = seed


class _Seeded:
    """Normal's and TruncatedNormal's fluid arguments: loc, scale and a seed."""

    def __init__(self, loc: float = 0.0, scale: float = 1.0, seed: int = 0) -> None:
        super().__init__(loc, scale)
        self.seed = seed


class Normal(_Seeded, _init.Normal):
    """Normal with mean `loc` and standard deviation `scale`.

    Args:
        loc (float): the mean.
        scale (float): the standard deviation.
        seed (int): a fixed seed (0: the global stream).

    Example:
        >>> w = fluid.ParamAttr(initializer=fluid.initializer.Normal(loc=0.0, scale=0.02))
        >>> x = fluid.layers.data('x', [4])
        >>> fluid.layers.fc(x, size=2, param_attr=w).shape
        (-1, 2)
    """


class TruncatedNormal(_Seeded, _init.TruncatedNormal):
    """Normal(loc, scale) truncated to loc +- 2 scale.

    Args:
        loc (float): the mean.
        scale (float): the standard deviation.
        seed (int): a fixed seed (0: the global stream).

    Example:
        >>> w = fluid.ParamAttr(initializer=fluid.initializer.TruncatedNormal(scale=0.02))
        >>> x = fluid.layers.data('x', [4])
        >>> fluid.layers.fc(x, size=2, param_attr=w).shape
        (-1, 2)
    """


class Xavier(_init.Initializer):
    """Glorot: U(+-sqrt(6 / (fan_in + fan_out))) or N(0, sqrt(2 / (fan_in + fan_out))).

    Args:
        uniform (bool): the uniform form (else the normal one).
        fan_in (int, optional): default from the parameter's shape.
        fan_out (int, optional): default from the parameter's shape.
        seed (int): a fixed seed (0: the global stream).

    Example:
        >>> w = fluid.ParamAttr(initializer=fluid.initializer.Xavier(uniform=False))
        >>> x = fluid.layers.data('x', [4])
        >>> fluid.layers.fc(x, size=2, param_attr=w).shape
        (-1, 2)
    """

    def __init__(self, uniform: bool = True, fan_in: int | None = None,
                 fan_out: int | None = None, seed: int = 0) -> None:
        self.uniform, self.fan_in, self.fan_out, self.seed = bool(uniform), fan_in, fan_out, seed

    def _init_op(self, var, block):
        fi, fo = self._compute_fans(var)
        return _uniform_or_normal(self, (self.fan_in or fi) + (self.fan_out or fo), var, block)


class MSRA(_init.Initializer):
    """He: U(+-sqrt(6 / fan_in)) or N(0, sqrt(2 / fan_in)).

    Args:
        uniform (bool): the uniform form (else the normal one).
        fan_in (int, optional): default from the parameter's shape.
        seed (int): a fixed seed (0: the global stream).

    Example:
        >>> w = fluid.ParamAttr(initializer=fluid.initializer.MSRA(uniform=False))
        >>> x = fluid.layers.data('x', [4])
        >>> fluid.layers.fc(x, size=2, param_attr=w).shape
        (-1, 2)
    """

    def __init__(self, uniform: bool = True, fan_in: int | None = None,
                 seed: int = 0) -> None:
        self.uniform, self.fan_in, self.seed = bool(uniform), fan_in, seed

    def _init_op(self, var, block):
        return _uniform_or_normal(self, self.fan_in or self._compute_fans(var)[0], var, block)


def _uniform_or_normal(init, fan, var, block):
    """Xavier's and MSRA's op: U(+-sqrt(6 / fan)) or N(0, sqrt(2 / fan)), with init's seed."""
    if init.uniform:
        limit = math.sqrt(6.0 / fan)
        inner = _init.Uniform(-limit, limit)
    else:
        inner = _init.Normal(0.0, math.sqrt(2.0 / fan))
    inner.seed = init.seed
    return inner._init_op(var, block)


ConstantInitializer, UniformInitializer, NormalInitializer = Constant, Uniform, Normal
TruncatedNormalInitializer, XavierInitializer, MSRAInitializer = TruncatedNormal, Xavier, MSRA
