"""A learned combination of checks: logistic regression (scikit-learn) on the member verifiers' scores,
fitted on a run's calibration split only, scored on its test split, and compared with each member by
the paired bootstrap (`metrics.bootstrap.paired_bootstrap`).

Why a run-level computation here and not a `stack` verifier: a verifier scores a case from the case
alone and knows nothing of labels, splits or metrics (architecture.md). A stacked model is fitted on
labels of the calibration split; as a verifier it would either need those labels and the split (the
invariant broken) or re-score its members on every case of a run that already holds their verdicts.
Fitted here, the model reads the verdicts already written, its fitting rows are the calibration split
the metrics layer assigned, and the fitted coefficients can be written into a guard file for inline use.

Members' error verdicts: the score is replaced by the member's calibration median and a missing flag
is added as a feature, so one failed member does not lose the case; a case whose every member failed
is an error verdict of the stack too (counted as wrong). The stack's threshold is fitted on out-of-fold
predictions over the calibration split (5 folds, seeded), so it is not tuned on the model's own fit.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from verifybench.errors import VerifybenchError
from verifybench.feedback.runs import RunTable
from verifybench.metrics.bootstrap import errors_as_wrong, paired_bootstrap
from verifybench.metrics.curves import sorted_curve
from verifybench.metrics.thresholds import Target, select_threshold

FOLDS = 5


@dataclass
class Stack:
    members: list[str]
    medians: np.ndarray
    model: Any  # a fitted sklearn Pipeline
    threshold: float | None
    fitted_rows: np.ndarray  # the case rows the model was fitted on (the calibration split)

    def features(self, t: RunTable, rows: np.ndarray) -> np.ndarray:
        s = np.column_stack([t.check(v).score[rows] for v in self.members])
        miss = np.isnan(s)
        return np.hstack([np.where(miss, self.medians, s), miss.astype(float)])

    def score(self, t: RunTable, rows: np.ndarray) -> np.ndarray:
        """P(hallucinated) per case; NaN where every member failed."""
        p = self.model.predict_proba(self.features(t, rows))[:, 1]
        all_failed = np.all(np.column_stack([np.isnan(t.check(v).score[rows]) for v in self.members]), axis=1)
        return np.where(all_failed, np.nan, p)


def _pipeline(seed: int):
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    return make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000, random_state=seed))


def fit_stack(t: RunTable, members: list[str], target: Target, seed: int = 0) -> Stack:
    """Fit on the calibration split's cases only (rows where `t.cal`)."""
    from sklearn.model_selection import StratifiedKFold, cross_val_predict

    rows = np.flatnonzero(t.cal)
    y = t.label[rows]
    if min(int(y.sum()), int((~y).sum())) < FOLDS:
        raise VerifybenchError(f"stack: the calibration split has {int(y.sum())} hallucinated and {int((~y).sum())} "
                               f"faithful cases; at least {FOLDS} of each are needed")
    s = np.column_stack([t.check(v).score[rows] for v in members])
    medians = np.array([np.nanmedian(col) if (~np.isnan(col)).any() else 0.0 for col in s.T])
    stack = Stack(members=list(members), medians=medians, model=_pipeline(seed), threshold=None, fitted_rows=rows)
    x = stack.features(t, rows)
    folds = StratifiedKFold(n_splits=FOLDS, shuffle=True, random_state=seed)
    oof = cross_val_predict(_pipeline(seed), x, y, cv=folds, method="predict_proba")[:, 1]
    order = np.argsort(-oof, kind="mergesort")
    curve = sorted_curve(y[order], oof[order])
    i = select_threshold(curve, target)
    stack.threshold = None if i is None else float(curve.thresholds[i])
    stack.model.fit(x, y)
    return stack


def coefficients(stack: Stack) -> dict[str, Any]:
    """The fitted model on the members' own scales: p = sigmoid(intercept + sum coef * score (+ missing
    terms)), what a guard needs to apply it."""
    scaler, lr = stack.model[0], stack.model[-1]
    w = lr.coef_[0] / scaler.scale_
    b = float(lr.intercept_[0] - np.sum(lr.coef_[0] * scaler.mean_ / scaler.scale_))
    k = len(stack.members)
    return {"intercept": b, "score": dict(zip(stack.members, w[:k].tolist())),
            "missing": dict(zip(stack.members, w[k:].tolist())), "impute_median": dict(zip(stack.members,
                                                                                             stack.medians.tolist()))}


def compare_members(t: RunTable, stack: Stack, thresholds: dict[str, float], n_boot: int, seed: int) -> list[dict]:
    """The stack against each member on the test split: paired, stratified bootstrap of AUROC and F1
    differences (stack - member), each at its own calibration-fitted threshold, errors counted as wrong."""
    rows = np.flatnonzero(t.test)
    y = t.label[rows]
    mine = errors_as_wrong(y, stack.score(t, rows))
    out = []
    for v in stack.members:
        theirs = errors_as_wrong(y, t.check(v).score[rows])
        r = paired_bootstrap(y, mine, theirs, stack.threshold, thresholds[v], metrics=("auroc", "f1"),
                             n_boot=n_boot, seed=seed)
        out.append({"a": "stack", "b": v, "cases": int(len(rows)), "metrics": r})
    return out
