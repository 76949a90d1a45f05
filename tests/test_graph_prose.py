"""Claims from prose answers (`claims: from_response`): the pack's pattern extractor, the LLM extractor
through the LLM layer against a real OpenAI-compatible HTTP server on 127.0.0.1 (tests/helpers/fake_llm.py:
retries, repairs, usage and cost on the verdict, no key in any file of a run), and the agent loop's check
of its final prose against the grounded claims."""

from __future__ import annotations

import json

import pytest

from helpers.fake_llm import Echo, Raw
from verifybench import api
from verifybench.cases import Case
from verifybench.suite import parse_suite
from verifybench.verifiers.graph.agent import TwoGateAgent, check_answer
from verifybench.verifiers.graph.claims import gate1
from verifybench.verifiers.graph.pack import load_pack
from verifybench.verifiers.graph.prose import (
    LLMExtractor,
    RulesExtractor,
    claims_schema,
    sentences,
)
from verifybench.verifiers.graph.verifier import GraphVerifier
from verifybench.verifiers.llm import (
    Backend,
    Completion,
    LLMClient,
    OpenAICompatible,
    RetryPolicy,
)

PACK = load_pack("refunds")


def extract(text, question=None):
    return RulesExtractor(PACK).extract(text, question).claims


def test_sentences_keep_offsets_and_decimals():
    text = "You will receive $129.48. The money is returned as store credit!  Order A-91 is fine."
    spans = sentences(text)
    assert [text[a:b] for a, b in spans] == ["You will receive $129.48.", "The money is returned as store credit!",
                                             "Order A-91 is fine."]


def test_rules_extractor_reads_values_subjects_and_negations():
    text = ("As a GOLD customer, the GOLD terms apply to you. Order A-91 is not eligible for a refund. "
            "Shipping costs are not refunded. A restocking fee of $1,299.00 is deducted. Order A-92 is eligible "
            "for a refund. You will receive 45.50 EUR.")
    got = [(c["claim_type"], c["subject_id"], c["value"]) for c in extract(text)]
    assert got == [("customer_tier", "A-91", "GOLD"),  # no id in its sentence: the answer's first id
                   ("refund_eligible", "A-91", False), ("shipping_refundable", "A-91", False),
                   ("restocking_fee", "A-91", "$1,299.00"), ("refund_eligible", "A-92", True),
                   ("refund_amount", "A-92", "45.50 EUR")]  # the id named last carries on
    first = extract(text)[0]
    assert text[first["start"]:first["end"]] == first["evidence"] == "As a GOLD customer, the GOLD terms apply to you."
    # No id in the answer: the question's.
    assert extract("You will receive $10.00.", "What do I get for order A-7?")[0]["subject_id"] == "A-7"
    # Nothing the pack's patterns know: no claims, which gate 1 rejects ("grounds nothing").
    assert extract("Thanks for reaching out!") == []
    accepted, rejected = gate1(extract("Thanks for reaching out!"), PACK)
    assert not accepted and rejected[0].reason.startswith("no claims")


def test_a_pack_without_patterns_cannot_use_the_rules_extractor(tmp_path):
    from verifybench.verifiers.graph.pack import Pack

    bare = Pack(**{**PACK.__dict__, "extraction": None})
    with pytest.raises(ValueError, match="no extraction patterns"):
        RulesExtractor(bare)


def test_prose_verdicts_point_at_the_sentence(root):
    case = Case(id="p", dataset="d", label=True, question="What refund do I get for order A-5618?",
                response="As a SILVER customer, the SILVER terms apply to you. Order A-5618 is eligible for a refund. "
                         "You will receive $295.46. The money is returned as store credit.")
    (verdict,) = GraphVerifier(claims="from_response").verify([case])
    assert verdict.detail["claims_from"] == "response" and len(verdict.detail["extracted"]) == 4
    wrong = [u for u in verdict.units if u.status == "contradicted"]
    assert len(wrong) == 1 and case.response[wrong[0].start:wrong[0].end] == "You will receive $295.46."
    assert wrong[0].detail["expected"] == "295.64"  # the dataset's amount_digits_swapped case for this order


