"""Per verifier and slice: ranking quality with intervals, a threshold and its operating point with an
interval, latency, cost, errors, calibration and shortcut cues.

Thresholds come one of two ways (`Settings.estimate`, resolved by `estimate_mode`): fitted on the
calibration split and measured on the test split ("split", the default from SPLIT_FROM labeled cases),
or fitted on every labeled case and measured by cross-fitting ("crossfit", the default below it): the
whole set's threshold through `metrics.crossfit`, each slice's pooled toward it (`metrics.pooling`), so
a hundred labeled cases give a threshold and an honest estimate where a split would give neither.

Inputs are the run directory's case index and verdicts; `evaluate` works on one pandas frame (one row
per verifier x case) so the same code serves a 150-case demo and a million-case benchmark. The output is
plain JSON-able data: the report and the CLI only read numbers.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd

from verifybench.errors import SuiteError
from verifybench.metrics.bootstrap import counts_intervals, rank_intervals
from verifybench.metrics.calibration import brier, expected_calibration_error, reliability
from verifybench.metrics.crossfit import K_FOLDS, SPLIT_FROM, counts_posterior, crossfit, folds
from verifybench.metrics.crossfit import MIN_PER_CLASS as CROSSFIT_MIN_PER_CLASS
from verifybench.metrics.curves import confusion_at, rates, sorted_curve
from verifybench.metrics.operating import cost_per_1k, latency_kind_codes, latency_summary, pareto_front
from verifybench.metrics.pooling import crossfit_pooled
from verifybench.metrics.repeats import flip_summary, repeat_matrix
from verifybench.metrics.settings import GATE_MIN_CASES, OVERALL, SLICE_FIELDS, Settings
from verifybench.metrics.shortcuts import CUES, shortcut_report
from verifybench.metrics.thresholds import (
    NEAR_DEGENERATE,
    UNLABELED,
    labeled_roles,
    per_value,
    role_of,
    select_threshold,
    threshold_interval,
)
from verifybench.tables import case_table, positions, slice_value, verdict_table

CURVE_POINTS = 400  # per-threshold rows embedded for plots and the report's slider
SHORTCUT_MIN_PER_CLASS = 20  # the shortcut test needs this many cases of each class in a group
CROSSFIT_ALPHA = 0.05  # cross-fitted intervals are 95% ones, as the test split's are


def estimate_mode(estimate: str, n_labeled: int, split_from: str) -> tuple[str, str]:
    """("split" or "crossfit", why) for a run with `n_labeled` labeled cases: a suite's explicit choice, the
    data's own split field, or, with a drawn split, cross-fitting below SPLIT_FROM labeled cases (there a
    split leaves too few on each side: no threshold from 100 cases, and a test estimate from 50)."""
    if estimate in ("split", "crossfit"):
        return estimate, f"metrics.estimate: {estimate}"
    if split_from == "field":
        return "split", "the data's own split field"
    if n_labeled < SPLIT_FROM:
        return "crossfit", (f"{n_labeled} labeled cases, fewer than {SPLIT_FROM}: fitted on all of them, estimated "
                            f"by {K_FOLDS}-fold cross-fitting (metrics.estimate: split to split them instead)")
    return "split", (f"{n_labeled} labeled cases, {SPLIT_FROM} or more: fitted on the calibration split, measured "
                     "on the test split (metrics.estimate: crossfit to cross-fit instead)")


def _clean(x: Any) -> Any:
    if isinstance(x, (float, np.floating)):
        # Not rounded: thresholds must stay the exact scores, or counts at them would not match.
        return None if math.isnan(x) or math.isinf(x) else float(x)
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, np.bool_):
        return bool(x)
    return x


def jsonable(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return [_clean(v) for v in obj.tolist()]
    return _clean(obj)


def _slice_key(case: dict, by: str) -> str:
    if by.startswith("meta."):
        return str(case.get("meta", {}).get(by[5:], "none"))
    value = case.get(by)
    return "none" if value is None else str(value)


def meta_fields(*fields: str) -> list[str]:
    """The meta keys named by slice and breakdown fields (`meta.tier` -> `tier`): what a case table must
    hold a column for."""
    return list(dict.fromkeys(f[5:] for f in fields if f.startswith("meta.")))


def check_fields(cases: list[dict] | pd.DataFrame, fields: dict[str, str]) -> None:
    """Refuse a slice or breakdown field that no case has (`{"metrics.by": "meta.tier"}`): every case
    would land in one "none" slice, silently. The error lists the fields the cases do have."""
    if isinstance(cases, pd.DataFrame):
        meta_keys = list(cases.attrs.get("meta_keys", []))
    else:
        meta_keys = sorted({k for c in cases for k in (c.get("meta") or {})})
    for key, name in fields.items():
        if name in SLICE_FIELDS or (name.startswith("meta.") and name[5:] in meta_keys):
            continue
        have = ", ".join([*SLICE_FIELDS, *(f"meta.{k}" for k in meta_keys)])
        raise SuiteError(f"{key}: no case has a field {name!r}; the cases have: {have}")


def _slices(ct: pd.DataFrame, field: str) -> pd.Categorical:
    """The slice name of each case for `field`, as a categorical with sorted categories."""
    if field.startswith("meta."):
        col = f"meta.{field[5:]}"
        if col not in ct:
            raise ValueError(f"the case table has no column {col!r}: read it with meta=[{field[5:]!r}]")
        return ct[col].array
    values = ct[field]
    if not isinstance(values.dtype, pd.CategoricalDtype):
        values = values.astype("category")
    codes, cats = values.cat.codes.to_numpy(), [slice_value(c) for c in values.cat.categories]
    names = sorted(set(cats) | ({"none"} if (codes < 0).any() else set()))
    at = {n: i for i, n in enumerate(names)}
    remap = np.array([at[c] for c in cats] + [at.get("none", -1)], dtype=np.int32)
    return pd.Categorical.from_codes(remap[codes], categories=pd.Index(names, dtype=object))


def _by_appearance(c: pd.Categorical) -> pd.Categorical:
    """The categorical with only the categories it holds, in order of first appearance (the order
    `groupby(sort=False)` gives plain values)."""
    codes = c.codes
    present, first = np.unique(codes[codes >= 0], return_index=True)
    order = present[np.argsort(first)]
    return c.set_categories([c.categories[i] for i in order]) if len(order) != len(c.categories) or \
        (order != np.arange(len(order))).any() else c


def frame(cases: list[dict] | pd.DataFrame, verdicts: list | pd.DataFrame, by: str = "doc_type", seed: int = 0,
          test_fraction: float = 0.5, breakdown: Sequence[str] = ()) -> pd.DataFrame:
    """One row per (verifier, case): label, slice, role (calibration/test), score, error, ok (scored,
    no error), latency and how it was measured, cost, and a `bd:<field>` column per breakdown field.

    `cases` and `verdicts` are the run's case index and verdicts, either as rows (dicts, `Verdict`s)
    or as the columnar tables of `verifybench.tables` (what `rundir.read_case_frame` and
    `read_verdict_frame` return: a million cases without a Python object each). Rows are the verdicts
    in their order, those of cases the index does not hold left out; `case_row` is the case's row in
    the case table, `offset` (from a read table) where the verdict's line starts in results.jsonl.

    `frame.attrs["split_from"]` says whether the roles come from the cases' own split field ("field")
    or from a seeded draw stratified by doc type and label ("seeded"). A case without a label (`labeled`
    False) has the role "unlabeled": on neither side of the split."""
    ct = cases if isinstance(cases, pd.DataFrame) else case_table(cases, meta=meta_fields(by, *breakdown))
    vt = verdicts if isinstance(verdicts, pd.DataFrame) else verdict_table(verdicts)
    if len(ct):
        check_fields(ct, {"metrics.by": by, **{f"metrics.breakdown[{i}]": f for i, f in enumerate(breakdown)}})
    splits = ct["split"]
    labeled = ct["labeled"].to_numpy(bool) if "labeled" in ct else np.ones(len(ct), bool)
    roles = labeled_roles(splits, labeled, seed=seed, test_fraction=test_fraction, labels=ct["label"].to_numpy(bool),
                          groups=ct["group"].to_numpy(), strata=ct["doc_type"])
    from_field = bool(labeled.any()) and bool((roles == per_value(splits, role_of))[labeled].all())
    per_case = {
        "dataset": ct["dataset"].array, "doc_type": ct["doc_type"].array, "slice": _slices(ct, by),
        "label": ct["label"].to_numpy(bool), "labeled": labeled, "role": pd.Categorical(roles),
        **{f"bd:{f}": _slices(ct, f) for f in breakdown},
    }
    if int(labeled.sum()) < SPLIT_FROM:  # a run that may cross-fit keeps a group's cases in one fold
        per_case["group"] = ct["group"].to_numpy()
    pos = positions(vt["case_id"], ct["id"]) if len(vt) else np.empty(0, np.int64)
    keep = pos >= 0
    if keep.all():
        out = vt.copy(deep=False)
    else:
        out = vt.iloc[np.flatnonzero(keep)].reset_index(drop=True)
        pos = pos[keep]
    if isinstance(out["verifier"].dtype, pd.CategoricalDtype):
        out["verifier"] = _by_appearance(out["verifier"].array)
    for col, values in per_case.items():
        out[col] = values.take(pos) if isinstance(values, pd.Categorical) else values[pos]
    out["case_row"] = pos
    score = out["score"].to_numpy(dtype=float, na_value=np.nan)
    # One meaning of "scored": no error message and a number. (An error column read back by pandas holds
    # NaN, not None, where there is no error: never test it with `is not None`.)
    out["ok"] = out["error"].isna().to_numpy() & ~np.isnan(score)
    out.attrs["split_from"] = "field" if from_field else "seeded"
    return out


def _curve_table(curve, threshold: float | None = None) -> dict[str, Any]:
    """At most CURVE_POINTS rows of the curve, always including a row at exactly `threshold`, so the
    report's slider stops on the fitted threshold and shows that value: when no score of these cases
    equals it (a threshold fitted on other cases, a fallback, a given one), a row is added at it with
    the counts it gives."""
    if not len(curve):
        if threshold is None:
            return {"threshold": [], "tp": [], "fp": [], "n_pos": curve.n_pos, "n_neg": curve.n_neg}
        return {"threshold": [threshold], "tp": [0], "fp": [0], "n_pos": curve.n_pos, "n_neg": curve.n_neg}
    keep = np.linspace(0, len(curve) - 1, min(len(curve), CURVE_POINTS)).astype(int)
    i = curve.index_of(threshold) if threshold is not None else None
    if i is not None:
        keep = np.r_[keep, i]
    keep = np.unique(keep)
    thresholds, tp, fp = curve.thresholds[keep], curve.tp[keep], curve.fp[keep]
    if threshold is not None and not (thresholds == threshold).any():
        at = int(np.searchsorted(-thresholds, -threshold))  # thresholds decrease: keep them in order
        counts = (curve.tp[i], curve.fp[i]) if i is not None else (0, 0)
        thresholds = np.insert(thresholds.astype(float), at, threshold)
        tp, fp = np.insert(tp, at, counts[0]), np.insert(fp, at, counts[1])
    return {"threshold": thresholds, "tp": tp, "fp": fp, "n_pos": curve.n_pos, "n_neg": curve.n_neg}


@dataclass
class Rows:
    """One verifier's verdicts as arrays, sorted by decreasing score (error verdicts last), so that
    every slice's curve is a masked view of one sort."""

    label: np.ndarray
    score: np.ndarray
    ok: np.ndarray
    labeled: np.ndarray  # the case has a label: the label metrics count only these
    cal: np.ndarray  # in the calibration split
    test: np.ndarray  # in the test split
    slice: np.ndarray  # integer code into `slices`
    slices: list[str]
    latency: np.ndarray
    latency_kind: np.ndarray  # how each latency was measured (codes of operating.LATENCY_KINDS)
    cost: np.ndarray
    units: np.ndarray
    error: np.ndarray  # the error verdicts' messages (None on a scored row): what a refusal note quotes
    group: np.ndarray | None = None  # `meta.group` codes, where the frame has them (small runs: see `frame`)

    @classmethod
    def from_frame(cls, df: pd.DataFrame, rows: np.ndarray | None = None) -> Rows:
        """The rows `rows` of `df` (default: all), with only the columns read here copied."""
        if rows is not None:
            cols = [c for c in ("score", "ok", "error", "label", "labeled", "slice", "role", "latency_ms",
                                "latency_kind", "cost_usd", "units", "group") if c in df]
            df = df.iloc[rows, [df.columns.get_loc(c) for c in cols]]

        def column(name) -> pd.Series:
            return df[name]

        def values(name, dtype=float):
            c = column(name)
            if isinstance(c.dtype, pd.CategoricalDtype):  # the codes, not a string per row
                return c.cat.codes.to_numpy()
            return c.to_numpy(dtype=dtype, na_value=np.nan) if dtype is float else c.to_numpy(dtype=dtype)

        score = values("score")
        ok = values("ok", bool) if "ok" in df else column("error").isna().to_numpy() & ~np.isnan(score)
        order = np.argsort(-np.where(ok, score, -np.inf), kind="mergesort")

        def col(name):
            return values(name)[order]

        # Integer codes: comparing a million Python strings per slice would cost more than the metrics.
        sl = column("slice")
        codes, names = pd.factorize(sl if isinstance(sl.dtype, pd.CategoricalDtype) else sl.astype(str), sort=True)
        role = column("role")
        cal, test = (role == "calibration").to_numpy(), (role == "test").to_numpy()
        kind = (latency_kind_codes(column("latency_kind"))[order] if "latency_kind" in df
                else np.zeros(len(score), np.int8))
        labeled = values("labeled", bool)[order] if "labeled" in df else np.ones(len(score), bool)
        error = np.full(len(score), None, dtype=object)
        bad = np.flatnonzero(~ok[order])
        if len(bad) and "error" in df:  # only the error rows' messages are read: most rows have none
            error[bad] = column("error").take(order[bad]).to_numpy(dtype=object)
        return cls(label=values("label", bool)[order], score=score[order], ok=ok[order], labeled=labeled,
                   cal=cal[order],
                   test=test[order], slice=codes[order], slices=[str(n) for n in names],
                   latency=col("latency_ms"), latency_kind=kind, cost=col("cost_usd"), units=col("units"),
                   error=error, group=column("group").to_numpy()[order] if "group" in df else None)


