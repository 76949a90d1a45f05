"""Per verifier and slice: ranking quality with intervals, a threshold fitted on the calibration split
and its operating point on the test split, latency, cost, errors, calibration and shortcut cues.

Inputs are the run directory's case index and verdicts; `evaluate` works on one pandas frame (one row
per verifier x case) so the same code serves a 150-case demo and a million-case benchmark. The output is
plain JSON-able data: the report and the CLI only read numbers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from verifybench.errors import SuiteError
from verifybench.metrics.bootstrap import counts_intervals, rank_intervals
from verifybench.metrics.calibration import brier, expected_calibration_error, reliability
from verifybench.metrics.curves import confusion_at, rates, sorted_curve
from verifybench.metrics.operating import cost_per_1k, latency_kind_codes, latency_summary, pareto_front
from verifybench.metrics.settings import GATE_MIN_CASES, OVERALL, SLICE_FIELDS, Settings
from verifybench.metrics.shortcuts import CUES, shortcut_report
from verifybench.metrics.thresholds import CALIBRATION_NAMES, TEST_NAMES, select_threshold, split_roles

CURVE_POINTS = 400  # per-threshold rows embedded for plots and the report's slider
SHORTCUT_MIN_PER_CLASS = 20  # the shortcut check needs this many cases of each class in a group


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


def check_fields(cases: list[dict], fields: dict[str, str]) -> None:
    """Refuse a slice or breakdown field that no case has (`{"metrics.by": "meta.tier"}`): every case
    would land in one "none" slice, silently. The error lists the fields the cases do have."""
    meta_keys = sorted({k for c in cases for k in (c.get("meta") or {})})
    for key, name in fields.items():
        if name in SLICE_FIELDS or (name.startswith("meta.") and name[5:] in meta_keys):
            continue
        have = ", ".join([*SLICE_FIELDS, *(f"meta.{k}" for k in meta_keys)])
        raise SuiteError(f"{key}: no case has a field {name!r}; the cases have: {have}")


def frame(cases: list[dict], verdicts: list, by: str = "doc_type", seed: int = 0,
          test_fraction: float = 0.5, breakdown: list[str] = ()) -> pd.DataFrame:
    """One row per (verifier, case): label, slice, role (calibration/test), score, error, ok (scored,
    no error), latency and how it was measured, cost, and a `bd:<field>` column per breakdown field.

    `frame.attrs["split_from"]` says whether the roles come from the cases' own split field ("field")
    or from a seeded draw stratified by doc type and label ("seeded")."""
    if cases:
        check_fields(cases, {"metrics.by": by, **{f"metrics.breakdown[{i}]": f for i, f in enumerate(breakdown)}})
    splits = [c.get("split") for c in cases]
    roles = split_roles(splits, seed=seed, test_fraction=test_fraction,
                        labels=[c["label"] for c in cases],
                        groups=[c.get("meta", {}).get("group", f"#{i}") for i, c in enumerate(cases)],
                        strata=[c.get("doc_type") for c in cases])
    from_field = bool(len(roles)) and all(
        r == ("test" if str(v).lower() in TEST_NAMES else "calibration" if str(v).lower() in CALIBRATION_NAMES else "")
        for r, v in zip(roles, splits))
    cdf = pd.DataFrame({
        "case_id": [c["id"] for c in cases],
        "dataset": [c.get("dataset") for c in cases],
        "doc_type": [c.get("doc_type") for c in cases],
        "slice": [_slice_key(c, by) for c in cases],
        "label": np.array([c["label"] for c in cases], dtype=bool),
        "role": roles,
        **{f"bd:{f}": [_slice_key(c, f) for c in cases] for f in breakdown},
    })
    vdf = pd.DataFrame([
        {"case_id": v.case_id, "verifier": v.verifier, "score": v.score, "error": v.error,
         "latency_ms": v.latency_ms, "latency_kind": getattr(v, "latency_kind", None), "cost_usd": v.cost_usd,
         "units": len(v.units) if v.units else None,
         "usage": v.usage, "flipped": v.detail.get("flipped"), "injected_flip": v.detail.get("injected_flip")}
        for v in verdicts
    ], columns=["case_id", "verifier", "score", "error", "latency_ms", "latency_kind", "cost_usd", "units", "usage",
                "flipped", "injected_flip"])
    out = vdf.merge(cdf, on="case_id", how="inner")
    score = out["score"].to_numpy(dtype=float, na_value=np.nan)
    # One meaning of "scored": no error message and a number. (An error column read back by pandas holds
    # NaN, not None, where there is no error: never test it with `is not None`.)
    out["ok"] = out["error"].isna().to_numpy() & ~np.isnan(score)
    out.attrs["split_from"] = "field" if from_field else "seeded"
    return out


def _curve_table(curve, threshold: float | None = None) -> dict[str, Any]:
    """At most CURVE_POINTS rows of the curve, always including the row of `threshold`, so the report's
    slider can stop exactly on the fitted threshold."""
    if not len(curve):
        return {"threshold": [], "tp": [], "fp": [], "n_pos": curve.n_pos, "n_neg": curve.n_neg}
    keep = np.linspace(0, len(curve) - 1, min(len(curve), CURVE_POINTS)).astype(int)
    if threshold is not None and (i := curve.index_of(threshold)) is not None:
        keep = np.r_[keep, i]
    keep = np.unique(keep)
    return {"threshold": curve.thresholds[keep], "tp": curve.tp[keep], "fp": curve.fp[keep],
            "n_pos": curve.n_pos, "n_neg": curve.n_neg}


@dataclass
class Rows:
    """One verifier's verdicts as arrays, sorted by decreasing score (error verdicts last), so that
    every slice's curve is a masked view of one sort."""

    label: np.ndarray
    score: np.ndarray
    ok: np.ndarray
    cal: np.ndarray  # in the calibration split
    test: np.ndarray  # in the test split
    slice: np.ndarray  # integer code into `slices`
    slices: list[str]
    latency: np.ndarray
    latency_kind: np.ndarray  # how each latency was measured (codes of operating.LATENCY_KINDS)
    cost: np.ndarray
    units: np.ndarray

    @classmethod
    def from_frame(cls, df: pd.DataFrame) -> "Rows":
        score = df["score"].to_numpy(dtype=float, na_value=np.nan)
        ok = df["ok"].to_numpy(bool) if "ok" in df else (df["error"].isna() & ~np.isnan(score)).to_numpy()
        order = np.argsort(-np.where(ok, score, -np.inf), kind="mergesort")

        def col(name, dtype=float):
            return df[name].to_numpy(dtype=dtype, na_value=np.nan)[order]

        # Integer codes: comparing a million Python strings per slice would cost more than the metrics.
        codes, names = pd.factorize(df["slice"].astype(str), sort=True)
        role = df["role"].astype(str)
        kind = (latency_kind_codes(df["latency_kind"].to_numpy(dtype=object))[order] if "latency_kind" in df
                else np.zeros(len(df), np.int8))
        return cls(label=df["label"].to_numpy(bool)[order], score=score[order], ok=ok[order],
                   cal=(role == "calibration").to_numpy()[order], test=(role == "test").to_numpy()[order],
                   slice=codes[order], slices=[str(n) for n in names],
                   latency=col("latency_ms"), latency_kind=kind, cost=col("cost_usd"), units=col("units"))


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
    share_cal = 1.0 if split_from == "field" else 1 - s.test_fraction
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


