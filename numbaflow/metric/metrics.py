"""paddle.metric's streaming metric classes: Metric, Accuracy, Precision, Recall, Auc.

They follow Paddle 2.6's python/paddle/metric/metrics.py number for number (rounding,
binning and the trapezoid sum included): `update` takes numpy arrays (fetched values)
and returns the batch's value, `accumulate` the value over every batch since `reset`.
`Accuracy.compute(pred, label)` turns scores into the per-sample "correct" matrix that
`update` takes (on arrays, or as graph ops on Variables, to fetch).

>>> m = paddle.metric.Accuracy()
>>> m.update(m.compute(np.array([[0.1, 0.9], [0.8, 0.2]]), np.array([[1], [1]])))
0.5
"""
from __future__ import annotations

import abc
from typing import Any

import numpy as np

from ..tensor.logic import equal
from ..tensor.manipulation import cast, reshape
from ..tensor.search import argmax, topk


def _array(value, what, owner):
    if hasattr(value, "__array__") and not isinstance(value, np.ndarray):
        value = np.asarray(value)
    if not isinstance(value, np.ndarray):
        raise ValueError(f"{owner}.update: {what} must be a numpy ndarray (a fetched value), "
                         f"got {type(value).__name__}")
    return value


class Metric(abc.ABC):
    """The base of streaming metrics: `reset()`, `update(*batch)` (the batch's value),
    `accumulate()` (the value since reset), `name()`; `compute(*outputs)` prepares
    `update`'s arguments from a model's outputs and labels (default: as they are).

    Example:
        >>> class Mean(paddle.metric.Metric):
        ...     def __init__(self): self.reset()
        ...     def reset(self): self.s, self.n = 0.0, 0
        ...     def update(self, x): self.s += float(np.sum(x)); self.n += x.size
        ...     def accumulate(self): return self.s / max(self.n, 1)
        ...     def name(self): return 'mean'
        >>> m = Mean(); m.update(np.array([1.0, 3.0])); m.accumulate()
        2.0
    """

    @abc.abstractmethod
    def reset(self) -> None:
        """Forget every batch."""

    @abc.abstractmethod
    def update(self, *args: Any) -> Any:
        """Add a batch.

        Args:
            *args: the batch's arrays (what `compute` returned, fetched).

        Returns:
            the batch's value.
        """

    @abc.abstractmethod
    def accumulate(self) -> Any:
        """The value over every batch since reset.

        Returns:
            float or list of float.
        """

    @abc.abstractmethod
    def name(self) -> Any:
        """The metric's name.

        Returns:
            str or list of str (one per value).
        """

    def compute(self, *args: Any) -> Any:
        """Prepare `update`'s arguments from outputs and labels.

        Args:
            *args: the model's outputs and labels.

        Returns:
            tuple: by default the arguments as they are.
        """
        return args