def _operating_point(r: Rows, mask: np.ndarray, threshold: float, s: Settings, with_ci: bool) -> dict[str, Any]:
    ok = mask & r.ok
    c = confusion_at(r.label[ok], r.score[ok], threshold)
    out = {"n": int(mask.sum()), "n_scored": int(ok.sum()), **rates(**c), "confusion": c}
    err = mask & ~r.ok
    e_pos = int((r.label & err).sum())
    # Errors counted as wrong: a failed case on a hallucinated response is a miss, on a faithful one a
    # false alarm, so a verifier cannot look better by failing.
    out["errors_as_wrong"] = rates(c["tp"], c["fp"] + int(err.sum()) - e_pos, c["fn"] + e_pos, c["tn"])
    if with_ci and ok.any():
        out["ci"] = {k: v.as_list() for k, v in counts_intervals(**c, n_boot=s.n_boot, seed=s.seed).items()}
    return out


def _more(deficit: int, share: float) -> int | None:
    """Labeled cases to add so that `deficit` more land on a side that gets `share` of new cases."""
    if deficit <= 0:
        return 0
    return math.ceil(deficit / share) if share > 0 else None


def _labels_and_needs(r: Rows, mask: np.ndarray, s: Settings, split_from: str) -> tuple[dict, dict]:
    """Labeled cases of each class on each side of the split, and how many more a team would label for
    this slice to get a threshold of its own (`min_per_class` scored calibration cases of each class)
    and to be gated (GATE_MIN_CASES test cases). With a drawn split, a new case lands on the calibration
    side with probability 1 - test_fraction; with the data's own split field, the team places it."""
    def count(m):  # boolean ops and counts only: no copies of a million-row slice
        n_pos = int(np.count_nonzero(m & r.label))
        return {"hallucinated": n_pos, "faithful": int(np.count_nonzero(m)) - n_pos}

    cal = mask & r.cal
    labels = {"calibration": count(cal), "test": count(mask & r.test)}
    cal_scored = count(cal & r.ok)
    # Cross-fitted, every new labeled case counts toward the threshold (the calibration side is all of them).
    share_cal = 1.0 if split_from == "field" or s.estimate == "crossfit" else 1 - s.test_fraction
    share_test = 1.0 if split_from == "field" else s.test_fraction
    test_n = sum(labels["test"].values())
    needs = {
        "threshold": {"per_class": s.min_per_class, "calibration_scored": cal_scored,
                      "more_hallucinated": _more(s.min_per_class - cal_scored["hallucinated"], share_cal),
                      "more_faithful": _more(s.min_per_class - cal_scored["faithful"], share_cal)},
        "gate": {"test_cases": GATE_MIN_CASES, "more": _more(GATE_MIN_CASES - test_n, share_test)},
    }
    return labels, needs


