"""Transformer building blocks of paddle.nn.functional (Paddle 2.6 signatures): layer_norm,
linear, scaled_dot_product_attention, one_hot, pad, normalize, label_smooth;
and static.nn.layer_norm (the layer with its own parameters).

Each is built from registered ops. Attention is `matmul_v2` with trans_y (K read
transposed in place), one `fused_softmax_mask` (scale, mask and causal rule inside the
softmax's pass), optional `dropout`, `matmul_v2` with V.
"""
from __future__ import annotations

import math
import numbers
from typing import TYPE_CHECKING

from .. import tensor as M
from ..tensor._helpers import activation as _activation
from ..graph.program import Variable
from ..kernels.registry import broadcast_shapes
from ..layer_helper import LayerHelper
from ..tensor._helpers import check_variable as _var
from .functional_nn import check_probability, dropout
from ..param_init import Constant

if TYPE_CHECKING:
    from collections.abc import Sequence


# ---------------------------------------------------------------- layer_norm
def _layer_norm(helper, x, begin, epsilon, scale, bias):
    y = helper.create_tmp(x.dtype)
    mean, var = helper.create_tmp(x.dtype, True), helper.create_tmp(x.dtype, True)
    ins = {"X": x}
    if scale is not None:
        ins["Scale"] = scale
    if bias is not None:
        ins["Bias"] = bias
    helper.append_op("layer_norm", ins, {"Y": y, "Mean": mean, "Variance": var},
                     {"epsilon": float(epsilon), "begin_norm_axis": int(begin)})
    return y


def _normalised_size(x, begin, fn):
    if not 1 <= begin < max(x.ndim, 2):
        raise ValueError(f"{fn}: the normalised dims must leave at least the first dim of "
                         f"{x.name} {x.shape}; begin_norm_axis {begin} is out of [1, "
                         f"{x.ndim - 1}]")
    right = x.shape[begin:]
    if -1 in right:
        raise ValueError(f"{fn}: the normalised dims {right} of {x.name} must be known")
    return math.prod(right)


def layer_norm(x: Variable, normalized_shape: int | Sequence[int],
               weight: Variable | None = None, bias: Variable | None = None,
               epsilon: float = 1e-05, name: str | None = None) -> Variable:
    """Normalise over the last len(normalized_shape) dims, then `* weight + bias` (op
    `layer_norm`, one op forward and one backward).

    Args:
        x (Variable): the input.
        normalized_shape (int or list of int): x's trailing dims to normalise over.
        weight (Variable, optional): the scale, of normalized_shape (or its product).
        bias (Variable, optional): the shift, like weight.
        epsilon (float): added to the variance.
        name (str, optional): a prefix for the output's name.

    Returns:
        Variable: x's shape and dtype.

    Example:
        >>> x = static.data('x', [None, 8, 16])
        >>> F.layer_norm(x, 16).shape
        (-1, 8, 16)
    """
    _var(x, "layer_norm")
    shape = [normalized_shape] if isinstance(normalized_shape, numbers.Integral) \
        else list(normalized_shape)
    if list(x.shape[x.ndim - len(shape):]) != [int(d) for d in shape]:
        raise ValueError(f"layer_norm: normalized_shape {shape} must be the trailing dims of "
                         f"x {x.name} {x.shape}")
    begin = x.ndim - len(shape)
    size = _normalised_size(x, begin, "layer_norm")
    params = []
    for p, arg in ((weight, "weight"), (bias, "bias")):
        if p is not None:
            _var(p, "layer_norm", arg)
            if math.prod(p.shape) != size:
                raise ValueError(f"layer_norm: {arg} {p.name} {p.shape} must have "
                                 f"{size} elements (normalized_shape {shape})")
            p = M.reshape(p, [size]) if p.ndim != 1 else p
        params.append(p)
    return _layer_norm(LayerHelper("layer_norm", name), x, begin, epsilon, *params)


