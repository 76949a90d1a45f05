"""A run's labels and verdicts as MLflow 3 assessments (`verifybench log RUN --mlflow URI --assessments`).

MLflow attaches assessments to traces. Per case of the run:

- the trace: the case's own trace in MLflow when the case was read from one (`loader: otlp`, or an id
  `<trace id>:<span id>`) and the store holds it (MLflow names an OpenTelemetry trace `tr-<trace id>`),
  the assessment then on the span the case came from; otherwise a trace of the case that verifybench
  records (inputs: question and sources; outputs: the response; tagged `verifybench.case_id` and
  `verifybench.run_key`), linked to the MLflow run the run directory is logged as, found again when the
  run is logged again;
- its label, when it has one: an `Expectation` named `hallucinated` (True = hallucinated), source HUMAN
  (the reviewer, when a label queue recorded one);
- each verdict: a `Feedback` named `verifybench.<verifier>`, source CODE, value the score (higher = more
  likely hallucinated), rationale the threshold applied on the detector's own scale, metadata the
  threshold, whether it flags, its source and the verifier's config hash; an error verdict is a
  Feedback carrying the error.

Assessments already on a trace from this run directory (same name, source and run key) are not logged
twice. Labels reviewers log in MLflow come back as a labeled set through `loader: mlflow`
(`verifybench.loaders.mlflow_labels`). Each case costs a few store calls: a run of thousands of cases
takes minutes against a SQLite store.
"""

from __future__ import annotations

import re
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypedDict

from verifybench.loaders.mlflow_labels import CASE_TAG, all_traces
from verifybench.tracking.mlflow_store import (
    RUN_KEY_TAG,
    TrackingError,
    load_run_files,
    redact,
    resolve_uri,
    run_key,
)

LABEL = "hallucinated"  # the Expectation (and reviewers' Feedback) a label is
_TRACE_SPAN = re.compile(r"^([0-9a-f]{32}):([0-9a-f]{16})$")


@contextmanager
def _tracking_uri(uri: str):
    """MLflow's tracer exports to the global tracking URI: point it at `uri` while traces are made, then
    put back what was there, an unset URI as unset (setting it back to the URI it resolved to would pin
    it, and a later change of $MLFLOW_TRACKING_URI in this process would no longer count)."""
    import mlflow
    from mlflow.tracking._tracking_service import utils

    before = getattr(utils, "_tracking_uri", None)  # None: never set in this process
    mlflow.set_tracking_uri(uri)
    try:
        yield
    finally:
        mlflow.set_tracking_uri(before)  # type: ignore[arg-type]  # None: unset again (MLflow does the same)


def trace_of(case_id: str, meta: dict[str, Any]) -> tuple[str, str] | None:
    """(trace id, span id), hex, of a case read from a trace: from its meta, or from an id
    `<trace>:<span>` (a label queue's rows keep the id)."""
    t, s = meta.get("trace_id"), meta.get("span_id")
    if isinstance(t, str) and isinstance(s, str) and len(t) == 32 and len(s) == 16:
        return t, s
    m = _TRACE_SPAN.match(case_id)
    return (m.group(1), m.group(2)) if m else None


class Assessed(TypedDict):
    """What `log_assessments` logged (`verifybench log --assessments`)."""

    run: str
    mlflow_run: str
    experiment: str
    traces_created: int  # traces recorded for cases the app's traces do not hold
    on_existing_traces: int
    expectations: int  # labels
    feedback: int  # verdicts
    skipped: int  # already there


def log_assessments(run_dir: str | Path, tracking_uri: str | None = None, experiment: str | None = None
                    ) -> Assessed:
    """Log the run's labels and verdicts as assessments (see the module); the run directory is logged as
    an MLflow run first (or found, when logged before). Returns counts."""
    import mlflow
    from mlflow import MlflowClient
    from mlflow.exceptions import MlflowException

    from verifybench.tracking.mlflow_store import log_run

    run_dir = Path(run_dir)
    manifest, metrics = load_run_files(run_dir)
    logged = log_run(run_dir, tracking_uri, experiment)
    uri = resolve_uri(tracking_uri)
    key = run_key(manifest, run_dir)
    rows = _verdict_rows(run_dir, metrics, manifest)
    client = MlflowClient(uri)
    counts = {"traces_created": 0, "on_existing_traces": 0, "expectations": 0, "feedback": 0, "skipped": 0}
    try:
        with _tracking_uri(uri):
            targets = _targets(client, rows, logged.experiment_id, logged.run_id, key, counts)
            mlflow.flush_trace_async_logging()
            _assess(uri, client, rows, targets, key, counts)
    except MlflowException as e:
        raise TrackingError(f"MLflow ({redact(uri)}): {str(e).splitlines()[0][:300]}") from None
    return Assessed(run=str(run_dir), mlflow_run=logged.run_id, experiment=logged.experiment,
                    traces_created=counts["traces_created"], on_existing_traces=counts["on_existing_traces"],
                    expectations=counts["expectations"], feedback=counts["feedback"], skipped=counts["skipped"])


