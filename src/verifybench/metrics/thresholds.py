"""Choosing thresholds: a target, a calibration split to fit on, a test split to report on.

A threshold is fitted on the calibration split only, and the operating point that goes in a report or a
policy is the one measured on the test split. The calibration-split numbers are kept beside it, labelled
as tuned, so nobody mistakes one for the other.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from verifybench.errors import VerifybenchError
from verifybench.metrics.curves import ThresholdCurve

# Split names that mean "fit here" and "report here"; anything else is neither.
CALIBRATION_NAMES = ("calibration", "cal", "calib", "dev", "validation", "val", "valid", "evaluation", "train")
TEST_NAMES = ("test", "heldout", "held-out", "holdout")


@dataclass(frozen=True)
class Target:
    """What a threshold optimises: max F-beta, or precision / recall at least a value."""

    kind: str  # "fbeta" | "precision" | "recall"
    value: float

    def __str__(self) -> str:
        if self.kind == "fbeta":
            return "max F1" if self.value == 1 else f"max F{self.value:g}"
        return f"{self.kind} >= {self.value:g}"

    def as_dict(self) -> dict:
        return {self.kind: self.value}


def parse_target(text: str | dict | Target | None) -> Target:
    """`"f1"`, `"fbeta=0.5"`, `"precision=0.9"`, `"recall=0.8"`, or the dict form `{precision: 0.9}`."""
    if text is None:
        return Target("fbeta", 1.0)
    if isinstance(text, Target):
        return text
    if isinstance(text, dict):
        if len(text) != 1:
            raise VerifybenchError(f"a threshold target names one metric, got {text}")
        (k, v), = text.items()
        text = f"{k}={v}"
    m = re.fullmatch(r"\s*(f1|fbeta|f_beta|precision|recall)\s*(?:=\s*([0-9.]+))?\s*", str(text).lower())
    if not m:
        raise VerifybenchError(f"threshold target {text!r}: expected f1, fbeta=B, precision=P or recall=R")
    kind, value = m.group(1), m.group(2)
    if kind == "f1":
        return Target("fbeta", 1.0)
    if value is None:
        raise VerifybenchError(f"threshold target {text!r} needs a value, e.g. {kind}=0.9")
    v = float(value)
    if kind in ("fbeta", "f_beta"):
        return Target("fbeta", v)
    if not 0 < v <= 1:
        raise VerifybenchError(f"threshold target {text!r}: {kind} must be in (0, 1]")
    return Target(kind, v)


def select_threshold(curve: ThresholdCurve, target: Target) -> int | None:
    """Index of the chosen threshold in `curve`, or None when the target cannot be met.

    - fbeta: the threshold maximising F-beta (the highest one on ties);
    - precision >= p: the lowest threshold that still reaches p (most recall for that precision);
    - recall >= r: the highest threshold that still reaches r (fewest false alarms for that recall).
    """
    if not len(curve):
        return None
    if target.kind == "fbeta":
        return int(np.argmax(curve.fbeta(target.value)))
    if target.kind == "precision":
        ok = np.flatnonzero((curve.precision >= target.value) & (curve.tp > 0))
        return int(ok[-1]) if len(ok) else None
    ok = np.flatnonzero(curve.recall >= target.value)
    return int(ok[0]) if len(ok) else None


def split_roles(split_values, seed: int = 0, test_fraction: float = 0.5, labels=None, groups=None) -> np.ndarray:
    """'calibration' or 'test' per case.

    When the cases carry split names, known calibration and test names are used as they are. Otherwise
    (or when either side would be empty) a seeded split stratified by label is drawn; cases sharing a
    group (e.g. HaluEval's right/hallucinated pair) land on the same side.
    """
    values = np.array(["" if v is None else str(v).lower() for v in split_values], dtype=object)
    roles = np.where(np.isin(values, CALIBRATION_NAMES), "calibration",
                     np.where(np.isin(values, TEST_NAMES), "test", ""))
    if (roles == "calibration").any() and (roles == "test").any():
        return roles.astype(object)
    n = len(values)
    labels = np.zeros(n, bool) if labels is None else np.asarray(labels, bool)
    groups = np.arange(n) if groups is None else np.asarray(groups, dtype=object)
    rng = np.random.default_rng(seed)
    roles = np.empty(n, dtype=object)
    for label in (False, True):
        idx = np.flatnonzero(labels == label)
        keys = list(dict.fromkeys(groups[idx].tolist()))
        order = rng.permutation(len(keys))
        n_test = int(round(len(keys) * test_fraction))
        test_keys = {keys[i] for i in order[:n_test]}
        for i in idx:
            roles[i] = "test" if groups[i] in test_keys else "calibration"
    # A group holding both labels must not straddle the split: the first label's draw decides.
    if groups is not None:
        decided: dict = {}
        for i in range(n):
            roles[i] = decided.setdefault(groups[i], roles[i])
    return roles
