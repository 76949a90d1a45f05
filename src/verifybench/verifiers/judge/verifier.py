"""The `judge` verifier: an LLM reads the sources and the response and rules, as a JSON verdict.

- Score = P(hallucinated) from the token log-probabilities of the "hallucinated" value where the backend
  returns them, else the judge's stated probability. The judge's own yes/no is recorded, never used as
  the decision: the metrics layer picks the threshold.
- `samples: N` asks N times (seeded, at `temperature`); the score is the mean, and each verdict records
  the samples' agreement, whether they flipped, and the seeds asked with.
- Under the runner's `repeats: R`, repeat r asks samples r*N .. r*N+N-1 (their own seeds and cache keys:
  fresh samples at a temperature above 0); repeat 0 is the judge as configured.
- Requests go through the LLM layer (verifiers/llm): timeouts, 429, 5xx and non-JSON 200s are retried
  with exponential backoff and jitter, up to `retries`; malformed JSON gets one repair request, then
  the case's verdict is an error. Every retry and failure is counted.
- Every completion is cached by content (backend, model, messages, parameters, sample index);
  `replay_only` (or VERIFYBENCH_REPLAY_ONLY=1) turns a cache miss into that case's error instead of a
  call. API keys are read from the environment at call time and written nowhere; error texts are
  scrubbed of them.
- The judge's offending claim (its quote of the response) is located in the response after the reply,
  exactly, then fuzzily at `verifybench.text.locate.MIN_SIMILARITY` or more, and returned as the verdict's one
  unit, scored with the case's probability; a claim that cannot be placed stays a unit without offsets
  ("not localized", with the reason). The request, and so the cache key, does not change.
- `inject`: judge each case a second time with an attack from a BIPIA attack file inserted into its
  first source, and record whether the verdict flipped (the score stays the clean one).
"""

from __future__ import annotations

import copy
import json
import math
import random
import re
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Literal

from jinja2 import BaseLoader, ChoiceLoader, Environment, FileSystemLoader, PackageLoader, StrictUndefined
from jinja2.sandbox import ImmutableSandboxedEnvironment
from pydantic import BaseModel, ConfigDict, Field, field_validator

from verifybench.cases import Case, Unit, Verdict
from verifybench.text.locate import locate_quote
from verifybench.verifiers.base import Requirement, Verifier, default_cache, operational
from verifybench.verifiers.llm import Completion, LLMClient, LLMOptions, Prices, Usage, json_object

TEMPLATE_FOR = (("summ", "summary"), ("dialog", "dialogue"), ("polic", "policy"), ("refund", "policy"),
                ("qa", "qa"), ("question", "qa"), ("support", "qa"))


class Injection(BaseModel):
    model_config = ConfigDict(extra="forbid")
    file: str = Field(description="a BIPIA attack file: {category: [attack, ...]}")
    seed: int = 0


class JudgeOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    backend: Literal["local", "openai", "anthropic", "llamacpp"] = "local"
    model: str = Field("smollm2", description="model name at the endpoint, a GGUF path (llamacpp), or smollm2")
    base_url: str | None = None
    api_key_env: str | None = Field(None, description="environment variable holding the key (never the key)")
    templates_dir: str | None = Field(None, description="a folder of <name>.j2 files overriding the built-in prompts")
    templates: dict[str, str] = Field(default_factory=dict, description="doc_type -> template name")
    samples: int = Field(1, ge=1)
    temperature: float = Field(0.0, ge=0.0)
    seed: int = 0
    max_tokens: int = Field(160, ge=16)
    max_source_chars: int = Field(6000, ge=200, description="sources are cut to this length for small contexts")
    logprobs: bool = True
    json_mode: bool = True
    constrain: bool = Field(True, description="constrain the reply to the verdict JSON schema where the backend can")
    # How patient the client is, where the cache lives and whether calls are allowed do not change a
    # verdict: out of the config hash, so a replay-only CI run compares with a live run.
    timeout_s: float = operational(60.0, gt=0)
    retries: int = operational(3, ge=0)
    backoff_s: float = operational(1.0, ge=0)
    max_backoff_s: float = operational(30.0, ge=0)
    concurrency: int = operational(4, ge=1)
    cache_dir: str | None = operational(default_factory=lambda: default_cache("judge"))
    replay_only: bool = operational(False)
    prices: Prices | None = Field(None, description="USD per million input/output tokens; local models cost 0")
    inject: Injection | None = None


class JudgeAnswer(BaseModel):
    hallucinated: bool
    probability: float | None = None
    claim: str | None = ""
    reason: str | None = ""

    @field_validator("probability")
    @classmethod
    def _in_range(cls, v: float | None) -> float | None:
        # A stated "probability" of 50 or -1 is no probability: drop it (the score then comes from the
        # log-probabilities, or from the yes/no) rather than fail a verdict whose decision is readable.
        return v if v is None or 0.0 <= v <= 1.0 else None


