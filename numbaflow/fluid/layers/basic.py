"""The layers a Paddle 1.x program starts from (data, fc, the losses, activations,
reductions, matmul, reshape, concat, fill_constant, cast, accuracy, argmax): thin wrappers
with 1.x argument names over the 2.x functions (public as fluid.layers.*)."""
from __future__ import annotations

import numbers
from typing import TYPE_CHECKING

from ... import dtypes, metric, static
from ... import tensor as M
from ...graph.program import Variable
from ...layer_helper import LayerHelper
from ...nn import functional as F
from ...tensor._helpers import activation as _activation
from .nn import scalar_1d

if TYPE_CHECKING:
    from collections.abc import Sequence

    from numpy.typing import DTypeLike

    from ...param_attr import ParamAttr

__all__ = ["data", "fc", "mean", "square_error_cost", "cross_entropy", "softmax", "relu",
           "sigmoid", "tanh", "matmul", "reshape", "concat", "fill_constant", "cast", "accuracy", "argmax", "softmax_with_cross_entropy"]

# the 1.x spellings whose signature is the 2.x function's: that function itself
relu, sigmoid, tanh = F.relu, F.sigmoid, F.tanh


def data(name: str, shape: Sequence[int | None], append_batch_size: bool = True,
         dtype: DTypeLike = "float32", lod_level: int = 0, type: object = None,
         stop_gradient: bool = True) -> Variable:
    """A fed input. As in Paddle 1.x, a batch dimension (-1) is prepended unless
    `append_batch_size=False` or `shape` already has a None / -1 dimension.

    Args:
        name (str): the feed name.
        shape (list of int): the shape of one sample (or the full shape, see above).
        append_batch_size (bool): prepend -1; a str here is taken as the dtype.
        dtype (str or numpy dtype): default 'float32'.
        lod_level (int): accepted for Paddle compatibility.
        type: accepted for Paddle compatibility.
        stop_gradient (bool): no gradient flows into it.

    Returns:
        Variable: the input.

    Example:
        >>> x = fluid.layers.data(name='x', shape=[13], dtype='float32')
        >>> x.shape
        (-1, 13)
    """
    if isinstance(append_batch_size, str):   # data('x', [13], 'float32'): the dtype, positionally
        append_batch_size, dtype = True, append_batch_size
    if not isinstance(shape, (list, tuple)):
        raise TypeError(f"data {name!r}: shape must be a list or tuple, got "
                        f"{shape.__class__.__name__}")
    shape = [-1 if d is None else int(d) for d in shape]
    if append_batch_size and all(d >= 0 for d in shape):
        shape = [-1] + shape
    var = static.data(name, shape, dtype, lod_level)
    var.stop_gradient = bool(stop_gradient)
    return var


def fc(input: Variable | Sequence[Variable], size: int, num_flatten_dims: int = 1,
       param_attr: ParamAttr | None = None, bias_attr: ParamAttr | bool | None = None,
       act: str | None = None, name: str | None = None) -> Variable:
    """Fully connected layer (ops mul, elementwise_add, then `act`); see `static.nn.fc`.

    Args:
        input (Variable or list of Variable): the input.
        size (int): the number of output features.
        num_flatten_dims (int): the leading dims kept.
        param_attr (ParamAttr, optional): the weight's.
        bias_attr (ParamAttr or False, optional): the bias's; False for no bias.
        act (str, optional): an activation such as 'relu'.
        name (str, optional): the layer's name prefix.

    Returns:
        Variable: shape input.shape[:num_flatten_dims] + [size].

    Example:
        >>> x = fluid.layers.data('x', [13])
        >>> fluid.layers.fc(input=x, size=1, act=None).shape
        (-1, 1)
    """
    return static.nn.fc(input, size, num_flatten_dims, weight_attr=param_attr,
                        bias_attr=bias_attr, activation=act, name=name)


def mean(x: Variable, name: str | None = None) -> Variable:
    """Mean of every element, shape (1,) as in Paddle 1.8 (op reduce_mean, then reshape2).

    Args:
        x (Variable): the input.
        name (str, optional): a prefix for the output's name.

    Returns:
        Variable: shape (1,).

    Example:
        >>> x = fluid.layers.data('x', [3])
        >>> fluid.layers.mean(x).shape
        (1,)
    """
    return scalar_1d(M.mean(x, name=name))


