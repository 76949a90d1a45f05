"""Test verifiers for the reliability tests: one that returns scores that are not finite numbers."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from verifybench.cases import Case
from verifybench.verifiers.base import CaseVerifier


class NonFiniteOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    every: int = 3  # every `every`-th case (by position) gets NaN, the next one +inf, the next -inf


class NonFinite(CaseVerifier):
    """Scores a case by its id, except that it returns NaN, +inf or -inf for some cases."""

    name = "non-finite"
    description = "test verifier returning NaN and infinities"
    Options = NonFiniteOptions

    def score_case(self, case: Case) -> float:
        n = int(case.id.lstrip("c#"))
        if n % self.options.every == 0:
            return [float("nan"), float("inf"), float("-inf")][(n // self.options.every) % 3]
        return (n % 10) / 10


def slow_jsonl(path: str, delay: float = 0.2):
    """The jsonl loader, `delay` seconds a record: a pass over the data that a test can interrupt."""
    import time

    from verifybench.loaders import generic

    for item in generic.jsonl(path):
        time.sleep(delay)
        yield item
