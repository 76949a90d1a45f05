"""A verifier that exists only for the span tests: one unit per word of the response, with offsets."""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict

from verifybench.cases import Case, Unit, Verdict
from verifybench.verifiers.base import Verifier

WORD = re.compile(r"\S+")


class NoveltyOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    unplaced: bool = True  # also return one unit without offsets per case


class WordNovelty(Verifier):
    """Each word of the response is a unit scored 1 when no source contains it (lower-cased), else 0.
    The case score is the share of novel words. Its evidence is the first source's start, so the report
    shows whatever the data holds."""

    name = "word-novelty"
    description = "test verifier: per-word novelty units"
    Options = NoveltyOptions

    def verify(self, batch: list[Case]) -> list[Verdict]:
        out = []
        for case in batch:
            known = set(" ".join(s.text for s in case.sources).lower().split())
            units = [Unit(text=m.group(), score=float(m.group().lower() not in known), status="word",
                          evidence=case.sources[0].text[:80] if case.sources else None,
                          start=m.start(), end=m.end())
                     for m in WORD.finditer(case.response)]
            if self.options.unplaced:
                units.append(Unit(text="(a claim about the whole response)", score=0.5, status="not localized"))
            score = sum(u.score for u in units if u.start is not None) / max(1, len(units))
            out.append(Verdict(case_id=case.id, verifier=self.id, score=score, units=units))
        return out
