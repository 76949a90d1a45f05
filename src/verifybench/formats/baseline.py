"""A baseline (metrics/<suite>.json, committed): what `verifybench gate` compares a run against. Per
verifier and slice the threshold held and where it came from, the test split's quality numbers,
latency and cost; the identity of the cases (so a run over other cases is refused); and every test
case's score, for the paired comparison."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from verifybench.formats.base import Stored, omitted


class _Part(BaseModel):
    model_config = ConfigDict(defer_build=True, extra="forbid")


class FlagAll(_Part):
    """What flagging every case of a split scores: the floor a threshold metric is read against."""

    split: str | None = None
    n: int | None = None
    precision: float | None = None
    recall: float | None = None
    specificity: float | None = None
    f1: float | None = None
    accuracy: float | None = None
    balanced_accuracy: float | None = None


class BaselineSlice(_Part):
    threshold: float | None = Field(description="held by the gate (null: only AUROC and AUPRC are gated)")
    threshold_kind: str | None = None
    threshold_source: str | None = None
    threshold_degenerate: str | None = None
    threshold_near_degenerate: str | None = None
    fallback_from: str | None = None
    threshold_warning: str | None = None
    test_cases: int
    test_hallucinated: int
    test_faithful: int
    test_errors: int
    f1: float | None = None
    precision: float | None = None
    recall: float | None = None
    balanced_accuracy: float | None = None
    auroc: float | None = None
    auprc: float | None = None
    flag_all: FlagAll | None = None
    cases: int | None = None
    errors: int | None = None
    p50_ms: float | None = None
    p95_ms: float | None = None
    p99_ms: float | None = None
    latency_basis: str | None = None
    warmup_ms: float | None = None
    cost_per_1k: float | None = None
    flicker: dict[str, float | None] | None = Field(None, description="how far each metric moves between "
                                                    "repeats of one run (repeats only)")


class BaselineVerifier(_Part):
    config_hash: str | None = None
    config: dict[str, Any] | None = None
    slices: dict[str, BaselineSlice]
    repeats: int | None = omitted(description="scored this many times a case (absent: once)")
    test_scores: dict[str, float | None] = Field(description="case id -> test-split score (null: an error verdict)")


class BaselineSettings(_Part):
    bootstrap: int
    seed: int
    test_fraction: float
    min_per_class: int


class Baseline(Stored):
    KIND = "verifybench.baseline"
    VERSION = 3
    TITLE = "the figures and test scores `verifybench gate` compares a run against"
    # 2 -> 3: the kind and the writer named; nothing else changed. Format 1 (before per-case test scores)
    # is not readable: a gate could not pair its cases.
    MIGRATIONS = {2: lambda doc: doc}

    suite: str
    suite_hash: str
    suite_scope_hash: str
    dataset_hash: str
    content_hash: str | None = None
    cases_hash: str
    by: str
    target: str
    settings: BaselineSettings
    test_slices: dict[str, str] = Field(description="case id -> its slice, for the test split")
    verifiers: dict[str, BaselineVerifier]
    notes: list[str] = Field(default_factory=list)
