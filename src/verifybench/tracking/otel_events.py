"""Verdicts out as OpenTelemetry `gen_ai.evaluation.result` events, the owner of that event's format.

The GenAI semantic conventions define the event (status: Development): a log record named
`gen_ai.evaluation.result` with `gen_ai.evaluation.name`, `gen_ai.evaluation.score.value`,
`gen_ai.evaluation.score.label`, `gen_ai.evaluation.explanation` and `gen_ai.response.id`, parented to
the span of the operation evaluated when there is one. verifybench writes one per check of a guard's
decision (`verifybench.guard.telemetry`) and one per verdict of a run (`verifybench log --otlp`):

- name `verifybench.<check id>`; score value: the check's score (higher = more likely hallucinated);
  score label: `flagged` or `not_flagged` at the threshold applied (none when no threshold applied);
  explanation: the threshold on the detector's own scale ("rouge1 precision <= 0.7");
- provenance as `verifybench.*` attributes: check, verifier, config hash, policy hash, threshold and
  where it came from, slice, and the guard's decision or the run's case;
- the trace context: the request's (the service reads a W3C `traceparent`), or the trace span a case
  was read from (`loader: otlp`), so a backend shows the score on the span it judges.

Events go through the OpenTelemetry SDK's batching processor and its OTLP/HTTP exporter (the `otel`
extra): `emit` only queues (a full queue drops, it never blocks), a background thread exports. The
endpoint is the standard `OTEL_EXPORTER_OTLP_LOGS_ENDPOINT` / `OTEL_EXPORTER_OTLP_ENDPOINT` (headers,
timeouts and TLS from the other `OTEL_EXPORTER_OTLP_*` variables), or one given here.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypedDict

from verifybench.errors import VerifybenchError

EVENT = "gen_ai.evaluation.result"
NAME = "gen_ai.evaluation.name"
SCORE_VALUE = "gen_ai.evaluation.score.value"
SCORE_LABEL = "gen_ai.evaluation.score.label"
EXPLANATION = "gen_ai.evaluation.explanation"
RESPONSE_ID = "gen_ai.response.id"
ERROR_TYPE = "error.type"
FLAGGED, NOT_FLAGGED = "flagged", "not_flagged"
ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_LOGS_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
INSTALL = "pip install 'verifybench[otel]'"


class TelemetryError(VerifybenchError):
    pass


def configured(env: Mapping[str, str] = os.environ) -> bool:
    """Whether the standard variables ask for OTLP export (an endpoint set, the SDK not disabled)."""
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    return any(env.get(v, "").strip() for v in ENDPOINT_VARIABLES)


def logs_url(endpoint: str) -> str:
    """An OTLP/HTTP base endpoint (`http://host:4318`) as its logs URL; a URL already ending in
    /v1/logs is kept, as `OTEL_EXPORTER_OTLP_LOGS_ENDPOINT` is."""
    e = endpoint.rstrip("/")
    return e if e.endswith("/v1/logs") else e + "/v1/logs"


def evaluation_attributes(check: str, score: float | None, flagged: bool | None, threshold: float | None,
                          native: str | None, response_id: str | None, error: str | None = None,
                          provenance: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """One event's attributes; None values are left out (OpenTelemetry refuses them)."""
    if error is not None:
        explanation = f"the check failed: {error[:300]}"
    elif threshold is None:
        explanation = "no threshold applies: the score is reported, not judged"
    else:
        rule = f"score >= {threshold:.6g}" + (f" ({native})" if native else "")
        explanation = f"flagged when {rule}"
    attrs: dict[str, Any] = {
        NAME: f"verifybench.{check}", SCORE_VALUE: None if score is None else float(score),
        SCORE_LABEL: None if flagged is None else FLAGGED if flagged else NOT_FLAGGED,
        EXPLANATION: explanation, RESPONSE_ID: response_id,
        ERROR_TYPE: None if error is None else ("timeout" if "timed out" in error else "verifier_error"),
        "verifybench.check": check, "verifybench.threshold": threshold,
    }
    for k, v in (provenance or {}).items():
        attrs[k if k.startswith("verifybench.") else f"verifybench.{k}"] = v
    return {k: v for k, v in attrs.items() if v is not None}


class EventSink:
    """A logger provider of its own (an app's global OpenTelemetry set-up is left alone) with a batching
    processor and the OTLP/HTTP log exporter."""

    def __init__(self, endpoint: str | None = None, service_name: str = "verifybench",
                 max_queue: int = 8192, delay_ms: int = 500):
        try:
            from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
            from opentelemetry.sdk._logs import LoggerProvider
            from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
            from opentelemetry.sdk.resources import Resource
        except ImportError as e:
            raise TelemetryError(f"OpenTelemetry export needs the SDK and its OTLP exporter ({e.name} is "
                                 f"missing): {INSTALL}") from None
        from importlib.metadata import PackageNotFoundError, version

        try:
            ours = version("verifybench")
        except PackageNotFoundError:
            ours = "0+unknown"
        # OTEL_SERVICE_NAME / OTEL_RESOURCE_ATTRIBUTES win over the default name, as the SDK has them win
        given = {} if os.environ.get("OTEL_SERVICE_NAME") else {"service.name": service_name}
        self.provider = LoggerProvider(resource=Resource.create(given))
        exporter = OTLPLogExporter(endpoint=logs_url(endpoint) if endpoint else None)
        self.endpoint = exporter._endpoint  # what it sends to, for messages
        self.provider.add_log_record_processor(BatchLogRecordProcessor(
            exporter, max_queue_size=max_queue, schedule_delay_millis=delay_ms,
            max_export_batch_size=min(512, max_queue)))
        self.logger = self.provider.get_logger("verifybench", ours)

    def emit(self, attributes: dict[str, Any], context: Any = None) -> None:
        """Queue one event (returns at once); `context` parents it (default: the current context)."""
        from opentelemetry._logs import SeverityNumber

        self.logger.emit(event_name=EVENT, attributes=attributes, context=context,
                         severity_number=SeverityNumber.INFO)

    def flush(self, timeout_ms: int = 10_000) -> bool:
        return bool(self.provider.force_flush(timeout_ms))

    def close(self) -> None:
        self.provider.shutdown()