def static_layer_norm(input: Variable, scale: bool = True, shift: bool = True,
                      begin_norm_axis: int = 1, epsilon: float = 1e-05,
                      param_attr: object = None, bias_attr: object = None,
                      act: str | None = None, name: str | None = None) -> Variable:
    """Normalise each sample over the dims from begin_norm_axis on, then a learned
    per-element scale (init 1) and shift (init 0), then `act` (op layer_norm).

    Args:
        input (Variable): the input.
        scale (bool): learn a scale `layer_norm_N.w_0`.
        shift (bool): learn a shift `layer_norm_N.b_0`.
        begin_norm_axis (int): the first normalised dim (1 .. rank - 1).
        epsilon (float): added to the variance.
        param_attr (ParamAttr, optional): the scale's attributes.
        bias_attr (ParamAttr, optional): the shift's attributes.
        act (str, optional): an activation applied last.
        name (str, optional): a prefix for the names.

    Returns:
        Variable: input's shape.

    Example:
        >>> x = static.data('x', [None, 4, 6])
        >>> static.nn.layer_norm(x, begin_norm_axis=2).shape
        (-1, 4, 6)
    """
    _var(input, "layer_norm", "input")
    right = _normalised_size(input, begin_norm_axis, "layer_norm")
    helper = LayerHelper("layer_norm", name)
    w = helper.create_parameter(param_attr, [right], input.dtype,
                                default_initializer=Constant(1.0)) if scale else None
    b = helper.create_parameter(bias_attr, [right], input.dtype, is_bias=True) \
        if shift else None
    return _activation(_layer_norm(helper, input, begin_norm_axis, epsilon, w, b), act)


# ---------------------------------------------------------------- linear, attention
def linear(x: Variable, weight: Variable, bias: Variable | None = None,
           name: str | None = None) -> Variable:
    """x @ weight + bias (ops `matmul_v2`, `elementwise_add`); weight is [in, out].

    Args:
        x (Variable): [..., in].
        weight (Variable): [in, out].
        bias (Variable, optional): [out].
        name (str, optional): a prefix for the output's name.

    Returns:
        Variable: [..., out].

    Example:
        >>> x = static.data('x', [None, 4])
        >>> w = paddle.create_parameter([4, 2], 'float32')
        >>> F.linear(x, w).shape
        (-1, 2)
    """
    out = M.matmul(_var(x, "linear"), _var(weight, "linear", "weight"), name=name)
    return out if bias is None else M.add(out, _var(bias, "linear", "bias"))


def _check_attention_shapes(query, key, value):
    """Refuse, naming the arguments, what would fail inside the lowered matmuls: query and
    key must share head_dim, key and value seq_len, all three batch and num_heads (-1:
    known only at run time, not checked)."""
    def differ(a, b):
        return a >= 0 and b >= 0 and a != b
    rules = ((query, "query", key, "key", 3, "head_dim"),
             (key, "key", value, "value", 1, "seq_len"),
             (query, "query", key, "key", 2, "num_heads"),
             (key, "key", value, "value", 2, "num_heads"),
             (query, "query", key, "key", 0, "batch"),
             (key, "key", value, "value", 0, "batch"))
    for a, an, b, bn, axis, what in rules:
        if differ(a.shape[axis], b.shape[axis]):
            raise ValueError(
                f"scaled_dot_product_attention: {an} {a.name} {a.shape} and {bn} {b.name} "
                f"{b.shape} must have the same {what} (axis {axis} of [batch, seq_len, "
                f"num_heads, head_dim]); got {a.shape[axis]} and {b.shape[axis]}. Reshape or "
                f"project them to one {what}")


