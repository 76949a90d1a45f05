"""Checks that sentence vectors cannot make: polarity, and numbers, dates, amounts and named entities.

Sentence embeddings place "supports export" and "does not support export" close together, and they
barely notice a swapped digit; these checks catch what the cosine misses. Each item found in a claim
must appear, normalised, in the sources; a mismatch flags the claim.
"""

from __future__ import annotations

import re
from datetime import date
from functools import lru_cache

from verifybench.verifiers.anchors.quantities import (
    drop_negation_idioms,
    expand_contractions,
    plain_number_text,
    quantity_mismatches,
    same_topic,
)

# Negation cues (NegEx-style word lists). English "n't" is split off by the tokenizer below.
NEGATIONS = {
    "en": {"not", "no", "never", "none", "nor", "neither", "without", "cannot", "n't", "nothing", "nobody"},
    "ru": {"не", "нет", "ни", "никогда", "без", "нельзя", "ничего", "никто"},
}
_WORD = re.compile(r"n't|\w+", re.UNICODE)
_CLAUSE = re.compile(r"[,;:.!?]\s|\bbut\b|\bwhile\b|\bwhereas\b|\bhowever\b|\b(?:al)?though\b|\bno\b(?=,)"
                     r"|\bно\b|\bа\b|\bхотя\b", re.I)
# A numeral: digits with optional thousands/decimal separators ("12,500", "3.5", "3,5", "12 500").
_NUMBER = re.compile(r"(?<![\w])\d{1,3}(?:(?:[ \u00a0]\d{3})+|(?:,\d{3})+)(?:[.,]\d+)?(?!\d)|(?<![\w])\d+(?:[.,]\d+)?(?![\d])")
# spaCy's small model tags numeric dates ("3/3/2026") as CARDINAL: those count as dates too.
_NUMERIC_DATE = re.compile(r"\d{1,4}[/.\-]\d{1,2}[/.\-]\d{1,4}")
ENTITY_LABELS = {"PERSON", "ORG", "GPE", "LOC", "PRODUCT", "NORP", "FAC", "EVENT", "WORK_OF_ART", "LAW"}


def words(text: str) -> list[str]:
    # "can't" and "cannot" are spelled "can not" first: one negation, however it is written.
    return _WORD.findall(expand_contractions(text).lower())


def negation_count(text: str, language: str = "en") -> int:
    if language == "en":
        text = drop_negation_idioms(text)  # "at no cost" = "for free": a "no" that negates nothing
    return sum(w in NEGATIONS.get(language, NEGATIONS["en"]) for w in words(text))


@lru_cache(maxsize=4)
def stop_words(language: str) -> frozenset[str]:
    """spaCy's stop-word list for the language (no model needed)."""
    if language == "ru":
        from spacy.lang.ru.stop_words import STOP_WORDS
    else:
        from spacy.lang.en.stop_words import STOP_WORDS
    return frozenset(STOP_WORDS)


def content_words(text: str, language: str = "en") -> set[str]:
    return set(words(text)) - stop_words(language)


def best_clause(claim: str, evidence: str | list[str], language: str = "en") -> str:
    """The clause of the evidence (one text or several candidate chunks) sharing the most content words
    with `claim`: polarity is compared there, not over a chunk that may negate something else."""
    claim_words = content_words(claim, language)
    texts = [evidence] if isinstance(evidence, str) else evidence
    parts = [p for t in texts for p in _CLAUSE.split(t) if p and p.strip()]
    return max(parts, key=lambda p: len(claim_words & content_words(p, language)), default=texts[0] if texts else "")


def polarity_mismatch(claim: str, evidence: str | list[str], language: str = "en") -> bool:
    """True when a clause of the claim and the clause of the evidence it matches disagree on negation.

    Clause by clause, because one claim may hold two ("API access is not included, though CSV export
    is"), and each has its own polarity. `evidence` given as several chunks is in order of similarity,
    the claim's nearest chunk by the embedding first."""
    texts = [evidence] if isinstance(evidence, str) else evidence
    parts = [p for p in _CLAUSE.split(claim) if len(content_words(p, language)) >= 2] or [claim]
    for p in parts:
        clause = best_clause(p, texts, language)
        mine = content_words(p, language)
        if language == "en" and not same_topic(mine, content_words(clause, language)):
            # English: an evidence clause that shares fewer than two content words with the claim's clause
            # (one, if the clause has one) is not about the same thing, and its polarity says nothing; but
            # a denial needs a denial to back it: a negated clause whose nearest chunk by the embedding
            # negates nothing at all, and shares a content word with it, is flagged.
            if (negation_count(p, language) % 2 and texts and negation_count(texts[0], language) == 0
                    and same_topic(mine, content_words(texts[0], language), need=1)):
                return True
            continue
        if negation_count(p, language) % 2 != negation_count(clause, language) % 2:
            return True
    return False