def square_error_cost(input: Variable, label: Variable) -> Variable:
    """(input - label)^2 elementwise, no reduction.

    Args:
        input (Variable): the prediction.
        label (Variable): the target.

    Returns:
        Variable: input's shape.

    Example:
        >>> pred = fluid.layers.data('pred', [1])
        >>> y = fluid.layers.data('y', [1])
        >>> fluid.layers.square_error_cost(pred, y).shape
        (-1, 1)
    """
    return F.square_error_cost(input, label)


def cross_entropy(input: Variable, label: Variable, soft_label: bool = False,
                  ignore_index: int = -100) -> Variable:
    """Per-sample cross-entropy of *probabilities* `input` (e.g. a softmax output), no
    reduction (op cross_entropy).

    Args:
        input (Variable): probabilities (N, C).
        label (Variable): int64 (N, 1), or distributions with soft_label=True.
        soft_label (bool): labels are distributions.
        ignore_index (int): samples with this label get loss 0.

    Returns:
        Variable: (N, 1).

    Example:
        >>> prob = fluid.layers.softmax(fluid.layers.data('x', [10]))
        >>> label = fluid.layers.data('label', [1], dtype='int64')
        >>> fluid.layers.cross_entropy(prob, label).shape
        (-1, 1)
    """
    return F.cross_entropy(input, label, soft_label=soft_label, ignore_index=ignore_index,
                           use_softmax=False, reduction="none")


def softmax_with_cross_entropy(logits: Variable, label: Variable, soft_label: bool = False,
                               ignore_index: int = -100, numeric_stable_mode: bool = True,
                               return_softmax: bool = False,
                               axis: int = -1) -> Variable | tuple[Variable, Variable]:
    """Per-sample softmax cross-entropy of logits, shape (N, 1); see
    `nn.functional.softmax_with_cross_entropy`.

    Args:
        logits (Variable): unnormalised scores (N, C).
        label (Variable): int64 (N, 1), or distributions with soft_label=True.
        soft_label (bool): labels are distributions.
        ignore_index (int): samples with this label get loss 0.
        numeric_stable_mode (bool): accepted (always stable).
        return_softmax (bool): also return the softmax.
        axis (int): the class axis.

    Returns:
        Variable, or (loss, softmax) with return_softmax.

    Example:
        >>> logits = fluid.layers.data('logits', [10])
        >>> label = fluid.layers.data('label', [1], dtype='int64')
        >>> fluid.layers.softmax_with_cross_entropy(logits, label).shape
        (-1, 1)
    """
    return F.softmax_with_cross_entropy(logits, label, soft_label, ignore_index,
                                        numeric_stable_mode, return_softmax, axis)


def softmax(input: Variable, use_cudnn: bool = False, name: str | None = None,
            axis: int = -1) -> Variable:
    """exp(x) / sum(exp(x)) along `axis` (op `softmax`).

    Args:
        input (Variable): the input.
        use_cudnn (bool): accepted and ignored.
        name (str, optional): a prefix for the output's name.
        axis (int): the axis normalised over.

    Returns:
        Variable: input's shape.

    Example:
        >>> x = fluid.layers.data('x', [3])
        >>> fluid.layers.softmax(x).shape
        (-1, 3)
    """
    return F.softmax(input, axis=axis, name=name)


def matmul(x: Variable, y: Variable, transpose_x: bool = False, transpose_y: bool = False,
           alpha: float = 1.0, name: str | None = None) -> Variable:
    """alpha * (x @ y), with optional transposes (op matmul_v2, then scale if alpha != 1).

    Args:
        x (Variable): the left operand.
        y (Variable): the right operand.
        transpose_x (bool): swap x's last two dims.
        transpose_y (bool): swap y's last two dims.
        alpha (float): a factor on the product.
        name (str, optional): a prefix for the output's name.

    Returns:
        Variable: the product.

    Example:
        >>> x = fluid.layers.data('x', [3])
        >>> w = fluid.layers.fill_constant([3, 4], 'float32', 0.5)
        >>> fluid.layers.matmul(x, w, alpha=2.0).shape
        (-1, 4)
    """
    out = M.matmul(x, y, transpose_x, transpose_y, name)
    return out if float(alpha) == 1.0 else M.scale(out, float(alpha))


