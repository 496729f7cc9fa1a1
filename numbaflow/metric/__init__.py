"""numbaflow.metric (paddle.metric): the `accuracy` op, and the streaming metric classes
Metric, Accuracy, Precision, Recall and Auc (metrics.py: numpy, on fetched values).

>>> logits = static.data('logits', [None, 10])
>>> label = static.data('label', [None, 1], dtype='int64')
>>> paddle.metric.accuracy(logits, label, k=5).shape
()
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..layer_helper import LayerHelper
from .metrics import Accuracy, Auc, Metric, Precision, Recall  # noqa: F401

if TYPE_CHECKING:
    from ..graph.program import Variable

__all__ = ["accuracy", "Metric", "Accuracy", "Precision", "Recall", "Auc"]


def accuracy(input: Variable, label: Variable, k: int = 1, correct: Variable | None = None,
             total: Variable | None = None, name: str | None = None) -> Variable:
    """Fraction of rows whose label is among the top-k scores of `input` (op accuracy).

    Args:
        input (Variable): scores or probabilities (N, C).
        label (Variable): int64 class indices (N, 1).
        k (int): how many top scores count.
        correct (Variable, optional): also receives the number correct (int64).
        total (Variable, optional): also receives the number of rows (int64).
        name (str, optional): a prefix for the output's name.

    Returns:
        Variable: 0-D float32.

    Raises:
        TypeError: input or label is not a Variable, or label is not an integer type.

    Example:
        >>> logits = static.data('logits', [None, 10])
        >>> label = static.data('label', [None, 1], dtype='int64')
        >>> acc = paddle.metric.accuracy(F.softmax(logits), label)
        >>> acc.shape, acc.dtype
        ((), dtype('float32'))
    """
    from ..graph.program import Variable
    for arg, v in (("input", input), ("label", label)):
        if not isinstance(v, Variable):
            raise TypeError(f"accuracy: {arg} must be a Variable, got {type(v).__name__}")
    if label.dtype.kind not in "iu":
        raise TypeError(f"accuracy: label {label.name} must be int64, got {label.dtype}")
    helper = LayerHelper("accuracy", name)
    acc = helper.create_tmp("float32", stop_gradient=True)
    correct = correct or helper.create_tmp("int64", stop_gradient=True)
    total = total or helper.create_tmp("int64", stop_gradient=True)
    helper.append_op("accuracy", {"Out": input, "Label": label},
                     {"Accuracy": acc, "Correct": correct, "Total": total}, {"k": int(k)})
    return acc