def _to_float(raw: str) -> float | None:
    s = raw.replace("\u00a0", " ")
    if " " in s:  # "12 500" or "12 500,5": spaces group thousands
        s = s.replace(" ", "").replace(",", ".")
    elif "," in s and "." in s:  # the later one is the decimal mark
        s = s.replace(",", "") if s.rfind(".") > s.rfind(",") else s.replace(".", "").replace(",", ".")
    elif "," in s:
        # "12,500" groups thousands; "3,5" is a decimal comma.
        s = s.replace(",", "") if re.fullmatch(r"\d{1,3}(,\d{3})+", s) else s.replace(",", ".")
    try:
        return float(s)
    except ValueError:
        return None


@lru_cache(maxsize=4096)
def numbers(text: str, language: str = "en") -> frozenset[float]:
    """Every number in `text`, normalised: "12,500" = "12 500" = 12500; "3.5" = "3,5" = "three and a
    half" (number words are converted for English by numerizer)."""
    if language == "en":
        from numerizer import numerize

        try:
            text = numerize(text)
        except Exception:  # noqa: BLE001 - numerizer fails on some odd strings; digits still count
            pass
    values = {_to_float(m.group()) for m in _NUMBER.finditer(text)}
    return frozenset(round(v, 6) for v in values if v is not None)


def _norm_entity(text: str) -> str:
    t = " ".join(words(text))
    return t[4:] if t.startswith("the ") else t


@lru_cache(maxsize=1024)
def _source_dates(text: str) -> frozenset[date]:
    """Dates that spaCy finds in a source (parsed lazily: only when a claim's date is not verbatim there)."""
    from verifybench.verifiers.anchors.text import english_pipeline

    found = set()
    for doc in english_pipeline().pipe([text[i:i + 100_000] for i in range(0, len(text), 100_000)],
                                       disable=["parser", "lemmatizer"]):
        for ent in doc.ents:
            if is_date_entity(ent.text, ent.label_) and (d := parse_date(ent.text)) is not None:
                found.add(d)
    return frozenset(found)


def is_date_entity(text: str, label: str) -> bool:
    return label == "DATE" or (label == "CARDINAL" and _NUMERIC_DATE.search(text) is not None)


@lru_cache(maxsize=4096)
def parse_date(text: str) -> date | None:
    """A calendar date from text ("March 3, 2026", "3/3/2026", "2026-03-03"); None for durations,
    relative dates or text without a day or month."""
    if not any(c.isdigit() for c in text):
        return None
    import dateparser

    d = dateparser.parse(text, settings={"REQUIRE_PARTS": ["month", "year"], "RETURN_AS_TIMEZONE_AWARE": False})
    return d.date() if d else None


def fact_mismatches(claim: str, sources_text: str, language: str = "en",
                    entities: tuple[tuple[str, str], ...] = ()) -> list[str]:
    """What in the claim the sources do not back: numbers, dates and named entities.

    Args:
        claim: the claim's text.
        sources_text: every source of the case, joined.
        language: "en" or "ru".
        entities: (text, spaCy label) of the named entities inside the claim.
    """
    problems = []
    # English times of day and durations are compared as such ("a week" = "7 days"); what is left of
    # the claim, less number words that are not quantities ("once", "each one"), is checked for numbers.
    checked = plain_number_text(claim) if language == "en" else claim
    for n in sorted(numbers(checked, language) - numbers(sources_text, language)):
        problems.append(f"number {n:g} is not in the sources")
    if language == "en":
        problems += quantity_mismatches(claim, sources_text)
    if not entities:
        return problems
    lowered = _norm_entity(sources_text)
    for text, label in entities:
        if is_date_entity(text, label) and (d := parse_date(text)) is not None:
            if text.lower() not in sources_text.lower() and d not in _source_dates(sources_text):
                problems.append(f"date {text!r} is not in the sources")
        elif label in ENTITY_LABELS:
            name = _norm_entity(text)
            if name and name not in lowered:
                problems.append(f"{label.lower()} {text!r} is not in the sources")
    return problems
