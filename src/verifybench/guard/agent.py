"""The graph article's two-gate agent loop with the guard on its final answer.

The loop (`verifybench.verifiers.graph.agent.TwoGateAgent`) grounds claims in the knowledge graph, gate
by gate (gate 2 keeps a call's entailed claims and drops only the others), and reads its final prose for
sentences that assert a value no grounded claim backs; a sentence stating a dropped claim is cut with
gate 2's reason, the sentences of the same call's entailed claims stay. Here the
final answer is then held to them, as the article describes: with `action="strip"` every unconfirmed
sentence is cut out by its offsets (the loop's own flags, and the units the guard's checks flag, e.g. a
`graph` verifier with `claims: from_response` at its fitted threshold), with `action="block"` an answer
with any is withheld. The guard also logs the decision, like any other.

```python
agent = TwoGateAgent(backend, GraphVerifier(domain="refunds").checker())
out = run_guarded(agent, "What refund do I get for order A-5618?", guard=Guard("policy.yaml"))
out.answer      # held to the grounded claims; None when blocked or when the loop ran out of steps
out.removed     # what was cut, and why
```
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from verifybench.guard.core import Decision, Guard, strip_spans

if TYPE_CHECKING:
    from verifybench.verifiers.graph.agent import AgentResult, TwoGateAgent


@dataclass
class Cut:
    start: int
    end: int
    text: str
    by: str  # "agent" (the loop's check of the final prose) or a guard check's verifier id
    reason: str


@dataclass
class GuardedAnswer:
    result: AgentResult
    decision: Decision | None
    action: Literal["allowed", "rewritten", "blocked"]
    answer: str | None
    removed: list[Cut] = field(default_factory=list)
    reason: str = ""


def run_guarded(agent: TwoGateAgent, question: str, guard: Guard | None = None,
                action: Literal["strip", "block"] = "strip", **check: Any) -> GuardedAnswer:
    """Run the loop on `question` and hold its final answer to the grounded claims. `check`: more
    arguments for `guard.check` (sources, doc_type, meta, request_id)."""
    result = agent.run(question)
    if result.answer is None:
        return GuardedAnswer(result, None, "blocked", None, reason="the loop ran out of steps without a final answer")
    answer = result.answer
    cuts = [Cut(f.start, f.end, answer[f.start:f.end], "agent", f.reason) for f in result.flags
            if f.start is not None and f.end is not None]
    loose = [f.reason for f in result.flags if f.start is None or f.end is None]
    decision = None
    if guard is not None:
        decision = guard.check(answer, check.pop("sources", []), question=question, **check)
        for r in decision.checks:
            if r.error is not None and guard.spec.on_error != "allow":
                loose.append(f"{r.verifier}: {r.error}")
            if not r.flagged:
                continue
            units = [u for u in r.units if u.flagged and u.start is not None and u.end is not None]
            if not units:
                loose.append(f"{r.verifier} flagged the answer with no unit offsets")
            cuts += [Cut(u.start, u.end, answer[u.start:u.end], r.verifier, u.status or "flagged")  # type: ignore[arg-type]
                     for u in units]
    if not cuts and not loose:
        return GuardedAnswer(result, decision, "allowed", answer, reason="every claim of the answer is grounded")
    if action == "block" or loose:
        why = "; ".join(loose) if loose else f"{len(cuts)} unconfirmed claim(s)"
        return GuardedAnswer(result, decision, "blocked", None, cuts, reason=f"blocked: {why}")
    kept = strip_spans(answer, [(c.start, c.end) for c in cuts])
    if not kept.strip():
        return GuardedAnswer(result, decision, "blocked", None, cuts, reason="nothing grounded is left")
    return GuardedAnswer(result, decision, "rewritten", kept, sorted(cuts, key=lambda c: c.start),
                         reason=f"stripped {len(cuts)} unconfirmed claim(s)")
