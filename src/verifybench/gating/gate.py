"""Baselines and the CI gate: did a change make hallucination detection worse, beyond noise?

A baseline (metrics/<suite>.json, committed) records per verifier and slice the threshold (and whether
it was fitted, fell back to the whole set's, or was given), the quality numbers on the test split,
latency (and whether it is per case or a batch average), errors and case counts, the suite's bootstrap
settings, plus the per-case scores of the test split, so a later run can be compared case by case.

The gate holds the baseline's thresholds (what a deployed policy does: it does not refit on the new
run) and shows beside each threshold metric what a refit on the new run would give. It then:

- refuses (exit 2) to compare a run over other cases (dataset content hash, or the set of case ids,
  labels and splits), from another suite (its name, dataset block or metrics block), an unfinished run
  or one with a verifier missing verdicts or holding duplicates, and slices with fewer test cases than
  `min_cases`. A changed verifier configuration is not a refusal: that is what a team gates (a new
  prompt, model or chunker); the summary lists it;
- does not gate a threshold metric whose baseline threshold is degenerate (it flags every calibration
  case, or none: its F1 only restates the class balance), nor a latency that is a batch average
  (unless asked with `allow_batch_latency`); such a check is "refused", and the gate exits 2 when the
  metric was asked for by name;
- fails (exit 1) on a verifier x slice x metric whose drop is larger than allowed *and* beyond noise:
  the paired bootstrap interval of the drop (baseline minus current, the same test-split cases, error
  verdicts counted as wrong on both sides) lies above zero. For a verifier scored with `repeats`, the
  drop must also exceed its flicker: how far the metric moves between repeats of one run (the metric on
  each repeat's scores alone, max - min, recorded per slice in the baseline as `flicker`; the larger
  of the baseline's and the run's). A drop inside that band is the check's own noise, not a regression;
- gates latency and cost only when they are named, as a relative rise;
- passes (exit 0) otherwise.

Every number a check shows (baseline, now, drop, interval) comes from one paired computation over the
same cases, so baseline - now is the drop.
"""

from __future__ import annotations

import hashlib
import json
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

import numpy as np
import pandas as pd

from verifybench._util.identity import same_content
from verifybench._util.phases import phase
from verifybench._util.safeio import safe_name, write_text_atomic
from verifybench.errors import VerifybenchError
from verifybench.evaluation.policy import load_policy, null_reasons
from verifybench.evaluation.run_dir import RunDir
from verifybench.formats import Baseline, FormatError
from verifybench.formats.base import StaleFormat
from verifybench.formats.baseline import BaselineSlice
from verifybench.metrics import compute_metrics, evaluate
from verifybench.metrics.bootstrap import (
    ALPHA,
    PAIRED_METRICS,
    RANK_METRICS,
    errors_as_wrong,
    paired_bootstrap,
    weighted_metrics,
)
from verifybench.metrics.repeats import flicker, repeat_matrix
from verifybench.metrics.settings import GATE_MIN_CASES, OVERALL, Settings
from verifybench.metrics.summary import fitted_thresholds
from verifybench.metrics.thresholds import per_value
from verifybench.rundir.requirements import require_complete

QUALITY = ("f1", "precision", "recall", "balanced_accuracy", "auroc", "auprc")
LATENCY = ("p50_ms", "p95_ms", "p99_ms")
COSTS = (*LATENCY, "cost_per_1k")
DEFAULT_DROPS = {"f1": 0.02, "auroc": 0.02}
assert set(QUALITY) == set(PAIRED_METRICS)


class GateRefused(VerifybenchError):
    """The comparison itself is invalid (exit code 2)."""


def cases_hash(cases: list[dict] | pd.DataFrame) -> str:
    """sha256 over every case id with its label and split: equal only for the very same cases. `cases`:
    case-index rows, or the case table (`verifybench.tables`), hashed as columns to the same digest."""
    h = hashlib.sha256()
    if not isinstance(cases, pd.DataFrame):
        for c in sorted(cases, key=lambda c: c["id"]):
            h.update(f"{c['id']}\t{int(c['label'])}\t{c.get('split')}\n".encode())
        return h.hexdigest()
    import pyarrow as pa
    import pyarrow.compute as pc

    ids = pa.array(cases["id"], pa.string())
    label = pa.array(np.where(cases["label"].to_numpy(bool), "1", "0"), pa.string())
    split = pa.array(per_value(cases["split"], str), pa.string())  # str(None) is "None", as above
    lines = pc.binary_join_element_wise(ids, label, split, "\t")
    lines = pc.binary_join_element_wise(lines, "", "\n").take(pc.sort_indices(ids))  # by id, as `sorted` orders them
    for chunk in (lines.chunks if isinstance(lines, pa.ChunkedArray) else [lines]):
        if len(chunk):  # the lines' bytes lie back to back in the array's data buffer
            _, offsets, data = chunk.buffers()
            ends = np.frombuffer(offsets, np.int32 if chunk.type == pa.string() else np.int64)
            h.update(memoryview(data)[ends[chunk.offset]:ends[chunk.offset + len(chunk)]])
    return h.hexdigest()


