"""What a guard is made of: a threshold policy (the verifiers, their options and config hashes, the
thresholds per slice) and, optionally, a guard file that adds how the checks combine, what a flagged
answer does, and what a timeout or a verifier error means.

```yaml
# guard.yaml
policy: policy.yaml            # relative to this file
suite: ../evals/demo.yaml      # optional: the verifiers' options from the suite (their hashes must match)
checks: [rouge]                # verifier ids of the policy (default: every verifier it records)
combination: any               # any | all | cascade (two checks: the cheap one first)
action: flag                   # flag | block | strip | escalate
mode: enforce                  # enforce | shadow (decide and log, never change the response)
timeout_ms: 2000               # the whole request's budget (null: none)
on_error: flag                 # allow | flag | block, on a timeout or a verifier error
telemetry:                     # optional: each decision as OpenTelemetry gen_ai.evaluation.result events
  otlp: true                   # default: on when OTEL_EXPORTER_OTLP_(LOGS_)ENDPOINT is set
  endpoint: http://127.0.0.1:4318   # default: the OTEL_EXPORTER_OTLP_* variables
```
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from verifybench.errors import VerifybenchError
from verifybench.evaluation.policy import policy_thresholds


class GuardError(VerifybenchError):
    """A guard that cannot be built as asked (a bad file, a config hash that differs from the policy's)."""


# A number in a guard file is finite: a NaN or an infinity as a bound or a budget would silently never
# (or always) apply.
_STRICT = ConfigDict(extra="forbid", allow_inf_nan=False)


class CascadeSpec(BaseModel):
    model_config = _STRICT

    confidence: float = Field(0.95, gt=0.5, lt=1.0, description=(
        "the cheap check decides alone where, on the calibration split of the policy's run, this share of "
        "the cases it would decide were decided right (on each side)"))
    # Bounds fitted elsewhere (`verifybench cascade --out` writes the region it measured): used as given.
    allow_at_or_below: float | None = Field(None, description="the cheap check passes a score at or below this "
                                            "alone (given: not fitted from `confidence`)")
    flag_at_or_above: float | None = Field(None, description="the cheap check flags a score at or above this "
                                           "alone (given: not fitted from `confidence`)")


class LogSpec(BaseModel):
    model_config = _STRICT

    dir: str | None = Field("guard-log", description="where decision logs go (relative to the working "
                            "directory); null: no log")
    max_bytes: int = Field(64 << 20, ge=4096, description="a log file is rotated above this size")
    fsync: bool = Field(True, description="a decision is on disk (fsync) before its response returns")
    fail_open: bool = Field(False, description="a decision whose record cannot be written (a full disk): false "
                            "refuses it (the service answers 503); true returns it anyway and counts it as lost")
    timeout_ms: float = Field(5000.0, gt=0, description="how long a decision waits for its record to be written "
                              "before that counts as a failure of the log")


class TelemetrySpec(BaseModel):
    """Decisions out as OpenTelemetry events (docs/opentelemetry.md); never part of what decides."""

    model_config = ConfigDict(extra="forbid")

    otlp: bool | None = Field(None, description="emit each check of each decision as a gen_ai.evaluation.result "
                              "event over OTLP/HTTP; null: when OTEL_EXPORTER_OTLP_ENDPOINT or "
                              "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT is set")
    endpoint: str | None = Field(None, description="the OTLP/HTTP endpoint (http://host:4318); default: the "
                                 "OTEL_EXPORTER_OTLP_* variables. Headers (credentials) come from those variables only")
    service_name: str = Field("verifybench-guard", description="service.name of the events (OTEL_SERVICE_NAME wins)")


class GuardSpec(BaseModel):
    """A guard file (every key optional but `policy`)."""

    model_config = _STRICT

    policy: str
    suite: str | None = None
    checks: list[str] | None = None
    combination: Literal["any", "all", "cascade"] = "any"
    action: Literal["flag", "block", "strip", "escalate"] = "flag"
    mode: Literal["enforce", "shadow"] = "enforce"
    timeout_ms: float | None = Field(None, gt=0)
    on_error: Literal["allow", "flag", "block"] = "flag"
    raise_errors: bool = Field(False, description="raise a verifier's error into the caller instead of "
                               "applying on_error")
    batch_wait_ms: float = Field(2.0, ge=0, description="how long a model verifier's batch keeps collecting "
                                 "once a second request is waiting (a request alone is never delayed)")
    max_batch: int = Field(64, ge=1)
    cascade: CascadeSpec = Field(default_factory=CascadeSpec)
    log: LogSpec = Field(default_factory=LogSpec)
    telemetry: TelemetrySpec = Field(default_factory=TelemetrySpec)

    @model_validator(mode="after")
    def _checks(self):
        if self.checks is not None:
            if not self.checks:
                raise ValueError("checks: give at least one verifier id (or leave checks out: every verifier)")
            if len(set(self.checks)) != len(self.checks):
                raise ValueError("checks: a verifier id is listed twice")
        if self.combination == "cascade" and self.checks is not None and len(self.checks) != 2:
            raise ValueError("combination cascade takes exactly two checks: the cheap one, then the expensive one")
        return self

    def digest(self, hashes: dict[str, str]) -> str:
        """What the guard decides with: its settings (the log's place and telemetry left out) and its
        verifiers' config hashes."""
        blob = json.dumps({**self.model_dump(mode="json", exclude={"log", "policy", "suite", "telemetry"}),
                           "verifiers": hashes},
                          sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _yaml(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise GuardError(f"{path}: no such file") from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        at = f":{mark.line + 1}:{mark.column + 1}" if mark else ""
        raise GuardError(f"{path}{at}: invalid YAML: {getattr(e, 'problem', e)}") from None


def is_policy(doc: Any) -> bool:
    return isinstance(doc, dict) and "thresholds" in doc and "by" in doc


def read_spec(path: str | Path, **overrides: Any) -> tuple[GuardSpec, Path]:
    """A guard file, or a policy file standing alone (a guard of every verifier it records, with the
    defaults); relative paths in a guard file are relative to it. Returns the spec and the policy's path."""
    path = Path(path)
    doc = _yaml(path)
    if is_policy(doc):
        raw: dict[str, Any] = {"policy": str(path)}
    elif isinstance(doc, dict):
        raw = dict(doc)
    else:
        raise GuardError(f"{path}: expected a guard file (a mapping with `policy:`) or a policy file")
    raw.update({k: v for k, v in overrides.items() if v is not None})
    try:
        spec = GuardSpec.model_validate(raw)
    except ValidationError as e:
        err = e.errors()[0]
        field = ".".join(str(p) for p in err["loc"]) or "(top level)"
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            msg = f"unknown key (known: {', '.join(GuardSpec.model_fields)})"
        raise GuardError(f"{path}: {field}: {msg}") from None
    base = path.parent
    policy = Path(spec.policy) if Path(spec.policy).is_absolute() or is_policy(doc) else base / spec.policy
    if spec.suite is not None and not Path(spec.suite).is_absolute():
        spec.suite = str(base / spec.suite)
    return spec, policy


def read_policy(path: Path) -> tuple[dict[str, Any], str]:
    """The policy document and the sha256 of its bytes (first 16 hex digits). A policy written before
    policies recorded their verifiers' options and config hashes is refused: a guard could not know
    which configuration its thresholds were fitted for."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise GuardError(f"{path}: no such policy file") from None
    doc = _yaml(path)
    if not is_policy(doc):
        raise GuardError(f"{path}: not a verifybench policy (needs 'by' and 'thresholds')")
    if not isinstance(doc.get("verifiers"), dict):
        raise GuardError(
            f"{path}: this policy does not record its verifiers' options and config hashes (written by an "
            "older verifybench), so a guard cannot check it gates the configuration it was fitted for; write it "
            "again from its run, no verifier runs: verifybench thresholds RUN_DIR --by "
            f"{doc.get('by', 'doc_type')} --out {path.name}")
    for vid, v in doc["verifiers"].items():
        if not isinstance(v, dict) or not {"name", "options", "config_hash"} <= set(v):
            raise GuardError(f"{path}: verifiers.{vid}: needs name, options and config_hash")
        for key, kind in (("name", str), ("options", dict), ("config_hash", str)):
            if not isinstance(v[key], kind):
                raise GuardError(f"{path}: verifiers.{vid}.{key}: expected a {'mapping' if kind is dict else 'string'}, "
                                 f"got {type(v[key]).__name__}")
    try:
        policy_thresholds(doc, path)  # every threshold a finite number (or null), before anything is built
    except VerifybenchError as e:
        raise GuardError(str(e)) from None
    return doc, hashlib.sha256(data).hexdigest()[:16]


def policy_run_dir(policy: dict[str, Any], policy_path: Path) -> Path | None:
    """The run directory a policy was fitted on (`run`, written relative to the policy's folder), or None
    when it names none."""
    run = policy.get("run")
    if not run:
        return None
    return Path(run) if Path(run).is_absolute() else policy_path.parent / run
