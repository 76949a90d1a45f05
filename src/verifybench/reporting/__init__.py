"""The HTML report: one self-contained file (no external scripts, styles, fonts or images) read from a
run directory. Jinja2 autoescaping is on, so dataset text always renders as text; the one inline script
reads its numbers from a JSON block that `tojson` has escaped."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from jinja2 import Environment, PackageLoader, Undefined, select_autoescape

from verifybench._util.safeio import write_text_atomic
from verifybench.metrics.summary import OVERALL
from verifybench.reporting.findings import findings
from verifybench.reporting.plots import curves_svg, operating_svg, reliability_svg
from verifybench.rundir import REPORT

EXAMPLES = 8


def _num(x: Any, d: int = 3) -> str:
    return "–" if x is None or isinstance(x, Undefined) else f"{x:.{d}f}"


def _ci(ci: Any, d: int = 3) -> str:
    if not ci or isinstance(ci, Undefined) or None in ci:
        return ""
    return f"[{ci[0]:.{d}f}, {ci[1]:.{d}f}]"


def _env() -> Environment:
    env = Environment(loader=PackageLoader("verifybench", "reporting/templates"),
                      autoescape=select_autoescape(default=True, default_for_string=True))
    env.filters["num"] = _num
    env.filters["ci"] = _ci
    return env


def case_kinds(threshold: float | None) -> tuple[str, str]:
    """What the per-case view calls its hallucinated and its faithful cases: a miss or a false alarm
    exists only at a threshold; without one they are only the extremes of each class by score."""
    if threshold is None:
        return "lowest-scored hallucinated", "highest-scored faithful"
    return "missed hallucination", "false alarm"


def worst_cases(cases: list[dict], verdicts: list, verifier: str, threshold: float | None) -> list[dict]:
    """Missed hallucinations first (lowest-scored hallucinated cases), then false alarms (highest-scored
    faithful cases); with no threshold, the extremes of each class, named so (`case_kinds`)."""
    by_id = {c["id"]: c for c in cases}
    mine = [(v, by_id[v.case_id]) for v in verdicts if v.verifier == verifier and v.case_id in by_id and v.ok]
    missed = sorted((p for p in mine if p[1]["label"]), key=lambda p: p[0].score)
    alarms = sorted((p for p in mine if not p[1]["label"]), key=lambda p: -p[0].score)
    if threshold is not None:
        missed = [p for p in missed if p[0].score < threshold]
        alarms = [p for p in alarms if p[0].score >= threshold]
    low, high = case_kinds(threshold)
    return ([{"kind": low, "verdict": v, "case": c} for v, c in missed[:EXAMPLES]]
            + [{"kind": high, "verdict": v, "case": c} for v, c in alarms[:EXAMPLES]])


def worst_rows(frame: pd.DataFrame, verifier: str, threshold: float | None) -> list[tuple[str, int]]:
    """`worst_cases` over a metrics frame (`metrics.frame`): (kind, row of the frame) of the cases the
    per-case view shows, chosen without a Python object per case. The caller reads those verdicts and
    case rows back whole (`rundir.read_verdicts_at`, `read_cases_at`)."""
    mine = np.flatnonzero((frame["verifier"] == verifier).to_numpy(bool) & frame["ok"].to_numpy(bool))
    score = frame["score"].to_numpy(float)[mine]
    label = frame["label"].to_numpy(bool)[mine]
    missed = label if threshold is None else label & (score < threshold)
    alarms = ~label if threshold is None else ~label & (score >= threshold)
    # Stable sorts over the frame's (the file's) order, as `sorted` orders the verdicts in `worst_cases`.
    low = mine[missed][np.argsort(score[missed], kind="stable")][:EXAMPLES]
    high = mine[alarms][np.argsort(-score[alarms], kind="stable")][:EXAMPLES]
    names = case_kinds(threshold)
    return [(names[0], int(i)) for i in low] + [(names[1], int(i)) for i in high]


def _get(obj: Any, name: str) -> Any:
    """A field of a verdict or unit, whether it is a model or a dict (as read back from results.jsonl)."""
    return obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)


def highlight(response: str, gold: list | None, units: list | None, unit_threshold: float | None) -> dict[str, Any]:
    """The response cut into segments, each marked when it lies in a gold span and with the numbers of the
    flagged units covering it (a unit is flagged when its score >= the unit threshold), plus the units
    numbered from 1 in the verdict's order. Offsets past the (clipped) response are cut to its end."""
    n = len(response)
    gold = [(max(0, min(int(a), n)), max(0, min(int(b), n))) for a, b in (gold or [])]
    listed, flagged = [], []
    for i, u in enumerate(units or [], 1):
        start, end, score = _get(u, "start"), _get(u, "end"), _get(u, "score")
        located = isinstance(start, int) and isinstance(end, int) and end > start
        flag = bool(located and unit_threshold is not None and score is not None and score >= unit_threshold)
        detail = _get(u, "detail") or {}
        similarity = detail.get("cosine") if isinstance(detail, dict) else None
        listed.append({"n": i, "text": _get(u, "text"), "score": score, "status": _get(u, "status"),
                       "evidence": _get(u, "evidence"), "located": located, "flagged": flag,
                       "similarity": similarity if isinstance(similarity, (int, float)) else None})
        if flag:
            flagged.append((i, min(start, n), min(end, n), score))
    cuts = sorted({0, n, *(x for g in gold for x in g), *(x for _, a, b, _ in flagged for x in (a, b))})
    segments = []
    for a, b in zip(cuts, cuts[1:]):
        if a == b:
            continue
        covering = [(i, sc) for i, ua, ub, sc in flagged if ua <= a and b <= ub]
        segments.append({"text": response[a:b], "gold": any(ga <= a and b <= gb for ga, gb in gold),
                         "units": [i for i, _ in covering],
                         "title": "; ".join(f"unit {i}: score {sc:.3f}" for i, sc in covering),
                         "ends": [i for i, ua, ub, _ in flagged if ub == b]})
    return {"segments": segments, "units": listed}