# --- the LLM extractor over HTTP ---------------------------------------------------------------------------

def llm_options(server, **kw) -> dict:
    """The verifier's `llm:` options for a server on 127.0.0.1, with retry waits short enough for a test."""
    return {"backend": "openai", "model": "tiny", "base_url": server.base_url, "api_key_env": "VERIFYBENCH_TEST_KEY",
            "backoff_s": 0.01, "max_backoff_s": 0.02, **kw}


GOOD = json.dumps({"claims": [
    {"claim_type": "refund_amount", "subject_id": "A-5618", "value": "295.64", "evidence": "You get $295.64."},
    {"claim_type": "eligible_for_refund", "subject_id": "A-5618", "value": True, "evidence": "Eligible."},
    {"claim_type": "refund_speed", "subject_id": "A-5618", "value": "fast", "evidence": "Fast."}]})


def test_llm_extractor_sends_the_schema_and_its_claims_go_through_gate_1(fake):
    # Case b's reply is prose, and so is the reply to the repair request; case c's is JSON without a
    # claims list twice; case d's first reply is prose and its repair the claims JSON.
    server = fake([GOOD, "Sure! The refund is fine.", "Still fine.", json.dumps({"facts": []}),
                   json.dumps({"facts": []}), "Here you go:", json.dumps({"claims": []})])
    backend = OpenAICompatible("tiny", server.base_url, api_key_env="VERIFYBENCH_TEST_KEY", schema_style="llamacpp")
    verifier = GraphVerifier(claims="from_response", extractor="llm")
    verifier._extractor = LLMExtractor(backend, PACK)
    case = Case(id="c", dataset="d", label=False, question="Refund for A-5618?", response="You get $295.64.")
    ok, not_json, no_list, repaired = verifier.verify([case.model_copy(update={"id": i}) for i in "abcd"])
    sent = server.requests[0]
    assert sent["response_format"]["type"] == "json_object"
    enum = sent["response_format"]["schema"]["properties"]["claims"]["items"]["properties"]["claim_type"]["enum"]
    assert enum == list(PACK.claims) and "refund_amount (an amount like 129.48)" in sent["messages"][0]["content"]
    assert "Answer: You get $295.64." in sent["messages"][1]["content"]
    # An alias is accepted; an unknown claim type is gate 1's rejection, with the reason; the rest is checked.
    assert [u.status for u in ok.units] == ["entailed", "entailed", "rejected"]
    assert "unknown claim type 'refund_speed'" in ok.units[2].evidence
    assert ok.units[1].detail["written_type"] == "eligible_for_refund"
    assert ok.usage["requests"] == 1 and ok.usage["input_tokens"] == 100 and ok.usage["output_tokens"] == 20
    # A reply that is not the claims JSON gets one repair request (the layer's); then it is a gate-1
    # rejection with its reason, not a crash or an error.
    assert server.requests[2]["messages"][-2] == {"role": "assistant", "content": "Sure! The refund is fine."}
    for verdict, reason in ((not_json, "not a JSON object"), (no_list, "no 'claims' list")):
        assert verdict.error is None and verdict.score == 1.0
        assert verdict.units[0].status == "rejected" and reason in verdict.units[0].evidence
        assert verdict.units[0].evidence.startswith("claim extraction:") and "after one repair" in verdict.units[0].evidence
        assert verdict.usage["requests"] == 2 and verdict.usage["repairs"] == 1
    assert repaired.units[0].status == "rejected" and "no claims" in repaired.units[0].evidence
    assert repaired.usage["repairs"] == 1 and len(server.requests) == 7


