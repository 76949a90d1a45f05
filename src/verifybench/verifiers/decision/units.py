"""Split a case into independently judged units, each under a numbered key (the seed's step 1).

- every source is a unit; its kind is `source.metadata["kind"]`: "chunk" (a retrieved passage, the
  default) or "tool_result";
- sources marked `kind: citation` are grouped by the claim they are cited for (`metadata["claim"]`, else
  the response) into one "citation" unit per claim: the cited text judged against its claim;
- with `response_as_unit`, the response itself is one more unit ("answer"), judged against the question
  and the other units (used to measure contradiction on HaluEval-style cases);
- `response_citations` (the verifier's `cite_response`): each check-worthy sentence of the response is a
  "citation" unit: the sentence is the claim, the case's sources are its cited text (an answer checked as citations of its
  sources; the sources are then not units of their own); greetings, thanks and sign-offs
  (`anchors.checkworthy`) are skipped, not asked.

Keys are `u1`, `u2`, ... in that order, so the audit log names a unit the same way on every run.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from verifybench.cases import Case

UNIT_KINDS = ("chunk", "tool_result", "citation", "answer")


@dataclass
class DecisionUnit:
    key: str
    kind: str
    text: str
    source_ids: list[str]
    claim: str | None = None
    premise: str = ""  # what contradiction is judged against
    probe: bool = False  # marked by a dataset as the unit under test (decision-adversarial)
    meta: dict = field(default_factory=dict)
    span: tuple[int, int] | None = None  # where the claim sits in the response (cite_response units)

    @property
    def tokens(self) -> int:
        """Context cost, estimated as one token per 4 characters (no tokenizer dependency)."""
        return max(1, (len(self.text) + 3) // 4)


def split_units(case: Case, response_as_unit: bool = False) -> list[DecisionUnit]:
    """The units of `case`, numbered in source order."""
    units: list[DecisionUnit] = []
    citations: dict[str, list] = {}
    question = case.question or ""
    for src in case.sources:
        kind = str(src.metadata.get("kind", "chunk"))
        if kind not in UNIT_KINDS or kind == "answer":
            raise ValueError(f"source {src.id!r}: metadata.kind must be chunk, tool_result or citation, got {kind!r}")
        if kind == "citation":
            claim = str(src.metadata.get("claim") or case.response)
            citations.setdefault(claim, []).append(src)
            continue
        units.append(DecisionUnit(f"u{len(units) + 1}", kind, src.text, [src.id], premise=question,
                                  probe=_probe(src)))
    for claim, srcs in citations.items():
        units.append(DecisionUnit(f"u{len(units) + 1}", "citation", "\n".join(s.text for s in srcs),
                                  [s.id for s in srcs], claim=claim, premise=question,
                                  probe=any(_probe(s) for s in srcs)))
    if response_as_unit:
        context = "\n".join(s.text for s in case.sources)
        units.append(DecisionUnit(f"u{len(units) + 1}", "answer", case.response, ["response"],
                                  premise=f"{question}\n{context}".strip()))
    return units


def response_citations(case: Case) -> tuple[list[DecisionUnit], list[tuple[int, int, str]]]:
    """The response's check-worthy sentences as citation units (claim = the sentence, with its offsets;
    cited text = every source of the case, joined, each also kept apart in `meta["cited"]`: a backend
    that reads one source at a time takes the most supportive), and the skipped ones as (start, end, reason)."""
    from verifybench.verifiers.anchors.checkworthy import assess
    from verifybench.verifiers.anchors.text import sentences

    if not case.sources:
        raise ValueError("cite_response: the case has no sources to cite")
    cited = "\n".join(s.text for s in case.sources)
    ids = [s.id for s in case.sources]
    sents = sentences(case.response)
    units: list[DecisionUnit] = []
    skipped: list[tuple[int, int, str]] = []
    for s, w in zip(sents, assess([s.text for s in sents])):
        if w.reason is not None:
            skipped.append((s.start, s.end, w.reason))
            continue
        start = s.start + w.offset  # an opener ("Hi Sam, ...") is not part of the claim
        claim = case.response[start:s.end]
        units.append(DecisionUnit(f"u{len(units) + 1}", "citation", cited, ids, claim=claim,
                                  premise=case.question or "", span=(start, s.end),
                                  meta={"cited": [src.text for src in case.sources]}))
    return units, skipped


def state_for(case: Case, units: list[DecisionUnit]) -> dict:
    """The state sent to a decision model: the question and every unit under its numbered key."""
    state_units = {}
    for u in units:
        entry = {"kind": u.kind, "text": u.text}
        if u.claim is not None:
            entry["claim"] = u.claim
        state_units[u.key] = entry
    return {"question": case.question or "", "units": state_units}


def _probe(src) -> bool:
    """`metadata.probe` marks a unit the adversarial suite watches; only a real boolean counts."""
    value = src.metadata.get("probe", False)
    if not isinstance(value, bool):
        raise ValueError(f"source {src.id!r}: metadata.probe must be true or false, got {value!r}")
    return value