def _degenerate(r: Rows, mask: np.ndarray, threshold: float) -> str | None:
    """Whether a threshold flags every scored case of the calibration split, or none: then it does not
    separate anything, and precision, recall and F1 at it only restate the class balance."""
    cal_ok = mask & r.cal & r.ok
    if not cal_ok.any():
        return None
    flagged = r.score[cal_ok] >= threshold
    if flagged.all():
        return "flags every calibration case"
    if not flagged.any():
        return "flags no calibration case"
    return None


def _near_degenerate(r: Rows, mask: np.ndarray, threshold: float) -> str | None:
    """Whether a threshold flags more than NEAR_DEGENERATE (95%) of a split's faithful cases, or fewer than
    1 - NEAR_DEGENERATE (5%) of its hallucinated ones, on the calibration or the test split: it then
    barely separates, and its precision and F1 mostly restate the class balance. Error verdicts count as
    not flagged; a split without cases of a class says nothing about that class."""
    said = []
    for side, where in (("calibration", r.cal), ("test", r.test)):
        part = mask & where & r.ok
        for positive, name in ((False, "faithful"), (True, "hallucinated")):
            cls = part & (r.label == positive)
            n = int(np.count_nonzero(cls))
            if not n:
                continue
            share = int(np.count_nonzero(r.score[cls] >= threshold)) / n
            if (not positive and share > NEAR_DEGENERATE) or (positive and share < 1 - NEAR_DEGENERATE):
                said.append(f"flags {share:.0%} of the {side} split's {n} {name} cases")
    return "; ".join(said) or None


