"""Paddle 2's remaining activations (elu, celu, selu, softplus, softsign, mish,
log_sigmoid, tanhshrink, softshrink, hardshrink, thresholded_relu), generated from one
table: each is one op of kernels/math/activation.py with Paddle's op name and attributes. The
in-place spellings (relu_, tanh_, ...) are the out-of-place ops, as Paddle does in static
mode (there is no in-place op in a static graph).
"""
from __future__ import annotations

from .. import tensor as M
from ..graph.program import Variable
from ..layer_helper import LayerHelper
from ..tensor._helpers import check_variable as _var
from ..tensor.generator import elementwise

# (function, op, its formula, [(argument, default, op attribute, check)], Paddle's order)
_POS = ("x >= 0", lambda v: v >= 0)
ACTIVATIONS = [
    ("elu", "elu", "x if x > 0 else alpha * (exp(x) - 1)", [("alpha", 1.0, "alpha", None)]),
    ("celu", "celu", "max(0, x) + min(0, alpha * (exp(x / alpha) - 1))",
     [("alpha", 1.0, "alpha", ("x != 0", lambda v: v != 0))]),
    ("selu", "selu", "scale * (x if x > 0 else alpha * (exp(x) - 1))",
     [("scale", 1.0507009873554804934193349852946, "scale", ("x > 1", lambda v: v > 1.0)),
      ("alpha", 1.6732632423543772848170429916717, "alpha", _POS)]),
    ("softplus", "softplus", "log(1 + exp(beta * x)) / beta, x where beta * x > threshold",
     [("beta", 1.0, "beta", None), ("threshold", 20.0, "threshold", None)]),
    ("softsign", "softsign", "x / (1 + |x|)", []),
    ("mish", "mish", "x * tanh(softplus(x))", []),
    ("log_sigmoid", "logsigmoid", "log(1 / (1 + exp(-x)))", []),
    ("tanhshrink", "tanh_shrink", "x - tanh(x)", []),
    ("softshrink", "softshrink", "x - t if x > t, x + t if x < -t, else 0",
     [("threshold", 0.5, "lambda", _POS)]),
    ("hardshrink", "hard_shrink", "x if |x| > threshold else 0",
     [("threshold", 0.5, "threshold", None)]),
    ("thresholded_relu", "thresholded_relu", "x if x > threshold else 0",
     [("threshold", 1.0, "threshold", None)]),
]
# Paddle's in-place spellings: in static mode Paddle calls the out-of-place function
INPLACE = {"relu_": "relu", "tanh_": "tanh", "softmax_": "softmax", "elu_": "elu",
           "leaky_relu_": "leaky_relu", "hardtanh_": "hardtanh",
           "thresholded_relu_": "thresholded_relu"}


__all__ = []
for _fn, _op, _formula, _args in ACTIVATIONS:
    globals()[_fn] = elementwise(_fn, _op, _formula, "numbaflow.nn.functional", f"F.{_fn}",
                                 _args)
    __all__.append(_fn)


def glu(x: Variable, axis: int = -1, name: str | None = None) -> Variable:
    """Gated linear unit: a * sigmoid(b), where a, b are x's halves along `axis` (ops split,
    sigmoid, elementwise_mul; Paddle's composition).

    Args:
        x (Variable): the input; its `axis` dim must be even.
        axis (int): the dim to halve.
        name (str, optional): a prefix for the output's name.

    Returns:
        Variable: x's shape with the `axis` dim halved.

    Example:
        >>> x = static.data('x', [None, 4])
        >>> F.glu(x).shape
        (-1, 2)
    """
    _var(x, "glu")
    if x.shape[axis] > 0 and x.shape[axis] % 2:
        raise ValueError(f"glu: x {x.name}'s dim {axis} must be even, got shape {x.shape}")
    a, b = M.split(x, 2, axis=axis)
    gate = LayerHelper("sigmoid").simple("sigmoid", {"X": b})
    return M.multiply(a, gate, name=name)


__all__.append("glu")