def scaled_dot_product_attention(query: Variable, key: Variable, value: Variable,
                                 attn_mask: Variable | None = None, dropout_p: float = 0.0,
                                 is_causal: bool = False, training: bool = True,
                                 name: str | None = None) -> Variable:
    """softmax(Q K^T / sqrt(d) + mask) V per batch and head, Paddle's layout
    [batch, seq_len, num_heads, head_dim]. Lowered to `transpose2`, `matmul_v2` (trans_y:
    K read transposed in place), ONE `fused_softmax_mask` (the 1/sqrt(d) scale, the mask
    and the causal rule applied inside the softmax's single pass over the scores; its
    gradient is one op too), `dropout` on the weights when training with dropout_p > 0,
    and `matmul_v2`. A float attn_mask that needs a gradient (stop_gradient=False) is
    added by its own `elementwise_add` first, so that it gets one.

    Args:
        query (Variable): [B, Tq, H, D].
        key (Variable): [B, Tk, H, D].
        value (Variable): [B, Tk, H, Dv].
        attn_mask (Variable, optional): added to the scores, broadcast to [B, H, Tq, Tk];
            a bool mask keeps the True positions (the others get -1e9).
        dropout_p (float): the dropout probability of the attention weights.
        is_causal (bool): position i attends to positions <= i only.
        training (bool): apply dropout.
        name (str, optional): a prefix for the output's name.

    Returns:
        Variable: [B, Tq, H, Dv].

    Example:
        >>> q = static.data('q', [None, 5, 2, 8])
        >>> F.scaled_dot_product_attention(q, q, q, is_causal=True).shape
        (-1, 5, 2, 8)
    """
    for v, arg in ((query, "query"), (key, "key"), (value, "value")):
        _var(v, "scaled_dot_product_attention", arg)
        if v.ndim != 4:
            raise ValueError(f"scaled_dot_product_attention: {arg} must be [batch, seq_len, "
                             f"num_heads, head_dim], got {v.name} {v.shape}")
    _check_attention_shapes(query, key, value)
    p = check_probability(dropout_p, "scaled_dot_product_attention", "dropout_p")
    q, k, v = (M.transpose(t, [0, 2, 1, 3]) for t in (query, key, value))
    scores = M.matmul(q, k, transpose_y=True)
    ins, scale = {"X": scores}, 1.0 / math.sqrt(query.shape[-1])
    if attn_mask is not None:
        _var(attn_mask, "scaled_dot_product_attention", "attn_mask")
        if attn_mask.dtype.kind == "b":     # True keeps: 0 there, -1e9 elsewhere
            attn_mask = M.scale(M.cast(attn_mask, scores.dtype), 1e9, -1e9)
        if not _broadcasts_over(attn_mask, scores):
            raise ValueError(f"scaled_dot_product_attention: attn_mask {attn_mask.name} "
                             f"{attn_mask.shape} must broadcast to the scores [B, H, Tq, Tk] "
                             f"{scores.shape} with its last dim Tk")
        if attn_mask.stop_gradient:
            ins["Mask"] = attn_mask
        else:       # the fused op gives its mask no gradient
            ins["X"], scale = M.add(M.scale(scores, scale), attn_mask), 1.0
    weights = LayerHelper("softmax").simple("fused_softmax_mask", ins,
                                            {"scale": scale, "causal": bool(is_causal)})
    if p > 0.0 and training:
        weights = dropout(weights, p)
    return M.transpose(M.matmul(weights, v), [0, 2, 1, 3], name=name)


def _broadcasts_over(mask, scores):
    if not 0 < mask.ndim <= scores.ndim or mask.shape[-1] not in (scores.shape[-1], -1):
        return False
    try:
        return broadcast_shapes(mask.shape, scores.shape) == tuple(scores.shape)
    except ValueError:
        return False


# ---------------------------------------------------------------- small functions
def one_hot(x: Variable, num_classes: int, name: str | None = None) -> Variable:
    """float32 one-hot rows: x's shape + [num_classes] (op `one_hot_v2`, as Paddle 2). An
    index outside [0, num_classes) raises when the program runs.

    Args:
        x (Variable): int32 / int64 class indices, any shape.
        num_classes (int): the depth.
        name (str, optional): a prefix for the output's name.

    Returns:
        Variable: float32.

    Example:
        >>> ids = static.data('ids', [None, 5], 'int64')
        >>> F.one_hot(ids, 10).shape
        (-1, 5, 10)
    """
    _var(x, "one_hot")
    if not isinstance(num_classes, numbers.Integral) or num_classes < 1:
        raise ValueError(f"one_hot: num_classes must be an int >= 1, got {num_classes!r}")
    helper = LayerHelper("one_hot_v2", name)
    out = helper.create_tmp("float32", stop_gradient=True)
    helper.append_op("one_hot_v2", {"X": x}, {"Out": out},
                     {"depth": int(num_classes), "dtype": "float32",
                      "allow_out_of_range": False})
    return out


# F.pad of a 3/4/5-D x by per-spatial-dim amounts: Paddle's lowering to pad3d, the
# unsqueezed axes per (rank, data_format) and the pad3d layout (a 3-D x's length is D:
# its amounts are pad3d's [front, back])
_PAD3D = {("NCL", 3): ([3, 4], "NCDHW"), ("NLC", 3): ([2, 3], "NDHWC"),
          ("NCHW", 4): ([2], "NCDHW"), ("NHWC", 4): ([1], "NDHWC"),
          ("NCDHW", 5): ([], "NCDHW"), ("NDHWC", 5): ([], "NDHWC")}
_PAD_MODES = ("constant", "reflect", "replicate", "circular")


