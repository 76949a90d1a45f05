"""Per verifier and slice: ranking quality with intervals, a threshold fitted on the calibration split
and its operating point on the test split, latency, cost, errors, calibration and shortcut cues.

Inputs are the run directory's case index and verdicts; `evaluate` works on one pandas frame (one row
per verifier x case) so the same code serves a 150-case demo and a million-case benchmark. The output is
plain JSON-able data: the report and the CLI only read numbers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from verifybench.errors import SuiteError
from verifybench.metrics.bootstrap import N_BOOT, counts_intervals, rank_intervals
from verifybench.metrics.calibration import brier, expected_calibration_error, reliability
from verifybench.metrics.curves import rates, sorted_curve
from verifybench.metrics.operating import cost_per_1k, latency_summary, pareto_front
from verifybench.metrics.shortcuts import CUES, shortcut_report
from verifybench.metrics.thresholds import Target, parse_target, select_threshold, split_roles

CURVE_POINTS = 400
SHORTCUT_MIN_PER_CLASS = 20  # the shortcut check needs this many cases of each class in a group  # per-threshold rows embedded for plots and the report's slider
OVERALL = "all"


@dataclass
class Settings:
    """How metrics are computed; the suite's `metrics:` block fills these."""

    by: str = "doc_type"
    target: Target = field(default_factory=lambda: Target("fbeta", 1.0))
    min_per_class: int = 30
    n_boot: int = N_BOOT
    seed: int = 0
    test_fraction: float = 0.5
    policy: dict[str, dict[str, float]] | None = None  # verifier -> slice -> threshold
    policy_source: str = "policy"  # what the report says a given threshold came from
    probabilistic: set[str] = field(default_factory=set)  # verifiers whose score is a probability
    binary: set[str] = field(default_factory=set)  # verifiers whose score is a 0/1 decision
    breakdown: list[str] = field(default_factory=list)  # fields (e.g. meta.error_type) to break recall down by

    @classmethod
    def from_suite(cls, block: dict[str, Any] | None, **overrides) -> "Settings":
        block = dict(block or {})
        thresholds = block.pop("thresholds", {}) or {}
        s = cls(
            by=thresholds.get("by", block.get("by", "doc_type")),
            target=parse_target(thresholds.get("target", block.get("target"))),
            min_per_class=int(thresholds.get("min_per_class", block.get("min_per_class", 30))),
            n_boot=int(block.get("bootstrap", N_BOOT)),
            seed=int(block.get("seed", 0)),
            test_fraction=float(block.get("test_fraction", 0.5)),
            breakdown=list(block.get("breakdown") or []),
        )
        # `fixed: {verifier: threshold | {slice: threshold}}`: thresholds that mean something by
        # themselves (a verifier's own binary decision), stated in the suite instead of fitted.
        fixed = block.get("fixed") or {}
        if not isinstance(fixed, dict):
            raise SuiteError("metrics.fixed must map verifier ids to a threshold or to {slice: threshold}")
        if fixed:
            s.policy = {str(v): (dict(t) if isinstance(t, dict) else {OVERALL: float(t)}) for v, t in fixed.items()}
            s.policy_source = "suite (metrics.fixed)"
        if overrides.get("policy") is not None:
            s.policy_source = "policy"
        for k, v in overrides.items():
            if v is not None:
                setattr(s, k, v)
        return s


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


def frame(cases: list[dict], verdicts: list, by: str = "doc_type", seed: int = 0,
          test_fraction: float = 0.5, breakdown: list[str] = ()) -> pd.DataFrame:
    """One row per (verifier, case): label, slice, role (calibration/test), score, error, latency, cost,
    and a `bd:<field>` column per breakdown field."""
    roles = split_roles([c.get("split") for c in cases], seed=seed, test_fraction=test_fraction,
                        labels=[c["label"] for c in cases],
                        groups=[c.get("meta", {}).get("group", f"#{i}") for i, c in enumerate(cases)])
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
         "latency_ms": v.latency_ms, "cost_usd": v.cost_usd, "units": len(v.units) if v.units else None,
         "usage": v.usage, "flipped": v.detail.get("flipped"), "injected_flip": v.detail.get("injected_flip")}
        for v in verdicts
    ], columns=["case_id", "verifier", "score", "error", "latency_ms", "cost_usd", "units", "usage", "flipped",
                "injected_flip"])
    return vdf.merge(cdf, on="case_id", how="inner")


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
    cost: np.ndarray
    units: np.ndarray

    @classmethod
    def from_frame(cls, df: pd.DataFrame) -> "Rows":
        score = df["score"].to_numpy(dtype=float, na_value=np.nan)
        ok = (df["error"].isna() & ~np.isnan(score)).to_numpy()
        order = np.argsort(-np.where(ok, score, -np.inf), kind="mergesort")

        def col(name, dtype=float):
            return df[name].to_numpy(dtype=dtype, na_value=np.nan)[order]

        # Integer codes: comparing a million Python strings per slice would cost more than the metrics.
        codes, names = pd.factorize(df["slice"].astype(str), sort=True)
        role = df["role"].astype(str)
        return cls(label=df["label"].to_numpy(bool)[order], score=score[order], ok=ok[order],
                   cal=(role == "calibration").to_numpy()[order], test=(role == "test").to_numpy()[order],
                   slice=codes[order], slices=[str(n) for n in names],
                   latency=col("latency_ms"), cost=col("cost_usd"), units=col("units"))


