"""Per-threshold confusion counts, computed once by sorting; every other metric derives from them.

Convention: a case is predicted hallucinated when `score >= threshold`. Thresholds are the distinct
scores in decreasing order, so index 0 flags the fewest cases. AUROC and average precision are computed
from the same sorted counts (no second sort) and agree with scikit-learn's to 1e-9, ties included.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike


def _ratio(num: np.ndarray, den: np.ndarray, empty: float) -> np.ndarray:
    num = np.asarray(num, dtype=float)
    return np.divide(num, den, out=np.full_like(num, empty), where=np.asarray(den) > 0)


@dataclass(frozen=True)
class ThresholdCurve:
    """Confusion counts at every distinct threshold (arrays of equal length, thresholds decreasing)."""

    thresholds: np.ndarray
    tp: np.ndarray
    fp: np.ndarray
    fn: np.ndarray
    tn: np.ndarray

    @property
    def n_pos(self) -> int:
        return int(self.tp[0] + self.fn[0]) if len(self) else 0

    @property
    def n_neg(self) -> int:
        return int(self.fp[0] + self.tn[0]) if len(self) else 0

    @property
    def precision(self) -> np.ndarray:
        """1.0 where nothing is flagged (scikit-learn's convention for the curve's end point)."""
        return _ratio(self.tp, self.tp + self.fp, 1.0)

    @property
    def recall(self) -> np.ndarray:
        return _ratio(self.tp, self.tp + self.fn, 0.0)

    tpr = recall

    @property
    def fpr(self) -> np.ndarray:
        return _ratio(self.fp, self.fp + self.tn, 0.0)

    @property
    def specificity(self) -> np.ndarray:
        return _ratio(self.tn, self.fp + self.tn, 0.0)

    def fbeta(self, beta: float = 1.0) -> np.ndarray:
        b2 = beta * beta
        num = (1 + b2) * self.tp
        return _ratio(num, num + b2 * self.fn + self.fp, 0.0)

    @property
    def f1(self) -> np.ndarray:
        return self.fbeta(1.0)

    @property
    def accuracy(self) -> np.ndarray:
        return (self.tp + self.tn) / (self.tp + self.fp + self.fn + self.tn)

    @property
    def balanced_accuracy(self) -> np.ndarray:
        return (self.recall + self.specificity) / 2

    def auroc(self) -> float:
        """Trapezoidal area under (fpr, tpr) from (0, 0); NaN when a class is missing."""
        if not len(self) or self.tp[-1] + self.fn[-1] == 0 or self.fp[-1] + self.tn[-1] == 0:
            return float("nan")
        n_pos, n_neg = self.tp[-1] + self.fn[-1], self.fp[-1] + self.tn[-1]
        fpr = np.r_[0.0, self.fp / n_neg]
        tpr = np.r_[0.0, self.tp / n_pos]
        return float(np.sum(np.diff(fpr) * (tpr[1:] + tpr[:-1]) / 2))

    def average_precision(self) -> float:
        """Step-wise area under the PR curve: sum of precision at each threshold times the recall gained."""
        if not len(self) or self.tp[-1] + self.fn[-1] == 0:
            return float("nan")
        recall = np.r_[0.0, self.tp / (self.tp[-1] + self.fn[-1])]
        return float(np.sum(np.diff(recall) * (self.tp / (self.tp + self.fp))))

    def index_of(self, threshold: float) -> int | None:
        """The row whose counts hold when `threshold` is applied; None when it flags nothing."""
        i = int(np.searchsorted(-self.thresholds, -threshold, side="right")) - 1
        return i if i >= 0 else None

    def __len__(self) -> int:
        return len(self.thresholds)


def threshold_curve(y_true: ArrayLike, y_score: ArrayLike, sample_weight: ArrayLike | None = None) -> ThresholdCurve:
    """Confusion counts at each distinct score used as a threshold.

    Args:
        y_true: 1/True for hallucinated, 0/False for faithful.
        y_score: higher = more likely hallucinated.
        sample_weight: optional non-negative weights (counts), e.g. for a bootstrap resample.
    """
    y_true = np.asarray(y_true, dtype=bool)
    y_score = np.asarray(y_score, dtype=float)
    if y_true.shape != y_score.shape:
        raise ValueError(f"y_true has {y_true.shape} values and y_score {y_score.shape}")
    if np.isnan(y_score).any():
        raise ValueError("y_score holds NaN; drop error verdicts before computing curves")
    order = np.argsort(-y_score, kind="mergesort")
    w = None if sample_weight is None else np.asarray(sample_weight, dtype=float)[order]
    return sorted_curve(y_true[order], y_score[order], w)


def sorted_curve(t: np.ndarray, s: np.ndarray, w: np.ndarray | None = None) -> ThresholdCurve:
    """`threshold_curve` of labels and scores already sorted by decreasing score. Any subset of a sorted
    array is still sorted, so the slices of one verifier's cases need no sort of their own."""
    # The last index of each run of equal scores: the counts just after that threshold is applied.
    last = np.r_[np.flatnonzero(s[1:] != s[:-1]), len(s) - 1] if len(s) else np.array([], dtype=int)
    n_pos: float  # a count, or a weighted sum
    n_neg: float
    if w is None:
        tp = np.cumsum(t)[last]
        fp = (last + 1) - tp
        n_pos = int(tp[-1]) if len(tp) else 0
        n_neg = int(len(t) - n_pos)
    else:
        tp = np.cumsum(w * t)[last]
        fp = np.cumsum(w * ~t)[last]
        n_pos, n_neg = float((w * t).sum()), float((w * ~t).sum())
    return ThresholdCurve(thresholds=s[last], tp=tp, fp=fp, fn=n_pos - tp, tn=n_neg - fp)


