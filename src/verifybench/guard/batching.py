"""Micro-batching for model verifiers: concurrent requests share one `verify` call.

One thread per verifier takes the first waiting case and, when nothing else is waiting, scores it at
once: a request alone is never delayed. When others are already queued it takes them too and keeps
collecting for at most `wait_ms` (or until `max_batch`), so under load an embedding or NLI model sees
batches, which is where its throughput is. A case whose caller gave up (a timeout cancelled its
future) before its batch started is not scored.
"""

from __future__ import annotations

import queue
import threading
import time
from concurrent.futures import Future
from typing import Any

from verifybench.cases import Case, Verdict
from verifybench.verifiers import Verifier

_STOP: Any = object()


def verify_safely(verifier: Verifier, cases: list[Case]) -> list[Verdict]:
    """One verdict per case: a `verify` that raises gives every case of the batch its error verdict; a
    verifier that returns the wrong number of verdicts is an error too. A verifier whose policy was fitted
    on `repeats` scores each case that many times and keeps the mean, as the run did (its threshold is a
    threshold on the mean)."""
    if verifier.repeats > 1:
        from verifybench.executors.repeats import score_repeats

        return score_repeats(verifier, cases, _verify_once)
    return _verify_once(verifier, cases)


def _verify_once(verifier: Verifier, cases: list[Case]) -> list[Verdict]:
    try:
        verdicts = verifier.verify(cases)
    except Exception as e:  # noqa: BLE001 - a verifier's failure is an error verdict, counted
        return [verifier.error_verdict(c, e) for c in cases]
    if len(verdicts) != len(cases):
        err = RuntimeError(f"{verifier.id}: verify returned {len(verdicts)} verdicts for {len(cases)} cases")
        return [verifier.error_verdict(c, err) for c in cases]
    return verdicts


class MicroBatcher:
    def __init__(self, verifier: Verifier, wait_ms: float = 2.0, max_batch: int = 64):
        self.verifier = verifier
        self.wait = wait_ms / 1000.0
        self.max_batch = max_batch
        self.batches = 0
        self.cases = 0
        self._q: queue.SimpleQueue = queue.SimpleQueue()
        self.busy = threading.Lock()  # held while the verifier scores (here or in the caller's thread)
        self._thread = threading.Thread(target=self._loop, name=f"guard-batch-{verifier.id}", daemon=True)
        self._thread.start()

    def submit(self, case: Case) -> Future:
        fut: Future = Future()
        self._q.put((case, fut))
        return fut

    def try_inline(self, case: Case) -> Verdict | None:
        """Score `case` in the caller's thread when nothing is queued and the verifier is idle (a
        synchronous caller alone pays no thread hand-off); None when it is busy: then `submit`."""
        if not self._q.empty() or not self.busy.acquire(blocking=False):
            return None
        try:
            return verify_safely(self.verifier, [case])[0]
        finally:
            self.busy.release()

    def close(self) -> None:
        self._q.put(_STOP)
        self._thread.join(timeout=5)

    def _collect(self, first: tuple) -> tuple[list[tuple], bool]:
        batch, stop = [first], False
        deadline = None
        while len(batch) < self.max_batch:
            try:
                item = self._q.get_nowait()
            except queue.Empty:
                if len(batch) == 1 or self.wait <= 0:
                    break  # alone: no wait
                now = time.perf_counter()
                deadline = deadline or now + self.wait
                if now >= deadline:
                    break
                try:
                    item = self._q.get(timeout=deadline - now)
                except queue.Empty:
                    break
            if item is _STOP:
                stop = True
                break
            batch.append(item)
        return batch, stop

    def _loop(self) -> None:
        while True:
            first = self._q.get()
            if first is _STOP:
                return
            batch, stop = self._collect(first)
            live = [(c, f) for c, f in batch if f.set_running_or_notify_cancel()]
            if live:
                with self.busy:
                    start = time.perf_counter()
                    verdicts = verify_safely(self.verifier, [c for c, _ in live])
                    per_case = (time.perf_counter() - start) * 1000.0 / len(live)
                self.batches += 1
                self.cases += len(live)
                for (_, f), v in zip(live, verdicts):
                    if v.latency_ms is None:
                        v.latency_ms = per_case
                    f.set_result(v)
            if stop:
                return
