"""The decision-model filter: units, policy, audit log, and the local model on held-out data."""

from __future__ import annotations

import json
import pickle

import numpy as np
import pytest

from verifybench.cases import Case, Source
from verifybench.errors import SuiteError
from verifybench.loaders import DatasetSpec, iter_cases
from verifybench.metrics.curves import auroc
from verifybench.verifiers import build
from verifybench.verifiers.decision.questions import UnitAnswers
from verifybench.verifiers.decision.triage import TriageOptions, decide
from verifybench.verifiers.decision.units import DecisionUnit, split_units, state_for

THRESHOLDS = {"instructions": 0.5, "contradiction": 0.5}


def unit(key: str, kind: str = "chunk", chars: int = 40, claim: str | None = None) -> DecisionUnit:
    return DecisionUnit(key, kind, "x" * chars, [key], claim=claim)


def actions(decisions) -> dict[str, str]:
    return {d.unit.key: d.action for d in decisions}


# ---------- units ----------

def test_units_are_numbered_and_citations_grouped_by_claim():
    case = Case(id="c", dataset="t", question="Q?", response="R", label=False, sources=[
        Source(id="a", text="chunk a"),
        Source(id="t", text="tool out", metadata={"kind": "tool_result"}),
        Source(id="r1", text="ref one", metadata={"kind": "citation", "claim": "claim A"}),
        Source(id="r2", text="ref two", metadata={"kind": "citation", "claim": "claim A"}),
        Source(id="r3", text="ref three", metadata={"kind": "citation", "claim": "claim B"}),
    ])
    units = split_units(case, response_as_unit=True)
    assert [(u.key, u.kind, u.source_ids) for u in units] == [
        ("u1", "chunk", ["a"]), ("u2", "tool_result", ["t"]), ("u3", "citation", ["r1", "r2"]),
        ("u4", "citation", ["r3"]), ("u5", "answer", ["response"])]
    assert units[2].claim == "claim A" and units[2].text == "ref one\nref two"
    state = state_for(case, units)
    assert list(state["units"]) == ["u1", "u2", "u3", "u4", "u5"] and state["units"]["u3"]["claim"] == "claim A"


def test_unknown_unit_kind_is_an_error_verdict_naming_the_source(tmp_path):
    case = Case(id="c", dataset="t", response="", label=False, sources=[Source(id="s9", text="x", metadata={"kind": "blob"})])
    verdict = build("decision", audit_dir=str(tmp_path)).verify([case])[0]
    assert verdict.score is None and "s9" in verdict.error and "blob" in verdict.error


# ---------- policy ----------

def test_policy_drops_flags_ranks_trims_and_escalates():
    units = [unit("u1"), unit("u2"), unit("u3"), unit("u4"), unit("u5"), unit("u6", "citation", claim="c"),
             unit("u7", "citation", claim="d"), unit("u8", "citation", claim="e")]
    answers = {
        "u1": UnitAnswers(instructions=0.9, relevance=1.0, contradiction=0.0),   # injected: dropped despite relevance
        "u2": UnitAnswers(instructions=0.1, relevance=0.2, contradiction=0.8),   # contradicts: kept, flagged
        "u3": UnitAnswers(instructions=0.1, relevance=0.9, contradiction=0.1),   # best: kept
        "u4": UnitAnswers(instructions=0.1, relevance=0.6, contradiction=0.1),   # second: over budget
        "u5": UnitAnswers(instructions=0.1, relevance=0.05, contradiction=0.1),  # under min_relevance
        "u6": UnitAnswers(instructions=0.0, citation={"supports": 0.9, "does_not_support": 0.05, "cannot_determine": 0.05}),
        "u7": UnitAnswers(instructions=0.0, citation={"supports": 0.1, "does_not_support": 0.85, "cannot_determine": 0.05}),
        "u8": UnitAnswers(instructions=0.0, citation={"supports": 0.5, "does_not_support": 0.3, "cannot_determine": 0.2}),
    }
    opts = TriageOptions(context_budget_tokens=25, min_relevance=0.1, escalate_below=0.75)  # one 10-token unit each
    got = decide(units, answers, opts, THRESHOLDS)
    assert actions(got) == {"u1": "drop", "u2": "flag", "u3": "keep", "u4": "trim", "u5": "trim",
                            "u6": "keep", "u7": "flag", "u8": "escalate"}
    ranks = {d.unit.key: d.rank for d in got if d.rank}
    assert ranks == {"u2": 1, "u3": 2, "u4": 3, "u5": 4}
    assert "budget" in next(d.reason for d in got if d.unit.key == "u4")
    assert "relevance" in next(d.reason for d in got if d.unit.key == "u5")