def _threshold(r: Rows, mask: np.ndarray, s: Settings, verifier: str, key: str,
               parent: dict[str, Any] | None) -> dict[str, Any]:
    """The slice's threshold and where it came from: given (a policy or `metrics.fixed`), fitted on the
    slice's calibration split, or, for a slice too small to fit its own, its parent slice's threshold
    (`fallback`, labelled so)."""
    cal_ok = mask & r.cal & r.ok
    given = (s.policy or {}).get(verifier, {})
    t: dict[str, Any] = {"value": None, "kind": None, "source": None, "warning": None, "target": str(s.target),
                         "degenerate": None}
    if key in given or OVERALL in given:
        t.update(value=float(given.get(key, given.get(OVERALL))), kind="given",
                 source=s.policy_source if key in given else f"{s.policy_source} (verifier-wide)")
    elif verifier in s.binary:
        # A 0/1 decision is its own threshold: fitting one could only pick "flag everything".
        t.update(value=1.0, kind="given", source="the verifier's own 0/1 decision (binary)")
    else:
        n_pos, n_neg = int(r.label[cal_ok].sum()), int((~r.label[cal_ok]).sum())
        if min(n_pos, n_neg) < s.min_per_class:
            t["warning"] = (f"too few cases to fit a threshold: the calibration split has {n_pos} hallucinated and "
                            f"{n_neg} faithful scored cases (minimum {s.min_per_class} of each)")
            if parent is not None and parent.get("value") is not None:
                t.update(value=parent["value"], kind="fallback", fallback_from=OVERALL,
                         source=f"fallback: the {OVERALL!r} threshold ({parent['source']})",
                         degenerate=parent.get("degenerate"))
                return t
        else:
            cal_curve = sorted_curve(r.label[cal_ok], r.score[cal_ok])
            i = select_threshold(cal_curve, s.target)
            if i is None:
                t["warning"] = f"no threshold reaches {s.target} on the calibration split"
            else:
                t.update(value=float(cal_curve.thresholds[i]), kind="fitted",
                         source=f"fitted on the calibration split ({s.target})")
    if t["value"] is not None:
        t["degenerate"] = _degenerate(r, mask, t["value"])
    return t