class Labels:
    """case id -> label (True: hallucinated) over the case table, looked up a list at a time by Arrow
    rather than through a dict of a million ids."""

    def __init__(self, cases: pd.DataFrame):
        self.ids, self.labels = cases["id"], cases["label"].to_numpy(bool)

    def of(self, ids: list[str]) -> np.ndarray:
        from verifybench.tables import positions

        at = positions(pd.Series(ids, dtype="str"), self.ids) if len(ids) else np.empty(0, np.int64)
        if (at < 0).any():
            raise KeyError(ids[int(np.flatnonzero(at < 0)[0])])
        return self.labels[at]


def label_lookup(cases: pd.DataFrame) -> Labels:
    """The labels of the case table, for `run_gate`."""
    return Labels(cases)


def suite_scope_hash(raw: dict[str, Any]) -> str:
    """The parts of a suite that define what is measured: its name, dataset block and metrics block.
    Verifier options are left out on purpose: changing them is what a gate is for."""
    scope = {k: raw.get(k) for k in ("name", "dataset", "metrics")}
    return hashlib.sha256(json.dumps(scope, sort_keys=True, default=str).encode()).hexdigest()


def _float(x: Any) -> float | None:
    return None if x is None or (isinstance(x, float) and np.isnan(x)) else float(x)


def test_quality(y: np.ndarray, scores: np.ndarray, threshold: float | None) -> dict[str, float | None]:
    """Every gated quality metric on one set of test cases, error verdicts (NaN) counted as wrong: the
    numbers the gate shows as "baseline" and "now"."""
    if not len(y):
        return {m: None for m in QUALITY}
    vals = weighted_metrics(y, errors_as_wrong(y, scores), threshold, QUALITY, np.ones((1, len(y))))
    return {m: _float(v[0]) for m, v in vals.items()}


def build_baseline(manifest: dict, metrics: dict, frame: pd.DataFrame, cases: list[dict],
                   settings: Settings) -> Baseline:
    """The baseline document from a finished run's manifest, metrics, verdict frame (with its `ok`
    column), case index and metric settings."""
    cols = [c for c in ("case_id", "case_row", "verifier", "score", "ok", "label", "slice", "repeats") if c in frame]
    test = frame.loc[(frame["role"] == "test").to_numpy(bool), cols]
    once = test.drop_duplicates("case_row" if "case_row" in test else "case_id")
    test_slices = dict(zip(once["case_id"].tolist(), np.asarray(once["slice"].astype(str), dtype=object).tolist()))
    del once
    verifiers = {}
    for vid, m in metrics["verifiers"].items():
        mine = test[(test["verifier"] == vid).to_numpy(bool)].sort_values("case_id", kind="stable")
        scores = np.where(mine["ok"].to_numpy(bool), mine["score"].to_numpy(float, na_value=np.nan), np.nan)
        labels = mine["label"].to_numpy(bool)
        slice_of = np.asarray(mine["slice"].astype(str), dtype=object)
        repeated = repeat_matrix(mine["repeats"].to_numpy()) if "repeats" in mine and mine["repeats"].notna().any() \
            else None
        rows = {}
        for key, sm in [(OVERALL, m["overall"]), *m["slices"].items()]:
            sel = np.ones(len(mine), bool) if key == OVERALL else slice_of == key
            t, lat = sm["threshold"], sm.get("latency_ms") or {}
            rows[key] = {
                "threshold": t["value"], "threshold_kind": t.get("kind"), "threshold_source": t["source"],
                "threshold_degenerate": t.get("degenerate"), "threshold_near_degenerate": t.get("near_degenerate"),
                "fallback_from": t.get("fallback_from"),
                "threshold_warning": t.get("warning"),
                "test_cases": int(sel.sum()), "test_hallucinated": int(labels[sel].sum()),
                "test_faithful": int((~labels[sel]).sum()), "test_errors": int(np.isnan(scores[sel]).sum()),
                **test_quality(labels[sel], scores[sel], t["value"]),
                "flag_all": sm.get("flag_all"),
                "cases": sm.get("n"), "errors": sm.get("errors"),
                **{f"{p}_ms": lat.get(p) for p in ("p50", "p95", "p99")},
                "latency_basis": lat.get("basis"), "warmup_ms": (lat.get("warmup") or {}).get("total_ms"),
                "cost_per_1k": sm.get("cost_per_1k"),
            }
            if repeated is not None:
                rows[key]["flicker"] = flicker(labels[sel], repeated[sel], t["value"], QUALITY)
        verifiers[vid] = {
            "config_hash": next((v["config_hash"] for v in manifest["verifiers"] if v["id"] == vid), None),
            "config": next((v["config"] for v in manifest["verifiers"] if v["id"] == vid), None),
            "slices": rows,
            "repeats": int(repeated.shape[1]) if repeated is not None else None,
            # Per-case test-split scores (None = error verdict), for the paired comparison.
            "test_scores": dict(zip(mine["case_id"].tolist(), [None if np.isnan(x) else x for x in scores.tolist()])),
        }
    return Baseline.new(
        suite=manifest["suite"]["name"],
        suite_hash=manifest["suite"]["hash"],
        suite_scope_hash=suite_scope_hash(manifest["suite"]["raw"]),
        dataset_hash=manifest["dataset"]["hash"],
        content_hash=manifest["dataset"].get("content_hash"),  # what makes runs comparable (_util/identity.py)
        cases_hash=cases_hash(cases),
        by=metrics["by"],
        target=metrics["target"],
        settings={"bootstrap": settings.n_boot, "seed": settings.seed, "test_fraction": settings.test_fraction,
                  "min_per_class": settings.min_per_class},
        test_slices=test_slices,
        verifiers=verifiers,
    )


