"""Scoring one batch with one verifier, whatever the verifier does: shared by every executor, so a
batch scored on a cluster worker yields exactly the verdicts it would yield in the local runner."""

from __future__ import annotations

import math
import time
import weakref

from verifybench.cases import Case, Verdict
from verifybench.errors import VerifybenchError
from verifybench.verifiers import Verifier


def _error_verdict(case: Case, verifier: Verifier, message: str) -> Verdict:
    return Verdict(case_id=case.id, verifier=verifier.id, error=message)


# The verifier objects of this process that have scored a batch: the first batch of each pays for loading
# its models (on a cluster, each worker's copy pays once). Weak, so a finished run's verifiers are freed.
_warm: weakref.WeakSet = weakref.WeakSet()


def _mark_latency(verifier: Verifier, batch: list[Case], verdicts: list[Verdict], share: float) -> None:
    """Fill and label each verdict's latency: its own ("case"), or its share of the batch's wall time
    ("batch"; a batch of one is that case's own time). The first batch a verifier object scores is
    "warmup": all of it when its latencies are shares of the batch, its first case when they are per
    case (a lazy import or model load lands on the first case). A verifier re-created for each task on a
    cluster (a stateless one) has a warm-up in each task, and it is marked so."""
    if getattr(verifier, "latency_logged", False):
        # Latencies the verifier read from a log (the scores verifier's latency_column) are each case's
        # own: a case without one has none (not a share of this batch's time), and nothing is warm-up.
        for v in verdicts:
            if v.latency_ms is not None and v.latency_kind is None:
                v.latency_kind = "case"
        return
    for v in verdicts:
        if v.latency_ms is None:
            v.latency_ms = share
            v.latency_kind = "batch" if len(batch) > 1 else "case"
        elif v.latency_kind is None:
            v.latency_kind = "case"
    try:
        first = verifier not in _warm
        _warm.add(verifier)
    except TypeError:  # a verifier that cannot be weakly referenced: no warm-up mark
        return
    if first and verdicts:
        for v in verdicts if verdicts[0].latency_kind == "batch" else verdicts[:1]:
            v.latency_kind = "warmup"


def verify_batch(verifier: Verifier, batch: list[Case]) -> list[Verdict]:
    """Run one batch: one verdict per case, whatever the verifier does.

    A batch call that raises, or returns verdicts that do not match the batch, is retried one case at a
    time so a single bad case costs only its own verdict. A verdict without a latency gets its share of
    the batch's wall time; every latency says how it was measured (`Verdict.latency_kind`). A verifier
    with `repeats` above 1 scores the batch that many times, and each case's verdicts are folded into
    one (`verifybench.executors.repeats`).
    """
    start = time.perf_counter()
    if verifier.repeats > 1:
        from verifybench.executors.repeats import score_repeats

        verdicts = score_repeats(verifier, batch, checked_verdicts)
    else:
        verdicts = checked_verdicts(verifier, batch)
    share = (time.perf_counter() - start) * 1000.0 / len(batch)
    _mark_latency(verifier, batch, verdicts, share)
    return verdicts


def checked_verdicts(verifier: Verifier, batch: list[Case]) -> list[Verdict]:
    """`verifier.verify(batch)`, checked: one verdict per case in order (else case by case, each case's
    latency its own), each with the verifier's id and a finite score or an error. Latencies the verifier
    left out stay out (the caller shares the batch's time)."""
    try:
        verdicts = verifier.verify(batch)
        got = [v.case_id for v in verdicts]
        if got != [c.id for c in batch]:
            raise VerifybenchError(
                f"verifier {verifier.id!r} returned verdicts for {len(got)} cases in another order or set "
                f"than the {len(batch)} cases given"
            )
    except Exception as e:  # noqa: BLE001
        if len(batch) == 1:
            verdicts = [_error_verdict(batch[0], verifier, f"{type(e).__name__}: {e}")]
        else:
            verdicts = []
            for case in batch:
                started = time.perf_counter()
                one = checked_verdicts(verifier, [case])
                if one[0].latency_ms is None:
                    one[0].latency_ms = (time.perf_counter() - started) * 1000.0
                    one[0].latency_kind = one[0].latency_kind or "case"
                verdicts += one
            return verdicts
    for v in verdicts:
        v.verifier = verifier.id
        if v.error is None and v.score is None:
            v.error = "verifier returned neither a score nor an error"
        elif v.error is None and not math.isfinite(v.score):  # type: ignore[arg-type]
            # NaN or an infinity is no score: stored, it would read back as null with no error, and be
            # counted as an error by the metrics but not by the run or errors.jsonl.
            v.error = f"verifier returned a score that is not a finite number ({v.score!r})"
            v.score = None
    return verdicts
