"""A threshold policy (`verifybench thresholds --out policy.yaml`): per verifier and slice the threshold a
run's calibration split fitted and what it scored on the test split, and the verifiers' options and config
hashes it was fitted with. A team reviews it, commits it, and passes it back with `verifybench run
--policy`, `verifybench baseline --policy` or a guard.

The model owns what every reader needs checked before anything is built: each threshold a finite number
or null (NaN or +inf would never flag, a silent fail-open; -inf would flag everything; text would fail
every check later), and each verifier's `repeats` a whole number of at least 1."""

from __future__ import annotations

import math
from typing import Any, ClassVar, Self

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from verifybench.formats.base import FormatError, Stored, omitted

# The slice key of the whole set (`metrics.settings.OVERALL`; formats sits below metrics)
WHOLE_SET = "all"


class _Part(BaseModel):
    model_config = ConfigDict(defer_build=True, extra="forbid", populate_by_name=True)


def finite_or_null(value: Any) -> float | None:
    """`value` as a threshold: a finite number, or None; anything else raises naming what it got."""
    if value is None:
        return None
    ok = not isinstance(value, bool) and isinstance(value, (int, float))
    try:
        ok = ok and math.isfinite(float(value))
    except OverflowError:  # an integer past a float's range
        ok = False
    if not ok:
        raise ValueError(f"a threshold must be a finite number or null, got {value!r}")
    return float(value)


class SplitPoint(_Part):
    """Precision, recall, F1 and accuracy of one split at the entry's threshold."""

    n: int | None = Field(None, description="cases of the split")
    precision: float | None = Field(None, description="flagged cases that are hallucinated")
    recall: float | None = Field(None, description="hallucinated cases flagged")
    f1: float | None = Field(None, description="harmonic mean of precision and recall")
    accuracy: float | None = Field(None, description="cases decided right")
    ci95: dict[str, list[float | None]] | None = omitted(description="metric -> its 95% bootstrap interval "
                                                         "[low, high] (the test split)")
    estimate: str | None = omitted(description="how it was estimated when not on a test split: cross-fitted, or "
                                   "all labeled cases of a given threshold")


class PolicyFlagAll(_Part):
    """What flagging every test case would score: the floor a threshold's numbers are read against."""

    precision: float | None = Field(None, description="the test split's share of hallucinated cases")
    recall: float | None = Field(None, description="1 (every hallucinated case flagged)")
    f1: float | None = Field(None, description="F1 of flagging everything")


class PolicyEntry(_Part):
    """One verifier on one slice. A hand-written policy may give a bare number (or null) instead of a
    mapping: it is read as the entry's `threshold`."""

    threshold: float | None = Field(None, description="flag when score >= threshold; null: no threshold here (the "
                                    "fit found none): not gated at a threshold, nothing refitted in its place")
    source: str | None = omitted(description="fitted, pooled (a slice's cases with the whole set's), "
                                 "fallback (the whole set's, for a slice too small to fit its own) or given")
    native: str | None = omitted(description="the same rule on the detector's own scale, e.g. `rouge1 "
                                 "precision <= 0.7`")
    fallback_from: str | None = omitted(description="the slice whose threshold this one fell back to")
    weight: float | None = omitted(description="a pooled slice threshold: its own cases' share of the fit, "
                                   "n / (n + prior), the whole set's cases the rest")
    interval95: list[float] | None = omitted(description="95% bootstrap interval [low, high] of the fitted "
                                             "threshold")
    degenerate: str | None = omitted(description="why the threshold is no better than flagging everything "
                                     "(or nothing)")
    near_degenerate: str | None = omitted(description="why the threshold barely separates the classes")
    warning: str | None = omitted(description="what to know before using it (why it is null, why it fell back)")
    calibration: SplitPoint | None = omitted(alias="calibration_split (tuned)", description="the calibration "
                                             "split, where the threshold was fitted")
    test: SplitPoint | None = omitted(alias="test_split", description="the test split, never seen by the fit "
                                       "(or, cross-fitted, the out-of-fold estimate: see its `estimate`)")
    flag_all: PolicyFlagAll | None = omitted(alias="flag_all (test split)", description="flagging every test "
                                            "case, for comparison")

    @model_validator(mode="before")
    @classmethod
    def _bare(cls, data: Any) -> Any:
        if isinstance(data, dict):
            return data
        return {"threshold": finite_or_null(data)}

    @field_validator("threshold", mode="before")
    @classmethod
    def _finite(cls, value: Any) -> float | None:
        return finite_or_null(value)


