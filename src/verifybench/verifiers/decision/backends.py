"""Decision-model backends behind one interface: the local calibrated model, and TypeSafe System One.

`answer_batch(items)` takes (case, units) pairs and returns, per pair, either `{unit key: UnitAnswers}`
or the exception that case failed with (it becomes that case's error verdict; the batch goes on).

TypeSafe's SDK retries with its own tenacity policy (exponential backoff with jitter on timeouts, 429
and 5xx); a 200 whose body is not JSON is added to what it retries, as the LLM layer does, and the key
is registered with the LLM layer's scrubber, so an error body that echoes it is never stored.
"""

from __future__ import annotations

import math
import os
import threading
import time
from typing import Any

import httpx2
import numpy as np

from verifybench.cases import Case
from verifybench.verifiers.decision.questions import (
    CITATION_CHOICES,
    RELEVANCE_LEVELS,
    UnitAnswers,
    question_name,
    typesafe_questions,
)
from verifybench.verifiers.decision.units import DecisionUnit, state_for

Item = tuple[Case, list[DecisionUnit]]


class MalformedAnswer(Exception):
    """The API answered, but not with what was asked (a missing, mistyped or out-of-range answer)."""


class LocalBackend:
    name = "local"
    batched = True  # one encoder pass for a whole batch: per-case latency is a share of it

    def __init__(self, params: str | None = None, cache_dir: str | None = None, batch_size: int = 64,
                 model: Any = None, instructions_by_sentence: bool = False):
        from verifybench.verifiers.decision.features import Featurizer
        from verifybench.verifiers.decision.local_model import LocalDecisionModel

        # `model`: a LocalDecisionModel already built (the training command scores calibration cases with it).
        self.model = model or LocalDecisionModel(params, Featurizer(cache_dir=cache_dir, batch_size=batch_size))
        self.by_sentence = instructions_by_sentence  # P(instructions): the worst window or sentence

    @property
    def thresholds(self) -> dict[str, float | None]:
        # Only context units are ever flagged for contradiction, so the policy reads the context head's.
        heads = self.model.heads
        flag = "context_contradiction" if "context_contradiction" in heads else "contradiction"
        # The context head's policy threshold is its gate's (on the combined unit answers), when fitted.
        gate = heads[flag].gate or {}
        contradiction = gate["threshold"] if "threshold" in gate else self.model.threshold(flag)
        # With an abstention band the model says "cannot determine" itself; a model file without one
        # falls back to escalating on low confidence, as TypeSafe does.
        escalate = 0.0 if self.model.abstain_band("citation") else 0.75
        return {"instructions": self.model.threshold("injection"), "contradiction": contradiction,
                "escalate_below": escalate}

    @property
    def fitted(self) -> dict:
        """The numbers the policy reads from the model file (shown in each verdict's detail)."""
        band = self.model.abstain_band("citation")
        return {**self.thresholds, "citation": self.model.threshold("citation"),
                "citation_abstain_band": list(band) if band else None}

    def load(self) -> None:
        """Load the encoder now, so the runner times it as warm-up rather than inside a batch."""
        getattr(self.model.featurizer.encoder.encoder, "model", None)

    def answer_batch(self, items: list[Item]) -> list[dict[str, UnitAnswers] | Exception]:
        flat = [(i, u) for i, (_, units) in enumerate(items) for u in units]
        answers = {(i, u.key): UnitAnswers() for i, u in flat}
        inj = self.model.injection([u.text for _, u in flat], self.by_sentence)
        for (i, u), p in zip(flat, inj):
            answers[i, u.key].instructions = p
        with_q = [(i, u) for i, u in flat if items[i][0].question]
        if with_q:
            levels = self.model.relevance([items[i][0].question or "" for i, _ in with_q], [u.text for _, u in with_q])
            top = levels.shape[1] - 1
            for (i, u), row in zip(with_q, levels):
                a = answers[i, u.key]
                a.relevance_levels = [float(x) for x in row]
                a.relevance = float(sum(k * x for k, x in enumerate(row)) / top)
        answer_units = [(i, u) for i, u in flat if u.premise and u.kind == "answer"]
        if answer_units:
            for (i, u), p in zip(answer_units, self.model.contradiction([u.premise for _, u in answer_units],
                                                                        [u.text for _, u in answer_units])):
                answers[i, u.key].contradiction = p
        if "context_contradiction" in self.model.heads:
            self._context_contradiction(items, answers)
        cites = [(i, u) for i, u in flat if u.kind == "citation"]
        if cites:
            for (i, u), (p, by) in zip(cites, self._supported_by([u for _, u in cites])):
                self._citation_answer(answers[i, u.key], p)
                if by is not None:
                    answers[i, u.key].extra["supported_best_by"] = by
        return [{u.key: answers[i, u.key] for u in units} for i, (_, units) in enumerate(items)]


    def _context_contradiction(self, items: list[Item], answers: dict[tuple[int, str], UnitAnswers]) -> None:
        """P(contradiction) of a chunk, tool result or citation (asked when the case has a question). Each
        ordered pair of the case's such units is read as the pairs the head was fitted on, (the question
        + one unit, the other unit); `combine_context` turns them into the unit's answer with the gate
        fitted on calibration cases (`heads.context_contradiction.gate`): a pair counts only when both
        units are relevant to the question, scored by the mean of its two readings. With no such other
        unit (alone in its case, or none about the question) there is nothing to contradict that the
        local model can judge: it answers "cannot determine" (0.5, the Noul's undecided value, and
        `contradiction_cannot_determine`), which the policy never flags. The unit it disagrees with
        most is named in `extra`."""
        from verifybench.verifiers.decision.local_model import combine_context

        gate = self.model.heads["context_contradiction"].gate or {}
        min_relevance = float(gate.get("min_relevance", 0.0))
        symmetric = bool(gate)  # a model file without a gate: one reading per pair, as fitted before
        groups: list[tuple[int, list[DecisionUnit]]] = []
        pairs: list[tuple[str, str]] = []
        for i, (case, units) in enumerate(items):
            if not case.question:
                continue  # not asked (questions.asked)
            # Retrieved material only: the response's own sentences (cite_response) are claims, not context.
            context = [u for u in units if u.kind != "answer" and u.span is None]
            groups.append((i, context))
            pairs += [(f"{case.question}\n{v.text}".strip(), u.text) for u in context for v in context if v is not u]
        if not groups:
            return
        probs = iter(self.model.context_contradiction([p for p, _ in pairs], [t for _, t in pairs]) if pairs else [])
        for i, context in groups:
            n = len(context)
            p = np.zeros((n, n))
            for j in range(n):
                for k in range(n):
                    if j != k:
                        p[j, k] = next(probs)
            rel = np.array([answers[i, u.key].relevance if answers[i, u.key].relevance is not None else 0.0
                            for u in context])
            if symmetric:
                combined = combine_context(p, rel, min_relevance)
            else:  # the highest single reading against any other unit
                np.fill_diagonal(p, -np.inf)
                combined = [(float(p[j].max()), int(p[j].argmax())) if n > 1 else (None, None) for j in range(n)]
            for u, (score, other) in zip(context, combined):
                a = answers[i, u.key]
                if score is None:
                    a.contradiction = 0.5
                    a.contradiction_cannot_determine = True
                    a.extra["contradicts"] = None
                else:
                    a.contradiction = score
                    a.extra["contradicts"] = context[other].key if other is not None else None

    def _supported_by(self, units: list[DecisionUnit]) -> list[tuple[float, str | None]]:
        """P(not supported) of each citation unit. A claim cited to several separate sources (a response
        sentence against the case's sources, `cite_response`) is supported when one of them supports
        it: each source is read against the claim on its own, as the head was fitted, and the most
        supportive one decides (its id is returned); other units are read as one cited text."""
        pairs = [(k, u.claim or "", text, sid) for k, u in enumerate(units)
                 for text, sid in (zip(u.meta["cited"], u.source_ids) if u.meta.get("cited") else [(u.text, None)])]
        probs = self.model.citation([c for _, c, _, _ in pairs], [t for _, _, t, _ in pairs])
        best: list[tuple[float, str | None]] = [(2.0, None)] * len(units)
        for (k, _, _, sid), p in zip(pairs, probs):
            if p < best[k][0]:
                best[k] = (p, sid)
        return best

    def _citation_answer(self, a: UnitAnswers, p: float) -> None:
        """The Choice from P(not supported) `p`: the calibrated threshold decides, and inside the abstention
        band (where the calibration fold's decisions were no better than the target) it cannot determine.
        The three probabilities stay the binary head's: "cannot determine" is not a class it models."""
        a.citation = {"supports": 1.0 - p, "does_not_support": p, "cannot_determine": 0.0}
        band = self.model.abstain_band("citation")
        threshold = self.model.threshold("citation")
        if band is None or threshold is None:  # a model file without a band: the most probable choice
            a.citation_confidence = max(p, 1.0 - p)
            return
        low, high = band
        a.citation_choice = ("cannot_determine" if low <= p <= high
                             else "does_not_support" if p >= threshold else "supports")
        a.citation_confidence = self.model.region_accuracy("citation", p)
        a.extra["abstain_band"] = [round(low, 4), round(high, 4)]


