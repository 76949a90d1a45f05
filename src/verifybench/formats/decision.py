"""A decision record: one line of a guard's decision log (`decisions-<pid>-<seq>.jsonl`), written durably
before the decision's response returns. The case schema (id, response, sources, question, doc_type, meta)
plus the decision, so production traffic is a dataset: the `guardlog` loader reads it as cases, drift
and label queues as columns (`feedback.window`), all through this model.

Every line names its kind and format, so a log that spans an upgrade is read line by line as each
line was written; a line from before kinds (verifybench 0.1) is format 1. A reviewer may add a `label`
to a record; nothing else is added by hand."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from verifybench.formats.base import Stored, omitted

# NaN is written as NaN (and refused by the log's writer, naming the field), never silently as null. Built
# at import, unlike the other formats' models: the guard serialises records it constructs unvalidated.
_CONFIG = ConfigDict(defer_build=False, extra="forbid", ser_json_inf_nan="constants")


class _Part(BaseModel):
    model_config = _CONFIG


class SourceRecord(_Part):
    """A source the answer was checked against."""

    id: str = Field(description="the source's id")
    text: str = Field(description="its text")


class CheckRecord(_Part):
    """One check of the decision (a verifier at its policy threshold)."""

    verifier: str = Field(description="the verifier id (the policy's)")
    score: float | None = Field(None, description="its score, higher = more likely hallucinated; null: an error, "
                                "a timeout or a check that did not run")
    threshold: float | None = Field(None, description="the threshold applied (flag when score >= threshold)")
    threshold_source: str | None = Field(None, description="slice, fallback (the whole set's) or fixed")
    slice: str | None = Field(None, description="the policy slice whose threshold applied")
    flagged: bool | None = Field(None, description="score >= threshold")
    error: str | None = Field(None, description="why the check gave no score")
    timed_out: bool = Field(False, description="the request's time budget ran out before this check answered")
    skipped: str | None = Field(None, description="why the check did not run (a cascade's cheap check decided)")
    latency_ms: float | None = Field(None, description="the check's time")


class RemovedRecord(_Part):
    """A flagged unit `strip` removed from the answer."""

    verifier: str = Field(description="the check that flagged it")
    start: int = Field(description="its first character in the response")
    end: int = Field(description="one past its last character")
    text: str = Field(description="the text removed")


class DecisionPart(_Part):
    """What the guard decided and why."""

    action: str | None = Field(None, description="allowed, flagged, blocked or rewritten")
    mode: str | None = Field(None, description="enforce, or shadow (decided and logged, response unchanged)")
    applied: bool | None = Field(None, description="the response was changed (enforce mode, blocked or rewritten)")
    escalated: bool | None = Field(None, description="sent to a person (action escalate)")
    request_id: str | None = Field(None, description="the caller's id for the request")
    reason: str | None = Field(None, description="the decision in words")
    checks: list[CheckRecord] = Field(default_factory=list, description="every check, in the guard's order")
    removed: list[RemovedRecord] = Field(default_factory=list, description="what strip removed")
    guard_hash: str | None = Field(None, description="the guard's settings and verifiers' config hashes, hashed")
    policy_hash: str | None = Field(None, description="sha256 of the policy file's bytes (first 16 hex digits)")
    latency_ms: float | None = Field(None, description="the whole decision's time")
    time: str | None = Field(None, description="when it was decided (UTC, ISO 8601)")


class DecisionRecord(Stored):
    """One line of a guard's decision log: the case and the decision."""

    model_config = ConfigDict(defer_build=False, extra="forbid", populate_by_name=True, coerce_numbers_to_str=True,
                              ser_json_inf_nan="constants")

    KIND = "verifybench.decision"
    VERSION = 2
    # Format 1: lines before kinds (verifybench 0.1). 1 -> 2: the kind and the writer named.
    LEGACY = 1
    MIGRATIONS = {1: lambda doc: doc}
    TITLE = "one decision of a guard, a line of its decision log"

    id: str = Field(description="the case id (the guard's, unique per request)")
    response: str = Field(description="the answer checked")
    sources: list[SourceRecord | str] = Field(default_factory=list, description="what it was checked against")
    question: str | None = Field(None, description="the question, when the request gave one")
    doc_type: str | None = Field(None, description="the slice field a policy by doc_type reads")
    meta: dict[str, Any] = Field(default_factory=dict, description="the request's meta (a policy by meta.<key> "
                                 "reads it)")
    decision: DecisionPart = Field(default_factory=DecisionPart, description="what the guard decided (a record "
                                   "labeled by hand may have none: it is a case, not a decision)")
    label: bool | int | str | None = omitted(description="added by a reviewer or a label queue: hallucinated / "
                                             "faithful (true / false, 1 / 0)")