@dataclass
class GatedMetric:
    """One verifier x slice x metric the gate compares with the baseline, and what it found."""

    verifier: str
    slice: str
    metric: str
    baseline: float | None
    current: float | None
    allowed: float
    drop: float | None = None
    ci: tuple[float, float] | None = None
    status: str = "pass"  # pass | fail | skipped (nothing to gate) | refused (not meaningful to gate)
    message: str = ""
    explicit: bool = False  # the metric was asked for by name (refused, it then fails the gate: exit 2)
    cases: int = 0  # test-split cases compared
    threshold: float | None = None  # the baseline's threshold, held
    refit_threshold: float | None = None  # what fitting on the run itself would choose
    refit_value: float | None = None  # the metric now at the refit threshold

    @property
    def name(self) -> str:
        return f"{self.verifier} / {self.slice} / {self.metric}"


@dataclass
class GateResult:
    """What a gate found: every gated metric (`gated`), notes, and the Markdown summary a CI job posts
    (`markdown`)."""

    gated: list[GatedMetric] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    markdown: str = ""
    suite: str = ""

    @property
    def summary(self) -> str:
        """Deprecated name of `markdown` (`Run.summary` is a DataFrame; this is the Markdown text)."""
        import warnings

        warnings.warn("GateResult.summary is deprecated; use GateResult.markdown", DeprecationWarning, stacklevel=2)
        return self.markdown

    @property
    def checks(self) -> list[GatedMetric]:
        """Deprecated name of `gated` ("check" names a verifier at a threshold: docs/architecture.md)."""
        import warnings

        warnings.warn("GateResult.checks is deprecated; use GateResult.gated", DeprecationWarning, stacklevel=2)
        return self.gated

    @property
    def failed(self) -> list[GatedMetric]:
        return [c for c in self.gated if c.status == "fail"]

    @property
    def refused(self) -> list[GatedMetric]:
        """Metrics that were asked for by name but cannot be gated meaningfully (exit 2)."""
        return [c for c in self.gated if c.status == "refused" and c.explicit]

    @property
    def exit_code(self) -> int:
        return 2 if self.refused else 1 if self.failed else 0

    def table(self) -> GateTable:
        """The gated metrics as the CLI's table shows them: one row of text cells each."""
        cases = max((c.cases for c in self.gated), default=0)
        refused = self.refused
        rows: list[tuple[str, ...]] = [
            (c.verifier, c.slice, c.metric, split_of(c), _cell(c.baseline), _cell(c.current), _cell(c.drop),
             f"[{c.ci[0]:.3f}, {c.ci[1]:.3f}]" if c.ci else "-", f"{c.allowed:g}", status_text(c), refit_text(c))
            for c in self.gated]
        return GateTable(title=f"gate: the same test-split cases on both sides ({cases} for the whole set; errors "
                               "count as wrong); thresholds held at the baseline's",
                         rows=rows, alarms=[c.status == "fail" or c in refused for c in self.gated])