def reshape(x: Variable, shape: Sequence[int], actual_shape: None = None,
            act: str | None = None, inplace: bool = False, name: str | None = None) -> Variable:
    """Reshape (0 keeps the input dim, one -1 is inferred); then `act`.

    Args:
        x (Variable): the input.
        shape (list of int): the new shape.
        actual_shape: not supported (must be None).
        act (str, optional): an activation applied after.
        inplace (bool): accepted for Paddle compatibility.
        name (str, optional): a prefix for the output's name.

    Returns:
        Variable: the reshaped tensor.

    Example:
        >>> x = fluid.layers.data('x', [2, 3])
        >>> fluid.layers.reshape(x, [-1, 6]).shape
        (-1, 6)
    """
    if actual_shape is not None:
        raise ValueError("reshape: actual_shape (a shape given as a Variable) is not supported; "
                         "pass `shape` as a list of ints")
    return _activation(M.reshape(x, shape, name), act)


def concat(input: Sequence[Variable], axis: int = 0, name: str | None = None) -> Variable:
    """Join Variables along `axis` (op concat).

    Args:
        input (list of Variable): the inputs.
        axis (int): the axis to join along.
        name (str, optional): a prefix for the output's name.

    Returns:
        Variable: the joined tensor.

    Example:
        >>> x = fluid.layers.data('x', [3])
        >>> fluid.layers.concat([x, x], axis=1).shape
        (-1, 6)
    """
    return M.concat(input, axis, name)


def fill_constant(shape: int | Sequence[int], dtype: DTypeLike, value: float,
                  force_cpu: bool = False, out: Variable | None = None,
                  name: str | None = None) -> Variable:
    """A Variable of `shape` filled with `value` (op fill_constant); into `out` if given.

    Args:
        shape (int or list of int): the shape.
        dtype (str or numpy dtype): the dtype.
        value (float): the value.
        force_cpu (bool): accepted for Paddle compatibility.
        out (Variable, optional): write here instead of a new Variable.
        name (str, optional): a prefix for the output's name.

    Returns:
        Variable: `out` or the new constant.

    Example:
        >>> fluid.layers.fill_constant([2, 3], 'int64', 7).dtype
        dtype('int64')
    """
    if not isinstance(value, (numbers.Number, bool)):
        raise TypeError(f"fill_constant: value must be a number, got {type(value).__name__}")
    if out is None:
        return M.full(shape, value, dtype, name)
    dt = dtypes.convert_dtype(dtype)
    shape = [int(d) for d in (shape if isinstance(shape, (list, tuple)) else [shape])]
    LayerHelper("fill_constant", name).append_op(
        "fill_constant", outputs={"Out": out},
        attrs={"shape": shape, "value": float(value), "dtype": str(dt)})
    return out


def cast(x: Variable, dtype: DTypeLike) -> Variable:
    """Convert x to `dtype` (op cast).

    Args:
        x (Variable): the input.
        dtype (str or numpy dtype): the new dtype.

    Returns:
        Variable: x's shape.

    Example:
        >>> x = fluid.layers.data('x', [3])
        >>> fluid.layers.cast(x, 'float64').dtype
        dtype('float64')
    """
    return M.cast(x, dtype)


def accuracy(input: Variable, label: Variable, k: int = 1, correct: Variable | None = None,
             total: Variable | None = None) -> Variable:
    """Fraction of rows whose label is among the top-k scores (float32, shape (1,)).

    Args:
        input (Variable): scores (N, C).
        label (Variable): int64 (N, 1).
        k (int): how many top scores count.
        correct (Variable, optional): also receives the number correct.
        total (Variable, optional): also receives the number of rows.

    Returns:
        Variable: float32, shape (1,).

    Example:
        >>> scores = fluid.layers.data('scores', [10])
        >>> label = fluid.layers.data('label', [1], dtype='int64')
        >>> fluid.layers.accuracy(scores, label, k=1).shape
        (1,)
    """
    return scalar_1d(metric.accuracy(input, label, k, correct, total))


def argmax(x: Variable, axis: int = 0) -> Variable:
    """Index of the maximum along `axis` (Paddle 1.x's default axis is 0), int64.

    Args:
        x (Variable): the input.
        axis (int): the axis.

    Returns:
        Variable: the indices.

    Example:
        >>> x = fluid.layers.data('x', [3])
        >>> fluid.layers.argmax(x, axis=1).shape
        (-1,)
    """
    return M.argmax(x, axis=axis)
