"""Scoring a batch `repeats` times and folding each case's repeats into its one verdict.

A suite entry's `repeats: N` (N >= 1, default 1) makes every executor score each case N times with
`verifier.for_repeat(r)`, r = 0..N-1 (a judge draws fresh samples for each: its own seeds and cache
keys). The run still holds one verdict per (verifier, case), so resume, the metrics and the gate read
it as any other:

- `score` is the mean of the repeats that gave a score; `detail["repeats"]` holds `n` (how many did),
  `of` (N), `mean`, `std` (population), `min`, `max`, `scores` (one per repeat, None for a failed one),
  `details` (each repeat's own detail, where any has one) and, when a repeat failed, `errors` (its messages, by repeat).
- The rest of the verdict (units, detail) is the first scored repeat's; usage, cost and latency are
  the sums over the repeats: what the case cost to score N times.
- A failed repeat does not fail the case while another repeat gave a score: the mean is over the
  repeats that did, and `n` says how many. When every repeat fails, the verdict is an error naming
  the first repeat's error.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from verifybench.cases import Case, Verdict
from verifybench.metrics.repeats import spread
from verifybench.verifiers import Verifier

KEY = "repeats"  # the key of Verdict.detail the runner writes


def score_repeats(verifier: Verifier, batch: list[Case],
                  score: Callable[[Verifier, list[Case]], list[Verdict]]) -> list[Verdict]:
    """One verdict per case of `batch`, each folded from `verifier.repeats` repeats scored by `score`
    (checked verdicts, latencies as the verifier gave them)."""
    runs: list[list[Verdict]] = []
    for r in range(verifier.repeats):
        started = time.perf_counter()
        verdicts = score(verifier.for_repeat(r), batch)
        share = (time.perf_counter() - started) * 1000.0 / len(batch)
        for v in verdicts:
            v.verifier = verifier.id
            if v.latency_ms is None:  # this repeat's share of its batch's time
                v.latency_ms, v.latency_kind = share, ("batch" if len(batch) > 1 else "case")
        runs.append(verdicts)
    return [fold([run[i] for run in runs]) for i in range(len(batch))]


def fold(repeats: list[Verdict]) -> Verdict:
    """The one verdict of a case from its repeats' verdicts (see the module's docstring)."""
    first = repeats[0]
    scores = [v.score if v.ok else None for v in repeats]
    stats = spread(scores)
    record: dict = {**stats, "of": len(repeats), "scores": scores}
    if any(v.detail for v in repeats):
        record["details"] = [v.detail for v in repeats]
    errors = {str(r): v.error for r, v in enumerate(repeats) if not v.ok}
    if errors:
        record["errors"] = errors
    scored = next((v for v in repeats if v.ok), None)
    kinds = {v.latency_kind or "case" for v in repeats}  # none given: the verifier timed the case itself
    return Verdict(
        case_id=first.case_id, verifier=first.verifier,
        score=stats["mean"],
        error=None if scored is not None else f"all {len(repeats)} repeats failed; the first: {first.error}",
        units=scored.units if scored is not None else None,
        latency_ms=sum(v.latency_ms or 0.0 for v in repeats),
        latency_kind=kinds.pop() if len(kinds) == 1 else "batch",
        usage=_summed([v.usage for v in repeats]),
        cost_usd=None if all(v.cost_usd is None for v in repeats) else sum(v.cost_usd or 0.0 for v in repeats),
        detail={**(scored.detail if scored is not None else {}), KEY: record},
    )


def _summed(usages: list[dict[str, float] | None]) -> dict[str, float] | None:
    given = [u for u in usages if u]
    if not given:
        return None
    out: dict[str, float] = {}
    for u in given:
        for k, v in u.items():
            out[k] = out.get(k, 0.0) + float(v)
    return out
