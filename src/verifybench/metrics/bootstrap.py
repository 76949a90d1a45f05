"""Uncertainty: seeded, stratified bootstrap intervals, and paired tests between two verifiers.

Stratified means each resample keeps the number of hallucinated and faithful cases. Two shortcuts make
1,000 resamples of a million cases cheap, both exact in distribution:
- at a fixed threshold, resampling cases is resampling confusion counts: within each class the flagged
  count is binomial, so precision, recall and F1 need no per-case work;
- for AUROC and average precision, a resample is a multinomial draw over the distinct scores of each
  class, so its cost does not grow with the number of cases. Scores are first grouped into at most
  `bins` quantile bins (exact when there are fewer distinct scores than that); the binned interval is
  then shifted by the difference between the exact and the binned point estimate. Above
  `POISSON_ABOVE` cases the multinomial draw is replaced by independent Poisson counts per bin (the
  Poisson bootstrap: class sizes then vary by about 1/sqrt(n), which the normalised metrics absorb),
  because numpy draws a multinomial one category at a time.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from verifybench.metrics.curves import confusion_at, sorted_curve

N_BOOT = 1000
ALPHA = 0.05
POISSON_ABOVE = 20_000


@dataclass(frozen=True)
class Interval:
    low: float
    high: float

    def as_list(self) -> list[float]:
        return [self.low, self.high]


def _interval(samples: np.ndarray, alpha: float = ALPHA) -> Interval:
    samples = samples[~np.isnan(samples)]
    if not len(samples):
        return Interval(float("nan"), float("nan"))
    lo, hi = np.quantile(samples, [alpha / 2, 1 - alpha / 2])
    return Interval(float(lo), float(hi))


def counts_intervals(tp: int, fp: int, fn: int, tn: int, n_boot: int = N_BOOT, seed: int = 0,
                     alpha: float = ALPHA) -> dict[str, Interval]:
    """Stratified-bootstrap intervals of precision, recall and F1 at a fixed threshold."""
    rng = np.random.default_rng(seed)
    n_pos, n_neg = tp + fn, fp + tn
    tp_b = rng.binomial(n_pos, tp / n_pos, n_boot) if n_pos else np.zeros(n_boot)
    fp_b = rng.binomial(n_neg, fp / n_neg, n_boot) if n_neg else np.zeros(n_boot)
    fn_b = n_pos - tp_b
    with np.errstate(invalid="ignore", divide="ignore"):
        precision = np.where(tp_b + fp_b > 0, tp_b / (tp_b + fp_b), np.nan)
        recall = np.where(n_pos > 0, tp_b / max(n_pos, 1), np.nan)
        f1 = np.where(2 * tp_b + fp_b + fn_b > 0, 2 * tp_b / (2 * tp_b + fp_b + fn_b), np.nan)
    return {"precision": _interval(precision, alpha), "recall": _interval(recall, alpha),
            "f1": _interval(f1, alpha)}


def _binned(t: np.ndarray, s: np.ndarray, bins: int) -> tuple[np.ndarray, np.ndarray]:
    """Positive and negative counts per score level, levels in decreasing order, from labels and scores
    sorted by decreasing score. Beyond `bins` distinct levels, runs of levels are merged into bins of
    about equal size (a tie never straddles two bins)."""
    n = len(s)
    run_start = np.r_[0, np.flatnonzero(s[1:] != s[:-1]) + 1]
    run_of = np.repeat(np.arange(len(run_start)), np.diff(np.r_[run_start, n]))
    if len(run_start) > bins:
        group = (run_start * bins // n)[run_of]
    else:
        group = run_of
    pos = np.bincount(group, weights=t, minlength=group[-1] + 1)
    neg = np.bincount(group, weights=~t, minlength=group[-1] + 1)
    keep = (pos + neg) > 0
    return pos[keep], neg[keep]


def _areas(pos: np.ndarray, neg: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """AUROC and average precision for rows of per-level counts (levels in decreasing score order)."""
    tp, fp = np.cumsum(pos, axis=-1), np.cumsum(neg, axis=-1)
    n_pos, n_neg = tp[..., -1:], fp[..., -1:]
    with np.errstate(invalid="ignore", divide="ignore"):
        tpr = np.concatenate([np.zeros_like(n_pos), tp / n_pos], axis=-1)
        fpr = np.concatenate([np.zeros_like(n_neg), fp / n_neg], axis=-1)
        roc = np.sum(np.diff(fpr, axis=-1) * (tpr[..., 1:] + tpr[..., :-1]) / 2, axis=-1)
        flagged = tp + fp
        precision = np.where(flagged > 0, tp / np.where(flagged > 0, flagged, 1), 0.0)
        ap = np.sum(np.diff(tpr, axis=-1) * precision, axis=-1)
    return roc, ap


def rank_intervals(y_true: ArrayLike, y_score: ArrayLike, n_boot: int = N_BOOT, seed: int = 0, alpha: float = ALPHA,
                   bins: int = 512, presorted: bool = False) -> dict[str, Interval]:
    """Stratified-bootstrap intervals of AUROC and average precision.

    Args:
        presorted: `y_score` is already in decreasing order (and `y_true` with it): skips the sort.
    """
    t = np.asarray(y_true, dtype=bool)
    s = np.asarray(y_score, dtype=float)
    if not presorted:
        order = np.argsort(-s, kind="mergesort")
        t, s = t[order], s[order]
    n_pos, n_neg = int(t.sum()), int((~t).sum())
    if n_pos == 0 or n_neg == 0:
        nan = Interval(float("nan"), float("nan"))
        return {"auroc": nan, "auprc": nan}
    pos, neg = _binned(t, s, bins)
    exact = sorted_curve(t, s)
    binned_roc, binned_ap = _areas(pos, neg)
    shift = {"auroc": exact.auroc() - float(binned_roc), "auprc": exact.average_precision() - float(binned_ap)}
    rng = np.random.default_rng(seed)
    roc, ap = np.empty(n_boot), np.empty(n_boot)
    chunk = max(1, 2_000_000 // len(pos))
    for start in range(0, n_boot, chunk):
        k = min(chunk, n_boot - start)
        if n_pos + n_neg > POISSON_ABOVE:
            pos_b, neg_b = rng.poisson(pos, size=(k, len(pos))), rng.poisson(neg, size=(k, len(neg)))
        else:
            pos_b = rng.multinomial(n_pos, pos / n_pos, size=k)
            neg_b = rng.multinomial(n_neg, neg / n_neg, size=k)
        roc[start:start + k], ap[start:start + k] = _areas(pos_b, neg_b)
    return {name: Interval(i.low + shift[name], i.high + shift[name])
            for name, i in (("auroc", _interval(roc, alpha)), ("auprc", _interval(ap, alpha)))}


def mcnemar(y_true: ArrayLike, pred_a: ArrayLike, pred_b: ArrayLike) -> dict[str, float]:
    """McNemar's exact test on the cases where exactly one of two classifiers is right."""
    y = np.asarray(y_true, dtype=bool)
    right_a = np.asarray(pred_a, dtype=bool) == y
    right_b = np.asarray(pred_b, dtype=bool) == y
    b = int((right_a & ~right_b).sum())
    c = int((~right_a & right_b).sum())
    from scipy.stats import binomtest  # lazily: scipy.stats costs every command ~1 s of import

    p = binomtest(b, b + c, 0.5).pvalue if b + c else 1.0
    return {"a_only_right": b, "b_only_right": c, "p_value": float(p)}


