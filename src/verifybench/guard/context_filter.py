"""The decision filter in the request path: `ContextFilter` sits between retrieval or tools and the
reasoning model (the decision-model article's system).

1. Units in: chunks, tool results and citations (a cited text and the claim it is cited for), each with
   the caller's id.
2. The same typed questions of every unit, all units in one call to the decision model (the `decision`
   verifier's backends: the local calibrated model, or TypeSafe System One): relevance, contradiction,
   instructions addressed to the model, and for citations supports / does not support / cannot determine.
3. Decisions in code, by the filter policy per class of finding (`filter_policy.py`, through the decision
   verifier's triage, so a run with `question: policy` measures what is served): units carrying
   instructions dropped (or, when only suspected, kept marked "treat as data" and ranked last);
   contradicting units kept but marked and placed first; the rest ranked by relevance and trimmed to the
   budget (tokens or characters); citation checks the model cannot decide escalated, to the queue or to
   the stronger check the policy names (a guard or threshold policy file, e.g. the `nli` verifier at its
   fitted threshold), never silently kept or dropped.
4. Every unit's decision in the decision log (`guard/log.py`, one record per unit, in the case schema,
   the unit id in its `id` and `meta.filter`), so `verifybench label-queue LOG_DIR` picks units to label
   and a wrong drop can be found later.

This is a filter, not a security boundary: adversarial text can steer the decision model (docs/decision.md).
"""

from __future__ import annotations

import queue
import threading
import time
import uuid
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from verifybench.cases import Case
from verifybench.formats.decision import DecisionRecord
from verifybench.guard.filter_policy import Budget, FilterPolicy, read_filter_policy
from verifybench.guard.log import DecisionLog
from verifybench.guard.spec import GuardError
from verifybench.verifiers.decision.triage import UnitDecision, decide
from verifybench.verifiers.decision.units import DecisionUnit

MAX_UNITS = 256
UnitKind = Literal["chunk", "tool_result", "citation"]
FilterAction = Literal["keep", "flag", "drop", "trim", "escalate"]
# The decision log's action words (a guard's), for readers that know only those: a unit passed as it is
# (kept, or trimmed for room) is allowed, a marked one flagged, a dropped one blocked.
LOG_ACTION = {"keep": "allowed", "trim": "allowed", "flag": "flagged", "escalate": "flagged", "drop": "blocked"}


class FilterError(GuardError):
    """A filter request that cannot be decided (a bad unit, a decision model that failed)."""


