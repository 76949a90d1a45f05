"""The two-gate agent loop: the model proposes claims, and only claims that pass both gates come back
to it as grounded facts; its final prose is then held to those grounded claims.

    user question
      -> the model replies with a tool call {"tool": "<the pack's tool>", "claims": [...]}
         or a final answer {"final": "..."}
      -> gate 1 (claims.py): shape; a rejection goes back to the model before any graph query
      -> the knowledge graph derives the authoritative values (the pack's rules, kg.py)
      -> gate 2 (entailment.py), as the seed has it: entailed claims are grounded and go back as the tool
         result; a contradicted, unsupported or conflicting claim is dropped, and goes back to the model
         with its reason and the expected value (`AgentResult.dropped`). `gate2="all_or_nothing"` is the
         stricter loop: one claim not entailed rejects the whole call, and nothing of it is grounded
      -> repeat until the model answers, at most `max_steps` model calls
      -> the final answer's sentences are read for claims (prose.py, the pack's patterns by default):
         a sentence asserting a value the graph did not entail is flagged (`AgentResult.flags`), and one
         stating a claim gate 2 dropped says so

The model is reached through the LLM layer (`verifybench.verifiers.llm`): an `LLMClient`, or any
`Backend` (OpenAI-compatible, Anthropic, llama.cpp, or in tests a scripted one), which then gets the
default retry policy, so a 429 or a 5xx is retried rather than ending the conversation. Tool results
and rejections go back as user messages holding JSON, which every chat backend accepts (no
provider-specific tool-call protocol).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from verifybench.verifiers.graph.claims import Rejection, display, gate1
from verifybench.verifiers.graph.entailment import Checker, ClaimCheck
from verifybench.verifiers.graph.pack import Pack, load_pack
from verifybench.verifiers.llm import (
    Backend,
    LLMClient,
    Usage,
    track_usage,
    try_json_object,
)


def system_prompt(pack: Pack) -> str:
    """The loop's instructions for one pack: its claim types and its tool."""
    entity = pack.subject_table.entity
    return f"""You answer questions about {pack.topic}. You may not state any {pack.topic} fact
({", ".join(c.replace("_", " ") for c in pack.claims)}) until the {pack.topic} knowledge graph has confirmed it.

To check facts, reply with only this JSON:
{{"tool": "{pack.tool}", "claims": [{{"claim_type": "...", "subject_id": "<{entity} id>", "value": ..., "evidence": "<why you think so>"}}]}}
Claim types and their values: {", ".join(f"{k} ({c.kind})" for k, c in pack.claims.items())}.
Confirmed claims come back grounded; a rejected claim comes back with the reason and the expected value:
correct it and check again, or leave it out.
When every fact you will state is confirmed, reply with only: {{"final": "<your answer>"}}"""  # noqa: E501 - the prompt as sent


@dataclass
class Step:
    """One model call and what the gates made of it."""

    reply: str
    kind: str  # tool_call | final | invalid
    rejections: list[Rejection] = field(default_factory=list)  # gate 1
    checks: list[ClaimCheck] = field(default_factory=list)  # gate 2
    feedback: str = ""  # what went back into the conversation


GATE2_MODES = ("keep_entailed", "all_or_nothing")
# Why a sentence is flagged: the gate-2 status of the claim it states when gate 2 dropped that very claim,
# else one of these.
NOT_GROUNDED, DIFFERS, NOT_READ = "not_grounded", "differs", "rejected"


@dataclass
class Flag:
    """A sentence of the final answer that asserts a value the graph did not entail. `status`: the gate-2
    status of the dropped claim it states (contradicted, unsupported, conflict), `not_grounded` (no
    grounded claim covers it), `differs` (a value other than the grounded one) or `rejected` (not a
    checkable claim)."""

    sentence: str
    claim: dict[str, Any]
    reason: str
    start: int | None = None
    end: int | None = None
    status: str = NOT_GROUNDED


@dataclass
class AgentResult:
    """How the loop ended: `answer` is None when the model ran out of steps. `grounded`: the claims gate 2
    entailed; `dropped`: the claims it did not (contradicted, unsupported, conflict), each (subject, claim
    type) once, the latest, and none the loop grounded later. `flags`: the final answer's sentences that
    state a value no grounded claim backs (empty when the answer keeps to them)."""

    answer: str | None
    grounded: list[ClaimCheck]
    steps: list[Step]
    messages: list[dict]
    flags: list[Flag] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)  # the model calls (and an LLM extractor's): requests, retries, tokens
    dropped: list[ClaimCheck] = field(default_factory=list)

    @property
    def stopped(self) -> str:
        return "final" if self.answer is not None else "max_steps"


