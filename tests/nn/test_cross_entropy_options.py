"""F.cross_entropy's per-class `weight` and `label_smoothing` (Paddle 2.6's, found missing by
the CrossEntropyLoss docstring examples, tests/nn/test_paddle_layer_examples.py): forward
against numpy written from Paddle's definition, gradient against finite differences."""
import numpy as np
import pytest

import numbaflow.nn.functional as F
from tensor_check import check

pytestmark = pytest.mark.usefixtures("fresh_graph_state")
RNG = np.random.default_rng(3)
LOGITS = RNG.standard_normal((5, 4))
LABEL = np.array([0, 3, 1, 3, 2], "int64")
WEIGHT = RNG.uniform(0.2, 2.0, 4)


def _nll(logits, soft):
    logp = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    return -(soft * logp).sum(-1)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_weighted_hard_labels_with_an_ignored_sample(reduction):
    label = LABEL.copy()
    label[2] = 1        # ignore_index: no loss, no weight
    w = np.where(label == 1, 0.0, WEIGHT[label])
    per = _nll(LOGITS, np.eye(4)[label]) * w
    want = {"mean": per.sum() / w.sum(), "sum": per.sum(), "none": per[:, None]}[reduction]
    check(lambda x, y, c: F.cross_entropy(x, y, weight=c, ignore_index=1, reduction=reduction),
          [LOGITS, label, WEIGHT], np.asarray(want))


def test_weighted_soft_labels_divide_by_the_mixed_weights():
    soft = RNG.uniform(0.1, 1.0, (5, 4))
    soft /= soft.sum(-1, keepdims=True)
    w = soft @ WEIGHT
    want = (_nll(LOGITS, soft) * w).sum() / w.sum()
    def build(x, y, c):     # softmax_with_cross_entropy has no label gradient (Paddle's)
        y.stop_gradient = True
        return F.cross_entropy(x, y, weight=c, soft_label=True)
    check(build, [LOGITS, soft, WEIGHT], np.asarray(want))


def test_label_smoothing_mixes_one_hot_labels_with_the_uniform_distribution():
    smooth = np.eye(4)[LABEL] * 0.7 + 0.3 / 4
    # smoothed in one_hot's float32, then cast (Paddle's order): float32's rounding
    check(lambda x, y: F.cross_entropy(x, y, label_smoothing=0.3), [LOGITS, LABEL],
          np.asarray(_nll(LOGITS, smooth).mean()), rtol=1e-7)


def test_bad_weight_and_smoothing_are_refused_at_build_time():
    with pytest.raises(ValueError, match="one entry per class"):
        check(lambda x, y, c: F.cross_entropy(x, y, weight=c), [LOGITS, LABEL, WEIGHT[:3]])
    with pytest.raises(ValueError, match=r"label_smoothing must be in \[0, 1\)"):
        check(lambda x, y: F.cross_entropy(x, y, label_smoothing=1.5), [LOGITS, LABEL])
