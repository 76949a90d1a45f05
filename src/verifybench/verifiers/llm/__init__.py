"""The LLM layer: every call to a chat model (the judge, the compliance extractor, the graph agent, and
any new verifier that asks a model) goes through `LLMClient`, which adds to a `Backend` one retry
policy, the replay cache, token and cost accounting, JSON extraction and secret scrubbing.
See docs/llm.md.

    from verifybench.verifiers.llm import LLMOptions, Usage
    client = LLMOptions(backend="openai", model="gpt-4o-mini").client()
    usage = Usage()
    data, completion = client.complete_json([{"role": "user", "content": "..."}], usage=usage)

Modules: providers (the backends), retry, cache (replay), replies (JSON in a reply), usage (tokens,
Prices), scrub (secrets), errors, client (`LLMClient`), options (`LLMOptions`), server (llama.cpp's
server on 127.0.0.1). Nothing here imports a provider's SDK until a call needs it.
"""

from verifybench.verifiers.llm.cache import CompletionCache, request_key
from verifybench.verifiers.llm.client import REPAIR, LLMClient, replay_only_from_env
from verifybench.verifiers.llm.errors import (
    GaveUp,
    LLMError,
    MalformedReply,
    ProviderError,
    ReplayMiss,
    Retryable,
)
from verifybench.verifiers.llm.options import LLMOptions, cache_kind
from verifybench.verifiers.llm.providers import (
    BACKENDS,
    AnthropicBackend,
    Backend,
    Completion,
    LlamaCppInProcess,
    OpenAICompatible,
    TokenLogprob,
    make_backend,
)
from verifybench.verifiers.llm.replies import json_object, try_json_object
from verifybench.verifiers.llm.retry import RetryPolicy
from verifybench.verifiers.llm.scrub import describe, register_secret, scrub
from verifybench.verifiers.llm.usage import Prices, Usage, track_usage

__all__ = [
    "BACKENDS", "REPAIR", "AnthropicBackend", "Backend", "Completion", "CompletionCache", "GaveUp", "LLMClient",
    "LLMError", "LLMOptions", "LlamaCppInProcess", "MalformedReply", "OpenAICompatible", "Prices", "ProviderError",
    "ReplayMiss", "RetryPolicy", "Retryable", "TokenLogprob", "Usage", "cache_kind", "describe", "json_object",
    "make_backend", "register_secret", "replay_only_from_env", "request_key", "scrub", "track_usage",
    "try_json_object",
]
