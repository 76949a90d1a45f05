"""A verifier that holds a run open until the test lets it go, so a second process meets a live writer."""

from __future__ import annotations

import time
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from verifybench.cases import Case
from verifybench.verifiers.base import CaseVerifier


class HoldOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    release: str  # the run waits, after its first `after` cases, until this file exists
    after: int = 5


class Hold(CaseVerifier):
    """Scores the first `after` cases at once, then waits for the `release` file before each further case."""

    name = "hold"
    description = "test verifier that waits for a file"
    Options = HoldOptions

    def __init__(self, id=None, **options):
        super().__init__(id, **options)
        self.seen = 0

    def score_case(self, case: Case) -> float:
        self.seen += 1
        if self.seen > self.options.after:
            deadline = time.time() + 300
            while not Path(self.options.release).exists():
                if time.time() > deadline:
                    raise TimeoutError("never released")
                time.sleep(0.02)
        return (sum(map(ord, case.id)) % 1000) / 1000
