"""numbaflow.nn.functional: activations, losses, conv, pooling, batch norm, dropout and
embedding without parameters of their own (Paddle 2.x signatures).

>>> import numbaflow.nn.functional as F
>>> x = static.data('x', [None, 10])
>>> F.softmax(F.relu(x)).shape
(-1, 10)
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from .. import tensor as M
from ..graph.program import Variable
from ..layer_helper import LayerHelper
from ..tensor.generator import elementwise as _elementwise, named as _named
from ..tensor.generator import shared_doc as _shared_doc
from .functional_loss import REDUCED_DOC as _REDUCED_DOC

if TYPE_CHECKING:
    from numpy.typing import DTypeLike

__all__ = ["relu", "sigmoid", "tanh", "gelu", "leaky_relu", "softmax", "log_softmax",
           "softmax_with_cross_entropy", "cross_entropy", "square_error_cost", "mse_loss",
           "conv2d", "max_pool2d", "avg_pool2d", "batch_norm", "dropout", "embedding",
           "adaptive_avg_pool2d", "label_smooth", "layer_norm", "linear", "normalize",
           "one_hot", "pad", "relu6", "scaled_dot_product_attention", "silu",
           "adaptive_max_pool2d", "adaptive_avg_pool1d", "adaptive_max_pool1d",
           "conv2d_transpose", "conv1d", "conv1d_transpose", "interpolate", "upsample",
           "group_norm", "instance_norm", "hardswish", "hardsigmoid", "swish", "hardtanh",
           "max_pool1d", "avg_pool1d", "dropout2d", "dropout3d", "zeropad2d", "pixel_shuffle",
           "pixel_unshuffle", "channel_shuffle", "unfold"]


def _var(x, fn, arg="x"):
    if not isinstance(x, Variable):
        raise TypeError(f"{fn}: {arg} must be a Variable, got {type(x).__name__}")
    return x


def _act(op_type, x, name=None, **attrs):
    return LayerHelper(op_type, name).simple(op_type, {"X": _var(x, op_type)}, attrs or None)


def gelu(x: Variable, approximate: bool = False, name: str | None = None) -> Variable:
    """x * Phi(x) elementwise (the tanh approximation with approximate=True) (op `gelu`).

    Args:
        x (Variable): the input.
        approximate (bool): use the tanh approximation.
        name (str, optional): a prefix for the output's name.

    Returns:
        Variable: x's shape and dtype.

    Example:
        >>> x = static.data('x', [None, 3])
        >>> F.gelu(x, approximate=True).shape
        (-1, 3)
    """
    return _act("gelu", x, name, approximate=bool(approximate))


# the activations that are one op without arguments (their functions and docstrings
# generated from the rows: tensor/generator.py)
relu, sigmoid, tanh, swish, silu = (
    _elementwise(fn, fn, formula, __name__, f"F.{fn}") for fn, formula in (
        ("relu", "max(x, 0)"), ("sigmoid", "1 / (1 + exp(-x))"), ("tanh", "tanh(x)"),
        ("swish", "x * sigmoid(x) (the same values as silu)"), ("silu", "x * sigmoid(x)")))
relu6 = _elementwise("relu6", "relu6", "min(max(x, 0), 6)", __name__, "F.relu6",
                    fixed={"threshold": 6.0})


def leaky_relu(x: Variable, negative_slope: float = 0.01, name: str | None = None) -> Variable:
    """x if x > 0 else negative_slope * x, elementwise (op `leaky_relu`).

    Args:
        x (Variable): the input.
        negative_slope (float): the slope for x < 0.
        name (str, optional): a prefix for the output's name.

    Returns:
        Variable: x's shape and dtype.

    Example:
        >>> x = static.data('x', [None, 3])
        >>> F.leaky_relu(x, 0.1).shape
        (-1, 3)
    """
    return _act("leaky_relu", x, name, alpha=float(negative_slope))


_SOFTMAX_DOC = """{formula} along `axis` (op `{op}`).

Args:
    x (Variable): the input.
    axis (int): the axis normalised over.
    dtype (str or numpy dtype, optional): cast x to it first.
    name (str, optional): a prefix for the output's name.

Returns:
    Variable: x's shape and dtype.

Example:
    >>> x = static.data('x', [None, 3])
    >>> F.{op}(x, axis=-1).shape
    (-1, 3)
