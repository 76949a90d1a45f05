"""Repeats: one case scored several times by a stochastic check (a judge at a temperature above 0), and
how much its verdicts move between repeats. Pure functions of scores; the runner, the report and the
gate call them.

- `spread`: the mean a verdict keeps as its score, and the spread around it (population std, min, max,
  how many repeats gave a score).
- `flips`: which cases a threshold cuts between repeats: some repeat flagged the case (score >=
  threshold, the metrics' rule) and another did not (min < threshold <= max).
- `flicker`: how far each quality metric moves between repeats: the metric on each repeat's scores
  alone, at one threshold, max minus min. The gate tolerates a drop that stays inside it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from verifybench.metrics.bootstrap import errors_as_wrong, weighted_metrics


def spread(scores: Sequence[float | None]) -> dict[str, float | int | None]:
    """Mean, population std, min and max of the repeats that gave a score (None: a repeat that failed),
    and `n`, how many did. With none, every figure but `n` is None."""
    ok = np.array([s for s in scores if s is not None], dtype=float)
    if not len(ok):
        return {"n": 0, "mean": None, "std": None, "min": None, "max": None}
    lo, hi = float(ok.min()), float(ok.max())
    if lo == hi:  # a check that repeats itself keeps its own score exactly (a mean can be 1 ulp off)
        return {"n": int(len(ok)), "mean": lo, "std": 0.0, "min": lo, "max": hi}
    return {"n": int(len(ok)), "mean": float(ok.mean()), "std": float(ok.std()), "min": lo, "max": hi}


def repeat_matrix(rows: Iterable[Sequence[float | None] | None]) -> np.ndarray:
    """Per-repeat scores as a cases x repeats array (NaN: no score), from one list per case (None: the
    case was not repeated). Lists shorter than the longest are padded with NaN."""
    lists = [list(r) if r is not None else [] for r in rows]
    width = max((len(r) for r in lists), default=0)
    out = np.full((len(lists), width), np.nan)
    for i, r in enumerate(lists):
        out[i, :len(r)] = [np.nan if x is None else x for x in r]
    return out


def flips(matrix: np.ndarray, threshold: float) -> np.ndarray:
    """Per case (a row of per-repeat scores, NaN ignored): True when the threshold lies between its
    repeats, so that one repeat flags it and another does not."""
    has = ~np.isnan(matrix)
    lo = np.where(has, matrix, np.inf).min(axis=1, initial=np.inf)
    hi = np.where(has, matrix, -np.inf).max(axis=1, initial=-np.inf)
    return (lo < threshold) & (threshold <= hi)


def flip_summary(matrix: np.ndarray, threshold: float | None) -> dict[str, float | int | None]:
    """For the report: how many cases (rows with a score) flip across `threshold`, of how many, and the
    mean std and mean range (max - min) of their repeats."""
    scored = (~np.isnan(matrix)).any(axis=1) if matrix.size else np.zeros(len(matrix), bool)
    m = matrix[scored]
    out: dict[str, float | int | None] = {
        "repeats": int(matrix.shape[1]) if matrix.ndim == 2 else 0, "cases": int(scored.sum()),
        "flipped": None if threshold is None else int(flips(m, threshold).sum()), "threshold": threshold,
        "mean_std": None, "mean_range": None, "max_range": None,
    }
    if len(m):
        with np.errstate(invalid="ignore"):
            rng = np.nanmax(m, axis=1) - np.nanmin(m, axis=1)
            std = np.where(rng == 0, 0.0, np.nanstd(m, axis=1))  # equal repeats: 0, not a rounding error
        out.update(mean_std=float(std.mean()), mean_range=float(rng.mean()), max_range=float(rng.max()))
    return out


def flicker(y_true: np.ndarray, matrix: np.ndarray, threshold: float | None, metrics: Iterable[str]
            ) -> dict[str, float | None]:
    """Per metric: max minus min over repeats of the metric on that repeat's scores alone (cases x
    repeats `matrix`; a repeat's missing score counts as wrong, as an error verdict does). Threshold
    metrics are None without a threshold, and so is every metric with fewer than two repeats."""
    metrics = list(metrics)
    y = np.asarray(y_true, dtype=bool)
    if matrix.ndim != 2 or matrix.shape[1] < 2 or not len(y):
        return {m: None for m in metrics}
    ones = np.ones((1, len(y)))
    values: dict[str, list[float]] = {m: [] for m in metrics}
    for r in range(matrix.shape[1]):
        got = weighted_metrics(y, errors_as_wrong(y, matrix[:, r]), threshold, metrics, ones)
        for m in metrics:
            values[m].append(float(got[m][0]))
    out: dict[str, float | None] = {}
    for m, v in values.items():
        a = np.array(v)
        out[m] = None if np.isnan(a).all() else float(np.nanmax(a) - np.nanmin(a))
    return out