def _own_fit(r: Rows, cal_ok: np.ndarray, s: Settings) -> dict[str, Any] | None:
    """The threshold a slice too small for `min_per_class` would get fitted on its own few calibration
    cases, with its interval: what a lower minimum would buy, and what it would cost."""
    curve = sorted_curve(r.label[cal_ok], r.score[cal_ok])
    i = select_threshold(curve, s.target)
    if i is None:
        return None
    return {"value": float(curve.thresholds[i]), "target": str(s.target),
            "interval": threshold_interval(r.label[cal_ok], r.score[cal_ok], s.target, s.n_boot, s.seed)}


def _with_interval(t: dict[str, Any]) -> str:
    iv = t.get("interval")
    return f"{t['value']:.4g}" + (f" (95% interval {iv['low']:.4g} to {iv['high']:.4g})" if iv else "")


def _lower_minimum_cost(own: dict[str, Any] | None, most: int, key: str) -> str:
    """The warning's last part: how to fit this slice's own threshold, and what that costs (its interval)."""
    if own is None or most < 1:
        return "; label more cases of the class that is short"
    iv = own.get("interval")
    cost = (f", 95% interval {iv['low']:.4g} to {iv['high']:.4g} over {iv['resamples']} resamples of its "
            f"calibration cases: that spread is what a lower minimum costs" if iv else
            " (too few cases for an interval)")
    return (f"; with `--min-per-class {most}` (metrics: {{min_per_class: {most}}}) {key!r} would get its own "
            f"threshold {own['value']:.4g}{cost}; or label more cases")


def _refused(r: Rows, cal: np.ndarray, s: Settings) -> dict[str, Any] | None:
    """Whether error verdicts, not too few labels, keep a slice from a threshold of its own: the verifier
    failed on at least half of its labeled calibration cases (nli on text not in English), or the
    cases it failed on would have been enough. Then labeling more cases would not help: what it says is
    how many failed and the most common error."""
    failed = cal & ~r.ok
    n_failed, n = int(np.count_nonzero(failed)), int(np.count_nonzero(cal))
    n_pos = int(np.count_nonzero(cal & r.label))
    if not n_failed or (2 * n_failed < n and min(n_pos, n - n_pos) < s.min_per_class):
        return None
    messages = Counter(str(e) for e in r.error[failed] if isinstance(e, str))
    message, times = messages.most_common(1)[0] if messages else ("a score that is not a number", n_failed)
    return {"errors": n_failed, "cases": n, "message": message[:300], "times": times}


def _refusal_note(refused: dict[str, Any]) -> str:
    said = (f"most common, on {refused['times']}: {refused['message']}" if refused["times"] > 1
            else f"e.g. {refused['message']}")
    return (f"; the verifier gave an error verdict on {refused['errors']} of the {refused['cases']} labeled "
            f"calibration cases ({said}): labeling more cases will not give it a threshold while it fails on "
            "them; fix what fails (the run's errors.jsonl lists each), or leave these cases out of its suite")


def _threshold(r: Rows, mask: np.ndarray, s: Settings, verifier: str, key: str,
               parent: dict[str, Any] | None, xfit: dict[str, Any] | None = None) -> dict[str, Any]:
    """The slice's threshold and where it came from: given (a policy or `metrics.fixed`), fitted on the
    slice's calibration split, or, for a slice too small to fit its own, its parent slice's threshold
    (`fallback`, labelled so). Cross-fitted (`s.estimate == "crossfit"`), `xfit` holds the fit: the
    whole set's (`crossfit`) or the slice's pooled one (`crossfit_pooled`); a slice without one (no
    scored labeled case) falls back to the whole set's."""
    cal_ok = mask & r.cal & r.ok
    given = (s.policy or {}).get(verifier, {})
    t: dict[str, Any] = {"value": None, "kind": None, "source": None, "warning": None, "target": str(s.target),
                         "degenerate": None, "near_degenerate": None}
    if key in given or OVERALL in given:
        own = key in given
        value = given[key] if own else given[OVERALL]
        source = s.policy_sources.get(verifier, s.policy_source)
        t.update(kind="given", source=source if own else f"{source} (verifier-wide)")
        if value is None:
            # One rule for a null entry, of a slice or of the whole set: no threshold, none refitted.
            why = (s.policy_reasons.get(verifier) or {}).get(key if own else OVERALL) or "null"
            t["warning"] = (f"NOT GATED AT A THRESHOLD: the {t['source']} gives no threshold for "
                            f"{verifier} / {key if own else OVERALL} ({why}); its F1, precision, recall and "
                            "balanced accuracy are not measured or gated, its AUROC and AUPRC still are")
            return t
        t["value"] = float(value)
    elif verifier in s.binary:
        # A 0/1 decision is its own threshold: fitting one could only pick "flag everything".
        t.update(value=1.0, kind="given", source="the verifier's own 0/1 decision (binary)")
    elif s.estimate == "crossfit":
        _crossfit_threshold(t, r, mask, s, key, parent, xfit)
    else:
        n_pos, n_neg = int(r.label[cal_ok].sum()), int((~r.label[cal_ok]).sum())
        if min(n_pos, n_neg) < s.min_per_class:
            t["warning"] = (f"too few cases to fit a threshold: the calibration split has {n_pos} hallucinated and "
                            f"{n_neg} faithful scored cases (minimum {s.min_per_class} of each)")
            own_fit = _own_fit(r, cal_ok, s) if min(n_pos, n_neg) >= 1 else None
            if own_fit is not None:
                t["own_fit"] = own_fit  # what `--min-per-class` low enough would give this slice
            if parent is not None and parent.get("value") is not None:
                t.update(value=parent["value"], kind="fallback", fallback_from=OVERALL,
                         source=f"fallback: the {OVERALL!r} threshold ({parent['source']})",
                         degenerate=parent.get("degenerate"),
                         near_degenerate=_near_degenerate(r, mask, parent["value"]))
                t["warning"] += f"; it uses the {OVERALL!r} threshold {_with_interval(parent)}"
            refused = _refused(r, mask & r.cal, s)
            if refused is not None:
                t["refused"] = refused
            t["warning"] += _refusal_note(refused) if refused else _lower_minimum_cost(own_fit, min(n_pos, n_neg), key)
            if t["kind"] == "fallback":
                return t
        else:
            cal_curve = sorted_curve(r.label[cal_ok], r.score[cal_ok])
            i = select_threshold(cal_curve, s.target)
            if i is None:
                t["warning"] = f"no threshold reaches {s.target} on the calibration split"
            else:
                t.update(value=float(cal_curve.thresholds[i]), kind="fitted",
                         source=f"fitted on the calibration split ({s.target})")
                t["interval"] = threshold_interval(r.label[cal_ok], r.score[cal_ok], s.target, s.n_boot, s.seed)
    if t["value"] is not None:
        t["degenerate"] = _degenerate(r, mask, t["value"])
        t["near_degenerate"] = _near_degenerate(r, mask, t["value"])
    return t


