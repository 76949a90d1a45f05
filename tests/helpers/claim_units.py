"""A verifier for the report's per-claim wording (issue 26): one unit per case, scored in the
hallucination direction (1 - its similarity to the evidence), status "weak support" as anchors says it."""

from __future__ import annotations

from verifybench.cases import Case, Unit, Verdict
from verifybench.verifiers.base import Verifier


class WeakSupport(Verifier):
    name = "weak-support"
    description = "test verifier: one unit per case with a similarity in its detail"

    def verify(self, batch: list[Case]) -> list[Verdict]:
        out = []
        for case in batch:
            similarity = float(case.meta["vendor"])
            units = [Unit(text=case.response, score=1.0 - similarity, status="weak support",
                          evidence=case.sources[0].text if case.sources else None, start=0, end=len(case.response),
                          detail={"cosine": similarity})]
            out.append(Verdict(case_id=case.id, verifier=self.id, score=1.0 - similarity, units=units))
        return out
