"""BLEU and ROUGE overlap: the cheap baseline. A response that shares little wording with its sources
scores high (more likely hallucinated).

Exact choices:
- The response is the hypothesis (prediction); each source is a reference (target). Scores are
  computed against every source separately and the best overlap wins (`sources: best`), or against
  all sources joined into one text (`sources: joined`). Score = 1 - overlap, in [0, 1].
- `bleu`: sacrebleu's sentence BLEU, n-gram order 4 by default (`order`), `exp` smoothing, effective
  order (so a response shorter than 4 tokens is not zeroed), 13a tokenisation, lower-cased. The brevity
  penalty is switched off (sacrebleu's `compute_bleu` with the reference length set to the response
  length): sources are always far longer than a faithful answer, and the penalty would score every
  short answer as unsupported. What remains is the geometric mean of modified n-gram precisions.
- `rouge`: rouge-score's ROUGE-N / ROUGE-L (`type`, default rouge1), the `precision` component by default
  (`measure`): the share of the response's n-grams found in the source, which is what an unsupported
  addition lowers; recall would mostly measure how much of a long source the response leaves out.
  Tokens are lower-cased Unicode word characters (rouge-score's own tokenizer drops every non-ASCII
  letter, which would make Russian or accented text score as unsupported). `stemmer: true` stems them
  the way rouge-score's `use_stemmer` does (nltk's Porter stemmer, words longer than 3 characters), which
  rouge-score itself skips once a custom tokenizer is given; Porter is for English and leaves other
  scripts as they are. ROUGE-L is pure-Python LCS,
  quadratic in length: about 4 ms a case on HaluEval summarization against 0.1-0.3 ms for rouge1/rouge2.
- A case without sources cannot be judged by overlap: its verdict is an error, counted by the metrics.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from verifybench.cases import Case
from verifybench.verifiers.base import CaseVerifier

_WORD = re.compile(r"\w+", re.UNICODE)


class UnicodeTokenizer:
    """rouge-score tokenizer interface. Each instance caches recent texts, because the cases of one
    source (HaluEval's right/hallucinated pairs, many answers over one document) arrive together.
    `stem`: Porter-stem words longer than 3 characters, as rouge-score's own tokenizer does."""

    def __init__(self, cache_size: int = 1024, stem: bool = False):
        self.stem = stem
        self._tokenize = lru_cache(maxsize=cache_size)(self._split)
        if stem:
            from nltk.stem import porter

            # The stemmer rouge-score uses, each word stemmed once.
            self._stem_word = lru_cache(maxsize=65536)(porter.PorterStemmer().stem)

    def _split(self, text: str) -> tuple[str, ...]:
        words = _WORD.findall(text.lower())
        if self.stem:
            words = [self._stem_word(w) if len(w) > 3 else w for w in words]
        return tuple(words)

    def tokenize(self, text: str) -> list[str]:
        return list(self._tokenize(text))


def _references(case: Case, mode: str) -> list[str]:
    texts = [s.text for s in case.sources if s.text.strip()]
    if not texts:
        raise ValueError("case has no source text; overlap needs at least one source")
    return ["\n".join(texts)] if mode == "joined" else texts


class BleuOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    order: int = Field(4, ge=1, le=4, description="highest n-gram order")
    sources: Literal["best", "joined"] = "best"


class BleuVerifier(CaseVerifier):
    name = "bleu"
    stateless = True
    description = "1 - sentence BLEU precision (sacrebleu, no brevity penalty) of the response against its sources"
    Options = BleuOptions
    lazy = ("_bleu",)

    def _metric(self):
        def build():
            from sacrebleu.metrics import BLEU

            return BLEU(lowercase=True, effective_order=True, max_ngram_order=self.options.order)

        return self._build_once("_bleu", build)

    def score_case(self, case: Case) -> float:
        bleu = self._metric()
        best = 0.0
        for ref in _references(case, self.options.sources):
            stats = bleu.sentence_score(case.response, [ref])
            precision_only = bleu.compute_bleu(
                stats.counts, stats.totals, stats.sys_len, stats.sys_len,
                smooth_method="exp", effective_order=True, max_ngram_order=self.options.order,
            )
            best = max(best, precision_only.score / 100.0)
        return 1.0 - best


class RougeOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    type: Literal["rouge1", "rouge2", "rouge3", "rougeL"] = "rouge1"
    measure: Literal["precision", "recall", "fmeasure"] = "precision"
    stemmer: bool = Field(False, description="Porter-stem words longer than 3 characters (English), as rouge-score does")
    sources: Literal["best", "joined"] = "best"


class RougeVerifier(CaseVerifier):
    name = "rouge"
    stateless = True
    description = "1 - ROUGE precision (rouge-score) of the response against its sources"
    Options = RougeOptions
    lazy = ("_scorer",)

    def _metric(self):
        def build():
            from rouge_score.rouge_scorer import RougeScorer

            # rouge-score ignores use_stemmer when given a tokenizer: the tokenizer stems.
            return RougeScorer([self.options.type], tokenizer=UnicodeTokenizer(stem=self.options.stemmer))

        return self._build_once("_scorer", build)

    def score_case(self, case: Case) -> float:
        scorer = self._metric()
        best = 0.0
        for ref in _references(case, self.options.sources):
            score = scorer.score(ref, case.response)[self.options.type]
            best = max(best, getattr(score, self.options.measure))
        return 1.0 - best