def _crossfit_threshold(t: dict[str, Any], r: Rows, mask: np.ndarray, s: Settings, key: str,
                        parent: dict[str, Any] | None, xfit: dict[str, Any] | None) -> None:
    """Fill `t` from a cross-fitted fit (see `_threshold`)."""
    if key == OVERALL:
        if xfit is None or xfit.get("estimate_withheld") or xfit["threshold"] is None:
            why = (xfit or {}).get("estimate_withheld") or f"no threshold reaches {s.target} on the labeled cases"
            n_pos, n_neg = (xfit or {}).get("n_pos", 0), (xfit or {}).get("n_neg", 0)
            t["warning"] = (f"too few cases to fit a threshold: {why}" if (xfit or {}).get("estimate_withheld")
                            or min(n_pos, n_neg) == 0 else why)
            refused = _refused(r, mask & r.labeled, s)
            if refused is not None:
                t["refused"] = refused
                t["warning"] += _refusal_note(refused).replace("labeled calibration cases", "labeled cases")
            return
        t.update(value=float(xfit["threshold"]), kind="fitted",
                 source=f"fitted on all {xfit['n']} scored labeled cases ({s.target}), estimated by "
                        f"{xfit['k']}-fold cross-fitting")
        lab = mask & r.ok
        t["interval"] = threshold_interval(r.label[lab], r.score[lab], s.target, s.n_boot, s.seed)
        return
    if parent is None or parent.get("value") is None:
        t["warning"] = f"no threshold: the {OVERALL!r} set has none to pool toward ({(parent or {}).get('warning')})"
        return
    if xfit is None or xfit["threshold"] is None:
        t.update(value=parent["value"], kind="fallback", fallback_from=OVERALL,
                 source=f"fallback: the {OVERALL!r} threshold (no scored labeled case of its own)", weight=0.0)
        return
    t.update(value=float(xfit["threshold"]), kind="pooled", weight=float(xfit["weight"]),
             source=(f"pooled: its {xfit['n']} scored labeled cases at weight {xfit['weight']:.2f}, the whole "
                     f"set's for the rest (as {xfit['prior']:g} cases)"))


def _crossfit_point(r: Rows, mask: np.ndarray, c: dict[str, int], ci: dict[str, list[float]], how: str) -> dict[str, Any]:
    """An operating point from out-of-fold counts `c` (the scored cases of `mask`), shaped as the test
    split's, with error verdicts counted as wrong as there."""
    err = mask & ~r.ok
    e_pos = int((r.label & err).sum())
    return {"n": int(mask.sum()), "n_scored": int((mask & r.ok).sum()), **rates(**c), "confusion": c,
            "errors_as_wrong": rates(c["tp"], c["fp"] + int(err.sum()) - e_pos, c["fn"] + e_pos, c["tn"]),
            "ci": ci, "estimate": how}


def _crossfit_fits(r: Rows, s: Settings, thresholds_only: bool = False) -> dict[Any, dict[str, Any]]:
    """One verifier's cross-fitted fits: OVERALL -> `crossfit` of its scored labeled cases (folds
    stratified by label and slice, a `meta.group` in one fold), slice code -> `crossfit_pooled` over the
    same folds. `thresholds_only`: the thresholds are all the caller reads (they do not depend on the
    interval method), so the intervals come from the counts alone, without the resampled refits."""
    lab = r.labeled & r.ok
    y, sc, sl = r.label[lab], r.score[lab], r.slice[lab]
    g = r.group[lab] if r.group is not None else None
    whole = crossfit(y, sc, s.target, seed=s.seed, groups=g, strata=sl, alpha=CROSSFIT_ALPHA, n_boot=s.n_boot,
                     method="jeffreys" if thresholds_only else "spread")
    out: dict[Any, dict[str, Any]] = {OVERALL: whole}
    if whole["threshold"] is not None and not whole.get("estimate_withheld"):
        fold = folds(y, whole["k"], s.seed, g, sl)  # crossfit's own folds: same cases, order and seed
        out.update(crossfit_pooled(y, sc, sl, fold, s.target))
    return out


