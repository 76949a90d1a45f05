"""Bring-your-own detectors for the tests of `repeats`: a seeded random score that draws anew for each
repeat, and one whose repeats fail on purpose."""

from __future__ import annotations

import copy
import hashlib
import random

from pydantic import BaseModel, ConfigDict

from verifybench.cases import Case
from verifybench.verifiers.base import CaseVerifier


def _unit(case_id: str, salt: str = "") -> float:
    """A number in [0, 1) fixed by the case id."""
    return int(hashlib.sha256(f"{salt}{case_id}".encode()).hexdigest()[:8], 16) / 2**32


class NoisyOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    seed: int = 0
    noise: float = 0.3  # the std of the gaussian noise each repeat adds
    weaken: float = 0.0  # the share of cases whose score no longer reads the label (a regression)


class Noisy(CaseVerifier):
    """A decent detector (it reads the label to simulate quality: a fixture, not a method) plus gaussian
    noise drawn from (seed, repeat, case id): each repeat is a fresh sample, and the same repeat of the
    same case always draws the same, so a resumed run gives the very scores of an uninterrupted one."""

    name = "noisy"
    description = "test verifier with a seeded random score per repeat"
    Options = NoisyOptions

    def __init__(self, id=None, **options):
        super().__init__(id, **options)
        self.repeat = 0

    def for_repeat(self, repeat: int) -> Noisy:
        twin = copy.copy(self)
        twin.repeat = repeat
        return twin

    def score_case(self, case: Case) -> float:
        o = self.options
        base = 0.5 * case.label + 0.8 * _unit(case.id)
        if _unit(case.id, "weaken") < o.weaken:
            base = 1.3 * _unit(case.id, "noise")
        return base + random.Random(f"{o.seed}:{self.repeat}:{case.id}").gauss(0.0, o.noise)


class FailingRepeatsOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    fail: dict[str, list[int]] = {}  # case id -> the repeats that raise on it


class FailingRepeats(CaseVerifier):
    """Scores repeat r of every case r / 10, and raises on the repeats `fail` names for a case."""

    name = "failing-repeats"
    description = "test verifier whose repeats fail on purpose"
    Options = FailingRepeatsOptions

    def __init__(self, id=None, **options):
        super().__init__(id, **options)
        self.repeat = 0

    def for_repeat(self, repeat: int) -> FailingRepeats:
        twin = copy.copy(self)
        twin.repeat = repeat
        return twin

    def score_case(self, case: Case) -> float:
        if self.repeat in self.options.fail.get(case.id, []):
            raise RuntimeError(f"planted failure on {case.id}, repeat {self.repeat}")
        return self.repeat / 10


class NoisyText(Noisy):
    """`Noisy` keyed by the response text instead of the case id and label (a guard's request has neither):
    the same answer draws the same samples in a run and in a guard."""

    name = "noisy-text"
    description = "test verifier with a seeded random score per repeat, keyed by the response"

    def score_case(self, case: Case) -> float:
        return _unit(case.response) + random.Random(f"{self.options.seed}:{self.repeat}:{case.response}").gauss(
            0.0, self.options.noise)
