"""The graph article's two-gate agent loop with the guard on its final answer: an unconfirmed claim is
stripped by its offsets, or the answer blocked; a grounded answer goes through unchanged."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

import verifybench
from verifybench.guard import Guard
from verifybench.guard.agent import run_guarded
from verifybench.loaders.guardlog import read_log
from verifybench.verifiers.graph.agent import TwoGateAgent
from verifybench.verifiers.graph.verifier import GraphVerifier
from verifybench.verifiers.llm import Backend, Completion

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow  # a graph-prose run over the refund set fits the guard's policy (~20 s)


class ScriptedBackend(Backend):
    kind = "scripted"

    def __init__(self, replies):
        self.replies = list(replies)

    def complete(self, messages, *, temperature, max_tokens, seed, logprobs, json_mode, timeout, schema=None):
        return Completion(text=self.replies.pop(0))


@pytest.fixture(scope="module")
def policy(tmp_path_factory):
    base = tmp_path_factory.mktemp("agent")
    suite = base / "suite.yaml"
    suite.write_text(yaml.safe_dump({
        "name": "refunds-prose",
        "dataset": {"loader": "jsonl", "path": str(ROOT / "datasets" / "refunds" / "cases.jsonl"),
                    "fields": {"id": "id", "response": "response", "sources": "sources", "question": "question",
                               "claims": "claims", "label": "label", "doc_type": "doc_type", "split": "split"}},
        "verifiers": [{"graph": {"id": "graph-prose", "domain": "refunds", "claims": "from_response"}}],
        "metrics": {"by": "doc_type", "bootstrap": 20}}))
    run = verifybench.run(suite, out=base / "run", progress=False)
    out = base / "policy.yaml"
    verifybench.thresholds(run.run_dir, target="youden", out=out)
    return out


@pytest.fixture(scope="module")
def checker():
    return GraphVerifier().checker()


def _agent(checker, final: str) -> TwoGateAgent:
    claims = [{"claim_type": "refund_method", "subject_id": "A-5618", "value": "STORE_CREDIT", "evidence": "policy"},
              {"claim_type": "refund_amount", "subject_id": "A-5618", "value": "295.64", "evidence": "policy"}]
    return TwoGateAgent(ScriptedBackend([json.dumps({"tool": "check_refund_claims", "claims": claims}),
                                         json.dumps({"final": final})]), checker)


GROUNDED = "Order A-5618 is refunded: you will receive $295.64. The money is returned as store credit."
UNCONFIRMED = " Shipping costs are refunded as well."
WRONG = " You will receive $300.00."


def test_an_unconfirmed_claim_is_stripped_and_a_wrong_one_too(policy, checker, tmp_path):
    with Guard(policy, log_dir=tmp_path / "log") as g:
        out = run_guarded(_agent(checker, GROUNDED + UNCONFIRMED + WRONG), "What refund do I get for order A-5618?",
                          guard=g, request_id="T-7")
    assert out.action == "rewritten" and out.answer == GROUNDED
    cut = {c.text for c in out.removed}
    assert cut == {UNCONFIRMED.strip(), WRONG.strip()}
    by = {c.by for c in out.removed if c.text == WRONG.strip()}
    assert by == {"agent", "graph-prose"}  # the loop's gate and the guard's fitted check both caught it
    assert out.decision.checks[0].flagged and out.decision.checks[0].threshold_source in ("slice", "fallback")
    (rec,), _ = read_log(tmp_path / "log")
    assert rec.decision.request_id == "T-7" and rec.response == GROUNDED + UNCONFIRMED + WRONG


def test_block_withholds_an_answer_with_an_unconfirmed_claim(policy, checker):
    with Guard(policy, log_dir=False) as g:
        out = run_guarded(_agent(checker, GROUNDED + UNCONFIRMED), "What refund do I get?", guard=g, action="block")
    assert out.action == "blocked" and out.answer is None and {c.text for c in out.removed} == {UNCONFIRMED.strip()}


def test_an_answer_held_to_its_grounded_claims_goes_through(policy, checker):
    with Guard(policy, log_dir=False) as g:
        out = run_guarded(_agent(checker, GROUNDED), "What refund do I get?", guard=g)
    assert out.action == "allowed" and out.answer == GROUNDED and not out.removed
    assert out.decision.action == "allowed"
