"""The `nli` verifier: any NLI or consistency model, applied so that long sources are never cut off.

1. The response is cut into hypothesis units: sentences (pysbd, default), atomic claims (the anchors
   claim splitter), or the whole response (`aggregate: minicheck` and `pair`).
2. Each source is cut into premise windows: sentences packed up to a token budget, consecutive windows
   sharing `window_overlap` sentences (`window_scope: case`: the case's sources packed as one text, so
   one window can hold two short retrieved chunks). The budget is what the model's `max_length` leaves after the
   special tokens and the case's longest unit (or `window_tokens`), so every pair fits whole.
3. Optionally only the `top_k_windows` windows per unit that the project's embedding model (MiniLM, the
   anchors encoder and its cache) ranks closest are scored: a large saving on long sources.
4. Every (window, unit) pair of the batch is scored once (cached by model, premise hash and hypothesis
   hash), as P(entailed) from the model's entailment label (softmax) or its one output (sigmoid).
5. Aggregation (`aggregate`):
   - `summac` (default): SummaC-ZS. A unit's support is its best window's probability; the case's
     support is the weakest unit's (`claim_reduce: min`) or the mean (`claim_reduce: mean`).
   - `minicheck`: MiniCheck. The whole response is one hypothesis; support = its best window's.
   - `pair`: plain pair scoring, all sources joined against the whole response, as the model was
     trained to read them; a pair too long for the model is cut and the verdict says so.
With `checkworthy` (on by default; summac only), the units that state nothing a source could back
(greetings, thanks, offers of help, "let me check", a question back to the customer; the shared step in
`verifybench.verifiers.anchors.checkworthy`) are not scored and do not count in the support: they stay
in the verdict as units with status "skipped: ..." and no score, and conversational openers are
stripped from the units that are scored ("Hi Sam, refunds take 5 days" is scored as "refunds take 5
days").
With `fact_checks` (on by default; summac, English) each unit first goes through anchors' fact checks
(numbers, dates, times, durations, identifiers, arithmetic on stated numbers, value binding; not names): a
unit failing k of them scores `anchors.verifier.claim_score(p, k)`, above every passing unit, and the
case score is the highest unit score, a ranking rather than a probability (issue 46).
Otherwise case score = 1 - support: a probability that the response is hallucinated. Each unit of the verdict
carries its offsets, its best window (evidence, source id, window offsets) and its probability. Each
verdict's latency is its own (`verifybench.verifiers.latency`): cutting and judging timed per case, the
batched model call shared out by the pairs each case brought.
"""

from __future__ import annotations

import hashlib
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from verifybench.cases import Case, Source, Unit, Verdict
from verifybench.errors import SuiteError
from verifybench.verifiers.anchors import language as languages
from verifybench.verifiers.anchors.binding import unbound
from verifybench.verifiers.anchors.checkworthy import assess, skipped_status
from verifybench.verifiers.anchors.encoders import CachedEncoder, make_encoder
from verifybench.verifiers.anchors.facts import Findings, arithmetic_context, fact_findings
from verifybench.verifiers.anchors.text import claims, english_pipeline, sentences
from verifybench.verifiers.anchors.verifier import claim_score
from verifybench.verifiers.anchors.wording import in_source_wording
from verifybench.verifiers.base import ChosenCode, Verifier, default_cache, operational
from verifybench.verifiers.latency import CaseClock
from verifybench.verifiers.nli.model import PairCache, PairModel, entail_probability, resolve_entail_label
from verifybench.verifiers.nli.windows import Piece, Window, cut_pieces, pack_windows

SOURCE_JOIN = "\n\n"  # window_scope case: between sources, so no sentence runs from one into the next
MEMO_ITEMS = 4096  # sources whose sentences, token counts and windows are kept between batches
# Models that ship inside the package (package data), by name: the default needs no download.
BUILTIN_MODELS = {"consistency-minilm": ("models", "consistency-minilm")}
DEFAULT_MODEL = "consistency-minilm"
# What the built-in models were trained to read: a case in another language gets an error verdict naming
# the reason instead of a score the model cannot mean (docs/consistency.md).
BUILTIN_LANGUAGES = {"consistency-minilm": ("en",)}
# A model folder may say how it was trained to be applied: options it sets when the suite leaves them out.
MODEL_DEFAULTS_FILE = "verifybench.json"
MODEL_DEFAULT_KEYS = ("entail_label", "window_tokens", "window_overlap", "window_scope", "top_k_windows",
                      "claim_reduce", "hypothesis")


