"""The LLM layer (verifiers/llm) against real HTTP servers on 127.0.0.1 (tests/helpers/fake_llm.py speaks
the OpenAI and Anthropic wire formats): one retry policy for every caller, the replay cache, JSON
extraction, usage and cost, and no credential in any error text or any file a run writes."""

from __future__ import annotations

import hashlib
import json

import pytest

from helpers.fake_llm import Drop, Echo, Raw, Stall
from verifybench import api
from verifybench.cases import Case, Source
from verifybench.suite import parse_suite
from verifybench.verifiers import build
from verifybench.verifiers.llm import (
    AnthropicBackend,
    GaveUp,
    LLMClient,
    LLMOptions,
    MalformedReply,
    OpenAICompatible,
    ProviderError,
    ReplayMiss,
    RetryPolicy,
    Usage,
    json_object,
    scrub,
    track_usage,
    try_json_object,
)
from verifybench.verifiers.llm.scrub import register_secret

MESSAGES = [{"role": "user", "content": "Say hi as JSON."}]


class Sleeps(list):
    """The retry policy's waits, recorded instead of slept."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)


def openai_client(server, retries=3, **kw) -> tuple[LLMClient, Sleeps]:
    sleeps = Sleeps()
    backend = OpenAICompatible("m", server.base_url, api_key_env="VB_TEST_NO_SUCH_KEY")
    return LLMClient(backend, RetryPolicy(retries, backoff_s=0.5, max_backoff_s=4.0), sleep=sleeps, **kw), sleeps


# --- JSON in a reply -------------------------------------------------------------------------------------

@pytest.mark.parametrize("text, expected", [
    ('{"a": 1}', {"a": 1}),
    ('Sure! Here it is:\n```json\n{"a": {"b": [1, 2]}}\n```\nAnything else?', {"a": {"b": [1, 2]}}),
    ('{"final": "x"} and then {"tool": "y"}', {"final": "x"}),  # the first complete object
    ('a set {1, 2} first, then {"a": 2}', {"a": 2}),  # a brace that starts no object is skipped
    ('{"claim": "line one\nline two"}', {"claim": "line one\nline two"}),  # raw newline inside a string
])
def test_json_object_finds_the_object_a_model_wrapped(text, expected):
    assert json_object(text) == expected


@pytest.mark.parametrize("text, message", [
    ("no json here", "no JSON object"),
    ("[1, 2, 3]", "JSON but not an object"),
    ('{"a": 1', "no complete JSON object"),
])
def test_json_object_says_why_there_is_none(text, message):
    with pytest.raises(ValueError, match=message):
        json_object(text)
    assert try_json_object(text) is None


# --- retries --------------------------------------------------------------------------------------------

def test_429_5xx_and_a_non_json_200_are_retried_with_backoff_and_counted(fake):
    server = fake([429, 503, Raw(200, "<html>upstream error</html>", "text/html"),
                   Raw(200, '{"id": "x", "choi', "application/json"), '{"ok": true}'])
    client, sleeps = openai_client(server, retries=4)
    usage = Usage()
    data, completion = client.complete_json(MESSAGES, usage=usage)
    assert data == {"ok": True} and len(server.requests) == 5
    assert (usage.requests, usage.retries, usage.failures) == (5, 4, 0)
    assert (usage.input_tokens, usage.output_tokens) == (100, 20)
    # Full jitter: wait n is drawn from [0, min(max_backoff_s, backoff_s * 2**(n-1))].
    assert len(sleeps) == 4 and all(0 <= s <= min(4.0, 0.5 * 2 ** i) for i, s in enumerate(sleeps))


def test_a_timeout_and_a_dropped_connection_are_retried(fake):
    server = fake([Stall(1.5), Drop(), '{"a": 1}'])
    client, sleeps = openai_client(server, timeout_s=0.3)
    usage = Usage()
    assert client.complete_json(MESSAGES, usage=usage)[0] == {"a": 1}
    assert (usage.requests, usage.retries) == (3, 2) and len(sleeps) == 2


def test_retry_after_from_the_server_is_honoured_up_to_the_cap(fake):
    server = fake([Raw(429, '{"error": {"message": "slow down"}}', headers={"retry-after": "2"}),
                   Raw(503, '{"error": {"message": "busy"}}', headers={"retry-after-ms": "60000"})])
    client, sleeps = openai_client(server)
    assert client.complete(MESSAGES).text  # the default reply after the 429 and the 503
    assert sleeps == [2.0, 4.0]  # the server's own wait, capped at max_backoff_s


def test_gives_up_with_the_count_and_does_not_retry_a_4xx(fake):
    server = fake([500, 502, 500])
    client, _ = openai_client(server, retries=2)
    usage = Usage()
    with pytest.raises(GaveUp, match="gave up after 3 attempts: HTTP 500"):
        client.complete(MESSAGES, usage=usage)
    assert (usage.requests, usage.retries, usage.failures) == (3, 2, 1)
    server2 = fake([404])
    client2, sleeps = openai_client(server2)
    with pytest.raises(ProviderError, match="NotFoundError"):
        client2.complete(MESSAGES)
    assert len(server2.requests) == 1 and sleeps == []


def test_anthropic_backend_is_retried_the_same_way(fake, monkeypatch):
    monkeypatch.setenv("VB_TEST_ANTHROPIC", "sk-ant-test-key-000")
    server = fake([529, Raw(200, "not json", "application/json"), '{"hallucinated": false}'])
    sleeps = Sleeps()
    client = LLMClient(AnthropicBackend("claude-x", "VB_TEST_ANTHROPIC", server.root_url), RetryPolicy(3, 0.01, 0.02),
                       sleep=sleeps)
    usage = Usage()
    data, _ = client.complete_json(MESSAGES, usage=usage)
    assert data == {"hallucinated": False} and usage.retries == 2 and usage.output_tokens == 20
    assert server.paths[-1] == "/v1/messages" and "sk-ant-test-key-000" in json.dumps(server.headers[-1])
    assert "temperature" not in server.requests[-1] or _anthropic_takes_temperature()


def _anthropic_takes_temperature() -> bool:
    from verifybench.verifiers.llm.providers import _takes_temperature

    return _takes_temperature()


def test_complete_json_repairs_once_then_fails_counted(fake):
    server = fake(["Sure thing!", '{"a": 1}', "nope", "still nope"])
    client, _ = openai_client(server)
    usage = Usage()
    assert client.complete_json(MESSAGES, usage=usage)[0] == {"a": 1} and usage.repairs == 1
    assert server.requests[1]["messages"][-2] == {"role": "assistant", "content": "Sure thing!"}
    with pytest.raises(MalformedReply, match="after one repair"):
        client.complete_json(MESSAGES, usage=usage)
    assert usage.repairs == 2 and usage.requests == 4


# --- replay cache ----------------------------------------------------------------------------------------

def test_cache_replays_and_replay_only_never_makes_the_backend(fake, tmp_path):
    server = fake(['{"a": 1}'])
    client, _ = openai_client(server, cache_dir=str(tmp_path))
    first = client.complete(MESSAGES, seed=3)
    usage = Usage()
    again = client.complete(MESSAGES, seed=3, usage=usage)
    assert again.text == first.text and len(server.requests) == 1
    assert usage.cache_hits == 1 and usage.requests == 0 and usage.input_tokens == 100  # a replay costs what it cost

    def no_backend():
        raise AssertionError("a replay-only client must not make its backend")
    replay = LLMClient(no_backend, cache_dir=str(tmp_path), replay_only=True, key_kind="openai", key_model="m")
    assert replay.complete(MESSAGES, seed=3).text == first.text
    with pytest.raises(ReplayMiss, match="replay-only: no cached completion"):
        replay.complete(MESSAGES, seed=4)


def test_a_judge_cache_written_before_the_llm_layer_still_replays(tmp_path):
    """The key recipe is a file format: spelled out here as the judge has always computed it."""
    from verifybench.verifiers.judge.verifier import VERDICT_SCHEMA

    v = build("judge", backend="openai", model="gpt-x", cache_dir=str(tmp_path), replay_only=True, samples=1)
    c = Case(id="c", dataset="t", question="Q?", response="R.", label=True, sources=[Source(id="s", text="S.")])
    messages = v.messages(c)
    params = {"temperature": 0.0, "max_tokens": 160, "seed": 0, "logprobs": True, "json_mode": True,
              "schema": VERDICT_SCHEMA}
    blob = json.dumps({"backend": "openai", "model": "gpt-x", "messages": messages, "params": params, "sample": 0},
                      sort_keys=True, ensure_ascii=False)
    key = hashlib.sha256(blob.encode("utf-8")).hexdigest()
    (tmp_path / key[:2]).mkdir()
    (tmp_path / key[:2] / f"{key}.json").write_text(json.dumps(
        {"text": '{"hallucinated": true, "probability": 0.8, "claim": "", "reason": "r"}', "logprobs": None,
         "input_tokens": 7, "output_tokens": 3}))
    verdict = v.verify([c])[0]
    assert verdict.error is None and verdict.score == pytest.approx(0.8) and verdict.usage["cache_hits"] == 1


# --- the callers: compliance extractor and graph agent ---------------------------------------------------

COMPLIANCE_REPLY = json.dumps({"ingredient_name": "beta-carotene", "prohibited_processing_aids": ["pork gelatin"],
                               "carrier_restrictions": ["plant glycerol", "sunflower lecithin"],
                               "required_lab_tests": [], "max_threshold_ppm": 0.1, "threshold_analyte": "animal DNA"})


def compliance_case() -> Case:
    return Case(id="c1", dataset="t", question="Is beta-carotene lot L-1 compliant?", label=False,
                response="Lot L-1 is compliant.",
                meta={"ingredient": "beta-carotene", "lot_id": "L-1", "ingredient_code": "BC-204"})


def write_corpus(tmp_path):
    docs = [{"id": "STD", "doc_type": "standard", "metadata": {"ingredient_code": "BC-204"},
             "text": "Requirements for beta-carotene (ingredient code BC-204).\n"
                     "Prohibited processing aids: pork gelatin.\nPermitted carriers: plant glycerol, sunflower lecithin."},
            {"id": "COA-L-1", "doc_type": "CoA", "metadata": {"lot_id": "L-1", "ingredient_code": "BC-204"},
             "text": "Certificate of analysis (CoA). beta-carotene, lot L-1.\nCarrier: sunflower lecithin.\n"
                     "Processing aids: none.\nResults:\n- animal DNA (PCR): 0.02 mg/kg"}]
    path = tmp_path / "corpus.jsonl"
    path.write_text("\n".join(json.dumps(d) for d in docs) + "\n")
    return path


def test_a_429_no_longer_fails_a_compliance_case(fake, tmp_path):
    server = fake([429, COMPLIANCE_REPLY])
    v = build("compliance", corpus=str(write_corpus(tmp_path)), dense=False, extractor="llm",
              llm={"backend": "openai", "model": "m", "base_url": server.base_url, "backoff_s": 0.01,
                   "max_backoff_s": 0.02, "prices": {"input_per_1m": 1.0, "output_per_1m": 2.0}})
    verdict = v.verify([compliance_case()])[0]
    assert verdict.error is None, verdict.error
    assert verdict.detail["criteria"]["prohibited_processing_aids"] == ["pork gelatin"]
    assert verdict.usage["requests"] == 2 and verdict.usage["retries"] == 1 and verdict.usage["input_tokens"] == 100
    assert verdict.cost_usd == pytest.approx((100 * 1.0 + 20 * 2.0) / 1e6)


def test_a_429_no_longer_fails_the_graph_agent(fake):
    from verifybench.verifiers.graph.agent import TwoGateAgent

    server = fake([429, 503, json.dumps({"final": "Nothing to check: no refund facts stated."})])
    backend = OpenAICompatible("m", server.base_url, api_key_env="VB_TEST_NO_SUCH_KEY")
    client = LLMClient(backend, RetryPolicy(3, 0.01, 0.02))
    # The model answers without a tool call, so the loop never reaches the knowledge graph.
    result = TwoGateAgent(client, checker=None).run("Hello?")
    assert result.stopped == "final" and result.answer.startswith("Nothing to check")
    assert result.usage.retries == 2 and result.usage.requests == 3


def test_track_usage_collects_calls_made_deeper_down(fake):
    server = fake(['{"a": 1}', '{"b": 2}'])
    client, _ = openai_client(server)
    with track_usage() as outer:
        client.complete(MESSAGES)
        with track_usage() as inner:
            client.complete(MESSAGES, seed=1)
    assert outer.requests == 2 and inner.requests == 1 and outer.input_tokens == 200


# --- no secret in any file -------------------------------------------------------------------------------

KEYS = {"OPENAI_API_KEY": "sk-proj-OPENAI-SECRET-0123456789abcdef",
        "ANTHROPIC_API_KEY": "sk-ant-api03-ANTHROPIC-SECRET-0123456789",
        "VB_COMPLIANCE_KEY": "sk-COMPLIANCE-SECRET-0123456789abcdef",
        "TYPESAFE_API_KEY": "ts-TYPESAFE-SECRET-0123456789abcdef"}


def test_scrub_removes_registered_keys_and_header_values():
    register_secret("sk-registered-0123456789")
    text = ("{'Authorization': 'Bearer sk-registered-0123456789', 'x-api-key': 'never-registered-987', "
            '"api-key": "azure-key-555555"} at https://user:hunter2hunter2@proxy.example/v1; '
            "Authorization: Bearer tok_abcdef123456")
    out = scrub(text)
    for secret in ("sk-registered-0123456789", "never-registered-987", "azure-key-555555", "hunter2hunter2",
                   "tok_abcdef123456"):
        assert secret not in out
    assert "Bearer [redacted]" in out and "x-api-key': '[redacted]'" in out
    assert scrub("The authorization server is down") == "The authorization server is down"


def test_no_key_in_any_file_when_servers_echo_the_headers(fake, tmp_path, monkeypatch, root):
    for name, value in KEYS.items():
        monkeypatch.setenv(name, value)
    server = fake([], default=Echo(400))  # every request: a 400 whose body quotes the request's headers
    suite = parse_suite({
        "name": "echo",
        "dataset": {"loader": "jsonl", "path": str(root / "datasets/compliance/cases.jsonl"), "name": "compliance",
                    "limit": 3, "fields": {"id": "id", "response": "response", "sources": "sources",
                                           "question": "question", "label": "label", "doc_type": "doc_type"}},
        "verifiers": [
            {"judge": {"backend": "openai", "model": "m", "base_url": server.base_url, "cache_dir": str(tmp_path / "c")}},
            {"judge": {"id": "judge-claude", "backend": "anthropic", "model": "claude-x", "base_url": server.root_url,
                       "cache_dir": str(tmp_path / "c")}},
            {"compliance": {"corpus": str(root / "datasets/compliance/corpus.jsonl"), "dense": False,
                            "extractor": "llm", "llm": {"model": "m", "base_url": server.base_url,
                                                        "api_key_env": "VB_COMPLIANCE_KEY"}}},
            {"decision": {"backend": "typesafe", "base_url": server.root_url, "retries": 0}},
            "rouge",
        ]}, tmp_path)
    api.run(suite, out=tmp_path / "run", progress=False)
    # Every key was really sent, and the server really sent it back...
    sent = " ".join(json.dumps(h) for h in server.headers)
    assert all(value in sent for value in KEYS.values())
    verdicts = [json.loads(line) for line in (tmp_path / "run/results.jsonl").read_text().splitlines()]
    errors = {v["verifier"]: v["error"] for v in verdicts if v.get("error")}
    assert set(errors) == {"judge", "judge-claude", "compliance", "decision"}
    assert all("[redacted]" in e for e in errors.values()), errors
    # ...and it is in no file of the run (results, errors, report, the decision audit log) nor the cache.
    files = [f for folder in (tmp_path / "run", tmp_path / "c") for f in folder.rglob("*") if f.is_file()]
    assert {"results.jsonl", "errors.jsonl", "report.html"} <= {f.name for f in files}
    for f in files:
        text = f.read_text(errors="ignore")
        for name, value in KEYS.items():
            assert value not in text, f"{name} in {f}"


def test_agent_errors_are_scrubbed(fake, monkeypatch):
    from verifybench.verifiers.graph.agent import TwoGateAgent

    monkeypatch.setenv("VB_AGENT_KEY", "sk-AGENT-SECRET-0123456789")
    server = fake([], default=Echo(401))
    agent = TwoGateAgent(OpenAICompatible("m", server.base_url, api_key_env="VB_AGENT_KEY"), checker=None)
    with pytest.raises(ProviderError) as raised:
        agent.run("Hello?")
    assert "sk-AGENT-SECRET" in json.dumps(server.headers) and "sk-AGENT-SECRET" not in str(raised.value)
    assert "AuthenticationError" in str(raised.value)


def test_llm_options_keep_operational_fields_out_of_the_hash(tmp_path):
    a = build("compliance", corpus="x.jsonl", extractor="llm", llm={"model": "m"})
    b = build("compliance", corpus="x.jsonl", extractor="llm",
              llm={"model": "m", "timeout_s": 5, "retries": 9, "cache_dir": str(tmp_path), "replay_only": True})
    c = build("compliance", corpus="x.jsonl", extractor="llm", llm={"model": "other"})
    assert a.config_hash == b.config_hash != c.config_hash
    assert "timeout_s" not in a.config["llm"] and a.config["llm"]["model"] == "m"
    assert LLMOptions(model="m").client().key_kind == "openai"