def test_a_429_is_retried_for_the_prose_extractor_and_counted_on_the_verdict(fake, tmp_path):
    server = fake([429, Raw(503, '{"error": {"message": "busy"}}', headers={"retry-after": "0.01"}), GOOD])
    prices = {"input_per_1m": 1.0, "output_per_1m": 2.0}
    verifier = GraphVerifier(claims="from_response", extractor="llm",
                             llm=llm_options(server, prices=prices, cache_dir=str(tmp_path / "cache")))
    case = Case(id="c", dataset="d", label=False, question="Refund for A-5618?", response="You get $295.64.")
    (verdict,) = verifier.verify([case])
    assert verdict.error is None and [u.status for u in verdict.units] == ["entailed", "entailed", "rejected"]
    assert len(server.requests) == 3
    assert (verdict.usage["requests"], verdict.usage["retries"], verdict.usage["failures"]) == (3, 2, 0)
    assert verdict.cost_usd == pytest.approx((100 * 1.0 + 20 * 2.0) / 1e6)
    # The replay cache answers the same request again, without the server; the verdict costs the same.
    again = GraphVerifier(claims="from_response", extractor="llm",
                          llm=llm_options(server, prices=prices, cache_dir=str(tmp_path / "cache"), replay_only=True))
    (replayed,) = again.verify([case])
    assert len(server.requests) == 3 and replayed.usage["cache_hits"] == 1 and replayed.score == verdict.score
    assert replayed.cost_usd == verdict.cost_usd
    # Where the cache lives and how patient the client is do not change the config hash; the model does.
    assert again.config_hash == verifier.config_hash
    assert GraphVerifier(claims="from_response", extractor="llm",
                         llm=llm_options(server, model="other")).config_hash != verifier.config_hash


def test_a_failing_llm_server_is_that_case_s_error_not_a_rejection(fake):
    server = fake([500, 500, 500])
    verifier = GraphVerifier(claims="from_response", extractor="llm", llm=llm_options(server, retries=2))
    good = Case(id="g", dataset="d", label=False, response="x", claims=[
        {"claim_type": "customer_tier", "subject_id": "A-5618", "value": "SILVER", "evidence": "e"}])
    bad, = verifier.verify([good])
    assert bad.error is not None and bad.score is None
    assert "GaveUp: gave up after 3 attempts: HTTP 500" in bad.error
    assert (bad.usage["requests"], bad.usage["retries"], bad.usage["failures"]) == (3, 2, 1)


def test_no_key_in_any_run_file_when_the_server_echoes_it(fake, tmp_path, monkeypatch, root):
    key = "sk-GRAPH-PROSE-SECRET-0123456789abcdef"
    monkeypatch.setenv("VB_GRAPH_KEY", key)
    server = fake([], default=Echo(400))  # every request: a 400 whose body quotes the request's headers
    suite = parse_suite({
        "name": "echo",
        "dataset": {"loader": "jsonl", "path": str(root / "datasets/refunds/cases.jsonl"), "name": "refunds",
                    "limit": 3, "fields": {"id": "id", "response": "response", "question": "question",
                                           "label": "label", "doc_type": "doc_type"}},
        "verifiers": [{"graph": {"id": "graph-llm", "claims": "from_response", "extractor": "llm",
                                 "llm": {**llm_options(server), "api_key_env": "VB_GRAPH_KEY",
                                         "cache_dir": str(tmp_path / "c")}}}, "rouge"]}, tmp_path)
    api.run(suite, out=tmp_path / "run", progress=False)
    assert key in json.dumps(server.headers)  # the key was really sent, and the server sent it back...
    verdicts = [json.loads(line) for line in (tmp_path / "run/results.jsonl").read_text().splitlines()]
    errors = [v["error"] for v in verdicts if v["verifier"] == "graph-llm"]
    assert len(errors) == 3 and all("[redacted]" in e and "BadRequestError" in e for e in errors), errors
    # ...and it is in no file of the run (results, errors, report) nor the cache.
    files = [f for folder in (tmp_path / "run", tmp_path / "c") if folder.exists() for f in folder.rglob("*")
             if f.is_file()]
    assert {"results.jsonl", "errors.jsonl", "report.html"} <= {f.name for f in files}
    for f in files:
        assert key not in f.read_text(errors="ignore"), f


