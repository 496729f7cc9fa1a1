"""Parameter initializers: each appends one init op for a variable to the startup block."""
import math

import numpy as np

from ..kernels.creation import next_op_seed


def _fans(shape):
    if len(shape) == 0:
        return 1, 1
    if len(shape) == 1:
        return shape[0], shape[0]
    if len(shape) == 2:
        return shape[0], shape[1]
    receptive = int(np.prod(shape[2:]))
    return shape[1] * receptive, shape[0] * receptive


class Initializer:
    seed = 0     # a fluid initializer's `seed=` (0: the next seed of the global stream)

    def __call__(self, var, block):
        return self._init_op(var, block)

    def _op_seed(self):
        return int(self.seed) or next_op_seed()

    def _init_op(self, var, block):
        raise NotImplementedError


class Constant(Initializer):
    def __init__(self, value=0.0):
        self.value = float(value)

    def _init_op(self, var, block):
        return block.append_op("fill_constant", outputs={"Out": var},
                               attrs={"shape": list(var.shape), "value": self.value,
                                      "dtype": str(var.dtype)})


class Uniform(Initializer):
    def __init__(self, low=-1.0, high=1.0, name=None):
        if low >= high:
            raise ValueError(f"Uniform: low ({low}) must be < high ({high})")
        self.low, self.high = float(low), float(high)

    def _limits(self, var):
        return self.low, self.high

    def _init_op(self, var, block):
        lo, hi = self._limits(var)
        return block.append_op("uniform_random", outputs={"Out": var},
                               attrs={"shape": list(var.shape), "min": lo, "max": hi,
                                      "seed": self._op_seed(), "dtype": str(var.dtype)})


class Normal(Initializer):
    op_type = "gaussian_random"

    def __init__(self, mean=0.0, std=1.0, name=None):
        self.mean, self.std = float(mean), float(std)

    def _stats(self, var):
        return self.mean, self.std

    def _init_op(self, var, block):
        mean, std = self._stats(var)
        return block.append_op(self.op_type, outputs={"Out": var},
                               attrs={"shape": list(var.shape), "mean": mean, "std": std,
                                      "seed": self._op_seed(), "dtype": str(var.dtype)})


class TruncatedNormal(Normal):
    op_type = "truncated_gaussian_random"


class XavierUniform(Uniform):
    """U(-l, l), l = sqrt(6 / (fan_in + fan_out)) (Paddle's default weight init)."""

    def __init__(self, fan_in=None, fan_out=None, name=None):
        self.fan_in, self.fan_out = fan_in, fan_out

    def _limits(self, var):
        fi, fo = _fans(var.shape)
        limit = math.sqrt(6.0 / ((self.fan_in or fi) + (self.fan_out or fo)))
        return -limit, limit


class XavierNormal(Normal):
    def __init__(self, fan_in=None, fan_out=None, name=None):
        self.fan_in, self.fan_out = fan_in, fan_out

    def _stats(self, var):
        fi, fo = _fans(var.shape)
        return 0.0, math.sqrt(2.0 / ((self.fan_in or fi) + (self.fan_out or fo)))


def _gain(nonlinearity, negative_slope):
    if nonlinearity == "leaky_relu":
        return math.sqrt(2.0 / (1 + negative_slope ** 2))
    return {"relu": math.sqrt(2.0), "tanh": 5.0 / 3, "sigmoid": 1.0, "linear": 1.0}[nonlinearity]


class KaimingNormal(Normal):
    """N(0, gain / sqrt(fan_in)) (He initialisation)."""

    def __init__(self, fan_in=None, negative_slope=0.0, nonlinearity="relu", name=None):
        self.fan_in, self.slope, self.nl = fan_in, negative_slope, nonlinearity

    def _stats(self, var):
        return 0.0, _gain(self.nl, self.slope) / math.sqrt(self.fan_in or _fans(var.shape)[0])


class KaimingUniform(Uniform):
    def __init__(self, fan_in=None, negative_slope=0.0, nonlinearity="relu", name=None):
        self.fan_in, self.slope, self.nl = fan_in, negative_slope, nonlinearity

    def _limits(self, var):
        limit = _gain(self.nl, self.slope) * math.sqrt(3.0 / (self.fan_in or _fans(var.shape)[0]))
        return -limit, limit


class Assign(Initializer):
    """The parameter starts as a copy of `value` (a numpy array or list; op assign_value)."""

    def __init__(self, value, name=None):
        self.value = np.asarray(value)

    def _init_op(self, var, block):
        if tuple(self.value.shape) != tuple(var.shape):
            raise ValueError(f"Assign initializer: value of shape {self.value.shape} does not "
                             f"match parameter {var.name} of shape {tuple(var.shape)}")
        return block.append_op("assign_value", outputs={"Out": var},
                               attrs={"shape": list(var.shape), "dtype": str(var.dtype),
                                      "values": self.value.astype(var.dtype).reshape(-1).tolist()})


NumpyArrayInitializer = Assign

# fluid-era names
ConstantInitializer, UniformInitializer, NormalInitializer = Constant, Uniform, Normal
XavierInitializer, MSRAInitializer = XavierUniform, KaimingNormal
