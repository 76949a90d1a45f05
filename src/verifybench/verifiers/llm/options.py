"""`LLMOptions`: how a verifier's options name a chat model, and the client built from them.

A verifier that asks a model for something (an extractor, an agent) takes one of these as an option,
e.g. `llm: {backend: openai, base_url: "http://127.0.0.1:8000/v1", model: my-model}`. Where the cache
lives and how patient the client is do not change a score: those fields are `operational` and stay
out of the verifier's config hash.
"""

from __future__ import annotations

from functools import partial
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from verifybench.verifiers.base import Requirement, extra, operational
from verifybench.verifiers.llm.client import LLMClient, replay_only_from_env
from verifybench.verifiers.llm.providers import make_backend
from verifybench.verifiers.llm.retry import RetryPolicy
from verifybench.verifiers.llm.server import BUNDLED
from verifybench.verifiers.llm.usage import Prices


class LLMOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    backend: Literal["openai", "anthropic", "local", "llamacpp"] = "openai"
    model: str = Field(description="model name at the endpoint, a GGUF path (llamacpp, local), or smollm2")
    base_url: str | None = None
    api_key_env: str | None = Field(None, description="environment variable holding the key (never the key)")
    prices: Prices | None = Field(None, description="USD per million input/output tokens; local models cost 0")
    timeout_s: float = operational(60.0, gt=0)
    retries: int = operational(3, ge=0, description="retries of a timeout, 429, 5xx or non-JSON 200")
    backoff_s: float = operational(1.0, ge=0)
    max_backoff_s: float = operational(30.0, ge=0)
    cache_dir: str | None = operational(None, description="replay cache folder; null: no cache")
    replay_only: bool = operational(False, description="answer only from the cache (a miss is an error)")

    @property
    def local(self) -> bool:
        """The model runs on this machine: its tokens cost nothing."""
        return self.backend in ("local", "llamacpp")

    def requirements(self, key: str = "") -> list[Requirement]:
        """The modules of the judge extra this backend needs (`key`: where these options sit in a verifier's,
        e.g. `llm.`); none for a replay-only client, which never makes its backend."""
        if self.replay_only or replay_only_from_env():
            return []
        here = self.backend == "llamacpp" or (self.backend == "local" and self.base_url is None)  # a model file
        needs = {"openai": ["openai"], "anthropic": ["anthropic"], "llamacpp": ["llama_cpp"], "local": ["openai"]}[
            self.backend]
        if self.backend == "local" and here:  # served by llama.cpp's server, started here
            needs += ["httpx", *LLAMA_SERVER]
        if here and self.model in BUNDLED:
            needs.append(BUNDLED[self.model][0])
        why = f"{key}backend: {self.backend}" + (f", {key}model: {self.model}" if self.model in BUNDLED else "")
        return [Requirement(m, why, extra("judge")) for m in needs]

    def retry_policy(self) -> RetryPolicy:
        return RetryPolicy(self.retries, self.backoff_s, self.max_backoff_s)

    def client(self) -> LLMClient:
        """The client these options describe. The backend is made at the first call that misses the cache
        (a `local` backend starts its server then; a replay-only run starts nothing)."""
        return LLMClient(partial(make_backend, self.backend, self.model, self.base_url, self.api_key_env),
                         self.retry_policy(), timeout_s=self.timeout_s, cache_dir=self.cache_dir,
                         replay_only=self.replay_only, key_kind=cache_kind(self.backend), key_model=self.model)


# What `python -m llama_cpp.server` imports: llama-cpp-python's `server` extra, in the judge extra.
LLAMA_SERVER = ("llama_cpp", "uvicorn", "fastapi", "sse_starlette", "starlette_context", "pydantic_settings")


def cache_kind(backend: str) -> str:
    # The judge's cache keys have always named the local server "openai-local": kept, so caches replay.
    return "openai-local" if backend == "local" else backend
