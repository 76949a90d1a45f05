"""Structured claims from a prose answer (`claims: from_response`), for the two gates to check.

Two extractors, one output: a list of raw claims `{claim_type, subject_id, value, evidence}` that goes
through gate 1 like claims a model emitted itself, so a bad extraction is a gate-1 rejection with its
reason, never a crash.

- `RulesExtractor` (offline, deterministic): the pack's own extraction patterns (pack.yaml `extract:`),
  tried sentence by sentence; the subject is the id the sentence names, else the one named last, else
  the first one in the answer or the question. Each claim keeps its sentence as evidence and its
  character offsets in the answer.
- `LLMExtractor`: any judge backend (verifiers/judge/backends.py: OpenAI-compatible, Anthropic,
  llama.cpp), asked for the claims as JSON constrained to the pack's claim schema. A reply that is not
  that JSON is reported as the extraction's problem (a gate-1 rejection of the case's claims).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from verifybench.verifiers.graph.pack import Pack

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[]?[A-Z0-9$€£])")


@dataclass
class Extraction:
    """What an extractor found in one answer. `problem` is set when the extractor's output could not be
    read as claims (it then becomes a gate-1 rejection); `raw` is that output."""

    claims: list[dict[str, Any]] = field(default_factory=list)
    problem: str | None = None
    raw: Any = None
    usage: dict[str, int] = field(default_factory=dict)


def sentences(text: str) -> list[tuple[int, int]]:
    """[start, end) offsets of the sentences of `text`."""
    out, start = [], 0
    for m in _SENTENCE_END.finditer(text):
        out.append((start, m.start()))
        start = m.end()
    if start < len(text):
        out.append((start, len(text.rstrip())))
    return [(a, b) for a, b in out if text[a:b].strip()]


class RulesExtractor:
    """The pack's extraction patterns over each sentence of an answer.

    Args:
        pack: a pack whose pack.yaml has an `extract:` section.
    """

    def __init__(self, pack: Pack):
        if pack.extraction is None or not pack.extraction.patterns:
            raise ValueError(f"pack {pack.name!r} has no extraction patterns (pack.yaml `extract:`); use the "
                             "`llm` extractor or give the cases' claims")
        self.pack = pack
        self.spec = pack.extraction

    def _ids(self, text: str | None) -> list[str]:
        if not text or self.spec.subject is None:
            return []
        return [m.group(0) for m in self.spec.subject.finditer(text)]

    def extract(self, response: str, question: str | None = None) -> Extraction:
        ids = self._ids(response)
        default = ids[0] if ids else next(iter(self._ids(question)), "")
        last, found, seen = None, [], set()
        for start, end in sentences(response):
            text = response[start:end]
            here = self._ids(text)
            subject = here[0] if here else (last or default)
            if here:
                last = here[-1]
            for claim_type, patterns in self.spec.patterns.items():
                for p in patterns:
                    m = p.regex.search(text)
                    if m is None:
                        continue
                    value = m.group("value") if "value" in p.regex.groupindex and m.group("value") is not None else p.value
                    key = (claim_type, subject, str(value).strip().lower())
                    if key not in seen:
                        seen.add(key)
                        found.append({"claim_type": claim_type, "subject_id": subject, "value": value,
                                      "evidence": text, "start": start, "end": end})
                    break  # the first matching pattern of a claim type decides for this sentence
        return Extraction(claims=found)


def claims_schema(pack: Pack) -> dict:
    """The JSON schema an LLM's reply is constrained to: a list of claims of the pack's claim types."""
    return {"type": "object", "additionalProperties": False, "required": ["claims"],
            "properties": {"claims": {"type": "array", "items": {
                "type": "object", "additionalProperties": False,
                "required": ["claim_type", "subject_id", "value", "evidence"],
                "properties": {"claim_type": {"type": "string", "enum": list(pack.claims)},
                               "subject_id": {"type": "string"},
                               "value": {"type": ["string", "number", "boolean"]},
                               "evidence": {"type": "string"}}}}}}


_KIND_WORDS = {"name": "a name in capitals", "text": "text", "bool": "true or false", "money": "an amount like 129.48",
               "days": "a whole number of days", "int": "a whole number", "date": "a date YYYY-MM-DD"}


def prompt(pack: Pack, response: str, question: str | None) -> list[dict]:
    """The extraction request: the pack's claim types in words, the question and the answer."""
    types = "\n".join(f"- {c.name} ({_KIND_WORDS[c.kind]}): {c.description or c.name.replace('_', ' ')}"
                      for c in pack.claims.values())
    entity = pack.subject_table.entity
    example = pack.extraction.example if pack.extraction and pack.extraction.example else f"the {entity} id"
    system = (f"You extract the checkable facts an answer about {pack.topic} states. Each fact is a claim about "
              f"one {entity}, named by its id (like {example}).\nClaim types:\n{types}\n"
              'Reply with only JSON: {"claims": [{"claim_type": "...", "subject_id": "...", "value": ..., '
              '"evidence": "<the sentence that states it>"}]}. One claim per fact the answer states; '
              'an empty list when it states none. Do not add facts the answer does not state.')
    user = (f"Question: {question}\n" if question else "") + f"Answer: {response}"
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def ask_llm(backend, messages: list[dict], schema: dict, max_tokens: int, timeout: float):
    """One completion from a judge backend (`Backend.complete`), JSON constrained to `schema` where the
    backend can. The single place this module calls a model."""
    return backend.complete(messages, temperature=0.0, max_tokens=max_tokens, seed=0, logprobs=False, json_mode=True,
                            timeout=timeout, schema=schema)


def parse_claims(text: str) -> tuple[list | None, str | None]:
    """(claims, None) from a reply holding `{"claims": [...]}`, else (None, what is wrong with it)."""
    start, end = text.find("{"), text.rfind("}")
    try:
        data = json.loads(text[start:end + 1]) if start >= 0 else None
    except ValueError:
        data = None
    if not isinstance(data, dict):
        return None, f"the extractor's reply is not a JSON object: {text[:200]!r}"
    claims = data.get("claims")
    if not isinstance(claims, list):
        return None, f"the extractor's reply has no 'claims' list: {text[:200]!r}"
    return claims, None


class LLMExtractor:
    """Claims from an answer by an LLM, through a judge backend.

    Args:
        backend: a `verifybench.verifiers.judge.backends.Backend`.
        pack: the pack whose claim schema the reply is constrained to.
        max_tokens, timeout: per request.
    """

    def __init__(self, backend, pack: Pack, max_tokens: int = 512, timeout: float = 60.0):
        self.backend, self.pack = backend, pack
        self.max_tokens, self.timeout = max_tokens, timeout
        self.schema = claims_schema(pack)

    def extract(self, response: str, question: str | None = None) -> Extraction:
        completion = ask_llm(self.backend, prompt(self.pack, response, question), self.schema, self.max_tokens,
                             self.timeout)
        usage = {"input_tokens": completion.input_tokens, "output_tokens": completion.output_tokens}
        claims, problem = parse_claims(completion.text)
        if problem:
            return Extraction(problem=problem, raw=completion.text[:500], usage=usage)
        return Extraction(claims=claims, raw=completion.text, usage=usage)
