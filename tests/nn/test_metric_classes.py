"""paddle.metric's classes against scikit-learn / numpy written from the definitions and
against real Paddle's numbers (tests/fixtures/paddle/metrics.npz, from
make_metric_fixtures.py)."""
import os

import numpy as np
import pytest

import numbaflow as paddle
from numbaflow import static
from locations import TESTS

FIXTURE = os.path.join(str(TESTS), "fixtures", "paddle", "metrics.npz")
metrics = pytest.importorskip("sklearn.metrics")


@pytest.fixture(scope="module")
def ref():
    return np.load(FIXTURE)


def test_accuracy_topk_against_numpy_and_paddle(ref):
    acc = paddle.metric.Accuracy(topk=(1, 3))
    seen_hits, seen = np.zeros(2), 0
    for b in range(3):
        pred, label = ref[f"acc_pred_{b}"], ref[f"acc_label_{b}"]
        correct = acc.compute(pred, label)
        np.testing.assert_array_equal(correct, ref[f"acc_correct_{b}"])
        batch = acc.update(correct)
        # from the definition: the label among the k highest scores
        rank = (pred > pred[np.arange(len(pred)), label[:, 0]][:, None]).sum(axis=1)
        want = [np.mean(rank < 1), np.mean(rank < 3)]
        np.testing.assert_allclose(batch, want)
        np.testing.assert_allclose(batch, ref[f"acc_update_{b}"])
        seen_hits += np.array(want) * len(pred)
        seen += len(pred)
        np.testing.assert_allclose(acc.accumulate(), seen_hits / seen)
        np.testing.assert_allclose(acc.accumulate(), ref[f"acc_accumulate_{b}"])
    assert ",".join(acc.name()) == str(ref["names"][0])
    acc.reset()
    assert acc.accumulate() == [0.0, 0.0]


def test_accuracy_one_hot_labels(ref):
    acc = paddle.metric.Accuracy()
    onehot = np.eye(10, dtype="float32")[ref["acc_label_0"][:, 0]]
    assert acc.update(acc.compute(ref["acc_pred_0"], onehot)) == \
        pytest.approx(float(ref["acc_onehot_update"]))
    assert acc.name() == [str(ref["names"][1])]


def test_accuracy_compute_on_variables_matches_arrays(fresh_graph_state, ref):
    main, startup = static.Program(), static.Program()
    acc = paddle.metric.Accuracy(topk=(1, 3))
    with static.program_guard(main, startup):
        pred = static.data("pred", [None, 10])
        label = static.data("label", [None, 1], dtype="int64")
        correct = acc.compute(pred, label)
    exe = static.Executor(paddle.CPUPlace())
    (got,) = exe.run(main, feed={"pred": ref["acc_pred_1"], "label": ref["acc_label_1"]},
                     fetch_list=[correct])
    np.testing.assert_array_equal(got, ref["acc_correct_1"])


def test_precision_recall_against_sklearn_and_paddle(ref):
    prec, rec = paddle.metric.Precision(), paddle.metric.Recall()
    preds, labels = [], []
    for b in range(3):
        p, y = ref[f"pr_pred_{b}"], ref[f"pr_label_{b}"]
        prec.update(p, y)
        rec.update(p[:, None], y[:, None])          # (N, 1) as well as (N,)
        preds.append(p)
        labels.append(y)
        P, Y = np.concatenate(preds), np.concatenate(labels)
        # Paddle's rounding: precision floor(p + 0.5), recall np.rint (0.5 -> 0)
        assert prec.accumulate() == pytest.approx(
            metrics.precision_score(Y, np.floor(P + 0.5).astype(int), zero_division=0))
        assert rec.accumulate() == pytest.approx(
            metrics.recall_score(Y, np.rint(P).astype(int), zero_division=0))
        assert prec.accumulate() == pytest.approx(float(ref[f"precision_{b}"]))
        assert rec.accumulate() == pytest.approx(float(ref[f"recall_{b}"]))
    assert (prec.name(), rec.name()) == ("precision", "recall")
    with pytest.raises(ValueError, match="one value per sample"):
        prec.update(np.zeros((4, 2)), np.zeros(4))


@pytest.mark.parametrize("n", [4095, 100])
def test_auc_streaming_against_sklearn_and_paddle(ref, n):
    auc = paddle.metric.Auc(num_thresholds=n)
    preds, labels = [], []
    for b in range(3):
        p, y = ref[f"auc_pred_{b}"], ref[f"auc_label_{b}"]
        auc.update(p, y)
        preds.append(p)
        labels.append(y)
        assert auc.accumulate() == pytest.approx(float(ref[f"auc{n}_{b}"]), abs=1e-12)
        P, Y = np.concatenate(preds), np.concatenate(labels)[:, 0]
        # sklearn's exact ROC AUC of the binned scores (ties in a bucket count half)
        binned = np.floor(P[:, 1] * n)
        assert auc.accumulate() == pytest.approx(metrics.roc_auc_score(Y, binned), abs=1e-12)
    exact = metrics.roc_auc_score(Y, P[:, 1])
    assert abs(auc.accumulate() - exact) < (0.02 if n == 100 else 1e-3)
    auc.reset()
    assert auc.accumulate() == 0.0


def test_auc_refuses_what_it_cannot_do():
    with pytest.raises(ValueError, match="ROC"):
        paddle.metric.Auc(curve="PR")
    with pytest.raises(ValueError, match="softmax"):
        paddle.metric.Auc().update(np.array([[0.0, 3.0]]), np.array([1]))
    with pytest.raises(ValueError, match="numpy ndarray"):
        paddle.metric.Auc().update([[0.5, 0.5]], [1])
