"""Plugins that break the verifier protocol on purpose, and one that keeps it with a lazy part."""

from __future__ import annotations

import threading
import time

from pydantic import BaseModel, ConfigDict

from verifybench.cases import Case, Verdict
from verifybench.verifiers.base import CaseVerifier, Verifier, operational


class NoVerify(Verifier):
    """Forgot `verify`."""

    name = "no-verify"


class NoScoreCase(CaseVerifier):
    """A per-case verifier that forgot `score_case`."""

    name = "no-score-case"


class NoName(CaseVerifier):
    def score_case(self, case: Case) -> float:
        return 0.0


class LazyOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    weight: float = 1.0
    workers: int = operational(2, ge=1)


class Part:
    """Stands for a heavy model: slow to build, holds a lock (which cannot be pickled)."""

    built = 0

    def __init__(self):
        time.sleep(0.05)
        type(self).built += 1
        self.lock = threading.Lock()


class LazyPart(CaseVerifier):
    name = "lazy-part"
    Options = LazyOptions
    lazy = ("_part",)

    def part(self) -> Part:
        return self._build_once("_part", Part)

    def score_case(self, case: Case) -> float:
        self.part()
        return self.options.weight * len(case.response) / 100


class Sub(LazyPart):
    """Adds a lazy attribute of its own: both are dropped when pickled."""

    name = "lazy-sub"
    lazy = ("_other",)

    def verify(self, batch: list[Case]) -> list[Verdict]:
        self._build_once("_other", Part)
        return super().verify(batch)
