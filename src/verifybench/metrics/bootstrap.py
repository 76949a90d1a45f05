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

from dataclasses import dataclass

import numpy as np
from scipy.stats import binomtest

from verifybench.metrics.curves import sorted_curve, threshold_curve

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


def rank_intervals(y_true, y_score, n_boot: int = N_BOOT, seed: int = 0, alpha: float = ALPHA,
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


def mcnemar(y_true, pred_a, pred_b) -> dict[str, float]:
    """McNemar's exact test on the cases where exactly one of two classifiers is right."""
    y = np.asarray(y_true, dtype=bool)
    right_a = np.asarray(pred_a, dtype=bool) == y
    right_b = np.asarray(pred_b, dtype=bool) == y
    b = int((right_a & ~right_b).sum())
    c = int((~right_a & right_b).sum())
    p = binomtest(b, b + c, 0.5).pvalue if b + c else 1.0
    return {"a_only_right": b, "b_only_right": c, "p_value": float(p)}


def paired_bootstrap(y_true, score_a, score_b, threshold_a: float, threshold_b: float,
                     n_boot: int = N_BOOT, seed: int = 0, alpha: float = ALPHA) -> dict[str, dict]:
    """Paired, stratified bootstrap of the AUROC and F1 differences (a - b) over the same cases.

    Returns for each metric the point difference, its interval, and a two-sided bootstrap p-value (the
    share of resamples on the other side of zero, doubled).
    """
    y = np.asarray(y_true, dtype=bool)
    a, b = np.asarray(score_a, float), np.asarray(score_b, float)
    rng = np.random.default_rng(seed)
    pos, neg = np.flatnonzero(y), np.flatnonzero(~y)

    def stats(weights: np.ndarray | None) -> tuple[float, float]:
        ca = threshold_curve(y, a, sample_weight=weights)
        cb = threshold_curve(y, b, sample_weight=weights)
        w = np.ones(len(y)) if weights is None else weights
        f1 = []
        for s, t in ((a, threshold_a), (b, threshold_b)):
            pred = s >= t
            tp, fp, fn = (w * (pred & y)).sum(), (w * (pred & ~y)).sum(), (w * (~pred & y)).sum()
            f1.append(2 * tp / (2 * tp + fp + fn) if tp + fp + fn else np.nan)
        return ca.auroc() - cb.auroc(), f1[0] - f1[1]

    point = stats(None)
    draws = np.empty((n_boot, 2))
    for i in range(n_boot):
        w = np.bincount(rng.choice(pos, len(pos)), minlength=len(y)) + np.bincount(rng.choice(neg, len(neg)), minlength=len(y))
        draws[i] = stats(w.astype(float))
    out = {}
    for j, name in enumerate(("auroc_diff", "f1_diff")):
        d = draws[:, j]
        d = d[~np.isnan(d)]
        p = min(1.0, 2 * min((d <= 0).mean(), (d >= 0).mean())) if len(d) else float("nan")
        out[name] = {"diff": point[j], "ci": _interval(d, alpha).as_list(), "p_value": float(p)}
    return out
