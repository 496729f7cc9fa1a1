"""fluid.layers: the Paddle 1.x layer functions, as thin wrappers over numbaflow's ops.

Paddle 1.x argument names and defaults are kept (`input=`, `act=`, `dim=`, `keep_dim=`,
argmax's `axis=0`); each appends the same ops as the 2.x function it delegates to. As in
Paddle 1.8, a full reduction (`mean`, `reduce_*` over every dim, `accuracy`) has shape
(1,), not 0-D, so 1.x programs that index a fetched loss as `loss[0]` run unchanged.
"""
import numbers

from ... import dtypes, metric, static
from ... import tensor_math as M
from ...graph.program import Variable
from ...layer_helper import LayerHelper
from ...nn import functional as F
from ...tensor_math import _activation

__all__ = ["data", "fc", "mean", "square_error_cost", "cross_entropy", "softmax", "relu",
           "sigmoid", "tanh", "elementwise_add", "elementwise_sub", "elementwise_mul",
           "elementwise_div", "reduce_mean", "reduce_sum", "matmul", "reshape", "concat",
           "fill_constant", "cast", "accuracy", "argmax", "softmax_with_cross_entropy"]


def data(name, shape, append_batch_size=True, dtype="float32", lod_level=0, type=None,
         stop_gradient=True):
    """A fed input. As in Paddle 1.x, a batch dimension (-1) is prepended unless
    `append_batch_size=False` or `shape` already has a None / -1 dimension.

    >>> x = fluid.layers.data(name='x', shape=[13], dtype='float32')     # (-1, 13)
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


def fc(input, size, num_flatten_dims=1, param_attr=None, bias_attr=None, act=None, name=None):
    """Fully connected layer (ops mul, elementwise_add, then `act`); see static.nn.fc."""
    return static.nn.fc(input, size, num_flatten_dims, weight_attr=param_attr,
                        bias_attr=bias_attr, activation=act, name=name)


def mean(x, name=None):
    """Mean of every element, shape (1,) as in Paddle 1.8 (op reduce_mean, then reshape2)."""
    return scalar_1d(M.mean(x, name=name))


def square_error_cost(input, label):
    """(input - label)^2 elementwise, no reduction."""
    return F.square_error_cost(input, label)


def cross_entropy(input, label, soft_label=False, ignore_index=-100):
    """Per-sample cross-entropy of *probabilities* `input` (e.g. a softmax output): shape
    (N, 1), no reduction (op cross_entropy). Hard labels are int64 of shape (N, 1)."""
    return F.cross_entropy(input, label, soft_label=soft_label, ignore_index=ignore_index,
                           use_softmax=False, reduction="none")


def softmax_with_cross_entropy(logits, label, soft_label=False, ignore_index=-100,
                               numeric_stable_mode=True, return_softmax=False, axis=-1):
    """Per-sample softmax cross-entropy of logits, shape (N, 1); optionally the softmax."""
    return F.softmax_with_cross_entropy(logits, label, soft_label, ignore_index,
                                        numeric_stable_mode, return_softmax, axis)


def softmax(input, use_cudnn=False, name=None, axis=-1):
    return F.softmax(input, axis=axis, name=name)


def relu(x, name=None):
    return F.relu(x, name)


def sigmoid(x, name=None):
    return F.sigmoid(x, name)


def tanh(x, name=None):
    return F.tanh(x, name)


def _elementwise(op_type, x, y, axis, act, name):
    for arg, v in (("x", x), ("y", y)):
        if not isinstance(v, Variable):
            raise TypeError(f"{op_type}: {arg} must be a Variable, got {type(v).__name__}")
    if x.dtype != y.dtype:
        raise TypeError(f"{op_type}: x ({x.name}, {x.dtype}) and y ({y.name}, {y.dtype}) must "
                        f"have the same dtype; cast one with fluid.layers.cast")
    out = LayerHelper(op_type, name).simple(op_type, {"X": x, "Y": y}, {"axis": int(axis)})
    return _activation(out, act)


def elementwise_add(x, y, axis=-1, act=None, name=None):
    """x + y; `y` is broadcast against x's dims starting at `axis` (-1: trailing dims)."""
    return _elementwise("elementwise_add", x, y, axis, act, name)


