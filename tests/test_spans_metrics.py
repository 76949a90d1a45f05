"""Span and pair metrics against straightforward reference implementations (sets of characters, loops
over pairs), on random spans (hypothesis)."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from verifybench.metrics.bootstrap import _poisson_lut, poisson_weights, resample_weights
from verifybench.metrics.pairs import pair_counts, pairwise_accuracy
from verifybench.metrics.spans import (
    COUNTS,
    SpanSet,
    case_counts,
    fit_unit_threshold,
    overlap_labels,
    rates_from_sums,
    span_metrics,
)
from verifybench.metrics.thresholds import Target

L = 40  # response length in the random cases


def interval():
    return st.integers(0, L - 1).flatmap(lambda s: st.tuples(st.just(s), st.integers(s + 1, L)))


cases_spans = st.lists(st.tuples(st.lists(interval(), max_size=4), st.lists(interval(), max_size=4)),
                       min_size=1, max_size=6)


def to_set(per_case, which):
    case, start, end = [], [], []
    for i, spans in enumerate(per_case):
        for s, e in spans[which]:
            case.append(i)
            start.append(s)
            end.append(e)
    return SpanSet.of(case, start, end)


def chars(spans):
    return {c for s, e in spans for c in range(s, e)}


def runs(char_set):
    """Maximal runs of consecutive characters: the reference for merged spans."""
    out, start = [], None
    for c in sorted(char_set):
        if start is None:
            start = prev = c
        elif c == prev + 1:
            prev = c
        else:
            out.append((start, prev + 1))
            start = prev = c
    if start is not None:
        out.append((start, prev + 1))
    return out


def reference(gold, pred):
    g, p = chars(gold), chars(pred)
    G, P = runs(g), runs(p)

    def overlaps(a, b):
        return bool(set(range(*a)) & set(range(*b)))

    def iou(a, b):
        x, y = set(range(*a)), set(range(*b))
        return len(x & y) / len(x | y)

    return {
        "char_tp": len(g & p), "char_fp": len(p - g), "char_fn": len(g - p),
        "pred_spans": len(P), "pred_hit": sum(any(overlaps(a, b) for b in G) for a in P),
        "gold_spans": len(G), "gold_hit": sum(any(overlaps(b, a) for a in P) for b in G),
        "pred_hit_iou": sum(any(iou(a, b) >= 0.5 for b in G) for a in P),
        "gold_hit_iou": sum(any(iou(a, b) >= 0.5 for a in P) for b in G),
    }


@settings(max_examples=300, deadline=None)
@given(cases_spans)
def test_case_counts_match_the_set_reference(per_case):
    got = case_counts(len(per_case), to_set(per_case, 0), to_set(per_case, 1))
    for i, (gold, pred) in enumerate(per_case):
        want = reference(gold, pred)
        assert dict(zip(COUNTS, got[i].tolist())) == {k: float(v) for k, v in want.items()}, (gold, pred)


@settings(max_examples=200, deadline=None)
@given(cases_spans)
def test_unit_labels_are_overlap_with_gold(per_case):
    units = to_set(per_case, 1)
    got = overlap_labels(units, to_set(per_case, 0))
    want = [bool(set(range(s, e)) & chars(per_case[c][0])) for c, s, e in zip(units.case, units.start, units.end)]
    assert got.tolist() == want


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([0.1, 0.2, 0.5, 0.7, 0.9]), st.booleans()), min_size=2, max_size=30))
def test_unit_threshold_maximises_f1_like_a_brute_force_search(units):
    scores, labels = np.array([u[0] for u in units]), np.array([u[1] for u in units])
    fit = fit_unit_threshold(scores, labels, Target("fbeta", 1.0))
    if not labels.any() or labels.all():
        assert fit["value"] is None and "too few" in fit["warning"]
        return

    def f1(t):
        pred = scores >= t
        tp, fp, fn = (pred & labels).sum(), (pred & ~labels).sum(), (~pred & labels).sum()
        return 2 * tp / (2 * tp + fp + fn)

    best = max(sorted(set(scores), reverse=True), key=f1)  # the highest threshold among the best
    assert fit["value"] == best and f1(fit["value"]) == pytest.approx(max(f1(t) for t in set(scores)))


def test_unit_threshold_needs_enough_units_of_each_class():
    fit = fit_unit_threshold([0.9, 0.8, 0.1], [True, False, False], Target("fbeta", 1.0), min_per_class=2)
    assert fit["value"] is None and "1 overlap a gold span and 2 do not" in fit["warning"]


def test_rates_perfect_and_empty_predictions():
    perfect = rates_from_sums(np.array([10, 0, 0, 2, 2, 2, 2, 2, 2], float))
    assert all(perfect[level][m] == 1.0 for level in perfect for m in ("precision", "recall", "f1"))
    nothing = rates_from_sums(np.array([0, 0, 10, 0, 0, 2, 0, 0, 0], float))
    assert math.isnan(nothing["char"]["precision"]) and nothing["char"]["recall"] == 0 and nothing["char"]["f1"] == 0
    assert math.isnan(nothing["span_overlap"]["precision"]) and nothing["span_overlap"]["f1"] == 0
    no_gold = rates_from_sums(np.array([0, 5, 0, 1, 0, 0, 0, 0, 0], float))  # faithful only: false alarms
    assert no_gold["char"]["precision"] == 0 and math.isnan(no_gold["char"]["recall"])


@settings(max_examples=50, deadline=None)
@given(cases_spans, st.lists(st.booleans(), min_size=6, max_size=6))
def test_span_metrics_sums_match_and_scopes_split_by_label(per_case, flags):
    n = len(per_case)
    label = np.array(flags[:n])
    counts = case_counts(n, to_set(per_case, 0), to_set(per_case, 1))
    out = span_metrics({"v": counts}, label, np.where(np.arange(n) == 0, "first", "rest"), n_boot=0)["v"]
    assert out["all"]["all"]["counts"]["char_fp"] == counts[:, 1].sum()
    assert out["all"]["hallucinated"]["counts"]["char_fp"] == counts[label, 1].sum()
    assert out["all"]["hallucinated"]["n"] == label.sum() and out["first"]["all"]["n"] == 1
    assert out["first"]["all"]["counts"]["char_tp"] == counts[0, 0]
    if n > 1:
        assert out["rest"]["hallucinated"]["counts"]["char_fn"] == counts[1:][label[1:], 2].sum()


def test_span_metric_intervals_cover_the_point_and_are_seeded():
    rng = np.random.default_rng(1)
    n = 400
    gold = SpanSet.of(np.arange(n), rng.integers(0, 50, n), rng.integers(60, 120, n))
    pred = SpanSet.of(np.arange(n), rng.integers(0, 80, n), rng.integers(90, 140, n))
    label = rng.random(n) < 0.5
    counts = case_counts(n, gold, pred)
    a = span_metrics({"v": counts}, label, n_boot=300, seed=3)["v"]["all"]
    b = span_metrics({"v": counts}, label, n_boot=300, seed=3)["v"]["all"]
    assert a == b
    for scope in ("hallucinated", "all"):
        for level in ("char", "span_overlap", "span_iou50"):
            lo, hi = a[scope][level]["ci"]["f1"]
            assert lo <= a[scope][level]["f1"] <= hi and hi - lo < 0.2


def test_span_metrics_above_the_poisson_size_drop_zero_rows_without_changing_sums():
    rng = np.random.default_rng(2)
    n = 30_000
    label = rng.random(n) < 0.2
    counts = np.zeros((n, 9))
    busy = rng.random(n) < 0.3  # most cases hold no span at all: zero rows
    counts[busy] = rng.integers(0, 20, (busy.sum(), 9))
    sl = rng.choice(["a", "b"], n)
    out = span_metrics({"v": counts}, label, sl, n_boot=200, seed=0)["v"]
    for g, m in (("all", np.ones(n, bool)), ("a", sl == "a"), ("b", sl == "b")):
        assert out[g]["all"]["counts"]["char_tp"] == counts[m, 0].sum() and out[g]["all"]["n"] == m.sum()
        assert out[g]["hallucinated"]["counts"]["char_fp"] == counts[m & label, 1].sum()
        lo, hi = out[g]["all"]["char"]["ci"]["f1"]
        assert lo <= out[g]["all"]["char"]["f1"] <= hi


def test_poisson_table_is_poisson_one():
    from scipy.stats import poisson

    lut = _poisson_lut()
    pmf = np.bincount(lut.astype(int)) / len(lut)
    assert np.abs(pmf - poisson.pmf(np.arange(len(pmf)), 1.0)).max() < 2 / 65536
    w = poisson_weights(200, 5000, np.random.default_rng(0))
    assert w.dtype == np.float32 and abs(w.mean() - 1) < 0.01 and abs(w.var() - 1) < 0.02
    small = resample_weights(np.r_[np.ones(30, bool), np.zeros(70, bool)], 5, np.random.default_rng(0))
    assert (small[:, :30].sum(axis=1) == 30).all() and (small[:, 30:].sum(axis=1) == 70).all()  # stratified


# --- minimal pairs --------------------------------------------------------------------------------------------

pair_data = st.lists(st.tuples(st.integers(0, 5), st.booleans(),
                               st.one_of(st.sampled_from([0.0, 0.5, 1.0]), st.just(float("nan")))),
                     min_size=1, max_size=30)


@settings(max_examples=300, deadline=None)
@given(pair_data)
def test_pairwise_accuracy_matches_a_loop_over_pairs(rows):
    group = np.array([r[0] for r in rows])
    label = np.array([r[1] for r in rows])
    score = np.array([r[2] for r in rows])
    wins = pairs = ties = errors = 0.0
    for g1, y1, s1 in rows:
        for g2, y2, s2 in rows:
            if g1 != g2 or not y1 or y2:
                continue
            pairs += 1
            if math.isnan(s1) or math.isnan(s2):
                errors += 1  # an error is wrong: the hallucinated one loses
                continue
            wins += 1.0 if s1 > s2 else 0.5 if s1 == s2 else 0.0
            ties += s1 == s2
    c = pair_counts(group, label, score)
    assert (c["pairs"].sum(), c["wins"].sum(), c["ties"].sum(), c["errors"].sum()) == (pairs, wins, ties, errors)
    out = pairwise_accuracy(group, label, score, n_boot=50)
    if pairs:
        assert out["accuracy"] == pytest.approx(wins / pairs) and out["pairs"] == pairs
        assert out["ci"][0] <= out["accuracy"] + 1e-12 and out["accuracy"] <= out["ci"][1] + 1e-12
    else:
        assert out["accuracy"] is None and out["groups"] == 0


def test_pairwise_accuracy_per_slice_and_groups_without_a_pair():
    group = np.array([1, 1, 2, 2, 3, 4, 4])
    label = np.array([True, False, True, False, True, True, False])
    score = np.array([0.9, 0.1, 0.2, 0.8, 0.5, 0.5, 0.5])
    sl = np.array(["a", "a", "b", "b", "b", "a", "a"])
    out = pairwise_accuracy(group, label, score, sl, n_boot=100)
    assert (out["groups"], out["pairs"], out["ties"], out["groups_without_pair"]) == (3, 3, 1, 1)
    assert out["accuracy"] == pytest.approx(1.5 / 3)
    assert out["slices"]["a"]["accuracy"] == pytest.approx(0.75) and out["slices"]["b"]["accuracy"] == 0.0


def test_pairwise_bootstrap_in_blocks_equals_one_draw_of_every_resample():
    """Many groups are resampled in blocks (memory); above POISSON_ABOVE the weights are Poisson draws,
    which a generator gives the same in blocks as at once, so the interval must equal the one-shot one."""
    from verifybench.metrics.bootstrap import POISSON_ABOVE, resample_weights
    from verifybench.metrics.pairs import pair_counts

    rng = np.random.default_rng(5)
    n = POISSON_ABOVE + 5_000
    group = np.repeat(np.arange(n), 2)
    label = np.tile([False, True], n)
    score = rng.random(2 * n) + label * 0.1
    got = pairwise_accuracy(group, label, score, n_boot=200, seed=9)
    c = pair_counts(group, label, score)
    w = resample_weights(np.ones(n, bool), 200, np.random.default_rng(9)).astype(float)
    sums = w @ np.stack([c["wins"], c["pairs"]], axis=1)
    draws = sums[:, 0] / sums[:, 1]
    assert got["ci"] == pytest.approx(list(np.quantile(draws, [0.025, 0.975])), abs=1e-12)


def test_pairwise_interval_is_the_same_drawn_in_parts(monkeypatch):
    """Past 20,000 groups the pair bootstrap draws each block of resamples in smaller parts (memory): the
    same Poisson draws, so the same interval, also where a block holds an odd number of resamples."""
    from verifybench.metrics import pairs

    rng = np.random.default_rng(2)
    n = 25_001  # groups; a block is 4,000,000 // n = 159 resamples (odd), so 200 make two blocks
    group = np.repeat(np.arange(n), 2)
    label = np.tile([True, False], n)
    score = rng.random(2 * n) + 0.2 * label
    sl = np.array(["a", "b"], dtype=object)[np.repeat(np.arange(n) % 2, 2)]
    whole = pairwise_accuracy(group, label, score, sl, n_boot=200, seed=4)
    monkeypatch.setattr(pairs, "POISSON_PART", 100_000)  # parts of 2 resamples
    assert pairwise_accuracy(group, label, score, sl, n_boot=200, seed=4) == whole
    assert whole["ci"][0] < whole["accuracy"] < whole["ci"][1]