def _crossfit_operating(out: dict[str, Any], r: Rows, mask: np.ndarray, s: Settings, t: dict[str, Any],
                        xfit: dict[str, Any] | None) -> None:
    """A cross-fitted slice's numbers at its threshold `t`: `test` is the out-of-fold estimate (all
    labeled cases of a given threshold, which nothing was fitted on), `calibration_split` the cases it
    was fitted on, in sample."""
    thr = t["value"]
    if t["kind"] == "given":
        out["test"] = {**_operating_point(r, mask, thr, s, with_ci=True),
                       "estimate": f"all {int(mask.sum())} labeled cases (the threshold was given, not fitted)"}
        return
    out["calibration_split"] = {**_operating_point(r, mask, thr, s, with_ci=False), "tuned": True}
    if t["kind"] == "fitted" and xfit is not None:
        out["test"] = _crossfit_point(r, mask, xfit["confusion"], xfit["ci"],
                                      f"cross-fitted: each of {xfit['k']} folds decided by a threshold fitted on "
                                      f"the other {xfit['k'] - 1} ({xfit['n']} scored labeled cases)")
    elif t["kind"] == "pooled" and xfit is not None:
        c = xfit["confusion"]
        ci = counts_posterior(c["tp"], c["fp"], c["fn"], c["tn"], alpha=CROSSFIT_ALPHA, seed=s.seed)
        out["test"] = _crossfit_point(r, mask, c, ci,
                                      f"cross-fitted with pooling: each fold decided by a threshold pooled from the "
                                      f"other folds ({xfit['n']} scored labeled cases; the interval is the counts' "
                                      "alone, without the threshold's own noise)")


def slice_metrics(r: Rows, mask: np.ndarray, s: Settings, verifier: str, key: str,
                  probabilistic: bool = False, parent: dict[str, Any] | None = None,
                  split_from: str = "seeded", xfit: dict[str, Any] | None = None) -> dict[str, Any]:
    """Everything about one verifier on one slice of cases (`mask` over the verifier's rows).

    Args:
        parent: the threshold entry of the slice above (the whole set), used when this slice is too
            small for its own.
        split_from: "field" or "seeded" (see `frame`), for how many more cases a team should label.
        xfit: the slice's cross-fitted fit (see `_threshold`), when `s.estimate` is "crossfit".

    Latency and cost count every case of the slice; everything else, the labeled ones only (the
    unlabeled are counted apart, in `unlabeled`).
    """
    everyone = mask
    mask = mask & r.labeled
    ok = mask & r.ok
    y, sc = r.label[ok], r.score[ok]  # still in decreasing score order
    out: dict[str, Any] = {
        "n": int(mask.sum()), "n_scored": int(ok.sum()), "errors": int((mask & ~r.ok).sum()),
        "positives": int(r.label[mask].sum()), "negatives": int((~r.label[mask]).sum()),
    }
    out["labels"], out["needs"] = _labels_and_needs(r, mask, s, split_from)
    curve = sorted_curve(y, sc)
    out["auroc"], out["auprc"] = curve.auroc(), curve.average_precision()
    if len(y):
        out["ci"] = {k: v.as_list() for k, v in
                     rank_intervals(y, sc, n_boot=s.n_boot, seed=s.seed, presorted=True).items()}
    unlabeled = everyone & ~r.labeled
    if unlabeled.any():
        out["unlabeled"] = {"n": int(unlabeled.sum()), "n_scored": int((unlabeled & r.ok).sum()),
                            "errors": int((unlabeled & ~r.ok).sum())}
    units = r.units[everyone]
    out["latency_ms"] = latency_summary(r.latency[everyone], units if (~np.isnan(units)).any() else None,
                                        r.latency_kind[everyone])
    out["cost_per_1k"] = cost_per_1k(r.cost[everyone])

    cal_mask, test_mask = mask & r.cal, mask & r.test
    threshold_entry = _threshold(r, mask, s, verifier, key, parent, xfit)
    threshold = threshold_entry["value"]
    out["threshold"] = threshold_entry
    out["curve"] = _curve_table(curve, threshold)
    # The report's threshold explorer counts the test split, as the table beside it does.
    test_ok = test_mask & r.ok
    out["test_curve"] = {**_curve_table(sorted_curve(r.label[test_ok], r.score[test_ok]), threshold), "split": "test"}
    if verifier in s.binary:
        # One operating point: the row of the decision (the other row, flag-everything, is no choice).
        for name in ("curve", "test_curve"):
            table = out[name]
            keep = [i for i, t in enumerate(table["threshold"]) if t >= 1.0]
            out[name] = {**table, **{k: [table[k][i] for i in keep] for k in ("threshold", "tp", "fp")}}
    if test_mask.any():
        # What flagging every test case would score: the floor a threshold has to beat.
        n_pos = int(r.label[test_mask].sum())
        out["flag_all"] = {"split": "test", "n": int(test_mask.sum()),
                           **rates(n_pos, int(test_mask.sum()) - n_pos, 0, 0)}
    if threshold is not None and s.estimate == "crossfit":
        _crossfit_operating(out, r, mask, s, threshold_entry, xfit)
    elif threshold is not None:
        out["calibration_split"] = {**_operating_point(r, cal_mask, threshold, s, with_ci=False), "tuned": True}
        out["test"] = _operating_point(r, test_mask, threshold, s, with_ci=True)
    if probabilistic and len(y):
        p = np.clip(sc, 0, 1)
        out["calibration_error"] = {"ece": expected_calibration_error(y, p), "brier": brier(y, p),
                                    "reliability": reliability(y, p)}
    return out


def _resolved(s: Settings, roles: pd.Series, df: pd.DataFrame) -> tuple[Settings, str]:
    """`s` with its estimate resolved for this frame (`estimate_mode`; `roles`: cases per role), and why.
    Cross-fitted, a threshold needs CROSSFIT_MIN_PER_CLASS scored labeled cases of each class in all."""
    n_labeled = int(sum(int(n) for r, n in roles.items() if r != UNLABELED))
    mode, why = estimate_mode(s.estimate, n_labeled, df.attrs.get("split_from", "seeded"))
    per_class = CROSSFIT_MIN_PER_CLASS if mode == "crossfit" else s.min_per_class
    return replace(s, estimate=mode, min_per_class=per_class), why


