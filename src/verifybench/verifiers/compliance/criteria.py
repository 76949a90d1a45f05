"""Stage 1: the standard's requirements for one ingredient, as a checklist.

`VerificationCriterion` is the seed's schema, plus the analyte that the threshold applies to and, for
every requirement, the standard, edition and clause it comes from (`refs`). Two extractors turn
retrieved standard excerpts into it: `RuleExtractor` (deterministic, for standards written in the
labelled form of the bundled corpus) and `LLMExtractor` (any model through the LLM layer, answering in
the schema's JSON; the clause of each requirement it names is then found in the excerpts' text).
"""

from __future__ import annotations

import re
from typing import Protocol

from pydantic import BaseModel, Field, ValidationError

from verifybench.verifiers.compliance.standards import clause_at, edition_of
from verifybench.verifiers.compliance.terms import (
    QUANTITY,
    mentions,
    split_list,
    to_ppm,
    tokens,
)
from verifybench.verifiers.llm import LLMClient, json_object


class ClauseRef(BaseModel):
    """Where a requirement comes from: the excerpt, its standard and edition, and the clause."""

    doc_id: str
    standard_id: str | None = None
    edition: str | None = None
    clause: str | None = None


class Checklist(BaseModel):
    """The fields an extractor fills (the LLM's JSON schema)."""

    ingredient_name: str
    prohibited_processing_aids: list[str] = Field(
        default_factory=list, description="processing aids the standard forbids, e.g. bone char, gelatin")
    carrier_restrictions: list[str] = Field(
        default_factory=list, description='the carriers (solvents, matrices) the standard permits; ["none"] = no carrier')
    required_lab_tests: list[str] = Field(
        default_factory=list, description="laboratory tests the certificate of analysis must report, e.g. PCR, ELISA")
    max_threshold_ppm: float | None = Field(
        default=None, description="highest permitted level of unintended cross-contact, in mg/kg (ppm)")
    threshold_analyte: str | None = Field(default=None, description="what the threshold limits, e.g. animal DNA")


class VerificationCriterion(Checklist):
    source_ids: list[str] = Field(default_factory=list, description="the standard excerpts these come from")
    refs: dict[str, ClauseRef] = Field(
        default_factory=dict, description="where each requirement comes from: `<field>:<item>` for list items "
                                          "(`prohibited_processing_aids:pork gelatin`), `<field>` otherwise")

    def ref(self, field: str, item: str | None = None) -> ClauseRef | None:
        return (self.refs.get(f"{field}:{item}") if item is not None else None) or self.refs.get(field)


def _ref(chunk, pos: int) -> ClauseRef:
    edition = edition_of(chunk)
    return ClauseRef(doc_id=chunk.id, standard_id=edition.standard_id if edition else (chunk.metadata or {}).get("standard"),
                     edition=edition.edition if edition else None, clause=clause_at(chunk.text, pos))


def refs_from_text(found: VerificationCriterion, chunks: list) -> None:
    """Fill the refs an extractor left empty: each requirement is attributed to the first excerpt line that
    names it (its clause id read from that line); one no excerpt names keeps no ref."""
    def locate(words: str, also=None):
        for chunk in chunks:
            at = 0
            for line in chunk.text.splitlines(keepends=True):
                if mentions(line, words) and (also is None or also.search(line)):
                    return _ref(chunk, at)
                at += len(line)
        return None

    for field in ("prohibited_processing_aids", "required_lab_tests"):
        for item in getattr(found, field):
            key = f"{field}:{item}"
            if key not in found.refs and (ref := locate(item)):
                found.refs[key] = ref
    if found.carrier_restrictions and "carrier_restrictions" not in found.refs:
        item = next((c for c in found.carrier_restrictions if c.lower() != "none"), "carrier")
        if ref := (locate(item) or locate("carrier")):
            found.refs["carrier_restrictions"] = ref
    if found.max_threshold_ppm is not None and "max_threshold_ppm" not in found.refs:
        # The line that limits the analyte: it names it and states a quantity ("Maximum animal DNA: 0.1 mg/kg").
        if ref := (locate(found.threshold_analyte or "maximum", QUANTITY) or locate("maximum", QUANTITY)):
            found.refs["max_threshold_ppm"] = ref

class Chunk(Protocol):
    id: str
    text: str
    metadata: dict


class CriteriaExtractor(Protocol):
    def extract(self, ingredient: str, chunks: list[Chunk], code: str | None = None) -> VerificationCriterion | None:
        """The checklist for `ingredient` (ingredient code `code`, when known) from the standard excerpts
        `chunks`; None when none applies."""


