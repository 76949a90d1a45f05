"""The one retry policy for LLM calls: exponential backoff with full jitter on transient failures.

A `Retryable` error (timeout, dropped connection, 408, 429, 5xx, a 200 whose body is not JSON) is
tried again up to `retries` times; the wait before retry n (n = 1, 2, ...) is drawn uniformly from
[0, min(max_backoff_s, backoff_s * 2**(n-1))] (full jitter, so many workers do not retry in step),
or is the server's own Retry-After when it sent one (capped at max_backoff_s). Any other exception
is final at once. Built on tenacity; every attempt, retry and failure is counted in a `Usage`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from tenacity import (
    RetryCallState,
    Retrying,
    retry_if_exception_type,
    stop_after_attempt,
    wait_random_exponential,
)

from verifybench.verifiers.llm.errors import GaveUp, Retryable
from verifybench.verifiers.llm.usage import Usage

T = TypeVar("T")


@dataclass(frozen=True)
class RetryPolicy:
    retries: int = 3
    backoff_s: float = 1.0
    max_backoff_s: float = 30.0

    def __post_init__(self):
        if self.retries < 0 or self.backoff_s < 0 or self.max_backoff_s < 0:
            raise ValueError("retries, backoff_s and max_backoff_s must be >= 0")

    def _wait(self, state: RetryCallState) -> float:
        error = state.outcome.exception() if state.outcome is not None else None
        after = getattr(error, "retry_after", None)
        if after is not None:
            return min(after, self.max_backoff_s)
        return wait_random_exponential(multiplier=self.backoff_s, max=self.max_backoff_s)(state)

    def call(self, attempt: Callable[[], T], usage: Usage, sleep: Callable[[float], None] = time.sleep) -> T:
        """`attempt()` until it returns, a non-retryable error, or the retries run out (`GaveUp`, whose
        message names the attempts and the last error)."""

        def counted() -> T:
            usage.requests += 1
            return attempt()

        def before_sleep(state: RetryCallState) -> None:
            usage.retries += 1

        retrying = Retrying(stop=stop_after_attempt(self.retries + 1), wait=self._wait,
                            retry=retry_if_exception_type(Retryable), before_sleep=before_sleep, sleep=sleep,
                            reraise=True)
        try:
            return retrying(counted)
        except Retryable as e:
            usage.failures += 1
            n = retrying.statistics.get("attempt_number", self.retries + 1)
            raise GaveUp(f"gave up after {n} attempts: {e}") from None
        except Exception:
            usage.failures += 1
            raise
