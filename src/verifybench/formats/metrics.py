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


def _n(what: str) -> Any:
    return Field(description=what)


class Interval(_Part):
    """A 95% bootstrap interval."""

    low: float = _n("its lower end")
    high: float = _n("its upper end")
    resamples: int | None = Field(None, description="resamples it was read from")


class OwnFit(_Part):
    """The threshold a slice too small for `min_per_class` would get fitted on its own cases."""

    value: float = _n("that threshold")
    target: str = _n("what it would be fitted for")
    interval: Interval | None = Field(None, description="its 95% bootstrap interval: what a lower minimum costs")


class Refused(_Part):
    """Error verdicts that keep a slice from a threshold (not too few labels): how many, and the most
    common error."""

    errors: int = _n("labeled calibration cases with an error verdict")
    cases: int = _n("labeled calibration cases")
    message: str = _n("the most common error message")
    times: int = _n("how many of the error verdicts carry it")


class Threshold(_Part):
    """A slice's threshold and where it came from."""

    value: float | None = Field(description="flag when score >= value; null: none (too few cases, or a "
                                "null in a policy)")
    kind: str | None = Field(description="fitted / pooled / fallback / given")
    source: str | None = Field(description="in words: fitted on what, fallen back to what, given by what")
    warning: str | None = Field(None, description="why it is null or fell back, and what to do")
    target: str = _n("what it was fitted for (max balanced accuracy, precision >= 0.9, ...)")
    degenerate: str | None = Field(None, description="it flags every calibration case, or none")
    near_degenerate: str | None = Field(None, description="it barely separates the classes")
    interval: Interval | None = Field(None, description="95% bootstrap interval of the fitted threshold")
    fallback_from: str | None = Field(None, description="the slice whose threshold this one fell back to")
    own_fit: OwnFit | None = Field(None, description="what a threshold of its own would be (a fallback slice)")
    weight: float | None = Field(None, description="pooled (cross-fitted runs): the slice's own cases' share of "
                                 "its fit, n / (n + prior); the whole set's cases carry the rest")
    refused: Refused | None = Field(None, description="the verifier failed on the cases a threshold needs: labeling "
                                    "more would not help")


class Confusion(_Part):
    """Cases by label and flag, at the threshold."""

    tp: int = _n("hallucinated, flagged")
    fp: int = _n("faithful, flagged")
    fn: int = _n("hallucinated, not flagged")
    tn: int = _n("faithful, not flagged")


class Rates(_Part):
    """The rates of a confusion table."""

    precision: float | None = Field(None, description="tp / (tp + fp)")
    recall: float | None = Field(None, description="tp / (tp + fn)")
    specificity: float | None = Field(None, description="tn / (tn + fp)")
    f1: float | None = Field(None, description="harmonic mean of precision and recall")
    accuracy: float | None = Field(None, description="(tp + tn) / all")
    balanced_accuracy: float | None = Field(None, description="mean of recall and specificity")


class OperatingPoint(Rates):
    """Precision, recall, F1 ... of one split at the slice's threshold."""

    n: int = _n("labeled cases of the split")
    n_scored: int = _n("of them, scored (not error verdicts)")
    confusion: Confusion = _n("the scored cases by label and flag")
    errors_as_wrong: Rates = Field(description="the same with error verdicts counted as wrong")
    ci: dict[str, list[float | None]] | None = Field(None, description="95% intervals (test split, or the "
                                                       "cross-fitted estimate's)")
    tuned: bool | None = Field(None, description="true on the calibration split: the threshold was fitted there")
    estimate: str | None = Field(None, description="how it was estimated when not on a test split the fit never "
                                 "saw: cross-fitted (each fold decided by a threshold fitted on the others), or all "
                                 "labeled cases of a given threshold")


class FlagAll(Rates):
    """What flagging every case of a split scores: the floor a threshold metric is read against."""

    split: str = _n("the split (test)")
    n: int = _n("its labeled cases")


class Curve(_Part):
    """Counts at every distinct score, highest first: the ROC and precision-recall curves."""

    threshold: list[float] = _n("each threshold")
    tp: list[int] = _n("hallucinated cases flagged at it")
    fp: list[int] = _n("faithful cases flagged at it")
    n_pos: int = _n("hallucinated cases")
    n_neg: int = _n("faithful cases")
    split: str | None = Field(None, description="the split counted (test), when not every split")


class Warmup(_Part):
    """The first batch of a verifier (model loading), timed apart."""

    cases: int = _n("its cases")
    total_ms: float = _n("its time")
    mean_ms: float = _n("its time per case")


class Latency(_Part):
    """Milliseconds per case."""

    warmup: Warmup | None = Field(None, description="the first batch, left out of the percentiles")
    includes_warmup: bool | None = Field(None, description="the warm-up could not be told apart")
    basis: str | None = Field(None, description="case / batch_average / mixed / unrecorded")
    p50: float | None = Field(None, description="median")
    p95: float | None = Field(None, description="95th percentile")
    p99: float | None = Field(None, description="99th percentile")
    mean: float | None = Field(None, description="mean")
    throughput_per_s: float | None = Field(None, description="cases a second, one at a time")
    per_unit_p50: float | None = Field(None, description="median per unit (claim, sentence) a verifier counts")
    per_unit_p95: float | None = Field(None, description="95th percentile per unit")
    units_per_case: float | None = Field(None, description="mean units per case")


class UnlabeledCounts(_Part):
    """Cases of the slice without a label: scored (latency, cost), left out of every label metric."""

    n: int = Field(description="unlabeled cases")
    n_scored: int = Field(description="of them, scored")
    errors: int = Field(description="of them, error verdicts")


