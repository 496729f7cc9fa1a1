"""Parameter initializers (public as paddle.nn.initializer and, with the 1.x classes of
numbaflow.initializer, fluid.initializer): each appends one init op for a variable to the
startup block. Below every API face: ParamAttr and LayerHelper use them."""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from .kernels.tensor.creation import next_op_seed

if TYPE_CHECKING:
    from .graph.program import Block, Operator, Variable

__all__ = ["Initializer", "Constant", "Uniform", "Normal", "TruncatedNormal", "XavierUniform",
           "XavierNormal", "KaimingNormal", "KaimingUniform", "Assign", "NumpyArrayInitializer",
           # fluid-era names
           "ConstantInitializer", "UniformInitializer", "NormalInitializer",
           "XavierInitializer", "MSRAInitializer"]


class Initializer:
    """Base class: an initializer is called with (var, block) and appends the op that fills
    `var` to `block` (the startup program's). Give one to a layer through `ParamAttr`.

    Example:
        >>> block = static.default_startup_program().global_block()
        >>> w = block.create_var('w', [2, 3], 'float32', persistable=True)
        >>> paddle.nn.initializer.XavierUniform()(w, block).type
        'uniform_random'
    """
    seed = 0     # a fluid initializer's `seed=` (0: the next seed of the global stream)

    def __call__(self, var: Variable, block: Block) -> Operator:
        return self._init_op(var, block)

    def _op_seed(self):
        return int(self.seed) or next_op_seed()

    def _init_op(self, var, block):
        raise NotImplementedError

    def _compute_fans(self, var):
        """(fan_in, fan_out) of a parameter (Paddle's name): rows/columns of a matrix,
        channels times the receptive field of a conv filter."""
        shape = var.shape
        if len(shape) == 0:
            return 1, 1
        if len(shape) == 1:
            return shape[0], shape[0]
        if len(shape) == 2:
            return shape[0], shape[1]
        receptive = int(np.prod(shape[2:]))
        return shape[1] * receptive, shape[0] * receptive


class Constant(Initializer):
    """Fill with `value` (op `fill_constant`).

    Args:
        value (float): the value.

    Example:
        >>> w = paddle.ParamAttr(initializer=paddle.nn.initializer.Constant(0.5))
        >>> x = static.data('x', [None, 3])
        >>> _ = static.nn.fc(x, size=2, weight_attr=w)
        >>> static.default_startup_program().global_block().ops[0].type
        'fill_constant'
    """

    def __init__(self, value: float = 0.0) -> None:
        self.value = float(value)

    def _init_op(self, var, block):
        return block.append_op("fill_constant", outputs={"Out": var},
                               attrs={"shape": list(var.shape), "value": self.value,
                                      "dtype": str(var.dtype)})


class Uniform(Initializer):
    """Uniform in [low, high) (op `uniform_random`).

    Args:
        low (float): the lower bound.
        high (float): the upper bound (> low).
        name (str, optional): accepted for Paddle compatibility.

    Raises:
        ValueError: low >= high.

    Example:
        >>> w = paddle.ParamAttr(initializer=paddle.nn.initializer.Uniform(-0.1, 0.1))
        >>> x = static.data('x', [None, 3])
        >>> _ = static.nn.fc(x, size=2, weight_attr=w)
        >>> static.default_startup_program().global_block().ops[0].type
        'uniform_random'
    """

    def __init__(self, low: float = -1.0, high: float = 1.0, name: str | None = None) -> None:
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
    """Normal with `mean` and `std` (op `gaussian_random`).

    Args:
        mean (float): the mean.
        std (float): the standard deviation.
        name (str, optional): accepted for Paddle compatibility.

    Example:
        >>> w = paddle.ParamAttr(initializer=paddle.nn.initializer.Normal(0.0, 0.02))
        >>> x = static.data('x', [None, 3])
        >>> _ = static.nn.fc(x, size=2, weight_attr=w)
        >>> static.default_startup_program().global_block().ops[0].type
        'gaussian_random'
    """

    op_type = "gaussian_random"

    def __init__(self, mean: float = 0.0, std: float = 1.0, name: str | None = None) -> None:
        self.mean, self.std = float(mean), float(std)

    def _stats(self, var):
        return self.mean, self.std

    def _init_op(self, var, block):
        mean, std = self._stats(var)
        return block.append_op(self.op_type, outputs={"Out": var},
                               attrs={"shape": list(var.shape), "mean": mean, "std": std,
                                      "seed": self._op_seed(), "dtype": str(var.dtype)})


class TruncatedNormal(Normal):
    """Normal with `mean` and `std`, redrawn outside 2 std (op `truncated_gaussian_random`).

    Args:
        mean (float): the mean.
        std (float): the standard deviation.
        name (str, optional): accepted for Paddle compatibility.

    Example:
        >>> w = paddle.ParamAttr(initializer=paddle.nn.initializer.TruncatedNormal(0.0, 0.02))
        >>> x = static.data('x', [None, 3])
        >>> _ = static.nn.fc(x, size=2, weight_attr=w)
        >>> static.default_startup_program().global_block().ops[0].type
        'truncated_gaussian_random'
    """

    op_type = "truncated_gaussian_random"


