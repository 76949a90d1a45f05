"""Verdicts out: the guard's decisions and a run's verdicts as OpenTelemetry gen_ai.evaluation.result
events, through the real SDK and its OTLP/HTTP exporter, to a real OTLP receiver on 127.0.0.1 that
decodes them with opentelemetry-proto."""

from __future__ import annotations

import json
import threading
import time

import httpx
import pytest
import yaml
from typer.testing import CliRunner

from helpers.guard_verifiers import demo_cases, fit_demo_policy
from helpers.otlp_receiver import Receiver
from helpers.traces import write_rag_traces
from verifybench import api
from verifybench.cli import app
from verifybench.guard import Guard
from verifybench.suite import parse_suite
from verifybench.tracking.otel_events import configured, evaluation_attributes

OTEL_VARS = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT", "OTEL_SDK_DISABLED",
             "OTEL_SERVICE_NAME", "OTEL_EXPORTER_OTLP_HEADERS")


@pytest.fixture(autouse=True)
def _no_otel_env(monkeypatch):
    for v in OTEL_VARS:
        monkeypatch.delenv(v, raising=False)


@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    base = tmp_path_factory.mktemp("otel")
    suite, run, policy = fit_demo_policy(base, verifiers=["rouge"])
    return {"base": base, "policy": policy, "run": run}


def _guard_file(tmp_path, policy, **telemetry):
    path = tmp_path / "guard.yaml"
    path.write_text(yaml.safe_dump({"policy": str(policy), **({"telemetry": telemetry} if telemetry else {})}))
    return path


def _item(c):
    return {"response": c["response"], "sources": c["sources"], "question": c.get("question"),
            "doc_type": c.get("doc_type"), "request_id": c["id"]}