class SliceMetrics(_Part):
    """One verifier on one slice of cases (or all of them)."""

    n: int = _n("labeled cases")
    n_scored: int = _n("of them, scored")
    errors: int = _n("of them, error verdicts")
    positives: int = _n("hallucinated cases")
    negatives: int = _n("faithful cases")
    labels: dict[str, dict[str, int]] = Field(description="split -> class -> labeled cases")
    needs: dict[str, Any] = Field(description="how many more labeled cases a threshold and a gate need")
    auroc: float | None = Field(None, description="area under the ROC curve (labeled, scored cases)")
    auprc: float | None = Field(None, description="area under the precision-recall curve")
    ci: dict[str, list[float | None]] | None = Field(None, description="95% bootstrap intervals of AUROC and AUPRC")
    unlabeled: UnlabeledCounts | None = Field(None, description="cases without a label (when any)")
    latency_ms: Latency | dict[str, Any] = Field(default_factory=dict, description="latency per case")
    cost_per_1k: float | None = Field(None, description="cost of 1,000 cases (USD)")
    threshold: Threshold = _n("the slice's threshold")
    curve: Curve = _n("counts at every score, both splits")
    test_curve: Curve = _n("counts at every score, the test split (the report's threshold explorer)")
    flag_all: FlagAll | None = Field(None, description="flagging every test case")
    calibration_split: OperatingPoint | None = Field(None, description="the calibration split at the threshold")
    test: OperatingPoint | None = Field(None, description="the test split at the threshold")
    calibration_error: dict[str, Any] | None = Field(None, description="ECE, Brier and reliability bins "
                                                     "(probabilistic verifiers)")


class VerifierMetrics(_Part):
    """One verifier: over all cases, per slice, and what its backend reports."""

    probabilistic: bool = _n("its scores are probabilities")
    binary: bool = _n("it answers 0 or 1")
    overall: SliceMetrics = _n("every case")
    slices: dict[str, SliceMetrics] = _n("slice -> its figures")
    breakdown: dict[str, dict[str, dict[str, Any]]] | None = Field(None, description="field -> value -> "
                                                                    "flagged test cases")
    usage: dict[str, float] | None = Field(None, description="tokens, requests, retries ... summed (LLM verifiers)")
    usage_per_case: dict[str, float] | None = Field(None, description="the same per case")
    sample_flip_rate: dict[str, Any] | None = Field(None, description="share of cases whose samples disagreed")
    injection_flip_rate: dict[str, Any] | None = Field(None, description="share of cases whose verdict flipped "
                                                       "when an attack was inserted into a source")
    repeats: dict[str, Any] | None = Field(None, description="cases that flip across the threshold between "
                                           "repeats (test split)")
    missing_verdicts: int | None = Field(None, description="cases without a verdict of this verifier")
    pairs: dict[str, Any] | None = Field(None, description="minimal pairs: how often it ranks the edited "
                                         "response above its original")
    spans: dict[str, Any] | None = Field(None, description="span-level precision and recall against gold spans")
    notes: list[str] | None = Field(None, description="what the verifier says about the run as a whole")


class OperatingPointRow(_Part):
    """A point of the report's operating-point chart."""

    verifier: str = _n("the verifier, or a combination's name")
    f1: float | None = Field(None, description="test-split F1")
    p95_ms: float | None = Field(None, description="95th percentile latency")
    cost_per_1k: float | None = Field(None, description="cost of 1,000 cases")
    pareto: bool = Field(False, description="on the front: no other point is better on all three")
    kind: str | None = Field(None, description="a combination kept by `verifybench cascade --save` (any, all, "
                             "cascade, stack)")
    errors_count_as_wrong: bool | None = Field(None, description="its F1 counts error verdicts as wrong")


class Metrics(Stored):
    """A run's metrics.json."""

    KIND = "verifybench.metrics"
    VERSION = 1
    # No migrations: a metrics.json from before kinds (or of an older format) is computed again from the
    # run's results (`StaleFormat`), never migrated.
    TITLE = "a run's numbers (computed again by `verifybench report`)"
    SPARSE = True  # a section a run has no numbers for is absent, as the metrics layer leaves it

    by: str = _n("the slice field")
    target: str = _n("what the thresholds were fitted for")
    min_per_class: int = _n("calibration cases of each class a slice needs for its own threshold")
    estimate: str = Field("split", description="split (fitted on the calibration split, measured on the test split) "
                          "or crossfit (fitted on every labeled case, measured out of fold)")
    estimate_why: str | None = Field(None, description="why that one (metrics.estimate, or the number of labeled cases)")
    bootstrap: int = _n("bootstrap resamples of every interval")
    n_cases: int = _n("cases in the run")
    split: dict[str, int] = _n("split -> labeled cases")
    unlabeled: int = Field(0, description="cases without a label (on neither split)")
    split_from: str = _n("field (the data's own split) or seeded (drawn from `seed` and `test_fraction`)")
    test_fraction: float = _n("share of cases drawn to the test split")
    seed: int = _n("the seed of the split and the resamples")
    gate_min_cases: int = _n("test cases a gated slice needs")
    verifiers: dict[str, VerifierMetrics] = _n("verifier id -> its figures")
    operating_points: list[OperatingPointRow] = Field(default_factory=list, description="the operating-point "
                                                      "chart's points")
    pairs: dict[str, Any] | None = Field(None, description="minimal pairs over the run (when the data has them)")
    spans: dict[str, Any] | None = Field(None, description="span metrics over the run (when the data has gold spans)")
    shortcuts: dict[str, Any] | None = Field(None, description="the shortcut check: how well surface cues alone "
                                             "predict the label")
