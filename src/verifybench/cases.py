"""The core types that flow through verifybench: a labeled `Case` in, a `Verdict` out.

Score convention, everywhere: a higher `Verdict.score` means the case is more likely hallucinated.
The positive class is "hallucinated" (`Case.label is True`). A case without a label (`label is None`:
production traffic, a trace) is still a case: it is scored like any other, and left out of the metrics
that need a label.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr


class Source(BaseModel):
    """One piece of grounding text the response should be faithful to."""

    model_config = ConfigDict(frozen=True)

    id: str
    text: str
    metadata: dict[str, Any] = Field(default_factory=dict)


class Span(BaseModel):
    """Character offsets [start, end) of hallucinated text inside the response."""

    start: int
    end: int
    text: str | None = None


class Case(BaseModel):
    """One example: sources, a response to check, and whether it is hallucinated (None: not labeled)."""

    id: str
    dataset: str
    doc_type: str = "default"
    split: str | None = None
    question: str | None = None
    sources: list[Source] = Field(default_factory=list)
    response: str
    claims: list[dict[str, Any]] | None = None
    label: bool | None = Field(None, description="True when the response is hallucinated (the positive class); "
                               "None when the case is not labeled")
    spans: list[Span] | None = None
    meta: dict[str, Any] = Field(default_factory=dict)

    # Where the loader read this case (a `Location`); not serialised, used to name duplicates.
    _loc: Any = PrivateAttr(default=None)

    def at(self, loc: Any) -> Case:
        self._loc = loc
        return self


def label_name(label: bool | None) -> str:
    """How counts name a label: hallucinated, faithful, or unlabeled."""
    return "unlabeled" if label is None else "hallucinated" if label else "faithful"


class Unit(BaseModel):
    """A part of the response a verifier judged on its own (a claim, a sentence, a chunk)."""

    text: str
    score: float | None = None
    status: str | None = None
    evidence: str | None = None
    start: int | None = None
    end: int | None = None
    detail: dict[str, Any] = Field(default_factory=dict)


class Verdict(BaseModel):
    """A verifier's judgement of one case.

    `score` is None exactly when `error` is set; such a verdict is kept and counted by the metrics,
    never dropped. `latency_ms` is filled in by the runner when the verifier leaves it out, and
    `latency_kind` says how it was measured: "case" (this case's own time), "batch" (its batch's wall
    time shared equally by the batch's cases), "warmup" (in the first batch a worker scored, which
    includes loading models: reported apart, left out of the percentiles).
    """

    case_id: str
    verifier: str
    score: float | None = None
    units: list[Unit] | None = None
    error: str | None = None
    latency_ms: float | None = None
    latency_kind: Literal["case", "batch", "warmup"] | None = None
    usage: dict[str, float] | None = None
    cost_usd: float | None = None
    detail: dict[str, Any] = Field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.error is None and self.score is not None
