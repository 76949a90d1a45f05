"""The refund comparison set (datasets/refunds/answers.py) and what the decision filter reads of an answer
(`cite_response`): the set is the generator's output, its claims are what the pack reads from its prose,
and every check-worthy sentence of an answer is asked the citation question against the sources."""

from __future__ import annotations

import importlib.util
import json
import re

import pytest

from verifybench.cases import Case, Source
from verifybench.verifiers import build
from verifybench.verifiers.decision.units import response_citations
from verifybench.verifiers.graph.pack import load_pack
from verifybench.verifiers.graph.prose import RulesExtractor


@pytest.fixture(scope="module")
def answers(root):
    spec = importlib.util.spec_from_file_location("refund_answers", root / "datasets/refunds/answers.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def committed(root):
    return [json.loads(line) for line in (root / "datasets/refunds/answers.jsonl").read_text().splitlines()]


def test_the_committed_set_is_what_the_generator_writes_from_the_packs_facts(answers, committed):
    # A change of the pack's facts (generate.py) without `python datasets/refunds/answers.py` fails here,
    # and so would the judge's cassette (its prompts hold the order records).
    assert [json.loads(json.dumps(c, sort_keys=True)) for c in answers.generate()] == committed


def test_balanced_per_doc_type_and_split_with_every_error_type_on_both_sides(committed):
    counts: dict = {}
    for c in committed:
        key = (c["doc_type"], c["label"], c["split"])
        counts[key] = counts.get(key, 0) + 1
    assert set(counts.values()) <= {13, 14} and len(counts) == 12
    sides = {(c["meta"]["error_type"], c["split"]) for c in committed}
    assert all((e, s) in sides for e in (*{c["meta"]["error_type"] for c in committed},) for s in ("calibration", "test"))
    assert not any(c["meta"]["order_id"] == "A-91" for c in committed)  # the graph article's example is the pack's


def _norm(v) -> object:
    s = re.sub(r"^\$|\s*days?$", "", str(v).strip().lower())
    try:
        return float(s)
    except ValueError:
        return s


def test_the_pack_reads_exactly_the_claims_behind_each_answer(committed):
    """The prose is written in the wording the refund pack's patterns read: graph (claims from the
    response) checks what the answer states, and only that (the true general rule adds no claim)."""
    extractor = RulesExtractor(load_pack("refunds"))
    for c in committed:
        got = {(x["claim_type"], x["subject_id"], _norm(x["value"]))
               for x in extractor.extract(c["response"], c["question"]).claims}
        assert got == {(x["claim_type"], x["subject_id"], _norm(x["value"])) for x in c["claims"]}, c["id"]


def _case(response: str) -> Case:
    return Case(id="c1", dataset="t", question="What refund do I get for order A-1?", response=response, label=False,
                sources=[Source(id="policy", text="GOLD customers may request a refund within 30 days of delivery."),
                         Source(id="order", text="Order A-1: a blender, bought by customer C-1, GOLD tier.")])


def test_each_checkworthy_sentence_is_a_citation_of_the_sources_and_greetings_are_skipped():
    response = "Hi Dana! Order A-1 is eligible for a refund. You have a 30-day return window. Kind regards, Support"
    units, skipped = response_citations(_case(response))
    assert [u.claim for u in units] == ["Order A-1 is eligible for a refund.", "You have a 30-day return window."]
    for u in units:
        assert u.kind == "citation" and response[u.span[0]:u.span[1]] == u.claim
        assert u.source_ids == ["policy", "order"] and len(u.meta["cited"]) == 2
    assert [why for _, _, why in skipped] == ["greeting", "closing"]


def test_the_decision_verdict_scores_the_least_supported_sentence_with_its_offsets(tmp_path):
    response = "Hi Dana! Order A-1 is eligible for a refund. You have a 30-day return window."
    v = build("decision", question="citation", cite_response=True, audit_dir=str(tmp_path))
    verdict = v.verify([_case(response)])[0]
    assert verdict.ok, verdict.error
    asked = [u for u in verdict.units if u.score is not None]
    assert len(asked) == 2 and verdict.score == max(u.score for u in asked)
    for u in asked:
        assert response[u.start:u.end] == u.text and u.status in ("keep", "flag", "escalate")
        assert u.detail["answers"]["citation_choice"] in ("supports", "does_not_support", "cannot_determine")
        assert u.detail["answers"]["extra"]["supported_best_by"] in ("policy", "order")
    greeting = next(u for u in verdict.units if u.score is None)
    assert greeting.status.startswith("skipped: greeting") and response[greeting.start:greeting.end] == "Hi Dana!"


def test_a_claim_is_supported_when_one_of_its_sources_supports_it(tmp_path):
    """Read one source at a time, the most supportive decides: the answer's P(not supported) is at most
    what the supporting source alone gives, whatever else the case cites."""
    claim = "GOLD customers may request a refund within 30 days of delivery."
    alone = Case(id="a", dataset="t", response=claim, label=False, sources=[Source(id="p", text=claim)])
    beside = alone.model_copy(update={"id": "b", "sources": [
        Source(id="x", text="Final-sale items are not refundable unless they arrived defective."), Source(id="p", text=claim)]})
    v = build("decision", question="citation", cite_response=True, audit_dir=str(tmp_path))
    a, b = v.verify([alone, beside])
    assert b.score == pytest.approx(a.score, abs=1e-6)
    assert b.units[0].detail["answers"]["extra"]["supported_best_by"] == "p"


def test_a_case_without_sources_is_that_cases_error(tmp_path):
    v = build("decision", question="citation", cite_response=True, audit_dir=str(tmp_path))
    verdict = v.verify([Case(id="x", dataset="t", response="Order A-1 is eligible.", label=True, sources=[])])[0]
    assert not verdict.ok and "no sources" in verdict.error
