"""What can go wrong on an LLM call, as exceptions whose messages are already scrubbed of secrets."""

from __future__ import annotations


class Retryable(Exception):
    """A transient failure a backend raises for the retry policy: a timeout, a dropped connection, a rate
    limit (429), a server error (5xx), or a 200 whose body is not JSON. `retry_after` is the server's
    own Retry-After, in seconds, when it sent one."""

    def __init__(self, message: str, retry_after: float | None = None):
        super().__init__(message)
        self.retry_after = retry_after


class LLMError(Exception):
    """A call that failed for good. The message names the cause and never holds a credential."""


class GaveUp(LLMError):
    """Every attempt the retry policy allows failed with a transient error."""


class ProviderError(LLMError):
    """The provider refused the request (400, 401, 404...) or the client failed outright: not retried."""


class ReplayMiss(LLMError):
    """Replay-only, and no recording answers this request: nothing was sent."""


class MalformedReply(LLMError, ValueError):
    """The model answered, but not with the JSON asked for (after the repairs allowed)."""