def resolve_model(name: str) -> str:
    """A built-in model's folder inside the installed package (importlib.resources); any other name as given."""
    if name in BUILTIN_MODELS:
        from importlib.resources import files

        return str(files("verifybench").joinpath(*BUILTIN_MODELS[name]))
    return name


def model_defaults(path: str) -> dict:
    """The `nli` options a local model folder declares in verifybench.json ({} for a hub name or none)."""
    import json
    from pathlib import Path

    f = Path(path).expanduser() / MODEL_DEFAULTS_FILE
    if not f.is_file():
        return {}
    try:
        declared = json.loads(f.read_text(encoding="utf-8")).get("nli", {})
    except (ValueError, AttributeError) as e:
        raise SuiteError(f"{f}: not a JSON object with an 'nli' object of option defaults ({e})") from None
    unknown = sorted(set(declared) - set(MODEL_DEFAULT_KEYS))
    if unknown:
        raise SuiteError(f"{f}: 'nli' declares {unknown}; a model may set only {list(MODEL_DEFAULT_KEYS)}")
    return declared


class NLIOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    model: str = Field(DEFAULT_MODEL, description="a built-in model name (consistency-minilm: the project's own, "
                       "shipped with the package), a local folder, or a Hugging Face hub name")
    backend: Literal["auto", "transformers", "cross-encoder"] = Field(
        "auto", description="auto: cross-encoder for a sentence-transformers CrossEncoder folder, else transformers")
    revision: str | None = Field(None, description="a hub revision (branch, tag or commit)")
    tokenizer: str | None = Field(None, description="a tokenizer other than the model's own (HHEM: google/flan-t5-base)")
    trust_remote_code: bool = Field(False, description="run the model repository's own Python code (HHEM needs it)")
    pair_template: str | None = Field(None, description="read each pair as one text, e.g. "
                                      "'{premise}</s>{hypothesis}'; default: the tokenizer's sentence pair")
    entail_label: str | int | None = Field(None, description="the label (name or index) meaning 'supported'; "
                                           "default: a label named entailment/supported/consistent")
    max_length: int | None = Field(None, ge=16, description="tokens the model reads; default: the model's own limit")
    runtime: Literal["torch", "onnx"] = Field("torch", description="onnx: int8 weights run by ONNX Runtime "
                                             "(exported from the model on first use; the onnx extra)")
    onnx_dir: str | None = operational(default_factory=lambda: default_cache("onnx"),
                                       description="(runtime onnx) where the exported model is kept")
    batch_size: int = operational(16, ge=1)
    device: str = operational("auto", description="auto (cuda when available), cpu, cuda, cuda:1, mps")
    aggregate: Literal["summac", "minicheck", "pair"] = "summac"
    claim_reduce: Literal["min", "mean"] = Field("min", description="(summac) how unit supports combine")
    hypothesis: Literal["sentences", "claims"] = Field("sentences", description="(summac) how the response is cut")
    language: Literal["auto", "en", "ru"] = "auto"
    checkworthy: bool = Field(True, description="(summac) skip units that state nothing checkable (greetings, "
                              "thanks, offers of help, 'let me check', questions back to the customer); they "
                              "stay in the verdict as skipped units")
    source_wording: bool = Field(False, description="(English) score each unit with its times, durations and "
                                 "number words in the sources' words when they mean the same ('half an hour' "
                                 "as '30 minutes', '18:00 CET' as '6:00 pm CET'); a quantity no source states "
                                 "stays as written; the unit's scored_text shows what the model read")
    fact_checks: bool = Field(True, description="(summac, English) check each unit's numbers, dates, times, "
                              "durations and identifiers against the sources (and the question) as anchors "
                              "does, arithmetic on stated numbers allowed, and each value against the term the "
                              "sources say it of; a unit failing a check scores above every passing one "
                              "(anchors' graded score, with p(entailed) for the cosine): the score then ranks, "
                              "it is no longer a probability")
    window_tokens: int | None = Field(None, ge=8, description="premise window budget in tokens; default: what "
                                      "max_length leaves after the case's longest hypothesis unit")
    window_sentences: int | None = Field(None, ge=1, description="at most this many sentences per window")
    window_overlap: int = Field(1, ge=0, description="sentences shared by consecutive windows")
    window_scope: Literal["source", "case"] = Field(
        "source", description="source: windows never cross sources; case: a case's sources are packed as one "
                              "text in their order, so a window can hold two short retrieved chunks (an answer "
                              "sentence that combines them)")
    min_window_tokens: int = Field(64, ge=8, description="a hypothesis unit longer than max_length minus this "
                                   "is cut into pieces, so windows keep at least this many tokens")
    top_k_windows: int | None = Field(None, ge=1, description="score only the k windows per unit that the "
                                      "embedding model ranks closest; default: every window")
    selector_model: str = Field("minilm", description="(top_k_windows) the embedding model ranking windows")
    support_threshold: float = Field(0.5, description="labels units supported/unsupported in the details only")
    cache_dir: str | None = operational(default_factory=lambda: default_cache("nli"), description="null: no disk cache")
    embedding_cache_dir: str | None = operational(default_factory=lambda: default_cache("embeddings"),
                                                  description="(top_k_windows) the anchors embedding cache")

    @model_validator(mode="after")
    def _consistent(self):
        if self.pair_template is not None and not ("{premise}" in self.pair_template and "{hypothesis}" in self.pair_template):
            raise ValueError("pair_template must contain {premise} and {hypothesis}")
        if self.top_k_windows is not None and self.aggregate == "pair":
            raise ValueError("top_k_windows needs windows: aggregate summac or minicheck")
        if self.source_wording and self.aggregate == "pair":
            # pair reads the response whole, as written: rewording it would be a silent no-op here
            raise ValueError("source_wording rewords units: aggregate summac or minicheck")
        return self


