"""Paddle 2's other losses with Paddle 2.6's maths and defaults
(python/paddle/nn/functional/loss.py): smooth_l1_loss, nll_loss, binary_cross_entropy,
binary_cross_entropy_with_logits and kl_div write Paddle's own ops (huber_loss, nll_loss,
bce_loss, sigmoid_cross_entropy_with_logits, kldiv_loss) as Paddle does; l1_loss, log_loss,
margin_ranking_loss, soft_margin_loss, hinge_embedding_loss, cosine_similarity and
pairwise_distance are compositions of existing ops, as in Paddle.
"""
from __future__ import annotations

from .. import tensor as M
from ..graph.program import Variable
from ..layer_helper import LayerHelper
from ..tensor._helpers import check_variable as _var
from ..tensor.generator import shared_doc as _shared_doc

# the end of the Args and the Returns of every loss with a `reduction`, written once
REDUCED_DOC = """reduction (str): 'mean', 'sum' or 'none'.
        name (str, optional): accepted for Paddle compatibility.

    Returns:
        Variable: 0-D, or input's shape with reduction='none'."""

__all__ = ["l1_loss", "smooth_l1_loss", "nll_loss", "binary_cross_entropy",
           "binary_cross_entropy_with_logits", "kl_div", "log_loss", "margin_ranking_loss",
           "soft_margin_loss", "hinge_embedding_loss", "cosine_similarity", "pairwise_distance"]


def _reduce(loss, reduction, fn, modes=("mean", "sum", "none")):
    if reduction not in modes:
        raise ValueError(f"{fn}: reduction must be one of {', '.join(map(repr, modes))}, got "
                         f"{reduction!r}")
    if reduction == "sum":
        return M.sum(loss)
    return M.mean(loss) if reduction == "mean" else loss


def _pair(input, label, fn, a="input", b="label"):
    _var(input, fn, a), _var(label, fn, b)
    return input, label


def _same_shape(input, label, fn):
    """Paddle's huber/bce/kldiv ops take equal shapes (no broadcasting): refused here."""
    _pair(input, label, fn)
    a, b = tuple(input.shape), tuple(label.shape)
    if len(a) != len(b) or any(x != y and x >= 0 and y >= 0 for x, y in zip(a, b)):
        raise ValueError(f"{fn}: input {a} and label {b} must have the same shape (Paddle "
                         f"does not broadcast them); reshape or expand the label")
    return input, label


def _act(op, x, **attrs):
    return LayerHelper(op).simple(op, {"X": x}, attrs or None)


@_shared_doc(reduced=REDUCED_DOC)
def l1_loss(input: Variable, label: Variable, reduction: str = "mean",
            name: str | None = None) -> Variable:
    """|input - label|, reduced.

    Args:
        input (Variable): the prediction.
        label (Variable): the target, of input's shape.
        {reduced}

    Example:
        >>> x = static.data('x', [None, 3])
        >>> F.l1_loss(x, static.data('y', [None, 3])).shape
        ()
    """
    input, label = _pair(input, label, "l1_loss")
    return _reduce(M.abs(M.subtract(input, label)), reduction, "l1_loss")


def smooth_l1_loss(input: Variable, label: Variable, reduction: str = "mean",
                   delta: float = 1.0, name: str | None = None) -> Variable:
    """Paddle's huber loss of r = input - label: 0.5 r^2 where |r| <= delta, else
    delta * (|r| - 0.5 delta) (op `huber_loss`, as Paddle); reduced.

    Args:
        input (Variable): the prediction.
        label (Variable): the target, of input's shape (exactly, as Paddle).
        reduction (str): 'mean', 'sum' or 'none'.
        delta (float): the switch point (> 0).
        name (str, optional): accepted for Paddle compatibility.

    Returns:
        Variable: 0-D, or input's shape with reduction='none'.

    Example:
        >>> x = static.data('x', [None, 3])
        >>> F.smooth_l1_loss(x, static.data('y', [None, 3]), delta=0.5).shape
        ()
    """
    input, label = _same_shape(input, label, "smooth_l1_loss")
    if not delta > 0:
        raise ValueError(f"smooth_l1_loss: delta must be > 0, got {delta}")
    helper = LayerHelper("huber_loss")
    constant = input.stop_gradient and label.stop_gradient
    loss, residual = (helper.create_tmp(input.dtype, constant) for _ in range(2))
    # Paddle's op also writes the residual label - input (its gradient op reads it)
    helper.append_op("huber_loss", {"X": input, "Y": label},
                     {"Out": loss, "Residual": residual}, {"delta": float(delta)})
    return _reduce(loss, reduction, "smooth_l1_loss")