class XavierUniform(Uniform):
    """U(-l, l), l = sqrt(6 / (fan_in + fan_out)) (Paddle's default weight init).

    Args:
        fan_in (int, optional): default from the variable's shape.
        fan_out (int, optional): default from the variable's shape.
        name (str, optional): accepted for Paddle compatibility.

    Example:
        >>> w = paddle.ParamAttr(initializer=paddle.nn.initializer.XavierUniform())
        >>> x = static.data('x', [None, 3])
        >>> _ = static.nn.fc(x, size=2, weight_attr=w)
        >>> static.default_startup_program().global_block().ops[0].type
        'uniform_random'
    """

    def __init__(self, fan_in: int | None = None, fan_out: int | None = None,
                 name: str | None = None) -> None:
        self.fan_in, self.fan_out = fan_in, fan_out

    def _limits(self, var):
        fi, fo = self._compute_fans(var)
        limit = math.sqrt(6.0 / ((self.fan_in or fi) + (self.fan_out or fo)))
        return -limit, limit


class XavierNormal(Normal):
    """N(0, sqrt(2 / (fan_in + fan_out))).

    Args:
        fan_in (int, optional): default from the variable's shape.
        fan_out (int, optional): default from the variable's shape.
        name (str, optional): accepted for Paddle compatibility.

    Example:
        >>> w = paddle.ParamAttr(initializer=paddle.nn.initializer.XavierNormal())
        >>> x = static.data('x', [None, 3])
        >>> _ = static.nn.fc(x, size=2, weight_attr=w)
        >>> static.default_startup_program().global_block().ops[0].type
        'gaussian_random'
    """

    def __init__(self, fan_in: int | None = None, fan_out: int | None = None,
                 name: str | None = None) -> None:
        self.fan_in, self.fan_out = fan_in, fan_out

    def _stats(self, var):
        fi, fo = self._compute_fans(var)
        return 0.0, math.sqrt(2.0 / ((self.fan_in or fi) + (self.fan_out or fo)))


class _Kaiming:
    """What KaimingNormal and KaimingUniform share: the arguments, the gain and fan_in, and
    the docstring."""

    @staticmethod
    def _doc(summary, name, op):
        return f"""{summary}

    Args:
        fan_in (int, optional): default from the variable's shape.
        negative_slope (float): for nonlinearity='leaky_relu'.
        nonlinearity (str): 'relu', 'leaky_relu', 'tanh', 'sigmoid' or 'linear' (the gain).
        name (str, optional): accepted for Paddle compatibility.

    Example:
        >>> w = paddle.ParamAttr(initializer=paddle.nn.initializer.{name}())
        >>> x = static.data('x', [None, 3])
        >>> _ = static.nn.fc(x, size=2, weight_attr=w)
        >>> static.default_startup_program().global_block().ops[0].type
        '{op}'
    """

    def __init__(self, fan_in: int | None = None, negative_slope: float = 0.0,
                 nonlinearity: str = "relu", name: str | None = None) -> None:
        self.fan_in, self.slope, self.nl = fan_in, negative_slope, nonlinearity

    def _gain_and_fan_in(self, var):
        if self.nl == "leaky_relu":
            gain = math.sqrt(2.0 / (1 + self.slope ** 2))
        else:
            gain = {"relu": math.sqrt(2.0), "tanh": 5.0 / 3, "sigmoid": 1.0, "linear": 1.0}[self.nl]
        return gain, self.fan_in or self._compute_fans(var)[0]


class KaimingNormal(_Kaiming, Normal):
    __doc__ = _Kaiming._doc("N(0, gain / sqrt(fan_in)) (He initialisation).", "KaimingNormal",
                           "gaussian_random")

    def _stats(self, var):
        gain, fan_in = self._gain_and_fan_in(var)
        return 0.0, gain / math.sqrt(fan_in)


class KaimingUniform(_Kaiming, Uniform):
    __doc__ = _Kaiming._doc("U(-l, l), l = gain * sqrt(3 / fan_in) (He initialisation, uniform).",
                           "KaimingUniform", "uniform_random")

    def _limits(self, var):
        gain, fan_in = self._gain_and_fan_in(var)
        limit = gain * math.sqrt(3.0 / fan_in)
        return -limit, limit


class Assign(Initializer):
    """The parameter starts as a copy of `value` (op assign_value).

    Args:
        value (array-like): the values, of the parameter's shape.
        name (str, optional): accepted for Paddle compatibility.

    Example:
        >>> w = paddle.ParamAttr(initializer=paddle.nn.initializer.Assign([[1.0], [2.0]]))
        >>> x = static.data('x', [None, 2])
        >>> static.nn.fc(x, size=1, weight_attr=w).shape
        (-1, 1)
    """

    def __init__(self, value: object, name: str | None = None) -> None:
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