THRESHOLD_METRICS = ("precision", "recall", "f1", "balanced_accuracy")
RANK_METRICS = ("auroc", "auprc")
PAIRED_METRICS = RANK_METRICS + THRESHOLD_METRICS


def errors_as_wrong(y_true: ArrayLike, y_score: ArrayLike) -> np.ndarray:
    """Scores with each error verdict (NaN) replaced so that it counts as wrong at every threshold: -inf
    for a hallucinated case (never flagged: a miss), +inf for a faithful one (always flagged: a false
    alarm). A verifier then cannot look better by failing, and the case stays in the comparison."""
    y = np.asarray(y_true, dtype=bool)
    s = np.asarray(y_score, dtype=float)
    return np.where(np.isnan(s), np.where(y, -np.inf, np.inf), s)


def stratified_weights(y_true: ArrayLike, k: int, rng: np.random.Generator) -> np.ndarray:
    """`k` stratified resamples as case counts (a k x n matrix): each class drawn with replacement to its
    own size, so every resample keeps the numbers of hallucinated and faithful cases."""
    y = np.asarray(y_true, dtype=bool)
    w = np.zeros((k, len(y)))
    for idx in (np.flatnonzero(y), np.flatnonzero(~y)):
        m = len(idx)
        if m:
            draws = rng.integers(0, m, size=(k, m)) + (np.arange(k) * m)[:, None]
            w[:, idx] = np.bincount(draws.ravel(), minlength=k * m).reshape(k, m)
    return w


def weighted_metrics(y_true: ArrayLike, y_score: ArrayLike, threshold: float | None, metrics: Iterable[str],
                     weights: np.ndarray) -> dict[str, np.ndarray]:
    """Each metric in `metrics` for every row of `weights` (k x n case counts; a row of ones is the
    sample itself). Scores may hold +-inf (see `errors_as_wrong`), not NaN. Threshold metrics are NaN
    when `threshold` is None; AUROC and AUPRC come from one sort of the scores."""
    y = np.asarray(y_true, dtype=bool)
    s = np.asarray(y_score, dtype=float)
    k = weights.shape[0]
    out: dict[str, np.ndarray] = {}
    ranked = [m for m in metrics if m in RANK_METRICS]
    if ranked:
        order = np.argsort(-s, kind="mergesort")
        ss = s[order]
        run_start = np.r_[0, np.flatnonzero(ss[1:] != ss[:-1]) + 1] if len(ss) else np.array([0])
        w = weights[:, order]
        pos = np.add.reduceat(w * y[order], run_start, axis=1)
        neg = np.add.reduceat(w * ~y[order], run_start, axis=1)
        roc, ap = _areas(pos, neg)
        out.update({"auroc": roc, "auprc": ap})
    for m in metrics:
        if m in RANK_METRICS:
            continue
        if m not in THRESHOLD_METRICS:
            raise ValueError(f"unknown metric {m!r}; known: {', '.join(PAIRED_METRICS)}")
        if threshold is None:
            out[m] = np.full(k, np.nan)
            continue
        c = confusion_at(y, s, threshold, sample_weight=weights)
        tp, fp, fn, tn = c["tp"], c["fp"], c["fn"], c["tn"]
        with np.errstate(invalid="ignore", divide="ignore"):
            recall, spec = tp / (tp + fn), tn / (tn + fp)
            out[m] = {"precision": tp / (tp + fp), "recall": recall,
                      "f1": 2 * tp / (2 * tp + fp + fn), "balanced_accuracy": (recall + spec) / 2}[m]
    return {m: out[m] for m in metrics}


