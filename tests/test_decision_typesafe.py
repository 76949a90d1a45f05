"""The TypeSafe backend against recorded traffic in the API's format (tests/cassettes/typesafe).

The cassettes were written in System One's wire format by make_cassettes.py (the real SDK builds each
request; the answers are authored), not recorded from the live service. Replay is at the HTTP layer, so
the SDK's own encoding, validation and error mapping run; replay-only: a miss never reaches a network.
"""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import pytest
from cassettes.typesafe import scenarios

from verifybench.cases import Case, Source
from verifybench.verifiers import build
from verifybench.verifiers.decision.cassettes import ReplayTransport

CASSETTES = Path(__file__).parent / "cassettes" / "typesafe"


def verifier(tmp_path, **options):
    return build("decision", backend="typesafe", cassette_dir=str(CASSETTES), audit_dir=str(tmp_path),
                 retries=0, **options)


def by_id(verdicts):
    return {v.case_id: v for v in verdicts}


def test_cassettes_hold_no_credentials():
    for f in CASSETTES.glob("*.json"):
        text = f.read_text()
        assert "Bearer" not in text and "sk-" not in text and "authorization" not in text.lower(), f
        tape = json.loads(text)
        assert set(tape) == {"request", "response"}
        assert tape["request"]["path"] == "/v1/systemone"


def test_round_trip_scores_come_from_the_recorded_answers(tmp_path):
    cases = scenarios.cases()
    v = verifier(tmp_path, question="injection")
    verdict = v.verify([cases["filter"]])[0]
    assert verdict.error is None
    recorded = scenarios.ANSWERS["filter"]
    assert verdict.score == pytest.approx(max(recorded[f"u{i}_instructions"]["noul"] for i in range(1, 6)))
    by_key = {u.detail["key"]: u for u in verdict.units}
    assert by_key["u3"].detail["answers"]["contradiction"] == pytest.approx(recorded["u3_contradiction"]["noul"])
    assert by_key["u1"].detail["answers"]["relevance"] == pytest.approx(recorded["u1_relevance"]["score"] / 2)
    assert by_key["u5"].detail["kind"] == "tool_result"
    # The SDK really sent the request, with a bearer key, and the replay answered it from the cassette.
    assert v.backend.client._http_client._transport.inner is v.backend.transport  # counted, then replayed
    transport = v.backend.transport
    assert isinstance(transport, ReplayTransport)
    assert transport.requests[-1] == {"method": "POST", "path": "/v1/systemone", "authorized": True, "cassette": "filter.json"}
    assert v.backend.usage["input_tokens"] == scenarios.USAGE["input_tokens"]
    # The case's own tokens go on its verdict, and with the suite's prices, its cost.
    assert verdict.usage == {**{k: scenarios.USAGE[k] for k in ("input_tokens", "output_tokens")}, "requests": 1,
                             "retries": 0}
    priced = verifier(tmp_path, question="injection", prices={"input_per_1m": 2.0, "output_per_1m": 8.0})
    cost = priced.verify([cases["filter"]])[0].cost_usd
    assert cost == pytest.approx((scenarios.USAGE["input_tokens"] * 2.0 + scenarios.USAGE["output_tokens"] * 8.0) / 1e6)


def test_policy_on_recorded_answers(tmp_path):
    v = verifier(tmp_path, question="policy", policy={"context_budget_tokens": 55})
    verdict = v.verify([scenarios.cases()["filter"]])[0]
    action = {u.detail["key"]: u.status for u in verdict.units}
    assert action["u2"] == "drop"  # injected instruction
    assert action["u3"] == "flag"  # contradicts the premise: kept, marked
    assert action["u1"] == "keep"  # most relevant
    # u5 (relevance 0.83) outranks u4 (0.05); 55 tokens hold u3 (17), u1 (16) and u5 (19), not u4 (13) too.
    assert action["u5"] == "keep"
    assert action["u4"] == "trim"
    ranks = {u.detail["key"]: u.detail["rank"] for u in verdict.units}
    assert ranks["u3"] < ranks["u1"] < ranks["u5"] < ranks["u4"]


