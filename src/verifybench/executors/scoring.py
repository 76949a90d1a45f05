"""Scoring one batch with one verifier, whatever the verifier does: shared by every executor, so a
batch scored on a cluster worker yields exactly the verdicts it would yield in the local runner."""

from __future__ import annotations

import time

from verifybench.cases import Case, Verdict
from verifybench.errors import VerifybenchError
from verifybench.verifiers import Verifier


def _error_verdict(case: Case, verifier: Verifier, message: str) -> Verdict:
    return Verdict(case_id=case.id, verifier=verifier.id, error=message)


def verify_batch(verifier: Verifier, batch: list[Case]) -> list[Verdict]:
    """Run one batch: one verdict per case, whatever the verifier does.

    A batch call that raises, or returns verdicts that do not match the batch, is retried one case at a
    time so a single bad case costs only its own verdict. A verdict without a latency gets its share of
    the batch's wall time.
    """
    start = time.perf_counter()
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
            verdicts = [v for case in batch for v in verify_batch(verifier, [case])]
            return verdicts
    share = (time.perf_counter() - start) * 1000.0 / len(batch)
    for v in verdicts:
        v.verifier = verifier.id
        if v.latency_ms is None:
            v.latency_ms = share
        if v.error is None and v.score is None:
            v.error = "verifier returned neither a score nor an error"
    return verdicts
