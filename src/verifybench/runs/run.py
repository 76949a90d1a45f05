"""A run directory as Python objects: `Run` (what `verifybench.run` returns and `load_run` opens).

Every frame is built from the run directory's files (manifest.json, cases.jsonl, results.jsonl,
metrics.json) through the readers in `rundir` and the metrics layer's `frame`, so a notebook sees the
very numbers the report and the gate see; nothing is recomputed here but the per-case flags at the
thresholds metrics.json records.

- `Run.cases`: one row per case (texts as the run indexed them: clipped, without sources).
- `Run.verdicts`: one row per verifier x case: score, error, latency, the split the metrics put the case
  on (calibration/test), label, doc type, slice, and whether the case is flagged at the verifier's
  fitted threshold (overall, and its slice's).
- `Run.metrics`: metrics.json in tidy long form: verifier, slice, split, metric, value, ci_low, ci_high.
- `Run.thresholds`, `Run.summary`: one row per verifier and slice / per verifier.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

from verifybench.evaluation.run_dir import RunDir
from verifybench.metrics.summary import OVERALL
from verifybench.rundir import REPORT, RunDirError

if TYPE_CHECKING:
    import pandas as pd

    from verifybench.formats.policy import Policy
    from verifybench.gating.compare import Comparison
    from verifybench.gating.gate import GateResult
    from verifybench.metrics.settings import Settings
    from verifybench.pipeline.runner import RunResult
    from verifybench.tracking.mlflow_store import Logged

METRIC_COLUMNS = ["verifier", "slice", "split", "metric", "value", "ci_low", "ci_high"]
# Latency figures are named as the gate names them (p95_ms), not as metrics.json nests them.
_LATENCY_NAMES = {"p50": "p50_ms", "p95": "p95_ms", "p99": "p99_ms", "mean": "mean_ms",
                  "per_unit_p50": "per_unit_p50_ms", "per_unit_p95": "per_unit_p95_ms"}
# Parts of a slice's metrics that are not numbers about the verifier (curves for plots, label counts for
# `describe`), or are read separately (intervals).
_NOT_METRICS = {"ci", "curve", "reliability", "labels", "needs", "threshold", "latency_ms", "calibration_split",
                "test", "flag_all", "calibration_error", "auroc", "auprc", "cost_per_1k"}


def _number(x: Any) -> float | None:
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return None
    return float(x)


def _leaves(d: dict[str, Any], prefix: str = "", skip: frozenset[str] = frozenset({"ci"})
            ) -> Iterator[tuple[str, Any]]:
    """(dotted name, value) of every number (or null) in a nested dict; a confusion matrix's counts by
    their own names (tp, fp, fn, tn)."""
    for k, v in d.items():
        if k in skip:
            continue
        if isinstance(v, dict):
            yield from _leaves(v, "" if k == "confusion" else f"{prefix}{k}.", skip)
        elif v is None or _number(v) is not None:
            yield f"{prefix}{k}", v


def _ci(cis: dict | None, key: str) -> tuple[float | None, float | None]:
    ci = (cis or {}).get(key)
    if isinstance(ci, (list, tuple)) and len(ci) == 2:
        return _number(ci[0]), _number(ci[1])
    return None, None


def tidy_metrics(metrics: dict[str, Any]) -> list[dict[str, Any]]:
    """metrics.json as rows of (verifier, slice, split, metric, value, ci_low, ci_high).

    split is "all" for what is measured over every case of the slice (AUROC, AUPRC, counts, latency,
    cost, the threshold), "calibration" for the operating point the threshold was tuned on, and "test"
    for the operating point reported. Keys this reader does not know are kept, by their dotted names."""
    rows: list[dict[str, Any]] = []

    def add(vid: str, key: str, split: str, metric: str, value: Any,
            ci: tuple[float | None, float | None] = (None, None)) -> None:
        rows.append({"verifier": vid, "slice": key, "split": split, "metric": metric,
                     "value": _number(value), "ci_low": ci[0], "ci_high": ci[1]})

    for vid, v in (metrics.get("verifiers") or {}).items():
        for key, sm in [(OVERALL, v.get("overall") or {}), *(v.get("slices") or {}).items()]:
            for name in ("auroc", "auprc"):
                if name in sm:
                    add(vid, key, "all", name, sm[name], _ci(sm.get("ci"), name))
            for name, value in _leaves(sm, skip=frozenset(_NOT_METRICS)):
                add(vid, key, "all", name, value)
            t = sm.get("threshold") or {}
            add(vid, key, "all", "threshold", t.get("value"))
            for name, value in _leaves(sm.get("latency_ms") or {}):
                add(vid, key, "all", _LATENCY_NAMES.get(name, name), value)
            add(vid, key, "all", "cost_per_1k", sm.get("cost_per_1k"))
            for name, value in _leaves(sm.get("calibration_error") or {}):
                add(vid, key, "all", name, value)
            for split, part in (("calibration", "calibration_split"), ("test", "test")):
                point = sm.get(part) or {}
                for name, value in _leaves(point):
                    add(vid, key, split, name, value, _ci(point.get("ci"), name))
            for name, value in _leaves(sm.get("flag_all") or {}):
                add(vid, key, "test", f"flag_all.{name}", value)
        for field, values in (v.get("breakdown") or {}).items():
            for value_name, r in values.items():
                for name, value in _leaves(r):
                    add(vid, f"{field}={value_name}", "test", name, value)
        for section in ("usage_per_case", "sample_flip_rate", "injection_flip_rate"):
            for name, value in _leaves(v.get(section) or {}):
                add(vid, OVERALL, "all", f"{section}.{name}", value)
        for name, value in _leaves(v.get("repeats") or {}):  # flips across the threshold: over the test split
            add(vid, OVERALL, "test", f"repeats.{name}", value)
        # Minimal pairs (over all cases, like AUROC) and localization (test split), per slice (docs/spans.md).
        pairs = v.get("pairs") or {}
        for key, p in [(OVERALL, pairs), *(pairs.get("slices") or {}).items()] if pairs else []:
            add(vid, key, "all", "pairwise_accuracy", p.get("accuracy"), _ci({"a": p.get("ci")}, "a"))
        spans = v.get("spans") or {}
        for key, sm in [(OVERALL, spans.get("test") or {}), *(spans.get("slices") or {}).items()]:
            for scope, entry in sm.items():
                for level in ("char", "span_overlap", "span_iou50"):
                    for name in ("precision", "recall", "f1"):
                        add(vid, key, "test", f"spans.{scope}.{level}.{name}", entry[level].get(name),
                            _ci(entry[level].get("ci"), name))
    return rows


def threshold_source(t: dict[str, Any]) -> str:
    """Where a threshold came from, in a few words for a table."""
    source = t.get("source") or ""
    if t.get("value") is None:
        return "none"
    if source.startswith("fitted on the calibration split"):
        how = source.removeprefix("fitted on the calibration split").strip(" ()")
        return f"fitted, {how}" if how else "fitted"
    if source.startswith("fitted on all"):
        return "fitted on all, cross-fitted"
    if t.get("kind") == "pooled":
        return f"pooled, own weight {t.get('weight') or 0:.2f}"
    if t.get("kind") == "fallback" or source.startswith("fallback"):
        return f"fallback to {t.get('fallback_from') or OVERALL!r}"
    return source or "-"


def _labels(values: list[Any]) -> Any:
    """A label column: plain booleans, or pandas' nullable booleans (NA: unlabeled) when a case has none."""
    if all(v is not None for v in values):
        return [bool(v) for v in values]
    import pandas as pd

    return pd.array(values, dtype="boolean")