def test_the_schema_is_valid_json_schema_for_every_pack(root):
    Draft202012Validator = pytest.importorskip("jsonschema").Draft202012Validator

    for pack in (PACK, load_pack(root / "datasets/leave/pack")):
        schema = claims_schema(pack)
        Draft202012Validator.check_schema(schema)
        Draft202012Validator(schema).validate({"claims": [{"claim_type": next(iter(pack.claims)), "subject_id": "x",
                                                           "value": 1, "evidence": "e"}]})


# --- the agent's final prose against its grounded claims -------------------------------------------------

class ScriptedBackend(Backend):
    kind = "scripted"

    def __init__(self, replies):
        self.replies = list(replies)

    def complete(self, messages, *, temperature, max_tokens, seed, logprobs, json_mode, timeout, schema=None):
        return Completion(text=self.replies.pop(0))


@pytest.fixture(scope="module")
def checker():
    return GraphVerifier().checker()


def tool_call(*claims):
    return json.dumps({"tool": "check_refund_claims", "claims": list(claims)})


def c(claim_type, value, subject="A-5618"):
    return {"claim_type": claim_type, "subject_id": subject, "value": value, "evidence": "policy"}


def test_final_prose_is_held_to_the_grounded_claims(checker):
    backend = ScriptedBackend([
        tool_call(c("refund_method", "STORE_CREDIT"), c("refund_amount", "295.64")),
        json.dumps({"final": "Order A-5618 is refunded: you will receive $295.64. The money is returned as store "
                             "credit. Shipping costs are refunded as well. You will receive $300.00."}),
    ])
    result = TwoGateAgent(backend, checker).run("What refund do I get for order A-5618?")
    assert result.stopped == "final" and len(result.grounded) == 2
    reasons = {f.sentence: f.reason for f in result.flags}
    # Two sentences go beyond the grounded claims: a value never checked, and a second amount.
    assert set(reasons) == {"Shipping costs are refunded as well.", "You will receive $300.00."}
    assert "never confirmed" in reasons["Shipping costs are refunded as well."]
    assert "the graph entailed 295.64" in reasons["You will receive $300.00."]
    flag = next(f for f in result.flags if f.sentence.startswith("Shipping"))
    assert result.answer[flag.start:flag.end] == flag.sentence


def test_a_final_answer_within_the_grounded_claims_has_no_flags(checker):
    backend = ScriptedBackend([
        tool_call(c("refund_method", "STORE_CREDIT"), c("refund_amount", "295.64")),
        json.dumps({"final": "For order A-5618 you will receive $295.64, returned as store credit."}),
    ])
    result = TwoGateAgent(backend, checker).run("What refund do I get for order A-5618?")
    assert result.flags == []
    assert check_answer("Order A-5618 cannot be refunded.", result.grounded, PACK, RulesExtractor(PACK))[0].reason \
        .startswith("states the refund_eligible of A-5618 (false)")


def test_an_llm_extractor_on_the_final_answer_counts_in_the_loop_s_usage(fake):
    # No tool call: the model answers at once, and the LLM extractor reads a refund amount from it, which
    # the graph never confirmed. The extractor's 429 is retried; its calls count in the loop's usage.
    server = fake([429, json.dumps({"claims": [{"claim_type": "refund_amount", "subject_id": "A-5618",
                                                 "value": "300.00", "evidence": "You will receive $300.00."}]})])
    client = LLMClient(OpenAICompatible("tiny", server.base_url, api_key_env="VERIFYBENCH_TEST_KEY"),
                       RetryPolicy(2, 0.01, 0.02))
    agent = TwoGateAgent(ScriptedBackend([json.dumps({"final": "Order A-5618: you will receive $300.00."})]),
                         checker=None, extractor=LLMExtractor(client, PACK))
    result = agent.run("What refund do I get for order A-5618?")
    (flag,) = result.flags
    assert flag.reason == "states the refund_amount of A-5618 (300.00), which the graph never confirmed"
    # One scripted call (no tokens) and the extractor's two requests, one of them retried.
    assert (result.usage.requests, result.usage.retries, result.usage.input_tokens) == (3, 1, 100)