def elementwise_sub(x, y, axis=-1, act=None, name=None):
    return _elementwise("elementwise_sub", x, y, axis, act, name)


def elementwise_mul(x, y, axis=-1, act=None, name=None):
    return _elementwise("elementwise_mul", x, y, axis, act, name)


def elementwise_div(x, y, axis=-1, act=None, name=None):
    return _elementwise("elementwise_div", x, y, axis, act, name)


def reduce_mean(input, dim=None, keep_dim=False, name=None):
    """Mean over `dim` (an int or list; None: every dim, giving shape (1,) as in Paddle 1.8)."""
    return scalar_1d(M.mean(input, axis=dim, keepdim=keep_dim, name=name))


def reduce_sum(input, dim=None, keep_dim=False, name=None):
    return scalar_1d(M.sum(input, axis=dim, keepdim=keep_dim, name=name))


def matmul(x, y, transpose_x=False, transpose_y=False, alpha=1.0, name=None):
    """alpha * (x @ y), with optional transposes (op matmul_v2, then scale if alpha != 1)."""
    out = M.matmul(x, y, transpose_x, transpose_y, name)
    return out if float(alpha) == 1.0 else M.scale(out, float(alpha))


def reshape(x, shape, actual_shape=None, act=None, inplace=False, name=None):
    """Reshape (0 keeps the input dim, one -1 is inferred); then `act`."""
    if actual_shape is not None:
        raise ValueError("reshape: actual_shape (a shape given as a Variable) is not supported; "
                         "pass `shape` as a list of ints")
    return _activation(M.reshape(x, shape, name), act)


def concat(input, axis=0, name=None):
    return M.concat(input, axis, name)


def fill_constant(shape, dtype, value, force_cpu=False, out=None, name=None):
    """A Variable of `shape` filled with `value` (op fill_constant); into `out` if given."""
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


def cast(x, dtype):
    return M.cast(x, dtype)


def accuracy(input, label, k=1, correct=None, total=None):
    """Fraction of rows whose label is among the top-k scores (float32 of shape (1,))."""
    return scalar_1d(metric.accuracy(input, label, k, correct, total))


def argmax(x, axis=0):
    """Index of the maximum along `axis` (Paddle 1.x's default axis is 0), int64."""
    return M.argmax(x, axis=axis)


from ...nn.functional_nn import fluid_batch_norm as batch_norm  # noqa: E402,F401
from ...nn.functional_nn import fluid_dropout as dropout  # noqa: E402,F401
from ...nn.functional_nn import fluid_pool2d as pool2d  # noqa: E402,F401
from ...nn.functional_conv import fluid_conv2d as conv2d  # noqa: E402,F401
from .nn import *  # noqa: E402,F401,F403
from .nn import scalar_1d  # noqa: E402
from .tensor import *  # noqa: E402,F401,F403
from .learning_rate_scheduler import *  # noqa: E402,F401,F403
from .metric_op import auc  # noqa: E402,F401
from . import learning_rate_scheduler, metric_op, nn, tensor  # noqa: E402,F401


def elementwise_max(x, y, axis=-1, act=None, name=None):
    return _elementwise("elementwise_max", x, y, axis, act, name)


def elementwise_min(x, y, axis=-1, act=None, name=None):
    return _elementwise("elementwise_min", x, y, axis, act, name)


def elementwise_pow(x, y, axis=-1, act=None, name=None):
    return _elementwise("elementwise_pow", x, y, axis, act, name)


__all__ += ["elementwise_max", "elementwise_min", "elementwise_pow", "batch_norm", "dropout",
            "pool2d", "conv2d", "auc"] + nn.__all__ + tensor.__all__ + learning_rate_scheduler.__all__