def slice_metrics(r: Rows, mask: np.ndarray, s: Settings, verifier: str, key: str,
                  probabilistic: bool = False, parent: dict[str, Any] | None = None,
                  split_from: str = "seeded") -> dict[str, Any]:
    """Everything about one verifier on one slice of cases (`mask` over the verifier's rows).

    Args:
        parent: the threshold entry of the slice above (the whole set), used when this slice is too
            small for its own.
        split_from: "field" or "seeded" (see `frame`), for how many more cases a team should label.
    """
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
    units = r.units[mask]
    out["latency_ms"] = latency_summary(r.latency[mask], units if (~np.isnan(units)).any() else None,
                                        r.latency_kind[mask])
    out["cost_per_1k"] = cost_per_1k(r.cost[mask])

    cal_mask, test_mask = mask & r.cal, mask & r.test
    threshold_entry = _threshold(r, mask, s, verifier, key, parent)
    threshold = threshold_entry["value"]
    out["threshold"] = threshold_entry
    out["curve"] = _curve_table(curve, threshold)
    if verifier in s.binary:
        # One operating point: the row of the decision (the other row, flag-everything, is no choice).
        table = out["curve"]
        keep = [i for i, t in enumerate(table["threshold"]) if t >= 1.0]
        out["curve"] = {**table, **{k: [table[k][i] for i in keep] for k in ("threshold", "tp", "fp")}}
    if test_mask.any():
        # What flagging every test case would score: the floor a threshold has to beat.
        n_pos = int(r.label[test_mask].sum())
        out["flag_all"] = {"split": "test", "n": int(test_mask.sum()),
                           **rates(n_pos, int(test_mask.sum()) - n_pos, 0, 0)}
    if threshold is not None:
        out["calibration_split"] = {**_operating_point(r, cal_mask, threshold, s, with_ci=False), "tuned": True}
        out["test"] = _operating_point(r, test_mask, threshold, s, with_ci=True)
    if probabilistic and len(y):
        p = np.clip(sc, 0, 1)
        out["calibration_error"] = {"ece": expected_calibration_error(y, p), "brier": brier(y, p),
                                    "reliability": reliability(y, p)}
    return out