def _verdict_rows(run_dir: Path, metrics: dict[str, Any], manifest: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Per case: its index row and its verdicts with the threshold applied (the slice's, else the whole
    set's, as metrics.json has them)."""
    import numpy as np

    from verifybench.evaluation.policy import native_threshold
    from verifybench.metrics.summary import frame, meta_fields
    from verifybench.rundir import read_case_frame, read_cases_at, read_verdict_frame

    by = str(metrics.get("by") or "doc_type")
    cases = read_case_frame(run_dir, meta=meta_fields(by))
    out: dict[str, dict[str, Any]] = {r["id"]: {**r, "verdicts": []}
                                      for r in read_cases_at(run_dir, cases["offset"].to_numpy())}
    f = frame(cases, read_verdict_frame(run_dir), by, int(metrics.get("seed", 0)),
              float(metrics.get("test_fraction", 0.5)))
    configs = {v["id"]: v for v in manifest.get("verifiers") or []}
    for cid, vid, key, score, err in f[["case_id", "verifier", "slice", "score", "error"]].itertuples(
            index=False, name=None):
        m = (metrics.get("verifiers") or {}).get(str(vid)) or {}
        own = ((m.get("slices") or {}).get(str(key)) or {}).get("threshold") or {}
        t = own if own.get("value") is not None else (m.get("overall") or {}).get("threshold") or {}
        ok = err is None or (isinstance(err, float) and np.isnan(err))
        s = float(score) if ok and score is not None and not np.isnan(score) else None
        thr = t.get("value")
        config = configs.get(str(vid)) or {}
        out[str(cid)]["verdicts"].append({
            "verifier": str(vid), "score": s, "error": None if ok else str(err), "threshold": thr,
            "threshold_source": t.get("source"), "flagged": None if s is None or thr is None else s >= thr,
            "native": None if thr is None else native_threshold(config.get("config") or {}, thr),
            "config_hash": config.get("config_hash")})
    return out


def _targets(client, rows: dict[str, dict[str, Any]], experiment_id: str, run_id: str, key: str,
             counts: dict[str, int]) -> dict[str, tuple[str, str | None]]:
    """Per case: (MLflow trace id, span id or None) to assess."""
    from mlflow.exceptions import MlflowException

    mine = {t.info.tags.get(CASE_TAG): t.info.trace_id
            for t in all_traces(client, locations=[experiment_id], run_id=run_id, include_spans=False)
            if t.info.tags.get(RUN_KEY_TAG) == key}
    out: dict[str, tuple[str, str | None]] = {}
    for cid, row in rows.items():
        ts = trace_of(cid, row.get("meta") or {})
        if ts is not None:
            try:
                client.get_trace(f"tr-{ts[0]}")
                out[cid] = (f"tr-{ts[0]}", ts[1])
                counts["on_existing_traces"] += 1
                continue
            except MlflowException:
                pass  # not in this store: the case gets a trace of its own
        if cid in mine:
            out[cid] = (mine[cid], None)
            continue
        span = client.start_trace("verifybench case", span_type="LLM",
                                  inputs={"question": row.get("question"), "sources": row.get("sources") or []},
                                  tags={CASE_TAG: cid, RUN_KEY_TAG: key, "verifybench.doc_type": str(row.get("doc_type"))},
                                  experiment_id=experiment_id, run_id=run_id)
        client.end_trace(span.trace_id, outputs={"response": row.get("response")})
        out[cid] = (span.trace_id, None)
        counts["traces_created"] += 1
    return out


def _assess(uri: str, client, rows: dict[str, dict[str, Any]], targets: dict[str, tuple[str, str | None]],
            key: str, counts: dict[str, int]) -> None:
    from mlflow.entities import AssessmentError, AssessmentSource, Expectation, Feedback
    from mlflow.tracing.client import TracingClient

    tracing = TracingClient(uri)
    for cid, (trace_id, span_id) in targets.items():
        row = rows[cid]
        have = {(a.name, a.source.source_id) for a in client.get_trace(trace_id).info.assessments
                if (a.metadata or {}).get(RUN_KEY_TAG) == key and (a.metadata or {}).get(CASE_TAG) == cid}
        meta = {RUN_KEY_TAG: key, CASE_TAG: cid}
        new: list[Any] = []
        if row.get("label") is not None:
            reviewer = str((row.get("meta") or {}).get("reviewer") or "verifybench labels")
            if (LABEL, reviewer) not in have:
                new.append(Expectation(name=LABEL, value=bool(row["label"]), span_id=span_id, metadata=meta,
                                       source=AssessmentSource(source_type="HUMAN", source_id=reviewer)))
                counts["expectations"] += 1
        for v in row["verdicts"]:
            name, source = f"verifybench.{v['verifier']}", f"verifybench/{v['verifier']}"
            if (name, source) in have:
                counts["skipped"] += 1
                continue
            rule = None if v["threshold"] is None else f"flags when score >= {v['threshold']:.6g}" + (
                f" ({v['native']})" if v["native"] else "")
            new.append(Feedback(
                name=name, value=v["score"], span_id=span_id,
                error=None if v["error"] is None else AssessmentError(error_code="VERIFIER_ERROR",
                                                                      error_message=v["error"][:500]),
                rationale=None if rule is None else f"{rule}: {'flagged' if v['flagged'] else 'not flagged'}",
                source=AssessmentSource(source_type="CODE", source_id=source),
                metadata={**meta, **{k: str(v[k]) for k in ("flagged", "threshold", "threshold_source", "config_hash")
                                     if v[k] is not None}}))
            counts["feedback"] += 1
        for a in new:
            tracing.log_assessment(trace_id, a)
