"""Cross-fitted thresholds: every labeled case fits the threshold and every one measures it, but no case is
ever measured by a threshold that was fitted on it.

The cases are dealt into K folds, stratified by label (and by `strata`, the doc type, where given; a
`group` stays in one fold). Each fold's threshold is fitted on the other K - 1 folds, with the target and
selection of `metrics.thresholds`, and decides that fold's cases; precision, recall and F1 are estimated
from the pooled out-of-fold decisions, with an interval. The threshold reported (the one a policy holds)
is fitted on all the cases. The estimate is of a threshold fitted on (K - 1) / K of the cases, so it
leans slightly pessimistic for the one fitted on all of them.

Intervals (`method`), chosen by simulation (benchmarks/README.md, "Thresholds from a hundred labels"):
- "spread" (the default): a draw of each metric is a Dirichlet(counts + 1/2) draw from the pooled
  out-of-fold counts plus how far the metric moves on these cases when the whole-set threshold is refitted
  on a stratified resample. The threshold itself is a noisy pick at these sizes: its true precision and
  recall vary from one draw of the cases to the next about as much as the counts' noise, and an
  interval from the counts alone covers the true recall 61-85% of the time instead of 90% where the
  score ranks moderately (AUROC about 0.75; 84-89% where it all but separates the classes). This one
  covered 86-98% from 60 to 1,000 cases, and is conservative: its recall interval is up to twice as
  wide as the counts';
- "jeffreys": the counts alone, Dirichlet(counts + 1/2): precision and recall get exactly Jeffreys'
  interval (two cells of a Dirichlet, renormalised, are Beta), F1 its interval from the same draws;
- "wilson": Wilson's interval of precision and recall on the same counts (F1 as "jeffreys");
- "bootstrap": the whole procedure (folds, K fits, pooled decisions, the whole-set threshold) redone on
  stratified resamples; the interval is the estimate minus the quantiles of its error against what the
  resample's threshold scores on the original cases. K + 1 fits per resample; it covered precision
  70-84% at 100 cases.

Where a split is better: SPLIT_FROM below.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from verifybench.metrics.bootstrap import stratified_weights
from verifybench.metrics.curves import rates, sorted_curve
from verifybench.metrics.proportions import wilson
from verifybench.metrics.thresholds import Target, parse_target, select_threshold

K_FOLDS = 5
# From this many labeled cases on, a calibration/test split is the better default: its threshold's true F1
# is within 0.01 of the cross-fitted one (0.004-0.007 below it at 300 cases, 0.011-0.013 at 100), and its
# test-split intervals (Jeffreys') hold and are narrower (recall 0.16 wide against 0.28-0.31 at 300).
# Measured at 100, 300, 1,000 and 3,000 cases (benchmarks/README.md); between 100 and 300 not measured.
SPLIT_FROM = 300
METHODS = ("spread", "jeffreys", "wilson", "bootstrap")
# Below this many labeled cases of either class a fold has too few of a class for a threshold to mean
# anything (5 folds of 2): no estimate.
MIN_PER_CLASS = 10
ALPHA = 0.1  # 90% intervals: what a team reads as "how sure"
DRAWS = 4000  # posterior draws behind an F1 interval
N_BOOT = 400


def as_objects(values: Iterable[Any]) -> np.ndarray:
    """Names (slices, groups, rounds) as an object array, whatever sequence they came in."""
    import pandas as pd

    return pd.Series(list(values), dtype=object).to_numpy()


def folds(y_true: ArrayLike, k: int = K_FOLDS, seed: int = 0, groups: Iterable[Any] | None = None,
          strata: Iterable[Any] | None = None) -> np.ndarray:
    """A fold number (0..k-1) per case, stratified by label and `strata`: within each stratum the units
    (cases, or `groups` of cases, each placed by its first case's label and stratum) are shuffled and dealt
    round-robin from a random fold, so every fold gets its share of each class and small strata are not
    all dealt from fold 0."""
    import pandas as pd

    y = np.asarray(y_true, bool)
    n = len(y)
    g = np.arange(n) if groups is None else pd.factorize(as_objects(groups))[0]
    n_units = int(g.max()) + 1 if n else 0
    first = np.full(n_units, n)
    np.minimum.at(first, g, np.arange(n))
    st = np.zeros(n, np.int64) if strata is None else pd.factorize(as_objects(strata), sort=True)[0]
    unit_stratum = st[first] * 2 + y[first]
    rng = np.random.default_rng(seed)
    order = np.lexsort((rng.random(n_units), unit_stratum))
    codes, starts = np.unique(unit_stratum[order], return_index=True)
    offset = rng.integers(0, k, len(codes))
    fold_of_unit = np.empty(n_units, np.int64)
    for start, end, off in zip(starts, np.r_[starts[1:], n_units], offset):
        fold_of_unit[order[start:end]] = (np.arange(end - start) + off) % k
    return fold_of_unit[g]


def fit_threshold(y_true: ArrayLike, y_score: ArrayLike, target: Target | str | None = None,
                  sample_weight: ArrayLike | None = None) -> float | None:
    """The threshold `target` selects on these cases (None when it cannot be met or a class is missing)."""
    y, s = np.asarray(y_true, bool), np.asarray(y_score, float)
    order = np.argsort(-s, kind="mergesort")
    w = None if sample_weight is None else np.asarray(sample_weight, float)[order]
    return _fit_sorted(y[order], s[order], parse_target(target), w)


def _fit_sorted(t: np.ndarray, s: np.ndarray, target: Target, w: np.ndarray | None = None) -> float | None:
    keep = slice(None) if w is None else w > 0
    t, s = t[keep], s[keep]
    w = None if w is None else w[keep]
    if not len(t) or t.all() or not t.any():
        return None
    curve = sorted_curve(t, s, w)
    i = select_threshold(curve, target)
    return None if i is None else float(curve.thresholds[i])


def _oof_counts(t: np.ndarray, s: np.ndarray, fold: np.ndarray, k: int, target: Target,
                w: np.ndarray | None = None) -> tuple[np.ndarray, list[float | None]]:
    """Pooled out-of-fold confusion counts [tp, fp, fn, tn] (weighted by `w`, a resample's case counts) and
    each fold's threshold; a fold whose training folds give no threshold flags none of its cases."""
    w = np.ones(len(t)) if w is None else w
    counts = np.zeros(4)
    fitted: list[float | None] = []
    for j in range(k):
        out = fold == j
        thr = _fit_sorted(t, s, target, np.where(out, 0.0, w))
        fitted.append(thr)
        flag = out & (s >= thr) if thr is not None else np.zeros(len(t), bool)
        wo = w * out
        tp, fp = float(wo @ (flag & t)), float(wo @ (flag & ~t))
        counts += [tp, fp, float(wo @ t) - tp, float(wo @ ~t) - fp]
    return counts, fitted


def _ratios(c: np.ndarray) -> dict[str, np.ndarray]:
    """Precision, recall, F1 from counts (last axis tp, fp, fn, tn); NaN where undefined."""
    tp, fp, fn = c[..., 0], c[..., 1], c[..., 2]
    with np.errstate(invalid="ignore", divide="ignore"):
        return {"precision": tp / (tp + fp), "recall": tp / (tp + fn), "f1": 2 * tp / (2 * tp + fp + fn)}


def _quantiles(x: np.ndarray, alpha: float) -> list[float]:
    x = x[~np.isnan(x)]
    if not len(x):
        return [float("nan"), float("nan")]
    lo, hi = np.quantile(x, [alpha / 2, 1 - alpha / 2])
    return [float(lo), float(hi)]


def counts_posterior(tp: float, fp: float, fn: float, tn: float, alpha: float = ALPHA, draws: int = DRAWS,
                     seed: int = 0) -> dict[str, list[float]]:
    """Intervals of precision, recall and F1 from the Dirichlet(counts + 1/2) posterior of the four
    confusion cells: precision's and recall's are exactly Jeffreys' (a Dirichlet's two cells, renormalised,
    are Beta), F1's comes from the same draws."""
    rng = np.random.default_rng(seed)
    theta = rng.dirichlet(np.array([tp, fp, fn, tn], float) + 0.5, size=draws)
    return {k: _quantiles(v, alpha) for k, v in _ratios(theta).items()}


def crossfit(y_true: ArrayLike, y_score: ArrayLike, target: Target | str | None = None, k: int = K_FOLDS,
             seed: int = 0, groups: Iterable[Any] | None = None, strata: Iterable[Any] | None = None,
             method: str = "spread", alpha: float = ALPHA, n_boot: int = N_BOOT) -> dict[str, Any]:
    """The whole-set threshold for `target` and its cross-fitted precision, recall and F1 with 1 - alpha
    intervals (see the module's docstring).

    Returns `threshold` (fitted on all cases; None when the target cannot be met), `fold_thresholds`,
    `confusion` (the pooled out-of-fold counts), `precision`, `recall`, `f1` (estimates), `ci` (per
    metric [low, high]), and what it was computed with (`n`, `n_pos`, `n_neg`, `k`, `method`, `alpha`).
    With fewer than MIN_PER_CLASS cases of a class there is no estimate: `estimate_withheld` says why
    (the threshold is still fitted when both classes are present)."""
    if method not in METHODS:
        raise ValueError(f"method {method!r}: expected one of {', '.join(METHODS)}")
    y, s = np.asarray(y_true, bool), np.asarray(y_score, float)
    if y.shape != s.shape:
        raise ValueError(f"y_true has {y.shape} values and y_score {s.shape}")
    if np.isnan(s).any():
        raise ValueError("y_score holds NaN; drop error verdicts (or fill them with errors_as_wrong) first")
    tgt = parse_target(target)
    n_pos, n_neg = int(y.sum()), int((~y).sum())
    out: dict[str, Any] = {"n": len(y), "n_pos": n_pos, "n_neg": n_neg, "k": k, "method": method, "alpha": alpha,
                           "target": str(tgt), "threshold": fit_threshold(y, s, tgt)}
    if min(n_pos, n_neg) < max(MIN_PER_CLASS, k):
        out["estimate_withheld"] = (f"{n_pos} hallucinated and {n_neg} faithful cases: cross-fitting needs "
                                    f"{max(MIN_PER_CLASS, k)} of each")
        return out
    order = np.argsort(-s, kind="mergesort")
    t, ss = y[order], s[order]
    g = None if groups is None else as_objects(groups)[order]
    st = None if strata is None else as_objects(strata)[order]
    fold = folds(t, k, seed, g, st)
    counts, fitted = _oof_counts(t, ss, fold, k, tgt)
    tp, fp, fn, tn = (int(round(c)) for c in counts)
    out.update(fold_thresholds=fitted, confusion={"tp": tp, "fp": fp, "fn": fn, "tn": tn},
               folds_without_threshold=sum(f is None for f in fitted))
    point = rates(tp, fp, fn, tn)
    out.update({m: point[m] for m in ("precision", "recall", "f1")})
    if method == "bootstrap":
        out["ci"] = _refit_bootstrap(t, ss, k, tgt, seed, alpha, n_boot, g, st, counts)
        return out
    ci = counts_posterior(tp, fp, fn, tn, alpha=alpha, seed=seed)
    if method == "spread":
        ci = _with_threshold_spread(t, ss, tgt, counts, seed, alpha, n_boot)
    elif method == "wilson":
        for m, (num, den) in {"precision": (tp, tp + fp), "recall": (tp, tp + fn)}.items():
            lo, hi = wilson(num, den, alpha)
            ci[m] = [float(lo), float(hi)]
    out["ci"] = ci
    return out


def _counts_at(t: np.ndarray, s: np.ndarray, thr: float) -> np.ndarray:
    """[tp, fp, fn, tn] of the cases (sorted by decreasing score) at threshold `thr`."""
    flagged = int(np.searchsorted(-s, -thr, side="right"))
    tp = int(t[:flagged].sum())
    n_pos = int(t.sum())
    return np.array([tp, flagged - tp, n_pos - tp, len(t) - n_pos - (flagged - tp)], float)


def _with_threshold_spread(t: np.ndarray, s: np.ndarray, target: Target, counts: np.ndarray, seed: int,
                           alpha: float, n_boot: int) -> dict[str, list[float]]:
    """Intervals that carry both the out-of-fold counts' sampling noise and the threshold's own: each draw
    is a Dirichlet(counts + 1/2) draw of the metric plus how far the metric, on these cases, moves when
    the whole-set threshold is refitted on a stratified resample (centred on its mean over resamples).
    The true precision and recall of a threshold fitted on 100 cases vary with the draw of those cases
    as much as the counts' noise does; intervals from the counts alone cover them 63-82% of the time
    instead of 90% (benchmarks/README.md)."""
    rng = np.random.default_rng([seed, 2])
    w = stratified_weights(t, n_boot, rng)
    moved = np.full((n_boot, 4), np.nan)
    for b in range(n_boot):
        thr = _fit_sorted(t, s, target, w[b])
        if thr is not None:
            moved[b] = _counts_at(t, s, thr)
    dev = _ratios(moved)
    base = _ratios(rng.dirichlet(np.asarray(counts, float) + 0.5, size=n_boot))
    # A draw shifted past 0 or 1 is still a rate: clipped (coverage of a truth inside [0, 1] is unchanged).
    return {m: _quantiles(np.clip(base[m] + dev[m] - np.nanmean(dev[m]), 0, 1), alpha) for m in base}


def _refit_bootstrap(t: np.ndarray, s: np.ndarray, k: int, target: Target, seed: int, alpha: float, n_boot: int,
                     groups: np.ndarray | None, strata: np.ndarray | None, counts: np.ndarray) -> dict[str, list[float]]:
    """Basic-bootstrap intervals of the cross-fitted estimates: in each stratified resample the whole
    procedure is redone (folds, K fits, pooled decisions, the whole-set threshold), and its error is the
    resample's estimate minus what its whole-set threshold scores on the original cases (the bootstrap's
    population); the interval is the estimate minus that error's quantiles. A case drawn twice stays in
    one fold (folds are dealt over the original cases)."""
    rng = np.random.default_rng([seed, 1])
    w = stratified_weights(t, n_boot, rng)
    err = np.full((n_boot, 3), np.nan)
    for b in range(n_boot):
        est, _ = _oof_counts(t, s, folds(t, k, seed + 1 + b, groups, strata), k, target, w[b])
        thr = _fit_sorted(t, s, target, w[b])
        if thr is not None:
            e, true = _ratios(est), _ratios(_counts_at(t, s, thr))
            err[b] = [e[m] - true[m] for m in ("precision", "recall", "f1")]
    point = _ratios(np.asarray(counts, float))
    out = {}
    for j, m in enumerate(("precision", "recall", "f1")):
        lo, hi = _quantiles(err[:, j], alpha)
        out[m] = [float(np.clip(point[m] - hi, 0, 1)), float(np.clip(point[m] - lo, 0, 1))]
    return out