def _case_roles(df: pd.DataFrame) -> pd.Series:
    """Cases per role (calibration, test, unlabeled), each case counted once."""
    key = df["case_row"] if "case_row" in df else df["case_id"]
    first = ~key.duplicated().to_numpy()
    return pd.Series(np.asarray(df["role"].to_numpy()[first], dtype=object)).value_counts()


def evaluate(df: pd.DataFrame, s: Settings, n_cases: int | None = None) -> dict[str, Any]:
    """Metrics for every verifier in `df` (one row per verifier x case), over all cases and per slice."""
    roles = _case_roles(df)
    s, why = _resolved(s, roles, df)
    mode = s.estimate
    out: dict[str, Any] = {
        "by": s.by, "target": str(s.target), "min_per_class": s.min_per_class, "bootstrap": s.n_boot,
        "estimate": mode, "estimate_why": why,
        "n_cases": n_cases if n_cases is not None else int(roles.sum()),
        "split": {str(r): int(n) for r, n in roles.items() if r != UNLABELED},
        "unlabeled": int(roles.get(UNLABELED, 0)),
        "split_from": df.attrs.get("split_from", "seeded"),
        "test_fraction": s.test_fraction, "seed": s.seed, "gate_min_cases": GATE_MIN_CASES,
        "verifiers": {},
    }
    # Labels such as slices and roles as codes, and `ok` computed once: each verifier's rows are then
    # taken as integers, not strings. Per verifier, each step copies only the columns it reads.
    df = df.copy(deep=False)
    for c in ("slice", "role", *(f"bd:{f}" for f in s.breakdown)):
        if c in df and not isinstance(df[c].dtype, pd.CategoricalDtype):
            df[c] = df[c].astype("category")
    if "ok" not in df:
        df["ok"] = df["error"].isna().to_numpy() & ~np.isnan(df["score"].to_numpy(dtype=float, na_value=np.nan))

    def part(rows, names):
        return df.iloc[rows, [df.columns.get_loc(c) for c in names if c in df]]

    backend = [c for c in ("usage", "flipped", "injected_flip") if c in df]
    codes, names = pd.factorize(df["verifier"])  # in order of first appearance
    for code, vid in enumerate(names):
        rows = np.flatnonzero(codes == code)
        r = Rows.from_frame(df, rows)
        fits: dict[Any, dict[str, Any]] = {}
        if mode == "crossfit":
            r = replace(r, cal=r.labeled)  # every labeled case fits the threshold
            fits = _crossfit_fits(r, s)
        prob = vid in s.probabilistic
        everything = np.ones(len(r.label), bool)
        split_from = out["split_from"]
        overall = slice_metrics(r, everything, s, vid, OVERALL, prob, split_from=split_from, xfit=fits.get(OVERALL))
        entry: dict[str, Any] = {"probabilistic": prob, "binary": vid in s.binary, "overall": overall, "slices": {}}
        for i, key in enumerate(r.slices):
            entry["slices"][key] = slice_metrics(r, r.slice == i, s, vid, key, prob, parent=overall["threshold"],
                                                 split_from=split_from, xfit=fits.get(i))
        if s.breakdown:
            entry["breakdown"] = breakdown(part(rows, ["role", "label", "score", *(f"bd:{f}" for f in s.breakdown)]),
                                           entry["overall"]["threshold"]["value"], s.breakdown)
        if backend:
            entry.update(backend_counts(part(rows, backend)))
        if "repeats" in df:
            entry.update(repeat_counts(part(rows, ["role", "repeats"]), entry["overall"]["threshold"]["value"]))
        missing = out["n_cases"] - len(rows)
        if missing:
            entry["missing_verdicts"] = missing
        out["verifiers"][vid] = entry
        del r  # before the next verifier's rows are taken
    out["operating_points"] = operating_points(out["verifiers"])
    return jsonable(out)


def fitted_thresholds(df: pd.DataFrame, s: Settings) -> dict[str, dict[str, float | None]]:
    """verifier -> slice (and OVERALL) -> the threshold value `evaluate` would give under `s`, without the
    rest of the metrics: what the gate shows a refit on the run would choose."""
    out: dict[str, dict[str, float | None]] = {}
    s, _ = _resolved(s, _case_roles(df), df)
    codes, names = pd.factorize(df["verifier"])
    for code, vid in enumerate(names):
        r = Rows.from_frame(df, np.flatnonzero(codes == code))
        fits: dict[Any, dict[str, Any]] = {}
        if s.estimate == "crossfit":
            r = replace(r, cal=r.labeled)
            fits = _crossfit_fits(r, s, thresholds_only=True)
        overall = _threshold(r, r.labeled, s, vid, OVERALL, None, fits.get(OVERALL))  # labeled, as slice_metrics
        out[str(vid)] = {OVERALL: overall["value"]}
        for i, key in enumerate(r.slices):
            out[str(vid)][key] = _threshold(r, (r.slice == i) & r.labeled, s, vid, key, overall, fits.get(i))["value"]
    return out


def backend_counts(vdf: pd.DataFrame) -> dict[str, Any]:
    """What model-backed verifiers report: summed usage (tokens, requests, retries, failures, repairs,
    cache hits), tokens per case, the share of cases whose repeated samples disagreed, and the share
    whose verdict flipped when an attack was inserted into a source."""
    out: dict[str, Any] = {}
    col = vdf["usage"] if "usage" in vdf else pd.Series(dtype=object)
    usage = [u for u in col[col.notna()].tolist() if isinstance(u, dict)]
    if usage:
        totals: dict[str, float] = {}
        for u in usage:
            for k, v in u.items():
                totals[k] = totals.get(k, 0.0) + float(v)
        out["usage"] = totals
        out["usage_per_case"] = {k: v / len(usage) for k, v in totals.items()}
    for col, name in (("flipped", "sample_flip_rate"), ("injected_flip", "injection_flip_rate")):
        if col in vdf and vdf[col].notna().any():
            vals = vdf[col].dropna().astype(bool)
            out[name] = {"rate": float(vals.mean()), "flipped": int(vals.sum()), "cases": int(len(vals))}
    return out