def auroc(y_true: ArrayLike, y_score: ArrayLike) -> float:
    """Area under the ROC curve; NaN when only one class is present."""
    return threshold_curve(y_true, y_score).auroc()


def auprc(y_true: ArrayLike, y_score: ArrayLike) -> float:
    """Average precision (area under the precision-recall curve, step-wise); NaN without positives."""
    return threshold_curve(y_true, y_score).average_precision()


def best_fbeta_index(curve: ThresholdCurve, beta: float = 1.0) -> int:
    """Index of the threshold maximising F-beta (the highest such threshold on ties)."""
    return int(np.argmax(curve.fbeta(beta)))


def confusion_at(y_true: ArrayLike, y_score: ArrayLike, threshold: float,
                 sample_weight: ArrayLike | None = None) -> dict[str, Any]:
    """Confusion counts when cases with `score >= threshold` are flagged: integers, or weighted sums
    when `sample_weight` is given (a bootstrap resample's count of each case; a k x n matrix gives k
    sums per count). The one confusion helper of the metrics, the comparison and the gate."""
    y = np.asarray(y_true, dtype=bool)
    pred = np.asarray(y_score, dtype=float) >= threshold
    if sample_weight is None:
        return {"tp": int((pred & y).sum()), "fp": int((pred & ~y).sum()),
                "fn": int((~pred & y).sum()), "tn": int((~pred & ~y).sum())}
    w = np.asarray(sample_weight, dtype=float)
    return {"tp": w @ (pred & y), "fp": w @ (pred & ~y), "fn": w @ (~pred & y), "tn": w @ (~pred & ~y)}


def rates(tp: float, fp: float, fn: float, tn: float) -> dict[str, float]:
    """Every threshold metric from one set of confusion counts; NaN where undefined."""
    nan = float("nan")
    n = tp + fp + fn + tn
    p = tp / (tp + fp) if tp + fp else nan
    r = tp / (tp + fn) if tp + fn else nan
    spec = tn / (tn + fp) if tn + fp else nan
    return {
        "precision": p, "recall": r, "specificity": spec,
        "f1": 2 * tp / (2 * tp + fp + fn) if tp + fp + fn else nan,
        "accuracy": (tp + tn) / n if n else nan,
        "balanced_accuracy": (r + spec) / 2,
    }
