"""The two-gate agent loop: the model proposes claims, and only claims that pass both gates come back
to it as grounded facts. The gates check the tool calls, not the final answer's prose: the result lists
what was grounded (`AgentResult.grounded`) so a caller can hold the answer to it (for example by running
the final answer through the `graph` verifier).

    user question
      -> the model replies with a tool call {"tool": "check_refund_claims", "claims": [...]}
         or a final answer {"final": "..."}
      -> gate 1 (claims.py): shape; a rejection goes back to the model before any graph query
      -> the knowledge graph derives the authoritative values (rules.py, kg.py)
      -> gate 2 (entailment.py): anything not entailed goes back to the model as a rejection naming the
         expected value; entailed claims go back as the grounded tool result
      -> repeat until the model answers, at most `max_steps` model calls

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

from verifybench.verifiers.graph.claims import KINDS, Rejection, gate1
from verifybench.verifiers.graph.entailment import Checker, ClaimCheck
from verifybench.verifiers.llm import Backend, LLMClient, Usage, try_json_object

TOOL = "check_refund_claims"

SYSTEM_PROMPT = f"""You answer customers' questions about refunds. You may not state any refund fact
(customer tier, eligibility, amount, restocking fee, refund method, return window, shipping, defects,
bereavement refunds) until the refund knowledge graph has confirmed it.

To check facts, reply with only this JSON:
{{"tool": "{TOOL}", "claims": [{{"claim_type": "...", "subject_id": "<order id>", "value": ..., "evidence": "<why you think so>"}}]}}
Claim types and their values: {", ".join(f"{k} ({v})" for k, v in KINDS.items())}.
A rejected claim comes back with the reason and the expected value: correct it and check again.
When every fact you will state is confirmed, reply with only: {{"final": "<your answer to the customer>"}}"""


@dataclass
class Step:
    """One model call and what the gates made of it."""

    reply: str
    kind: str  # tool_call | final | invalid
    rejections: list[Rejection] = field(default_factory=list)  # gate 1
    checks: list[ClaimCheck] = field(default_factory=list)  # gate 2
    feedback: str = ""  # what went back into the conversation


@dataclass
class AgentResult:
    """How the loop ended: `answer` is None when the model ran out of steps."""

    answer: str | None
    grounded: list[ClaimCheck]
    steps: list[Step]
    messages: list[dict]
    usage: Usage = field(default_factory=Usage)  # the model calls: requests, retries, tokens

    @property
    def stopped(self) -> str:
        return "final" if self.answer is not None else "max_steps"


def parse_action(text: str) -> dict[str, Any] | None:
    """The JSON object in a model reply (bare, fenced, or after a sentence), or None."""
    return try_json_object(text)


def rejection_message(rejections: list[Rejection], checks: list[ClaimCheck]) -> str:
    """What the model reads after a failed gate: one line per claim, with the reason."""
    lines = [f"claims[{r.index}] rejected by gate 1 (shape): {r.reason}" for r in rejections]
    for c in checks:
        if c.status == "entailed":
            lines.append(f"claims[{c.index}] entailed: {c.reason}")
        else:
            expected = f" expected: {', '.join(c.expected)}." if c.expected else ""
            lines.append(f"claims[{c.index}] {c.status} by gate 2 (knowledge graph): {c.reason}.{expected}")
    return json.dumps({"tool_result": "rejected", "details": lines,
                       "instruction": "Correct the rejected claims and check them again, or drop them."})


def grounded_message(checks: list[ClaimCheck]) -> str:
    return json.dumps({"tool_result": "grounded",
                       "claims": [{"claim_type": c.claim.claim_type, "subject_id": c.claim.subject_id,
                                   "value": c.expected[0], "rules": [s["rule"] for s in c.proof.get("steps", [])]}
                                  for c in checks]})


class TwoGateAgent:
    """Runs the loop for one question at a time.

    Args:
        backend: the chat model: an `LLMClient`, or a `Backend` that gets the default retry policy.
        checker: gate 2 over a knowledge graph (entailment.Checker).
        max_steps: the most model calls per question.
        temperature, max_tokens, timeout_s, seed: passed to the backend on every call.
    """

    def __init__(self, backend: LLMClient | Backend, checker: Checker, max_steps: int = 6, temperature: float = 0.0,
                 max_tokens: int = 512, timeout_s: float = 60.0, seed: int | None = 0):
        if max_steps < 1:
            raise ValueError("max_steps must be at least 1")
        self.client = backend if isinstance(backend, LLMClient) else LLMClient(backend, timeout_s=timeout_s)
        self.checker = checker
        self.max_steps, self.temperature, self.max_tokens = max_steps, temperature, max_tokens
        self.timeout_s, self.seed = timeout_s, seed

    def run(self, question: str) -> AgentResult:
        """Answer `question`; the result holds every step and the claims the graph grounded."""
        messages = [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": question}]
        steps: list[Step] = []
        grounded: dict[tuple[str, str], ClaimCheck] = {}
        usage = Usage()
        for _ in range(self.max_steps):
            reply = self.client.complete(messages, temperature=self.temperature, max_tokens=self.max_tokens,
                                         seed=self.seed, logprobs=False, json_mode=True, usage=usage).text
            messages.append({"role": "assistant", "content": reply})
            action = parse_action(reply)
            if action is not None and isinstance(action.get("final"), str) and "claims" not in action:
                steps.append(Step(reply, "final"))
                return AgentResult(action["final"], list(grounded.values()), steps, messages, usage)
            if action is None or action.get("tool") != TOOL:
                step = Step(reply, "invalid", feedback=json.dumps({
                    "error": f'reply with only a JSON object: {{"tool": "{TOOL}", "claims": [...]}} or {{"final": "..."}}'}))
            else:
                accepted, rejected = gate1(action.get("claims"))
                step = Step(reply, "tool_call", rejections=rejected)
                if rejected:  # gate 1 failed: no graph query for this call
                    step.feedback = rejection_message(rejected, [])
                else:
                    step.checks = self.checker.check(accepted)
                    if all(c.status == "entailed" for c in step.checks):
                        grounded.update({(c.claim.subject_id, c.claim.claim_type): c for c in step.checks})
                        step.feedback = grounded_message(step.checks)
                    else:
                        step.feedback = rejection_message([], step.checks)
            steps.append(step)
            messages.append({"role": "user", "content": step.feedback})
        return AgentResult(None, list(grounded.values()), steps, messages, usage)
