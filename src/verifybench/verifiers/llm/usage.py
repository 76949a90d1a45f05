"""Token and request accounting for LLM calls, and what the tokens cost.

A `Usage` counts one unit of work (a case's verdict): requests sent, retries, failures, JSON repairs,
cache hits, input and output tokens. Tokens count for cached answers too: cost is what the verdicts
cost to make, so a replayed CI run reports what a live run would pay.

`track_usage()` collects the calls made inside a `with` block (in this thread) when the caller cannot
pass a `Usage` down, for example through a pipeline that does not know it talks to a model.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import asdict, dataclass

from pydantic import BaseModel, ConfigDict


class Prices(BaseModel):
    """A paid backend's prices, from the provider's current list: USD per million input and output tokens."""

    model_config = ConfigDict(extra="forbid")
    input_per_1m: float = 0.0
    output_per_1m: float = 0.0

    def cost(self, input_tokens: float, output_tokens: float) -> float:
        return (input_tokens * self.input_per_1m + output_tokens * self.output_per_1m) / 1e6


@dataclass
class Usage:
    requests: int = 0
    retries: int = 0
    failures: int = 0
    repairs: int = 0
    cache_hits: int = 0
    input_tokens: int = 0
    output_tokens: int = 0

    def add(self, other: Usage) -> None:
        for name, value in asdict(other).items():
            setattr(self, name, getattr(self, name) + value)

    def as_dict(self) -> dict[str, float]:
        """The form a verdict's `usage` takes."""
        return {k: float(v) for k, v in asdict(self).items()}

    def cost(self, prices: Prices | None, local: bool = False) -> float | None:
        """USD for these tokens: 0 for a model run here, None (unknown) for a paid one without prices."""
        if local:
            return 0.0
        return None if prices is None else prices.cost(self.input_tokens, self.output_tokens)


_tracked: ContextVar[list[Usage] | None] = ContextVar("verifybench_llm_usage", default=None)


@contextmanager
def track_usage() -> Iterator[Usage]:
    """Every LLM call made in this block (in this thread) also counts into the yielded `Usage`."""
    usage = Usage()
    outer = _tracked.get()
    token = _tracked.set([*(outer or []), usage])
    try:
        yield usage
    finally:
        _tracked.reset(token)


def tracked() -> list[Usage]:
    """The `Usage` objects of the enclosing `track_usage` blocks, innermost last."""
    return _tracked.get() or []