class CountingTransport(httpx2.BaseTransport):
    """Counts the HTTP requests sent through `inner` (attempts, retries included; a replay miss, which
    sends nothing, is not one)."""

    def __init__(self, inner: httpx2.BaseTransport):
        self.inner = inner
        self.sent = 0
        self._lock = threading.Lock()

    def _count(self) -> None:
        with self._lock:
            self.sent += 1

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        try:
            response = self.inner.handle_request(request)
        except httpx2.TransportError:
            self._count()
            raise
        self._count()
        return response

    def close(self) -> None:
        self.inner.close()


def not_json_200(error: BaseException) -> bool:
    """A 200 whose body is not a JSON object (a proxy's page, a cut body): retried like a 5xx."""
    from typesafe_sdk import TypeSafeAPIResponseValidationError

    return (isinstance(error, TypeSafeAPIResponseValidationError) and error.status == 200
            and not isinstance(error.body, dict))


class TypeSafeBackend:
    """TypeSafe System One through the official SDK: one request per case, all its units' questions in it."""

    name = "typesafe"
    batched = False  # one request per case: each case's latency is its own request's
    thresholds = {"instructions": 0.5, "contradiction": 0.5, "escalate_below": 0.75}
    fitted = thresholds  # nothing is fitted: the service's own probabilities against fixed cut-offs

    def __init__(self, model: str = "jev-latest", cassette_dir: str | None = None, timeout_s: float = 10.0,
                 retries: int = 2, api_key_env: str = "TYPESAFE_API_KEY", base_url: str | None = None):
        self.model = model
        self.cassette_dir = cassette_dir
        self.timeout_s = timeout_s
        self.retries = retries
        self.api_key_env = api_key_env
        self.base_url = base_url
        self._client = None
        self._sent: CountingTransport | None = None
        self.usage = {"input_tokens": 0, "output_tokens": 0}
        self.case_usage: dict[str, dict[str, float]] = {}  # the last batch's tokens per case id
        self.case_ms: dict[str, float] = {}  # the last batch's request time per case id

    @property
    def client(self):
        if self._client is None:
            from typesafe_sdk import RetryPolicy, TypeSafeClient

            from verifybench.verifiers.llm import register_secret

            key = os.environ.get(self.api_key_env)
            register_secret(key)
            if self.cassette_dir:
                from verifybench.verifiers.decision.cassettes import ReplayTransport

                inner: httpx2.BaseTransport = ReplayTransport(self.cassette_dir)
                key = key or "replay-only"  # replay sends nothing, but the SDK insists on a key
            elif not key:
                raise RuntimeError(f"TypeSafe backend: set {self.api_key_env}, or cassette_dir to replay recorded traffic")
            else:
                inner = httpx2.HTTPTransport()
            self._sent = CountingTransport(inner)
            self._client = TypeSafeClient(api_key=key, model=self.model, timeout=self.timeout_s,
                                          retry=RetryPolicy(max_retries=self.retries, predicate=not_json_200),
                                          transport=self._sent, base_url=self.base_url)
        return self._client

    @property
    def transport(self) -> httpx2.BaseTransport | None:
        """The transport requests go through (a `ReplayTransport` when replaying cassettes)."""
        return self._sent.inner if self._sent is not None else None

    def request(self, case: Case, units: list[DecisionUnit]) -> tuple[dict, dict]:
        """The state and the questions for one case (exposed so cassettes can be written from it)."""
        questions: dict[str, Any] = {}
        for u in units:
            questions.update(typesafe_questions(u.key, u.kind, bool(case.question)))
        return state_for(case, units), questions

    def load(self) -> None:
        """Nothing to load: the client is built on the first request."""

    def answer_batch(self, items: list[Item]) -> list[dict[str, UnitAnswers] | Exception]:
        out: list[dict[str, UnitAnswers] | Exception] = []
        self.case_usage = {}
        self.case_ms = {}
        for case, units in items:
            before = self._sent.sent if self._sent is not None else 0
            started = time.perf_counter()
            try:
                state, questions = self.request(case, units)
                response = self.client.system_one(state=state, questions=questions)
                usage = getattr(response, "usage", None)
                if usage is not None:
                    tokens = {"input_tokens": usage.input_tokens or 0, "output_tokens": usage.output_tokens or 0}
                    self.case_usage[case.id] = {**tokens, **self._requests(before)}
                    self.usage["input_tokens"] += tokens["input_tokens"]
                    self.usage["output_tokens"] += tokens["output_tokens"]
                out.append(parse_answers(response.answers, units, questions))
            except Exception as e:  # noqa: BLE001 - one case's failure becomes its error verdict
                if self._sent is not None and self._sent.sent > before:
                    self.case_usage[case.id] = {**self._requests(before), "failures": 1}
                out.append(e)
            self.case_ms[case.id] = (time.perf_counter() - started) * 1000.0
        return out

    def _requests(self, before: int) -> dict[str, int]:
        # Sequential per backend object (one case at a time), so the difference is this case's.
        sent = (self._sent.sent if self._sent is not None else before) - before
        return {"requests": sent, "retries": max(sent - 1, 0)}


