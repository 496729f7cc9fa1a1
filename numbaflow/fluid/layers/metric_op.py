"""fluid.layers.auc / paddle.static.auc: the ROC AUC of a binary classifier, global (over
every run so far) and of the current batch (Paddle's default slide_steps=1)."""
from __future__ import annotations

from ... import static
from ...graph.program import Variable
from .nn import scalar_1d

__all__ = ["auc"]


def auc(input: Variable, label: Variable, curve: str = "ROC", num_thresholds: int = 2 ** 12 - 1,
        topk: int = 1, slide_steps: int = 1) -> tuple:
    """ROC AUC of a binary classifier, over every run so far and over the current batch
    (Paddle 1.8's shapes: the AUCs are float64 of shape (1,)).

    Args:
        input, label, curve, num_thresholds, topk, slide_steps: as `static.auc`'s.

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
    auc_out, batch_auc, stats = static.auc(input, label, curve, num_thresholds, topk, slide_steps)
    return scalar_1d(auc_out), scalar_1d(batch_auc), stats