# --- gate 2 as the seed has it: entailed claims go through, only the others are dropped ------------------

MIXED = [c("refund_method", "STORE_CREDIT"), c("refund_amount", "295.64"), c("shipping_refundable", True),
         c("refund_eligible", True, subject="A-404")]
MIXED_FINAL = ("Order A-5618 is refunded: you will receive $295.64. The money is returned as store credit. "
               "Shipping costs are refunded as well.")


def _mixed_run(checker, **options):
    backend = ScriptedBackend([tool_call(*MIXED), json.dumps({"final": MIXED_FINAL})])
    return TwoGateAgent(backend, checker, **options).run("What refund do I get for order A-5618?")


def test_gate2_keeps_the_entailed_claims_of_a_call_and_marks_only_the_dropped_ones(checker):
    result = _mixed_run(checker)
    assert {(g.claim.claim_type, g.expected[0]) for g in result.grounded} == {
        ("refund_method", "STORE_CREDIT"), ("refund_amount", "295.64")}
    assert [(d.claim.claim_type, d.status) for d in result.dropped] == [
        ("shipping_refundable", "contradicted"), ("refund_eligible", "unsupported")]
    # What the model read: the grounded claims, and each dropped one with its reason and expected value.
    told = json.loads(result.messages[3]["content"])
    assert told["tool_result"] == "partially grounded"
    assert [g["claim_type"] for g in told["claims"]] == ["refund_method", "refund_amount"]
    assert "claims[2] contradicted by gate 2" in told["dropped"][0] and "expected: false" in told["dropped"][0]
    assert "claims[3] unsupported by gate 2" in told["dropped"][1]
    # Only the sentence stating the dropped claim is flagged, as dropped, not as "never confirmed".
    (flag,) = result.flags
    assert flag.sentence == "Shipping costs are refunded as well." and flag.status == "contradicted"
    assert flag.reason == ("states the shipping_refundable of A-5618 (true), which gate 2 dropped: "
                           "the shipping_refundable of order A-5618 is false, not true")


def test_gate2_all_or_nothing_keeps_the_stricter_loop(checker):
    result = _mixed_run(checker, gate2="all_or_nothing")
    assert result.grounded == [] and json.loads(result.messages[3]["content"])["tool_result"] == "rejected"
    assert {f.status for f in result.flags} == {"not_grounded", "contradicted"}
    assert len(result.flags) == 3  # the amount and the method too: nothing of the call was grounded
    with pytest.raises(ValueError, match="gate2 must be one of"):
        TwoGateAgent(ScriptedBackend([]), checker, gate2="loose")


def test_a_dropped_claim_the_model_then_corrects_is_grounded_not_dropped(checker):
    backend = ScriptedBackend([tool_call(c("refund_method", "STORE_CREDIT"), c("shipping_refundable", True)),
                               tool_call(c("shipping_refundable", False)),
                               json.dumps({"final": "The money is returned as store credit. Shipping costs are not "
                                                    "refunded."})])
    result = TwoGateAgent(backend, checker).run("Refund terms for order A-5618?")
    assert result.dropped == [] and result.flags == []
    assert {(g.claim.claim_type, g.expected[0]) for g in result.grounded} == {
        ("refund_method", "STORE_CREDIT"), ("shipping_refundable", "false")}


def test_run_guarded_cuts_only_the_dropped_claim(checker):
    from verifybench.guard.agent import run_guarded

    backend = ScriptedBackend([tool_call(*MIXED), json.dumps({"final": MIXED_FINAL})])
    out = run_guarded(TwoGateAgent(backend, checker), "What refund do I get for order A-5618?")
    assert out.action == "rewritten"
    assert out.answer == "Order A-5618 is refunded: you will receive $295.64. The money is returned as store credit."
    (cut,) = out.removed
    assert cut.text == "Shipping costs are refunded as well." and "gate 2 dropped" in cut.reason
