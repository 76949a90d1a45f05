"""A guard file: which checks of a threshold policy a guard runs, how they combine, what a flagged answer
does, and what a timeout or a verifier error means (`verifybench serve guard.yaml`, `Guard("guard.yaml")`).

```yaml
# guard.yaml
kind: verifybench.guard        # optional in a file written by hand (read as format 1)
format: 2
policy: policy.yaml            # relative to this file
suite: ../evals/demo.yaml      # optional: the verifiers' options from the suite (their hashes must match)
checks: [rouge]                # verifier ids of the policy (default: its best on the test split)
combination: any               # any | all | cascade (two checks: the cheap one first)
action: flag                   # flag | block | strip | escalate
mode: enforce                  # enforce | shadow (decide and log, never change the response)
timeout_ms: 2000               # the whole request's budget (null: none)
on_error: flag                 # allow | flag | block, on a timeout or a verifier error
telemetry:                     # optional: each decision as OpenTelemetry gen_ai.evaluation.result events
  otlp: true                   # default: on when OTEL_EXPORTER_OTLP_(LOGS_)ENDPOINT is set
  endpoint: http://127.0.0.1:4318   # default: the OTEL_EXPORTER_OTLP_* variables
```

A number in a guard file is finite: a NaN or an infinity as a bound or a budget would silently never (or
always) apply."""

from __future__ import annotations

import hashlib
import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from verifybench.formats.base import Stored

_STRICT = ConfigDict(defer_build=True, extra="forbid", allow_inf_nan=False)


class CascadeSpec(BaseModel):
    """How a cascade's cheap check decides alone: fitted from `confidence` on the policy's run, or the
    bounds given (`verifybench cascade --out` writes the region it measured)."""

    model_config = _STRICT

    confidence: float = Field(0.95, gt=0.5, lt=1.0, description=(
        "the cheap check decides alone where, on the calibration split of the policy's run, this share of "
        "the cases it would decide were decided right (on each side)"))
    allow_at_or_below: float | None = Field(None, description="the cheap check allows a score at or below this "
                                            "alone (given: not fitted from `confidence`)")
    flag_at_or_above: float | None = Field(None, description="the cheap check flags a score at or above this "
                                           "alone (given: not fitted from `confidence`)")


class LogSpec(BaseModel):
    """The decision log: where it goes and how durable it is."""

    model_config = _STRICT

    dir: str | None = Field(None, description="where decision logs go (relative to the working directory); "
                            "null or left out: no log from a guard in Python, ./guard-log under `verifybench "
                            "serve` unless the file says null")
    max_bytes: int = Field(64 << 20, ge=4096, description="a log file is rotated above this size")
    fsync: bool = Field(True, description="a decision is on disk (fsync) before its response returns")
    fail_open: bool = Field(False, description="a decision whose record cannot be written (a full disk): false "
                            "refuses it (the service answers 503); true returns it anyway and counts it as lost")
    timeout_ms: float = Field(5000.0, gt=0, description="how long a decision waits for its record to be written "
                              "before that counts as a failure of the log")


class TelemetrySpec(BaseModel):
    """Decisions out as OpenTelemetry events (docs/opentelemetry.md); never part of what decides."""

    model_config = ConfigDict(defer_build=True, extra="forbid")

    otlp: bool | None = Field(None, description="emit each check of each decision as a gen_ai.evaluation.result "
                              "event over OTLP/HTTP; null: when OTEL_EXPORTER_OTLP_ENDPOINT or "
                              "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT is set")
    endpoint: str | None = Field(None, description="the OTLP/HTTP endpoint (http://host:4318); default: the "
                                 "OTEL_EXPORTER_OTLP_* variables. Headers (credentials) come from those variables only")
    service_name: str = Field("verifybench-guard", description="service.name of the events (OTEL_SERVICE_NAME wins)")