class SummaryRow(TypedDict):
    """One verifier over all cases: what `verifybench run` prints at its end (None: not measured)."""

    verifier: str
    cases: int | None
    errors: int | None
    auroc: float | None
    auroc_ci_low: float | None
    auroc_ci_high: float | None
    threshold: float | None
    threshold_source: str
    threshold_degenerate: str | None
    threshold_near_degenerate: str | None
    threshold_warning: str | None
    test_cases: int | None  # labeled test-split cases, whether or not a threshold exists to measure them at
    test_precision: float | None
    test_recall: float | None
    test_f1: float | None
    p50_ms: float | None
    p95_ms: float | None
    latency_basis: str | None


def _labeled(counts: dict[str, int] | None) -> int | None:
    """A split's labeled cases from its per-class counts (metrics.json `labels`); None when not recorded."""
    return None if counts is None else sum(counts.values())


def summary_rows(metrics: dict[str, Any]) -> list[SummaryRow]:
    """Per verifier, over all cases: what `verifybench run` prints at its end."""
    rows = []
    for vid, v in (metrics.get("verifiers") or {}).items():
        o = v.get("overall") or {}
        t, test, lat = o.get("threshold") or {}, o.get("test") or {}, o.get("latency_ms") or {}
        low, high = _ci(o.get("ci"), "auroc")
        rows.append(SummaryRow(
            verifier=vid, cases=o.get("n"), errors=o.get("errors"),
            auroc=o.get("auroc"), auroc_ci_low=low, auroc_ci_high=high,
            threshold=t.get("value"), threshold_source=threshold_source(t),
            threshold_degenerate=t.get("degenerate"), threshold_near_degenerate=t.get("near_degenerate"),
            threshold_warning=t.get("warning"),
            test_cases=test.get("n", _labeled((o.get("labels") or {}).get("test"))),
            test_precision=test.get("precision"), test_recall=test.get("recall"), test_f1=test.get("f1"),
            p50_ms=lat.get("p50"), p95_ms=lat.get("p95"), latency_basis=lat.get("basis"),
        ))
    return rows


