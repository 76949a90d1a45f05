"""Baselines and the CI gate: did a change make hallucination detection worse, beyond noise?

A baseline (metrics/<suite>.json, committed) records per verifier and slice the threshold, the quality
numbers with their intervals, latency, errors and case counts, plus the per-case scores of the test
split, so a later run can be compared case by case. The gate then:

- refuses (exit 2) to compare a run over other cases (dataset content hash, or the set of case ids and
  labels) or from another suite (its name, dataset block or metrics block), and slices with fewer test
  cases than `min_cases`. A changed verifier configuration is not a refusal: that is what a team
  gates (a new prompt, model or chunker); the summary lists it;
- fails (exit 1) on a verifier x slice x metric whose drop is larger than allowed *and* beyond noise:
  the paired bootstrap interval of the drop (baseline minus current, same cases) lies above zero;
- gates latency and cost only when they are named, as a relative rise;
- passes (exit 0) otherwise.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

import numpy as np

from verifybench.errors import VerifybenchError
from verifybench.metrics.bootstrap import N_BOOT
from verifybench.metrics.curves import sorted_curve
from verifybench.metrics.summary import OVERALL
from verifybench.rundir import read_json

FORMAT = 1
QUALITY = ("f1", "precision", "recall", "auroc", "auprc", "balanced_accuracy")
COSTS = ("p95_ms", "p50_ms", "cost_per_1k")
DEFAULT_DROPS = {"f1": 0.02, "auroc": 0.02}


class GateRefused(VerifybenchError):
    """The comparison itself is invalid (exit code 2)."""


def cases_hash(cases: list[dict]) -> str:
    """sha256 over every case id with its label and split: equal only for the very same cases."""
    h = hashlib.sha256()
    for c in sorted(cases, key=lambda c: c["id"]):
        h.update(f"{c['id']}\t{int(c['label'])}\t{c.get('split')}\n".encode())
    return h.hexdigest()


def suite_scope_hash(raw: dict[str, Any]) -> str:
    """The parts of a suite that define what is measured: its name, dataset block and metrics block.
    Verifier options are left out on purpose: changing them is what a gate is for."""
    scope = {k: raw.get(k) for k in ("name", "dataset", "metrics")}
    return hashlib.sha256(json.dumps(scope, sort_keys=True, default=str).encode()).hexdigest()


def build_baseline(manifest: dict, metrics: dict, frame, cases: list[dict]) -> dict[str, Any]:
    """The baseline document from a finished run's manifest, metrics, verdict frame and case index."""
    verifiers = {}
    for vid, m in metrics["verifiers"].items():
        rows = {}
        for key, sm in [(OVERALL, m["overall"]), *m["slices"].items()]:
            t = sm.get("test") or {}
            rows[key] = {
                "threshold": sm["threshold"]["value"],
                "threshold_source": sm["threshold"]["source"],
                "test_cases": t.get("n", 0),
                **{k: t.get(k) for k in ("precision", "recall", "f1", "balanced_accuracy")},
                "auroc": sm.get("auroc"), "auprc": sm.get("auprc"),
                "ci": {**(t.get("ci") or {}), **(sm.get("ci") or {})},
                "errors": sm.get("errors"), "cases": sm.get("n"),
                "p50_ms": (sm.get("latency_ms") or {}).get("p50"), "p95_ms": (sm.get("latency_ms") or {}).get("p95"),
                "cost_per_1k": sm.get("cost_per_1k"),
            }
        test = frame[(frame["verifier"] == vid) & (frame["role"] == "test")].sort_values("case_id")
        verifiers[vid] = {
            "config_hash": next((v["config_hash"] for v in manifest["verifiers"] if v["id"] == vid), None),
            "config": next((v["config"] for v in manifest["verifiers"] if v["id"] == vid), None),
            "slices": rows,
            # Per-case test-split scores (None = error verdict), for the paired comparison.
            "test_scores": {cid: (None if np.isnan(s) or err is not None else float(s)) for cid, s, err in
                            zip(test["case_id"], test["score"].astype(float), test["error"])},
        }
    tests = frame[frame["role"] == "test"].drop_duplicates("case_id")
    return {
        "format": FORMAT,
        "test_slices": dict(zip(tests["case_id"], tests["slice"].astype(str))),
        "suite": manifest["suite"]["name"],
        "suite_hash": manifest["suite"]["hash"],
        "suite_scope_hash": suite_scope_hash(manifest["suite"]["raw"]),
        "dataset_hash": manifest["dataset"]["hash"],
        "cases_hash": cases_hash(cases),
        "by": metrics["by"],
        "target": metrics["target"],
        "verifiers": verifiers,
    }


