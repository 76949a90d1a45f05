import numpy as np
import pytest
from sklearn.metrics import average_precision_score, brier_score_loss, roc_auc_score

from verifybench.metrics import (
    confusion_at,
    counts_intervals,
    errors_as_wrong,
    mcnemar,
    paired_bootstrap,
    rank_intervals,
    threshold_curve,
)
from verifybench.metrics.calibration import brier, expected_calibration_error, reliability
from verifybench.metrics.curves import auprc, auroc
from verifybench.metrics.operating import latency_summary, pareto_front
from verifybench.metrics.shortcuts import shortcut_report, surface_cues


def naive_stratified_bootstrap(y, s, stat, n_boot, seed):
    rng = np.random.default_rng(seed)
    pos, neg = np.flatnonzero(y), np.flatnonzero(~y)
    out = []
    for _ in range(n_boot):
        idx = np.r_[rng.choice(pos, len(pos)), rng.choice(neg, len(neg))]
        out.append(stat(y[idx], s[idx]))
    return np.quantile(out, [0.025, 0.975])


def sample(n=600, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.random(n) < 0.4
    s = np.round(rng.normal(size=n) + 0.8 * y, 2)  # rounding makes ties
    return y, s


def test_count_intervals_match_a_naive_bootstrap():
    y, s = sample()
    t = 0.4
    pred = s >= t
    tp, fp = int((pred & y).sum()), int((pred & ~y).sum())
    fn, tn = int((~pred & y).sum()), int((~pred & ~y).sum())
    fast = counts_intervals(tp, fp, fn, tn, n_boot=4000, seed=1)

    def f1(yy, ss):
        p = ss >= t
        return 2 * (p & yy).sum() / (2 * (p & yy).sum() + (p & ~yy).sum() + (~p & yy).sum())

    slow = naive_stratified_bootstrap(y, s, f1, 2000, seed=2)
    assert fast["f1"].low == pytest.approx(slow[0], abs=0.015)
    assert fast["f1"].high == pytest.approx(slow[1], abs=0.015)
    assert fast["recall"].low < tp / (tp + fn) < fast["recall"].high


def test_rank_intervals_match_a_naive_bootstrap():
    y, s = sample()
    fast = rank_intervals(y, s, n_boot=3000, seed=1)
    slow = naive_stratified_bootstrap(y, s, lambda a, b: threshold_curve(a, b).auroc(), 1500, seed=2)
    assert fast["auroc"].low == pytest.approx(slow[0], abs=0.012)
    assert fast["auroc"].high == pytest.approx(slow[1], abs=0.012)
    point = threshold_curve(y, s).average_precision()
    assert fast["auprc"].low < point < fast["auprc"].high


def test_binned_rank_intervals_on_continuous_scores():
    rng = np.random.default_rng(5)
    y = rng.random(50_000) < 0.3
    s = rng.normal(size=50_000) + y
    ci = rank_intervals(y, s, n_boot=500, seed=0)
    point = threshold_curve(y, s).auroc()
    assert ci["auroc"].low < point < ci["auroc"].high
    assert ci["auroc"].high - ci["auroc"].low < 0.02


def test_intervals_are_seeded():
    y, s = sample()
    assert rank_intervals(y, s, seed=7) == rank_intervals(y, s, seed=7)
    assert rank_intervals(y, s, seed=7) != rank_intervals(y, s, seed=8)


def test_mcnemar_exact():
    y = np.ones(12, bool)
    a = np.array([1] * 10 + [0] * 2, bool)
    b = np.array([0] * 10 + [1] * 2, bool)
    r = mcnemar(y, a, b)
    assert (r["a_only_right"], r["b_only_right"]) == (10, 2)
    assert r["p_value"] == pytest.approx(0.03857421875)  # two-sided binomial, 12 trials, p=0.5


def test_paired_bootstrap_sees_a_real_difference_and_not_a_fake_one():
    rng = np.random.default_rng(0)
    y = rng.random(800) < 0.5
    good = y + rng.normal(scale=0.6, size=800)
    bad = y + rng.normal(scale=2.0, size=800)
    r = paired_bootstrap(y, good, bad, 0.5, 0.5, n_boot=300, seed=0)
    assert r["auroc"]["ci"][0] > 0 and r["auroc"]["p_value"] < 0.01
    assert r["auroc"]["a"] == pytest.approx(threshold_curve(y, good).auroc())
    same = paired_bootstrap(y, good, good, 0.5, 0.5, n_boot=100, seed=0)
    assert same["auroc"]["diff"] == 0 and same["f1"]["ci"] == [0, 0]


@pytest.mark.slow
def test_paired_bootstrap_matches_a_naive_paired_bootstrap():
    """The vectorised resampling (one weight matrix per chunk) against resampling the cases one by one."""
    y, s = sample()
    rng = np.random.default_rng(3)
    other = s + rng.normal(scale=0.7, size=len(s))
    fast = paired_bootstrap(y, s, other, 0.4, 0.6, metrics=("auroc", "auprc", "f1", "balanced_accuracy"),
                            n_boot=3000, seed=1)

    def f1(yy, ss, t):
        p = ss >= t
        return 2 * (p & yy).sum() / (2 * (p & yy).sum() + (p & ~yy).sum() + (~p & yy).sum())

    sklearn_stats = {"auroc": lambda yy, a, b: roc_auc_score(yy, a) - roc_auc_score(yy, b),
                     "auprc": lambda yy, a, b: average_precision_score(yy, a) - average_precision_score(yy, b),
                     "f1": lambda yy, a, b: f1(yy, a, 0.4) - f1(yy, b, 0.6)}
    # The 1,500 naive resamples score each metric with the exact curve functions (tested against
    # scikit-learn in test_metrics.py, and here on the first resamples): 6,000 scikit-learn calls
    # were 14 s of CPU.
    exact = {"auroc": lambda yy, a, b: auroc(yy, a) - auroc(yy, b),
             "auprc": lambda yy, a, b: auprc(yy, a) - auprc(yy, b), "f1": sklearn_stats["f1"]}
    gen = np.random.default_rng(2)
    pos, neg = np.flatnonzero(y), np.flatnonzero(~y)
    draws: dict[str, list[float]] = {m: [] for m in exact}
    for i in range(1500):
        idx = np.r_[gen.choice(pos, len(pos)), gen.choice(neg, len(neg))]
        for metric, stat in exact.items():
            draws[metric].append(stat(y[idx], s[idx], other[idx]))
            if i < 20:
                assert draws[metric][-1] == pytest.approx(sklearn_stats[metric](y[idx], s[idx], other[idx]), abs=1e-9)
    for metric, stat in sklearn_stats.items():
        lo, hi = np.quantile(draws[metric], [0.025, 0.975])
        assert fast[metric]["diff"] == pytest.approx(stat(y, s, other), abs=1e-9)
        assert fast[metric]["ci"][0] == pytest.approx(lo, abs=0.012) and fast[metric]["ci"][1] == pytest.approx(hi, abs=0.012)


def test_errors_count_as_wrong_at_every_threshold():
    y = np.array([True, True, False, False])
    filled = errors_as_wrong(y, [0.9, np.nan, 0.1, np.nan])
    assert list(filled) == [0.9, -np.inf, 0.1, np.inf]
    c = confusion_at(y, filled, 0.5)
    assert (c["tp"], c["fn"], c["fp"], c["tn"]) == (1, 1, 1, 1)
    with pytest.raises(ValueError, match="NaN"):
        paired_bootstrap(y, [0.9, np.nan, 0.1, 0.2], [0.9, 0.8, 0.1, 0.2])


def test_weighted_confusion_equals_repeated_cases():
    y, s = sample(50)
    w = np.random.default_rng(1).integers(0, 4, size=50)
    weighted = confusion_at(y, s, 0.3, sample_weight=w)
    repeated = confusion_at(np.repeat(y, w), np.repeat(s, w), 0.3)
    assert {k: float(v) for k, v in weighted.items()} == {k: float(v) for k, v in repeated.items()}


def test_calibration_measures():
    rng = np.random.default_rng(0)
    p = rng.random(20_000)
    y = rng.random(20_000) < p  # calibrated by construction
    assert expected_calibration_error(y, p) < 0.02
    assert expected_calibration_error(y, p ** 3) > 0.1
    assert brier(y, p) == pytest.approx(brier_score_loss(y, p))
    r = reliability(y, p)
    assert sum(r["count"]) == 20_000 and len(r["predicted"]) == 10


def test_latency_and_pareto():
    lat = latency_summary([1.0] * 98 + [50.0, 100.0], units=[2] * 100)
    assert lat["p50"] == 1.0 and lat["p99"] > 49 and lat["units_per_case"] == 2
    assert lat["basis"] == "unrecorded"
    assert pareto_front([0.9, 0.8, 0.7, 0.95], [10, 1, 5, 100]) == [True, True, False, True]


def test_latency_leaves_the_warm_up_out_and_names_batch_averages():
    # A batch verifier: 4 batches of 3 cases; the first includes loading the model.
    lat = [900.0] * 3 + [10.0] * 3 + [12.0] * 3 + [30.0] * 3
    kinds = ["warmup"] * 3 + ["batch"] * 9
    out = latency_summary(lat, kinds=kinds)
    assert out["warmup"] == {"cases": 3, "total_ms": 2700.0, "mean_ms": 900.0}
    assert out["basis"] == "batch_average" and out["p99"] < 31 and out["p50"] == 12.0
    assert out["throughput_per_s"] == pytest.approx(9 / (156 / 1000))
    per_case = latency_summary([5.0, 1.0, 2.0], kinds=["warmup", "case", "case"])
    assert per_case["basis"] == "case" and per_case["p50"] == 1.5
    only_warm = latency_summary([5.0, 6.0], kinds=["warmup", "warmup"])
    assert only_warm["includes_warmup"] and only_warm["p50"] == 5.5
    assert latency_summary([1.0, 2.0], kinds=["case", "batch"])["basis"] == "mixed"


def test_shortcut_cues_and_warning():
    cues = surface_cues("Paris is the capital of Spain", ["Paris is the capital of France."])
    assert cues["novelty"] == pytest.approx(1 / 6) and cues["length"] == 29
    y = [0, 0, 0, 1, 1, 1]
    report = shortcut_report(y, {"length": [10, 11, 12, 30, 31, 32], "novelty": [0.1, 0.5, 0.2, 0.3, 0.1, 0.4]})
    assert len(report["warnings"]) == 1 and "length" in report["warnings"][0]
