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


@settings(max_examples=200, deadline=None)
@given(labelled_scores())
def test_areas_and_rates_match_sklearn(data):
    from sklearn.metrics import average_precision_score, balanced_accuracy_score, roc_auc_score

    y, s = data
    c = threshold_curve(y, s)
    assert abs(c.auroc() - roc_auc_score(y, s)) < 1e-9
    assert abs(c.average_precision() - average_precision_score(y, s)) < 1e-9
    for i in range(len(c)):
        pred = s >= c.thresholds[i]
        assert abs(c.balanced_accuracy[i] - balanced_accuracy_score(y, pred)) < 1e-9
        assert abs(c.specificity[i] - ((~pred & ~y).sum() / (~y).sum())) < 1e-9


@settings(max_examples=50, deadline=None)
@given(st.integers(0, 10_000))
def test_continuous_random_scores_match_sklearn(seed):
    from sklearn.metrics import average_precision_score, roc_auc_score

    rng = np.random.default_rng(seed)
    y = rng.random(500) < 0.3
    y[:2] = [True, False]
    s = rng.normal(size=500) + y * rng.random()
    assert abs(auroc(y, s) - roc_auc_score(y, s)) < 1e-9
    assert abs(auprc(y, s) - average_precision_score(y, s)) < 1e-9


def test_weighted_curve_equals_repeated_rows():
    y = np.array([1, 0, 1, 0, 1], bool)
    s = np.array([0.9, 0.8, 0.4, 0.4, 0.1])
    w = np.array([2, 1, 0, 3, 1])
    a = threshold_curve(y, s, sample_weight=w)
    b = threshold_curve(np.repeat(y, w), np.repeat(s, w))
    keep = np.isin(a.thresholds, b.thresholds)
    np.testing.assert_allclose(a.tp[keep], b.tp)
    assert a.auroc() == pytest.approx(b.auroc())


def test_index_of_threshold():
    c = threshold_curve([1, 0, 1], [0.9, 0.5, 0.2])
    assert c.index_of(0.95) is None
    assert c.index_of(0.9) == 0 and c.index_of(0.6) == 0 and c.index_of(0.5) == 1 and c.index_of(0.0) == 2
