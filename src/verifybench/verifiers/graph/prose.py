"""Structured claims from a prose answer (`claims: from_response`), for the two gates to check.

Two extractors, one output: a list of raw claims `{claim_type, subject_id, value, evidence}` that goes
through gate 1 like claims a model emitted itself, so a bad extraction is a gate-1 rejection with its
reason, never a crash.

- `RulesExtractor` (offline, deterministic): the pack's own extraction patterns (pack.yaml `extract:`),
  tried sentence by sentence; the subject is the id the sentence names, else the one named last, else
  the first one in the answer or the question. Each claim keeps its sentence as evidence and its
  character offsets in the answer.
- `LLMExtractor`: any model through the LLM layer (verifybench.verifiers.llm: retries, replay cache,
  usage, scrubbed errors; OpenAI-compatible, Anthropic, llama.cpp), asked for the claims as JSON
  constrained to the pack's claim schema. A reply that is not that JSON gets the layer's repair
  request; if that fails too, it is reported as the extraction's problem (a gate-1 rejection of the
  case's claims). A call that fails for good (the retries ran out, a 4xx, a replay miss) raises
  `LLMError`: that case's error verdict.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from verifybench.verifiers.graph.pack import Pack
from verifybench.verifiers.llm import (
    Backend,
    LLMClient,
    MalformedReply,
    Usage,
    json_object,
)

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[]?[A-Z0-9$€£])")


@dataclass
class Extraction:
    """What an extractor found in one answer. `problem` is set when the extractor's output could not be
    read as claims (it then becomes a gate-1 rejection); `raw` is that output; `usage` what the model
    calls cost (requests, retries, repairs, tokens; empty for the pattern extractor)."""

    claims: list[dict[str, Any]] = field(default_factory=list)
    problem: str | None = None
    raw: Any = None
    usage: Usage = field(default_factory=Usage)


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


def claims_list(text: str) -> list:
    """The `claims` list of a reply holding `{"claims": [...]}`; ValueError saying what is wrong otherwise
    (the LLM layer then asks for a repair)."""
    try:
        data = json_object(text)
    except ValueError as e:
        raise ValueError(f"the extractor's reply is not a JSON object ({e}): {text[:200]!r}") from None
    claims = data.get("claims")
    if not isinstance(claims, list):
        raise ValueError(f"the extractor's reply has no 'claims' list: {text[:200]!r}")
    return claims


def ask_llm(client: LLMClient, messages: list[dict], schema: dict, max_tokens: int, usage: Usage,
            repairs: int = 1) -> tuple[list | None, str | None, str]:
    """(claims, None, reply) from one extraction request through the LLM layer (retries, cache, usage,
    scrubbing), JSON constrained to `schema` where the backend can; a reply that is not the claims JSON
    gets `repairs` repair requests, then it is (None, what is wrong with it, the last reply). The single
    place this module calls a model; an `LLMError` (no reply at all) propagates."""
    replies: list[str] = []

    def parse(text: str) -> list:
        replies.append(text)
        return claims_list(text)

    try:
        claims, completion = client.complete_json(messages, parse, repairs=repairs, what="claims reply", usage=usage,
                                                  temperature=0.0, max_tokens=max_tokens, seed=0, logprobs=False,
                                                  json_mode=True, schema=schema)
    except MalformedReply as e:
        return None, str(e), replies[-1] if replies else ""
    return claims, None, completion.text


class LLMExtractor:
    """Claims from an answer by an LLM, through the LLM layer.

    Args:
        client: an `LLMClient` (e.g. `LLMOptions(...).client()`), or a bare `Backend`, which then gets the
            layer's default retry policy.
        pack: the pack whose claim schema the reply is constrained to.
        max_tokens: per request.
        timeout: per attempt, for a bare backend (an `LLMClient` has its own).
        repairs: repair requests after a reply that is not the claims JSON.
    """

    def __init__(self, client: LLMClient | Backend, pack: Pack, max_tokens: int = 512, timeout: float = 60.0,
                 repairs: int = 1):
        self.client = client if isinstance(client, LLMClient) else LLMClient(client, timeout_s=timeout)
        self.pack, self.max_tokens, self.repairs = pack, max_tokens, repairs
        self.schema = claims_schema(pack)

    def extract(self, response: str, question: str | None = None) -> Extraction:
        usage = Usage()
        claims, problem, reply = ask_llm(self.client, prompt(self.pack, response, question), self.schema,
                                         self.max_tokens, usage, self.repairs)
        if problem:
            return Extraction(problem=problem, raw=reply[:500], usage=usage)
        return Extraction(claims=claims or [], raw=reply, usage=usage)
