"""The HTML report: one self-contained file (no external scripts, styles or fonts) read from a run
directory. Jinja2 autoescaping is on, so dataset text is always rendered as text."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, Undefined, select_autoescape

from verifybench.report.plots import pr_curve_svg
from verifybench.rundir import REPORT

EXAMPLES = 5


def _env() -> Environment:
    env = Environment(loader=PackageLoader("verifybench", "report/templates"),
                      autoescape=select_autoescape(default=True, default_for_string=True))
    env.filters["num"] = lambda x, d=3: "–" if x is None or isinstance(x, Undefined) else f"{x:.{d}f}"
    return env


def _examples(cases: list[dict], verdicts: list, verifier: str, threshold: float | None) -> dict[str, list]:
    """The worst misses: hallucinated cases scored lowest, faithful ones scored highest."""
    by_id = {c["id"]: c for c in cases}
    mine = [(v, by_id[v.case_id]) for v in verdicts if v.verifier == verifier and v.case_id in by_id and v.ok]
    missed = sorted((p for p in mine if p[1]["label"]), key=lambda p: p[0].score)
    alarms = sorted((p for p in mine if not p[1]["label"]), key=lambda p: -p[0].score)
    if threshold is not None:
        missed = [p for p in missed if p[0].score < threshold]
        alarms = [p for p in alarms if p[0].score >= threshold]
    return {"missed": missed[:EXAMPLES], "false_alarms": alarms[:EXAMPLES]}


def render(run_dir: Path, manifest: dict[str, Any], metrics: dict[str, Any], cases: list[dict],
           verdicts: list, errors: list[dict]) -> Path:
    """Write `report.html` into the run directory and return its path."""
    sections = []
    for vid, m in metrics["verifiers"].items():
        o = m["overall"]
        pr = o.get("pr_curve")
        prevalence = o["positives"] / o["n"] if o["n"] else None
        svg = pr_curve_svg(vid, pr["recall"], pr["precision"], prevalence, (o.get("recall"), o.get("precision"))) if pr else ""
        threshold = (o.get("threshold") or {}).get("value")
        sections.append({"id": vid, "m": m, "svg": svg, "examples": _examples(cases, verdicts, vid, threshold)})
    html = _env().get_template("report.html.j2").render(
        manifest=manifest, metrics=metrics, sections=sections,
        input_errors=[e for e in errors if e.get("kind") == "input"],
        verdict_errors=[e for e in errors if e.get("kind") == "verdict"],
    )
    path = Path(run_dir) / REPORT
    path.write_text(html, encoding="utf-8")
    return path
