"""Calibration of verifiers whose score is a probability of "hallucinated": ECE, Brier, reliability."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike


def reliability(y_true: ArrayLike, prob: ArrayLike, bins: int = 10) -> dict[str, list[float]]:
    """Per equal-width bin: mean predicted probability, observed rate, and count (empty bins dropped)."""
    y = np.asarray(y_true, dtype=bool)
    p = np.clip(np.asarray(prob, dtype=float), 0.0, 1.0)
    edges = np.linspace(0, 1, bins + 1)
    idx = np.clip(np.digitize(p, edges[1:-1]), 0, bins - 1)
    count = np.bincount(idx, minlength=bins)
    keep = count > 0
    mean_p = np.bincount(idx, weights=p, minlength=bins)[keep] / count[keep]
    rate = np.bincount(idx, weights=y, minlength=bins)[keep] / count[keep]
    return {"predicted": mean_p.tolist(), "observed": rate.tolist(), "count": count[keep].tolist()}


def expected_calibration_error(y_true: ArrayLike, prob: ArrayLike, bins: int = 10) -> float:
    """Count-weighted mean |observed rate - mean predicted probability| over equal-width bins."""
    r = reliability(y_true, prob, bins)
    count = np.asarray(r["count"], dtype=float)
    if not count.sum():
        return float("nan")
    return float(np.sum(count * np.abs(np.asarray(r["observed"]) - np.asarray(r["predicted"]))) / count.sum())


def brier(y_true: ArrayLike, prob: ArrayLike) -> float:
    from sklearn.metrics import brier_score_loss  # lazily: importing sklearn costs most commands ~0.8 s

    return float(brier_score_loss(np.asarray(y_true, dtype=int), np.clip(np.asarray(prob, float), 0, 1)))


__all__ = ["brier", "expected_calibration_error", "reliability"]
