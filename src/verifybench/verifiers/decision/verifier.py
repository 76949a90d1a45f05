"""`decision`: a cheap typed decision model answers the same questions about every unit; code decides.

Per case: split into units (units.py), ask every unit's questions in one request per case (TypeSafe)
or one vectorised pass per batch (local model), apply the policy (policy.py), write every unit with
its answers and action to the audit log and low-confidence citation checks to the escalation queue
(audit.py). What the triage policy does is in triage.py. The case score is the answer of the one
question the suite measures (`question`), higher = more likely bad:

- `injection`: the highest P(instructions addressed to the model) over the units;
- `citation`: the highest P(the citation does not support its claim) over citation units;
- `contradiction`: the highest P(contradicts the premise) over the units (with `response_as_unit`, the
  response's own);
- `relevance`: 1 - the best unit's relevance (no unit helps answer the question);
- `policy`: the share of probe units (or of all context units) that the triage policy kept out of the
  context.

All answers of all units go into the verdict's units and the audit log, whatever `question` is.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from verifybench.cases import Case, Unit, Verdict
from verifybench.verifiers.anchors.checkworthy import skipped_status
from verifybench.verifiers.base import Verifier, default_cache, operational
from verifybench.verifiers.decision.audit import AuditLog, audit_folder
from verifybench.verifiers.decision.questions import UnitAnswers
from verifybench.verifiers.decision.triage import TriageOptions, UnitDecision, decide
from verifybench.verifiers.decision.units import DecisionUnit, response_citations, split_units
from verifybench.verifiers.latency import CaseClock
from verifybench.verifiers.llm import Prices, describe

UNIT_TEXT_CHARS = 400  # verdicts keep the head of each unit; the audit log keeps ids, not texts


class DecisionOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    backend: Literal["local", "typesafe"] = "local"
    question: Literal["injection", "citation", "contradiction", "relevance", "policy"] = "injection"
    response_as_unit: bool = Field(False, description="judge the response as one more unit (kind 'answer')")
    cite_response: bool = Field(False, description="judge each check-worthy sentence of the response as a citation "
                                "unit: the sentence is the claim, the case's sources its cited text")
    policy: TriageOptions = Field(default_factory=TriageOptions, description="the triage policy (triage.py)")
    # local backend
    instructions_by_sentence: bool = Field(False, description="read P(instructions) from each sentence of a window "
                                           "too (the worst decides), not only from whole windows")
    params: str | None = Field(None, description="fitted parameters (JSON); default: the committed params/local-v1.json")
    cache_dir: str | None = operational(default_factory=lambda: default_cache("embeddings"), description="null: no disk cache")
    # TypeSafe backend
    typesafe_model: str = "jev-latest"
    cassette_dir: str | None = Field(None, description="replay recorded traffic from this folder (replay-only)")
    api_key_env: str = "TYPESAFE_API_KEY"
    base_url: str | None = None
    timeout_s: float = operational(10.0, gt=0)
    retries: int = operational(2, ge=0, description="retries of a timeout, 429, 5xx or non-JSON 200")
    prices: Prices | None = Field(None, description="USD per million input/output tokens, to report cost per case")
    # where the audit log and escalation queue go
    audit_dir: str | None = operational(None, description="default: <run directory>/decision, else ./reports/decision-audit")


class DecisionVerifier(Verifier):
    name: ClassVar[str] = "decision"
    description: ClassVar[str] = "decision-model filter: typed questions per unit, drop/flag/rank/trim/escalate policy"
    probabilistic = True  # a class default, set per instance from the question below
    Options: ClassVar[type[BaseModel]] = DecisionOptions
    lazy = ("_backend",)

    def __init__(self, id: str | None = None, **options):
        super().__init__(id=id, **options)
        # Injection, citation and contradiction scores are probabilities; a policy share and 1 - relevance
        # are not, so the metrics must not report their calibration.
        self.probabilistic = self.options.question in ("injection", "citation", "contradiction")

    @property
    def backend(self):
        def build():
            from verifybench.verifiers.decision.backends import make_backend

            return make_backend(self.options.backend, **self.options.model_dump())

        return self._build_once("_backend", build)

    def verify(self, batch: list[Case]) -> list[Verdict]:
        clock = CaseClock(len(batch))
        items, split_errors = [], {}
        skipped: dict[str, list[tuple[int, int, str]]] = {}  # cite_response: sentences not asked about
        for i, case in enumerate(batch):
            with clock.case(i):
                try:
                    if self.options.cite_response:
                        units, skipped[case.id] = response_citations(case)
                        items.append((case, units))
                    else:
                        items.append((case, split_units(case, self.options.response_as_unit)))
                except ValueError as e:
                    split_errors[case.id] = f"ValueError: {e}"
                    items.append((case, []))
        todo = [(i, it) for i, it in enumerate(items) if it[0].id not in split_errors and it[1]]
        with clock.loading():  # building the backend and loading its encoder are warm-up, not a request's time
            backend = self.backend
            backend.load()
        answered: list = []
        if todo and backend.batched:
            # One encoder pass for the batch, shared out by the text each case brought to it.
            work = [[u.text for u in units] for _, units in items]
            with clock.batched(work):
                answered = backend.answer_batch([it for _, it in todo])
        elif todo:
            answered = backend.answer_batch([it for _, it in todo])
            for (i, (case, _)) in todo:  # one request per case: its own time
                clock.own[i] += backend.case_ms.get(case.id, 0.0)
        results: dict[int, dict | Exception] = {i: a for (i, _), a in zip(todo, answered)}
        verdicts, audit_rows, escalations = [], [], []
        for i, (case, units) in enumerate(items):
            with clock.case(i):
                if case.id in split_errors:
                    verdicts.append(Verdict(case_id=case.id, verifier=self.id, error=split_errors[case.id]))
                    continue
                if not units:
                    verdicts.append(Verdict(case_id=case.id, verifier=self.id, error="the case has no units to judge"))
                    continue
                got = results[i]
                if isinstance(got, Exception):
                    error = describe(got)  # scrubbed: a server may echo the key in its error body
                    verdicts.append(Verdict(case_id=case.id, verifier=self.id, error=error,
                                            detail={"backend": backend.name}))
                    audit_rows += [self._audit_row(case, u, None, "error", error) for u in units]
                    continue
                decisions = decide(units, got, self.options.policy, backend.thresholds)
                audit_rows += [self._audit_row(case, d.unit, d.answers, d.action, d.reason, d.rank) for d in decisions]
                escalations += [self._escalation(case, d) for d in decisions if d.action == "escalate"]
                verdicts.append(self._verdict(case, decisions, skipped.get(case.id, [])))
        AuditLog(audit_folder(self.options.audit_dir, self.run_dir), self.id).write(audit_rows, escalations)
        clock.finish(verdicts)  # each case's own time plus its share of the batched encoder pass
        # Tokens a remote backend reported for each case, and their cost at the suite's prices.
        spent = getattr(backend, "case_usage", {})
        prices = self.options.prices
        for v in verdicts:
            if v.case_id in spent:
                v.usage = dict(spent[v.case_id])
                if prices is not None and "input_tokens" in v.usage:
                    v.cost_usd = prices.cost(v.usage["input_tokens"], v.usage["output_tokens"])
        return verdicts

    def _verdict(self, case: Case, decisions: list[UnitDecision], skipped: list[tuple[int, int, str]]) -> Verdict:
        q = self.options.question
        per_unit = [unit_score(q, d.unit, d.answers) for d in decisions]
        units = [_unit(d, s) for d, s in zip(decisions, per_unit)]
        units += [Unit(text=case.response[a:b], score=None, status=skipped_status(why), start=a, end=b,
                       detail={"skipped": why}) for a, b, why in skipped]  # listed, as the nli verifier does
        detail = {"backend": self.backend.name, "question": q, "fitted": self.backend.fitted,
                  "actions": {a: sum(d.action == a for d in decisions) for a in ("keep", "flag", "drop", "trim", "escalate")}}
        if q == "policy":
            probes = [d for d in decisions if d.unit.probe] or [d for d in decisions if d.unit.kind != "answer"]
            if not probes:
                return Verdict(case_id=case.id, verifier=self.id, units=units, detail=detail,
                               error="no context units for the policy to place (the case has no sources)")
            score = sum(not d.passed for d in probes) / len(probes)
            detail["probes_passed"] = sum(d.passed for d in probes)
            return Verdict(case_id=case.id, verifier=self.id, score=score, units=units, detail=detail)
        if q == "contradiction" and self.options.response_as_unit:
            # The response's own contradiction, as documented: a chunk that disagrees with the question
            # says nothing about whether the answer does.
            per_unit = [s if d.unit.kind == "answer" else None for d, s in zip(decisions, per_unit)]
        scored = [s for s in per_unit if s is not None]
        if not scored:
            return Verdict(case_id=case.id, verifier=self.id, units=units, detail=detail,
                           error=f"no unit of this case answers the {q!r} question (e.g. no citation units)")
        score = max(scored) if q != "relevance" else min(scored)
        return Verdict(case_id=case.id, verifier=self.id, score=float(score), units=units, detail=detail)

    def _audit_row(self, case: Case, unit: DecisionUnit, answers: UnitAnswers | None, action: str, reason: str,
                   rank: int | None = None) -> dict:
        return {"verifier": self.id, "backend": self.options.backend, "case_id": case.id, "unit": unit.key,
                "unit_id": f"{case.id}/{unit.key}", "kind": unit.kind, "sources": unit.source_ids,
                "answers": answers.to_dict() if answers else None, "action": action, "reason": reason, "rank": rank,
                "tokens": unit.tokens}

    def _escalation(self, case: Case, d: UnitDecision) -> dict:
        return {"verifier": self.id, "case_id": case.id, "unit_id": f"{case.id}/{d.unit.key}", "claim": d.unit.claim,
                "cited_text": d.unit.text, "answers": d.answers.to_dict(), "reason": d.reason}


def _unit(d: UnitDecision, score: float | None) -> Unit:
    """A verdict unit: a response sentence (cite_response) where it sits in the response, else the unit's text."""
    detail = {"key": d.unit.key, "kind": d.unit.kind, "sources": d.unit.source_ids, "rank": d.rank,
              "probe": d.unit.probe, "tokens": d.unit.tokens, "answers": d.answers.to_dict()}
    if d.unit.span is not None:
        return Unit(text=d.unit.claim or "", start=d.unit.span[0], end=d.unit.span[1], score=score,
                    status=d.action, evidence=d.reason, detail=detail)
    return Unit(text=d.unit.text[:UNIT_TEXT_CHARS], score=score, status=d.action, evidence=d.reason, detail=detail)


def unit_score(question: str, unit: DecisionUnit, a: UnitAnswers) -> float | None:
    """This unit's "bad" score for `question` (None when the question does not apply to it)."""
    if question in ("injection", "policy"):
        return a.instructions
    if question == "citation":
        return a.not_supported if unit.kind == "citation" else None
    if question == "contradiction":
        return a.contradiction
    if question == "relevance":
        return None if a.relevance is None or unit.kind == "answer" else 1.0 - a.relevance
    raise ValueError(f"unknown question {question!r}")