def _prob(value: Any, where: str) -> float:
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value) or not 0 <= value <= 1:
        raise MalformedAnswer(f"{where}: expected a probability in [0, 1], got {value!r}")
    return float(value)


def parse_answers(answers: dict, units: list[DecisionUnit], asked: dict) -> dict[str, UnitAnswers]:
    """Typed answers per unit; any question asked but not answered (or answered in the wrong type) raises."""
    missing = [name for name in asked if name not in answers]
    if missing:
        raise MalformedAnswer(f"partial answer: no answer for {', '.join(missing[:5])}"
                              + (f" (+{len(missing) - 5} more)" if len(missing) > 5 else ""))
    out: dict[str, UnitAnswers] = {}
    for u in units:
        a = UnitAnswers()
        name = question_name(u.key, "instructions")
        a.instructions = _prob(_typed(answers[name], "noul", name).noul, f"answers.{name}.noul")
        name = question_name(u.key, "contradiction")
        if name in asked:
            a.contradiction = _prob(_typed(answers[name], "noul", name).noul, f"answers.{name}.noul")
        name = question_name(u.key, "relevance")
        if name in asked:
            ans = _typed(answers[name], "score", name)
            levels = [_prob(ans.probabilities.get(k, 0.0), f"answers.{name}.probabilities.{k}")
                      for k in range(len(RELEVANCE_LEVELS))]
            top = len(RELEVANCE_LEVELS) - 1
            if not 0 <= ans.score <= top:
                raise MalformedAnswer(f"answers.{name}.score: {ans.score} outside 0..{top}")
            a.relevance_levels = levels
            a.relevance = float(ans.score) / top
        name = question_name(u.key, "citation")
        if name in asked:
            ans = _typed(answers[name], "choice", name)
            unknown = set(ans.probabilities) - set(CITATION_CHOICES)
            if unknown or ans.choice not in CITATION_CHOICES:
                raise MalformedAnswer(f"answers.{name}: choices {sorted(unknown) or ans.choice!r} were not offered")
            a.citation = {c: _prob(ans.probabilities.get(c, 0.0), f"answers.{name}.probabilities.{c}") for c in CITATION_CHOICES}
            a.citation_confidence = _prob(ans.confidence, f"answers.{name}.confidence")
            a.citation_choice = ans.choice
        out[u.key] = a
    return out


def _typed(answer: Any, kind: str, name: str) -> Any:
    if getattr(answer, "type", None) != kind:
        raise MalformedAnswer(f"answers.{name}: expected a {kind} answer, got {getattr(answer, 'type', type(answer).__name__)!r}")
    return answer


def make_backend(kind: str, **options) -> LocalBackend | TypeSafeBackend:
    if kind == "local":
        return LocalBackend(options.get("params"), options.get("cache_dir"),
                            instructions_by_sentence=bool(options.get("instructions_by_sentence")))
    if kind == "typesafe":
        return TypeSafeBackend(options.get("typesafe_model", "jev-latest"), options.get("cassette_dir"),
                               options.get("timeout_s", 10.0), options.get("retries", 2),
                               options.get("api_key_env", "TYPESAFE_API_KEY"), options.get("base_url"))
    raise ValueError(f"unknown decision backend {kind!r}")