class UnitIn(BaseModel):
    """One unit of context to judge."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1, max_length=200, description="the caller's id, kept in the answer and the log")
    kind: UnitKind = "chunk"
    text: str = Field(description="the chunk, the tool's result, or the cited text")
    claim: str | None = Field(None, description="citations only: the claim the text is cited for")

    @model_validator(mode="after")
    def _claim(self) -> UnitIn:
        if (self.kind == "citation") != (self.claim is not None):
            raise ValueError("a citation needs its claim; only a citation has one")
        return self


class FilterRequest(BaseModel):
    """A filter call: the question and its units (`POST /v1/filter`)."""

    model_config = ConfigDict(extra="forbid")

    question: str | None = Field(None, description="what the reasoning model is asked (relevance and contradiction "
                                 "are judged against it)")
    units: list[UnitIn] = Field(min_length=1, max_length=MAX_UNITS)
    budget: Budget | None = Field(None, description="this call's context budget (default: the policy's)")
    request_id: str | None = Field(None, max_length=200, description="your own request id, kept in the log")

    @model_validator(mode="after")
    def _unique(self) -> FilterRequest:
        seen: set[str] = set()
        for i, u in enumerate(self.units):
            if u.id in seen:
                raise ValueError(f"units[{i}].id: {u.id!r} is given twice")
            seen.add(u.id)
        return self


class ContextItem(BaseModel):
    """A unit that reaches the reasoning model, with what it should know about it."""

    id: str
    kind: UnitKind
    text: str
    claim: str | None = None
    mark: str | None = Field(None, description="set on a flagged unit: the disagreement or doubt to weigh")


class UnitOutcome(BaseModel):
    id: str
    kind: UnitKind
    action: FilterAction
    reason: str
    rank: int | None = Field(None, description="its place among the context units (flagged first, then by relevance)")
    mark: str | None = None
    answers: dict[str, Any] = Field(default_factory=dict, description="the decision model's answers about it")
    checked_by: str | None = Field(None, description="the stronger check that decided an escalated citation")


class FilterResult(BaseModel):
    id: str = Field(description="this call's id (a log record's id is <call id>/<unit id>)")
    request_id: str | None = None
    context: list[ContextItem] = Field(description="what to hand the reasoning model, in this order")
    units: list[UnitOutcome] = Field(description="every unit's decision, in the request's order")
    escalated: list[str] = Field(default_factory=list, description="ids of citation checks sent to the queue")
    budget: dict[str, Any] = Field(default_factory=dict)
    policy_hash: str
    latency_ms: float = 0.0


class ContextFilter:
    """Filter units of context for a reasoning model by a filter policy.

    Args:
        policy: a filter policy (a `FilterPolicy`, a mapping, or a YAML file); None: the defaults.
        log_dir: where the decision log goes (default: the policy's `log.dir`; none where it names no folder:
            a filter in Python logs only where it is told to, as a guard does); False: no log.
        allow_code: what the stronger check's guard file may import (see `Guard`).
        warm: load the decision model (and the stronger check) now, not on the first call.
    """

    def __init__(self, policy: FilterPolicy | dict | str | Path | None = None, log_dir: str | Path | bool | None = None,
                 allow_code: Iterable[str] = (), warm: bool = True):
        from verifybench.verifiers.decision.backends import make_backend
        from verifybench.verifiers.decision.verifier import DecisionOptions

        self.policy, base = read_filter_policy(policy)
        self.hash = self.policy.digest()
        options = DecisionOptions(**self.policy.decision_options())
        self.backend = make_backend(self.policy.backend, **options.model_dump())
        self.check = None
        target = self.policy.citations.escalate_to
        if target != "queue":
            from verifybench.guard.core import Guard

            path = Path(target) if Path(target).is_absolute() or base is None else base / target
            self.check = Guard(path, log_dir=False, allow_code=allow_code, warm=warm)
        spec = self.policy.log
        where = spec.dir if log_dir is None or log_dir is True else (None if log_dir is False else log_dir)
        self.log = DecisionLog(str(where), spec.max_bytes, spec.fsync, fail_open=spec.fail_open,
                               timeout_ms=spec.timeout_ms) if where else None
        self.escalations: queue.SimpleQueue[UnitOutcome] = queue.SimpleQueue()
        self._lock = threading.Lock()  # one decision-model call at a time: the encoder is shared
        self.ready = False
        if warm:
            self.warm_up()

    def warm_up(self) -> None:
        """Load the decision model with one small call (not logged)."""
        with self._lock:
            self.backend.load()
            unit = DecisionUnit("u1", "chunk", "The warm-up unit names one fact.", ["warm-up"], premise="warm-up?")
            got = self.backend.answer_batch([(Case(id="warm-up", dataset="filter", question="warm-up?", response="",
                                                   label=False), [unit])])[0]
        if isinstance(got, Exception):
            raise FilterError(f"the decision model failed its warm-up: {type(got).__name__}: {got}")
        self.ready = True

    def close(self) -> None:
        if self.log is not None:
            self.log.close()
        if self.check is not None:
            self.check.close()

    def __enter__(self) -> ContextFilter:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def describe(self) -> dict[str, Any]:
        return {"policy_hash": self.hash, "backend": self.backend.name, "thresholds": self.backend.thresholds,
                "stronger_check": None if self.check is None else [c.id for c in self.check.checks],
                **self.policy.model_dump(mode="json", exclude={"log"})}

    # -- the call ------------------------------------------------------------------------------------
    def filter(self, units: list[dict] | list[UnitIn], question: str | None = None,
               budget: dict | Budget | None = None, request_id: str | None = None) -> FilterResult:
        """Decide every unit; its records are on disk (with a log) before this returns."""
        try:
            req = FilterRequest.model_validate({"question": question, "units": units, "budget": budget,
                                                "request_id": request_id})
        except ValueError as e:  # pydantic's ValidationError names the field
            raise FilterError(f"filter request: {e}") from None
        return self.decide(req)

    def decide(self, req: FilterRequest) -> FilterResult:
        t0 = time.perf_counter()
        call = uuid.uuid4().hex
        case = Case(id=call, dataset="filter", question=req.question, response="", label=False)
        dunits = [DecisionUnit(f"u{i + 1}", u.kind, u.text, [u.id], claim=u.claim, premise=req.question or "")
                  for i, u in enumerate(req.units)]
        with self._lock:
            got = self.backend.answer_batch([(case, dunits)])[0]
        if isinstance(got, Exception):
            from verifybench.verifiers.llm import describe

            raise FilterError(f"the decision model failed: {describe(got)}")
        decisions = decide(dunits, got, self.policy.triage(req.budget), self.backend.thresholds)
        checked = {d.unit.key: self._stronger(d, req.question) for d in decisions if d.action == "escalate"}
        ids = {d.unit.key: u.id for u, d in zip(req.units, decisions)}
        outcomes = [_named(self._outcome(u, d, checked.get(d.unit.key)), ids) for u, d in zip(req.units, decisions)]
        budget = req.budget or self.policy.budget
        result = FilterResult(id=call, request_id=req.request_id, context=_context(req, decisions, outcomes),
                              units=outcomes, escalated=[o.id for o in outcomes if o.action == "escalate"],
                              budget=budget.model_dump(exclude_none=True), policy_hash=self.hash,
                              latency_ms=(time.perf_counter() - t0) * 1000.0)
        for o in outcomes:
            if o.action == "escalate":
                self.escalations.put(o)
        if self.log is not None:
            futures = [self.log.append(self.record(req, result, u, o, d, checked.get(d.unit.key)))
                       for u, o, d in zip(req.units, outcomes, decisions)]
            for f in futures:
                self.log.committed(f)
        return result

    def _stronger(self, d: UnitDecision, question: str | None) -> Any:
        """The stronger check's decision about an escalated citation (None: no check, the queue takes it)."""
        if self.check is None:
            return None
        return self.check.check(response=d.unit.claim or "", sources=[{"id": d.unit.source_ids[0], "text": d.unit.text}],
                                question=question)

    def _outcome(self, u: UnitIn, d: UnitDecision, check: Any) -> UnitOutcome:
        action, reason, mark, by = d.action, d.reason, d.mark, None
        if check is not None:
            ran = [r for r in check.checks if r.skipped is None]
            by = ", ".join(r.verifier for r in ran)
            scores = "; ".join(f"{r.verifier} {r.score:.3f} vs {r.threshold:.3f}" for r in ran
                               if r.score is not None and r.threshold is not None)
            if check.errors or check.timeouts:
                reason += f"; the stronger check ({by}) failed, so it stays escalated"
            elif check.flagged:
                action = self.policy.citations.unsupported
                reason = f"the stronger check ({by}) finds the citation does not support its claim ({scores})"
                mark = "the cited text does not support its claim" if action == "flag" else None
            else:
                action, reason, mark = "keep", f"the stronger check ({by}) finds the citation supports its claim ({scores})", None
        return UnitOutcome(id=u.id, kind=u.kind, action=action, reason=reason, rank=d.rank, mark=mark,
                           answers=d.answers.to_dict(), checked_by=by)

    # -- the log ---------------------------------------------------------------------------------------
    def record(self, req: FilterRequest, result: FilterResult, u: UnitIn, o: UnitOutcome, d: UnitDecision,
               check: Any) -> DecisionRecord:
        """A unit's decision as a decision-log record (`formats.decision.DecisionRecord`, as a guard's): the unit is the
        response (a citation's claim, its cited text the source), the unit kind the doc type, each question
        a check with its score (higher = more likely bad) and the threshold the policy applied."""
        a, t = d.answers, self.backend.thresholds
        checks = [_check("filter.instructions", a.instructions, _applied(self.policy.instructions.drop_at, t["instructions"]))]
        if a.contradiction is not None:
            checks.append(_check("filter.contradiction", a.contradiction,
                                 _applied(self.policy.contradiction.at, t["contradiction"])))
        if a.relevance is not None:
            checks.append(_check("filter.irrelevance", 1.0 - a.relevance,
                                 1.0 - self.policy.relevance.min if self.policy.relevance.min > 0 else None))
        if a.not_supported is not None:
            checks.append(_check("filter.citation", a.not_supported, self.backend.fitted.get("citation")))
        for r in [] if check is None else check.checks:
            checks.append({"verifier": r.verifier, "score": r.score, "threshold": r.threshold,
                           "threshold_source": r.threshold_source, "slice": r.slice, "flagged": r.flagged,
                           "error": r.error, "timed_out": r.timed_out, "skipped": r.skipped,
                           "latency_ms": round(r.latency_ms, 3)})
        cited = u.kind == "citation"
        return DecisionRecord.model_validate({
            **DecisionRecord.header(), "id": f"{result.id}/{u.id}", "response": u.claim if cited else u.text,
            "sources": [{"id": u.id, "text": u.text}] if cited else [], "question": req.question, "doc_type": u.kind,
            "meta": {"filter": {"call": result.id, "unit": u.id, "kind": u.kind, "action": o.action, "rank": o.rank,
                                "mark": o.mark, "checked_by": o.checked_by}},
            "decision": {"action": LOG_ACTION[o.action], "mode": "enforce", "applied": o.action in ("drop", "trim"),
                         "escalated": o.action == "escalate", "request_id": req.request_id, "reason": o.reason,
                         "checks": checks, "removed": [], "guard_hash": self.hash, "policy_hash": self.hash,
                         "latency_ms": round(result.latency_ms, 3),
                         "time": datetime.now(UTC).isoformat(timespec="milliseconds")},
        })


