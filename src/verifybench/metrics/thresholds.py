"""Choosing thresholds: a target, a calibration split to fit on, a test split to report on.

A threshold is fitted on the calibration split only, and the operating point that goes in a report or a
policy is the one measured on the test split. The calibration-split numbers are kept beside it, labelled
as tuned, so nobody mistakes one for the other.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from verifybench.errors import VerifybenchError
from verifybench.metrics.curves import ThresholdCurve

# Split names that mean "fit here" and "report here"; anything else is neither.
CALIBRATION_NAMES = ("calibration", "cal", "calib", "dev", "validation", "val", "valid", "evaluation", "train")
TEST_NAMES = ("test", "heldout", "held-out", "holdout")


# Targets that maximise a measure and take no value. Youden's J (TPR - FPR) is 2 x balanced accuracy - 1:
# both pick the same threshold; they are reported in their own units.
MAXIMISED = {"balanced_accuracy": "max balanced accuracy", "youden": "max Youden's J"}

# The default target: a threshold that has to separate the classes. Max F1 is kept as the named target
# `f1`; on a set where most cases are hallucinated, or where a verifier ranks weakly, it flags (nearly)
# everything (see docs/thresholds.md for the measurements behind this choice).
DEFAULT_TARGET = "balanced_accuracy"

# A threshold flagging more than this share of a split's faithful cases, or less than 1 - it of its
# hallucinated ones, is marked near-degenerate: its precision and F1 mostly restate the class balance.
NEAR_DEGENERATE = 0.95


@dataclass(frozen=True)
class Target:
    """What a threshold optimises: max F-beta, max balanced accuracy or Youden's J, or precision /
    recall at least a value."""

    kind: str  # "fbeta" | "balanced_accuracy" | "youden" | "precision" | "recall" | "f1_min_specificity"
    value: float = 1.0

    def __str__(self) -> str:
        if self.kind == "fbeta":
            return "max F1" if self.value == 1 else f"max F{self.value:g}"
        if self.kind in MAXIMISED:
            return MAXIMISED[self.kind]
        if self.kind == "f1_min_specificity":
            return f"max F1 at specificity >= {self.value:g}"
        return f"{self.kind} >= {self.value:g}"

    def as_dict(self) -> dict:
        return {self.kind: self.value}


TARGETS_HELP = ("f1 (max F1), fbeta=B, balanced_accuracy (the default), youden, f1_min_specificity=S, precision=P "
                "or recall=R")


def default_target() -> Target:
    return Target(DEFAULT_TARGET, 1.0)


def parse_target(text: str | dict | Target | None) -> Target:
    """`"balanced_accuracy"` (the default, also for None), `"youden"`, `"f1"`, `"fbeta=0.5"`,
    `"f1_min_specificity=0.5"`, `"precision=0.9"`, `"recall=0.8"`, or the dict form `{precision: 0.9}`."""
    if text is None:
        return default_target()
    if isinstance(text, Target):
        return text
    if isinstance(text, dict):
        if len(text) != 1:
            raise VerifybenchError(f"a threshold target names one metric, got {text}")
        (k, v), = text.items()
        text = f"{k}={v}"
    m = re.fullmatch(r"\s*(f1_min_specificity|f1|fbeta|f_beta|balanced_accuracy|youden|precision|recall)"
                     r"\s*(?:=\s*([0-9.]+))?\s*",
                     str(text).lower())
    if not m:
        raise VerifybenchError(f"threshold target {text!r}: expected {TARGETS_HELP}")
    kind, value = m.group(1), m.group(2)
    if kind == "f1":
        return Target("fbeta", 1.0)
    if kind in MAXIMISED:
        return Target(kind, 1.0)
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
    - balanced_accuracy, youden: the threshold maximising (TPR + TNR) / 2, i.e. TPR - FPR (highest on ties);
    - precision >= p: the most recall any threshold reaching p gives, at the highest threshold that
      gives it (a lower one would only add false alarms);
    - recall >= r: the highest threshold that still reaches r (fewest false alarms for that recall);
    - f1_min_specificity = s: max F1 among the thresholds keeping specificity >= s (highest on ties).
    """
    if not len(curve):
        return None
    if target.kind == "fbeta":
        return int(np.argmax(curve.fbeta(target.value)))
    if target.kind == "f1_min_specificity":
        ok = np.flatnonzero(curve.specificity >= target.value) if curve.n_neg else np.arange(len(curve))
        return int(ok[np.argmax(curve.f1[ok])]) if len(ok) else None
    if target.kind in MAXIMISED:
        return int(np.argmax(curve.tpr - curve.fpr))
    if target.kind == "precision":
        ok = np.flatnonzero((curve.precision >= target.value) & (curve.tp > 0))
        if not len(ok):
            return None
        # tp never falls as the threshold falls: the first qualifying row with the most tp.
        return int(ok[np.argmax(curve.tp[ok] == curve.tp[ok[-1]])])
    ok = np.flatnonzero(curve.recall >= target.value)
    return int(ok[0]) if len(ok) else None


