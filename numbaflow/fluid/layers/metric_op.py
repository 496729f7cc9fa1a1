"""fluid.layers.auc / paddle.static.auc: the ROC AUC of a binary classifier, global (over
every run so far) and of the current batch (Paddle's default slide_steps=1)."""
from __future__ import annotations

from ...graph.program import Variable
from ...layer_helper import LayerHelper
from ...utils import unique_name
from .tensor import create_global_var

__all__ = ["auc"]


def auc(input: Variable, label: Variable, curve: str = "ROC", num_thresholds: int = 2 ** 12 - 1,
        topk: int = 1, slide_steps: int = 1) -> tuple:
    """ROC AUC of a binary classifier, over every run so far and over the current batch
    (Paddle 1.8's shapes: the AUCs are float64 of shape (1,)).

    Args:
        input (Variable): (N, 2) class probabilities; column 1 is the positive class.
        label (Variable): (N, 1) int labels, non-zero = positive.
        curve (str): only "ROC".
        num_thresholds (int): buckets of the score.
        topk (int): accepted for Paddle compatibility.
        slide_steps (int): only 1 (the batch AUC is the current batch's).

    Returns:
        tuple: (auc, batch_auc, [batch_stat_pos, batch_stat_neg, stat_pos, stat_neg]); the
        stats are int64 bucket counts, stat_pos / stat_neg persist over runs.

    Example:
        >>> probs = fluid.layers.data('probs', [2])
        >>> label = fluid.layers.data('label', [1], dtype='int64')
        >>> auc_out, batch_auc, _ = fluid.layers.auc(probs, label)
        >>> auc_out.shape
        (1,)
    """
    return _auc(input, label, curve, num_thresholds, slide_steps, one_d=True)


def _auc(input, label, curve, num_thresholds, slide_steps, one_d):
    for arg, v in (("input", input), ("label", label)):
        if not isinstance(v, Variable):
            raise TypeError(f"auc: {arg} must be a Variable, got {type(v).__name__}")
    if curve != "ROC":
        raise ValueError(f"auc: curve {curve!r} is not supported; only 'ROC'")
    if slide_steps != 1:
        raise ValueError(f"auc: slide_steps={slide_steps} is not supported; the batch AUC "
                         f"is over the current batch (slide_steps=1)")
    nt = int(num_thresholds)
    if nt < 1:
        raise ValueError(f"auc: num_thresholds must be >= 1, got {num_thresholds}")
    helper = LayerHelper("auc")
    stats = [create_global_var([nt + 1], 0, "int64", persistable=True,
                               name=unique_name.generate(f"auc.{s}")) for s in ("pos", "neg")]
    batch = []
    for s in ("pos", "neg"):
        v = helper.create_tmp("int64", stop_gradient=True)
        helper.append_op("fill_constant", outputs={"Out": v},
                         attrs={"shape": [nt + 1], "value": 0.0, "dtype": "int64"})
        batch.append(v)
    outs = []
    for pos, neg in (stats, batch):
        a = helper.create_tmp("float64", stop_gradient=True)
        helper.append_op("auc", {"Predict": input, "Label": label, "StatPos": pos,
                                 "StatNeg": neg},
                         {"AUC": a, "StatPosOut": pos, "StatNegOut": neg},
                         {"curve": curve, "num_thresholds": nt, "slide_steps": 1})
        outs.append(a)
    if one_d:
        from .nn import _scalar_1d
        outs = [_scalar_1d(a) for a in outs]
    return outs[0], outs[1], [batch[0], batch[1], stats[0], stats[1]]
