"""Test verifiers for the guard: a sentence-level verifier with unit offsets (cheap, no model), which
sleeps or raises when a request asks it to (meta.sleep_ms, meta.fail), the way a slow backend or a
broken model reaches a guard."""

from __future__ import annotations

import re
import time

from verifybench.cases import Case, Unit, Verdict
from verifybench.verifiers.base import CaseVerifier, Verifier

_SENTENCE = re.compile(r"[^.!?]+[.!?]?")
_WORD = re.compile(r"\w+")


def sentence_units(case: Case) -> list[Unit]:
    """Each sentence of the response, scored by the share of its words found in no source."""
    vocab = {w for s in case.sources for w in _WORD.findall(s.text.lower())}
    units = []
    for m in _SENTENCE.finditer(case.response):
        text = m.group(0)
        lead = len(text) - len(text.lstrip())
        start, end = m.start() + lead, m.end()
        words = _WORD.findall(text.lower())
        if not words:
            continue
        novel = sum(w not in vocab for w in words) / len(words)
        units.append(Unit(text=case.response[start:end], score=novel, start=start, end=end,
                          status="unsupported" if novel > 0.3 else "supported"))
    return units


class Sentences(CaseVerifier):
    """Score = the worst sentence's share of words found in no source; units with offsets."""

    name = "sentences"
    description = "test verifier: per-sentence word novelty, with unit offsets"

    def score_case(self, case: Case) -> Verdict:
        if case.meta.get("fail"):
            raise RuntimeError("planted failure (meta.fail)")
        if case.meta.get("sleep_ms"):
            time.sleep(float(case.meta["sleep_ms"]) / 1000.0)
        units = sentence_units(case)
        return Verdict(case_id=case.id, verifier=self.id, score=max((u.score or 0.0 for u in units), default=0.0),
                       units=units)


class SentencesStateless(Sentences):
    """`Sentences` marked stateless, as rouge is: the guard runs it without a batch thread (and sleeps in it
    when a request asks, as a cheap check on a huge request would take its time)."""

    name = "sentences-stateless"
    stateless = True


class SentencesBatched(Verifier):
    """`Sentences` as a model-like verifier (not stateless): the guard micro-batches it. Records the batch
    sizes it was given."""

    name = "sentences-batched"
    description = "test verifier: per-sentence word novelty, batched"
    sizes: list[int] = []

    def verify(self, batch: list[Case]) -> list[Verdict]:
        type(self).sizes.append(len(batch))
        delay = max((float(c.meta.get("sleep_ms") or 0) for c in batch), default=0.0)
        if delay:
            time.sleep(delay / 1000.0)
        out = []
        for case in batch:
            if case.meta.get("fail"):
                out.append(self.error_verdict(case, RuntimeError("planted failure (meta.fail)")))
                continue
            units = sentence_units(case)
            out.append(Verdict(case_id=case.id, verifier=self.id, units=units,
                               score=max((u.score or 0.0 for u in units), default=0.0)))
        return out


def fit_demo_policy(base, verifiers=None, target: str = "youden"):
    """A run over the project's demo set (rouge and `Sentences` by default) and the policy fitted on it:
    (suite path, Run, policy path)."""
    from pathlib import Path

    import yaml

    import verifybench

    demo = Path(__file__).resolve().parents[2] / "datasets" / "demo" / "cases.jsonl"
    suite = Path(base) / "suite.yaml"
    suite.write_text(yaml.safe_dump({
        "name": "guard-demo",
        "dataset": {"loader": "jsonl", "path": str(demo),
                    "fields": {"id": "id", "response": "response", "sources": "sources", "question": "question",
                               "label": "label", "doc_type": "doc_type", "split": "split"}},
        "verifiers": verifiers or ["rouge", {"helpers.guard_verifiers:Sentences": {"id": "sentences"}}],
        "metrics": {"by": "doc_type", "bootstrap": 50},
    }), encoding="utf-8")
    run = verifybench.run(suite, out=Path(base) / "run", progress=False)
    policy = Path(base) / "policy.yaml"
    verifybench.thresholds(run.run_dir, by="doc_type", target=target, out=policy)
    return suite, run, policy


def demo_cases() -> list[dict]:
    import json
    from pathlib import Path

    demo = Path(__file__).resolve().parents[2] / "datasets" / "demo" / "cases.jsonl"
    return [json.loads(line) for line in demo.read_text(encoding="utf-8").splitlines() if line.strip()]


class Unruly(Verifier):
    """`Sentences`' score from a batched model that misbehaves the ways a broken one does: NaN for a
    response that says "NaN", an infinity for one that says "Infinity", and its verdicts in reverse order
    whenever it is given more than one case."""

    name = "unruly"
    description = "test verifier: NaN, infinities and verdicts out of order"

    def verify(self, batch: list[Case]) -> list[Verdict]:
        out = []
        for case in batch:
            units = sentence_units(case)
            score = max((u.score or 0.0 for u in units), default=0.0)
            if "NaN" in case.response:
                score = float("nan")
            elif "Infinity" in case.response:
                score = float("inf")
            out.append(Verdict(case_id=case.id, verifier=self.id, score=score, units=units))
        return out[::-1]


class Claims(CaseVerifier):
    """`Sentences` that scores only a sentence with a number in it (a claim); any other sentence (a greeting,
    a sign-off) is a unit without a score, skipped, as nli skips conversational openers."""

    name = "claims"
    description = "test verifier: per-sentence word novelty of the sentences with a number; others skipped"

    def score_case(self, case: Case) -> Verdict:
        units = [u if any(ch.isdigit() for ch in u.text) else
                 Unit(text=u.text, score=None, start=u.start, end=u.end, status="skipped: no claim")
                 for u in sentence_units(case)]
        return Verdict(case_id=case.id, verifier=self.id, units=units,
                       score=max((u.score for u in units if u.score is not None), default=0.0))
