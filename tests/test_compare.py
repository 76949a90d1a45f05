"""Paired comparison of two verdict frames (gating.compare): the same cases in the same order, the test split
only, error verdicts counted as wrong; and a Comparison reads as rows and as a DataFrame."""

import numpy as np
import pandas as pd
import pytest

from verifybench.errors import VerifybenchError
from verifybench.gating.compare import OWN, Comparison, compare_pair, pairs


def _frame(scores, labels, roles, ok=None):
    n = len(scores)
    return pd.DataFrame({"case_id": [f"c{i:03d}" for i in range(n)], "label": labels, "score": scores,
                         "ok": [True] * n if ok is None else ok, "role": roles})


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    labels = rng.random(200) < 0.5
    good = np.where(labels, rng.uniform(0.5, 1, 200), rng.uniform(0, 0.5, 200))  # separates the classes
    noise = rng.random(200)
    roles = np.where(np.arange(200) % 2 == 0, "test", "calibration")
    return labels, good, noise, roles


def test_a_verifier_against_itself_differs_by_nothing(data):
    labels, good, _, roles = data
    r = compare_pair(_frame(good, labels, roles), _frame(good, labels, roles), 0.5, 0.5, n_boot=200)
    assert r["cases"] == 100  # the test split only
    for m in ("auroc", "auprc", "f1"):
        assert r["metrics"][m]["diff"] == 0


def test_a_separating_verifier_beats_noise_beyond_the_interval(data):
    labels, good, noise, roles = data
    r = compare_pair(_frame(good, labels, roles), _frame(noise, labels, roles), 0.5, 0.5, n_boot=300)
    auroc = r["metrics"]["auroc"]
    assert auroc["a"] == pytest.approx(1.0) and auroc["a"] - auroc["b"] == pytest.approx(auroc["diff"])
    assert auroc["diff"] > 0 and auroc["ci"][0] > 0  # the interval of the difference excludes zero


def test_error_verdicts_count_as_wrong(data):
    labels, good, _, roles = data
    ok = np.ones(200, bool)
    ok[::4] = False  # a quarter of the cases failed on side b, half of them on the test split
    r = compare_pair(_frame(good, labels, roles), _frame(good, labels, roles, ok), 0.5, 0.5, n_boot=200)
    assert r["errors_a"] == 0 and r["errors_b"] == 50
    assert r["metrics"]["f1"]["b"] < r["metrics"]["f1"]["a"]


def test_without_thresholds_only_the_ranking_metrics_are_compared(data):
    labels, good, noise, roles = data
    r = compare_pair(_frame(good, labels, roles), _frame(noise, labels, roles), 0.5, None, n_boot=100)
    assert set(r["metrics"]) == {"auroc", "auprc"} and "no fitted threshold" in r["warning"]


def test_pairs_refuse_an_unknown_verifier_or_a_single_one():
    assert pairs(["a", "b", "c"], None) == [("a", "b"), ("a", "c"), ("b", "c")]
    with pytest.raises(VerifybenchError, match="no verifier 'x' in this run; it has: a, b"):
        pairs(["a", "b"], ["a", "x"])
    with pytest.raises(VerifybenchError, match="needs two verifiers"):
        pairs(["a"], None)


def test_a_comparison_is_rows_and_a_frame(data):
    labels, good, noise, roles = data
    r = compare_pair(_frame(good, labels, roles), _frame(noise, labels, roles), 0.5, 0.5, n_boot=100)
    c = Comparison([{"a": "good", "b": "noise", "threshold_mode": OWN, **r}])
    assert len(c) == 1 and c[0]["a"] == "good" and [row["b"] for row in c] == ["noise"]
    f = c.frame
    assert list(f["metric"]) == ["auroc", "auprc", "f1"]
    row = f.set_index("metric").loc["auroc"]
    assert row["diff"] == pytest.approx(r["metrics"]["auroc"]["diff"]) and row["ci_low"] > 0