def test_policy_thresholds_from_options_override_the_backend():
    units = [unit("u1")]
    answers = {"u1": UnitAnswers(instructions=0.6, relevance=0.5, contradiction=0.6)}
    assert actions(decide(units, answers, TriageOptions(), THRESHOLDS)) == {"u1": "drop"}
    strict = TriageOptions(drop_instructions_at=0.7, flag_contradiction_at=0.7)
    assert actions(decide(units, answers, strict, THRESHOLDS)) == {"u1": "keep"}


def test_bad_policy_option_names_the_field():
    with pytest.raises(SuiteError, match="policy.escalate_below"):
        build("decision", policy={"escalate_below": 2})
    with pytest.raises(SuiteError, match="question"):
        build("decision", question="vibes")


# ---------- the local model, on held-out data ----------

@pytest.fixture(scope="module")
def bipia_test(data_dir):
    spec = DatasetSpec(loader="bipia", path=str(data_dir / "bipia"), split="test", tasks=["email", "code"],
                       attacks_per_context=1, sample=40, seed=3)
    return list(iter_cases(spec))


def test_local_model_separates_held_out_bipia_injections(bipia_test, tmp_path):
    v = build("decision", question="injection", audit_dir=str(tmp_path))
    verdicts = v.verify(bipia_test)
    assert all(x.ok for x in verdicts), [x.error for x in verdicts if not x.ok][:2]
    y = np.array([c.label for c in bipia_test])
    s = np.array([x.score for x in verdicts])
    assert 0 < y.sum() < len(y)
    assert auroc(y, s) > 0.8
    assert all(0.0 <= x <= 1.0 for x in s)


def test_audit_log_holds_every_unit_id(bipia_test, tmp_path):
    v = build("decision", question="policy", audit_dir=str(tmp_path), id="decision-audit")
    cases = bipia_test[:6] + [Case(id="multi", dataset="t", question="What is in the email?", response="", label=False,
                                   sources=[Source(id=f"s{i}", text=f"Passage number {i} about invoices.") for i in range(4)])]
    v.verify(cases)
    rows = [json.loads(line) for line in (tmp_path / "decision-audit.audit.jsonl").read_text().splitlines()]
    expected = {f"{c.id}/{u.key}" for c in cases for u in split_units(c)}
    assert {r["unit_id"] for r in rows} == expected and len(rows) == len(expected)
    for r in rows:
        assert r["answers"]["instructions"] is not None and r["action"] in ("keep", "flag", "drop", "trim", "escalate")
        assert r["sources"]


def test_local_citation_contradiction_and_relevance_answer(data_dir, tmp_path):
    spec = DatasetSpec(loader="attributionbench", path=str(data_dir / "attributionbench"), splits=["test"], limit=6)
    cases = list(iter_cases(spec))
    verdicts = build("decision", question="citation", audit_dir=str(tmp_path)).verify(cases)
    for c, v in zip(cases, verdicts):
        assert v.ok and v.case_id == c.id
        cite = [u for u in v.units if u.detail["kind"] == "citation"]
        assert len(cite) == 1 and v.score == pytest.approx(cite[0].score)
        probs = cite[0].detail["answers"]["citation"]
        assert sum(probs.values()) == pytest.approx(1.0)
    qa = Case(id="qa", dataset="t", question="Which city is the capital of France?", response="Berlin", label=True,
              sources=[Source(id="k", text="Paris is the capital and largest city of France.")])
    v = build("decision", question="contradiction", response_as_unit=True, audit_dir=str(tmp_path)).verify([qa])[0]
    assert v.ok and {u.detail["kind"] for u in v.units} == {"chunk", "answer"}
    # With the response as a unit, the score is the response's own contradiction, whatever the chunks say.
    assert v.score == next(u.score for u in v.units if u.detail["kind"] == "answer")
    rel = build("decision", question="relevance", audit_dir=str(tmp_path)).verify([qa])[0]
    assert rel.ok and 0.0 <= rel.score <= 1.0
    assert len(rel.units[0].detail["answers"]["relevance_levels"]) == 3