def pad(x: Variable, pad: Sequence[int], mode: str = "constant", value: float = 0.0,
        data_format: str = "NCHW", name: str | None = None) -> Variable:
    """Pad x. With mode 'constant' and 2 * rank entries, `pad` gives (before, after) for
    every dim in order (op `pad`); otherwise, for a 3-, 4- or 5-D x, it gives (before,
    after) pairs for the spatial dims of `data_format`, the last dim first (Paddle's order:
    [left, right, top, bottom, front, back]), lowered as Paddle does to op `pad3d`
    (unsqueeze to 5-D, pad3d, squeeze). Modes: 'constant' (`value`), 'reflect' (mirror,
    edge not repeated), 'replicate' (edge), 'circular' (wrap around).

    Args:
        x (Variable): the input.
        pad (list of int): the amounts, >= 0.
        mode (str): 'constant', 'reflect', 'replicate' or 'circular'.
        value (float): the fill of 'constant'.
        data_format (str): 'NCL', 'NLC', 'NCHW', 'NHWC', 'NCDHW' or 'NDHWC'.
        name (str, optional): a prefix for the output's name.

    Returns:
        Variable: the padded tensor.

    Example:
        >>> x = static.data('x', [None, 3, 4, 4])
        >>> F.pad(x, [1, 1, 2, 0]).shape
        (-1, 3, 6, 6)
        >>> F.pad(x, [2, 1, 0, 3], mode='reflect').shape
        (-1, 3, 7, 7)
    """
    _var(x, "pad")
    if mode not in _PAD_MODES:
        raise ValueError(f"pad: mode must be one of {list(_PAD_MODES)}, got {mode!r}")
    amounts = [int(p) for p in pad]
    if any(p < 0 for p in amounts):
        raise ValueError(f"pad: amounts must be >= 0, got {amounts}")
    if mode == "constant" and len(amounts) == 2 * x.ndim:
        return LayerHelper("pad", name).simple("pad", {"X": x},
                                               {"paddings": amounts, "pad_value": float(value)})
    key = (data_format, x.ndim)
    if key not in _PAD3D or len(amounts) != 2 * (x.ndim - 2):
        raise ValueError(f"pad: pad {amounts} must have 2 entries per spatial dim of a 3-D "
                         f"(NCL/NLC), 4-D (NCHW/NHWC) or 5-D (NCDHW/NDHWC) x"
                         f"{' (or 2 * rank with mode constant)' if mode == 'constant' else ''};"
                         f" got x {x.name} {x.shape} with data_format {data_format!r}")
    axes, fmt = _PAD3D[key]
    y = M.unsqueeze(x, axes) if axes else x
    y = LayerHelper("pad3d", None if axes else name).simple("pad3d", {"X": y}, {
        "paddings": [0] * 4 + amounts if x.ndim == 3 else amounts + [0] * (6 - len(amounts)),
        "mode": mode, "value": float(value),
        "data_format": fmt})
    return M.squeeze(y, axes, name=name) if axes else y


def normalize(x: Variable, p: float = 2, axis: int = 1, epsilon: float = 1e-12,
              name: str | None = None) -> Variable:
    """x / max(||x||_p along axis, epsilon).

    Args:
        x (Variable): the input.
        p (float): the norm's order (> 0).
        axis (int): the axis the norm runs over.
        epsilon (float): the smallest divisor.
        name (str, optional): a prefix for the output's name.

    Returns:
        Variable: x's shape.

    Example:
        >>> x = static.data('x', [None, 3])
        >>> F.normalize(x, axis=-1).shape
        (-1, 3)
    """
    _var(x, "normalize")
    if p <= 0:
        raise ValueError(f"normalize: p must be > 0, got {p}")
    if p == 2:
        norm = M.sqrt(M.sum(M.square(x), axis=axis, keepdim=True))
    else:
        norm = M.pow(M.sum(M.pow(M.abs(x), float(p)), axis=axis, keepdim=True), 1.0 / p)
    return M.divide(x, M.maximum(norm, M.full([1], epsilon, x.dtype)), name=name)


def label_smooth(label: Variable, prior_dist: Variable | None = None, epsilon: float = 0.1,
                 name: str | None = None) -> Variable:
    """(1 - epsilon) * label + epsilon * prior (uniform 1/num_classes by default).

    Args:
        label (Variable): one-hot (or soft) labels, classes on the last axis.
        prior_dist (Variable, optional): [1, num_classes].
        epsilon (float): the smoothing weight in [0, 1].
        name (str, optional): a prefix for the output's name.

    Returns:
        Variable: label's shape.

    Example:
        >>> y = static.data('y', [None, 10])
        >>> F.label_smooth(y, epsilon=0.1).shape
        (-1, 10)
    """
    _var(label, "label_smooth", "label")
    eps = check_probability(epsilon, "label_smooth", "epsilon")
    if prior_dist is None:
        return M.scale(label, 1.0 - eps, eps / label.shape[-1], name=name)
    return M.add(M.scale(label, 1.0 - eps), M.scale(prior_dist, eps), name=name)
