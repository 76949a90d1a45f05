"""The local decision model answers every question the article asks of each unit kind, flags context
units that disagree, and abstains on citations only inside a band fitted on its calibration fold."""

from __future__ import annotations

import numpy as np
import pytest

from verifybench.cases import Case, Source
from verifybench.loaders import DatasetSpec, iter_cases
from verifybench.training.decision import abstention, halueval_rows, is_calibration
from verifybench.verifiers import build
from verifybench.verifiers.decision.local_model import combine_context
from verifybench.verifiers.decision.questions import UnitAnswers, asked
from verifybench.verifiers.decision.triage import TriageOptions, decide
from verifybench.verifiers.decision.units import DecisionUnit

CAPITAL = "Which city is the capital of France?"


def kinds_case(question: str | None) -> Case:
    return Case(id="kinds", dataset="t", question=question, response="The capital of France is Paris.", label=False,
                sources=[Source(id="c", text="Paris is the capital and largest city of France."),
                         Source(id="t", text='{"country": "France", "capital": "Paris"}', metadata={"kind": "tool_result"}),
                         Source(id="r", text="Paris has been the French capital since 987.",
                                metadata={"kind": "citation", "claim": "Paris is the capital of France."})])


@pytest.mark.parametrize("question", [CAPITAL, None])
def test_every_unit_kind_gets_an_answer_to_each_of_its_questions(question, tmp_path):
    v = build("decision", question="policy", response_as_unit=True, audit_dir=str(tmp_path))
    verdict = v.verify([kinds_case(question)])[0]
    assert verdict.ok, verdict.error
    assert {u.detail["kind"] for u in verdict.units} == {"chunk", "tool_result", "citation", "answer"}
    for u in verdict.units:
        got = u.detail["answers"]
        wanted = asked(u.detail["kind"], bool(question))
        assert all(got.get(q) is not None for q in wanted), (u.detail["kind"], wanted, got)
        if question and u.detail["kind"] != "answer":
            assert 0.0 <= got["contradiction"] <= 1.0
    if question:
        assert "contradiction" in asked("chunk", True) and "contradiction" in asked("tool_result", True)
    cite = next(u for u in verdict.units if u.detail["kind"] == "citation")
    assert cite.detail["answers"]["citation_choice"] in ("supports", "does_not_support", "cannot_determine")


def test_tool_results_that_disagree_with_the_chunk_are_kept_but_flagged_offline(data_dir, tmp_path):
    """HaluEval qa rows the model never saw (the test hash split): the knowledge as a chunk, and as a tool
    result the hallucinated answer (disagrees) or the right one (agrees)."""
    rows = halueval_rows(data_dir, "test", cap=40)

    def case(i: int, r: dict, wrong: bool) -> Case:
        return Case(id=f"r{i}-{wrong}", dataset="t", question=r["question"], response="", label=wrong, sources=[
            Source(id="k", text=r["knowledge"]),
            Source(id="t", text=r["hallucinated_answer" if wrong else "right_answer"], metadata={"kind": "tool_result"})])
    v = build("decision", question="policy", audit_dir=str(tmp_path))
    verdicts = v.verify([case(i, r, w) for i, r in enumerate(rows) for w in (True, False)])
    assert all(x.ok for x in verdicts)
    flags = {w: sum(x.detail["actions"]["flag"] for x in verdicts if x.case_id.endswith(str(w))) for w in (True, False)}
    assert flags[True] > flags[False]
    flagged = [u for x in verdicts for u in x.units if u.status == "flag"]
    assert flagged and all("contradicts" in u.evidence for u in flagged)
    for x in verdicts:  # flagged units are placed first
        ranks = [(u.status == "flag", u.detail["rank"]) for u in x.units]
        assert all(rf < rk for f, rf in ranks if f for k, rk in ranks if not k)
    # Kept, not dropped: a flagged unit reaches the reasoning model, marked.
    assert all(x.detail["actions"]["drop"] == 0 for x in verdicts)
    assert verdicts[0].detail["fitted"]["contradiction"] == pytest.approx(
        v.backend.model.heads["context_contradiction"].gate["threshold"])