@dataclass
class Check:
    verifier: str
    slice: str
    metric: str
    baseline: float | None
    current: float | None
    allowed: float
    drop: float | None = None
    ci: tuple[float, float] | None = None
    status: str = "pass"  # pass | fail | skipped
    message: str = ""

    @property
    def name(self) -> str:
        return f"{self.verifier} / {self.slice} / {self.metric}"


@dataclass
class GateResult:
    checks: list[Check] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    summary: str = ""

    @property
    def failed(self) -> list[Check]:
        return [c for c in self.checks if c.status == "fail"]

    @property
    def exit_code(self) -> int:
        return 1 if self.failed else 0


def parse_limits(items: list[str] | None, defaults: dict[str, float] | None, known: tuple[str, ...]) -> dict[str, float]:
    """`["f1=0.02", "auroc=0.01"]` -> {"f1": 0.02, "auroc": 0.01}, names checked."""
    if not items:
        return dict(defaults or {})
    out = {}
    for item in items:
        name, _, value = item.partition("=")
        name = name.strip().lower()
        if name not in known:
            raise VerifybenchError(f"cannot gate {name!r}; gateable: {', '.join(known)}")
        try:
            out[name] = float(value.rstrip("%")) / (100 if value.endswith("%") else 1)
        except ValueError:
            raise VerifybenchError(f"{item!r}: expected METRIC=NUMBER, e.g. {name}=0.02") from None
    return out


def _metric(y: np.ndarray, s: np.ndarray, threshold: float | None, metric: str, w: np.ndarray | None = None) -> float:
    if metric in ("auroc", "auprc"):
        order = np.argsort(-s, kind="mergesort")
        c = sorted_curve(y[order], s[order], None if w is None else w[order])
        return c.auroc() if metric == "auroc" else c.average_precision()
    if threshold is None:
        return float("nan")
    w = np.ones(len(y)) if w is None else w
    pred = s >= threshold
    tp, fp = (w * (pred & y)).sum(), (w * (pred & ~y)).sum()
    fn, tn = (w * (~pred & y)).sum(), (w * (~pred & ~y)).sum()
    with np.errstate(invalid="ignore", divide="ignore"):
        return {
            "precision": tp / (tp + fp), "recall": tp / (tp + fn), "f1": 2 * tp / (2 * tp + fp + fn),
            "balanced_accuracy": (tp / (tp + fn) + tn / (tn + fp)) / 2,
        }[metric]


def paired_drop(y: np.ndarray, base: np.ndarray, cur: np.ndarray, t_base: float | None, t_cur: float | None,
                metric: str, n_boot: int = N_BOOT, seed: int = 0) -> tuple[float, tuple[float, float]]:
    """Drop (baseline - current) of one metric over the same cases, and its 95% paired, stratified
    bootstrap interval. Error verdicts count as wrong on both sides (score -inf for a hallucinated case,
    +inf for a faithful one)."""
    def fill(s):
        return np.where(np.isnan(s), np.where(y, -np.inf, np.inf), s)

    base, cur = fill(base), fill(cur)
    point = _metric(y, base, t_base, metric) - _metric(y, cur, t_cur, metric)
    rng = np.random.default_rng(seed)
    pos, neg = np.flatnonzero(y), np.flatnonzero(~y)
    drops = np.empty(n_boot)
    for i in range(n_boot):
        w = (np.bincount(rng.choice(pos, len(pos)), minlength=len(y))
             + np.bincount(rng.choice(neg, len(neg)), minlength=len(y))).astype(float)
        drops[i] = _metric(y, base, t_base, metric, w) - _metric(y, cur, t_cur, metric, w)
    drops = drops[~np.isnan(drops)]
    lo, hi = (np.quantile(drops, [0.025, 0.975]) if len(drops) else (np.nan, np.nan))
    return float(point), (float(lo), float(hi))


