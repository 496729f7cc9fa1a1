"""numbaflow.nn.functional: activations and losses (Paddle 2.x signatures)."""
from .. import tensor_math as M
from ..graph.program import Variable
from ..layer_helper import LayerHelper


def _var(x, fn, arg="x"):
    if not isinstance(x, Variable):
        raise TypeError(f"{fn}: {arg} must be a Variable, got {type(x).__name__}")
    return x


def _act(op_type, x, name=None, **attrs):
    return LayerHelper(op_type, name).simple(op_type, {"X": _var(x, op_type)}, attrs or None)


def relu(x, name=None):
    return _act("relu", x, name)


def sigmoid(x, name=None):
    return _act("sigmoid", x, name)


def tanh(x, name=None):
    return _act("tanh", x, name)


def gelu(x, approximate=False, name=None):
    return _act("gelu", x, name, approximate=bool(approximate))


def leaky_relu(x, negative_slope=0.01, name=None):
    return _act("leaky_relu", x, name, alpha=float(negative_slope))


def softmax(x, axis=-1, dtype=None, name=None):
    if dtype is not None:
        x = M.cast(x, dtype)
    return _act("softmax", x, name, axis=int(axis))


def log_softmax(x, axis=-1, dtype=None, name=None):
    if dtype is not None:
        x = M.cast(x, dtype)
    return _act("log_softmax", x, name, axis=int(axis))


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


def softmax_with_cross_entropy(logits, label, soft_label=False, ignore_index=-100,
                               numeric_stable_mode=True, return_softmax=False, axis=-1):
    """Per-sample loss (the class axis kept with size 1); optionally also the softmax."""
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


def cross_entropy(input, label, weight=None, ignore_index=-100, reduction="mean",
                  soft_label=False, axis=-1, use_softmax=True, name=None):
    """Softmax cross-entropy of logits `input` (or of probabilities with use_softmax=False).

    Hard labels are int64 class indices of shape (N, 1) or (N,); soft labels are
    distributions shaped like input. reduction: 'mean' (over non-ignored samples),
    'sum' or 'none'.
    """
    if weight is not None:
        raise ValueError("cross_entropy: per-class `weight` is not supported; scale the "
                         "per-sample losses (reduction='none') instead")
    if use_softmax:
        loss = softmax_with_cross_entropy(input, label, soft_label, ignore_index, axis=axis)
    else:
        label = _check_label(input, label, soft_label, axis, "cross_entropy")
        loss = LayerHelper("cross_entropy", name).simple(
            "cross_entropy", {"X": input, "Label": label},
            {"soft_label": bool(soft_label), "ignore_index": int(ignore_index)}, out_slot="Y")
    hard_label = None if soft_label else label
    return _reduce_loss(loss, reduction, hard_label if use_softmax or not soft_label else None,
                        ignore_index, "cross_entropy")


def square_error_cost(input, label):
    """(input - label)^2 elementwise (ops elementwise_sub, square)."""
    _var(input, "square_error_cost", "input"), _var(label, "square_error_cost", "label")
    return M.square(M.subtract(input, label))


def mse_loss(input, label, reduction="mean", name=None):
    return _reduce_loss(square_error_cost(input, label), reduction, fn="mse_loss")


# CNN-era layers live in their own modules; nn.functional is their public home.
from .functional_nn import avg_pool2d, batch_norm, dropout, embedding, max_pool2d  # noqa: E402,F401
from .functional_conv import conv2d  # noqa: E402,F401
