"""More fluid.layers functions with Paddle 1.8's names, arguments and output shapes."""
from ... import static
from ... import tensor_math as M
from ...graph.program import Variable
from ...layer_helper import LayerHelper
from ...nn.initializer import Constant
from ...tensor_math import _activation

__all__ = ["embedding", "one_hot", "topk", "layer_norm", "sigmoid_cross_entropy_with_logits",
           "transpose", "scale", "split", "squeeze", "unsqueeze", "flatten", "exp", "log",
           "sqrt", "square", "abs", "leaky_relu", "clip", "log_softmax", "reduce_max",
           "reduce_min"]


def _var(x, fn, arg="input"):
    if not isinstance(x, Variable):
        raise TypeError(f"{fn}: {arg} must be a Variable, got {type(x).__name__}")
    return x


def scalar_1d(v):
    """Paddle 1.x gives a full reduction shape [1], not 0-D: reshape a 0-D result to (1,)."""
    if v.ndim:
        return v
    return LayerHelper("reshape2").simple("reshape2", {"X": v}, {"shape": [1]})


def embedding(input, size, is_sparse=False, is_distributed=False, padding_idx=None,
              param_attr=None, dtype="float32"):
    """Paddle 1.8's fluid.layers.embedding (op lookup_table): int ids of shape (..., 1) ->
    (..., emb_dim). fluid.embedding (no trailing 1 needed: (...) -> (..., emb_dim)) is
    static.nn.embedding."""
    _var(input, "embedding")
    if input.ndim < 1 or input.shape[-1] != 1:
        raise ValueError(f"fluid.layers.embedding: ids {input.name} must have a last dim of 1 "
                         f"(shape (N, 1)), got {input.shape}; use fluid.embedding for ids "
                         f"without it")
    ids = M.squeeze(input, [-1]) if input.ndim > 1 else input
    return static.nn.embedding(ids, size, is_sparse, is_distributed, padding_idx, param_attr,
                               dtype)


def one_hot(input, depth, allow_out_of_range=False):
    """Int ids of shape (..., 1) -> float32 one-hot rows (..., depth) (op one_hot). An id
    outside [0, depth) raises, unless allow_out_of_range (a row of zeros)."""
    _var(input, "one_hot")
    return LayerHelper("one_hot").simple(
        "one_hot", {"X": input}, {"depth": int(depth), "dtype": "float32",
                                  "allow_out_of_range": bool(allow_out_of_range)},
        dtype="float32")


def topk(input, k, name=None):
    """(values, indices): the k largest entries along the last axis, descending (op top_k);
    indices are int64. Differentiable in `values`."""
    _var(input, "topk")
    if not isinstance(k, int) or k < 1:
        raise ValueError(f"topk: k must be a positive int, got {k!r}")
    helper = LayerHelper("top_k", name)
    values, indices = helper.create_tmp(input.dtype), helper.create_tmp("int64", True)
    helper.append_op("top_k", {"X": input}, {"Out": values, "Indices": indices}, {"k": k})
    return values, indices


def layer_norm(input, scale=True, shift=True, begin_norm_axis=1, epsilon=1e-05,
               param_attr=None, bias_attr=None, act=None, name=None):
    """Normalise each sample over the dims from begin_norm_axis on, then a learned
    per-element scale (init 1) and shift (init 0), then `act` (op layer_norm)."""
    _var(input, "layer_norm")
    if not 1 <= begin_norm_axis < input.ndim:
        raise ValueError(f"layer_norm: begin_norm_axis must be in [1, {input.ndim - 1}] for "
                         f"{input.name} of shape {input.shape}, got {begin_norm_axis}")
    right_dims = input.shape[begin_norm_axis:]
    if -1 in right_dims:
        raise ValueError(f"layer_norm: the normalised dims {right_dims} of {input.name} must "
                         f"be known")
    right = 1
    for d in right_dims:
        right *= d
    helper = LayerHelper("layer_norm", name)
    ins = {"X": input}
    if scale:
        ins["Scale"] = helper.create_parameter(param_attr, [right], input.dtype,
                                               default_initializer=Constant(1.0))
    if shift:
        ins["Bias"] = helper.create_parameter(bias_attr, [right], input.dtype, is_bias=True)
    y = helper.create_tmp(input.dtype)
    mean, var = helper.create_tmp(input.dtype, True), helper.create_tmp(input.dtype, True)
    helper.append_op("layer_norm", ins, {"Y": y, "Mean": mean, "Variance": var},
                     {"epsilon": float(epsilon), "begin_norm_axis": int(begin_norm_axis)})
    return _activation(y, act)