def test_off_by_default_on_by_the_standard_variables_or_the_guard_file(fitted, tmp_path, monkeypatch):
    with Guard(_guard_file(tmp_path, fitted["policy"]), log_dir=False) as g:
        assert g.telemetry is None
    assert not configured({}) and configured({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1"})
    assert not configured({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x", "OTEL_SDK_DISABLED": "true"})
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_LOGS_ENDPOINT", "http://127.0.0.1:9/v1/logs")
    with Guard(_guard_file(tmp_path, fitted["policy"]), log_dir=False) as g:
        assert g.telemetry is not None and g.telemetry.sink.endpoint == "http://127.0.0.1:9/v1/logs"
    with Guard(_guard_file(tmp_path, fitted["policy"], otlp=False), log_dir=False) as g:
        assert g.telemetry is None
    # telemetry is not part of what decides: the guard's hash stays the same
    with Guard(_guard_file(tmp_path, fitted["policy"], otlp=False), log_dir=False) as a, \
            Guard(_guard_file(tmp_path, fitted["policy"]), log_dir=False) as b:
        assert a.hash == b.hash


def test_each_decision_is_an_evaluation_event_with_its_provenance(fitted, tmp_path):
    cases = demo_cases()[:40]
    with Receiver() as r:
        with Guard(_guard_file(tmp_path, fitted["policy"], otlp=True, endpoint=r.endpoint), log_dir=False) as g:
            decisions = [g.check(**_item(c), meta={"response_id": "chatcmpl-7"} if i == 0 else None)
                         for i, c in enumerate(cases)]
            hashes = {c.id: c.verifier.config_hash for c in g.checks}
        events = r.events(len(cases))  # closing the guard flushed the batch
    assert len(events) == len(cases) == r.records.__len__()
    assert {e["event_name"] for e in events} == {"gen_ai.evaluation.result"}
    assert events[0]["resource"]["service.name"] == "verifybench-guard"
    by_id = {e["attributes"]["verifybench.decision_id"]: e["attributes"] for e in events}
    flagged = 0
    for i, d in enumerate(decisions):
        a, check = by_id[d.id], d.checks[0]
        assert a["gen_ai.evaluation.name"] == "verifybench.rouge"
        assert a["gen_ai.evaluation.score.value"] == pytest.approx(check.score)
        assert a["gen_ai.evaluation.score.label"] == ("flagged" if check.flagged else "not_flagged")
        assert a["gen_ai.evaluation.explanation"] == f"flagged when score >= {check.threshold:.6g} ({check.native})"
        assert a["gen_ai.response.id"] == ("chatcmpl-7" if i == 0 else d.id)
        assert a["verifybench.config_hash"] == hashes["rouge"] and a["verifybench.policy_hash"] == d.policy_hash
        assert a["verifybench.threshold"] == pytest.approx(check.threshold)
        assert a["verifybench.threshold_source"] == check.threshold_source and a["verifybench.slice"] == check.slice
        assert a["verifybench.action"] == d.action and a["verifybench.request_id"] == d.request_id
        flagged += check.flagged
    assert 0 < flagged < len(cases)  # both labels were seen
    assert all(e["trace_id"] == "" for e in events)  # no trace context came with these


def test_an_active_span_in_process_parents_the_events(fitted, tmp_path):
    from opentelemetry.sdk.trace import TracerProvider

    tracer = TracerProvider().get_tracer("app")
    with Receiver() as r:
        with Guard(_guard_file(tmp_path, fitted["policy"], otlp=True, endpoint=r.endpoint), log_dir=False) as g:
            with tracer.start_as_current_span("chat gpt-4o") as span:
                g.check(**_item(demo_cases()[0]))
                ctx = span.get_span_context()
        [event] = r.events(1)
    assert (event["trace_id"], event["span_id"]) == (f"{ctx.trace_id:032x}", f"{ctx.span_id:016x}")


def test_the_service_joins_the_callers_trace_from_its_traceparent(fitted, tmp_path):
    """A real uvicorn on 127.0.0.1: a request with a W3C traceparent gets events in that trace, under that
    span; a request without one, events without a trace."""
    import socket

    import uvicorn

    from verifybench.guard.service import create_app

    trace_id, parent = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
    with Receiver() as r, Guard(_guard_file(tmp_path, fitted["policy"], otlp=True, endpoint=r.endpoint),
                                log_dir=tmp_path / "log") as g:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        server = uvicorn.Server(uvicorn.Config(create_app(g), host="127.0.0.1", port=port, log_level="warning",
                                               access_log=False))
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        try:
            deadline = time.time() + 30
            while not server.started and time.time() < deadline:
                time.sleep(0.05)
            with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as client:
                c = demo_cases()
                one = client.post("/v1/check", json=_item(c[0]),
                                  headers={"traceparent": f"00-{trace_id}-{parent}-01"}).json()
                two = client.post("/v1/check", json=_item(c[1])).json()
                batch = client.post("/v1/check/batch", json={"items": [_item(c[2]), _item(c[3])]},
                                    headers={"traceparent": f"00-{trace_id}-{parent}-01"}).json()
        finally:
            server.should_exit = True
            thread.join(10)
        g.telemetry.sink.flush()
        events = {e["attributes"]["verifybench.decision_id"]: e for e in r.events(4)}
    assert (events[one["id"]]["trace_id"], events[one["id"]]["span_id"]) == (trace_id, parent)
    assert events[two["id"]]["trace_id"] == ""
    assert all(events[d["id"]]["trace_id"] == trace_id for d in batch["decisions"])
    # the decision log is still the durable record
    assert len((tmp_path / "log").glob("decisions-*.jsonl").__next__().read_text().splitlines()) == 4


def test_a_runs_verdicts_are_events_on_the_spans_they_judge(tmp_path):
    """`verifybench log RUN --otlp`: a run over traces sends one event per verdict, parented to the span
    the case was read from; its scores are the run's."""
    write_rag_traces(tmp_path / "traces.jsonl")
    suite = parse_suite({"name": "prod", "dataset": {"loader": "otlp", "path": str(tmp_path / "traces.jsonl")},
                         "verifiers": ["rouge", "bleu"]}, tmp_path, where=str(tmp_path / "prod.yaml"))
    run = api.run(suite, out=tmp_path / "run", progress=False)
    with Receiver() as r:
        out = CliRunner().invoke(app, ["log", str(tmp_path / "run"), "--otlp", r.endpoint])
        assert out.exit_code == 0, out.output
        assert "6 gen_ai.evaluation.result events sent to" in out.output
        events = r.events(6)
    assert len(events) == 6
    verdicts = run.verdicts.set_index(["case_id", "verifier"])
    for e in events:
        a = e["attributes"]
        vid = a["verifybench.check"]
        assert f"{e['trace_id']}:{e['span_id']}" == a["verifybench.case_id"]  # the span the case came from
        assert a["gen_ai.evaluation.score.value"] == pytest.approx(verdicts.loc[(a["verifybench.case_id"], vid), "score"])
        assert a["gen_ai.evaluation.name"] == f"verifybench.{vid}" and a["verifybench.run"] == "run"
        assert "gen_ai.evaluation.score.label" not in a  # three unlabeled cases: no threshold, no judgement
        assert a["gen_ai.evaluation.explanation"].startswith("no threshold applies")
        assert a["gen_ai.response.id"].startswith("resp-")


def test_event_attributes_leave_out_what_is_unknown_and_name_errors():
    a = evaluation_attributes("nli", None, None, 0.5, "weakest unit's entailment probability <= 0.5", "r1",
                              error="verifier timed out after 2000 ms", provenance={"slice": "billing"})
    assert a == {"gen_ai.evaluation.name": "verifybench.nli",
                 "gen_ai.evaluation.explanation": "the check failed: verifier timed out after 2000 ms",
                 "gen_ai.response.id": "r1", "error.type": "timeout", "verifybench.check": "nli",
                 "verifybench.threshold": 0.5, "verifybench.slice": "billing"}
    json.dumps(a)
