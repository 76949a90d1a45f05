"""Chat backends behind one interface: any OpenAI-compatible endpoint, Anthropic, and llama.cpp in
process. Each returns a `Completion` with the text, per-token log-probabilities where the backend gives
them, and token usage. Errors worth retrying (timeouts, 429, 5xx, dropped connections, a 200 whose
body is not JSON) are raised as `Retryable`; anything else fails at once. A backend makes one attempt:
retries, the replay cache and secret scrubbing are the `LLMClient`'s (client.py).

API keys are read from the environment variable a backend is given, at the first call, and registered
with the scrubber (scrub.py); they are never stored in options, caches or pickles."""

from __future__ import annotations

import json
import os
from abc import ABC, abstractmethod
from dataclasses import asdict, dataclass, field
from typing import Any

from verifybench.verifiers.llm.errors import Retryable
from verifybench.verifiers.llm.scrub import register_secret, scrub

BACKENDS = ("local", "openai", "anthropic", "llamacpp")


def _retry_after(response: Any) -> float | None:
    """Seconds from a response's retry-after-ms or Retry-After header (a number), when it sent one."""
    headers = getattr(response, "headers", None) or {}
    for name, scale in (("retry-after-ms", 1e-3), ("retry-after", 1.0)):
        try:
            value = float(headers.get(name, ""))
        except (TypeError, ValueError):
            continue
        if value >= 0:
            return value * scale
    return None


def _not_json(body: str) -> Retryable:
    # A proxy's error page or a truncated body under a 200: transient more often than not, like a 5xx.
    # Scrubbed before it is cut: a key the cut halves would no longer be found.
    return Retryable(f"HTTP 200 with a body that is not JSON: {scrub(body)[:200]!r}")


@dataclass
class TokenLogprob:
    token: str
    logprob: float
    top: dict[str, float] = field(default_factory=dict)  # alternative token -> logprob


@dataclass
class Completion:
    text: str
    logprobs: list[TokenLogprob] | None = None
    input_tokens: int = 0
    output_tokens: int = 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Completion:
        lps = [TokenLogprob(**t) for t in d["logprobs"]] if d.get("logprobs") else None
        return cls(text=d["text"], logprobs=lps, input_tokens=d.get("input_tokens", 0),
                   output_tokens=d.get("output_tokens", 0))


class Backend(ABC):
    """One chat model. `kind` and `model` name it in cache keys; `complete` makes one attempt."""

    kind: str = ""
    model: str = ""

    @abstractmethod
    def complete(self, messages: list[dict], *, temperature: float, max_tokens: int, seed: int | None,
                 logprobs: bool, json_mode: bool, timeout: float, schema: dict | None = None) -> Completion:
        """`schema`: constrain the reply to this JSON schema where the backend can (grammar-constrained
        decoding on llama.cpp, structured outputs on OpenAI-style servers). Raises `Retryable` for a
        transient failure; any other exception is final."""


class OpenAICompatible(Backend):
    """OpenAI, vLLM, Ollama, llama.cpp's server: the official `openai` client with a `base_url`. The key is
    read from the environment variable named by `api_key_env` at call time and never stored."""

    kind = "openai"

    def __init__(self, model: str, base_url: str | None = None, api_key_env: str = "OPENAI_API_KEY",
                 schema_style: str = "openai"):
        self.model = model
        self.base_url = base_url
        self.api_key_env = api_key_env
        # llama.cpp's server takes the schema inside json_object; OpenAI and vLLM take json_schema.
        self.schema_style = schema_style
        self._client = None

    def client(self):
        if self._client is None:
            import openai

            key = os.environ.get(self.api_key_env)
            register_secret(key)
            key = key or ("local" if self.base_url else None)
            if key is None:
                raise RuntimeError(f"set {self.api_key_env} (or give base_url for a local server)")
            # Retries are ours (counted, with jitter): the client's own are switched off.
            self._client = openai.OpenAI(api_key=key, base_url=self.base_url, max_retries=0)
        return self._client

    def complete(self, messages, *, temperature, max_tokens, seed, logprobs, json_mode, timeout,
                 schema=None) -> Completion:
        import openai

        kwargs: dict[str, Any] = {"model": self.model, "messages": messages, "temperature": temperature,
                                  "max_tokens": max_tokens, "timeout": timeout}
        if seed is not None:
            kwargs["seed"] = seed
        if logprobs:
            kwargs.update(logprobs=True, top_logprobs=5)
        if schema is not None and self.schema_style == "llamacpp":
            kwargs["response_format"] = {"type": "json_object", "schema": schema}
        elif schema is not None:
            kwargs["response_format"] = {"type": "json_schema",
                                         "json_schema": {"name": "verdict", "schema": schema, "strict": True}}
        elif json_mode:
            kwargs["response_format"] = {"type": "json_object"}
        try:
            r = self.client().chat.completions.create(**kwargs)
        except (openai.APITimeoutError, openai.APIConnectionError) as e:
            raise Retryable(f"{type(e).__name__}: {e}") from None
        except openai.APIStatusError as e:
            if e.status_code in (408, 429) or e.status_code >= 500:
                raise Retryable(f"HTTP {e.status_code}", _retry_after(e.response)) from None
            raise
        except json.JSONDecodeError as e:  # a JSON content type over a body that is not JSON
            raise _not_json(e.doc) from None
        if isinstance(r, str):  # the client hands back the text of a non-JSON content type
            raise _not_json(r)
        if not getattr(r, "choices", None):
            raise ValueError("the reply has no choices")
        choice = r.choices[0]
        lps = None
        content = getattr(choice.logprobs, "content", None) if choice.logprobs else None
        if content:
            lps = [TokenLogprob(t.token, t.logprob, {a.token: a.logprob for a in (t.top_logprobs or [])})
                   for t in content]
        usage = r.usage
        return Completion(text=choice.message.content or "", logprobs=lps,
                          input_tokens=getattr(usage, "prompt_tokens", 0) or 0,
                          output_tokens=getattr(usage, "completion_tokens", 0) or 0)

    def __getstate__(self):
        return {**self.__dict__, "_client": None}