def evaluate(df: pd.DataFrame, s: Settings, n_cases: int | None = None) -> dict[str, Any]:
    """Metrics for every verifier in `df` (one row per verifier x case), over all cases and per slice."""
    roles = df.drop_duplicates("case_id")["role"].value_counts()
    out: dict[str, Any] = {
        "by": s.by, "target": str(s.target), "min_per_class": s.min_per_class, "bootstrap": s.n_boot,
        "n_cases": n_cases if n_cases is not None else int(df["case_id"].nunique()),
        "split": {str(r): int(n) for r, n in roles.items()},
        "split_from": df.attrs.get("split_from", "seeded"),
        "test_fraction": s.test_fraction, "seed": s.seed, "gate_min_cases": GATE_MIN_CASES,
        "verifiers": {},
    }
    for vid, vdf in df.groupby("verifier", sort=False):
        r = Rows.from_frame(vdf)
        prob = vid in s.probabilistic
        everything = np.ones(len(r.label), bool)
        split_from = out["split_from"]
        overall = slice_metrics(r, everything, s, vid, OVERALL, prob, split_from=split_from)
        entry = {"probabilistic": prob, "binary": vid in s.binary, "overall": overall, "slices": {}}
        for code, key in enumerate(r.slices):
            entry["slices"][key] = slice_metrics(r, r.slice == code, s, vid, key, prob, parent=overall["threshold"],
                                                 split_from=split_from)
        if s.breakdown:
            entry["breakdown"] = breakdown(vdf, entry["overall"]["threshold"]["value"], s.breakdown)
        entry.update(backend_counts(vdf))
        missing = out["n_cases"] - len(vdf)
        if missing:
            entry["missing_verdicts"] = missing
        out["verifiers"][vid] = entry
    out["operating_points"] = operating_points(out["verifiers"])
    return jsonable(out)


def backend_counts(vdf: pd.DataFrame) -> dict[str, Any]:
    """What model-backed verifiers report: summed usage (tokens, requests, retries, failures, repairs,
    cache hits), tokens per case, the share of cases whose repeated samples disagreed, and the share
    whose verdict flipped when an attack was inserted into a source."""
    out: dict[str, Any] = {}
    usage = [u for u in vdf.get("usage", pd.Series(dtype=object)).tolist() if isinstance(u, dict)]
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


def breakdown(vdf: pd.DataFrame, threshold: float | None, fields: list[str]) -> dict[str, Any]:
    """Per value of each field (say meta.error_type): how many test-split cases the verifier flags at its
    fitted threshold. Over hallucinated cases that is the recall for that kind of error; over faithful
    ones, the false-alarm rate. Errors count as not flagged."""
    test = vdf[vdf["role"] == "test"]
    out: dict[str, Any] = {}
    for f in fields:
        rows = {}
        for (value, label), g in test.groupby([f"bd:{f}", "label"], sort=True):
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


def shortcuts(cases: list[dict], cues: dict[str, dict[str, float]]) -> dict[str, Any]:
    """The shortcut check per dataset and doc type, from each case's surface cues."""
    groups: dict[str, list[dict]] = {}
    for c in cases:
        if c["id"] in cues:
            groups.setdefault(f"{c.get('dataset')} / {c.get('doc_type')}", []).append(c)
    out = {}
    for key, cs in sorted(groups.items()):
        y = [c["label"] for c in cs]
        if min(sum(y), len(y) - sum(y)) < SHORTCUT_MIN_PER_CLASS:
            continue  # an AUROC over a dozen cases would warn about noise
        out[key] = shortcut_report(y, {cue: [cues[c["id"]].get(cue) for c in cs] for cue in CUES})
    return jsonable(out)


def compute_metrics(cases: list[dict], verdicts: list, settings: Settings | None = None,
                    cues: dict[str, dict[str, float]] | None = None, **kw) -> dict[str, Any]:
    """Metrics for a run: `evaluate` over the run's cases and verdicts, plus the shortcut check when
    the cases' surface cues are given."""
    s = settings or Settings(**kw)
    out = evaluate(frame(cases, verdicts, s.by, s.seed, s.test_fraction, s.breakdown), s, n_cases=len(cases))
    if cues is not None:
        out["shortcuts"] = shortcuts(cases, cues)
    return out