def run_gate(baseline: dict[str, Any], current: dict[str, Any], labels: dict[str, bool],
             max_drop: dict[str, float], max_rise: dict[str, float], min_cases: int = 30,
             slices: str = "all", n_boot: int = N_BOOT) -> GateResult:
    """Compare a current baseline-shaped document (built from the new run) against the committed one.

    Args:
        baseline: the committed baseline.
        current: `build_baseline` of the run under test.
        labels: case id -> label (True = hallucinated), from the run's case index.
        max_drop: absolute drop allowed per quality metric.
        max_rise: relative rise allowed per latency or cost measure (0.25 = 25%); only these are gated.
        min_cases: a gated slice needs at least this many test cases.
        slices: "all" gates the whole set only; "each" gates every slice too.
    """
    refusals = []
    if baseline.get("format") != FORMAT:
        refusals.append(f"baseline format {baseline.get('format')} is not {FORMAT}; record it again")
    if baseline["suite"] != current["suite"] or baseline["suite_scope_hash"] != current["suite_scope_hash"]:
        refusals.append(f"different suite: baseline from {baseline['suite']!r} "
                        f"(scope {baseline['suite_scope_hash'][:12]}), run from {current['suite']!r} "
                        f"(scope {current['suite_scope_hash'][:12]}); the dataset or metrics block changed")
    if baseline["dataset_hash"] != current["dataset_hash"]:
        # The dataset hash covers the selection (limit, sample) too: name which kind of change it is.
        what = "different cases" if baseline["cases_hash"] != current["cases_hash"] else "different data"
        refusals.append(f"{what}: dataset {baseline['dataset_hash'][:12]} in the baseline, "
                        f"{current['dataset_hash'][:12]} in the run (other files, or another selection of them: "
                        "limit or sample)")
    elif baseline["cases_hash"] != current["cases_hash"]:
        refusals.append("different cases: the same files, but another selection of cases (limit or sample?)")
    if refusals:
        raise GateRefused("refusing to compare: " + "; ".join(refusals))

    result = GateResult()
    for vid, b in baseline["verifiers"].items():
        c = current["verifiers"].get(vid)
        if c is None:
            raise GateRefused(f"refusing to compare: verifier {vid!r} is in the baseline but not in the run")
        if set(b["test_scores"]) != set(c["test_scores"]):
            raise GateRefused(f"refusing to compare: {vid!r} was scored on other test cases than in the baseline")
        if b.get("config_hash") != c.get("config_hash"):
            result.notes.append(f"{vid}: configuration changed since the baseline (this is what is being gated)")
        keys = [OVERALL] + ([k for k in b["slices"] if k != OVERALL] if slices == "each" else [])
        for key in keys:
            bs, cs = b["slices"].get(key), c["slices"].get(key)
            if cs is None:
                raise GateRefused(f"refusing to compare: slice {key!r} of {vid!r} is missing from the run")
            if (bs["test_cases"] or 0) < min_cases:
                raise GateRefused(f"refusing to gate {vid} / {key}: {bs['test_cases']} test cases, fewer than "
                                  f"the minimum {min_cases} (lower --min-cases, or gate the whole set only)")
            ids = sorted(i for i in b["test_scores"] if key == OVERALL or baseline["test_slices"].get(i) == key)
            y = np.array([labels[i] for i in ids], bool)
            base = np.array([np.nan if b["test_scores"][i] is None else b["test_scores"][i] for i in ids])
            cur = np.array([np.nan if c["test_scores"][i] is None else c["test_scores"][i] for i in ids])
            for metric, allowed in max_drop.items():
                check = Check(vid, key, metric, bs.get(metric), cs.get(metric), allowed)
                if metric not in ("auroc", "auprc") and (bs["threshold"] is None or cs["threshold"] is None):
                    check.status, check.message = "skipped", "no threshold on one side"
                else:
                    check.drop, check.ci = paired_drop(y, base, cur, bs["threshold"], cs["threshold"], metric,
                                                       n_boot=n_boot)
                    if check.drop > allowed and check.ci[0] > 0:
                        check.status = "fail"
                        check.message = (f"{metric} dropped by {check.drop:.3f} (allowed {allowed:.3f}); "
                                         f"95% CI of the drop [{check.ci[0]:.3f}, {check.ci[1]:.3f}] excludes 0")
                    elif check.drop > allowed:
                        check.message = (f"drop {check.drop:.3f} is within noise: 95% CI "
                                         f"[{check.ci[0]:.3f}, {check.ci[1]:.3f}] includes 0")
                result.checks.append(check)
            for measure, allowed in max_rise.items():
                before, after = bs.get(measure), cs.get(measure)
                check = Check(vid, key, measure, before, after, allowed)
                if before is None or after is None or before == 0:
                    check.status, check.message = "skipped", "not measured on one side"
                else:
                    rise = after / before - 1
                    check.drop = -rise
                    if rise > allowed:
                        check.status = "fail"
                        check.message = f"{measure} rose by {rise:.0%} ({before:.3g} -> {after:.3g}), allowed {allowed:.0%}"
                result.checks.append(check)
    return result


