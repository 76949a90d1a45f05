"""The guard's decisions as OpenTelemetry `gen_ai.evaluation.result` events, when configured.

Off by default: on with the guard file's `telemetry: {otlp: true}`, or when the standard
`OTEL_EXPORTER_OTLP_ENDPOINT` / `OTEL_EXPORTER_OTLP_LOGS_ENDPOINT` is set (`otlp: false` keeps it off).
Each check that ran gives one event (`tracking.otel_events` owns the format), parented to the current
OpenTelemetry context: the caller's active span in process, or the W3C `traceparent` a request to the
service carried (`request_context`). Emitting only queues an event for the SDK's batching exporter; a
failure to queue is counted (`dropped`), never raised into a decision, and the decision log stays the
durable record.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from verifybench.guard.spec import GuardError, TelemetrySpec
from verifybench.tracking.otel_events import EventSink, TelemetryError, configured, evaluation_attributes


class GuardTelemetry:
    def __init__(self, sink: EventSink, config_hashes: dict[str, str]):
        self.sink = sink
        self.config_hashes = config_hashes
        self.emitted = 0
        self.dropped = 0

    def decision(self, case: Any, d: Any) -> None:
        """Queue one event per check of decision `d` that ran (skipped checks give none)."""
        try:
            response_id = case.meta.get("response_id") or d.id
            for r in d.checks:
                if r.skipped is not None:
                    continue
                self.sink.emit(evaluation_attributes(
                    r.verifier, r.score, r.flagged, r.threshold, r.native, str(response_id), r.error,
                    {"config_hash": self.config_hashes.get(r.verifier), "policy_hash": d.policy_hash,
                     "guard_hash": d.guard_hash, "threshold_source": r.threshold_source, "slice": r.slice,
                     "decision_id": d.id, "request_id": d.request_id, "action": d.action, "mode": d.mode,
                     "doc_type": case.doc_type}))
                self.emitted += 1
        except Exception:  # noqa: BLE001 - telemetry never decides, and never fails a decision
            self.dropped += 1

    def close(self) -> None:
        self.sink.flush(5_000)
        self.sink.close()


def start(spec: TelemetrySpec, config_hashes: dict[str, str]) -> GuardTelemetry | None:
    """The guard's emitter, or None when telemetry is off."""
    on = spec.otlp if spec.otlp is not None else configured()
    if not on:
        return None
    try:
        return GuardTelemetry(EventSink(spec.endpoint, spec.service_name), config_hashes)
    except TelemetryError as e:
        raise GuardError(f"telemetry: {e}") from None


@contextmanager
def request_context(guard: Any, headers: Mapping[str, str]) -> Iterator[None]:
    """The W3C trace context a request carried (`traceparent`, `tracestate`), current while its decision
    is made, so the decision's events join the caller's trace. Nothing without telemetry or a header."""
    if getattr(guard, "telemetry", None) is None or not headers.get("traceparent"):
        yield
        return
    from opentelemetry import context
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    carrier = {k: headers[k] for k in ("traceparent", "tracestate") if headers.get(k)}
    token = context.attach(TraceContextTextMapPropagator().extract(carrier))
    try:
        yield
    finally:
        context.detach(token)
