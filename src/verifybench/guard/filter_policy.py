"""A context filter's policy: what code does with each class of finding the decision model reports (the
article's "agreed policy for each class: drop, flag, keep, escalate"). A YAML file or a mapping:

```yaml
# filter.yaml
kind: verifybench.filter-policy   # optional; a newer `format` than this installation reads is refused
format: 1
backend: local                    # the decision model: local (offline) | typesafe
model: {}                         # its options (decision verifier's: params, cache_dir, typesafe_model, ...)
instructions:
  drop_at: null                   # P(instructions) from which a unit is dropped (null: the model's threshold)
  mark_at: 0.5                    # from which (below drop_at) it is kept, marked "treat as data", ranked last
  by_sentence: true               # each sentence read on its own too (local model)
contradiction:
  action: flag                    # flag (kept, marked, placed first) | drop | keep (ignored)
  at: null                        # P(contradiction) threshold (null: the model's)
relevance:
  min: 0.5                        # units below this relevance (0..1: the Score's levels / 2) are trimmed
budget: {tokens: 2000}            # or {characters: 8000}; a request may give its own
citations:
  unsupported: flag               # a citation that does not support its claim: flag | drop
  escalate_below: null            # confidence under which a citation check is escalated (null: the model's)
  escalate_to: queue              # queue (for a person) | a guard or threshold policy file: the stronger check
log: {dir: filter-log}            # the decision log (one record per unit); null or left out: none from a
                                  # filter in Python, ./filter-log under `serve --filter` unless it says null
```

The file is data: it names a guard file for the stronger check, never code (the guard refuses code it
is not allowed to run, `allow_code`).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from verifybench.guard.spec import GuardError, LogSpec
from verifybench.verifiers.decision.triage import TriageOptions

KIND = "verifybench.filter-policy"
FORMAT = 1
_STRICT = ConfigDict(extra="forbid", allow_inf_nan=False)


class InstructionsRule(BaseModel):
    model_config = _STRICT
    drop_at: float | None = Field(None, ge=0, le=1, description="dropped from here (null: the model's threshold)")
    mark_at: float | None = Field(0.5, ge=0, le=1, description="kept but marked and ranked last from here; null: off")
    by_sentence: bool = Field(True, description="the local model reads each sentence of a window on its own too")


class ContradictionRule(BaseModel):
    model_config = _STRICT
    action: Literal["flag", "drop", "keep"] = "flag"
    at: float | None = Field(None, ge=0, le=1, description="null: the model's threshold")


class RelevanceRule(BaseModel):
    model_config = _STRICT
    min: float = Field(0.5, ge=0, le=1, description="units below this relevance (0..1, the expected Score level / 2: "
                       "0.5 is 'same topic') are trimmed")


class Budget(BaseModel):
    """How much context the reasoning model gets: tokens (estimated as characters / 4) or characters."""

    model_config = _STRICT
    tokens: int | None = Field(None, ge=1)
    characters: int | None = Field(None, ge=1)

    @model_validator(mode="after")
    def _one(self) -> Budget:
        if (self.tokens is None) == (self.characters is None):
            raise ValueError("give exactly one of tokens and characters")
        return self


class CitationRule(BaseModel):
    model_config = _STRICT
    unsupported: Literal["flag", "drop"] = "flag"
    escalate_below: float | None = Field(None, ge=0, le=1, description="null: the model's (local: its abstention band)")
    escalate_to: str = Field("queue", description="queue, or a guard or threshold policy file (relative to this "
                             "file) whose check decides the citations the model cannot")


class FilterPolicy(BaseModel):
    model_config = _STRICT

    kind: Literal["verifybench.filter-policy"] = "verifybench.filter-policy"
    format: int = FORMAT
    backend: Literal["local", "typesafe"] = "local"
    model: dict[str, Any] = Field(default_factory=dict, description="the decision backend's options")
    instructions: InstructionsRule = Field(default_factory=InstructionsRule)
    contradiction: ContradictionRule = Field(default_factory=ContradictionRule)
    relevance: RelevanceRule = Field(default_factory=RelevanceRule)
    budget: Budget = Field(default_factory=lambda: Budget(tokens=2000))
    citations: CitationRule = Field(default_factory=CitationRule)
    log: LogSpec = Field(default_factory=LogSpec)  # no folder: a filter in Python logs only where told

    @model_validator(mode="after")
    def _known_model_options(self) -> FilterPolicy:
        from verifybench.verifiers.decision.verifier import DecisionOptions

        allowed = set(DecisionOptions.model_fields) - {"backend", "question", "response_as_unit", "cite_response",
                                                        "policy", "instructions_by_sentence", "audit_dir"}
        unknown = sorted(set(self.model) - allowed)
        if unknown:
            raise ValueError(f"model: unknown option(s) {', '.join(unknown)} (known: {', '.join(sorted(allowed))})")
        return self

    def triage(self, budget: Budget | None = None) -> TriageOptions:
        """The decision verifier's triage options this policy means (so a run measures what is served)."""
        b = budget or self.budget
        return TriageOptions(drop_instructions_at=self.instructions.drop_at, mark_instructions_at=self.instructions.mark_at,
                             flag_contradiction_at=self.contradiction.at, contradiction_action=self.contradiction.action,
                             escalate_below=self.citations.escalate_below, unsupported_citation=self.citations.unsupported,
                             min_relevance=self.relevance.min, context_budget_tokens=b.tokens or 2000,
                             context_budget_chars=b.characters)

    def decision_options(self) -> dict[str, Any]:
        """The decision verifier's options for this policy's model and triage (`question: policy`)."""
        return {**self.model, "backend": self.backend, "question": "policy",
                "instructions_by_sentence": self.instructions.by_sentence,
                "policy": self.triage().model_dump(exclude_defaults=True)}

    def digest(self) -> str:
        """What the filter decides with (the log's place left out)."""
        blob = json.dumps(self.model_dump(mode="json", exclude={"log"}), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(blob.encode()).hexdigest()[:16]


def read_filter_policy(source: FilterPolicy | dict | str | Path | None) -> tuple[FilterPolicy, Path | None]:
    """The policy, and the folder its relative paths are read from (None for one given in Python). A bad
    key is a `GuardError` naming the file and the key; a newer format is refused by name."""
    if isinstance(source, FilterPolicy):
        return source, None
    where = "filter policy"
    base: Path | None = None
    if source is None:
        raw: Any = {}
    elif isinstance(source, dict):
        raw = source
    else:
        path = Path(source)
        where, base = str(path), path.parent
        try:
            raw = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        except FileNotFoundError:
            raise GuardError(f"{path}: no such filter policy file") from None
        except yaml.YAMLError as e:
            mark = getattr(e, "problem_mark", None)
            at = f":{mark.line + 1}:{mark.column + 1}" if mark else ""
            raise GuardError(f"{path}{at}: invalid YAML: {getattr(e, 'problem', e)}") from None
    if not isinstance(raw, dict):
        raise GuardError(f"{where}: expected a mapping of the filter policy's keys")
    if isinstance(raw.get("format"), int) and raw["format"] > FORMAT:
        raise GuardError(f"{where}: format {raw['format']} is newer than this verifybench reads ({FORMAT}): upgrade it")
    try:
        return FilterPolicy.model_validate(raw), base
    except ValidationError as e:
        err = e.errors()[0]
        field = ".".join(str(p) for p in err["loc"]) or "(top level)"
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            msg = "unknown key"
        raise GuardError(f"{where}: {field}: {msg}") from None