class Accuracy(Metric):
    """Top-k accuracy over batches (Paddle's paddle.metric.Accuracy).

    Args:
        topk (tuple of int): the k's to report (default (1,)).
        name (str, optional): the name prefix (default 'acc'; 'acc_top{k}' per k when
            max(topk) > 1).

    Example:
        >>> m = paddle.metric.Accuracy(topk=(1, 2))
        >>> pred = np.array([[0.1, 0.7, 0.2], [0.5, 0.2, 0.3]])
        >>> m.update(m.compute(pred, np.array([2, 0])))
        [0.5, 1.0]
        >>> m.name()
        ['acc_top1', 'acc_top2']
    """

    def __init__(self, topk: tuple = (1,), name: str | None = None) -> None:
        self.topk = tuple(topk)
        if not self.topk or not all(isinstance(k, int) and k >= 1 for k in self.topk):
            raise ValueError(f"Accuracy: topk must be a tuple of ints >= 1, got {topk!r}")
        self.maxk = max(self.topk)
        name = name or "acc"
        self._name = [f"{name}_top{k}" for k in self.topk] if self.maxk != 1 else [name]
        self.reset()

    def compute(self, pred: Any, label: Any, *args: Any) -> Any:
        """(N, maxk) float32: 1 where the i-th highest score's class is the label.

        Args:
            pred: scores (N, C), an array or a Variable.
            label: class indices (N,) / (N, 1), or one-hot (N, C).

        Returns:
            the hits, an array (from arrays) or a Variable (graph ops) to fetch and pass
            to `update`.
        """
        if isinstance(pred, np.ndarray) or not hasattr(pred, "block"):
            pred, label = np.asarray(pred), np.asarray(label)
            top = np.argsort(-pred, axis=-1, kind="stable")[..., :self.maxk]
            if label.ndim == 1 or (label.ndim == 2 and label.shape[-1] == 1):
                label = label.reshape(-1, 1)
            elif label.shape[-1] != 1:
                label = np.argmax(label, axis=-1)[..., None]
            return (top == label).astype("float32")
        _, top = topk(pred, k=self.maxk)
        if len(label.shape) == 1 or (len(label.shape) == 2 and label.shape[-1] == 1):
            label = reshape(label, (-1, 1))
        elif label.shape[-1] != 1:
            label = argmax(label, axis=-1, keepdim=True)
        return cast(equal(top, cast(label, top.dtype)), "float32")

    def update(self, correct: Any, *args: Any) -> float | list:
        """Add a batch's `compute` result.

        Args:
            correct (ndarray): the hits `compute` gave.

        Returns:
            float or list: the batch's accuracy (a list for several k).
        """
        correct = _array(correct, "correct", "Accuracy")
        num_samples = int(np.prod(np.array(correct.shape[:-1])))
        accs = []
        for i, k in enumerate(self.topk):
            num_corrects = correct[..., :k].sum()
            accs.append(float(num_corrects) / num_samples)
            self.total[i] += num_corrects
            self.count[i] += num_samples
        return accs[0] if len(self.topk) == 1 else accs

    def reset(self) -> None:
        self.total = [0.0] * len(self.topk)
        self.count = [0] * len(self.topk)

    def accumulate(self):
        res = [float(t) / c if c > 0 else 0.0 for t, c in zip(self.total, self.count)]
        return res[0] if len(self.topk) == 1 else res

    def name(self):
        return self._name


def _per_sample(preds, labels, owner):
    preds, labels = _array(preds, "preds", owner), _array(labels, "labels", owner)
    n = labels.shape[0]
    if preds.size != n or labels.size != n:
        raise ValueError(f"{owner}.update: preds and labels must hold one value per sample "
                         f"(shape (N,) or (N, 1)); got {preds.shape} and {labels.shape}")
    return preds.reshape(n), labels.reshape(n)


class _BinaryCounts(Metric):
    """Precision and Recall: counts over batches of one probability and one label per
    sample (`_count` adds a batch)."""

    def __init__(self, name: str) -> None:
        self._name = name
        self.reset()

    def update(self, preds: np.ndarray, labels: np.ndarray) -> None:
        """Add a batch.

        Args:
            preds (ndarray): (N,) or (N, 1) probabilities of the positive class.
            labels (ndarray): (N,) or (N, 1), 1 for positive.
        """
        self._count(*_per_sample(preds, labels, type(self).__name__))

    def name(self):
        return self._name


class Precision(_BinaryCounts):
    """Binary precision tp / (tp + fp); a prediction counts as 1 when it rounds to 1
    (floor(p + 0.5), as Paddle).

    Args:
        name (str): default 'precision'.

    Example:
        >>> m = paddle.metric.Precision()
        >>> m.update(np.array([0.9, 0.8, 0.2, 0.6]), np.array([1, 0, 0, 1]))
        >>> m.accumulate()
        0.6666666666666666
    """

    def __init__(self, name: str = "precision") -> None:
        super().__init__(name)

    def _count(self, preds, labels):
        positive = np.floor(preds + 0.5).astype("int32") == 1
        self.tp += int(np.sum(positive & (labels == 1)))
        self.fp += int(np.sum(positive & (labels != 1)))

    def reset(self) -> None:
        self.tp = self.fp = 0

    def accumulate(self):
        ap = self.tp + self.fp
        return float(self.tp) / ap if ap != 0 else 0.0