def junit_xml(result: GateResult, suite: str) -> str:
    """One JUnit test case per verifier x slice x gated metric."""
    root = ET.Element("testsuites")
    ts = ET.SubElement(root, "testsuite", name=f"verifybench-gate.{suite}", tests=str(len(result.checks)),
                       failures=str(len(result.failed)),
                       skipped=str(sum(c.status == "skipped" for c in result.checks)))
    for c in result.checks:
        tc = ET.SubElement(ts, "testcase", classname=f"verifybench.{suite}.{c.verifier}", name=f"{c.slice}.{c.metric}")
        if c.status == "fail":
            ET.SubElement(tc, "failure", message=c.message).text = c.message
        elif c.status == "skipped":
            ET.SubElement(tc, "skipped", message=c.message)
        elif c.message:
            ET.SubElement(tc, "system-out").text = c.message
    return ET.tostring(root, encoding="unicode", xml_declaration=True)


def markdown_summary(result: GateResult, suite: str) -> str:
    verdict = "**FAILED**" if result.failed else "passed"
    lines = [f"### verifybench gate on `{suite}`: {verdict}", "",
             "| verifier | slice | metric | baseline | now | drop | 95% CI of drop | allowed | result |",
             "|---|---|---|---|---|---|---|---|---|"]

    def f(x):
        return "–" if x is None or (isinstance(x, float) and np.isnan(x)) else f"{x:.3f}"
    for c in result.checks:
        ci = f"[{c.ci[0]:.3f}, {c.ci[1]:.3f}]" if c.ci else "–"
        lines.append(f"| {c.verifier} | {c.slice} | {c.metric} | {f(c.baseline)} | {f(c.current)} | {f(c.drop)} | {ci} "
                     f"| {c.allowed:g} | {c.status}{': ' + c.message if c.status == 'fail' else ''} |")
    lines += [""] + [f"- {n}" for n in result.notes]
    return "\n".join(lines) + "\n"


def load_baseline(path: str | Path) -> dict[str, Any]:
    try:
        doc = read_json(Path(path))
    except VerifybenchError:
        raise GateRefused(f"{path}: no such baseline; record one with `verifybench baseline RUN_DIR --out {path}`") from None
    if not isinstance(doc, dict) or "verifiers" not in doc:
        raise GateRefused(f"{path}: not a verifybench baseline")
    return doc