def test_a_unit_with_nothing_to_contradict_is_answered_cannot_determine_and_never_flagged(tmp_path):
    """Alone with its question (decision-halueval's knowledge chunk), or beside only an off-topic unit,
    the local model has no material about the question to compare: 0.5 and "cannot determine", not a
    probability it has no data for; the policy keeps it even when told to flag everything."""
    alone = Case(id="alone", dataset="t", question=CAPITAL, response="", label=False,
                 sources=[Source(id="k", text="Paris is the capital and largest city of France.")])
    off_topic = Case(id="off", dataset="t", question=CAPITAL, response="", label=False,
                     sources=[Source(id="k", text="Paris is the capital and largest city of France."),
                              Source(id="o", text="Most card issuers post refunds within five to ten business days.")])
    v = build("decision", question="policy", policy={"flag_contradiction_at": 0.0}, audit_dir=str(tmp_path))
    alone_v, off_v = v.verify([alone, off_topic])
    (unit,) = alone_v.units
    assert unit.detail["answers"]["contradiction"] == 0.5 and unit.detail["answers"]["contradiction_cannot_determine"]
    assert unit.status == "keep"
    gate = v.backend.model.heads["context_contradiction"].gate["min_relevance"]
    rel = {u.detail["key"]: u.detail["answers"]["relevance"] for u in off_v.units}
    assert rel["u2"] < gate <= rel["u1"], rel  # the refund passage is not about the question: no pair counts
    assert all(u.detail["answers"].get("contradiction_cannot_determine") for u in off_v.units)
    assert all(u.status != "flag" for u in off_v.units)
    # A determinable answer is flagged at threshold 0 (the override reaches it): only "cannot determine" is exempt.
    rows = kinds_case(CAPITAL)
    assert any(u.status == "flag" for u in v.verify([rows])[0].units if u.detail["kind"] != "answer")


def test_pairs_are_read_both_ways_round_and_gated_by_relevance():
    p = np.array([[0.0, 0.9, 0.2],
                  [0.3, 0.0, 0.8],
                  [0.1, 0.7, 0.0]])
    # Both readings of a pair are averaged; unit 0's best partner is 1 ((0.9 + 0.3) / 2 = 0.6).
    got = combine_context(p, np.array([1.0, 1.0, 1.0]), min_relevance=0.5)
    assert got[0] == (pytest.approx(0.6), 1) and got[1] == (pytest.approx(0.75), 2) and got[2] == (pytest.approx(0.75), 1)
    # Unit 2 is not about the question: its pairs do not count, and it has no partner at all.
    got = combine_context(p, np.array([1.0, 0.9, 0.1]), min_relevance=0.5)
    assert got[0] == (pytest.approx(0.6), 1) and got[1] == (pytest.approx(0.6), 0) and got[2] == (None, None)
    assert combine_context(np.zeros((1, 1)), np.array([1.0]), 0.0) == [(None, None)]


def test_cannot_determine_is_never_flagged_by_the_policy():
    units = [DecisionUnit(k, "chunk", "x" * 40, [k]) for k in ("u1", "u2")]
    answers = {"u1": UnitAnswers(instructions=0.0, relevance=1.0, contradiction=0.9),
               "u2": UnitAnswers(instructions=0.0, relevance=1.0, contradiction=0.9, contradiction_cannot_determine=True)}
    got = [d.action for d in decide(units, answers, TriageOptions(), {"instructions": 0.5, "contradiction": 0.5})]
    assert got == ["flag", "keep"]


# ---------- the abstention band ----------

def synthetic(n: int = 400, seed: int = 0):
    rng = np.random.default_rng(seed)
    keys = [f"case-{i}" for i in range(n)]
    y = rng.random(n) < 0.5
    p = np.clip(np.where(y, 0.6, 0.4) + rng.normal(0, 0.18, n), 0, 1)
    return keys, y, p


def test_the_abstention_band_comes_from_the_calibration_fold_only():
    keys, y, p = synthetic()
    cal = np.array([is_calibration(k) for k in keys])
    assert 0 < cal.sum() < len(keys)
    band = abstention(keys, y, p, threshold=0.5)
    assert band["low"] <= 0.5 <= band["high"] and band["low"] < band["high"]
    assert band["calibration"]["n"] == cal.sum()
    assert band["accuracy"]["below"] >= band["target_accuracy"] and band["accuracy"]["above"] >= band["target_accuracy"]
    # Labels and scores of every case outside the calibration fold (fit side, or held-out test cases
    # passed in by mistake) do not move the band ...
    y2, p2 = y.copy(), p.copy()
    y2[~cal] = ~y2[~cal]
    p2[~cal] = 1 - p2[~cal]
    assert abstention(keys, y2, p2, threshold=0.5) == band
    # ... while the calibration fold's labels do.
    y3 = y.copy()
    y3[cal] = ~y3[cal]
    assert abstention(keys, y3, p, threshold=0.5) != band