def role_of(split: Any) -> str:
    """The role a split name gives a case: "calibration", "test", or "" (neither)."""
    v = "" if split is None else str(split).lower()
    return "calibration" if v in CALIBRATION_NAMES else "test" if v in TEST_NAMES else ""


def per_value(values, fn: Callable[[Any], Any]) -> np.ndarray:
    """`fn` of each value as an object array, computed once per distinct value: a million cases hold a
    handful of split names and doc types. A categorical's missing value is None."""
    if isinstance(values, pd.Series) and isinstance(values.dtype, pd.CategoricalDtype):
        codes, cats = values.cat.codes.to_numpy(), list(values.cat.categories)
    else:
        codes, uniques = pd.factorize(pd.Series(list(values), dtype=object), use_na_sentinel=True)
        cats = list(uniques)
        if len(codes) and (codes < 0).any():  # None (and NaN): pandas leaves them out of the uniques
            raw = np.asarray(pd.Series(list(values), dtype=object))
            nan_is_none = all(v is None for v in raw[codes < 0])
            if not nan_is_none:  # NaN is not None: str(nan) is "nan"; keep the old per-value meaning
                return np.array([fn(v) for v in raw], dtype=object)
    mapped = np.empty(len(cats) + 1, dtype=object)
    mapped[:len(cats)] = [fn(c) for c in cats]
    mapped[len(cats)] = fn(None)
    return mapped[codes]


def split_roles(split_values, seed: int = 0, test_fraction: float = 0.5, labels=None, groups=None,
                strata=None) -> np.ndarray:
    """'calibration' or 'test' per case.

    When the cases carry split names, known calibration and test names are used as they are. Otherwise
    (or when either side would be empty) a seeded split is drawn, stratified by label and `strata`
    (the doc type) together, so each doc type gets its share of both classes on both sides. Cases
    sharing a group (e.g. HaluEval's right/hallucinated pair) land on the same side: groups are the
    units drawn, each in the stratum of its first case's doc type and the set of labels it holds.
    Within a stratum of k units, k x test_fraction go to the test side, the fractional unit by a seeded
    coin, so that small strata are not all rounded the same way.
    """
    split_role = per_value(split_values, lambda v: role_of(v))
    if (split_role == "calibration").any() and (split_role == "test").any():
        return split_role
    n = len(split_role)
    if not n:
        return np.array([], dtype=object)
    labels = np.zeros(n, bool) if labels is None else np.asarray(labels, bool)
    # Vectorised (a million cases take a second): groups and strata as integer codes.
    if groups is None:
        g = np.arange(n)
    elif isinstance(groups, np.ndarray) and np.issubdtype(groups.dtype, np.integer):
        g, _ = pd.factorize(groups)  # already codes (the case table's): renumbered in order of appearance
    else:
        g, _ = pd.factorize(pd.Series(list(groups), dtype=object))
    n_groups = int(g.max()) + 1
    first = np.full(n_groups, n)
    np.minimum.at(first, g, np.arange(n))
    has_pos = np.bincount(g, weights=labels, minlength=n_groups) > 0
    has_neg = np.bincount(g, weights=~labels, minlength=n_groups) > 0
    label_set = has_pos.astype(int) + 2 * has_neg.astype(int)  # 1: hallucinated only, 2: faithful only, 3: both
    doc = per_value(strata, lambda v: "" if v is None else str(v))[first] if strata is not None \
        else np.full(n_groups, "", dtype=object)
    # Strata are (doc type, label set) pairs numbered in sorted order.
    doc_code, _ = pd.factorize(pd.Series(doc, dtype=object), sort=True)
    _, stratum = np.unique(doc_code.astype(np.int64) * 4 + label_set, return_inverse=True)
    n_strata = int(stratum.max()) + 1
    rng = np.random.default_rng(seed)
    exact = np.bincount(stratum, minlength=n_strata) * test_fraction
    n_test = np.floor(exact).astype(int) + (rng.random(n_strata) < exact - np.floor(exact))
    # A random rank for each group within its stratum; the lowest n_test ranks go to the test side.
    order = np.lexsort((rng.random(n_groups), stratum))
    starts = np.r_[0, np.cumsum(np.bincount(stratum, minlength=n_strata))[:-1]]
    rank = np.empty(n_groups, int)
    rank[order] = np.arange(n_groups) - starts[stratum[order]]
    test_group = rank < n_test[stratum]
    return np.array(["calibration", "test"], dtype=object)[test_group[g].astype(np.int8)]