class Recall(_BinaryCounts):
    """Binary recall tp / (tp + fn); a prediction counts as 1 when np.rint rounds it to
    1 (as Paddle: 0.5 rounds to 0).

    Args:
        name (str): default 'recall'.

    Example:
        >>> m = paddle.metric.Recall()
        >>> m.update(np.array([0.9, 0.8, 0.2, 0.6]), np.array([1, 0, 1, 1]))
        >>> m.accumulate()
        0.6666666666666666
    """

    def __init__(self, name: str = "recall") -> None:
        super().__init__(name)

    def _count(self, preds, labels):
        actual = labels == 1
        hit = np.rint(preds).astype("int32") == labels
        self.tp += int(np.sum(actual & hit))
        self.fn += int(np.sum(actual & ~hit))

    def reset(self) -> None:
        self.tp = self.fn = 0

    def accumulate(self):
        recall = self.tp + self.fn
        return float(self.tp) / recall if recall != 0 else 0.0


class Auc(Metric):
    """Streaming area under the ROC curve: scores binned into num_thresholds + 1 buckets
    (bucket int(p * num_thresholds) of the positive class's score p), the area summed
    by trapezoids from the highest bucket down (Paddle's Auc).

    Args:
        curve (str): 'ROC' (the only curve Paddle's class computes).
        num_thresholds (int): the buckets less one (default 4095).
        name (str): default 'auc'.

    Example:
        >>> m = paddle.metric.Auc()
        >>> p1 = np.array([0.1, 0.4, 0.35, 0.8])
        >>> m.update(np.stack([1 - p1, p1], axis=1), np.array([0, 0, 1, 1]))
        >>> m.accumulate()
        0.75
    """

    def __init__(self, curve: str = "ROC", num_thresholds: int = 4095, name: str = "auc") -> None:
        if curve != "ROC":
            raise ValueError(f"Auc: curve must be 'ROC' (Paddle's Auc class computes only "
                             f"ROC), got {curve!r}")
        if not isinstance(num_thresholds, int) or num_thresholds < 1:
            raise ValueError(f"Auc: num_thresholds must be an int >= 1, got {num_thresholds!r}")
        self._curve = curve
        self._num_thresholds = num_thresholds
        self._name = name
        self.reset()

    def update(self, preds: np.ndarray, labels: np.ndarray) -> None:
        """Add a batch.

        Args:
            preds (ndarray): (N, 2) probabilities (column 1: the positive class).
            labels (ndarray): (N,) or (N, 1), nonzero for positive.
        """
        preds, labels = _array(preds, "preds", "Auc"), _array(labels, "labels", "Auc")
        if preds.ndim != 2 or preds.shape[1] < 2 or preds.shape[0] != labels.shape[0]:
            raise ValueError(f"Auc.update: preds must be (N, 2) class probabilities and labels "
                             f"(N,) or (N, 1); got {preds.shape} and {labels.shape}")
        bins = (preds[:, 1] * self._num_thresholds).astype(np.int64)
        if bins.size and (bins.max() > self._num_thresholds or bins.min() < 0):
            raise ValueError("Auc.update: the positive class's probabilities must lie in "
                             "[0, 1]; apply softmax (or sigmoid) to the scores first")
        positive = labels.reshape(len(labels)).astype(bool)
        np.add.at(self._stat_pos, bins[positive], 1.0)
        np.add.at(self._stat_neg, bins[~positive], 1.0)

    @staticmethod
    def trapezoid_area(x1: float, x2: float, y1: float, y2: float) -> float:
        """The area of the trapezoid between x1 and x2 under heights y1, y2.

        Args:
            x1, x2 (float): its sides' x.
            y1, y2 (float): its sides' heights.

        Returns:
            float: |x1 - x2| * (y1 + y2) / 2.
        """
        return abs(x1 - x2) * (y1 + y2) / 2.0

    def accumulate(self):
        # from the highest bucket down: cumulative negatives (x) against positives (y)
        pos = np.cumsum(self._stat_pos[::-1])
        neg = np.cumsum(self._stat_neg[::-1])
        tot_pos, tot_neg = float(pos[-1]), float(neg[-1])
        prev_pos = np.concatenate([[0.0], pos[:-1]])
        prev_neg = np.concatenate([[0.0], neg[:-1]])
        auc = float(np.sum(np.abs(neg - prev_neg) * (pos + prev_pos) / 2.0))
        return auc / tot_pos / tot_neg if tot_pos > 0.0 and tot_neg > 0.0 else 0.0

    def reset(self) -> None:
        self._stat_pos = np.zeros(self._num_thresholds + 1)
        self._stat_neg = np.zeros(self._num_thresholds + 1)

    def name(self):
        return self._name