def parse_action(text: str) -> dict[str, Any] | None:
    """The JSON object in a model reply (bare, fenced, or after a sentence), or None."""
    return try_json_object(text)


def _gate2_line(c: ClaimCheck) -> str:
    if c.status == "entailed":
        return f"claims[{c.index}] entailed: {c.reason}"
    expected = f" expected: {', '.join(c.expected)}." if c.expected else ""
    return f"claims[{c.index}] {c.status} by gate 2 (knowledge graph): {c.reason}.{expected}"


def rejection_message(rejections: list[Rejection], checks: list[ClaimCheck]) -> str:
    """What the model reads after a failed gate: one line per claim, with the reason."""
    lines = [f"claims[{r.index}] rejected by gate 1 (shape): {r.reason}" for r in rejections]
    lines += [_gate2_line(c) for c in checks]
    return json.dumps({"tool_result": "rejected", "details": lines,
                       "instruction": "Correct the rejected claims and check them again, or drop them."})


def _key(c: ClaimCheck) -> tuple[str, str]:
    return c.claim.subject_id, c.claim.claim_type


def check_answer(answer: str, grounded: list[ClaimCheck], pack: Pack, extractor, question: str | None = None,
                 dropped: list[ClaimCheck] | None = None) -> list[Flag]:
    """The sentences of `answer` that assert a value the graph did not entail: a value of a (subject,
    claim type) no grounded claim covers, or one that differs from the grounded value.

    Args:
        extractor: reads claims from prose (prose.RulesExtractor or LLMExtractor).
        dropped: the claims gate 2 dropped; a sentence stating one of them (the same value) says so.
    """
    confirmed = {_key(c): c for c in grounded}
    lost = {_key(c): c for c in dropped or ()}
    found = extractor.extract(answer, question)
    if found.problem:
        return [Flag(answer, {}, f"claim extraction: {found.problem}", status=NOT_READ)]
    accepted, rejected = gate1(found.claims, pack)
    flags = [Flag(found.claims[r.index].get("evidence", ""), found.claims[r.index], f"not a checkable claim: {r.reason}",
                  found.claims[r.index].get("start"), found.claims[r.index].get("end"), NOT_READ)
             for r in rejected if 0 <= r.index < len(found.claims)]
    for i, claim in accepted:
        raw = found.claims[i]
        what = f"{claim.claim_type} of {claim.subject_id}"
        said = display(claim.kind, claim.normalised)
        ground = confirmed.get((claim.subject_id, claim.claim_type))
        gone = lost.get((claim.subject_id, claim.claim_type))
        if ground is None and gone is not None and gone.claim.normalised == claim.normalised:
            reason, status = f"states the {what} ({said}), which gate 2 dropped: {gone.reason}", gone.status
        elif ground is None:
            reason, status = f"states the {what} ({said}), which the graph never confirmed", NOT_GROUNDED
        elif claim.normalised not in ground.expected_normalised:
            reason, status = f"states the {what} as {said}; the graph entailed {ground.expected[0]}", DIFFERS
        else:
            continue
        flags.append(Flag(raw.get("evidence", ""), raw, reason, raw.get("start"), raw.get("end"), status))
    return flags


def grounded_message(checks: list[ClaimCheck], dropped: list[ClaimCheck] | None = None) -> str:
    """The tool result: the grounded claims, and (a partial result) each dropped claim with its reason."""
    claims = [{"claim_type": c.claim.claim_type, "subject_id": c.claim.subject_id, "value": c.expected[0],
               "rules": [s["rule"] for s in c.proof.get("steps", [])]} for c in checks]
    if not dropped:
        return json.dumps({"tool_result": "grounded", "claims": claims})
    return json.dumps({"tool_result": "partially grounded", "claims": claims,
                       "dropped": [_gate2_line(c) for c in dropped],
                       "instruction": "State only the grounded claims. Correct the dropped claims and check them "
                                      "again, or leave them out."})


