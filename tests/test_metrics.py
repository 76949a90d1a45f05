import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import confusion_matrix, f1_score, precision_recall_curve, roc_curve

from verifybench.metrics import auprc, auroc, best_fbeta_index, threshold_curve


@st.composite
def labelled_scores(draw):
    n = draw(st.integers(2, 60))
    y = draw(st.lists(st.booleans(), min_size=n, max_size=n).filter(lambda v: any(v) and not all(v)))
    # Few distinct values, so ties are the rule rather than the exception.
    s = draw(st.lists(st.sampled_from([0.0, 0.1, 0.25, 0.5, 0.5, 0.75, 1.0]), min_size=n, max_size=n))
    return np.array(y), np.array(s)


@settings(max_examples=200, deadline=None)
@given(labelled_scores())
def test_curve_matches_sklearn_with_ties(data):
    y, s = data
    c = threshold_curve(y, s)
    fpr, tpr, roc_thr = roc_curve(y, s, drop_intermediate=False)
    # sklearn prepends an infinite threshold; the rest are the same distinct scores, decreasing.
    np.testing.assert_allclose(c.thresholds, roc_thr[1:])
    np.testing.assert_allclose(c.tp / y.sum(), tpr[1:], atol=1e-12)
    np.testing.assert_allclose(c.fp / (~y).sum(), fpr[1:], atol=1e-12)
    prec, rec, pr_thr = precision_recall_curve(y, s)
    by_thr = dict(zip(pr_thr, prec[:-1]))
    for t, p in zip(c.thresholds, c.precision):
        if t in by_thr:
            assert p == pytest.approx(by_thr[t], abs=1e-12)
    for i in range(len(c)):
        pred = s >= c.thresholds[i]
        tn, fp, fn, tp = confusion_matrix(y, pred, labels=[False, True]).ravel()
        assert (c.tp[i], c.fp[i], c.fn[i], c.tn[i]) == (tp, fp, fn, tn)
        assert c.f1[i] == pytest.approx(f1_score(y, pred, zero_division=0.0), abs=1e-12)


def test_best_f1_threshold():
    y = np.array([0, 0, 1, 1, 1, 0])
    s = np.array([0.1, 0.2, 0.8, 0.9, 0.3, 0.35])
    c = threshold_curve(y, s)
    t = c.thresholds[best_fbeta_index(c)]
    assert f1_score(y, s >= t) == pytest.approx(c.f1.max())
    assert t == pytest.approx(0.3)


def test_one_class_gives_nan_not_a_crash():
    assert np.isnan(auroc([1, 1], [0.2, 0.4]))
    assert np.isnan(auprc([0, 0], [0.2, 0.4]))


def test_nan_scores_are_refused():
    with pytest.raises(ValueError, match="NaN"):
        threshold_curve([0, 1], [0.1, float("nan")])
