"""Executors: where the runner's batches are scored.

The runner reads the cases, writes the run directory and shows progress; an executor only turns
batches into verdicts. `local` scores them in this process as they are read; `ray` ships them to a
Ray cluster (imported only when asked for, so the local path never imports ray).

An executor is a context manager (`__enter__` connects to whatever it runs on) with:
- `describe() -> dict`: what the manifest records about where the run was scored;
- `score(verifiers, batches, done) -> Iterator[Scored]`: one `Scored` per (verifier, batch) that had
  work, in any order; `done` holds the (verifier id, case id) pairs that already have a verdict.
- `wall_rate`: True when verifiers run in parallel, so the progress bar shows the cluster's
  throughput (cases over wall time) instead of each verifier's own rate.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

from verifybench.cases import Case, Verdict
from verifybench.errors import VerifybenchError
from verifybench.executors.scoring import verify_batch
from verifybench.verifiers import Verifier

EXECUTORS = ("local", "ray")


@dataclass
class Scored:
    """The verdicts of one verifier on one batch (the cases of that batch it still had to score)."""

    verifier: str
    batch: int  # the batch's position in the run's stream of batches: with `verifier`, a unique key
    verdicts: list[Verdict]
    seconds: float  # time spent inside the verifier, wherever it ran


class Executor(Protocol):
    name: str
    wall_rate: bool

    def __enter__(self) -> Executor: ...

    def __exit__(self, *exc) -> None: ...

    def describe(self) -> dict[str, Any]: ...

    def score(self, verifiers: list[Verifier], batches: Iterable[list[Case]],
              done: set[tuple[str, str]]) -> Iterator[Scored]: ...


def make_executor(name: str = "local", address: str | None = None, pools: dict[str, int] | None = None) -> Executor:
    """An executor by name.

    Args:
        name: "local" or "ray".
        address: (ray) an existing cluster's address (`HOST:PORT` or `auto`); None starts a local Ray.
        pools: (ray) the most actors per verifier id, e.g. {"judge": 2} to bound a remote LLM's load.
    """
    if name == "local":
        if address is not None or pools:
            raise VerifybenchError("--address and --ray-pool need --executor ray")
        from verifybench.executors.local import LocalExecutor

        return LocalExecutor()
    if name == "ray":
        from verifybench.executors.ray import RayExecutor

        return RayExecutor(address=address, pools=pools)
    raise VerifybenchError(f"unknown executor {name!r}; known: {', '.join(EXECUTORS)}")


__all__ = ["EXECUTORS", "Executor", "Scored", "make_executor", "verify_batch"]