class TwoGateAgent:
    """Runs the loop for one question at a time.

    Args:
        backend: the chat model: an `LLMClient`, or a `Backend` that gets the default retry policy.
        checker: gate 2 over a knowledge graph (entailment.Checker); its pack gives the claim schema.
        max_steps: the most model calls per question.
        temperature, max_tokens, timeout_s, seed: passed to the backend on every call.
        extractor: reads the final answer's claims (default: the pack's patterns, prose.RulesExtractor;
            None when the pack has none, and then the answer is not checked).
        pack: the domain pack (default: the checker's; without a checker, the bundled refund pack).
        gate2: `keep_entailed` (the seed's gate 2: a call's entailed claims are grounded, the others
            dropped and sent back) or `all_or_nothing` (one claim not entailed rejects the whole call).
    """

    def __init__(self, backend: LLMClient | Backend, checker: Checker | None, max_steps: int = 6,
                 temperature: float = 0.0, max_tokens: int = 512, timeout_s: float = 60.0, seed: int | None = 0,
                 extractor=None, pack: Pack | None = None, gate2: str = "keep_entailed"):
        if max_steps < 1:
            raise ValueError("max_steps must be at least 1")
        if gate2 not in GATE2_MODES:
            raise ValueError(f"gate2 must be one of {', '.join(GATE2_MODES)}, got {gate2!r}")
        self.gate2 = gate2
        self.client = backend if isinstance(backend, LLMClient) else LLMClient(backend, timeout_s=timeout_s)
        self.checker = checker
        if pack is None:
            pack = checker.pack if checker is not None else load_pack("refunds")
        elif checker is not None and checker.pack.name != pack.name:
            raise ValueError(f"pack {pack.name!r} is not the checker's pack {checker.pack.name!r}")
        self.pack = pack
        self.max_steps, self.temperature, self.max_tokens = max_steps, temperature, max_tokens
        self.timeout_s, self.seed = timeout_s, seed
        if extractor is None and self.pack.extraction is not None:
            from verifybench.verifiers.graph.prose import RulesExtractor

            extractor = RulesExtractor(self.pack)
        self.extractor = extractor

    def run(self, question: str) -> AgentResult:
        """Answer `question`; the result holds every step, the claims the graph grounded, and the final
        answer's sentences that go beyond them."""
        tool = self.pack.tool
        messages = [{"role": "system", "content": system_prompt(self.pack)}, {"role": "user", "content": question}]
        steps: list[Step] = []
        grounded: dict[tuple[str, str], ClaimCheck] = {}
        dropped: dict[tuple[str, str], ClaimCheck] = {}
        usage = Usage()
        for _ in range(self.max_steps):
            reply = self.client.complete(messages, temperature=self.temperature, max_tokens=self.max_tokens,
                                         seed=self.seed, logprobs=False, json_mode=True, usage=usage).text
            messages.append({"role": "assistant", "content": reply})
            action = parse_action(reply)
            if action is not None and isinstance(action.get("final"), str) and "claims" not in action:
                steps.append(Step(reply, "final"))
                confirmed, lost = list(grounded.values()), list(dropped.values())
                flags = []
                if self.extractor is not None:
                    with track_usage() as read:  # an LLM extractor's calls count as the loop's
                        flags = check_answer(action["final"], confirmed, self.pack, self.extractor, question, lost)
                    usage.add(read)
                return AgentResult(action["final"], confirmed, steps, messages, flags, usage, lost)
            if action is None or action.get("tool") != tool:
                step = Step(reply, "invalid", feedback=json.dumps({
                    "error": f'reply with only a JSON object: {{"tool": "{tool}", "claims": [...]}} or {{"final": "..."}}'}))
            else:
                accepted, rejected = gate1(action.get("claims"), self.pack)
                step = Step(reply, "tool_call", rejections=rejected)
                if rejected:  # gate 1 failed: no graph query for this call
                    step.feedback = rejection_message(rejected, [])
                elif self.checker is None:
                    raise ValueError("the model called the graph tool, but this agent has no checker (gate 2)")
                else:
                    step.checks = self.checker.check(accepted)
                    step.feedback = self._gate2(step.checks, grounded, dropped)
            steps.append(step)
            messages.append({"role": "user", "content": step.feedback})
        return AgentResult(None, list(grounded.values()), steps, messages, usage=usage, dropped=list(dropped.values()))

    def _gate2(self, checks: list[ClaimCheck], grounded: dict, dropped: dict) -> str:
        """Gate 2 on one call's checks: ground what it lets through, mark what it drops, and say so."""
        kept = [c for c in checks if c.status == "entailed"]
        lost = [c for c in checks if c.status != "entailed"]
        # A value grounded earlier stands; a dropped one is replaced by the next check of the same claim.
        dropped.update({_key(c): c for c in lost if _key(c) not in grounded})
        if lost and (not kept or self.gate2 == "all_or_nothing"):
            return rejection_message([], checks)
        for c in kept:
            grounded[_key(c)] = c
            dropped.pop(_key(c), None)
        return grounded_message(kept, lost)