class PolicyVerifier(_Part):
    """What a verifier was fitted with: a guard builds it from `name` and `options` and refuses it when
    its config hash differs."""

    name: str = Field(description="the name the suite gave it: a registered name or an import path")
    options: dict[str, Any] = Field(description="the scored options (operational ones take their defaults)")
    config_hash: str = Field(description="the hash of its configuration; a guard refuses another")
    repeats: int | None = omitted(description="scored this many times a case and folded to the mean; a guard "
                                  "scores it the same way (absent: once)")

    @field_validator("repeats", mode="before")
    @classmethod
    def _repeats(cls, value: Any) -> Any:
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            raise ValueError(f"expected a whole number of at least 1, got {value!r}")
        return value


class Policy(Stored):
    """A threshold policy: verifier x slice -> threshold, with where each came from and what it scored."""

    KIND = "verifybench.policy"
    VERSION = 3
    # Format 1 (verifybench 0.1) had no kind and no writer; a hand-written policy naming no format is
    # read as format 1. 1 -> 2: nothing else changed. 2 -> 3: optional keys of cross-fitted runs
    # (`estimate`, an entry's `weight`, a test split's `estimate`), so a release that predates them says
    # "written by a newer verifybench" instead of "unknown key".
    LEGACY = 1
    MIGRATIONS = {1: lambda doc: doc, 2: lambda doc: doc}
    TITLE = "thresholds per verifier and slice, for `run --policy`, `baseline --policy` and a guard"
    LEGACY_KEYS: ClassVar[tuple[str, ...]] = ("by", "thresholds")

    run: str | None = omitted(description="the run directory the thresholds were fitted on, relative to the "
                              "policy's folder (a guard checks the policy against it, a cascade reads it)")
    suite: str | None = omitted(description="the suite's name")
    suite_hash: str | None = omitted(description="the suite file's hash (a guard checks its run's)")
    dataset_hash: str | None = omitted(description="the dataset's hash (a guard checks its run's)")
    by: str = Field(description="the slice field: doc_type, dataset, split or meta.<key>")
    target: str | None = omitted(description="what the thresholds were fitted for (max balanced accuracy, "
                                 "precision >= 0.9, ...)")
    min_per_class: int | None = omitted(description="calibration cases of each class a slice needed for a "
                                        "threshold of its own")
    split_sizes: dict[str, int] | None = omitted(description="split -> cases")
    estimate: str | None = omitted(description="split (fitted on the calibration split, numbers from the test split) "
                                   "or crossfit (fitted on every labeled case, numbers cross-fitted)")
    verifiers: dict[str, PolicyVerifier] | None = omitted(description="verifier id -> what it was fitted with "
                                                          "(absent in policies written before they recorded it: "
                                                          "no guard reads those)")
    thresholds: dict[str, dict[str, PolicyEntry]] = Field(description="verifier id -> slice (`all`: the whole "
                                                         "set) -> its entry")

    @classmethod
    def parse(cls, doc: Any, where: Any) -> Self:
        if isinstance(doc, dict) and "kind" not in doc and not all(k in doc for k in cls.LEGACY_KEYS):
            raise FormatError(where, "not a verifybench policy (needs 'by' and 'thresholds')")
        return super().parse(doc, where)

    def mapping(self) -> dict[str, dict[str, float | None]]:
        """verifier -> slice -> threshold (None where the entry is null: not gated at a threshold there)."""
        return {vid: {key: e.threshold for key, e in rows.items()} for vid, rows in self.thresholds.items()}

    def null_reasons(self) -> dict[str, dict[str, str]]:
        """verifier -> slice -> why the policy gives no threshold there (its `warning`, or "null")."""
        out: dict[str, dict[str, str]] = {}
        for vid, rows in self.thresholds.items():
            for key, e in rows.items():
                if e.threshold is None:
                    out.setdefault(vid, {})[key] = e.warning or "null in the policy"
        return out
