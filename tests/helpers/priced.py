"""A verifier that reports a cost per case, as a paid model would, for the tracking tests."""

from __future__ import annotations

from verifybench.cases import Case, Verdict
from verifybench.verifiers.base import CaseVerifier


class Priced(CaseVerifier):
    """Scores by response length and reports $0.002 per 1,000 characters of response."""

    name = "priced"
    description = "test verifier that reports a cost per case"

    def score_case(self, case: Case) -> Verdict:
        return Verdict(case_id=case.id, verifier=self.id, score=min(1.0, len(case.response) / 400),
                       cost_usd=len(case.response) * 2e-6)
