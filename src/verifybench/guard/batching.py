"""Micro-batching for model verifiers: concurrent requests share one `verify` call.

One thread per verifier takes the first waiting case and, when nothing else is waiting, scores it at
once: a request alone is never delayed. When others are already queued it takes them too and keeps
collecting for at most `wait_ms` (or until `max_batch`), so under load an embedding or NLI model sees
batches, which is where its throughput is. A case whose caller gave up (a timeout cancelled its
future) before its batch started is not scored. A batch is scored by the runner's checked path
(`verify_batch`), so a request gets the verdict `verifybench run` would give its case.
"""

from __future__ import annotations

import queue
import threading
import time
from concurrent.futures import Future
from typing import Any

from verifybench.cases import Case, Verdict
from verifybench.executors.scoring import verify_batch
from verifybench.verifiers import Verifier

_STOP: Any = object()


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
            return verify_batch(self.verifier, [case])[0]
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
                    verdicts = verify_batch(self.verifier, [c for c, _ in live])  # in order: checked there
                self.batches += 1
                self.cases += len(live)
                for (_, f), v in zip(live, verdicts):
                    f.set_result(v)
            if stop:
                return
