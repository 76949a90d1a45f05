"""Verifiers that exist only for tests: they fail, stall or misbehave on purpose."""

from __future__ import annotations

import time

from pydantic import BaseModel, ConfigDict

from verifybench.cases import Case, Verdict
from verifybench.verifiers.base import CaseVerifier, Verifier


class FailEveryOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    every: int = 3


class FailEvery(CaseVerifier):
    """Scores by response length, but raises on every n-th case it is given."""

    name = "fail-every"
    description = "test verifier that raises on some cases"
    Options = FailEveryOptions

    def __init__(self, id=None, **options):
        super().__init__(id, **options)
        self.calls = 0

    def score_case(self, case: Case) -> float:
        self.calls += 1
        if self.calls % self.options.every == 0:
            raise RuntimeError(f"planted failure on {case.id}")
        return min(1.0, len(case.response) / 500)


class BatchFails(Verifier):
    """Raises for a whole batch whenever it holds a case whose response contains 'boom'."""

    name = "batch-fails"
    description = "test verifier whose batch call raises"

    def verify(self, batch: list[Case]) -> list[Verdict]:
        if any("boom" in c.response for c in batch):
            raise ValueError("boom in batch")
        return [Verdict(case_id=c.id, verifier=self.id, score=0.5) for c in batch]


class SlowOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    ms: float = 2.0


class Slow(CaseVerifier):
    """A deterministic score that takes `ms` milliseconds per case, so a run can be killed mid-way."""

    name = "slow"
    description = "test verifier that sleeps"
    Options = SlowOptions

    def score_case(self, case: Case) -> float:
        time.sleep(self.options.ms / 1000)
        return (sum(map(ord, case.id)) % 1000) / 1000


class LengthProbability(CaseVerifier):
    """A probabilistic verifier (score = a probability) with per-claim units, for report tests."""

    name = "length-prob"
    description = "test verifier whose score is a probability"
    probabilistic = True

    def score_case(self, case: Case) -> Verdict:
        from verifybench.cases import Unit

        p = min(1.0, len(case.response) / 200)
        units = [Unit(text=part, score=p, status="unsupported" if p > 0.5 else "supported", evidence=case.sources[0].text[:80])
                 for part in case.response.split(". ") if part]
        return Verdict(case_id=case.id, verifier=self.id, score=p, units=units)


class Weakenable(CaseVerifier):
    """A decent verifier whose code can be 'changed' without changing its configuration, the way a code
    change reaches a gate: VB_WEAKEN=strong ruins a large share of its scores, VB_WEAKEN=tiny nudges a
    handful. (It reads the label to simulate quality: a fixture, not a method.)"""

    name = "weakenable"
    description = "test verifier with a switchable regression"

    def score_case(self, case: Case) -> float:
        import hashlib
        import os

        h = int(hashlib.sha256(case.id.encode()).hexdigest(), 16)
        noise = (h % 1000) / 1000
        score = 0.6 * case.label + 0.5 * noise  # overlapping classes: AUROC about 0.9
        mode = os.environ.get("VB_WEAKEN")
        if mode == "strong" and h % 10 < 6:
            score = noise
        elif mode == "tiny" and h % 97 == 0:
            score = 1.0 - score
        return score


class Chatty(CaseVerifier):
    """Reports what model-backed verifiers report: token usage, a cost, and the sample and injection
    flip flags in `detail`; no units on some cases, an empty list on others (for the columnar readers)."""

    name = "chatty"
    description = "test verifier that reports usage, cost and flip flags"

    def score_case(self, case: Case) -> Verdict:
        from verifybench.cases import Unit

        n = len(case.response)
        units = None if n % 3 == 0 else [] if n % 3 == 1 else [Unit(text=case.response[:10], score=0.5, start=0, end=10)]
        detail = {"flipped": n % 2 == 0, "note": {"nested": [1, 2]}} if n % 4 else {"injected_flip": n % 5 == 0}
        return Verdict(case_id=case.id, verifier=self.id, score=(n % 17) / 17, units=units,
                       usage={"input_tokens": float(n), "output_tokens": 3.0}, cost_usd=n * 1e-6, detail=detail)


class Refuses(CaseVerifier):
    """Refuses every case, as an English-only model does on answers in another language."""

    name = "refuses"
    description = "test verifier whose every verdict is an error"

    def score_case(self, case: Case) -> float:
        raise ValueError("the model reads English only")
