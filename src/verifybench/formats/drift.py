"""A drift record: one `verifybench drift --out` result (production scores against a reference's test
split, at the policy's thresholds), kept as a file for the history page (`verifybench history`).

Status: `fail` a figure beyond a limit and beyond sampling noise (exit 1); `warn` none beyond a limit, but some slice had too few
scored cases on a side to be judged; `pass` every slice judged and within the limits; `refused` no
comparison could be made (exit 2, `reason` says why)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal, Self

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, model_validator

from verifybench.formats.base import Stored, omitted

Status = Literal["pass", "warn", "fail", "refused"]


class _Part(BaseModel):
    # strict: a number is a number (not text that parses as one), as the reader before the model held it
    model_config = ConfigDict(defer_build=True, extra="forbid", strict=True)


class DriftLimits(_Part):
    """The limits the result was judged against."""

    max_psi: float | None = Field(None, description="PSI of the scores allowed per check and slice")
    max_flag_rate_change: float | None = Field(None, description="change of the flag rate allowed (absolute)")
    max_unseen_share: float | None = Field(None, description="share of production cases whose doc type the "
                                           "policy has no slice for")
    min_cases: int | None = Field(None, description="scored cases a side needs for a slice to be judged")
    alpha: float | None = omitted(description="family-wise significance level a figure beyond its limit must reach")


class DriftRow(_Part):
    """One check on one slice: the reference's test split against production."""

    check: str = Field(description="the verifier id")
    slice: str = Field(description="the doc type (`all`: every case)")
    reference_cases: int | None = Field(None, description="scored cases of the reference")
    production_cases: int | None = Field(None, description="scored cases of production")
    reference_errors: int | None = omitted(description="reference cases without a score (left out)")
    reference_infinite: int | None = omitted(description="reference scores that are infinite (left out)")
    production_errors: int | None = omitted(description="production cases without a score (left out)")
    production_infinite: int | None = omitted(description="production scores that are infinite (left out)")
    threshold: float | None = Field(None, description="the threshold the flag rates are read at")
    threshold_from: str | None = omitted(description="`all`: the slice has none of its own, the whole set's is "
                                         "held; `per slice`: each case at its slice's own where it has one")
    reference_flag_rate: float | None = Field(None, description="share of reference cases flagged")
    production_flag_rate: float | None = Field(None, description="share of production cases flagged")
    flag_rate_change: float | None = Field(None, description="production minus reference flag rate")
    psi: float | None = Field(None, description="population stability index of the scores")
    ks_statistic: float | None = Field(None, description="two-sample Kolmogorov-Smirnov statistic (reported, "
                                       "not gated)")
    ks_p_value: float | None = Field(None, description="its p-value")
    psi_p_value: float | None = omitted(description="permutation p-value of the PSI after Holm across the figures "
                                        "compared (computed only where the PSI is beyond its limit)")
    flag_rate_p_value: float | None = omitted(description="the same for the flag-rate change")
    detectable_flag_rate_fall: float | None = omitted(description="the smallest fall of the flag rate this "
                                                      "comparison detects 80% of the time at these sizes (Holm's "
                                                      "first-step level)")
    detectable_flag_rate_rise: float | None = omitted(description="the same for a rise")
    status: Literal["ok", "drift", "too few"] = Field(description="`drift`: a figure beyond its limit and "
                                                      "significant (p-value at most alpha); `ok`: none; `too few` "
                                                      "cases on a side to judge")
    why: str | None = omitted(description="the limits crossed, or why it was not judged")


class UnseenDocTypes(_Part):
    """Production doc types the policy has no slice for (they get the whole set's threshold)."""

    doc_types: list[str] = Field(default_factory=list, description="those doc types")
    share: float | None = Field(None, description="share of production cases they hold")
    cases: int | None = Field(None, description="production cases they hold")
    limit: float | None = Field(None, description="the share allowed")
    status: Literal["ok", "drift"] | None = Field(None, description="within the limit, or beyond it")


class DriftRecord(Stored):
    """One `verifybench drift --out` result."""

    model_config = ConfigDict(defer_build=True, extra="forbid", populate_by_name=True, strict=True)

    KIND = "verifybench.drift"
    # Format 1 already named its kind (0.1); `written_by` is new and optional, so 0.1's reader, which
    # refuses any other format, still reads what this version writes.
    VERSION = 1
    TITLE = "one `verifybench drift` result, for the history page"

    created: str = Field(description="when it was computed (UTC, ISO 8601)")
    reference: str = Field(description="the baseline or run production was compared against")
    source: str = Field(description="the decision log or run directory of production")
    status: Status = Field(description="pass, warn, fail or refused")
    exit_code: Literal[0, 1, 2] = Field(description="what `verifybench drift` exited with")
    limits: DriftLimits = Field(default_factory=DriftLimits, description="the limits it was judged against")
    rows: list[DriftRow] = Field(description="one per check and slice")
    unseen_doc_types: UnseenDocTypes = Field(description="doc types without a slice in the policy")
    notes: list[str] = Field(default_factory=list, description="what to know when reading it")
    reason: str | None = omitted(description="why the comparison was refused")

    _path: Path | None = PrivateAttr(None)

    @model_validator(mode="after")
    def _judged(self) -> Self:
        if self.status != "refused" and self.unseen_doc_types.share is None:
            raise ValueError("unseen_doc_types.share: a judged result (not refused) gives the share")
        return self

    @classmethod
    def read(cls, path: str | Path) -> Self:
        rec = super().read(path)
        rec._path = Path(path)
        return rec

    @property
    def path(self) -> Path:
        """The file it was read from (`Path()` for one made here)."""
        return self._path or Path()
