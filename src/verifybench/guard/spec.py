"""What a guard is made of: a threshold policy (the verifiers, their options and config hashes, the
thresholds per slice) and, optionally, a guard file that adds how the checks combine, what a flagged
answer does, and what a timeout or a verifier error means. Both formats are owned by `verifybench.formats`
(`GuardSpec`, `Policy`); this module reads them for a guard and says what is wrong as a `GuardError`."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, Literal

from verifybench.errors import VerifybenchError
from verifybench.formats.base import FormatError, load_document
from verifybench.formats.guardfile import CascadeSpec, GuardSpec, LogSpec, TelemetrySpec
from verifybench.formats.policy import Policy


class GuardError(VerifybenchError):
    """A guard that cannot be built as asked (a bad file, a config hash that differs from the policy's)."""


def is_policy(doc: Any) -> bool:
    """Whether a parsed file is a policy (its kind, or for a file from before kinds, its keys)."""
    if not isinstance(doc, dict):
        return False
    if "kind" in doc:
        return doc["kind"] == Policy.KIND
    return all(k in doc for k in Policy.LEGACY_KEYS)


def read_spec(path: str | Path, **overrides: Any) -> tuple[GuardSpec, Path]:
    """A guard file, or a policy file standing alone (a guard of its best check, or of the checks given, with the
    defaults); relative paths in a guard file are relative to it. Returns the spec and the policy's path."""
    path = Path(path)
    given = {k: v for k, v in overrides.items() if v is not None}
    try:
        doc = load_document(path)
        if is_policy(doc):
            spec = GuardSpec.parse({**GuardSpec.header(), "policy": str(path), **given}, path)
        elif isinstance(doc, dict):
            spec = GuardSpec.parse({**doc, **given}, path)
        else:
            raise GuardError(f"{path}: expected a guard file (a mapping with `policy:`) or a policy file")
    except FormatError as e:
        raise GuardError(str(e)) from None
    base = path.parent
    policy = Path(spec.policy) if Path(spec.policy).is_absolute() or is_policy(doc) else base / spec.policy
    if spec.suite is not None and not Path(spec.suite).is_absolute():
        spec.suite = str(base / spec.suite)
    return spec, policy


def read_policy(path: Path) -> tuple[Policy, str]:
    """The policy and the sha256 of its bytes (first 16 hex digits), every threshold checked before
    anything is built. A policy written before policies recorded their verifiers' options and config
    hashes is refused: a guard could not know which configuration its thresholds were fitted for."""
    try:
        data = path.read_bytes()
        policy = Policy.read(path)
    except FileNotFoundError:
        raise GuardError(f"{path}: no such policy file") from None
    except FormatError as e:
        raise GuardError(str(e)) from None
    if policy.verifiers is None:
        raise GuardError(
            f"{path}: this policy does not record its verifiers' options and config hashes (written by an "
            "older verifybench), so a guard cannot check it gates the configuration it was fitted for; write it "
            f"again from its run, no verifier runs: verifybench thresholds RUN_DIR --by {policy.by} --out {path.name}")
    return policy, hashlib.sha256(data).hexdigest()[:16]


SERVED_LOG_DIR = "guard-log"


def served_log_dir(path: str | Path, log_dir: str | Path | None) -> str | Path | Literal[False]:
    """Where a served guard (`verifybench serve`, its workers, Ray Serve) logs: `log_dir` when given, else the
    guard file's `log.dir` (false where it says null), else ./guard-log. A guard in Python logs only where it
    is told to (`Guard(log_dir=...)` or `log.dir`): a notebook's decisions never land in the service's log."""
    if log_dir is not None:
        return log_dir
    spec, _ = read_spec(path)
    if "dir" in spec.log.model_fields_set:
        return spec.log.dir or False
    return SERVED_LOG_DIR


def policy_run_dir(policy: Policy, policy_path: Path) -> Path | None:
    """The run directory a policy was fitted on (`run`, written relative to the policy's folder), or None
    when it names none."""
    if not policy.run:
        return None
    return Path(policy.run) if Path(policy.run).is_absolute() else policy_path.parent / policy.run


__all__ = ["CascadeSpec", "GuardError", "GuardSpec", "LogSpec", "TelemetrySpec", "is_policy", "policy_run_dir",
           "read_policy", "read_spec", "served_log_dir"]