def _applied(given: float | None, model: float | None) -> float | None:
    """The threshold the policy applies: its own, else the model's."""
    return given if given is not None else model


def _check(name: str, score: float | None, threshold: float | None) -> dict[str, Any]:
    flagged = None if score is None or threshold is None else score >= threshold
    return {"verifier": name, "score": score, "threshold": threshold, "threshold_source": "fixed",
            "slice": None, "flagged": flagged, "error": None, "timed_out": False, "skipped": None, "latency_ms": None}


def _named(o: UnitOutcome, ids: dict[str, str]) -> UnitOutcome:
    """The outcome with the decision model's unit keys (u1, u2, ...) replaced by the caller's ids."""
    other = (o.answers.get("extra") or {}).get("contradicts")
    if other in ids:
        o.answers["extra"]["contradicts"] = ids[other]
        o.reason = o.reason.replace(f"against {other})", f"against {ids[other]})")
        if o.mark:
            o.mark = o.mark.replace(f"({other})", f"({ids[other]})")
    return o


def _context(req: FilterRequest, decisions: list[UnitDecision], outcomes: list[UnitOutcome]) -> list[ContextItem]:
    """The units that pass, ranked context units first (flagged, then by relevance), then the citations
    that passed, in the request's order."""
    passed = [(u, o) for u, o in zip(req.units, outcomes) if o.action in ("keep", "flag")]
    ranked = sorted((p for p in passed if p[1].rank is not None), key=lambda p: p[1].rank or 0)
    rest = [p for p in passed if p[1].rank is None]
    return [ContextItem(id=u.id, kind=u.kind, text=u.text, claim=u.claim, mark=o.mark) for u, o in ranked + rest]