def nll_loss(input: Variable, label: Variable, weight: Variable | None = None,
             ignore_index: int = -100, reduction: str = "mean",
             name: str | None = None) -> Variable:
    """Negative log-likelihood: -weight[c] * input[n, c, ...] at c = label[n, ...]; labels
    equal to ignore_index count 0. 'mean' divides by the sum of the picked weights (op
    `nll_loss`, as Paddle; inputs other than 2-D or 4-D viewed as (N, C, 1, -1)).

    Args:
        input (Variable): log-probabilities (N, C) or (N, C, d1, ...).
        label (Variable): int64 class indices (N,) or (N, d1, ...).
        weight (Variable, optional): (C,) per-class weights.
        ignore_index (int): the label that is left out.
        reduction (str): 'mean', 'sum' or 'none'.
        name (str, optional): accepted for Paddle compatibility.

    Returns:
        Variable: 0-D, or label's shape with reduction='none'.

    Example:
        >>> logp = F.log_softmax(static.data('x', [None, 5]))
        >>> F.nll_loss(logp, static.data('y', [None], dtype='int64')).shape
        ()
    """
    input, label = _pair(input, label, "nll_loss")
    if input.ndim < 2 or label.ndim != input.ndim - 1:
        raise ValueError(f"nll_loss: input must be (N, C, ...) and label (N, ...) with one dim "
                         f"less, got {input.shape} and {label.shape}")
    if str(label.dtype) not in ("int64", "int32"):
        raise TypeError(f"nll_loss: label must be int64, got {label.dtype}")
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"nll_loss: reduction must be one of 'mean', 'sum', 'none', got "
                         f"{reduction!r}")
    dims = list(input.shape)
    if input.ndim not in (2, 4):           # as Paddle: the op takes (N, C) or (N, C, H, W)
        if min(dims[2:]) < 0:
            raise ValueError(f"nll_loss: input {dims} must have known dims after the class "
                             f"dim (it is viewed as (N, C, 1, -1), as Paddle does)")
        input = M.reshape(input, [0, dims[1], 1, -1])
        label = M.reshape(label, [0, 1, -1])
    ins = {"X": input, "Label": label}
    if weight is not None:
        ins["Weight"] = _var(weight, "nll_loss", "weight")
    helper = LayerHelper("nll_loss")
    out, total = helper.create_tmp(input.dtype), helper.create_tmp(input.dtype)
    helper.append_op("nll_loss", ins, {"Out": out, "Total_weight": total},
                     {"ignore_index": int(ignore_index), "reduction": reduction})
    if len(dims) not in (2, 4) and reduction == "none":
        out = M.reshape(out, [0] + dims[2:])
    return out


@_shared_doc(reduced=REDUCED_DOC)
def binary_cross_entropy(input: Variable, label: Variable, weight: Variable | None = None,
                         reduction: str = "mean", name: str | None = None) -> Variable:
    """-(label * log(input) + (1 - label) * log(1 - input)) with each log clipped at -100
    (op `bce_loss`, as Paddle); times weight; reduced.

    Args:
        input (Variable): probabilities in [0, 1].
        label (Variable): targets in [0, 1], of input's shape.
        weight (Variable, optional): broadcast to input, multiplies the loss.
        {reduced}

    Example:
        >>> p = F.sigmoid(static.data('x', [None, 3]))
        >>> F.binary_cross_entropy(p, static.data('y', [None, 3])).shape
        ()
    """
    input, label = _same_shape(input, label, "binary_cross_entropy")
    loss = LayerHelper("bce_loss").simple("bce_loss", {"X": input, "Label": label})
    if weight is not None:
        loss = M.multiply(loss, _var(weight, "binary_cross_entropy", "weight"))
    return _reduce(loss, reduction, "binary_cross_entropy")