class Run:
    """A run directory: its cases, verdicts and metrics as pandas DataFrames, and the commands that
    take a run (compare, baseline, gate, thresholds, MLflow) as methods.

    Frames are read from the files when first asked for and kept; `reload()` forgets them (after a
    resume or `report`). Counts named `n_*` are the whole run's; what this call of `run` / `resume` did
    is `result` (new_verdicts, errors, load_errors; None for a run opened with `load_run`).
    """

    def __init__(self, run_dir: str | Path, result: RunResult | None = None):
        self.run_dir = Path(run_dir)
        self.files = RunDir.open(self.run_dir)  # a clear error if not a run; the manifest read once
        self.result = result

    @property
    def manifest(self) -> dict[str, Any]:
        """manifest.json as a mapping (`files.manifest` is the typed record)."""
        return self.files.doc

    def __repr__(self) -> str:
        m = self.files.manifest
        n = "?" if m.dataset.total is None else m.dataset.total
        ids = ", ".join(v.id for v in m.verifiers)
        return f"Run({str(self.run_dir)!r}: {self.suite!r}, {n} cases, verifiers {ids}, {self.status})"

    # --- what the directory says about itself -------------------------------------------------------------

    @property
    def suite(self) -> str:
        return self.files.manifest.suite.name

    @property
    def status(self) -> str:
        return self.files.manifest.status

    @property
    def dataset_hash(self) -> str:
        return self.files.manifest.dataset.hash

    @property
    def report_path(self) -> Path:
        return self.run_dir / REPORT

    @property
    def metrics_json(self) -> dict[str, Any]:
        """metrics.json as written by the run."""
        return self.files.stored_metrics()

    def reload(self) -> Run:
        """Forget the frames read so far; the next access reads the files again."""
        self.files = RunDir.open(self.run_dir)
        for name in ("cases", "verdicts", "metrics", "threshold_table", "summary", "_settings", "_case_index"):
            self.__dict__.pop(name, None)
        return self

    # --- counts: the whole run (n_*), and what this call did (`result`) -----------------------------------

    @property
    def n_cases(self) -> int:
        """Cases in the run, however many calls scored them."""
        total = self.files.manifest.dataset.total
        return int(total) if total is not None else len(self._case_index)

    @property
    def n_error_verdicts(self) -> int:
        """Error verdicts in the run (every verifier, every call)."""
        return int(self.verdicts["error"].notna().sum())

    @property
    def n_skipped_records(self) -> int:
        """Input records the run skipped as bad (`on_error: skip`), listed in errors.jsonl."""
        return self.files.manifest.dataset.skipped_records or 0

    @property
    def notes(self) -> list[str]:
        """What the run had to say (a stale lock taken over, ...): this call's, or the manifest's."""
        return self.result.notes if self.result is not None else list(self.files.manifest.notes)

    # Before 0.2 these three meant this call's counts on a fresh run and the whole run's on a loaded one.
    @property
    def new_verdicts(self) -> int:
        """Deprecated: `result.new_verdicts` (this call), 0 for a loaded run."""
        _deprecated("new_verdicts", "result.new_verdicts")
        return self.result.new_verdicts if self.result is not None else 0

    @property
    def errors(self) -> int:
        """Deprecated: `result.errors` (this call) or `n_error_verdicts` (the whole run)."""
        _deprecated("errors", "result.errors (this call) or n_error_verdicts (the whole run)")
        return self.result.errors if self.result is not None else self.n_error_verdicts

    @property
    def load_errors(self) -> int:
        """Deprecated: `result.load_errors` (this call) or `n_skipped_records` (the whole run)."""
        _deprecated("load_errors", "result.load_errors (this call) or n_skipped_records (the whole run)")
        return self.result.load_errors if self.result is not None else self.n_skipped_records

    # --- frames ------------------------------------------------------------------------------------------

    @cached_property
    def _settings(self) -> Settings:
        return self.files.settings()

    @cached_property
    def _case_index(self) -> list[dict[str, Any]]:
        return self.files.case_rows()

    def _frame(self, cases: list[dict], verdicts: list) -> pd.DataFrame:
        from verifybench.metrics import frame

        s = self._settings
        return frame(cases, verdicts, s.by, s.seed, s.test_fraction)

    @cached_property
    def cases(self) -> pd.DataFrame:
        """One row per case: case_id, dataset, doc_type, label (True = hallucinated; a nullable boolean,
        NA for an unlabeled case, when the run has any), split (the split the metrics put it on:
        calibration, test, or unlabeled), data_split (the case's own split field), slice (its key
        under the metrics' `by`), question, response (as indexed: clipped to 2,000 characters), and a
        `meta.<key>` column per meta field."""
        import pandas as pd

        from verifybench.cases import Verdict

        rows = self._case_index
        # The split and slice come from the metrics layer's own frame (one placeholder verdict per case),
        # so they are the ones every number was computed on.
        placed = self._frame(rows, [Verdict(case_id=r["id"], verifier="-", score=0.0) for r in rows])
        where = placed.set_index("case_id")
        df = pd.DataFrame({
            "case_id": [r["id"] for r in rows],
            "dataset": [r.get("dataset") for r in rows],
            "doc_type": [r.get("doc_type") for r in rows],
            "label": _labels([r.get("label") for r in rows]),
            "split": where["role"].reindex([r["id"] for r in rows]).to_numpy(),
            "data_split": [r.get("split") for r in rows],
            "slice": where["slice"].reindex([r["id"] for r in rows]).to_numpy(),
            "question": [r.get("question") for r in rows],
            "response": [r.get("response") for r in rows],
        })
        meta = pd.DataFrame([r.get("meta") or {} for r in rows], index=df.index)
        if len(meta.columns):
            df = pd.concat([df, meta.add_prefix("meta.")], axis=1)
        return df

    @cached_property
    def verdicts(self) -> pd.DataFrame:
        """One row per verifier x case: case_id, verifier, score, error, latency_ms, cost_usd, split
        (calibration, test or unlabeled), label (NA where unlabeled), doc_type, dataset, slice;
        `threshold` (the verifier's overall threshold in metrics.json) and `flagged` (score >= threshold);
        `slice_threshold` (the slice's own, or the overall one where the slice has none) and
        `slice_flagged`. A flag is missing (<NA>) for an error verdict or where there is no threshold.
        Also what else the metrics frame carries (units, usage, ...)."""
        import numpy as np
        import pandas as pd

        f = self._frame(self._case_index, self.files.verdict_rows()).rename(columns={"role": "split"})
        m = self.metrics_json.get("verifiers") or {}

        def value(sm: dict | None) -> float:
            v = ((sm or {}).get("threshold") or {}).get("value")
            return np.nan if v is None else float(v)

        overall = {vid: value(v.get("overall")) for vid, v in m.items()}
        per_slice = {(vid, key): value(sm) for vid, v in m.items() for key, sm in (v.get("slices") or {}).items()}
        f["threshold"] = f["verifier"].map(overall).astype(float)
        own = np.array([per_slice.get((v, str(k)), np.nan) for v, k in zip(f["verifier"], f["slice"])], dtype=float)
        f["slice_threshold"] = np.where(np.isnan(own), f["threshold"].to_numpy(), own)
        score = f["score"].to_numpy(dtype=float, na_value=np.nan)
        ok = f["error"].isna().to_numpy() & ~np.isnan(score)
        for flag, thr in (("flagged", "threshold"), ("slice_flagged", "slice_threshold")):
            t = f[thr].to_numpy(dtype=float)
            known = ok & ~np.isnan(t)
            flags = pd.array(np.where(known, score >= np.nan_to_num(t), False), dtype="boolean")
            flags[~known] = pd.NA
            f[flag] = flags
        if "labeled" in f and not f["labeled"].all():  # an unlabeled case's label is NA, not False
            f["label"] = pd.array(f["label"].to_numpy(bool), dtype="boolean")
            f.loc[~f["labeled"].to_numpy(bool), "label"] = pd.NA
        first = ["case_id", "verifier", "score", "error", "latency_ms", "split", "label", "doc_type", "dataset", "slice",
                 "threshold", "flagged", "slice_threshold", "slice_flagged"]
        return f[first + [c for c in f.columns if c not in first]]

    @cached_property
    def metrics(self) -> pd.DataFrame:
        """metrics.json in tidy long form: verifier, slice, split, metric, value, ci_low, ci_high (see
        `tidy_metrics`). `run.metrics.query("split == 'test' and metric == 'f1'")` is every test F1."""
        import pandas as pd

        return pd.DataFrame(tidy_metrics(self.metrics_json), columns=METRIC_COLUMNS)

    @property
    def thresholds(self) -> pd.DataFrame:
        """Deprecated name of `threshold_table` (`verifybench.thresholds()` fits a policy; this reads one)."""
        _deprecated("thresholds", "threshold_table")
        return self.threshold_table

    @cached_property
    def threshold_table(self) -> pd.DataFrame:
        """One row per verifier and slice: the threshold metrics.json records, where it came from (source,
        and kind, fallback_from, degenerate where the metrics layer says), and why there is none."""
        import pandas as pd

        rows = []
        for vid, v in (self.metrics_json.get("verifiers") or {}).items():
            for key, sm in [(OVERALL, v.get("overall") or {}), *(v.get("slices") or {}).items()]:
                t = sm.get("threshold") or {}
                rows.append({"verifier": vid, "slice": key, "threshold": t.get("value"), "source": t.get("source"),
                             "target": t.get("target"), "warning": t.get("warning"),
                             **{k: t.get(k) for k in ("kind", "fallback_from", "degenerate") if k in t}})
        return pd.DataFrame(rows)

    def summary_rows(self) -> list[SummaryRow]:
        """`summary` as rows (what `verifybench run` prints at its end)."""
        return summary_rows(self.metrics_json)

    @cached_property
    def summary(self) -> pd.DataFrame:
        """One row per verifier, over all cases: AUROC with its 95% interval, the threshold and its source,
        test precision / recall / F1, p50 / p95 latency, errors (what `verifybench run` prints)."""
        import pandas as pd

        return pd.DataFrame(summary_rows(self.metrics_json))

    def _repr_html_(self) -> str:  # a notebook shows the summary
        from html import escape

        try:
            table = self.summary.to_html(index=False, na_rep="-", float_format=lambda x: f"{x:.3f}")
        except RunDirError as e:
            table = f"<p>{escape(str(e))}</p>"
        return f"<p><b>{escape(repr(self))}</b></p>{table}<p>report: {escape(str(self.report_path))}</p>"

    # --- the commands that take a run ----------------------------------------------------------------------

    def compare(self, other: Run | str | Path | None = None, verifiers: list[str] | None = None,
                refit: bool = False) -> Comparison:
        """Paired comparison on the test split (`verifybench compare`): this run's verifiers pairwise, or
        each against the verifier of the same id in `other` (a run over the same cases), at this run's
        threshold on both sides, or at each run's own with `refit`."""
        from verifybench.gating.compare import compare

        return compare(self.run_dir, _dir(other) if other is not None else None, verifiers, refit=refit)

    def baseline(self, out: str | Path | None = None, policy: str | Path | None = None) -> Path:
        """Record this run as the baseline a gate compares to (`verifybench baseline`); returns its path."""
        from verifybench.gating.gate import baseline

        return baseline(self.run_dir, out=out, policy=policy)

    def gate(self, baseline: str | Path, max_drop: list[str] | None = None, max_rise: list[str] | None = None,
             min_cases: int | None = None, slices: str = "all", junit: str | Path | None = None,
             summary: str | Path | None = None, allow_batch_latency: bool = False) -> GateResult:
        """Gate this run against a baseline (`verifybench gate`); returns the `GateResult` (its
        `exit_code`), or raises `GateRefused` when the comparison is invalid."""
        from verifybench.gating.gate import gate
        from verifybench.metrics.settings import GATE_MIN_CASES

        return gate(self.run_dir, baseline, max_drop, max_rise, GATE_MIN_CASES if min_cases is None else min_cases,
                    slices, junit, summary, allow_batch_latency)

    def policy(self, by: str = "doc_type", target: str | None = None, min_per_class: int | None = None,
               out: str | Path | None = None) -> Policy:
        """Fit thresholds per slice (`verifybench thresholds`) and return the policy."""
        from verifybench.evaluation.reading import thresholds

        if target is None:
            return thresholds(self.run_dir, by=by, min_per_class=min_per_class, out=out)
        return thresholds(self.run_dir, by=by, target=target, min_per_class=min_per_class, out=out)

    def log(self, tracking_uri: str | None = None, experiment: str | None = None) -> Logged:
        """Log this run to MLflow (`verifybench log`)."""
        from verifybench.tracking.mlflow_store import log_run

        return log_run(self.run_dir, tracking_uri, experiment)

    def log_to_mlflow(self, tracking_uri: str | None = None, experiment: str | None = None) -> Logged:
        """Deprecated name of `log`."""
        import warnings

        warnings.warn("Run.log_to_mlflow is deprecated; use Run.log (the CLI command's name)", DeprecationWarning,
                      stacklevel=2)
        return self.log(tracking_uri, experiment)

    def report(self) -> Path:
        """Recompute metrics.json and re-render report.html (`verifybench report`), then reload."""
        from verifybench.pipeline.finish import report

        path = report(self.run_dir)
        self.reload()
        return path

    def finish(self) -> Path:
        """Deprecated name of `report`."""
        import warnings

        warnings.warn("Run.finish is deprecated; use Run.report (the CLI command's name)", DeprecationWarning,
                      stacklevel=2)
        return self.report()


def _deprecated(old: str, new: str) -> None:
    import warnings

    warnings.warn(f"Run.{old} is deprecated; use Run.{new}", DeprecationWarning, stacklevel=3)


def _dir(run: Run | str | Path) -> Path:
    return run.run_dir if isinstance(run, Run) else Path(run)


def load_run(run_dir: str | Path) -> Run:
    """Open an existing run directory (any status) as a `Run`."""
    return Run(run_dir)
