"""Per verifier and slice: quality at a threshold, ranking quality, latency and errors.

Inputs are the run directory's case index and verdicts as pandas frames; the output is plain JSON-able
dicts, so the report and the CLI only read numbers.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from verifybench.metrics.curves import auprc, auroc, best_fbeta_index, threshold_curve

PR_POINTS = 200  # the report plots at most this many points per curve


def _clean(x: Any) -> Any:
    if isinstance(x, (float, np.floating)):
        return None if math.isnan(x) else round(float(x), 6)
    if isinstance(x, np.integer):
        return int(x)
    return x


def frame(cases: list[dict], verdicts: list) -> pd.DataFrame:
    """One row per (verifier, case): label, doc_type, split, score, error, latency."""
    cdf = pd.DataFrame([{k: c[k] for k in ("id", "dataset", "doc_type", "split", "label")} for c in cases])
    vdf = pd.DataFrame([
        {"case_id": v.case_id, "verifier": v.verifier, "score": v.score, "error": v.error,
         "latency_ms": v.latency_ms, "cost_usd": v.cost_usd}
        for v in verdicts
    ], columns=["case_id", "verifier", "score", "error", "latency_ms", "cost_usd"])
    return vdf.merge(cdf.rename(columns={"id": "case_id"}), on="case_id", how="inner")


def slice_metrics(df: pd.DataFrame, threshold: float | None = None, curve: bool = False) -> dict[str, Any]:
    """Metrics for one verifier over one slice of cases.

    Args:
        df: rows of one verifier (columns label, score, error, latency_ms).
        threshold: apply this threshold; default: the one maximising F1 on these rows (labelled
            `threshold_source: "max-F1 on these cases"`, which flatters: it is tuned on what it reports).
        curve: include precision-recall points for plotting.
    """
    ok = df[df["error"].isna() & df["score"].notna()]
    errors = df[~df.index.isin(ok.index)]
    y, s = ok["label"].to_numpy(bool), ok["score"].to_numpy(float)
    out: dict[str, Any] = {
        "n": int(len(df)), "n_scored": int(len(ok)), "errors": int(len(errors)),
        "positives": int(df["label"].sum()), "negatives": int((~df["label"].astype(bool)).sum()),
        "auroc": auroc(y, s) if len(ok) else None, "auprc": auprc(y, s) if len(ok) else None,
    }
    lat = df["latency_ms"].dropna().to_numpy(float)
    if len(lat):
        out["latency_ms"] = {"p50": np.percentile(lat, 50), "p95": np.percentile(lat, 95),
                             "p99": np.percentile(lat, 99), "mean": lat.mean()}
    if len(ok):
        c = threshold_curve(y, s)
        if threshold is None:
            i = best_fbeta_index(c)
            threshold, source = float(c.thresholds[i]), "max-F1 on these cases"
        else:
            source = "given"
        pred = s >= threshold
        tp, fp = int((pred & y).sum()), int((pred & ~y).sum())
        fn, tn = int((~pred & y).sum()), int((~pred & ~y).sum())
        out["threshold"] = {"value": threshold, "source": source}
        out.update(_at(tp, fp, fn, tn))
        # Errors counted as wrong: a failed case on a hallucinated response is a miss, on a faithful one a
        # false alarm. Nothing here lets a verifier look better by failing.
        e_pos = int(errors["label"].astype(bool).sum())
        e_neg = len(errors) - e_pos
        out["errors_as_wrong"] = _at(tp, fp + e_neg, fn + e_pos, tn)
        if curve:
            keep = np.unique(np.linspace(0, len(c) - 1, min(len(c), PR_POINTS)).astype(int))
            out["pr_curve"] = {"recall": c.recall[keep], "precision": c.precision[keep],
                               "threshold": c.thresholds[keep]}
    return out


def _at(tp: int, fp: int, fn: int, tn: int) -> dict[str, Any]:
    n = tp + fp + fn + tn
    p = tp / (tp + fp) if tp + fp else float("nan")
    r = tp / (tp + fn) if tp + fn else float("nan")
    f1 = 2 * tp / (2 * tp + fp + fn) if tp + fp + fn else float("nan")
    return {"precision": p, "recall": r, "f1": f1, "accuracy": (tp + tn) / n if n else float("nan"),
            "confusion": {"tp": tp, "fp": fp, "fn": fn, "tn": tn}}


def _jsonable(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return [_clean(v) for v in obj.tolist()]
    return _clean(obj)


def compute_metrics(cases: list[dict], verdicts: list, by: str = "doc_type") -> dict[str, Any]:
    """Every verifier over all cases and per slice of `by`.

    Returns `{"verifiers": {id: {"overall": {...}, "slices": {value: {...}}}}, "by": by}`.
    """
    df = frame(cases, verdicts)
    out: dict[str, Any] = {"by": by, "n_cases": len(cases), "verifiers": {}}
    for vid, vdf in df.groupby("verifier", sort=False):
        entry = {"overall": slice_metrics(vdf, curve=True), "slices": {}}
        for key, sdf in vdf.groupby(by, sort=True, dropna=False):
            entry["slices"][str(key)] = slice_metrics(sdf)
        missing = len(cases) - len(vdf)
        if missing:
            entry["missing_verdicts"] = missing
        out["verifiers"][vid] = entry
    return _jsonable(out)
