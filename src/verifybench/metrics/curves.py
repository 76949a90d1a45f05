"""Per-threshold confusion counts, computed once by sorting; every threshold metric derives from them.

Convention: a case is predicted hallucinated when `score >= threshold`. Thresholds are the distinct
scores in decreasing order, so index 0 flags the fewest cases.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from sklearn.metrics import average_precision_score, roc_auc_score


@dataclass(frozen=True)
class ThresholdCurve:
    """Confusion counts at every distinct threshold (arrays of equal length, thresholds decreasing)."""

    thresholds: np.ndarray
    tp: np.ndarray
    fp: np.ndarray
    fn: np.ndarray
    tn: np.ndarray

    @property
    def precision(self) -> np.ndarray:
        flagged = self.tp + self.fp
        return np.divide(self.tp, flagged, out=np.ones_like(self.tp, dtype=float), where=flagged > 0)

    @property
    def recall(self) -> np.ndarray:
        pos = self.tp + self.fn
        return np.divide(self.tp, pos, out=np.zeros_like(self.tp, dtype=float), where=pos > 0)

    def fbeta(self, beta: float = 1.0) -> np.ndarray:
        b2 = beta * beta
        num = (1 + b2) * self.tp
        den = num + b2 * self.fn + self.fp
        return np.divide(num, den, out=np.zeros_like(num, dtype=float), where=den > 0)

    @property
    def f1(self) -> np.ndarray:
        return self.fbeta(1.0)

    @property
    def accuracy(self) -> np.ndarray:
        return (self.tp + self.tn) / (self.tp + self.fp + self.fn + self.tn)

    def __len__(self) -> int:
        return len(self.thresholds)


def threshold_curve(y_true, y_score) -> ThresholdCurve:
    """Confusion counts at each distinct score used as a threshold.

    Args:
        y_true: 1/True for hallucinated, 0/False for faithful.
        y_score: higher = more likely hallucinated.
    """
    y_true = np.asarray(y_true, dtype=bool)
    y_score = np.asarray(y_score, dtype=float)
    if y_true.shape != y_score.shape:
        raise ValueError(f"y_true has {y_true.shape} values and y_score {y_score.shape}")
    if np.isnan(y_score).any():
        raise ValueError("y_score holds NaN; drop error verdicts before computing curves")
    order = np.argsort(-y_score, kind="mergesort")
    s, t = y_score[order], y_true[order]
    # The last index of each run of equal scores: the counts just after that threshold is applied.
    last = np.r_[np.flatnonzero(np.diff(s)), len(s) - 1] if len(s) else np.array([], dtype=int)
    tp = np.cumsum(t)[last]
    fp = (last + 1) - tp
    n_pos, n_neg = int(t.sum()), int(len(t) - t.sum())
    return ThresholdCurve(thresholds=s[last], tp=tp, fp=fp, fn=n_pos - tp, tn=n_neg - fp)


def auroc(y_true, y_score) -> float:
    """Area under the ROC curve; NaN when only one class is present."""
    y_true = np.asarray(y_true, dtype=bool)
    if y_true.all() or not y_true.any():
        return float("nan")
    return float(roc_auc_score(y_true, y_score))


def auprc(y_true, y_score) -> float:
    """Average precision (area under the precision-recall curve, step-wise); NaN without positives."""
    y_true = np.asarray(y_true, dtype=bool)
    if not y_true.any():
        return float("nan")
    return float(average_precision_score(y_true, y_score))


def best_fbeta_index(curve: ThresholdCurve, beta: float = 1.0) -> int:
    """Index of the threshold maximising F-beta (the highest such threshold on ties)."""
    return int(np.argmax(curve.fbeta(beta)))
