"""`LLMClient`: the one road every LLM call in verifybench takes (judge, extractors, agents).

    client.complete(messages, ...)           one completion
      -> replay cache (cache.py): a hit answers at once; replay-only turns a miss into `ReplayMiss`
      -> the retry policy (retry.py) around one backend attempt (providers.py)
      -> every error text scrubbed of credentials (scrub.py) before anyone can store or print it
      -> the completion cached, its tokens and requests counted (usage.py)
    client.complete_json(messages, parse)    the same, then the JSON object of the reply (replies.py),
                                             with a repair request when it is malformed

A client is safe to share between threads: it keeps no per-call state; counts go into the `Usage`
the caller passes (and into any enclosing `track_usage()` block).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

from verifybench.verifiers.llm.cache import CompletionCache, request_key
from verifybench.verifiers.llm.errors import MalformedReply, ProviderError, ReplayMiss, Retryable
from verifybench.verifiers.llm.providers import Backend, Completion, TokenLogprob
from verifybench.verifiers.llm.replies import json_object
from verifybench.verifiers.llm.retry import RetryPolicy
from verifybench.verifiers.llm.scrub import describe, scrub, scrub_pieces
from verifybench.verifiers.llm.usage import Usage, tracked

T = TypeVar("T")

REPAIR = "That was not a valid JSON object with the keys asked for. Reply again with only the JSON object."
REPLAY_ENV = "VERIFYBENCH_REPLAY_ONLY"


def replay_only_from_env() -> bool:
    return os.environ.get(REPLAY_ENV, "") not in ("", "0")


def scrubbed(completion: Completion) -> Completion:
    """`completion` with its text and its tokens scrubbed of credentials (scrub.py): the tokens as the text
    they make together (a key split across tokens), each alternative token on its own."""
    text = scrub(completion.text)
    lps = completion.logprobs
    if lps:
        tokens = scrub_pieces([t.token for t in lps])
        tops = [{scrub(k): v for k, v in t.top.items()} for t in lps]
        if tokens != [t.token for t in lps] or tops != [t.top for t in lps]:
            lps = [TokenLogprob(tok, t.logprob, top) for tok, t, top in zip(tokens, lps, tops)]
    if text == completion.text and lps is completion.logprobs:
        return completion
    return Completion(text=text, logprobs=lps, input_tokens=completion.input_tokens,
                      output_tokens=completion.output_tokens)


class LLMClient:
    """A backend with the retry policy, the replay cache, usage counting and secret scrubbing.

    Args:
        backend: the chat model (providers.py, or any `Backend` subclass), or a picklable function that
            makes it: then it is made at the first call that misses the cache (a replay-only run never
            starts a server or needs a key).
        retry: how transient failures are retried.
        timeout_s: per attempt.
        cache_dir: the replay cache's folder; None: no cache.
        replay_only: answer only from the cache (also VERIFYBENCH_REPLAY_ONLY=1): a miss is `ReplayMiss`.
        key_kind, key_model: the backend's name in cache keys (default: its `kind` and `model`).
        sleep: how the retry policy waits (tests pass a recorder).
    """

    def __init__(self, backend: Backend | Callable[[], Backend], retry: RetryPolicy | None = None,
                 timeout_s: float = 60.0, cache_dir: str | None = None, replay_only: bool = False,
                 key_kind: str | None = None, key_model: str | None = None,
                 sleep: Callable[[float], None] = time.sleep):
        made = hasattr(backend, "complete")
        self._backend: Backend | None = backend if made else None  # type: ignore[assignment]
        self._make: Callable[[], Backend] | None = None if made else backend  # type: ignore[assignment]
        if not made and (key_kind is None or key_model is None):
            raise ValueError("a backend made on first use needs key_kind and key_model for the cache keys")
        self.retry = retry or RetryPolicy()
        self.timeout_s = timeout_s
        self.cache = CompletionCache(cache_dir)
        self._replay_only = replay_only
        self.key_kind: str = key_kind or getattr(backend, "kind", "") or type(backend).__name__
        self.key_model: str = key_model or getattr(backend, "model", "") or ""
        self.sleep = sleep
        self._lock = threading.Lock()

    @property
    def backend(self) -> Backend:
        if self._backend is None:
            with self._lock:
                if self._backend is None:
                    assert self._make is not None  # set whenever no backend was given
                    self._backend = self._make()
        return self._backend

    def __getstate__(self) -> dict:
        state = {**self.__dict__, "_lock": None}
        if self._make is not None:
            state["_backend"] = None  # made again where the copy runs
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    @property
    def replay_only(self) -> bool:
        return self._replay_only or replay_only_from_env()

    def complete(self, messages: list[dict], *, temperature: float = 0.0, max_tokens: int = 512,
                 seed: int | None = 0, logprobs: bool = False, json_mode: bool = False, schema: dict | None = None,
                 sample: int = 0, usage: Usage | None = None) -> Completion:
        """One completion. Raises `ReplayMiss`, `GaveUp` or `ProviderError` (all `LLMError`, messages
        scrubbed) when there is none."""
        params: dict[str, Any] = {"temperature": temperature, "max_tokens": max_tokens, "seed": seed,
                                  "logprobs": logprobs, "json_mode": json_mode, "schema": schema}
        spent = Usage()
        try:
            key = request_key(self.key_kind, self.key_model, messages, params, sample)
            completion = self.cache.get(key)
            if completion is not None:
                spent.cache_hits += 1
                completion = scrubbed(completion)  # an entry recorded before replies were scrubbed
            else:
                if self.replay_only:
                    raise ReplayMiss(f"replay-only: no cached completion for request {key[:16]}")
                completion = self.retry.call(lambda: self._attempt(messages, params), spent, self.sleep)
                # A reply is text a server chose: scrubbed before it is cached, parsed or returned, so a key
                # echoed in a 200 reaches no verdict, report or committed cache.
                completion = scrubbed(completion)
                self.cache.put(key, completion)
            spent.input_tokens += completion.input_tokens
            spent.output_tokens += completion.output_tokens
            return completion
        finally:
            for u in ([usage] if usage is not None else []) + tracked():
                u.add(spent)

    def _attempt(self, messages: list[dict], params: dict[str, Any]) -> Completion:
        try:
            return self.backend.complete(messages, timeout=self.timeout_s, **params)  # made on first use
        except Retryable as e:
            raise Retryable(scrub(str(e)), e.retry_after) from None
        except Exception as e:  # noqa: BLE001 - final: re-raised as ProviderError, scrubbed
            raise ProviderError(describe(e)) from None

    # a generic parameter's default (json_object: T = dict) is beyond mypy: the one ignore below
    def complete_json(self, messages: list[dict], parse: Callable[[str], T] = json_object,  # type: ignore[assignment]
                      *, repairs: int = 1,
                      what: str = "JSON reply", usage: Usage | None = None, **params: Any) -> tuple[T, Completion]:
        """`parse(reply text)` of a completion (default: the reply's JSON object). When `parse` raises
        ValueError (pydantic's ValidationError is one), the model is shown its reply and asked again,
        up to `repairs` times (each counted); then `MalformedReply`."""
        completion = self.complete(messages, usage=usage, **params)
        errors: list[Exception] = []
        while True:
            try:
                return parse(completion.text), completion
            except ValueError as e:
                errors.append(e)
            if len(errors) > repairs:
                break
            for u in ([usage] if usage is not None else []) + tracked():
                u.repairs += 1
            repair = messages + [{"role": "assistant", "content": completion.text}, {"role": "user", "content": REPAIR}]
            completion = self.complete(repair, usage=usage, **params)
        if repairs == 0:
            raise MalformedReply(f"malformed {what}: {str(errors[0])[:200]}")
        after = "one repair" if repairs == 1 else f"{repairs} repairs"
        raise MalformedReply(f"malformed {what} after {after}: {str(errors[-1])[:200]} (first: {str(errors[0])[:100]})")
