"""How metrics are computed: a suite's `metrics:` block, checked key by key, and the `Settings` it gives.

```yaml
metrics:
  by: doc_type                 # the slice field: doc_type, dataset, split or meta.<key>
  target: balanced_accuracy    # the default; or youden, f1, fbeta=B, f1_min_specificity=S, precision=P, recall=R
  min_per_class: 30            # calibration cases of each class a slice needs for its own threshold (split)
  estimate: auto               # crossfit below 300 labeled cases with a drawn split, else split; or either
  bootstrap: 1000              # resamples behind every interval and the gate's paired test
  seed: 0                      # of the bootstrap and of the calibration/test split
  test_fraction: 0.5           # share of cases on the test side of a drawn split
  breakdown: [meta.error_type] # fields to break recall and false alarms down by
  fixed: {judge: 0.5}          # thresholds stated instead of fitted: verifier -> value or {slice: value}
```
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from verifybench.errors import SuiteError, VerifybenchError
from verifybench.metrics.bootstrap import N_BOOT
from verifybench.metrics.thresholds import TARGETS_HELP, Target, default_target, parse_target

OVERALL = "all"
# Test-split cases a gated slice needs by default (`verifybench gate --min-cases`); the report says how
# far each slice is from it.
GATE_MIN_CASES = 30


class ThresholdsBlock(BaseModel):
    """The older nested form `metrics.thresholds: {by, target, min_per_class}`."""

    model_config = ConfigDict(extra="forbid")
    by: str | None = None
    target: str | dict[str, float] | None = None
    min_per_class: int | None = Field(None, ge=1)


class MetricsBlock(BaseModel):
    """A suite's `metrics:` block. Unknown keys are refused: a typo must not silently fall back to a
    default (a misspelt `min_per_clas: 5` would fit no threshold at all)."""

    model_config = ConfigDict(extra="forbid")
    by: str = "doc_type"
    target: str | dict[str, float] | None = None
    min_per_class: int = Field(30, ge=1)
    estimate: Literal["auto", "split", "crossfit"] = "auto"
    bootstrap: int = Field(N_BOOT, ge=1)
    seed: int = 0
    test_fraction: float = Field(0.5, ge=0, le=1)
    breakdown: list[str] = Field(default_factory=list)
    fixed: dict[str, float | dict[str, float]] = Field(default_factory=dict)
    thresholds: ThresholdsBlock | None = None

    @field_validator("target")
    @classmethod
    def _target(cls, v: str | None) -> str | None:
        if v is not None:
            try:
                parse_target(v)
            except VerifybenchError as e:
                raise ValueError(str(e)) from None
        return v

    @field_validator("by")
    @classmethod
    def _by(cls, v: str) -> str:
        if v not in SLICE_FIELDS and not (v.startswith("meta.") and len(v) > 5):
            raise ValueError(f"{v!r} is not a slice field; use one of {', '.join(SLICE_FIELDS)} or meta.<key>")
        return v


SLICE_FIELDS = ("doc_type", "dataset", "split")


def validate_metrics_block(block: Any, where: str = "<suite>") -> MetricsBlock:
    """The parsed block, or a `SuiteError` naming the file and the key (`demo.yaml: metrics.min_per_clas:
    unknown key`)."""
    if block is None:
        block = {}
    if not isinstance(block, dict):
        raise SuiteError(f"{where}: metrics: must be a mapping, got {type(block).__name__}")
    try:
        return MetricsBlock.model_validate(block)
    except ValidationError as e:
        err = e.errors()[0]
        key = ".".join(str(p) for p in err["loc"])
        if err["type"] == "extra_forbidden":
            known = MetricsBlock.model_fields if len(err["loc"]) == 1 else ThresholdsBlock.model_fields
            msg = f"unknown key (known: {', '.join(known)})"
        else:
            msg = err["msg"].removeprefix("Value error, ")
        raise SuiteError(f"{where}: metrics.{key}: {msg}") from None


@dataclass
class Settings:
    """How metrics are computed; the suite's `metrics:` block fills these."""

    by: str = "doc_type"
    target: Target = field(default_factory=default_target)
    min_per_class: int = 30
    # How thresholds are fitted and their numbers estimated: "split" (fitted on the calibration split,
    # measured on the test split), "crossfit" (fitted on every labeled case, measured out of fold; slices
    # pooled toward the whole set) or "auto" (crossfit below SPLIT_FROM labeled cases with a drawn split).
    estimate: str = "auto"
    n_boot: int = N_BOOT
    seed: int = 0
    test_fraction: float = 0.5
    policy: dict[str, dict[str, float | None]] | None = None  # verifier -> slice -> threshold (None: not gated)
    policy_reasons: dict[str, dict[str, str]] = field(default_factory=dict)  # why a policy entry is null
    policy_source: str = "policy"  # what the report says a given threshold came from
    policy_sources: dict[str, str] = field(default_factory=dict)  # per verifier, where it differs (stated)
    probabilistic: set[str] = field(default_factory=set)  # verifiers whose score is a probability
    binary: set[str] = field(default_factory=set)  # verifiers whose score is a 0/1 decision
    breakdown: list[str] = field(default_factory=list)  # fields (e.g. meta.error_type) to break recall down by

    @classmethod
    def from_suite(cls, block: dict[str, Any] | None, where: str = "<suite>",
                   stated: dict[str, tuple[dict[str, float], str]] | None = None, **overrides: Any) -> Settings:
        """`stated`: verifier -> (slice -> threshold, where it came from): thresholds a verifier's options
        state on its own scale (`Verifier.stated_thresholds`), applied as `metrics.fixed` ones are."""
        b = validate_metrics_block(block, where)
        t = b.thresholds or ThresholdsBlock()
        s = cls(
            by=t.by or b.by,
            target=parse_target(t.target if t.target is not None else b.target),
            min_per_class=t.min_per_class or b.min_per_class,
            estimate=b.estimate,
            n_boot=b.bootstrap,
            seed=b.seed,
            test_fraction=b.test_fraction,
            breakdown=list(b.breakdown),
        )
        # `fixed: {verifier: threshold | {slice: threshold}}`: thresholds that mean something by
        # themselves (a verifier's own binary decision), stated in the suite instead of fitted.
        if b.fixed:
            s.policy = {str(v): (dict(t) if isinstance(t, dict) else {OVERALL: float(t)}) for v, t in b.fixed.items()}
            s.policy_source = "suite (metrics.fixed)"
        for vid, (rows, source) in (stated or {}).items():
            if vid in b.fixed:
                raise SuiteError(f"{where}: metrics.fixed.{vid}: {vid!r} also states its thresholds ({source}); "
                                 "keep one of the two")
            s.policy = {**(s.policy or {}), vid: dict(rows)}
            s.policy_sources[vid] = source
        if overrides.get("policy") is not None:
            s.policy_source, s.policy_sources = "policy", {}
        for k, v in overrides.items():
            if v is not None:
                setattr(s, k, v)
        return s


__all__ = ["GATE_MIN_CASES", "MetricsBlock", "OVERALL", "Settings", "TARGETS_HELP", "validate_metrics_block"]