UNLABELED = "unlabeled"  # the role of a case without a label: scored, on neither side of the split


def labeled_roles(split_values, labeled=None, seed: int = 0, test_fraction: float = 0.5, labels=None,
                  groups=None, strata=None) -> np.ndarray:
    """`split_roles` drawn over the labeled cases only (the same roles as `split_roles` when every case is
    labeled); a case without a label gets the role "unlabeled"."""
    if labeled is None or np.asarray(labeled, bool).all():
        return split_roles(split_values, seed, test_fraction, labels, groups, strata)
    at = np.flatnonzero(np.asarray(labeled, bool))

    def take(values):
        if values is None:
            return None
        return values.iloc[at] if isinstance(values, pd.Series) else np.asarray(values)[at]

    roles = np.full(len(labeled), UNLABELED, dtype=object)
    if len(at):
        roles[at] = split_roles(take(split_values), seed, test_fraction, take(labels), take(groups), take(strata))
    return roles


# A threshold's interval costs one weighted curve per resample: cases x resamples is held under this.
INTERVAL_WORK = 20_000_000
INTERVAL_MIN_RESAMPLES = 20
INTERVAL_BLOCK = 4_000_000  # resample weights held at once


def threshold_interval(t: np.ndarray, s: np.ndarray, target: Target, n_boot: int, seed: int = 0,
                       alpha: float = 0.05) -> dict[str, Any] | None:
    """How far the threshold `target` picks would move on another draw of the same calibration cases: the
    2.5th and 97.5th percentiles of the threshold refitted on `n_boot` stratified resamples (labels `t`
    and scores `s` sorted by decreasing score, as `sorted_curve` takes them). What a lower
    `min_per_class` costs is this interval's width. Fewer resamples on a large set (cases x resamples
    stays under INTERVAL_WORK); None with one class only or fewer than INTERVAL_MIN_RESAMPLES resamples."""
    from verifybench.metrics.bootstrap import resample_weights
    from verifybench.metrics.curves import sorted_curve

    t = np.asarray(t, bool)
    n = len(t)
    k = int(min(n_boot, max(INTERVAL_MIN_RESAMPLES, INTERVAL_WORK // max(n, 1))))
    if n < 2 or t.all() or not t.any() or k < INTERVAL_MIN_RESAMPLES:
        return None
    rng = np.random.default_rng(seed)
    values = np.full(k, np.nan)
    # Resamples drawn a block at a time, the block held under INTERVAL_BLOCK weights (64 x 500,000 float32
    # weights were 128 MB at the peak of a million-case run). Up to 62,500 cases a block is 64 resamples as
    # it always was; past POISSON_ABOVE (20,000) the Poisson draws are the same in blocks of any even
    # number of resamples (numpy draws 16-bit integers in pairs and drops the half of an odd call's last).
    block = max(2, min(64, INTERVAL_BLOCK // n) // 2 * 2)
    for start in range(0, k, block):
        w = resample_weights(t, min(block, k - start), rng)
        for j, row in enumerate(w):
            curve = sorted_curve(t, s, np.asarray(row, float))
            i = select_threshold(curve, target)
            if i is not None:
                values[start + j] = curve.thresholds[i]
    values = values[~np.isnan(values)]
    if not len(values):
        return None
    lo, hi = np.quantile(values, [alpha / 2, 1 - alpha / 2])
    return {"low": float(lo), "high": float(hi), "resamples": k}