def _rename_pass_bound(doc: dict[str, Any]) -> dict[str, Any]:
    """1 -> 2: the cascade's lower bound is `allow_at_or_below` (the name `verifybench cascade` printed as
    `pass_at_or_below`, which a hand-written file may have copied)."""
    cascade = doc.get("cascade")
    if isinstance(cascade, dict) and "pass_at_or_below" in cascade and "allow_at_or_below" not in cascade:
        cascade = dict(cascade)
        cascade["allow_at_or_below"] = cascade.pop("pass_at_or_below")
        doc = {**doc, "cascade": cascade}
    return doc


class GuardSpec(Stored):
    """A guard file (every key optional but `policy`)."""

    model_config = ConfigDict(defer_build=True, extra="forbid", populate_by_name=True, allow_inf_nan=False)

    KIND = "verifybench.guard"
    VERSION = 2
    # Format 1: guard files before kinds (verifybench 0.1, and any written by hand without `kind`).
    LEGACY = 1
    MIGRATIONS = {1: _rename_pass_bound}
    TITLE = "which checks of a policy a guard runs, how they combine, what a flag does"
    SPARSE = True  # a default left out stays the installation's default

    policy: str = Field(description="the threshold policy, relative to this file")
    suite: str | None = Field(None, description="the suite the checks' options come from (relative to this "
                              "file; default: the options the policy records); their config hashes must match")
    checks: list[str] | None = Field(None, description="verifier ids of the policy, in order; a cascade's cheap "
                                     "one first (default: the one check the policy records; of several, the best on "
                                     "the test split, named in a warning, or every one with `combination` given)")
    combination: Literal["any", "all", "cascade"] = Field("any", description="flag when any check flags, when "
                                                          "all do, or a cascade (the cheap check decides alone "
                                                          "where it is confident)")
    action: Literal["flag", "block", "strip", "escalate"] = Field("flag", description="what a flagged answer "
                                                                   "gets: flagged, blocked, its flagged units "
                                                                   "stripped, or escalated to a person")
    mode: Literal["enforce", "shadow"] = Field("enforce", description="shadow: decide and log, never change the "
                                               "response")
    timeout_ms: float | None = Field(None, gt=0, description="the whole request's time budget (null: none)")
    on_error: Literal["allow", "flag", "block"] = Field("flag", description="what a timeout or a verifier error "
                                                        "means")
    raise_errors: bool = Field(False, description="raise a verifier's error into the caller instead of "
                               "applying on_error")
    batch_wait_ms: float = Field(2.0, ge=0, description="how long a model verifier's batch keeps collecting "
                                 "once a second request is waiting (a request alone is never delayed)")
    max_batch: int = Field(64, ge=1, description="the most answers one model batch scores")
    cascade: CascadeSpec = Field(default_factory=CascadeSpec, description="a cascade's confident region")
    log: LogSpec = Field(default_factory=LogSpec, description="the decision log")
    telemetry: TelemetrySpec = Field(default_factory=TelemetrySpec, description="decisions as OpenTelemetry "
                                     "events")

    @model_validator(mode="after")
    def _checks(self) -> GuardSpec:
        if self.checks is not None:
            if not self.checks:
                raise ValueError("checks: give at least one verifier id (or leave checks out: every verifier)")
            if len(set(self.checks)) != len(self.checks):
                raise ValueError("checks: a verifier id is listed twice")
        if self.combination == "cascade" and self.checks is not None and len(self.checks) != 2:
            raise ValueError("combination cascade takes exactly two checks: the cheap one, then the expensive one")
        return self

    def digest(self, hashes: dict[str, str]) -> str:
        """What the guard decides with: its settings (the file's header, the log's place and telemetry left
        out) and its verifiers' config hashes."""
        blob = json.dumps({**self.model_dump(mode="json", exclude={"log", "policy", "suite", "telemetry", "kind",
                                                                  "format", "written_by"}),
                           "verifiers": hashes},
                          sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(blob.encode()).hexdigest()[:16]