def binary_cross_entropy_with_logits(logit: Variable, label: Variable,
                                     weight: Variable | None = None, reduction: str = "mean",
                                     pos_weight: Variable | None = None,
                                     name: str | None = None) -> Variable:
    """Sigmoid cross-entropy of logits (op `sigmoid_cross_entropy_with_logits`); with
    pos_weight Paddle's kernel: max(x, 0) - x * label + (1 + (pos_weight - 1) * label) *
    log(1 + exp(-|x|)), and Paddle's gradient (see kernels/nn/logistic_loss.py); times
    weight; reduced.

    Args:
        logit (Variable): the logits.
        label (Variable): targets in [0, 1], of logit's shape.
        weight (Variable, optional): broadcast to logit, multiplies the loss.
        reduction (str): 'mean', 'sum' or 'none'.
        pos_weight (Variable, optional): per-class weight of the positive examples.
        name (str, optional): accepted for Paddle compatibility.

    Returns:
        Variable: 0-D, or logit's shape with reduction='none'.

    Example:
        >>> x = static.data('x', [None, 3])
        >>> F.binary_cross_entropy_with_logits(x, static.data('y', [None, 3])).shape
        ()
    """
    logit, label = _pair(logit, label, "binary_cross_entropy_with_logits", "logit")
    ins = {"X": logit, "Label": label}
    if pos_weight is not None:
        _var(pos_weight, "binary_cross_entropy_with_logits", "pos_weight")
        # as Paddle: the op's pos_weight input is 1 + (pos_weight - 1) * label
        ins["pos_weight"] = M.scale(M.multiply(label, M.scale(pos_weight, 1.0, -1.0)), 1.0, 1.0)
    loss = LayerHelper("sigmoid_cross_entropy_with_logits").simple(
        "sigmoid_cross_entropy_with_logits", ins, {"ignore_index": -100, "normalize": False})
    if weight is not None:
        loss = M.multiply(loss, _var(weight, "binary_cross_entropy_with_logits", "weight"))
    return _reduce(loss, reduction, "binary_cross_entropy_with_logits")


def kl_div(input: Variable, label: Variable, reduction: str = "mean",
           name: str | None = None) -> Variable:
    """Kullback-Leibler divergence of log-probabilities `input` from probabilities `label`:
    label * (log(label) - input), 0 where label <= 0 (op `kldiv_loss`, as Paddle); reduced
    ('batchmean' divides the sum by the batch size).

    Args:
        input (Variable): log-probabilities.
        label (Variable): probabilities, of input's shape.
        reduction (str): 'mean', 'batchmean', 'sum' or 'none'.
        name (str, optional): accepted for Paddle compatibility.

    Returns:
        Variable: 0-D, or input's shape with reduction='none'.

    Example:
        >>> x = static.data('x', [None, 3])
        >>> F.kl_div(x, static.data('y', [None, 3]), reduction='batchmean').shape
        ()
    """
    input, label = _same_shape(input, label, "kl_div")
    loss = LayerHelper("kldiv_loss").simple("kldiv_loss", {"X": input, "Target": label},
                                            {"reduction": "none"}, out_slot="Loss")
    if reduction != "batchmean":
        return _reduce(loss, reduction, "kl_div", ("mean", "batchmean", "sum", "none"))
    index = (slice(None),) + (slice(0, 1),) * (input.ndim - 1)
    batch = input.shape[0] if input.shape[0] > 0 else M.sum(M.ones_like(input[index]))
    return M.divide(M.sum(loss), batch) if isinstance(batch, Variable) else \
        M.scale(M.sum(loss), 1.0 / batch)


def log_loss(input: Variable, label: Variable, epsilon: float = 1e-4,
             name: str | None = None) -> Variable:
    """-label * log(input + epsilon) - (1 - label) * log(1 - input + epsilon), elementwise
    (Paddle's log_loss; no reduction).

    Args:
        input (Variable): probabilities (N, 1).
        label (Variable): targets, of input's shape.
        epsilon (float): keeps the logs finite.
        name (str, optional): accepted for Paddle compatibility.

    Returns:
        Variable: input's shape.

    Example:
        >>> p = F.sigmoid(static.data('x', [None, 1]))
        >>> F.log_loss(p, static.data('y', [None, 1])).shape
        (-1, 1)
    """
    input, label = _pair(input, label, "log_loss")
    pos = M.multiply(label, M.log(M.scale(input, 1.0, float(epsilon))))
    neg = M.multiply(M.scale(label, -1.0, 1.0), M.log(M.scale(input, -1.0, 1.0 + epsilon)))
    return M.scale(M.add(pos, neg), -1.0)


@_shared_doc(reduced=REDUCED_DOC)
def margin_ranking_loss(input: Variable, other: Variable, label: Variable,
                        margin: float = 0.0, reduction: str = "mean",
                        name: str | None = None) -> Variable:
    """relu(-label * (input - other) + margin), reduced.

    Args:
        input (Variable): the first scores.
        other (Variable): the second scores, of input's shape.
        label (Variable): 1 or -1: which should rank higher.
        margin (float): the margin.
        {reduced}

    Example:
        >>> a, b = static.data('a', [None]), static.data('b', [None])
        >>> F.margin_ranking_loss(a, b, static.data('y', [None])).shape
        ()
    """
    _pair(input, other, "margin_ranking_loss", "input", "other")
    d = M.multiply(M.scale(_var(label, "margin_ranking_loss", "label"), -1.0),
                   M.subtract(input, other))
    return _reduce(_act("relu", M.scale(d, 1.0, float(margin))), reduction,
                   "margin_ranking_loss")