"""


def _softmax_function(op: str, formula: str) -> Callable[..., Variable]:
    def normalise(x: Variable, axis: int = -1, dtype: DTypeLike | None = None,
                  name: str | None = None) -> Variable:
        if dtype is not None:
            x = M.cast(x, dtype)
        return _act(op, x, name, axis=int(axis))
    return _named(normalise, op, __name__, _SOFTMAX_DOC.format(op=op, formula=formula))


softmax = _softmax_function("softmax", "exp(x) / sum(exp(x))")
log_softmax = _softmax_function("log_softmax", "log(softmax(x)), computed stably,")


def _check_label(input, label, soft_label, axis, fn):
    _var(input, fn, "input"), _var(label, fn, "label")
    ax = axis % max(input.ndim, 1)
    if soft_label:
        if label.dtype != input.dtype or label.ndim != input.ndim:
            raise ValueError(f"{fn}: soft labels {label.name} must have the dtype and rank of "
                             f"input {input.name} ({input.dtype}, {input.shape}); got "
                             f"{label.dtype}, {label.shape}")
        return label
    if label.dtype.kind not in "iu":
        raise TypeError(f"{fn}: hard labels {label.name} must be int64 (or int32), got "
                        f"{label.dtype}; pass soft_label=True for probability labels")
    if label.ndim == input.ndim - 1:      # (N,) labels for (N, C) input: add the class dim
        label = M.unsqueeze(label, ax)
    if label.ndim != input.ndim or (label.shape[ax] not in (1, -1)):
        raise ValueError(f"{fn}: label {label.name} of shape {label.shape} does not match input "
                         f"{input.name} of shape {input.shape}; expected the input's shape with "
                         f"1 at axis {ax}")
    return label


def softmax_with_cross_entropy(logits: Variable, label: Variable, soft_label: bool = False,
                               ignore_index: int = -100, numeric_stable_mode: bool = True,
                               return_softmax: bool = False,
                               axis: int = -1) -> Variable | tuple[Variable, Variable]:
    """Per-sample softmax cross-entropy of `logits`, no reduction (op
    `softmax_with_cross_entropy`); the class axis is kept with size 1.

    Args:
        logits (Variable): unnormalised scores, e.g. (N, C).
        label (Variable): int64 class indices (N, 1) or (N,), or with soft_label=True
            distributions shaped like logits.
        soft_label (bool): labels are distributions.
        ignore_index (int): samples with this label get loss 0.
        numeric_stable_mode (bool): accepted for Paddle compatibility (always stable).
        return_softmax (bool): also return the softmax.
        axis (int): the class axis.

    Returns:
        Variable, or (Variable, Variable) with return_softmax: the loss (N, 1) (and the
        softmax).

    Example:
        >>> logits = static.data('logits', [None, 10])
        >>> label = static.data('label', [None, 1], dtype='int64')
        >>> F.softmax_with_cross_entropy(logits, label).shape
        (-1, 1)
    """
    label = _check_label(logits, label, soft_label, axis, "softmax_with_cross_entropy")
    helper = LayerHelper("softmax_with_cross_entropy")
    sm = helper.create_tmp(logits.dtype)
    loss = helper.create_tmp(logits.dtype)
    helper.append_op("softmax_with_cross_entropy", {"Logits": logits, "Label": label},
                     {"Softmax": sm, "Loss": loss},
                     {"soft_label": bool(soft_label), "ignore_index": int(ignore_index),
                      "axis": int(axis)})
    return (loss, sm) if return_softmax else loss


def _reduce_loss(loss, reduction, label=None, ignore_index=-100, fn="loss"):
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{fn}: reduction must be 'mean', 'sum' or 'none', got {reduction!r}")
    if reduction == "none":
        return loss
    if reduction == "sum":
        return M.sum(loss)
    if label is None or ignore_index == -100:
        return M.mean(loss)
    # mean over the samples whose label is not ignored
    helper = LayerHelper("cross_entropy_mean")
    ignored = M.full([1], ignore_index, dtype=label.dtype)
    valid = helper.simple("not_equal", {"X": label, "Y": ignored}, {"axis": -1}, dtype="bool")
    count = M.sum(M.cast(valid, loss.dtype))
    count = M.maximum(count, M.full([], 1.0, dtype=loss.dtype))
    return M.divide(M.sum(loss), count)


def _class_weights(input, label, weight, soft_label, ignore_index, axis):
    """Paddle's per-sample weights of the per-class `weight` (shaped like the loss, class
    axis kept at 1): weight[label] (0 where ignored), or sum_c label_c * weight_c."""
    _var(weight, "cross_entropy", "weight")
    ax = axis % input.ndim
    if weight.ndim != 1 or weight.shape[0] != input.shape[ax]:
        raise ValueError(f"cross_entropy: weight must be 1-D with one entry per class "
                         f"({input.shape[ax]}), got shape {weight.shape}")
    if soft_label:
        per_class = M.reshape(weight, [-1] + [1] * (input.ndim - 1 - ax))
        return M.sum(M.multiply(M.cast(label, weight.dtype), per_class), axis=ax, keepdim=True)
    kept = M.not_equal(label, M.full([1], ignore_index, dtype=label.dtype))
    valid = M.multiply(label, M.cast(kept, label.dtype))
    gathered = M.reshape(M.gather(weight, M.reshape(valid, [-1])), list(label.shape))
    return M.multiply(gathered, M.cast(kept, weight.dtype))


def cross_entropy(input: Variable, label: Variable, weight: Variable | None = None,
                  ignore_index: int = -100, reduction: str = "mean", soft_label: bool = False,
                  axis: int = -1, use_softmax: bool = True, label_smoothing: float = 0.0,
                  name: str | None = None) -> Variable:
    """Softmax cross-entropy of logits `input` (or of probabilities with use_softmax=False).

    Args:
        input (Variable): logits (or probabilities), e.g. (N, C).
        label (Variable): int64 class indices (N, 1) or (N,), or with soft_label=True
            distributions shaped like input.
        weight (Variable, optional): (C,) per-class weights: each sample's loss is scaled
            by its class's weight (by sum_c label_c * weight_c for soft labels), and 'mean'
            divides by the sum of those weights, as Paddle.
        ignore_index (int): samples with this label are left out.
        reduction (str): 'mean' (over non-ignored samples), 'sum' or 'none'.
        soft_label (bool): labels are distributions.
        axis (int): the class axis.
        use_softmax (bool): input holds logits (True) or probabilities.
        label_smoothing (float): in [0, 1): the labels (one-hot encoded when hard) are
            mixed with the uniform distribution, then used as soft labels.
        name (str, optional): a prefix for the output's name.

    Returns:
        Variable: a 0-D loss, or (N, 1) per sample with reduction='none'.

    Example:
        >>> logits = static.data('logits', [None, 10])
        >>> label = static.data('label', [None, 1], dtype='int64')
        >>> F.cross_entropy(logits, label).shape
        ()
        >>> F.cross_entropy(logits, label, reduction='none').shape
        (-1, 1)
    """
    if not 0.0 <= label_smoothing < 1.0:
        raise ValueError(f"cross_entropy: label_smoothing must be in [0, 1), got "
                         f"{label_smoothing}")
    if label_smoothing > 0.0:     # Paddle's order: one-hot, smooth, cast to input's dtype
        _var(input, "cross_entropy", "input"), _var(label, "cross_entropy", "label")
        if label.ndim == input.ndim - 1:
            label = one_hot(label, input.shape[axis])
        label = M.cast(label_smooth(label, epsilon=label_smoothing), input.dtype)
        soft_label = True
    label = _check_label(input, label, soft_label, axis, "cross_entropy")
    if use_softmax:
        loss = softmax_with_cross_entropy(input, label, soft_label, ignore_index, axis=axis)
    else:
        loss = LayerHelper("cross_entropy", name).simple(
            "cross_entropy", {"X": input, "Label": label},
            {"soft_label": bool(soft_label), "ignore_index": int(ignore_index)}, out_slot="Y")
    hard_label = None if soft_label else label
    if weight is None:
        return _reduce_loss(loss, reduction,
                            hard_label if use_softmax or not soft_label else None,
                            ignore_index, "cross_entropy")
    per_sample = _class_weights(input, label, weight, soft_label, ignore_index, axis)
    loss = M.multiply(loss, per_sample)
    if reduction != "mean":
        return _reduce_loss(loss, reduction, fn="cross_entropy")
    total = M.sum(per_sample)       # / the total weight (1 where it is 0), as Paddle
    return M.divide(M.sum(loss), M.add(total, M.cast(M.equal(total, M.full([], 0.0,
                                                                            dtype=total.dtype)),
                                                     total.dtype)))


def square_error_cost(input: Variable, label: Variable) -> Variable:
    """(input - label)^2 elementwise, no reduction (ops elementwise_sub, square).

    Args:
        input (Variable): the prediction.
        label (Variable): the target, of input's shape and dtype.

    Returns:
        Variable: input's shape.

    Example:
        >>> pred = static.data('pred', [None, 1])
        >>> y = static.data('y', [None, 1])
        >>> F.square_error_cost(pred, y).shape
        (-1, 1)
    """
    _var(input, "square_error_cost", "input"), _var(label, "square_error_cost", "label")
    return M.square(M.subtract(input, label))


@_shared_doc(reduced=_REDUCED_DOC)
def mse_loss(input: Variable, label: Variable, reduction: str = "mean",
             name: str | None = None) -> Variable:
    """Mean squared error: (input - label)^2, reduced.

    Args:
        input (Variable): the prediction.
        label (Variable): the target, of input's shape and dtype.
        {reduced}

    Example:
        >>> pred = static.data('pred', [None, 1])
        >>> y = static.data('y', [None, 1])
        >>> F.mse_loss(pred, y).shape
        ()
    """
    return _reduce_loss(square_error_cost(input, label), reduction, fn="mse_loss")


def hardswish(x: Variable, name: str | None = None) -> Variable:
    """x * min(max(x + 3, 0), 6) / 6 elementwise (op `hard_swish`).

    Args:
        x (Variable): the input.
        name (str, optional): a prefix for the output's name.

    Returns:
        Variable: x's shape and dtype.

    Example:
        >>> x = static.data('x', [None, 3])
        >>> F.hardswish(x).shape
        (-1, 3)
    """
    return _act("hard_swish", x, name, threshold=6.0, scale=6.0, offset=3.0)


def hardsigmoid(x: Variable, slope: float = 0.1666667, offset: float = 0.5,
                name: str | None = None) -> Variable:
    """clip(slope * x + offset, 0, 1) elementwise (op `hard_sigmoid`).

    Args:
        x (Variable): the input.
        slope (float): the slope.
        offset (float): the value at 0.
        name (str, optional): a prefix for the output's name.

    Returns:
        Variable: x's shape and dtype.

    Example:
        >>> x = static.data('x', [None, 3])
        >>> F.hardsigmoid(x).shape
        (-1, 3)
    """
    return _act("hard_sigmoid", x, name, slope=float(slope), offset=float(offset))


def hardtanh(x: Variable, min: float = -1.0, max: float = 1.0,
             name: str | None = None) -> Variable:
    """clip(x, min, max) elementwise (op `brelu`, as Paddle).

    Args:
        x (Variable): the input.
        min (float): the lower bound.
        max (float): the upper bound (> min).
        name (str, optional): a prefix for the output's name.

    Returns:
        Variable: x's shape and dtype.

    Example:
        >>> x = static.data('x', [None, 3])
        >>> F.hardtanh(x, -2.0, 2.0).shape
        (-1, 3)
    """
    if not min < max:
        raise ValueError(f"hardtanh: min must be smaller than max, got min={min}, max={max}")
    return _act("brelu", x, name, t_min=float(min), t_max=float(max))


# CNN-era layers live in their own modules; nn.functional is their public home.
from .functional_nn import (  # noqa: E402,F401
    batch_norm, dropout, dropout2d, dropout3d, embedding)
from .functional_pool import (  # noqa: E402,F401
    adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_max_pool1d, adaptive_max_pool2d, avg_pool1d,
    avg_pool2d, max_pool1d, max_pool2d)
from .functional_vision import (  # noqa: E402,F401
    channel_shuffle, interpolate, pixel_shuffle, pixel_unshuffle, unfold, upsample, zeropad2d)
from .functional_norm import group_norm, instance_norm  # noqa: E402,F401
from .functional_conv import conv1d, conv1d_transpose, conv2d, conv2d_transpose  # noqa: E402,F401
from .functional_3d import *  # noqa: E402,F401,F403
from .functional_3d import __all__ as _volumetric  # noqa: E402
from .functional_transformer import (  # noqa: E402,F401
    label_smooth, layer_norm, linear, normalize, one_hot, pad, scaled_dot_product_attention)


def __getattr__(name):
    # a Paddle 2.6 function numbaflow lacks, or a misspelling: name the closest supported one
    from .paddle_names import PADDLE_NN_FUNCTIONAL, missing_name
    if name.startswith("__"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    raise missing_name(__name__, name, __all__, PADDLE_NN_FUNCTIONAL, "function") or \
        AttributeError(f"module {__name__!r} has no attribute {name!r}")


from .functional_activation import *  # noqa: E402,F401,F403
from .functional_activation import INPLACE as _INPLACE  # noqa: E402
from .functional_activation import __all__ as _activations  # noqa: E402

__all__ += _activations + _volumetric
for _name, _target in _INPLACE.items():
    globals()[_name] = globals()[_target]
    __all__.append(_name)

from .functional_loss import *  # noqa: E402,F401,F403
from .functional_loss import __all__ as _losses  # noqa: E402

__all__ += _losses