# The reply's schema, keys in the order the prompt asks for: "hallucinated" first, so its token's
# log-probabilities decide before anything else is written. Short strings keep a small model on track.
VERDICT_SCHEMA = {
    "type": "object",
    "properties": {
        "hallucinated": {"type": "boolean"},
        "probability": {"type": "number"},
        "claim": {"type": "string", "maxLength": 200},
        "reason": {"type": "string", "maxLength": 200},
    },
    "required": ["hallucinated", "probability", "claim", "reason"],
    "additionalProperties": False,
}


def parse_answer(text: str) -> JudgeAnswer:
    """The first JSON object in the text (models wrap it in prose or code fences), validated."""
    return JudgeAnswer.model_validate(json_object(text))


_KEY = re.compile(r'"hallucinated"\s*:\s*$')


def logprob_probability(completion: Completion) -> float | None:
    """P(true) / (P(true) + P(false)) at the token that sets "hallucinated", from its top alternatives."""
    if not completion.logprobs:
        return None
    seen = ""
    for tok in completion.logprobs:
        if _KEY.search(seen) and tok.token.strip():
            options = dict(tok.top) or {tok.token: tok.logprob}
            options.setdefault(tok.token, tok.logprob)
            p_true = sum(math.exp(lp) for t, lp in options.items() if t.strip() and "true".startswith(t.strip().lower()))
            p_false = sum(math.exp(lp) for t, lp in options.items() if t.strip() and "false".startswith(t.strip().lower()))
            return p_true / (p_true + p_false) if p_true + p_false > 0 else None
        seen += tok.token
    return None


def claim_units(response: str, claim: str | None, score: float, reason: str | None) -> list[Unit]:
    """The judge's offending claim as a unit of the response: with offsets where it can be located
    (`locate_quote`), without them ("not localized", and why) where it cannot; none for an empty claim."""
    if not claim or not claim.strip():
        return []
    where = locate_quote(response, claim)
    if isinstance(where, str):
        return [Unit(text=claim, score=score, status="not localized", evidence=reason or None,
                     detail={"located": None, "why": where})]
    return [Unit(text=response[where.start:where.end], score=score, status="offending claim", evidence=reason or None,
                 start=where.start, end=where.end,
                 detail={"located": where.method, "similarity": round(where.similarity, 1), "claim": claim})]