def sigmoid_cross_entropy_with_logits(x, label, ignore_index=-100, name=None,
                                      normalize=False):
    """Elementwise logistic loss of logits `x` against targets `label` in [0, 1] (same
    shape); 0 where label == ignore_index. normalize=True divides by the number of
    labels that are not ignore_index."""
    _var(x, "sigmoid_cross_entropy_with_logits", "x")
    _var(label, "sigmoid_cross_entropy_with_logits", "label")
    if x.dtype != label.dtype:
        raise TypeError(f"sigmoid_cross_entropy_with_logits: label {label.name} ({label.dtype}) "
                        f"must have the dtype of x {x.name} ({x.dtype})")
    out = LayerHelper("sigmoid_cross_entropy_with_logits", name).simple(
        "sigmoid_cross_entropy_with_logits", {"X": x, "Label": label},
        {"ignore_index": int(ignore_index)})
    if not normalize:
        return out
    helper = LayerHelper("sigmoid_cross_entropy_with_logits_norm")
    ignore = M.full([1], float(ignore_index), label.dtype)
    kept = helper.simple("not_equal", {"X": label, "Y": ignore}, {"axis": -1}, dtype="bool")
    count = M.sum(M.cast(kept, x.dtype))
    return out / M.maximum(count, M.full([], 1.0, x.dtype))


def transpose(x, perm, name=None):
    return M.transpose(x, perm, name)


def scale(x, scale=1.0, bias=0.0, bias_after_scale=True, act=None, name=None):
    """scale * x + bias (or scale * (x + bias)), then `act` (op scale)."""
    return M.scale(x, scale, bias, bias_after_scale, act, name)


def split(input, num_or_sections, dim=-1, name=None):
    return M.split(input, num_or_sections, dim, name)


def squeeze(input, axes, name=None):
    return M.squeeze(input, axes, name)


def unsqueeze(input, axes, name=None):
    return M.unsqueeze(input, axes, name)


def flatten(x, axis=1, name=None):
    """Paddle 1.x flatten: a 2-D result (prod(dims[:axis]), prod(dims[axis:]))."""
    _var(x, "flatten", "x")
    if not 0 <= axis <= x.ndim:
        raise ValueError(f"flatten: axis must be in [0, {x.ndim}], got {axis}")
    if axis == 0:
        return M.reshape(M.flatten(x, 0, -1, name), [1, -1])
    left = M.flatten(x, 0, axis - 1, name) if axis > 1 else x
    return M.flatten(left, 1, -1) if axis < x.ndim else M.unsqueeze(left, [1])


def exp(x, name=None):
    return M.exp(x, name)


def log(x, name=None):
    return M.log(x, name)


def sqrt(x, name=None):
    return M.sqrt(x, name)


def square(x, name=None):
    return M.square(x, name)


def abs(x, name=None):
    return M.abs(x, name)


def leaky_relu(x, alpha=0.02, name=None):
    return LayerHelper("leaky_relu", name).simple("leaky_relu", {"X": _var(x, "leaky_relu", "x")},
                                                  {"alpha": float(alpha)})


def clip(x, min, max, name=None):
    return M.clip(x, min, max, name)


def log_softmax(input, axis=-1, name=None):
    from ...nn import functional as F
    return F.log_softmax(input, axis, name=name)


def reduce_max(input, dim=None, keep_dim=False, name=None):
    return scalar_1d(M.max(input, dim, keep_dim, name))


def reduce_min(input, dim=None, keep_dim=False, name=None):
    return scalar_1d(M.min(input, dim, keep_dim, name))