class _Prepared:
    """One case cut into units and windows, and which windows each unit is scored against."""

    __slots__ = ("case", "language", "pieces", "windows", "window_tokens", "chosen", "cosine", "error", "skipped",
                 "checks")

    def __init__(self, case: Case, error: BaseException | None = None):
        self.case, self.error = case, error
        self.language = "en"
        self.pieces: list[Piece] = []
        self.windows: list[Window] = []
        self.window_tokens: int | None = None
        self.chosen: list[list[int]] = []
        self.cosine: list[list[float]] | None = None
        self.skipped: list[Unit] = []
        self.checks: list[Findings] | None = None  # per piece, with `fact_checks`


def _sha(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


class NLIVerifier(Verifier):
    name = "nli"
    description = ("any NLI / consistency model (transformers classifier or CrossEncoder): source windows x "
                   "response sentences, SummaC- or MiniCheck-style aggregation")
    probabilistic = True
    Options = NLIOptions
    lazy = ("_cache", "_selector")

    def __init__(self, id: str | None = None, **options):
        super().__init__(id, **options)
        path = resolve_model(self.options.model)
        self._apply_model_defaults(path)
        o = self.options
        self.model = PairModel(path, o.backend, o.revision, o.tokenizer, o.pair_template, o.trust_remote_code,
                               o.max_length, o.device, o.batch_size, o.runtime, o.onnx_dir)
        if o.runtime == "onnx":
            # Missing packages or a backend ONNX cannot run are suite errors before any case.
            from verifybench.verifiers.nli.onnx import require_onnx

            require_onnx()
            if self.model.resolved_backend() != "transformers":
                raise SuiteError(f"verifier {self.id!r} (nli): runtime onnx needs backend: transformers")
        # The config only (a small JSON file, no weights): a wrong label is a suite error before any case.
        self.labels = self.model.labels()
        self.entail_index = resolve_entail_label(self.labels, o.entail_label, f"verifier {self.id!r} (nli)")
        self._memo: dict[tuple, object] = {}
        self._cached_share = 0.0
        # With the fact checks a failed check puts a unit above every passing one: a ranking, not P(hallucinated).
        self.probabilistic = not self._checks_facts()

    def _checks_facts(self) -> bool:
        return self.options.fact_checks and self.options.aggregate == "summac"

    @classmethod
    def chosen_code(cls, options: NLIOptions) -> list[ChosenCode]:
        if not options.trust_remote_code:
            return []
        return [ChosenCode("trust_remote_code", resolve_model(options.model),
                           f"runs the Python code of model {options.model!r} (transformers' trust_remote_code)")]

    def _apply_model_defaults(self, path: str) -> None:
        """Options the model folder declares (how it was trained: entailment label, window budget, top-k)
        fill the ones the suite left out; the options then show (and hash) what is really used."""
        declared = model_defaults(path)
        o = self.options
        if o.aggregate != "summac":
            # The declared windowing is for sentence-level scoring; minicheck and pair size their own.
            declared = {k: v for k, v in declared.items() if k in ("entail_label", "window_overlap")
                        or (k == "top_k_windows" and o.aggregate == "minicheck")}
        fill = {k: v for k, v in declared.items() if k not in o.model_fields_set}
        if fill:
            self.options = self.Options(**{**o.model_dump(exclude_unset=True), **fill})

    @property
    def cache(self) -> PairCache:
        return self._build_once("_cache", lambda: PairCache(self.model.model_id, self.options.cache_dir))

    @property
    def selector(self) -> CachedEncoder:
        return self._build_once("_selector", lambda: CachedEncoder(make_encoder(self.options.selector_model),
                                                                   self.options.embedding_cache_dir))

    def __getstate__(self):
        # The model's weights stay behind too (PairModel drops them); the sentence memo starts afresh.
        return {**super().__getstate__(), "_memo": {}}

    # -- cutting --------------------------------------------------------------------------------------
    def _language(self, text: str) -> str:
        if self.options.language != "auto":
            return self.options.language
        return languages.resolve(languages.detect_language(text))

    def _memoised(self, key: tuple, make):
        if key not in self._memo:
            if len(self._memo) > MEMO_ITEMS:
                self._memo.clear()
            self._memo[key] = make()
        return self._memo[key]

    def _windows(self, text: str, source_id: str, budget: int) -> list[Window]:
        o, lang = self.options, self._language(text)
        lang = lang if languages.supported(lang) else "en"  # a source's language only picks its sentence splitter
        h = _sha(text)
        sents, counts = self._memoised(("sentences", h, lang), lambda: self._sentences(text, lang))
        return self._memoised(
            ("windows", h, source_id, lang, budget, o.window_overlap, o.window_sentences),
            lambda: pack_windows(text, source_id, sents, counts, budget, o.window_overlap, o.window_sentences,
                                 self.model.count))

    def _case_windows(self, sources: list[Source], budget: int) -> list[Window]:
        """Windows over the case's sources packed as one text (joined by a blank line). A window inside one
        source keeps that source's id and its offsets in it; one that spans sources has their ids joined by
        "+" and offsets in the joined text; `index` counts the case's windows."""
        spans, at = [], 0
        for s in sources:
            spans.append((s.id, at, at + len(s.text)))
            at += len(s.text) + len(SOURCE_JOIN)
        joined = SOURCE_JOIN.join(s.text for s in sources)
        out: list[Window] = []
        for w in self._windows(joined, "+".join(s.id for s in sources), budget):
            inside = [(sid, a) for sid, a, b in spans if w.start < b and w.end > a]
            if len(inside) == 1:
                sid, a = inside[0]
                out.append(Window(w.text, sid, w.start - a, w.end - a, w.tokens, len(out)))
            else:
                out.append(Window(w.text, "+".join(sid for sid, _ in inside), w.start, w.end, w.tokens, len(out)))
        return out

    def _sentences(self, text: str, lang: str):
        sents = sentences(text, lang)
        return sents, self.model.count([s.text for s in sents])

    def _prepare(self, case: Case) -> _Prepared:
        o, model = self.options, self.model
        sources = [s for s in case.sources if s.text.strip()]
        if not sources:
            raise ValueError("case has no source text; nli needs at least one source")
        p = _Prepared(case)
        p.language = lang = self._language(case.response)
        if not languages.supported(lang):
            raise ValueError(languages.unsupported_message(lang, "nli"))
        reads = BUILTIN_LANGUAGES.get(o.model)
        if reads is not None and lang not in reads:
            raise ValueError(f"the response is in {languages.name(lang)} ({lang}), and the built-in model "
                             f"{o.model!r} was trained on {', '.join(languages.name(x) for x in reads)} pairs "
                             f"only: its score would not mean anything here. No offline {languages.name(lang)} "
                             f"consistency model ships yet (docs/consistency.md); use anchors, or give `model:` "
                             f"an NLI model that reads {languages.name(lang)}")
        room = model.max_length - model.overhead  # tokens for premise + hypothesis together
        text = case.response
        if o.aggregate == "pair":
            premise = "\n\n".join(s.text for s in sources)
            stripped = text.strip()
            start = text.find(stripped) if stripped else 0
            if stripped:
                p.pieces = [Piece(stripped, start, start + len(stripped), model.count([stripped])[0])]
            p.windows = [Window(premise, sources[0].id if len(sources) == 1 else "+".join(s.id for s in sources),
                                0, len(premise), model.count([premise])[0], 0)]
            p.chosen = [[0] for _ in p.pieces]
            return p
        if o.aggregate == "minicheck":
            stripped = text.strip()
            spans = [(stripped, text.find(stripped), text.find(stripped) + len(stripped))] if stripped else []
        elif o.hypothesis == "claims":
            spans = [(c.text, c.start, c.end) for c in claims(text, lang, split=True)]
        else:
            spans = [(s.text, s.start, s.end) for s in sentences(text, lang)]
        if o.checkworthy and o.aggregate == "summac" and spans:
            spans = self._worthy(p, spans)
            if not spans:
                return p
        if o.source_wording and lang == "en" and spans:
            joined = SOURCE_JOIN.join(s.text for s in sources)
            spans = [(in_source_wording(t, joined), a, b) for t, a, b in spans]
        if o.window_tokens is not None:
            hyp_budget = room - o.window_tokens
            if hyp_budget < 8:
                raise SuiteError(f"verifier {self.id!r} (nli): window_tokens {o.window_tokens} leaves "
                                 f"{hyp_budget} tokens for the hypothesis in max_length {model.max_length}")
        else:
            hyp_budget = room - min(o.min_window_tokens, room // 2)
        p.pieces = cut_pieces(text, spans, model.count([t for t, _, _ in spans]), hyp_budget, model.count)
        if not p.pieces:
            return p
        p.window_tokens = o.window_tokens or room - max(x.tokens for x in p.pieces)
        if o.window_scope == "case" and len(sources) > 1:
            p.windows = self._case_windows(sources, p.window_tokens)
        else:
            p.windows = [w for s in sources for w in self._windows(s.text, s.id, p.window_tokens)]
        if not p.windows:
            raise ValueError("the sources have no sentence to check the response against")
        p.chosen = [list(range(len(p.windows))) for _ in p.pieces]
        return p

    def _worthy(self, p: _Prepared, spans: list[tuple[str, int, int]]) -> list[tuple[str, int, int]]:
        """The spans worth checking (openers stripped); the others become the case's skipped units."""
        kept = []
        text = p.case.response
        for (unit, start, end), w in zip(spans, assess([t for t, _, _ in spans], p.language)):
            if w.reason is not None:
                p.skipped.append(Unit(text=text[start:end], score=None, status=skipped_status(w.reason),
                                      start=start, end=end, detail={"skipped": w.reason}))
            elif w.offset:
                own = unit == text[start:end]
                kept.append((unit[w.offset:], start + w.offset if own else start, end))
            else:
                kept.append((unit, start, end))
        return kept

    def _check_facts(self, prepared: list[_Prepared], clock: CaseClock) -> None:
        """anchors' fact checks and value binding on each English unit, as written in the response (one
        batched parse for the named entities)."""
        todo = [(i, p) for i, p in enumerate(prepared) if p.error is None and p.pieces and p.language == "en"]
        texts = [[p.case.response[x.start:x.end] for x in p.pieces] for _, p in todo]
        with clock.batched(self._spread(texts, todo, len(prepared))):
            docs = iter(english_pipeline().pipe([t for ts in texts for t in ts], batch_size=64)) if texts else iter(())
            parsed = [[next(docs) for _ in ts] for ts in texts]
        for (i, p), units, unit_docs in zip(todo, texts, parsed):
            with clock.case(i):
                sources = [s.text for s in p.case.sources if s.text.strip()]
                joined = "\n".join(sources)
                p.checks = []
                for x, text, doc in zip(p.pieces, units, unit_docs):
                    # Names are left to the model: spaCy's names on long news documents flagged faithful
                    # summaries (HaluEval summarization 0.580 -> 0.446 with them, 0.572 without).
                    found = fact_findings(text, joined, "en", tuple((e.text, e.label_) for e in doc.ents),
                                          p.case.question or "", arithmetic_context(p.case.response, x.start, x.end),
                                          names=False)
                    if not found.problems:
                        found.problems += unbound(text, sources)
                    p.checks.append(found)

    @staticmethod
    def _spread(texts: list[list[str]], todo: list, n: int) -> list[list[str]]:
        """The unit texts of `todo`'s cases laid out by batch position (empty for the others)."""
        out: list[list[str]] = [[] for _ in range(n)]
        for (i, _), t in zip(todo, texts):
            out[i] = t
        return out

    def _select(self, prepared: list[_Prepared]) -> None:
        """Keep, per unit, the `top_k_windows` windows closest to it by embedding cosine."""
        k = self.options.top_k_windows
        todo = [p for p in prepared if p.error is None and p.pieces and len(p.windows) > k]
        if not todo:
            return
        units = list(dict.fromkeys(x.text for p in todo for x in p.pieces))
        wins = list(dict.fromkeys(w.text for p in todo for w in p.windows))
        uvec = dict(zip(units, self.selector.encode(units, "query")))
        wvec = dict(zip(wins, self.selector.encode(wins, "passage")))
        for p in todo:
            sims = np.stack([uvec[x.text] for x in p.pieces]) @ np.stack([wvec[w.text] for w in p.windows]).T
            order = np.argsort(-sims, axis=1, kind="stable")[:, :k]
            p.chosen = [sorted(row.tolist()) for row in order]
            p.cosine = [[float(sims[i, j]) for j in p.chosen[i]] for i in range(len(p.pieces))]

    # -- scoring --------------------------------------------------------------------------------------
    def verify(self, batch: list[Case]) -> list[Verdict]:
        clock = CaseClock(len(batch))
        prepared = []
        for i, case in enumerate(batch):
            with clock.case(i):
                try:
                    prepared.append(self._prepare(case))
                except SuiteError:
                    raise
                except Exception as e:  # noqa: BLE001 - one case's failure is that case's error verdict
                    prepared.append(_Prepared(case, e))
        if self._checks_facts():
            self._check_facts(prepared, clock)
        if self.options.top_k_windows:
            work = [[x.text for x in p.pieces] + [w.text for w in p.windows] for p in prepared]
            with clock.batched(work):
                self._select(prepared)
        # Every pair of the batch in one call: batching across cases is where the throughput is.
        case_pairs = [[(p.windows[j].text, x.text) for x, chosen in zip(p.pieces, p.chosen) for j in chosen]
                      if p.error is None else [] for p in prepared]
        pairs = list(dict.fromkeys(pair for cp in case_pairs for pair in cp))
        hits, misses = self.cache.hits, self.cache.misses
        # Pairs already in a cache cost (almost) nothing: only the pairs the model scores are shared out,
        # and the weights are loaded (timed as warm-up) only when some pair is in no cache.
        fresh = set(self.cache.uncached(pairs)) if pairs else set()
        if fresh:
            with clock.loading():
                self.model.load_weights()
        with clock.batched([[f"{a}\x00{b}" for a, b in cp if (a, b) in fresh] for cp in case_pairs]):
            logits, truncated = self.cache.get_or_compute(pairs, self.model.logits) if pairs else ([], np.zeros(0, bool))
        looked_up = (self.cache.hits - hits) + (self.cache.misses - misses)
        self._cached_share = (self.cache.hits - hits) / looked_up if looked_up else 0.0
        probs = entail_probability(np.stack(logits), self.entail_index) if pairs else np.zeros(0)
        table = {pair: (float(pr), bool(t)) for pair, pr, t in zip(pairs, probs, truncated)}
        out = []
        for i, p in enumerate(prepared):
            with clock.case(i):
                if p.error is not None:
                    out.append(self.error_verdict(p.case, p.error))
                    continue
                try:
                    out.append(self._judge(p, table))
                except Exception as e:  # noqa: BLE001
                    out.append(self.error_verdict(p.case, e))
        clock.finish(out)
        return out

    def _judge(self, p: _Prepared, table: dict) -> Verdict:
        o, case = self.options, p.case
        detail = {"aggregate": o.aggregate, "language": p.language, "windows": len(p.windows),
                  "window_tokens": p.window_tokens, "batch_pairs_cached": round(self._cached_share, 3)}
        if not p.pieces:
            return Verdict(case_id=case.id, verifier=self.id, score=0.0, units=list(p.skipped),
                           detail={**detail, "claims": 0, "skipped": len(p.skipped), "pairs": 0,
                                   "truncated_pairs": 0})
        units, unit_scores, n_pairs, n_trunc = [], [], 0, 0
        for i, piece in enumerate(p.pieces):
            scored = [(j, *table[(p.windows[j].text, piece.text)]) for j in p.chosen[i]]
            n_pairs += len(scored)
            n_trunc += sum(t for _, _, t in scored)
            j, prob, trunc = max(scored, key=lambda r: r[1])
            w = p.windows[j]
            unit_detail = {"p_entail": prob, "source_id": w.source_id, "window": w.index,
                           "window_start": w.start, "window_end": w.end, "windows_scored": len(scored),
                           "truncated": trunc}
            if piece.part is not None:
                unit_detail["part"] = f"{piece.part[0]}/{piece.part[1]}"
            if piece.text != case.response[piece.start:piece.end]:
                unit_detail["scored_text"] = piece.text
            if p.cosine is not None:
                unit_detail["cosine"] = p.cosine[i][p.chosen[i].index(j)]
            status = "supported" if prob >= o.support_threshold else "unsupported"
            score = 1.0 - prob
            evidence = w.text
            if p.checks is not None:  # anchors' checks in front: a failed one ranks the unit above every passing one
                found = p.checks[i]
                unit_detail["flags"] = found.problems
                score = claim_score(prob, len(found.problems))
                status = "; ".join(found.problems) or status
                if found.derived:
                    unit_detail["derived"] = found.derived
                    evidence = f"{w.text} [derived: {'; '.join(found.derived)}]"
            unit_scores.append(score)
            units.append(Unit(text=case.response[piece.start:piece.end], score=score, status=status,
                              evidence=evidence, start=piece.start, end=piece.end, detail=unit_detail))
        if o.aggregate == "summac" and o.claim_reduce == "mean":
            score = float(np.mean(unit_scores))
        else:
            # max: one unsupported unit (or one unsupported part of a cut response) makes the case.
            score = float(max(unit_scores))
        claims_n = len(units)
        if p.skipped:
            units = sorted([*units, *p.skipped], key=lambda u: (u.start or 0))
        return Verdict(case_id=case.id, verifier=self.id, score=score, units=units,
                       detail={**detail, "claims": claims_n, "skipped": len(p.skipped), "pairs": n_pairs,
                               "truncated_pairs": n_trunc})