class AnthropicBackend(Backend):
    """Anthropic's API through the official `anthropic` client (no log-probabilities: the judge's stated
    probability is the score). The SDK's 2.x line (API version 2026-10-21) has no sampling parameters
    and the API rejects them: `temperature` is sent only to an SDK that still takes it."""

    kind = "anthropic"

    def __init__(self, model: str, api_key_env: str = "ANTHROPIC_API_KEY", base_url: str | None = None):
        self.model = model
        self.api_key_env = api_key_env
        self.base_url = base_url
        self._client = None

    def client(self):
        if self._client is None:
            import anthropic

            key = os.environ.get(self.api_key_env)
            if key is None:
                raise RuntimeError(f"set {self.api_key_env}")
            register_secret(key)
            self._client = anthropic.Anthropic(api_key=key, base_url=self.base_url, max_retries=0)
        return self._client

    def complete(self, messages, *, temperature, max_tokens, seed, logprobs, json_mode, timeout,
                 schema=None) -> Completion:
        import anthropic

        system = "\n".join(m["content"] for m in messages if m["role"] == "system")
        kwargs: dict[str, Any] = {"model": self.model, "messages": [m for m in messages if m["role"] != "system"],
                                  "max_tokens": max_tokens, "timeout": timeout}
        if system:
            kwargs["system"] = system
        if _takes_temperature():
            kwargs["temperature"] = temperature
        try:
            r = self.client().messages.create(**kwargs)
        except (anthropic.APITimeoutError, anthropic.APIConnectionError) as e:
            raise Retryable(f"{type(e).__name__}: {e}") from None
        except anthropic.APIStatusError as e:
            # 529: Anthropic's "overloaded".
            if e.status_code in (408, 429) or e.status_code >= 500:
                raise Retryable(f"HTTP {e.status_code}", _retry_after(e.response)) from None
            raise
        except json.JSONDecodeError as e:
            raise _not_json(e.doc) from None
        if isinstance(r, str):
            raise _not_json(r)
        text = "".join(getattr(b, "text", "") for b in r.content)
        return Completion(text=text, input_tokens=r.usage.input_tokens, output_tokens=r.usage.output_tokens)

    def __getstate__(self):
        return {**self.__dict__, "_client": None}


def _takes_temperature() -> bool:
    import inspect

    from anthropic.resources.messages import Messages

    return "temperature" in inspect.signature(Messages.create).parameters


class LlamaCppInProcess(Backend):
    """A GGUF model loaded in this process by llama-cpp-python (no server)."""

    kind = "llamacpp"

    def __init__(self, model_path: str, n_ctx: int = 4096):
        self.model = model_path
        self.n_ctx = n_ctx
        self._llm = None

    def llm(self):
        if self._llm is None:
            from llama_cpp import Llama

            self._llm = Llama(model_path=self.model, n_ctx=self.n_ctx, logits_all=True, verbose=False)
        return self._llm

    def complete(self, messages, *, temperature, max_tokens, seed, logprobs, json_mode, timeout,
                 schema=None) -> Completion:
        kwargs: dict[str, Any] = {"messages": messages, "temperature": temperature, "max_tokens": max_tokens}
        if seed is not None:
            kwargs["seed"] = seed
        if logprobs:
            kwargs.update(logprobs=True, top_logprobs=5)
        if schema is not None:
            kwargs["response_format"] = {"type": "json_object", "schema": schema}
        elif json_mode:
            kwargs["response_format"] = {"type": "json_object"}
        r = self.llm().create_chat_completion(**kwargs)
        choice = r["choices"][0]
        content = (choice.get("logprobs") or {}).get("content")
        lps = [TokenLogprob(t["token"], t["logprob"], {a["token"]: a["logprob"] for a in t.get("top_logprobs") or []})
               for t in content] if content else None
        usage = r.get("usage") or {}
        return Completion(text=choice["message"]["content"] or "", logprobs=lps,
                          input_tokens=usage.get("prompt_tokens", 0), output_tokens=usage.get("completion_tokens", 0))

    def __getstate__(self):
        return {**self.__dict__, "_llm": None}


def make_backend(kind: str, model: str, base_url: str | None = None, api_key_env: str | None = None) -> Backend:
    """A backend by kind: `local` (llama.cpp's server on 127.0.0.1, started on first use; `model` is
    smollm2 or a GGUF path), `openai` (any OpenAI-compatible endpoint), `anthropic`, `llamacpp` (a GGUF
    file in this process)."""
    if kind == "local":
        from verifybench.verifiers.llm.server import BUNDLED, bundled_model_path, shared_server

        path = bundled_model_path(model) if model in BUNDLED else model
        url = base_url or shared_server(path).base_url
        return OpenAICompatible(model, url, api_key_env or "VERIFYBENCH_LOCAL_KEY", schema_style="llamacpp")
    if kind == "openai":
        return OpenAICompatible(model, base_url, api_key_env or "OPENAI_API_KEY")
    if kind == "anthropic":
        return AnthropicBackend(model, api_key_env or "ANTHROPIC_API_KEY", base_url)
    if kind == "llamacpp":
        from verifybench.verifiers.llm.server import BUNDLED, bundled_model_path

        return LlamaCppInProcess(bundled_model_path(model) if model in BUNDLED else model)
    raise ValueError(f"unknown LLM backend {kind!r}; known: {', '.join(BACKENDS)}")