class JudgeVerifier(Verifier):
    name = "judge"
    description = "LLM-as-judge: a model reads sources and response and returns a JSON verdict; score = P(hallucinated)"
    probabilistic = True
    Options = JudgeOptions

    lazy = ("_client", "_env")

    def __init__(self, id: str | None = None, **options):
        super().__init__(id, **options)
        self._attacks: list[str] | None = None
        self._first_sample = 0  # the sample index (and seed offset) this copy starts at: see for_repeat

    def for_repeat(self, repeat: int) -> JudgeVerifier:
        """A copy that asks the next `samples` samples: seeds and cache keys of its own for each repeat."""
        if repeat == 0:
            return self
        self.client()  # built before the copy, so every repeat shares one client (and one local server)
        twin = copy.copy(self)
        twin._first_sample = self._first_sample + repeat * self.options.samples
        return twin

    # --- parts built on first use -------------------------------------------------------------------

    @classmethod
    def requirements(cls, options: JudgeOptions) -> list[Requirement]:
        return cls.model_options(options).requirements()

    def llm_options(self) -> LLMOptions:
        """The judge's model, in the LLM layer's terms."""
        return self.model_options(self.options)

    @staticmethod
    def model_options(o: JudgeOptions) -> LLMOptions:
        return LLMOptions(backend=o.backend, model=o.model, base_url=o.base_url,
                          api_key_env=o.api_key_env, prices=o.prices, timeout_s=o.timeout_s, retries=o.retries,
                          backoff_s=o.backoff_s, max_backoff_s=o.max_backoff_s, cache_dir=o.cache_dir,
                          replay_only=o.replay_only)

    def client(self) -> LLMClient:
        """The LLM client (a `local` backend starts llama.cpp's server at the first call that misses the
        cache: a replay-only run starts nothing)."""
        return self._build_once("_client", lambda: self.llm_options().client())

    @property
    def replay_only(self) -> bool:
        return self.client().replay_only

    def env(self) -> Environment:
        def build() -> Environment:
            loaders: list[BaseLoader] = [PackageLoader("verifybench", "verifiers/judge/prompts")]
            if self.options.templates_dir:
                loaders.insert(0, FileSystemLoader(self.options.templates_dir))
            # Sandboxed: a template from `templates_dir` is text with placeholders, never a way to reach
            # Python (`{{ x.__class__.__mro__ }}` and the like are refused), so a suite or policy naming one
            # chooses no code (docs/trust.md).
            return ImmutableSandboxedEnvironment(loader=ChoiceLoader(loaders), undefined=StrictUndefined,
                                                 autoescape=False, keep_trailing_newline=True)

        return self._build_once("_env", build)

    def template_for(self, doc_type: str) -> str:
        if doc_type in self.options.templates:
            return self.options.templates[doc_type]
        low = doc_type.lower()
        return next((name for key, name in TEMPLATE_FOR if key in low), "default")

    def messages(self, case: Case, sources: list[str] | None = None) -> list[dict]:
        cut = self.options.max_source_chars
        texts = sources if sources is not None else [s.text for s in case.sources]
        user = self.env().get_template(f"{self.template_for(case.doc_type)}.j2").render(
            sources=[t[:cut] for t in texts], question=case.question, response=case.response, doc_type=case.doc_type)
        return [{"role": "system", "content": self.env().get_template("system.j2").render().strip()},
                {"role": "user", "content": user.strip()}]

    # --- one question to the model ------------------------------------------------------------------

    def _ask(self, messages: list[dict], sample: int, usage: Usage) -> tuple[JudgeAnswer, float, Completion]:
        o = self.options
        # Cache keys are made of these parameters: their names and values are part of the replay format.
        answer, completion = self.client().complete_json(
            messages, parse_answer, repairs=1, what="JSON verdict", usage=usage, sample=sample,
            temperature=o.temperature, max_tokens=o.max_tokens, seed=o.seed + sample, logprobs=o.logprobs,
            json_mode=o.json_mode, schema=VERDICT_SCHEMA if o.constrain and o.backend != "anthropic" else None)
        p = logprob_probability(completion)
        if p is None:
            p = answer.probability if answer.probability is not None else float(answer.hallucinated)
        return answer, p, completion

    def _judge(self, case: Case) -> Verdict:
        o = self.options
        start = time.perf_counter()
        stats = Usage()
        try:
            if not case.sources:
                raise ValueError("case has no source text; the judge needs sources to compare with")
            messages = self.messages(case)
            answers, probs = [], []
            samples = range(self._first_sample, self._first_sample + o.samples)
            for i in samples:
                answer, p, _ = self._ask(messages, i, stats)
                answers.append(answer)
                probs.append(p)
            votes = [a.hallucinated for a in answers]
            majority = sum(votes) * 2 >= len(votes)
            detail: dict[str, Any] = {
                "samples": probs, "votes": votes, "flipped": len(set(votes)) > 1,
                "agreement": sum(v == majority for v in votes) / len(votes),
                "judge_says": majority, "claim": answers[0].claim, "reason": answers[0].reason,
                "template": self.template_for(case.doc_type), "seeds": [o.seed + i for i in samples],
            }
            if o.inject:
                detail.update(self._injected(case, majority, stats))
            score = sum(probs) / len(probs)
            verdict = Verdict(case_id=case.id, verifier=self.id, score=score, detail=detail,
                              units=claim_units(case.response, answers[0].claim, score, answers[0].reason))
        except Exception as e:  # noqa: BLE001 - this case's error, counted; the batch goes on
            verdict = self.error_verdict(case, e)
        verdict.usage = stats.as_dict()
        verdict.cost_usd = stats.cost(o.prices, local=o.backend in ("local", "llamacpp"))
        verdict.latency_ms = (time.perf_counter() - start) * 1000
        return verdict

    def _injected(self, case: Case, clean_vote: bool, stats: Usage) -> dict[str, Any]:
        """Judge again with a BIPIA attack inserted into the middle of the first source."""
        if self._attacks is None:
            data = json.loads(Path(self.options.inject.file).expanduser().read_text(encoding="utf-8"))
            self._attacks = [a for group in data.values() for a in group]
        rng = random.Random(f"{self.options.inject.seed}:{case.id}")
        attack = rng.choice(self._attacks)
        texts = [s.text for s in case.sources]
        mid = len(texts[0]) // 2
        texts[0] = f"{texts[0][:mid]} {attack} {texts[0][mid:]}"
        answer, p, _ = self._ask(self.messages(case, texts), self._first_sample, stats)
        return {"injected_attack": attack, "injected_score": p, "injected_vote": answer.hallucinated,
                "injected_flip": answer.hallucinated != clean_vote}

    def verify(self, batch: list[Case]) -> list[Verdict]:
        if self.options.concurrency == 1 or len(batch) == 1:
            return [self._judge(c) for c in batch]
        with ThreadPoolExecutor(max_workers=self.options.concurrency) as pool:
            return list(pool.map(self._judge, batch))
