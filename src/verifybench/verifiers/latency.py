"""Per-case latency for verifiers that batch their heavy work across cases (anchors, nli).

A batch verifier parses, embeds or scores every case of a batch in one call, which is where its
throughput comes from; dividing the batch's wall time by its size then gives every case the batch's
mean, and a report's p95 is not any request's p95. `CaseClock` keeps the two kinds of time apart:

- a case's own stages (cutting its text, judging its units) are timed for that case alone (`own`);
- a batched stage (one parse or encoder call for the whole batch) is timed once and shared out by the
  work each case brought to it (`shared`): the characters of the texts it added, a text that several
  cases share split equally among them. A case with twenty claims pays for twenty, a cached text
  costs nothing extra.
- loading a model on first use is added to the first case of the batch (the runner reports that case
  apart as warm-up).

`finish` writes each verdict's `latency_ms` (own + shared, the time this case's request would have
taken with its batch) with `latency_kind` "case", and the split in `detail["latency_ms"]`.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Iterable, Sequence
from contextlib import contextmanager

from verifybench.cases import Verdict


class CaseClock:
    def __init__(self, n: int):
        self.own = [0.0] * n
        self.shared = [0.0] * n
        self.load = 0.0

    @contextmanager
    def case(self, i: int):
        """Time a stage of case `i` alone."""
        start = time.perf_counter()
        try:
            yield
        finally:
            self.own[i] += (time.perf_counter() - start) * 1000.0

    @contextmanager
    def loading(self):
        """Time a model load (charged to the batch's first case)."""
        start = time.perf_counter()
        try:
            yield
        finally:
            self.load += (time.perf_counter() - start) * 1000.0

    @contextmanager
    def batched(self, work: Sequence[Iterable[str]]):
        """Time a batched stage; `work[i]` are the texts case `i` brought to it (weighted by length,
        a text brought by k cases split k ways)."""
        start = time.perf_counter()
        try:
            yield
        finally:
            self.share((time.perf_counter() - start) * 1000.0, work)

    def share(self, elapsed_ms: float, work: Sequence[Iterable[str]]) -> None:
        sets = [set(w) for w in work]
        users: dict[str, int] = defaultdict(int)
        for s in sets:
            for t in s:
                users[t] += 1
        weights = [sum(len(t) / users[t] for t in s) for s in sets]
        total = sum(weights)
        if total <= 0:
            n = len(sets) or 1
            for i in range(len(sets)):
                self.shared[i] += elapsed_ms / n
            return
        for i, w in enumerate(weights):
            self.shared[i] += elapsed_ms * w / total

    def finish(self, verdicts: list[Verdict]) -> None:
        for i, v in enumerate(verdicts):
            load = self.load if i == 0 else 0.0
            v.latency_ms = self.own[i] + self.shared[i] + load
            v.latency_kind = "case"
            v.detail["latency_ms"] = {"own": round(self.own[i], 3), "batched_share": round(self.shared[i], 3),
                                      **({"model_load": round(load, 3)} if load else {})}
