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


class BaselineFlagAll(_Part):
    """What flagging every case of a split scores: the floor a threshold metric is read against."""

    split: str | None = Field(None, description="the split (test)")
    n: int | None = Field(None, description="its cases")
    precision: float | None = Field(None, description="its share of hallucinated cases")
    recall: float | None = Field(None, description="1: every hallucinated case flagged")
    specificity: float | None = Field(None, description="0: every faithful case flagged")
    f1: float | None = Field(None, description="F1 of flagging everything")
    accuracy: float | None = Field(None, description="accuracy of flagging everything")
    balanced_accuracy: float | None = Field(None, description="0.5")


class BaselineSlice(_Part):
    """One verifier on one slice: the threshold held, the test split's figures at it, latency and cost."""

    threshold: float | None = Field(description="held by the gate (null: only AUROC and AUPRC are gated)")
    threshold_kind: str | None = Field(None, description="fitted, fallback or given (by a policy)")
    threshold_source: str | None = Field(None, description="where it came from, in words")
    threshold_degenerate: str | None = Field(None, description="it flags every calibration case, or none: its "
                                             "threshold metrics are not gated")
    threshold_near_degenerate: str | None = Field(None, description="it barely separates the classes")
    fallback_from: str | None = Field(None, description="the slice whose threshold this one fell back to")
    threshold_warning: str | None = Field(None, description="why it is null, or fell back")
    test_cases: int = Field(description="test-split cases of the slice (a gate needs `--min-cases`)")
    test_hallucinated: int = Field(description="of them, hallucinated")
    test_faithful: int = Field(description="of them, faithful")
    test_errors: int = Field(description="of them, error verdicts (counted as wrong)")
    f1: float | None = Field(None, description="F1 on the test split at the threshold, errors counted as wrong")
    precision: float | None = Field(None, description="precision, the same way")
    recall: float | None = Field(None, description="recall, the same way")
    balanced_accuracy: float | None = Field(None, description="balanced accuracy, the same way")
    auroc: float | None = Field(None, description="area under the ROC curve on the test split")
    auprc: float | None = Field(None, description="area under the precision-recall curve on the test split")
    flag_all: BaselineFlagAll | None = Field(None, description="flagging every test case, for comparison")
    cases: int | None = Field(None, description="labeled cases of the slice (both splits)")
    errors: int | None = Field(None, description="of them, error verdicts")
    p50_ms: float | None = Field(None, description="median latency per case")
    p95_ms: float | None = Field(None, description="95th percentile latency per case")
    p99_ms: float | None = Field(None, description="99th percentile latency per case")
    latency_basis: str | None = Field(None, description="case (timed per case), batch_average, mixed or "
                                      "unrecorded: a gate holds per-case figures only, unless asked")
    warmup_ms: float | None = Field(None, description="time of the first batch (model loading), left out of the "
                                    "percentiles")
    cost_per_1k: float | None = Field(None, description="cost of 1,000 cases (USD, from usage and prices)")
    flicker: dict[str, float | None] | None = omitted(description="metric -> how far it moves between repeats of "
                                                      "one run (repeats only): a drop inside it is not a regression")


class BaselineVerifier(_Part):
    """One verifier of the baseline."""

    config_hash: str | None = Field(None, description="its configuration's hash (a changed one is gated, and "
                                    "noted)")
    config: dict[str, Any] | None = Field(None, description="its options as the manifest records them")
    slices: dict[str, BaselineSlice] = Field(description="slice (`all`: the whole set) -> its figures")
    repeats: int | None = omitted(description="scored this many times a case (absent: once)")
    test_scores: dict[str, float | None] = Field(description="case id -> test-split score (null: an error verdict)")


class BaselineSettings(_Part):
    """The run's metric settings the gate's paired bootstrap uses."""

    bootstrap: int = Field(description="bootstrap resamples")
    seed: int = Field(description="the seed of the split and the resamples")
    test_fraction: float = Field(description="share of cases drawn to the test split (when the data has none)")
    min_per_class: int = Field(description="calibration cases of each class a slice needs for its own threshold")


class Baseline(Stored):
    """A baseline: what `verifybench gate` compares a run against, case by case."""

    KIND = "verifybench.baseline"
    VERSION = 3
    TITLE = "the figures and test scores `verifybench gate` compares a run against"
    # 2 -> 3: the kind and the writer named; nothing else changed. Format 1 (before per-case test scores)
    # is not readable: a gate could not pair its cases.
    MIGRATIONS = {2: lambda doc: doc}

    suite: str = Field(description="the suite's name")
    suite_hash: str = Field(description="the suite file's hash")
    suite_scope_hash: str = Field(description="the hash of the suite's dataset and metrics blocks (what a "
                                  "baseline from before content hashes is compared by)")
    dataset_hash: str = Field(description="over the files read and the selection")
    content_hash: str | None = Field(None, description="over the cases' content: a run over the same cases "
                                     "compares, whatever file they came from")
    cases_hash: str = Field(description="over the case ids, labels and splits")
    by: str = Field(description="the slice field")
    target: str = Field(description="what the thresholds were fitted for")
    settings: BaselineSettings = Field(description="the metric settings the comparison uses")
    test_slices: dict[str, str] = Field(description="case id -> its slice, for the test split")
    verifiers: dict[str, BaselineVerifier] = Field(description="verifier id -> its figures and test scores")
    notes: list[str] = Field(default_factory=list, description="what the baseline says out loud (a slice not "
                             "gated at a threshold, a verifier the policy does not name)")
