"""Checks that sentence vectors cannot make: polarity, and numbers, dates, amounts and named entities.

Sentence embeddings place "supports export" and "does not support export" close together, and they
barely notice a swapped digit; these checks catch what the cosine misses. Each item found in a claim
must appear, normalised, in the sources; a mismatch flags the claim.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date
from functools import lru_cache

from verifybench.verifiers.anchors.derived import (
    FACTORS,
    Quantity,
    calendar_date,
    date_derivation,
    derivation,
    quantities,
)
from verifybench.verifiers.anchors.quantities import (
    ZONES,
    _stem,
    drop_negation_idioms,
    durations,
    expand_contractions,
    mask,
    plain_number_text,
    quantity_mismatches,
    same_topic,
)

# Negation cues (NegEx-style word lists). English "n't" is split off by the tokenizer below.
NEGATIONS = {
    # Words that deny as a "not" does count too ("is excluded" = "isn't covered", "we refuse" = "we won't"):
    # legal wording says the one and a plain answer the other.
    "en": {"not", "no", "never", "none", "nor", "neither", "without", "cannot", "n't", "nothing", "nobody",
           "exclude", "excluded", "excludes", "excluding", "exclusion", "refuse", "refused", "refuses", "decline",
           "declined", "declines", "deny", "denied", "denies", "ineligible", "void", "prohibited", "unable"},
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


def clauses(text: str) -> list[str]:
    """`text` cut at clause boundaries; a comma-separated piece of three words or fewer is a list item
    ("damage to fences, gates and hedges isn't"), kept with what follows it."""
    out: list[str] = []
    carry = ""
    for piece in _CLAUSE.split(text):
        if not piece or not piece.strip():
            continue
        piece = f"{carry}, {piece}" if carry else piece
        if len(piece.split()) <= 3 and not piece.rstrip().endswith((".", "!", "?", ";")):
            carry = piece
            continue
        carry = ""
        out.append(piece)
    if carry:
        out.append(carry)
    return out


def best_clause(claim: str, evidence: str | list[str], language: str = "en") -> str:
    """The clause of the evidence (one text or several candidate chunks) sharing the most content words
    with `claim`: polarity is compared there, not over a chunk that may negate something else."""
    claim_words = content_words(claim, language)
    texts = [evidence] if isinstance(evidence, str) else evidence
    parts = [p for t in texts for p in clauses(t)]
    return max(parts, key=lambda p: len(claim_words & content_words(p, language)), default=texts[0] if texts else "")


# "No - pushes are free": an answer particle replies to the question; it negates nothing in the clause.
_ANSWER_PARTICLE = re.compile(r"^\s*(?:no|nope|not\s+quite(?:\s+yet)?|(?:unfortunately|sadly|i'?m\s+afraid)\s*,?\s*not|"
                              r"yes|yep|yeah)\b\s*(?:[,.;:!\u2014\u2013]|\s-\s)+\s*", re.I)
_ABOUT_SOURCES = re.compile(r"\b(?:docs|documents?|documentation|information|materials?|sources?|pages?|they|it)\s+"
                            r"(?:here\s+|i\s+have\s+)?(?:do(?:es)?\s*n[o'\u2019]?t|do(?:es)?\s+not|don't|doesn't)\s+"
                            r"(?:say|mention|cover|list|specify|state|include|describe)\b", re.I)


def polarity_mismatch(claim: str, evidence: str | list[str], language: str = "en") -> bool:
    """True when a clause of the claim and the clause of the evidence it matches disagree on negation.

    Clause by clause, because one claim may hold two ("API access is not included, though CSV export
    is"), and each has its own polarity. `evidence` given as several chunks is in order of similarity,
    the claim's nearest chunk by the embedding first."""
    texts = [evidence] if isinstance(evidence, str) else evidence
    if language == "en":
        claim = _ANSWER_PARTICLE.sub("", claim)
    parts = [p for p in clauses(claim) if len(content_words(p, language)) >= 2] or [claim]
    if language == "en":  # "the docs don't mention X" says what the sources lack, not that X is false
        parts = [p for p in parts if not _ABOUT_SOURCES.search(p)]
    for p in parts:
        clause = best_clause(p, texts, language)
        mine = content_words(p, language)
        if language == "en" and not (same_topic(mine, content_words(clause, language))
                                     and _restates(mine, content_words(clause, language))):
            # English: an evidence clause that shares fewer than two content words with the claim's clause
            # (one, if the clause has one) is not about the same thing, and its polarity says nothing; but
            # a denial needs a denial to back it: a negated clause whose nearest chunk by the embedding
            # negates nothing at all, and shares a content word with it, is flagged.
            if (negation_count(p, language) % 2 and texts and negation_count(texts[0], language) == 0
                    and same_topic(mine, content_words(texts[0], language), need=1)):
                return True
            continue
        if negation_count(p, language) % 2 != negation_count(clause, language) % 2 and not (
                language == "en" and _agreeing_rival(p, mine, clause, texts, language)):
            return True
    return False


RESTATE_SHARE = 0.5  # picked by rotation from 0, 0.5, 0.7: folds disagree within noise; best pooled (docs/measured.md, issue 46)


def _restates(mine: set[str], theirs: set[str]) -> bool:
    """The evidence clause says what the claim's clause says: it holds at least `RESTATE_SHARE` of the
    claim clause's content words (stemmed). Polarity compared with a clause that only touches the same
    topic flags paraphrases ("we won't pay" against "the Insurer shall not be liable") at random."""
    a = {_stem(w) for w in mine if w.isalpha()}
    return not a or len(a & {_stem(w) for w in theirs}) >= RESTATE_SHARE * len(a)


def _agreeing_rival(part: str, mine: set[str], clause: str, texts: list[str], language: str) -> bool:
    """Another evidence clause about as close to the claim's clause as the best one that restates it too
    and agrees with it on negation: which of the two the claim restates is not clear ("damage to fences
    isn't covered" against "damage to your home is covered, but damage to fences, gates and hedges
    isn't"), so a mismatch with one of them is no evidence. Closeness weighs each shared word by how few
    of the clauses hold it: the claim's rarer words ("fences", "API access") say which clause it restates."""
    stems = {_stem(w) for w in mine}
    candidates = [c for t in texts for c in clauses(t)]
    held = [{_stem(w) for w in content_words(c, language)} for c in candidates]
    df = {w: sum(w in h for h in held) for w in stems}

    def weight(words: set[str]) -> float:
        return sum(1.0 / df[w] for w in stems & words if df[w])

    best = weight({_stem(w) for w in content_words(clause, language)})
    want = negation_count(part, language) % 2
    for c, h in zip(candidates, held):
        if (c != clause and weight(h) >= 0.6 * best and _restates(mine, content_words(c, language))
                and negation_count(c, language) % 2 == want):
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


_DETERMINERS = re.compile(r"^(?:the|a|an|our|your|its|their|this|that)\s+")
# Time zones and currency codes spaCy tags as organisations ("UTC", "EUR"): the time and number checks'.
ZONE_AND_CURRENCY_CODES = {z.upper() for z in ZONES} | {"USD", "EUR", "GBP", "RUB", "JPY", "CHF", "CAD", "AUD"}


def _norm_entity(text: str) -> str:
    return _DETERMINERS.sub("", " ".join(words(text)))


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


# Identifiers read as exact tokens: versions, snake_case, camelCase and PascalCase names, dotted paths,
# scopes ("keys:manage") and hyphenated header names ("Idempotency-Key"). A near miss ("maxRetries" for
# "max_retries", "v2024-09" for "v2024-06") is another identifier, whatever an embedding thinks.
_IDENT = re.compile(
    r"(?<![\w.:/-])(?:v\d+(?:[.-]\d+)+[a-z]?"
    r"|[A-Za-z_][A-Za-z0-9_]+(?:\.[A-Za-z_][A-Za-z0-9_]*)+"
    r"|[A-Za-z0-9]+(?:_[A-Za-z0-9]+)+_?|_[A-Za-z0-9_]+"
    r"|[a-z]+[A-Z][A-Za-z0-9]*|[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+"
    r"|[a-z]+:[a-z_]+"
    r"|[A-Z][a-z]+(?:-[A-Z][a-z]+)+)(?![\w:/-]|\.\w)")


_CODE_SPAN = re.compile(r"`([^`\n]+)`")
_KEYWORD_ARGUMENT = re.compile(r"\b([A-Za-z_]\w*)=(?!=)")  # "urgent=True", not "client = ..."


def identifiers(text: str) -> list[str]:
    """The identifier tokens of `text` (see `_IDENT`), and what code spans name: a one-token span
    (`priority`) and the keyword arguments a call passes (`urgent=True`); in order, without repeats."""
    found = [(m.start(), m.group()) for m in _IDENT.finditer(text)]
    for m in _CODE_SPAN.finditer(text):
        span = m.group(1).strip()
        if re.fullmatch(r"[A-Za-z_][\w.:-]*", span):
            found.append((m.start(1), span))
        found += [(m.start(1) + k.start(1), k.group(1)) for k in _KEYWORD_ARGUMENT.finditer(m.group(1))]
    return list(dict.fromkeys(t for _, t in sorted(found)))


def _identifier_in(ident: str, text: str) -> bool:
    if "." in ident and ":" not in ident and not ident[0].isdigit():
        # A dotted path's head is often the caller's own variable ("e.retry_after", "client.send"):
        # the attribute it reaches is what must be documented.
        ident = ident.rsplit(".", 1)[1] if not re.fullmatch(r"v?\d[\d.]*", ident) else ident
    return re.search(r"(?<![\w])" + re.escape(ident) + r"(?![\w])", text) is not None


_TOKEN = re.compile(r"[A-Za-z][A-Za-z'-]*|\d[\d,.]*")
_COORDINATORS = {"and": "or", "or": "and"}


def _content_at(toks: list[str], i: int, step: int, stops: frozenset[str]) -> str | None:
    """The first content word from toks[i] in direction `step`, within four tokens."""
    for j in range(i, i + 4 * step, step):
        if not 0 <= j < len(toks) or toks[j] in _COORDINATORS:
            return None
        if toks[j] not in stops and toks[j][0].isalpha():
            return _stem(toks[j])
    return None


@lru_cache(maxsize=4096)
def _coordinated(text: str, skip_lists: bool) -> frozenset[tuple[str, str, str]]:
    """(word before, "and"/"or", word after) of each coordinator in `text`, the words stemmed content words
    within four tokens of it; with `skip_lists`, none from a list (a comma shortly before the coordinator)."""
    stops = stop_words("en") - {"and", "or"}
    out = set()
    for m in re.finditer(r"\b(and|or)\b", text, re.I):
        if skip_lists and "," in re.split(r"[.;:!?]", text[max(0, m.start() - 40):m.start()])[-1]:
            continue
        before = [t.lower() for t in _TOKEN.findall(text[max(0, m.start() - 60):m.start()])]
        after = [t.lower() for t in _TOKEN.findall(text[m.end():m.end() + 60])]
        a = _content_at(before, len(before) - 1, -1, stops)
        b = _content_at(after, 0, 1, stops)
        if a is not None and b is not None and a != b:
            out.add((a, m.group(1).lower(), b))
    return frozenset(out)


def coordination_mismatches(claim: str, sources_text: str) -> list[str]:
    """A condition joined by "and" in the claim where the sources join the same two words by "or", or
    the reverse ("$500 in direct deposits and a minimum balance" against "... or a minimum balance"):
    both conditions instead of either, or either instead of both. A list ("fences, gates and hedges")
    is no condition: "and" and "or" often mean the same there. English."""
    if not re.search(r"\b(?:and|or)\b", claim):
        return []
    theirs = _coordinated(sources_text, False)
    return [f"{tok!r} where the sources say {_COORDINATORS[tok]!r} ({a} ... {b})"
            for a, tok, b in sorted(_coordinated(claim, True))
            if (a, _COORDINATORS[tok], b) in theirs and (a, tok, b) not in theirs]


def number_spans(text: str, language: str = "en") -> tuple[str, list[tuple[int, int, float]]]:
    """(the text as read, with English number words as digits; (start, end, value) of each number in it)."""
    if language == "en":
        from numerizer import numerize

        try:
            text = numerize(text)
        except Exception:  # noqa: BLE001 - numerizer fails on some odd strings; digits still count
            pass
    out = [(m.start(), m.end(), v) for m in _NUMBER.finditer(text) if (v := _to_float(m.group())) is not None]
    return text, out


def operands(*texts: str) -> list[Quantity]:
    """The numbers `texts` state (an answer, the question), with their kinds: what an answer's
    arithmetic may start from (`derived`). Durations count ("365 days"); times of day do not."""
    out: list[Quantity] = []
    for text in texts:
        if text:
            read, spans = number_spans(plain_number_text(text, keep_durations=True))
            out += quantities(read, [(a, b, round(v, 6)) for a, b, v in spans])
    return out


@lru_cache(maxsize=1024)
def _calendar_dates(text: str) -> frozenset[date]:
    """Dates with a day and a month that spaCy finds in `text` (`derived.calendar_date`)."""
    from verifybench.verifiers.anchors.text import english_pipeline

    found = set()
    for doc in english_pipeline().pipe([text[i:i + 100_000] for i in range(0, len(text), 100_000)],
                                       disable=["parser", "lemmatizer"]):
        for ent in doc.ents:
            if is_date_entity(ent.text, ent.label_) and (d := calendar_date(ent.text)) is not None:
                found.add(d)
    return frozenset(found)


def _day_lengths(texts: tuple[str, ...]) -> tuple[list[float], list[int]]:
    """Calendar durations the texts state, in days and in whole months (a month is 30 days)."""
    days, months = set(), set()
    for t in texts:
        for d in durations(t, keep_ages=True):
            if d.business:
                continue
            for sec in d.seconds:
                n = sec / 86400
                if n >= 1 and n == int(n):
                    days.add(n)
                    if n % 30 == 0:
                        months.add(int(n // 30))
    return sorted(days), sorted(months)


@dataclass
class Findings:
    """What a claim's fact check found: the problems (each flags the claim) and the numbers and dates
    supported by arithmetic, with the operation (`derived`)."""

    problems: list[str] = field(default_factory=list)
    derived: list[str] = field(default_factory=list)


@lru_cache(maxsize=1024)
def _sentences(text: str, language: str) -> tuple:
    from verifybench.verifiers.anchors.text import sentences

    return tuple(sentences(text, language))


def arithmetic_context(response: str, start: int, end: int, language: str = "en") -> str:
    """The part of the answer a claim at response[start:end] may compute from: its sentence and the one
    before (an answer states its operands next to its result: "$15 each, so three would be $45")."""
    sents = _sentences(response, language)
    at = [i for i, s in enumerate(sents) if s.start < end and s.end > start]
    if not at:
        return response[start:end]
    lo = max(0, at[0] - 1)
    return response[sents[lo].start:sents[at[-1]].end]


def user_statements(question: str) -> str:
    """The sentences of a question that state something (not asking): "I bought it 3 weeks ago."."""
    return " ".join(s.text for s in _sentences(question, "en") if not s.text.rstrip().endswith("?"))


def fact_findings(claim: str, sources_text: str, language: str = "en", entities: tuple[tuple[str, str], ...] = (),
                  question: str = "", response: str = "", names: bool = True) -> Findings:
    """What in the claim the sources (and the question) do not back: numbers, dates, times, durations and
    named entities; and which of its numbers and dates the answer derived from stated ones.

    Args:
        claim: the claim's text.
        sources_text: every source of the case, joined.
        language: "en" or "ru".
        entities: (text, spaCy label) of the named entities inside the claim.
        question: the case's question: what the user states there (an amount, a date, how long ago)
            supports what the answer repeats of it.
        response: the part of the answer the claim's arithmetic may start from (`arithmetic_context`),
            and where a duration said another way may be backed ("300 seconds (5 minutes)").
        names: check named entities (people, organisations, places...) too; dates are checked either way.
    """
    out = Findings()
    stated = f"{sources_text}\n{question}" if question else sources_text
    # Names the user states back the answer's; names a question only asks about ("Which came first, A or B?")
    # do not. Numbers, dates and durations of the question are the user's situation either way.
    told = f"{sources_text}\n{user_statements(question)}" if question else sources_text
    # Calendar dates are checked as dates (stated, or derived), not again as bare numbers.
    date_spans: list[tuple[int, int]] = []
    calendar = [(t, d) for t, label in entities if is_date_entity(t, label) and (d := calendar_date(t)) is not None]
    for text, _ in calendar:
        i = claim.find(text)
        if i >= 0:
            date_spans.append((i, i + len(text)))
    # English times of day and durations are compared as such ("a week" = "7 days"); what is left of
    # the claim, less number words that are not quantities ("once", "each one"), is checked for numbers.
    checked = plain_number_text(claim) if language == "en" else claim
    if language == "en":  # a version's digits are the identifier check's ("v2024-06" is no 6)
        date_spans += [(m.start(), m.end()) for m in _IDENT.finditer(claim)]
    if date_spans:
        checked = mask(checked, date_spans)
    missing = numbers(checked, language) - numbers(stated, language)
    if missing:
        read, spans = number_spans(checked, language)
        pool = operands(response or claim, question)
        for n in sorted(missing):
            where = next(((a, b) for a, b, v in spans if round(v, 6) == n), None)
            q = quantities(read, [(where[0], where[1], n)])[0] if where else Quantity(n, "bare")
            if q.factor_operand and n in FACTORS:
                out.derived.append(f"{n:g}: a conversion factor")
            elif (how := derivation(n, q.kind, pool)) is not None:
                out.derived.append(how)
            else:
                out.problems.append(f"number {n:g} is not in the sources")
    if language == "en":
        out.problems += quantity_mismatches(claim, stated, response)
        out.problems += [f"identifier {i!r} is not in the sources" for i in identifiers(claim)
                         if not _identifier_in(i, stated)]
        out.problems += coordination_mismatches(claim, sources_text)
    if not entities:
        return out
    lowered = _norm_entity(told)
    stated_words = {_stem(w) for w in words(told)}
    for text, label in entities:
        if is_date_entity(text, label) and (cd := calendar_date(text)) is not None:
            if text.lower() in stated.lower() or cd in _calendar_dates(stated):
                continue
            days, months = _day_lengths((sources_text, question, response or claim))
            dates = sorted(_calendar_dates(stated) | _calendar_dates(response or claim) - {cd})
            if (how := date_derivation(cd, dates, days, months)) is not None:
                out.derived.append(how)
            else:
                out.problems.append(f"date {text!r} is not in the sources")
        elif is_date_entity(text, label) and not durations(text) and (d := parse_date(text)) is not None:
            # ("35 days" is a duration spaCy tags as a date: the duration check's)
            if text.lower() not in stated.lower() and d not in _source_dates(stated):
                out.problems.append(f"date {text!r} is not in the sources")
        elif label in ENTITY_LABELS and names:
            name = _norm_entity(text)
            if not name or name in lowered or name.upper() in ZONE_AND_CURRENCY_CODES:
                continue
            # A one-word name that the sources use as a word ("Refunds" where they say "refund"): a
            # capitalised common word, not an unknown name.
            if " " not in name and _stem(name) in stated_words:
                continue
            out.problems.append(f"{label.lower()} {text!r} is not in the sources")
    return out


def fact_mismatches(claim: str, sources_text: str, language: str = "en",
                    entities: tuple[tuple[str, str], ...] = (), question: str = "", response: str = "") -> list[str]:
    """The problems of `fact_findings`: what in the claim the sources (and the question) do not back."""
    return fact_findings(claim, sources_text, language, entities, question, response).problems