def paired_bootstrap(y_true: ArrayLike, score_a: ArrayLike, score_b: ArrayLike,
                     threshold_a: float | None = None, threshold_b: float | None = None,
                     metrics: Iterable[str] = ("auroc", "f1"), n_boot: int = N_BOOT, seed: int = 0,
                     alpha: float = ALPHA) -> dict[str, dict]:
    """Paired, stratified bootstrap of metric differences (a - b) over the same cases: the one paired
    comparison behind `compare` and the gate.

    Args:
        score_a, score_b: two score vectors over the same cases; error verdicts already filled in
            (`errors_as_wrong`), or NaN-free.
        threshold_a, threshold_b: the thresholds the threshold metrics use (None: those metrics are NaN).
        metrics: any of auroc, auprc, precision, recall, f1, balanced_accuracy.

    Returns, per metric: `a`, `b` (point values), `diff` (a - b), `ci` (its 1 - alpha interval over the
    resamples; each resample draws the same cases for a and b), and `p_value` (the share of resamples
    on the other side of zero, doubled).
    """
    y = np.asarray(y_true, dtype=bool)
    a, b = np.asarray(score_a, float), np.asarray(score_b, float)
    if np.isnan(a).any() or np.isnan(b).any():
        raise ValueError("scores hold NaN; fill error verdicts with errors_as_wrong first")
    metrics = tuple(metrics)
    ones = np.ones((1, len(y)))
    pa, pb = weighted_metrics(y, a, threshold_a, metrics, ones), weighted_metrics(y, b, threshold_b, metrics, ones)
    rng = np.random.default_rng(seed)
    draws: dict[str, list[np.ndarray]] = {m: [] for m in metrics}
    chunk = max(1, 4_000_000 // max(len(y), 1))
    for start in range(0, n_boot, chunk):
        w = stratified_weights(y, min(chunk, n_boot - start), rng)
        wa, wb = weighted_metrics(y, a, threshold_a, metrics, w), weighted_metrics(y, b, threshold_b, metrics, w)
        for m in metrics:
            draws[m].append(wa[m] - wb[m])
    out = {}
    for m in metrics:
        d = np.concatenate(draws[m]) if draws[m] else np.empty(0)
        d = d[~np.isnan(d)]
        p = min(1.0, 2 * min((d <= 0).mean(), (d >= 0).mean())) if len(d) else float("nan")
        va, vb = float(pa[m][0]), float(pb[m][0])
        out[m] = {"a": va, "b": vb, "diff": va - vb, "ci": _interval(d, alpha).as_list(), "p_value": float(p)}
    return out


# Poisson(1) counts from 16 random bits through a table: numpy's own Poisson sampler costs several times
# more per draw, and a span metric's bootstrap of a million cases is a billion draws. The table's
# probabilities are Poisson(1)'s to within 1/65536 (tests/test_spans_metrics.py checks them with scipy).
_POISSON_LUT: np.ndarray | None = None


def _poisson_lut() -> np.ndarray:
    global _POISSON_LUT
    if _POISSON_LUT is None:
        from scipy.stats import poisson

        edges = np.round(poisson.cdf(np.arange(32), 1.0) * 65536)
        _POISSON_LUT = np.searchsorted(edges, np.arange(65536), side="right").astype(np.float32)
    return _POISSON_LUT


def poisson_weights(k: int, n: int, rng: np.random.Generator) -> np.ndarray:
    """`k` Poisson-bootstrap resamples of `n` cases as float32 case counts (k x n), each count Poisson(1)."""
    return _poisson_lut()[rng.integers(0, 65536, size=(k, n), dtype=np.uint16)]


def resample_weights(y_true: ArrayLike, k: int, rng: np.random.Generator) -> np.ndarray:
    """`k` resamples of the cases as counts (k x n): stratified by class (`stratified_weights`) up to
    `POISSON_ABOVE` cases, the Poisson bootstrap above (class sizes then vary by about 1/sqrt(n))."""
    y = np.asarray(y_true, dtype=bool)
    if len(y) > POISSON_ABOVE:
        return poisson_weights(k, len(y), rng)
    return stratified_weights(y, k, rng)