def test_inside_the_band_is_cannot_determine_and_only_that_escalates(data_dir, tmp_path):
    spec = DatasetSpec(loader="attributionbench", path=str(data_dir / "attributionbench"), splits=["test"], limit=60)
    cases = list(iter_cases(spec))
    v = build("decision", question="citation", audit_dir=str(tmp_path))
    low, high = v.backend.model.abstain_band("citation")
    threshold = v.backend.model.threshold("citation")
    old_rule = new = 0
    for verdict in v.verify(cases):
        cite = next(u for u in verdict.units if u.detail["kind"] == "citation")
        a = cite.detail["answers"]
        p = a["citation"]["does_not_support"]
        inside = low <= p <= high
        assert (cite.status == "escalate") == inside == (a["citation_choice"] == "cannot_determine")
        if not inside:  # decided at the calibrated threshold, not at 0.5
            assert cite.status == ("flag" if p >= threshold else "keep")
            assert a["citation_confidence"] >= 0.75
        assert verdict.score == pytest.approx(p)  # the case score is unchanged by the band
        new += inside
        old_rule += max(p, 1 - p) < 0.75  # the fixed confidence rule this replaces
    assert new < old_rule


def test_an_explicit_choice_is_what_the_policy_reads():
    units = [DecisionUnit(k, "citation", "x" * 40, [k], claim="c") for k in ("u1", "u2", "u3")]
    probs = {"supports": 0.4, "does_not_support": 0.6, "cannot_determine": 0.0}
    answers = {"u1": UnitAnswers(instructions=0.0, citation=probs, citation_choice="cannot_determine", citation_confidence=0.9),
               "u2": UnitAnswers(instructions=0.0, citation=probs, citation_choice="supports", citation_confidence=0.8),
               "u3": UnitAnswers(instructions=0.0, citation=probs, citation_confidence=0.6)}
    got = {d.unit.key: d.action for d in decide(units, answers, TriageOptions(),
                                                  {"instructions": 0.5, "contradiction": 0.5, "escalate_below": 0.0})}
    # "cannot determine" escalates whatever the confidence; otherwise the choice, not the argmax, decides.
    assert got == {"u1": "escalate", "u2": "keep", "u3": "flag"}
    strict = decide(units, answers, TriageOptions(escalate_below=0.75), {"instructions": 0.5, "contradiction": 0.5})
    assert [d.action for d in strict] == ["escalate", "keep", "escalate"]


def test_the_context_gate_is_chosen_on_calibration_cases_only(monkeypatch):
    """fit_context_gate sees only the calibration side of the cases, and keeps the gate whose threshold
    reaching precision 0.9 gives the most recall (synthetic scores: the 0.7 gate separates best)."""
    from verifybench.training import decision as training

    cs = [(Case(id=f"c{i}", dataset="t", question="q", response="", label=i % 2 == 0, sources=[]), "contradicts"
           if i % 2 == 0 else "sentences", f"row-{i}") for i in range(400)]
    seen: list[set[str]] = []

    def scores(model, given, min_relevance):
        seen.append({key for _, _, key in given})
        y = np.array([bool(c.label) for c, _, _ in given])
        rng = np.random.default_rng(int(min_relevance * 10))
        spread = 0.1 if min_relevance == 0.7 else 0.6
        s = np.clip(np.where(y, 0.8, 0.3) + rng.normal(0, spread, len(y)), 0, 1)
        return y, s, np.array([kind for _, kind, _ in given])

    monkeypatch.setattr(training, "context_unit_scores", scores)
    gate = training.fit_context_gate(None, cs)
    cal = {key for _, _, key in cs if is_calibration(key)}
    assert 0 < len(cal) < len(cs) and all(keys == cal for keys in seen) and len(seen) == len(training.GATE_RELEVANCE)
    assert gate["min_relevance"] == 0.7 and gate["calibration"]["precision"] >= 0.9
    assert gate["calibration"]["units"] == len(cal)