def maxout(x: Variable, groups: int, axis: int = 1, name: str | None = None) -> Variable:
    """The maximum of each `groups` consecutive channels: out channel i is the max of x's
    channels i * groups .. i * groups + groups - 1 (Paddle's maxout; here a reshape to
    (..., C / groups, groups, ...) and a reduce_max, not Paddle's `maxout` op).

    Args:
        x (Variable): 4-D, NCHW (axis 1) or NHWC (axis -1 or 3).
        groups (int): channels per group; divides C.
        axis (int): the channel dim: 1, 3 or -1.
        name (str, optional): a prefix for the output's name.

    Returns:
        Variable: x's shape with C / groups channels.

    Example:
        >>> x = static.data('x', [None, 4, 3, 3])
        >>> F.maxout(x, groups=2).shape
        (-1, 2, 3, 3)
    """
    _var(x, "maxout")
    if x.ndim != 4 or axis not in (1, 3, -1):
        raise ValueError(f"maxout: x must be 4-D with the channels at axis 1, 3 or -1, got "
                         f"x {x.name} of shape {x.shape} and axis {axis}")
    ax = axis % 4
    channels = x.shape[ax]
    if not isinstance(groups, int) or groups < 1 or channels % groups:
        raise ValueError(f"maxout: groups must be a positive int dividing the {channels} "
                         f"channels of x {x.name}, got {groups!r}")
    # 0 copies x's dims before the channels (the batch dim may be unknown)
    split = [0] * ax + [channels // groups, groups] + list(x.shape[ax + 1:])
    return M.max(M.reshape(x, split), axis=ax + 1, name=name)


__all__.append("maxout")


_PRELU_FORMATS = ("NC", "NCL", "NCHW", "NCDHW", "NLC", "NHWC", "NDHWC")


def prelu(x: Variable, weight: Variable, data_format: str = "NCHW",
          name: str | None = None) -> Variable:
    """max(0, x) + weight * min(0, x) (op `prelu`, as Paddle): one slope for all of x
    (weight of shape [] or [1], mode 'all') or one per channel (shape [C], mode 'channel').

    Args:
        x (Variable): the input, at least 2-D when weight has C > 1 values.
        weight (Variable): the slopes, [], [1] or [C] (C: x's channel dim).
        data_format (str): where the channel dim is: 'NC', 'NCL', 'NCHW', 'NCDHW' (dim 1)
            or 'NLC', 'NHWC', 'NDHWC' (the last).
        name (str, optional): a prefix for the output's name.

    Returns:
        Variable: x's shape and dtype.

    Example:
        >>> x = static.data('x', [None, 3, 4, 4])
        >>> w = static.create_parameter([3], 'float32')
        >>> F.prelu(x, w).shape
        (-1, 3, 4, 4)
    """
    _var(x, "prelu"), _var(weight, "prelu", "weight")
    if data_format not in _PRELU_FORMATS:
        raise ValueError(f"prelu: data_format must be one of {', '.join(_PRELU_FORMATS)}, got "
                         f"{data_format!r}")
    if len(weight.shape) > 1:
        raise ValueError(f"prelu: weight must be 0-D or 1-D, got shape {weight.shape}")
    mode = "all"
    if len(weight.shape) == 1 and weight.shape[0] != 1:
        layout = "NCHW" if data_format[1] == "C" else "NHWC"
        channels = x.shape[1 if layout == "NCHW" else -1] if len(x.shape) > 1 else None
        if channels is None or channels not in (-1, weight.shape[0]):
            raise ValueError(f"prelu: weight of shape {weight.shape} needs x with "
                             f"{weight.shape[0]} channels in dim {1 if layout == 'NCHW' else -1}"
                             f" ({data_format}), got x of shape {x.shape}; give weight [1] for "
                             f"one slope")
        mode, data_format = "channel", layout     # Paddle normalises it only here
    return LayerHelper("prelu", name).simple("prelu", {"X": x, "Alpha": weight},
                                             {"mode": mode, "data_format": data_format})


__all__.append("prelu")


def rrelu(x: Variable, lower: float = 1.0 / 8.0, upper: float = 1.0 / 3.0,
          training: bool = True, name: str | None = None) -> Variable:
    """Randomized leaky ReLU (op `rrelu`, as Paddle): x where x >= 0, else x times a slope
    drawn uniformly from [lower, upper) per element and run in training, or the fixed
    (lower + upper) / 2 when not `training`; the gradient is the same slope.

    Args:
        x (Variable): the input (float32 or float64).
        lower (float): the least slope, in [0, 1].
        upper (float): the greatest slope, in [lower, 1].
        training (bool): random slopes (True) or their mean (False).
        name (str, optional): a prefix for the output's name.

    Returns:
        Variable: x's shape and dtype.

    Raises:
        TypeError: lower or upper is not a float (as Paddle).
        ValueError: not 0 <= lower <= upper <= 1.

    Example:
        >>> x = static.data('x', [None, 3])
        >>> F.rrelu(x, 0.1, 0.3, training=False).shape
        (-1, 3)
    """
    _var(x, "rrelu")
    if not isinstance(lower, float) or not isinstance(upper, float):
        raise TypeError(f"rrelu: lower and upper must be floats (as Paddle), got "
                        f"{lower!r}, {upper!r}; write e.g. 0.0 rather than 0")
    if not 0.0 <= lower <= upper <= 1.0:
        raise ValueError(f"rrelu: needs 0 <= lower <= upper <= 1, got lower {lower}, "
                         f"upper {upper}")
    helper = LayerHelper("rrelu", name)
    out, noise = helper.create_tmp(x.dtype), helper.create_tmp(x.dtype, stop_gradient=True)
    helper.append_op("rrelu", {"X": x}, {"Out": out, "Noise": noise},
                     {"lower": lower, "upper": upper, "is_test": not training})
    return out


__all__.append("rrelu")