@dataclass
class GateTable:
    """A gate's result as text: `COLUMNS`, one row per gated metric; `alarms[i]`: row i failed, or was refused
    when asked for by name (shown in red)."""

    COLUMNS = ("verifier", "slice", "metric", "split", "baseline", "now", "drop", "95% CI of drop", "allowed", "result",
               "refit (now @ thr.)")

    title: str
    rows: list[tuple[str, ...]]
    alarms: list[bool]


def _cell(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


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


def _check_comparable(baseline: Baseline, current: Baseline) -> None:
    """Refuse a comparison over other cases or another test split (see `verifybench._util.identity`). The suite's
    name, file and dataset block are not compared: the cases' content after field mapping is what
    matters, so a run from Python and a suite file's run over the same rows compare, and so do the runs
    of a renamed suite."""
    refusals = []
    same = same_content(baseline.content_hash, current.content_hash)
    if same is not None:
        if not same:
            what = "different cases" if baseline.cases_hash != current.cases_hash else "different data"
            refusals.append(f"{what}: the cases' content differs (content {str(baseline.content_hash)[:12]} in the "
                            f"baseline, {str(current.content_hash)[:12]} in the run): another response, source, "
                            "label, split, doc type or meta value, or another selection of cases (limit or sample)")
        else:
            bs, cs = baseline.settings.model_dump(), current.settings.model_dump()
            if set(baseline.test_slices) != set(current.test_slices):
                drawn = {k: (bs.get(k), cs.get(k)) for k in ("seed", "test_fraction") if bs.get(k) != cs.get(k)}
                refusals.append("another test split over the same cases" + (
                    ": " + ", ".join(f"metrics.{k} {a} in the baseline, {b} in the run" for k, (a, b) in drawn.items())
                    if drawn else ""))
        if refusals:
            raise GateRefused("refusing to compare: " + "; ".join(refusals))
        return
    # A baseline (or run) from before content hashes: the files' hash and the suite's scope decide.
    if baseline.suite != current.suite or baseline.suite_scope_hash != current.suite_scope_hash:
        refusals.append(f"different suite: baseline from {baseline.suite!r} "
                        f"(scope {baseline.suite_scope_hash[:12]}), run from {current.suite!r} "
                        f"(scope {current.suite_scope_hash[:12]}); the dataset or metrics block changed (record "
                        "the baseline again: a new baseline compares by the cases' content instead)")
    if baseline.dataset_hash != current.dataset_hash:
        # The dataset hash covers the selection (limit, sample) too: name which kind of change it is.
        what = "different cases" if baseline.cases_hash != current.cases_hash else "different data"
        refusals.append(f"{what}: dataset {baseline.dataset_hash[:12]} in the baseline, "
                        f"{current.dataset_hash[:12]} in the run (other files, or another selection of them: "
                        "limit or sample)")
    elif baseline.cases_hash != current.cases_hash:
        refusals.append("different cases: the same files, but another selection of cases (limit or sample?)")
    if refusals:
        raise GateRefused("refusing to compare: " + "; ".join(refusals))


def run_gate(baseline: Baseline, current: Baseline, labels: dict[str, bool] | Labels,
             max_drop: dict[str, float], max_rise: dict[str, float], min_cases: int = GATE_MIN_CASES,
             slices: str = "all", refit: dict[str, dict[str, float | None]] | None = None,
             explicit: set[str] | None = None, allow_batch_latency: bool = False) -> GateResult:
    """Compare a current baseline-shaped document (built from the new run, at the baseline's
    thresholds) against the committed one.

    Args:
        baseline: the committed baseline.
        current: `build_baseline` of the run under test, with the baseline's thresholds applied.
        labels: case id -> label (True = hallucinated), from the run's case index (a dict, or `Labels`).
        max_drop: absolute drop allowed per quality metric.
        max_rise: relative rise allowed per latency or cost measure (0.25 = 25%); only these are gated.
        min_cases: a gated slice needs at least this many test cases.
        slices: "all" gates the whole set only; "each" gates every slice too.
        refit: verifier -> slice -> the threshold a fit on the run itself chooses (shown, not gated).
        explicit: metric names asked for by name (a check on one that cannot be gated is an exit 2).
        allow_batch_latency: gate a latency that is a batch average (not a per-case figure) anyway.
    """
    _check_comparable(baseline, current)
    if slices not in ("all", "each"):
        raise VerifybenchError(f"--slices {slices!r}: expected all or each")
    explicit = set(explicit or ())
    n_boot, seed = baseline.settings.bootstrap, baseline.settings.seed
    result = GateResult(suite=baseline.suite)
    for vid in current.verifiers:
        if vid not in baseline.verifiers:
            result.notes.append(f"{vid}: not in the baseline, so not gated (record a new baseline to gate it)")
    for vid, b in baseline.verifiers.items():
        c = current.verifiers.get(vid)
        if c is None:
            raise GateRefused(f"refusing to compare: verifier {vid!r} is in the baseline but not in the run")
        if set(b.test_scores) != set(c.test_scores):
            raise GateRefused(f"refusing to compare: {vid!r} was scored on other test cases than in the baseline")
        if b.config_hash != c.config_hash:
            result.notes.append(f"{vid}: configuration changed since the baseline (this is what is being gated)")
        if b.repeats or c.repeats:
            band = {m: _flicker(b.slices.get(OVERALL), c.slices.get(OVERALL), m) for m in max_drop}
            result.notes.append(f"{vid}: scored {b.repeats or 1} times per case in the baseline, "
                                f"{c.repeats or 1} now; a drop counts only beyond its flicker between repeats ("
                                + ", ".join(f"{m} {v:.3f}" for m, v in band.items()) + ")")
        keys = [OVERALL] + ([k for k in b.slices if k != OVERALL] if slices == "each" else [])
        for key in keys:
            bs, cs = b.slices.get(key), c.slices.get(key)
            if bs is None or cs is None:
                raise GateRefused(f"refusing to compare: slice {key!r} of {vid!r} is missing from the run")
            if (bs.test_cases or 0) < min_cases:
                raise GateRefused(f"refusing to gate {vid} / {key}: {bs.test_cases} test cases, fewer than "
                                  f"the minimum {min_cases} (label more cases, lower --min-cases, or gate the whole "
                                  "set only)")
            ids = sorted(i for i in b.test_scores if key == OVERALL or baseline.test_slices.get(i) == key)
            y = labels.of(ids) if isinstance(labels, Labels) else np.array([labels[i] for i in ids], bool)
            base = errors_as_wrong(y, np.array([np.nan if (x := b.test_scores[i]) is None else x for i in ids], float))
            cur = errors_as_wrong(y, np.array([np.nan if (x := c.test_scores[i]) is None else x for i in ids], float))
            result.gated += _quality_gated(vid, key, bs, cs, y, base, cur, max_drop, explicit, n_boot, seed,
                                             (refit or {}).get(vid, {}).get(key))
            result.gated += _cost_gated(vid, key, bs, cs, max_rise, allow_batch_latency)
    return result


def _quality_gated(vid: str, key: str, bs: BaselineSlice, cs: BaselineSlice, y: np.ndarray, base: np.ndarray,
                   cur: np.ndarray, max_drop: dict[str, float], explicit: set[str], n_boot: int, seed: int,
                   refit_threshold: float | None) -> list[GatedMetric]:
    t = bs.threshold
    held = f"held at the baseline's threshold {t:.4f}" if t is not None else ""
    one_class = y.all() or (~y).all()
    gated = [m for m in max_drop
             if not one_class and (m in RANK_METRICS or (t is not None and not bs.threshold_degenerate))]
    paired = paired_bootstrap(y, base, cur, t, t, metrics=gated, n_boot=n_boot, seed=seed) if gated else {}
    out = []
    for metric, allowed in max_drop.items():
        g = GatedMetric(vid, key, metric, getattr(bs, metric), getattr(cs, metric), allowed, explicit=metric in explicit,
                        cases=len(y),
                      threshold=t if metric not in RANK_METRICS else None)
        if metric not in RANK_METRICS:
            g.refit_threshold = refit_threshold
            if refit_threshold is not None and len(y):
                g.refit_value = _float(weighted_metrics(y, cur, refit_threshold, [metric], np.ones((1, len(y))))[metric][0])
        if one_class:
            g.status, g.message = "skipped", "the test split of this slice holds one class only"
        elif metric not in RANK_METRICS and t is None:
            g.status = "skipped"
            g.message = f"no threshold for this slice in the baseline ({bs.threshold_warning or 'none fitted'})"
        elif metric not in RANK_METRICS and bs.threshold_degenerate:
            fa = getattr(bs.flag_all, metric, None) if bs.flag_all is not None else None
            g.status = "refused"
            g.message = (f"the baseline's threshold {t:.4f} {bs.threshold_degenerate}: {metric} at it only "
                             f"restates the class balance" + (f" (flagging every case scores {fa:.3f})" if fa is not None else "")
                             + "; gate auroc/auprc, or record the baseline with a target that separates "
                             "(--target balanced_accuracy)")
        else:
            p = paired[metric]
            g.baseline, g.current, g.drop = _float(p["a"]), _float(p["b"]), _float(p["diff"])
            g.ci = (p["ci"][0], p["ci"][1])
            note = f" ({held})" if held and metric not in RANK_METRICS else ""
            band = _flicker(bs, cs, metric)
            if g.drop is not None and allowed < g.drop <= band:
                g.message = (f"drop {g.drop:.3f} is within the repeats' flicker {band:.3f} ({metric} moves "
                                 f"that much between repeats of one run){note}")
            elif g.drop is not None and g.drop > allowed and g.ci[0] > 0:
                g.status = "fail"
                g.message = (f"{metric} dropped by {g.drop:.3f} (allowed {allowed:.3f}); "
                             f"{1 - ALPHA:.0%} CI of the drop [{g.ci[0]:.3f}, {g.ci[1]:.3f}] excludes 0{note}")
            elif g.drop is not None and g.drop > allowed:
                g.message = (f"drop {g.drop:.3f} is within noise: {1 - ALPHA:.0%} CI "
                             f"[{g.ci[0]:.3f}, {g.ci[1]:.3f}] includes 0{note}")
            if metric not in RANK_METRICS and bs.threshold_near_degenerate:
                g.message += ("; " if g.message else "") + (
                    f"near-degenerate threshold: it {bs.threshold_near_degenerate}, so {metric} at it mostly "
                    "restates the class balance")
        out.append(g)
    return out


def _flicker(bs: BaselineSlice | None, cs: BaselineSlice | None, metric: str) -> float:
    """How far `metric` moves between repeats of one run: the larger of the baseline's and the run's
    recorded flicker (0 for a verifier scored once)."""
    return max(float(((side.flicker if side else None) or {}).get(metric) or 0.0) for side in (bs, cs))


def _cost_gated(vid: str, key: str, bs: BaselineSlice, cs: BaselineSlice, max_rise: dict[str, float],
                allow_batch_latency: bool) -> list[GatedMetric]:
    out = []
    for measure, allowed in max_rise.items():
        before, after = getattr(bs, measure), getattr(cs, measure)
        g = GatedMetric(vid, key, measure, before, after, allowed, explicit=True)
        bases = {bs.latency_basis, cs.latency_basis}
        if before is None or after is None or before == 0:
            g.status, g.message = "skipped", "not measured on one side"
        elif measure in LATENCY and bases != {"case"} and not allow_batch_latency:
            g.status = "refused"
            g.message = (f"{measure} is not a per-case figure here (baseline: {bs.latency_basis}, now: "
                         f"{cs.latency_basis}): a batch average spreads one batch's time over its cases, "
                             "so its percentiles are not the cases'; pass --allow-batch-latency to gate it anyway")
        else:
            rise = after / before - 1
            g.drop = -rise
            if rise > allowed:
                g.status = "fail"
                g.message = f"{measure} rose by {rise:.0%} ({before:.3g} -> {after:.3g}), allowed {allowed:.0%}"
            if measure in LATENCY and bases != {"case"}:
                g.message += ("; " if g.message else "") + "batch averages, gated as asked"
        out.append(g)
    return out


def _fmt(x: float | None) -> str:
    return "–" if x is None or (isinstance(x, float) and np.isnan(x)) else f"{x:.3f}"


def refit_text(c: GatedMetric) -> str:
    """`0.812 @ 0.4312`: the metric now at the threshold a refit on the run would choose."""
    if c.refit_threshold is None:
        return "–"
    return f"{_fmt(c.refit_value)} @ {c.refit_threshold:.4f}"


def split_of(c: GatedMetric) -> str:
    """Which cases a check's numbers are over: quality on the test split; latency and cost on all cases."""
    return "test" if c.metric in QUALITY else "all"


def status_text(c: GatedMetric) -> str:
    return {"fail": "FAIL", "refused": "refused" + (" (asked for)" if c.explicit else " (not gated)")}.get(c.status, c.status)


def junit_xml(result: GateResult, suite: str) -> str:
    """One JUnit test case per verifier x slice x gated metric."""
    root = ET.Element("testsuites")
    errors = len(result.refused)
    ts = ET.SubElement(root, "testsuite", name=f"verifybench-gate.{suite}", tests=str(len(result.gated)),
                       failures=str(len(result.failed)), errors=str(errors),
                       skipped=str(sum(c.status in ("skipped", "refused") and not (c.status == "refused" and c.explicit)
                                       for c in result.gated)))
    for c in result.gated:
        tc = ET.SubElement(ts, "testcase", classname=f"verifybench.{suite}.{c.verifier}", name=f"{c.slice}.{c.metric}")
        if c.status == "fail":
            ET.SubElement(tc, "failure", message=c.message).text = c.message
        elif c.status == "refused" and c.explicit:
            ET.SubElement(tc, "error", message=c.message).text = c.message
        elif c.status in ("skipped", "refused"):
            ET.SubElement(tc, "skipped", message=c.message)
        elif c.message:
            ET.SubElement(tc, "system-out").text = c.message
    return ET.tostring(root, encoding="unicode", xml_declaration=True)


def refusal_junit(reason: str, suite: str) -> str:
    """A JUnit file for a refused comparison (exit 2): one errored test case carrying the reason, so a CI
    step that publishes the file has one to publish."""
    root = ET.Element("testsuites")
    ts = ET.SubElement(root, "testsuite", name=f"verifybench-gate.{suite}", tests="1", failures="0", errors="1",
                       skipped="0")
    tc = ET.SubElement(ts, "testcase", classname=f"verifybench.{suite}", name="gate")
    ET.SubElement(tc, "error", message=reason).text = reason
    return ET.tostring(root, encoding="unicode", xml_declaration=True)


def refusal_markdown(reason: str, suite: str) -> str:
    return f"### verifybench gate on `{suite}`: **REFUSED** (exit 2)\n\n{reason}\n"


def markdown_summary(result: GateResult, suite: str) -> str:
    verdict = {0: "passed", 1: "**FAILED**", 2: "**REFUSED** (a metric asked for cannot be gated)"}[result.exit_code]
    cases = max((c.cases for c in result.gated), default=0)
    lines = [f"### verifybench gate on `{suite}`: {verdict}", "",
             f"The same test-split cases on both sides ({cases} for the whole set; error verdicts count as wrong). Thresholds "
             "are held at the baseline's, as a deployed policy would be; *refit* shows the metric now at the "
             "threshold a fit on this run would choose (not gated).", "",
             "| verifier | slice | metric | split | baseline | now | drop | 95% CI of drop | allowed | result | refit |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for c in result.gated:
        ci = f"[{c.ci[0]:.3f}, {c.ci[1]:.3f}]" if c.ci else "–"
        why = f": {c.message}" if c.status in ("fail", "refused", "skipped") and c.message else ""
        lines.append(f"| {c.verifier} | {c.slice} | {c.metric} | {split_of(c)} | {_fmt(c.baseline)} | {_fmt(c.current)} "
                     f"| {_fmt(c.drop)} "
                     f"| {ci} | {c.allowed:g} | {status_text(c)}{why} | {refit_text(c)} |")
    lines += [""] + [f"- {n}" for n in result.notes]
    return "\n".join(lines) + "\n"


def load_baseline(path: str | Path) -> Baseline:
    """The committed baseline, through its one reader (`formats.Baseline`: an older format migrated, a
    newer one refused naming who wrote it); every problem is a refusal naming the file."""
    if not Path(path).exists():
        raise GateRefused(f"{path}: no such baseline; record one with `verifybench baseline RUN_DIR --out {path}`")
    if Path(path).is_dir():
        raise GateRefused(f"{path}: cannot be read as a baseline (a folder); give the baseline's JSON file "
                          "(metrics/<suite>.json)")
    try:
        return Baseline.read(path)
    except StaleFormat as e:
        raise GateRefused(f"{e}; record it again with `verifybench baseline RUN_DIR --out {path}`") from None
    except FormatError as e:
        raise GateRefused(f"{e} (give the baseline's JSON file, metrics/<suite>.json)") from None


# --- the flows behind `verifybench baseline` and `verifybench gate` ------------------------------------

def baseline(run_dir: str | Path, out: str | Path | None = None, policy: str | Path | None = None) -> Path:
    """Record a finished run's metrics (thresholds from `policy` when given) as the baseline a gate
    compares to. Refuses an unfinished run, a verifier missing verdicts, or duplicated verdicts.

    Args:
        run_dir: a finished run.
        out: where to write it (default: metrics/<suite>.json).
        policy: thresholds to use instead of the run's own fitted ones.
    """
    run_dir = Path(run_dir)
    overrides: dict[str, Any] = {}
    if policy is not None:
        by, overrides["policy"] = load_policy(policy)
        overrides["by"] = by
        overrides["policy_reasons"] = null_reasons(policy)
    run = RunDir.open(run_dir)
    s = run.settings(**overrides)
    cases, verdicts = run.tables(s)
    require_complete(run_dir, run.doc, cases, verdicts, "a baseline")
    f = run.scored_frame(s)
    del verdicts
    run.drop_verdicts()
    with phase("computing the baseline"):
        doc = build_baseline(run.doc, compute_metrics(cases, None, s, scored=f), f, cases, s)
    doc.notes = baseline_notes(doc, s.policy if policy is not None else None, str(s.target))
    return doc.write(Path(out) if out else Path("metrics") / f"{safe_name(run.manifest.suite.name)}.json")


def baseline_notes(doc: Baseline, policy: dict[str, dict[str, float | None]] | None, target: str) -> list[str]:
    """What a baseline must say out loud: each verifier x slice it holds no threshold for (not gated at a
    threshold; AUROC and AUPRC still are), and, when recorded with a policy, each verifier the policy
    does not name (its thresholds were fitted on the run)."""
    notes = []
    for vid, v in doc.verifiers.items():
        if policy is not None and vid not in policy:
            notes.append(f"{vid}: not in the policy: its thresholds were fitted on this run ({target})")
        for key, row in v.slices.items():
            if row.threshold is None:
                why = row.threshold_warning or "none fitted"
                notes.append(why if why.startswith("NOT GATED") else
                             f"{vid} / {key}: NOT GATED AT A THRESHOLD (no threshold: {why}); only its AUROC and "
                             "AUPRC are gated")
    return notes


def gate(run_dir: str | Path, baseline_path: str | Path, max_drop: list[str] | None = None,
         max_rise: list[str] | None = None, min_cases: int = GATE_MIN_CASES, slices: str = "all",
         junit: str | Path | None = None, summary: str | Path | None = None, allow_batch_latency: bool = False
         ) -> GateResult:
    """Compare a run with a committed baseline; see this module's docstring for the rules.

    Returns a `GateResult` (exit code 0, 1, or 2 when a metric asked for by name cannot be gated); raises
    `GateRefused` (exit code 2) when the comparison is invalid. The baseline's thresholds are held (a gate
    never refits them); each check also shows what a refit on this run would give. The JUnit and
    Markdown files are written in every case, a refusal included, with its reason.
    """
    run_dir = Path(run_dir)
    suite_name = "unknown"
    gating = ExitStack()  # the phase's line on a terminal, ended however the gate ends
    try:
        base = load_baseline(baseline_path)
        suite_name = base.suite or suite_name
        # Every baseline entry is held, a missing threshold too (None: not gated at a threshold on either side).
        held = {vid: {k: r.threshold for k, r in v.slices.items()} for vid, v in base.verifiers.items()}
        run = RunDir.open(run_dir)  # the run is read once: its manifest, its tables, one frame
        s = run.settings(policy=held, by=base.by)
        s.policy_source = f"baseline {Path(baseline_path).name} (held)"
        s.n_boot = 1  # the gate's intervals are its own paired ones, at the baseline's settings
        # A refit: the suite's own settings on this run (its `fixed` thresholds stay; no stored policy).
        # Its split and slices are the held settings' (same `by`, seed and test fraction), so the one frame
        # serves both; only its thresholds are fitted, not a second evaluation.
        own = run.settings(by=base.by, policy=None)
        own.n_boot = 1
        gating.enter_context(phase("gate: reading the run, comparing it with the baseline"))
        cases, verdicts = run.tables(s)
        require_complete(run_dir, run.doc, cases, verdicts, "a gate")
        f = run.scored_frame(s)
        del verdicts
        run.drop_verdicts()
        current = build_baseline(run.doc, evaluate(f, s, n_cases=len(cases)), f, cases, s)
        refit = fitted_thresholds(f, own)
        del f
        result = run_gate(base, current, label_lookup(cases),
                          parse_limits(max_drop, DEFAULT_DROPS, QUALITY),
                          parse_limits(max_rise, {}, COSTS), min_cases=min_cases, slices=slices,
                          refit=refit, explicit={i.partition("=")[0].strip().lower() for i in max_drop or []},
                          allow_batch_latency=allow_batch_latency)
        gating.close()
    except VerifybenchError as e:
        gating.close()
        reason = str(e) if isinstance(e, GateRefused) else f"refusing to gate: {e}"
        if junit:
            _write_text(junit, refusal_junit(reason, suite_name))
        if summary:
            _write_text(summary, refusal_markdown(reason, suite_name))
        if isinstance(e, GateRefused):
            raise
        raise GateRefused(reason) from None
    result.markdown = markdown_summary(result, base.suite)
    if junit:
        _write_text(junit, junit_xml(result, base.suite))
    if summary:
        _write_text(summary, result.markdown)
    return result


Check = GatedMetric  # the name before 0.3 ("check" names a verifier at a threshold), kept for one release


def _write_text(path: str | Path, text: str) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, text)