def repeat_counts(vdf: pd.DataFrame, threshold: float | None) -> dict[str, Any]:
    """For a verifier whose cases were scored several times (a suite entry's `repeats`): over the test
    split, how many cases flip across the fitted `threshold` between repeats, of how many, and the mean
    spread of their repeats (`metrics.repeats.flip_summary`). Nothing for a verifier scored once."""
    has = vdf["repeats"].notna().to_numpy(bool)
    if not has.any():
        return {}
    test = has & (vdf["role"] == "test").to_numpy(bool)
    return {"repeats": {"split": "test", **flip_summary(repeat_matrix(vdf["repeats"].to_numpy()[test]), threshold)}}


def breakdown(vdf: pd.DataFrame, threshold: float | None, fields: list[str]) -> dict[str, Any]:
    """Per value of each field (say meta.error_type): how many test-split cases the verifier flags at its
    fitted threshold. Over hallucinated cases that is the recall for that kind of error; over faithful
    ones, the false-alarm rate. Errors count as not flagged."""
    test = vdf[vdf["role"] == "test"]
    out: dict[str, Any] = {}
    for f in fields:
        rows = {}
        for (value, label), g in test.groupby([f"bd:{f}", "label"], sort=True, observed=True):
            flagged = int((g["score"].notna() & (g["score"] >= threshold)).sum()) if threshold is not None else None
            rows[f"{value}"] = {"label": "hallucinated" if label else "faithful", "n": int(len(g)),
                                "flagged": flagged,
                                "rate": flagged / len(g) if flagged is not None and len(g) else None}
        out[f] = rows
    return out


def operating_points(verifiers: dict[str, Any]) -> list[dict[str, Any]]:
    """F1 on the test split at the fitted threshold, against p95 latency and cost; Pareto front marked."""
    rows = []
    for vid, m in verifiers.items():
        o = m["overall"]
        f1 = (o.get("test") or {}).get("f1")
        rows.append({"verifier": vid, "f1": np.nan if f1 is None else f1,
                     "p95_ms": (o.get("latency_ms") or {}).get("p95", np.nan),
                     "cost_per_1k": o.get("cost_per_1k") or 0.0})
    front = pareto_front([r["f1"] for r in rows], [r["p95_ms"] for r in rows], [r["cost_per_1k"] for r in rows])
    for r, f in zip(rows, front):
        r["pareto"] = f
    return rows


def cue_table(cues: dict[str, dict[str, float]] | pd.DataFrame) -> pd.DataFrame:
    """Surface cues as a table: `id` and one float column per cue (NaN where a case lacks it)."""
    if isinstance(cues, pd.DataFrame):
        return cues
    return pd.DataFrame({"id": pd.Series(list(cues), dtype="str"),
                         **{c: np.array([v.get(c) for v in cues.values()], dtype=float) for c in CUES}})


def shortcuts(cases: list[dict] | pd.DataFrame, cues: dict[str, dict[str, float]] | pd.DataFrame) -> dict[str, Any]:
    """The shortcut test per dataset and doc type, from each case's surface cues (a dict per case id,
    or a cue table: see `cue_table`)."""
    ct = cases if isinstance(cases, pd.DataFrame) else case_table(cases)
    cues = cue_table(cues)
    at = positions(ct["id"], cues["id"]) if len(ct) and len(cues) else np.full(len(ct), -1)
    have = at >= 0
    ds = per_value(ct["dataset"], str)  # str(None) is "None", as the group names always had it
    doc = per_value(ct["doc_type"], str)
    names = pd.Series(ds, dtype=object) + " / " + pd.Series(doc, dtype=object)
    codes, keys = pd.factorize(names[have])
    rows = np.flatnonzero(have)
    label = ct["label"].to_numpy(bool)
    labeled = ct["labeled"].to_numpy(bool) if "labeled" in ct else np.ones(len(ct), bool)
    out = {}
    for code in sorted(range(len(keys)), key=lambda i: keys[i]):
        sel = rows[codes == code]  # in case-index order
        sel = sel[labeled[sel]]
        y = label[sel]
        if min(int(y.sum()), len(y) - int(y.sum())) < SHORTCUT_MIN_PER_CLASS:
            continue  # an AUROC over a dozen cases would warn about noise
        values: dict[str, Any] = {}
        for cue in CUES:
            v = cues[cue].to_numpy(dtype=float)[at[sel]] if cue in cues else np.full(len(sel), np.nan)
            values[cue] = [None] if np.isnan(v).any() else v  # a case without the cue: not reported
        out[str(keys[code])] = shortcut_report(y, values)
    return jsonable(out)


def compute_metrics(cases: list[dict] | pd.DataFrame, verdicts: list | pd.DataFrame | None,
                    settings: Settings | None = None, cues: dict[str, dict[str, float]] | pd.DataFrame | None = None,
                    scored: pd.DataFrame | None = None, **kw) -> dict[str, Any]:
    """Metrics for a run: `evaluate` over the run's cases and verdicts (rows, or the tables of
    `verifybench.tables`), plus the shortcut test when the cases' surface cues are given. A caller
    that already built the frame (`frame` of these cases and verdicts under `settings`) passes it as
    `scored` (and may pass no verdicts), so it is not built twice."""
    s = settings or Settings(**kw)
    f = scored if scored is not None else frame(cases, verdicts, s.by, s.seed, s.test_fraction, s.breakdown)
    out = evaluate(f, s, n_cases=len(cases))
    if cues is not None:
        out["shortcuts"] = shortcuts(cases, cues)
    return out
