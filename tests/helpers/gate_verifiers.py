"""Test verifiers for the gate: a decent verifier that times out on some cases, or gets worse, on demand."""

from __future__ import annotations

import hashlib
import os

from verifybench.cases import Case
from verifybench.verifiers.base import CaseVerifier


class Timeouts(CaseVerifier):
    """Scores like a decent verifier, with overlapping classes (AUROC about 0.9: it reads the label to
    simulate quality, a fixture, not a method). Switched by the environment, the way a code change or a
    flaky backend reaches a gate without a configuration change:
    - VB_TIMEOUTS=N: raises TimeoutError, as a judge with a slow backend does, on the cases whose id hash
      falls in the first N of 100 buckets (N=3: about 3% of cases);
    - VB_WEAKEN=strong: most scores become noise (a real regression); VB_WEAKEN=tiny: a few flip."""

    name = "timeouts"
    description = "test verifier that times out on some cases when VB_TIMEOUTS is set"

    def score_case(self, case: Case) -> float:
        h = int(hashlib.sha256(case.id.encode()).hexdigest(), 16)
        if h % 100 < int(os.environ.get("VB_TIMEOUTS", "0")):
            raise TimeoutError(f"backend timed out on {case.id}")
        noise = (h // 100 % 1000) / 1000
        score = 0.5 * case.label + 0.8 * noise
        mode = os.environ.get("VB_WEAKEN")
        if mode == "strong" and h // 100_000 % 10 < 7:
            score = noise
        elif mode == "tiny" and h // 100_000 % 97 == 0:
            score = 1.3 - score
        return score