def test_citation_question_without_citations_is_an_error_verdict(tmp_path):
    case = Case(id="c", dataset="t", question="Q?", response="", label=False, sources=[Source(id="a", text="plain chunk")])
    verdict = build("decision", question="citation", audit_dir=str(tmp_path)).verify([case])[0]
    assert verdict.score is None and "citation" in verdict.error


def test_local_verifier_pickles(bipia_test, tmp_path):
    v = build("decision", audit_dir=str(tmp_path))
    first = v.verify(bipia_test[:2])
    clone = pickle.loads(pickle.dumps(v))
    assert [x.score for x in clone.verify(bipia_test[:2])] == [x.score for x in first]


def test_a_run_writes_the_audit_log_into_its_run_directory(root, tmp_path):
    """The runner binds each verifier to its run: the audit log lands beside results.jsonl, one row per unit."""
    from verifybench import api

    suite = tmp_path / "adv.yaml"
    suite.write_text(
        "name: adv\n"
        f"dataset: {{loader: jsonl, path: {root / 'datasets/decision-adversarial/cases.jsonl'}, limit: 4,\n"
        "  fields: {id: id, question: question, sources: sources, response: response, label: label}}\n"
        "verifiers:\n  - decision: {id: decision-policy, question: policy}\n")
    run = api.run(suite, out=tmp_path / "run", progress=False)
    rows = [json.loads(line) for line in (run.run_dir / "decision/decision-policy.audit.jsonl").read_text().splitlines()]
    cases = [json.loads(line) for line in (root / "datasets/decision-adversarial/cases.jsonl").read_text().splitlines()[:4]]
    assert len(rows) == sum(len(c["sources"]) for c in cases)
    assert {r["unit_id"].split("/")[0] for r in rows} == {c["id"] for c in cases}
    assert not (tmp_path / "reports").exists()


def test_cases_the_policy_cannot_place_are_error_verdicts_and_the_batch_goes_on(tmp_path):
    no_context = Case(id="bare", dataset="t", question="Q?", response="an answer", label=False)
    bad_probe = Case(id="probe", dataset="t", question="Q?", response="", label=True,
                     sources=[Source(id="p1", text="Some text.", metadata={"probe": "false"})])
    fine = Case(id="ok", dataset="t", question="Why is the sky blue?", response="", label=False,
                sources=[Source(id="c", text="Rayleigh scattering makes the sky look blue.")])
    v = build("decision", question="policy", response_as_unit=True, audit_dir=str(tmp_path))
    a, b, c = v.verify([no_context, bad_probe, fine])
    assert a.error and "no context units" in a.error
    assert b.error and "p1" in b.error and "probe" in b.error
    assert c.ok
    assert build("decision", question="policy").probabilistic is False
    assert build("decision", question="injection").probabilistic is True


def test_local_latency_is_per_case_a_long_case_pays_for_its_text(tmp_path):
    # A batch's encoder pass is shared out by the text each case brought, so a case with many long
    # chunks costs more than a one-line case of the same batch; the model load is warm-up, not a case's.
    long_case = Case(id="long", dataset="t", question="What does the manual say?", response="", label=False,
                     sources=[Source(id=f"s{i}", text=f"Chapter {i} explains invoices, refunds and limits in detail. " * 12)
                              for i in range(6)])
    short_case = Case(id="short", dataset="t", response="", label=False, sources=[Source(id="s", text="Hi.")])
    v = build("decision", question="injection", audit_dir=str(tmp_path))
    verdicts = by_case(v.verify([short_case, long_case]))
    for x in verdicts.values():
        assert x.ok and x.latency_kind == "case"
        split = x.detail["latency_ms"]
        assert x.latency_ms == pytest.approx(split["own"] + split["batched_share"] + split.get("model_load", 0.0), abs=1e-2)
    assert verdicts["long"].detail["latency_ms"]["batched_share"] > verdicts["short"].detail["latency_ms"]["batched_share"]
    assert "model_load" not in verdicts["long"].detail["latency_ms"]


def by_case(verdicts):
    return {v.case_id: v for v in verdicts}