def span_context(trace_id: Any, span_id: Any) -> Any:
    """An OpenTelemetry context whose parent is the span (hex ids) a case was read from; None when the
    ids are not a valid trace and span."""
    from opentelemetry import trace
    from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags

    try:
        t, s = int(str(trace_id), 16), int(str(span_id), 16)
    except (TypeError, ValueError):
        return None
    ctx = SpanContext(t, s, is_remote=True, trace_flags=TraceFlags(TraceFlags.SAMPLED))
    return trace.set_span_in_context(NonRecordingSpan(ctx)) if ctx.is_valid else None


class Exported(TypedDict):
    """What `export_run` sent (`verifybench log --otlp`)."""

    run: str
    events: int  # gen_ai.evaluation.result events, one per verdict
    endpoint: str


def export_run(run_dir: str | Path, endpoint: str | None = None, timeout_ms: int = 30_000) -> Exported:
    """Export a finished run's verdicts as events (`verifybench log RUN --otlp`), at the thresholds its
    metrics.json applies per slice (the slice's own, else the whole set's). A case read from a trace
    is parented to its span. Returns what was sent."""
    import numpy as np

    from verifybench.evaluation.policy import native_threshold
    from verifybench.evaluation.reading import POLICY
    from verifybench.formats import Manifest
    from verifybench.metrics.settings import OVERALL
    from verifybench.metrics.summary import frame, meta_fields
    from verifybench.rundir import METRICS, read_case_frame, read_cases_at, read_metrics, read_verdict_frame
    from verifybench.rundir.files import MANIFEST

    run_dir = Path(run_dir)
    stored = Manifest.read(run_dir / MANIFEST)
    if stored.status != "complete" or not (run_dir / METRICS).exists():
        raise TelemetryError(f"{run_dir}: not a finished run (status {stored.status!r}); finish it with "
                             f"`verifybench report {run_dir}` first")
    # read through their models; the events are computed from them as mappings (as written)
    manifest, metrics = stored.model_dump(exclude_unset=True), read_metrics(run_dir).model_dump(exclude_unset=True)
    by = str(metrics.get("by") or "doc_type")
    cases = read_case_frame(run_dir, meta=meta_fields(by))
    f = frame(cases, read_verdict_frame(run_dir), by, int(metrics.get("seed", 0)),
              float(metrics.get("test_fraction", 0.5)))
    rows = read_cases_at(run_dir, cases["offset"].to_numpy()[f["case_row"].to_numpy()]) if len(f) else []
    configs = {v["id"]: v for v in manifest.get("verifiers") or []}
    policy = run_dir / POLICY  # a policy applied to the run: its hash as the guard names it
    policy_hash = hashlib.sha256(policy.read_bytes()).hexdigest()[:16] if policy.exists() else None
    sink = EventSink(endpoint, service_name="verifybench")
    sent = 0
    try:
        for (vid, key, score, err, labeled), row in zip(
                f[["verifier", "slice", "score", "error", "labeled"]].itertuples(index=False, name=None), rows):
            m = (metrics.get("verifiers") or {}).get(str(vid)) or {}
            own = ((m.get("slices") or {}).get(str(key)) or {}).get("threshold") or {}
            whole = (m.get("overall") or {}).get("threshold") or {}
            t = own if own.get("value") is not None else whole
            thr = t.get("value")
            ok = isinstance(err, float) and np.isnan(err) or err is None
            s = None if not ok or score is None or np.isnan(score) else float(score)
            config = (configs.get(str(vid)) or {}).get("config") or {}
            meta = row.get("meta") or {}
            prov = {"verifier": config.get("name"), "config_hash": (configs.get(str(vid)) or {}).get("config_hash"),
                    "policy_hash": policy_hash,
                    "threshold_source": t.get("source"), "slice": str(key) if t is own else OVERALL,
                    "case_id": row["id"], "run": run_dir.name,
                    "suite": (manifest.get("suite") or {}).get("name"),
                    "label": None if not labeled else ("hallucinated" if row.get("label") else "faithful")}
            attrs = evaluation_attributes(
                str(vid), s, None if s is None or thr is None else s >= thr, thr,
                None if thr is None else native_threshold(config, thr), meta.get("response_id") or row["id"],
                None if ok else str(err), prov)
            sink.emit(attrs, span_context(meta.get("trace_id"), meta.get("span_id")) if meta.get("span_id") else None)
            sent += 1
        if not sink.flush(timeout_ms):
            raise TelemetryError(f"the events did not all reach {sink.endpoint} within {timeout_ms / 1000:g} s")
    finally:
        sink.close()
    return Exported(run=str(run_dir), events=sent, endpoint=sink.endpoint)