def comparison(metrics: dict[str, Any]) -> list[dict[str, Any]]:
    """Every verifier side by side, slice by slice (the slices in the order the run met them): what a team
    reads to choose a check, and its threshold, for each kind of document. `best`: the highest AUROC of
    the slice (ties all marked)."""
    verifiers = list(metrics["verifiers"].items())
    keys = list(dict.fromkeys(k for _, m in verifiers for k in m["slices"]))
    out = []
    for key in [OVERALL, *keys]:
        rows = [{"verifier": vid, "anchor": f"v-{n}", "m": m["overall"] if key == OVERALL else m["slices"][key]}
                for n, (vid, m) in enumerate(verifiers) if key == OVERALL or key in m["slices"]]
        top = max((r["m"].get("auroc") for r in rows if r["m"].get("auroc") is not None), default=None)
        for r in rows:
            r["best"] = top is not None and r["m"].get("auroc") == top
        out.append({"slice": key, "rows": rows})
    return out


def caught(metrics: dict[str, Any]) -> dict[str, Any]:
    """Per breakdown field, every verifier's flagged share of each value (test split, at its threshold),
    side by side: {field: {"verifiers": [...], "values": [(value, label, {verifier: row})]}}."""
    out: dict[str, Any] = {}
    for vid, m in metrics["verifiers"].items():
        for field, rows in (m.get("breakdown") or {}).items():
            t = out.setdefault(field, {"verifiers": [], "values": {}})
            t["verifiers"].append(vid)
            for value, r in rows.items():
                t["values"].setdefault(value, {"label": r.get("label"), "by": {}})["by"][vid] = r
    return {f: {"verifiers": t["verifiers"], "values": [(k, v["label"], v["by"]) for k, v in t["values"].items()]}
            for f, t in out.items()}


def render(run_dir: Path, manifest: dict[str, Any], metrics: dict[str, Any], worst: dict[str, list[dict]],
           errors: list[dict], notes: Sequence[str] = ()) -> Path:
    """Write `report.html` into the run directory and return its path.

    Args:
        worst: per verifier, the cases of the per-case view (from `worst_cases`, sources attached).
        notes: warnings about the run shown at the top (e.g. the dataset could not be read back).
    """
    sections, sliders = [], {}
    for n, (vid, m) in enumerate(metrics["verifiers"].items()):
        o = m["overall"]
        threshold = o["threshold"]["value"]
        plots = []
        if o.get("curve") and len(o["curve"]["threshold"]):
            plots.append(curves_svg(o["curve"], threshold, o.get("auroc"), o.get("auprc")))
        if o.get("calibration_error"):
            ce = o["calibration_error"]
            plots.append(reliability_svg(ce["reliability"], ce["ece"], ce["brier"]))
        keys: list[dict[str, Any]] = []
        for key, sm in [(OVERALL, o), *m["slices"].items()]:
            # The test split's curve: the slider counts the cases the table beside it counts.
            curve = sm.get("test_curve") or sm.get("curve")
            if curve and len(curve["threshold"]):
                slider_id = f"s{n}-{len(keys)}"
                sliders[slider_id] = {**curve, "fitted": sm["threshold"]["value"],
                                      "fitted_kind": sm["threshold"].get("kind")}
                keys.append({"id": slider_id, "slice": key, "split": curve.get("split", "all scored cases"),
                             "cases": int(curve["n_pos"]) + int(curve["n_neg"])})
        unit_threshold = ((m.get("spans") or {}).get("unit_threshold") or {}).get("value")
        cases = [{**item, "marked": highlight(item["case"].get("response") or "", item["case"].get("spans"),
                                              _get(item["verdict"], "units"), unit_threshold)}
                 for item in worst.get(vid, [])]
        sections.append({"id": vid, "anchor": f"v-{n}", "m": m, "plots": plots, "sliders": keys,
                         "cases": cases, "unit_threshold": unit_threshold})
    # The operating-points plot only when some verifier has a test F1 (a threshold); an empty frame says nothing.
    points = metrics.get("operating_points") or []
    drawable = any(p.get("f1") is not None and p.get("p95_ms") is not None for p in points)
    html = _env().get_template("report.html.j2").render(
        manifest=manifest, metrics=metrics, sections=sections, sliders=sliders, notes=list(notes), found=findings(metrics),
        no_threshold=bool(sections) and all(s["m"]["overall"]["threshold"]["value"] is None for s in sections),
        operating=operating_svg(points) if drawable else None,
        comparison=comparison(metrics) if len(metrics["verifiers"]) > 1 else [], caught=caught(metrics),
        shortcut_warnings=[(k, w) for k, r in (metrics.get("shortcuts") or {}).items() for w in r["warnings"]],
        input_errors=[e for e in errors if e.get("kind") == "input"],
        verdict_errors=[e for e in errors if e.get("kind") == "verdict"],
    )
    path = Path(run_dir) / REPORT
    write_text_atomic(path, html)  # by rename: a reader sees a whole report, and a planted link is replaced, not followed
    return path