@_shared_doc(reduced=REDUCED_DOC)
def soft_margin_loss(input: Variable, label: Variable, reduction: str = "mean",
                     name: str | None = None) -> Variable:
    """log(1 + exp(-label * input)), reduced (labels 1 or -1).

    Args:
        input (Variable): the scores.
        label (Variable): 1 or -1, of input's shape.
        {reduced}

    Example:
        >>> x = static.data('x', [None, 3])
        >>> F.soft_margin_loss(x, static.data('y', [None, 3])).shape
        ()
    """
    input, label = _pair(input, label, "soft_margin_loss")
    z = M.scale(M.multiply(label, input), -1.0)
    return _reduce(_act("softplus", z, beta=1.0, threshold=20.0), reduction, "soft_margin_loss")


@_shared_doc(reduced=REDUCED_DOC)
def hinge_embedding_loss(input: Variable, label: Variable, margin: float = 1.0,
                         reduction: str = "mean", name: str | None = None) -> Variable:
    """input where label == 1, relu(margin - input) where label == -1 (0 elsewhere), reduced.

    Args:
        input (Variable): the distances.
        label (Variable): 1 or -1, of input's shape.
        margin (float): the margin of the dissimilar pairs.
        {reduced}

    Example:
        >>> x = static.data('x', [None, 3])
        >>> F.hinge_embedding_loss(x, static.data('y', [None, 3])).shape
        ()
    """
    input, label = _pair(input, label, "hinge_embedding_loss")
    zero = M.zeros_like(input)
    similar = M.where(M.equal(label, M.full([1], 1.0, dtype=label.dtype)), input, zero)
    hinge = _act("relu", M.scale(input, -1.0, float(margin)))
    dissimilar = M.where(M.equal(label, M.full([1], -1.0, dtype=label.dtype)), hinge, zero)
    return _reduce(M.add(similar, dissimilar), reduction, "hinge_embedding_loss")


def cosine_similarity(x1: Variable, x2: Variable, axis: int = 1, eps: float = 1e-8) -> Variable:
    """sum(x1 * x2) / sqrt(max(sum(x1^2) * sum(x2^2), eps^2)) along `axis` (Paddle's).

    Args:
        x1 (Variable): the first vectors.
        x2 (Variable): the second, broadcastable to x1.
        axis (int): the vector dim.
        eps (float): keeps the division finite.

    Returns:
        Variable: x1's shape without `axis`.

    Example:
        >>> a, b = static.data('a', [None, 4]), static.data('b', [None, 4])
        >>> F.cosine_similarity(a, b).shape
        (-1,)
    """
    _pair(x1, x2, "cosine_similarity", "x1", "x2")
    w12 = M.sum(M.multiply(x1, x2), axis=axis)
    w1, w2 = M.sum(M.square(x1), axis=axis), M.sum(M.square(x2), axis=axis)
    return M.divide(w12, M.sqrt(M.maximum(M.multiply(w1, w2), float(eps) ** 2)))


def pairwise_distance(x: Variable, y: Variable, p: float = 2.0, epsilon: float = 1e-6,
                      keepdim: bool = False, name: str | None = None) -> Variable:
    """The p-norm of x - y + epsilon along the last dim (Paddle's): (sum |d|^p)^(1/p), the
    largest |d| for p = inf, the smallest for p = -inf.

    Args:
        x (Variable): (N, D) or (D,).
        y (Variable): broadcastable to x.
        p (float): the norm's order (not 0).
        epsilon (float): added to the difference.
        keepdim (bool): keep the last dim (size 1).
        name (str, optional): accepted for Paddle compatibility.

    Returns:
        Variable: x's shape without the last dim (or with it as 1).

    Example:
        >>> a, b = static.data('a', [None, 4]), static.data('b', [None, 4])
        >>> F.pairwise_distance(a, b).shape
        (-1,)
    """
    x, y = _pair(x, y, "pairwise_distance", "x", "y")
    p = float(p)
    if p == 0.0:
        raise NotImplementedError("pairwise_distance: p=0 (a count of non-zeros) is not "
                                  "supported; give p > 0 or +-inf")
    d = M.abs(M.scale(M.subtract(x, y), 1.0, float(epsilon)))
    if p == float("inf"):
        return M.max(d, axis=-1, keepdim=keepdim)
    if p == float("-inf"):
        return M.min(d, axis=-1, keepdim=keepdim)
    return M.pow(M.sum(M.pow(d, p), axis=-1, keepdim=keepdim), 1.0 / p)
