"""fluid.initializer: Paddle 1.8's initializer classes and signatures (`Normal(loc, scale)`,
`Xavier(uniform=True)`, `MSRA(uniform=True)`, `seed=`), over the 2.x ones in
numbaflow.nn.initializer.

>>> w = fluid.ParamAttr(initializer=fluid.initializer.Xavier(uniform=False))
"""
import math

from ..nn import initializer as _init
from ..nn.initializer import (Assign, KaimingNormal, KaimingUniform,  # noqa: F401
                              NumpyArrayInitializer, XavierNormal, XavierUniform, _fans)

__all__ = ["Constant", "Uniform", "Normal", "TruncatedNormal", "Xavier", "MSRA",
           "NumpyArrayInitializer", "ConstantInitializer", "UniformInitializer",
           "NormalInitializer", "TruncatedNormalInitializer", "XavierInitializer",
           "MSRAInitializer", "XavierUniform", "XavierNormal", "KaimingNormal",
           "KaimingUniform", "Assign"]


class Constant(_init.Constant):
    """Every element = value."""

    def __init__(self, value=0.0, force_cpu=False):
        super().__init__(value)


class Uniform(_init.Uniform):
    """U(low, high)."""

    def __init__(self, low=-1.0, high=1.0, seed=0, diag_num=0, diag_step=0, diag_val=1.0):
        if diag_num:
            raise ValueError("Uniform: diag_num/diag_step/diag_val are not supported; leave "
                             "them at 0")
        super().__init__(low, high)
        self.seed = seed


class Normal(_init.Normal):
    """N(loc, scale^2)."""

    def __init__(self, loc=0.0, scale=1.0, seed=0):
        super().__init__(loc, scale)
        self.seed = seed


class TruncatedNormal(_init.TruncatedNormal):
    """N(loc, scale^2) truncated to loc +- 2 scale."""

    def __init__(self, loc=0.0, scale=1.0, seed=0):
        super().__init__(loc, scale)
        self.seed = seed


class Xavier(_init.Initializer):
    """Glorot: U(+-sqrt(6 / (fan_in + fan_out))) or N(0, sqrt(2 / (fan_in + fan_out)))."""

    def __init__(self, uniform=True, fan_in=None, fan_out=None, seed=0):
        self.uniform, self.fan_in, self.fan_out, self.seed = bool(uniform), fan_in, fan_out, seed

    def _init_op(self, var, block):
        fi, fo = _fans(var.shape)
        fan = (self.fan_in or fi) + (self.fan_out or fo)
        if self.uniform:
            limit = math.sqrt(6.0 / fan)
            inner = _init.Uniform(-limit, limit)
        else:
            inner = _init.Normal(0.0, math.sqrt(2.0 / fan))
        inner.seed = self.seed
        return inner._init_op(var, block)


class MSRA(_init.Initializer):
    """He: U(+-sqrt(6 / fan_in)) or N(0, sqrt(2 / fan_in))."""

    def __init__(self, uniform=True, fan_in=None, seed=0):
        self.uniform, self.fan_in, self.seed = bool(uniform), fan_in, seed

    def _init_op(self, var, block):
        fan = self.fan_in or _fans(var.shape)[0]
        if self.uniform:
            limit = math.sqrt(6.0 / fan)
            inner = _init.Uniform(-limit, limit)
        else:
            inner = _init.Normal(0.0, math.sqrt(2.0 / fan))
        inner.seed = self.seed
        return inner._init_op(var, block)


ConstantInitializer, UniformInitializer, NormalInitializer = Constant, Uniform, Normal
TruncatedNormalInitializer, XavierInitializer, MSRAInitializer = TruncatedNormal, Xavier, MSRA