def test_citation_choice_and_escalation(tmp_path):
    v = verifier(tmp_path, question="citation")
    verdict = v.verify([scenarios.cases()["citations"]])[0]
    action = {u.detail["key"]: u.status for u in verdict.units}
    assert action == {"u1": "keep", "u2": "escalate"}
    assert verdict.score == pytest.approx(1 - 0.30)
    queue = [json.loads(line) for line in (tmp_path / "decision.escalations.jsonl").read_text().splitlines()]
    assert [e["unit_id"] for e in queue] == ["citations/u2"]
    assert queue[0]["claim"] == "Refunds are sent the same day they are approved."


@pytest.mark.parametrize("name, expected", [
    ("partial", "partial answer: no answer for u2_relevance"),
    ("out_of_range", "expected a probability in [0, 1], got 1.7"),
    ("no_usage", "TypeSafeAPIResponseValidationError"),
    ("server_error", "TypeSafeInternalServerError"),
])
def test_malformed_or_failed_answers_become_error_verdicts(tmp_path, name, expected):
    cases = scenarios.cases()
    verdicts = by_id(verifier(tmp_path).verify([cases["filter"], cases[name]]))
    assert verdicts["filter"].ok  # the other case of the batch is unaffected
    bad = verdicts[name]
    assert bad.score is None and expected in bad.error
    audit = [json.loads(line) for line in (tmp_path / "decision.audit.jsonl").read_text().splitlines()]
    assert {r["action"] for r in audit if r["case_id"] == name} == {"error"}


def test_replay_miss_is_an_error_not_a_call(tmp_path):
    case = Case(id="new", dataset="t", question="Unrecorded?", response="", label=False,
                sources=[Source(id="a", text="A passage no cassette has seen.")])
    verdict = verifier(tmp_path).verify([case])[0]
    assert "ReplayMiss" in verdict.error and "nothing was sent" in verdict.error


def test_missing_key_without_cassettes_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.delenv("TYPESAFE_API_KEY", raising=False)
    v = build("decision", backend="typesafe", audit_dir=str(tmp_path))
    verdict = v.verify([scenarios.cases()["filter"]])[0]
    assert "TYPESAFE_API_KEY" in verdict.error


def test_pickles_before_and_after_use(tmp_path):
    v = verifier(tmp_path)
    v.verify([scenarios.cases()["filter"]])
    clone = pickle.loads(pickle.dumps(v))
    assert clone.verify([scenarios.cases()["filter"]])[0].score == v.verify([scenarios.cases()["filter"]])[0].score


def test_a_non_json_200_is_retried_like_a_5xx(tmp_path, monkeypatch):
    """Against a real server on 127.0.0.1: a proxy's HTML page under a 200, then System One's answer."""
    from helpers.fake_llm import FakeLLM, Raw

    tape = json.loads((CASSETTES / "filter.json").read_text())
    server = FakeLLM([Raw(200, "<html>bad gateway</html>", "text/html"), Raw(200, json.dumps(tape["response"]["body"]))])
    try:
        monkeypatch.setenv("TYPESAFE_API_KEY", "ts-test-key-0123456789")
        v = build("decision", backend="typesafe", base_url=server.root_url, audit_dir=str(tmp_path), retries=2)
        verdict = v.verify([scenarios.cases()["filter"]])[0]
    finally:
        server.close()
    assert verdict.error is None and len(server.requests) == 2
    assert verdict.usage["requests"] == 2 and verdict.usage["retries"] == 1
    assert server.paths == ["/v1/systemone"] * 2


def test_each_case_is_timed_by_its_own_request(tmp_path):
    cases = scenarios.cases()
    v = verifier(tmp_path, question="injection")
    verdicts = v.verify([cases["filter"], cases["citations"]])
    for x in verdicts:
        assert x.ok and x.latency_kind == "case" and x.detail["latency_ms"]["batched_share"] == 0.0
        # its own request's time plus its own splitting and deciding, not a share of the batch's
        assert x.latency_ms >= v.backend.case_ms[x.case_id] > 0
