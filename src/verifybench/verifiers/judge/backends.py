"""Chat backends behind one interface: any OpenAI-compatible endpoint, Anthropic, and llama.cpp in
process. Each returns a `Completion` with the text, per-token log-probabilities where the backend gives
them, and token usage. Errors worth retrying (timeouts, 429, 5xx, dropped connections) are raised as
`Retryable`; anything else fails the case at once."""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from typing import Any


class Retryable(Exception):
    """A transient failure: timeout, rate limit (429), server error (5xx), connection dropped."""


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
    def from_dict(cls, d: dict[str, Any]) -> "Completion":
        lps = [TokenLogprob(**t) for t in d["logprobs"]] if d.get("logprobs") else None
        return cls(text=d["text"], logprobs=lps, input_tokens=d.get("input_tokens", 0),
                   output_tokens=d.get("output_tokens", 0))


class Backend:
    kind: str = ""

    def complete(self, messages: list[dict], *, temperature: float, max_tokens: int, seed: int | None,
                 logprobs: bool, json_mode: bool, timeout: float, schema: dict | None = None) -> Completion:
        """`schema`: constrain the reply to this JSON schema where the backend can (grammar-constrained
        decoding on llama.cpp, structured outputs on OpenAI-style servers)."""
        raise NotImplementedError


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

            key = os.environ.get(self.api_key_env) or ("local" if self.base_url else None)
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
        except (openai.APITimeoutError, openai.APIConnectionError, openai.RateLimitError,
                openai.InternalServerError) as e:
            raise Retryable(f"{type(e).__name__}: {e}") from None
        except openai.APIStatusError as e:
            if e.status_code == 429 or e.status_code >= 500:
                raise Retryable(f"HTTP {e.status_code}") from None
            raise
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
    probability is the score)."""

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
            self._client = anthropic.Anthropic(api_key=key, base_url=self.base_url, max_retries=0)
        return self._client

    def complete(self, messages, *, temperature, max_tokens, seed, logprobs, json_mode, timeout,
                 schema=None) -> Completion:
        import anthropic

        system = "\n".join(m["content"] for m in messages if m["role"] == "system")
        rest = [m for m in messages if m["role"] != "system"]
        try:
            r = self.client().messages.create(model=self.model, system=system, messages=rest,
                                              temperature=temperature, max_tokens=max_tokens, timeout=timeout)
        except (anthropic.APITimeoutError, anthropic.APIConnectionError, anthropic.RateLimitError,
                anthropic.InternalServerError) as e:
            raise Retryable(f"{type(e).__name__}: {e}") from None
        except anthropic.APIStatusError as e:
            if e.status_code == 429 or e.status_code >= 500:
                raise Retryable(f"HTTP {e.status_code}") from None
            raise
        text = "".join(getattr(b, "text", "") for b in r.content)
        return Completion(text=text, input_tokens=r.usage.input_tokens, output_tokens=r.usage.output_tokens)

    def __getstate__(self):
        return {**self.__dict__, "_client": None}


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
