"""metrics.json: a run's numbers, written by `verifybench run` / `report` from its stored results.

It is derived data: `verifybench report RUN_DIR` computes it again from results.jsonl, so an older
format needs no migration (the reader says so and the caller recomputes). The deep, optional sections
(span metrics, minimal pairs, shortcut cues, reliability bins, LLM usage) keep their own shape as
mappings; everything a gate, a policy or a table reads is typed."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from verifybench.formats.base import Stored


class _Part(BaseModel):
    model_config = ConfigDict(defer_build=True, extra="forbid")


class Interval(_Part):
    low: float
    high: float
    resamples: int | None = None


class OwnFit(_Part):
    """The threshold a slice too small for `min_per_class` would get fitted on its own cases."""

    value: float
    target: str
    interval: Interval | None = None


class Threshold(_Part):
    """A slice's threshold and where it came from."""

    value: float | None = Field(description="flag when score >= value; null: none (too few cases, or a "
                                "null in a policy)")
    kind: str | None = Field(description="fitted / fallback / given")
    source: str | None = Field(description="in words: fitted on what, fallen back to what, given by what")
    warning: str | None = None
    target: str
    degenerate: str | None = Field(None, description="it flags every calibration case, or none")
    near_degenerate: str | None = None
    interval: Interval | None = Field(None, description="95% bootstrap interval of the fitted threshold")
    fallback_from: str | None = None
    own_fit: OwnFit | None = None


class Confusion(_Part):
    tp: int
    fp: int
    fn: int
    tn: int


class Rates(_Part):
    precision: float | None = None
    recall: float | None = None
    specificity: float | None = None
    f1: float | None = None
    accuracy: float | None = None
    balanced_accuracy: float | None = None


class OperatingPoint(Rates):
    """Precision, recall, F1 ... of one split at the slice's threshold."""

    n: int
    n_scored: int
    confusion: Confusion
    errors_as_wrong: Rates = Field(description="the same with error verdicts counted as wrong")
    ci: dict[str, list[float | None]] | None = Field(None, description="95% bootstrap intervals (test split)")
    tuned: bool | None = Field(None, description="true on the calibration split: the threshold was fitted there")


class FlagAll(Rates):
    split: str
    n: int


class Curve(_Part):
    threshold: list[float]
    tp: list[int]
    fp: list[int]
    n_pos: int
    n_neg: int
    split: str | None = None


class Warmup(_Part):
    cases: int
    total_ms: float
    mean_ms: float


class Latency(_Part):
    warmup: Warmup | None = None
    includes_warmup: bool | None = None
    basis: str | None = Field(None, description="case / batch_average / mixed / unrecorded")
    p50: float | None = None
    p95: float | None = None
    p99: float | None = None
    mean: float | None = None
    throughput_per_s: float | None = None
    per_unit_p50: float | None = None
    per_unit_p95: float | None = None
    units_per_case: float | None = None


class UnlabeledCounts(_Part):
    """Cases of the slice without a label: scored (latency, cost), left out of every label metric."""

    n: int = Field(description="unlabeled cases")
    n_scored: int = Field(description="of them, scored")
    errors: int = Field(description="of them, error verdicts")


class SliceMetrics(_Part):
    """One verifier on one slice of cases (or all of them)."""

    n: int
    n_scored: int
    errors: int
    positives: int
    negatives: int
    labels: dict[str, dict[str, int]] = Field(description="split -> class -> labeled cases")
    needs: dict[str, Any] = Field(description="how many more labeled cases a threshold and a gate need")
    auroc: float | None = None
    auprc: float | None = None
    ci: dict[str, list[float | None]] | None = None
    unlabeled: UnlabeledCounts | None = None
    latency_ms: Latency | dict[str, Any] = Field(default_factory=dict)
    cost_per_1k: float | None = None
    threshold: Threshold
    curve: Curve
    test_curve: Curve
    flag_all: FlagAll | None = None
    calibration_split: OperatingPoint | None = None
    test: OperatingPoint | None = None
    calibration_error: dict[str, Any] | None = Field(None, description="ECE, Brier and reliability bins "
                                                     "(probabilistic verifiers)")


class VerifierMetrics(_Part):
    probabilistic: bool
    binary: bool
    overall: SliceMetrics
    slices: dict[str, SliceMetrics]
    breakdown: dict[str, dict[str, dict[str, Any]]] | None = Field(None, description="field -> value -> "
                                                                    "flagged test cases")
    usage: dict[str, float] | None = None
    usage_per_case: dict[str, float] | None = None
    sample_flip_rate: dict[str, Any] | None = None
    injection_flip_rate: dict[str, Any] | None = None
    repeats: dict[str, Any] | None = None
    missing_verdicts: int | None = None
    pairs: dict[str, Any] | None = None
    spans: dict[str, Any] | None = None
    notes: list[str] | None = None


class OperatingPointRow(_Part):
    verifier: str
    f1: float | None = None
    p95_ms: float | None = None
    cost_per_1k: float | None = None
    pareto: bool = False
    # a combination kept in the run by `verifybench cascade --save` (any, all, a cascade, a stack)
    kind: str | None = None
    errors_count_as_wrong: bool | None = None


class Metrics(Stored):
    """A run's metrics.json."""

    KIND = "verifybench.metrics"
    VERSION = 1
    # No migrations: a metrics.json from before kinds (or of an older format) is computed again from the
    # run's results (`StaleFormat`), never migrated.
    TITLE = "a run's numbers (computed again by `verifybench report`)"
    SPARSE = True  # a section a run has no numbers for is absent, as the metrics layer leaves it

    by: str
    target: str
    min_per_class: int
    bootstrap: int
    n_cases: int
    split: dict[str, int]
    unlabeled: int = 0
    split_from: str
    test_fraction: float
    seed: int
    gate_min_cases: int
    verifiers: dict[str, VerifierMetrics]
    operating_points: list[OperatingPointRow] = Field(default_factory=list)
    pairs: dict[str, Any] | None = None
    spans: dict[str, Any] | None = None
    shortcuts: dict[str, Any] | None = None
