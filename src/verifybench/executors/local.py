"""The local executor: every verifier scores each batch in this process, as soon as it is read."""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from typing import Any

from verifybench.cases import Case
from verifybench.executors import Scored
from verifybench.executors.scoring import verify_batch
from verifybench.verifiers import Verifier


class LocalExecutor:
    name = "local"
    wall_rate = False  # one verifier at a time: each verifier's own rate is what the bar shows

    def __enter__(self) -> LocalExecutor:
        return self

    def __exit__(self, *exc) -> None:
        pass

    def describe(self) -> dict[str, Any]:
        return {"name": self.name}

    def score(self, verifiers: list[Verifier], batches: Iterable[list[Case]],
              done: set[tuple[str, str]]) -> Iterator[Scored]:
        for i, batch in enumerate(batches):
            for verifier in verifiers:
                todo = [c for c in batch if (verifier.id, c.id) not in done] if done else batch
                if not todo:
                    continue
                started = time.perf_counter()
                verdicts = verify_batch(verifier, todo)
                yield Scored(verifier.id, i, verdicts, time.perf_counter() - started)