_FOR = re.compile(r"requirements for (.+?) \(ingredient code ([\w-]+)\)", re.I)
_CLAUSE_ID = r"(?:(?:§\s*|clause\s+)?\d+(?:\.\d+)*[a-z]?\.?\s+)?"  # a line may open with its clause id
_LINES = {
    "prohibited_processing_aids": re.compile(rf"^{_CLAUSE_ID}prohibited processing aids?:\s*(.+?)\.?\s*$", re.I | re.M),
    "carrier_restrictions": re.compile(rf"^{_CLAUSE_ID}permitted carriers?:\s*(.+?)\.?\s*$", re.I | re.M),
    "required_lab_tests": re.compile(rf"^{_CLAUSE_ID}required laboratory tests?[^:]*:\s*(.+?)\.?\s*$", re.I | re.M),
}
_MAX = re.compile(rf"^{_CLAUSE_ID}maximum (.+?):\s*(.+)$", re.I | re.M)


class RuleExtractor:
    """Reads standards written as labelled lines ("Prohibited processing aids: ...", "Permitted
    carriers: ...", "Required laboratory tests ...: ...", "Maximum <analyte>: <n> mg/kg"). Only excerpts
    whose heading names the ingredient (or its code) count: a retrieved excerpt about another ingredient
    or a general introduction adds nothing."""

    def extract(self, ingredient: str, chunks: list[Chunk], code: str | None = None) -> VerificationCriterion | None:
        want = tokens(ingredient)
        found = None
        for chunk in chunks:
            head = _FOR.search(chunk.text)
            if not head or not (tokens(head.group(1)) == want or (code and head.group(2) == code)):
                continue
            found = found or VerificationCriterion(ingredient_name=head.group(1))
            found.source_ids.append(chunk.id)
            for field, rx in _LINES.items():
                m = rx.search(chunk.text)
                if m:
                    items = split_list(re.sub(r"\(the ingredient is supplied without a carrier\)", "", m.group(1)))
                    items = ["none"] if items and items[0].lower().startswith("none") else items
                    new = [i for i in items if i not in getattr(found, field)]
                    getattr(found, field).extend(new)
                    ref = _ref(chunk, m.start())
                    if field == "carrier_restrictions":
                        found.refs.setdefault(field, ref)
                    for item in new:
                        found.refs[f"{field}:{item}"] = ref
            m = _MAX.search(chunk.text)
            if m and (q := QUANTITY.search(m.group(2))):
                limit = to_ppm(*q.groups())
                # Two excerpts with different limits: the stricter one applies.
                if found.max_threshold_ppm is None or limit < found.max_threshold_ppm:
                    found.max_threshold_ppm, found.threshold_analyte = limit, m.group(1).strip()
                    found.refs["max_threshold_ppm"] = _ref(chunk, m.start())
        return found


PROMPT = """You turn a certification standard into a checklist.
Ingredient: {ingredient}

Standard excerpts:
{context}

Reply with only a JSON object with these keys: ingredient_name (string), prohibited_processing_aids (list of
strings), carrier_restrictions (list of the permitted carriers; ["none"] if the ingredient must have no carrier),
required_lab_tests (list of strings), max_threshold_ppm (number in mg/kg, or null), threshold_analyte (string or
null). Use only what the excerpts say about this ingredient; if they say nothing about it, reply {{"ingredient_name": null}}."""


class LLMExtractor:
    """Asks a model (through the LLM layer: retries, replay cache, usage, scrubbed errors) to fill the
    checklist. `client` is an `LLMClient`, or a bare backend (OpenAI-compatible, Anthropic, llama.cpp)
    that gets the default retry policy. A reply that is not the schema's JSON raises ValueError, which
    becomes the case's error verdict."""

    def __init__(self, client, max_tokens: int = 400, timeout: float = 60.0):
        self.client = client if isinstance(client, LLMClient) else LLMClient(client, timeout_s=timeout)
        self.max_tokens = max_tokens

    def extract(self, ingredient: str, chunks: list[Chunk], code: str | None = None) -> VerificationCriterion | None:
        context = "\n\n".join(f"[{c.id}] {c.text}" for c in chunks)
        messages = [{"role": "user", "content": PROMPT.format(ingredient=ingredient, context=context)}]
        schema = Checklist.model_json_schema()
        reply = self.client.complete(messages, temperature=0.0, max_tokens=self.max_tokens, seed=0, logprobs=False,
                                     json_mode=True, schema=schema)
        text = reply.text.strip()
        try:
            data = json_object(text)
        except ValueError as e:
            raise ValueError(f"criteria extractor: reply is not JSON ({e}): {text[:200]!r}") from None
        if data.get("ingredient_name") is None:
            return None
        try:
            found = VerificationCriterion(**Checklist.model_validate(data).model_dump())
        except ValidationError as e:
            err = e.errors()[0]
            raise ValueError(f"criteria extractor: field {'.'.join(map(str, err['loc']))!r}: {err['msg']}") from None
        found.source_ids = [c.id for c in chunks]
        refs_from_text(found, chunks)
        return found