def _operating_point(r: Rows, mask: np.ndarray, threshold: float, s: Settings, with_ci: bool) -> dict[str, Any]:
    ok = mask & r.ok
    y, pred = r.label[ok], r.score[ok] >= threshold
    c = {"tp": int((pred & y).sum()), "fp": int((pred & ~y).sum()), "fn": int((~pred & y).sum()),
         "tn": int((~pred & ~y).sum())}
    out = {"n": int(mask.sum()), "n_scored": int(ok.sum()), **rates(**c), "confusion": c}
    err = mask & ~r.ok
    e_pos = int((r.label & err).sum())
    # Errors counted as wrong: a failed case on a hallucinated response is a miss, on a faithful one a
    # false alarm, so a verifier cannot look better by failing.
    out["errors_as_wrong"] = rates(c["tp"], c["fp"] + int(err.sum()) - e_pos, c["fn"] + e_pos, c["tn"])
    if with_ci and ok.any():
        out["ci"] = {k: v.as_list() for k, v in counts_intervals(**c, n_boot=s.n_boot, seed=s.seed).items()}
    return out


def slice_metrics(r: Rows, mask: np.ndarray, s: Settings, verifier: str, key: str,
                  probabilistic: bool = False) -> dict[str, Any]:
    """Everything about one verifier on one slice of cases (`mask` over the verifier's rows)."""
    ok = mask & r.ok
    y, sc = r.label[ok], r.score[ok]  # still in decreasing score order
    out: dict[str, Any] = {
        "n": int(mask.sum()), "n_scored": int(ok.sum()), "errors": int((mask & ~r.ok).sum()),
        "positives": int(r.label[mask].sum()), "negatives": int((~r.label[mask]).sum()),
    }
    curve = sorted_curve(y, sc)
    out["auroc"], out["auprc"] = curve.auroc(), curve.average_precision()
    if len(y):
        out["ci"] = {k: v.as_list() for k, v in
                     rank_intervals(y, sc, n_boot=s.n_boot, seed=s.seed, presorted=True).items()}
    units = r.units[mask]
    out["latency_ms"] = latency_summary(r.latency[mask][~np.isnan(r.latency[mask])],
                                        units if (~np.isnan(units)).any() else None)
    out["cost_per_1k"] = cost_per_1k(r.cost[mask])

    cal_mask, test_mask = mask & r.cal, mask & r.test
    cal_ok = cal_mask & r.ok
    given = (s.policy or {}).get(verifier, {})
    threshold, source, warning = None, None, None
    if key in given or OVERALL in given:
        threshold = given.get(key, given.get(OVERALL))
        source = s.policy_source if key in given else f"{s.policy_source} (verifier-wide)"
    elif verifier in s.binary:
        # A 0/1 decision is its own threshold: fitting one could only pick "flag everything".
        threshold, source = 1.0, "the verifier's own 0/1 decision (binary)"
    else:
        n_pos, n_neg = int(r.label[cal_ok].sum()), int((~r.label[cal_ok]).sum())
        if min(n_pos, n_neg) < s.min_per_class:
            warning = (f"too few cases to fit a threshold: the calibration split has {n_pos} hallucinated and "
                       f"{n_neg} faithful scored cases (minimum {s.min_per_class} of each)")
        else:
            cal_curve = sorted_curve(r.label[cal_ok], r.score[cal_ok])
            i = select_threshold(cal_curve, s.target)
            if i is None:
                warning = f"no threshold reaches {s.target} on the calibration split"
            else:
                threshold, source = float(cal_curve.thresholds[i]), f"fitted on the calibration split ({s.target})"
    out["threshold"] = {"value": threshold, "source": source, "warning": warning, "target": str(s.target)}
    out["curve"] = _curve_table(curve, threshold)
    if verifier in s.binary:
        # One operating point: the row of the decision (the other row, flag-everything, is no choice).
        table = out["curve"]
        keep = [i for i, t in enumerate(table["threshold"]) if t >= 1.0]
        out["curve"] = {**table, **{k: [table[k][i] for i in keep] for k in ("threshold", "tp", "fp")}}
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
        "verifiers": {},
    }
    for vid, vdf in df.groupby("verifier", sort=False):
        r = Rows.from_frame(vdf)
        prob = vid in s.probabilistic
        everything = np.ones(len(r.label), bool)
        entry = {"probabilistic": prob, "binary": vid in s.binary,
                 "overall": slice_metrics(r, everything, s, vid, OVERALL, prob), "slices": {}}
        for code, key in enumerate(r.slices):
            entry["slices"][key] = slice_metrics(r, r.slice == code, s, vid, key, prob)
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
