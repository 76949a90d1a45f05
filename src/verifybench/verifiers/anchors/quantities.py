"""English quantities the anchors fact checks compare by meaning, not by digits: times of day with their
zone, durations, and the words that look like numbers but are not quantities; and contractions, so that
"can't" and "cannot" are one negation.

- A time of day ("5 pm ET", "5:00 p.m. Eastern", "17:00 ET", "noon") is minutes after midnight plus a
  zone family (ET = EST = EDT = Eastern; PT, CT, MT, UTC = GMT, CET = CEST, ...). A claim's time must be
  one of the sources' times: the same minute, and the same zone when both name one ("9 am to 5 pm ET":
  the range's zone applies to both ends). "2:00" with no am/pm may be 2 am or 2 pm.
- A duration ("a week", "7 days", "48 hours", "half an hour", "two-week", "3 to 5 business days") is a
  length in seconds (a month is 30 days, a year 365), kept apart for business/working days. A claim's
  duration must be one of the sources' durations: "a week" = "7 days", "48 hours" = "2 days".
  "a month" after a price ("$12 a month") or in "twice a week" is a rate, not a duration, and is not
  checked; nor is an age ("30 years old").
- Number words that are not quantities ("once", "one of", "each one", "no one", "the one you ordered")
  are not numbers to check.
Numbers inside a time or a duration are checked as that, not again as bare numbers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

# -- contractions -----------------------------------------------------------------------------------------

_CONTRACTIONS = [(re.compile(p, re.I), r) for p, r in [
    (r"\bcan[\u2019']t\b", "can not"), (r"\bwon[\u2019']t\b", "will not"), (r"\bshan[\u2019']t\b", "shall not"),
    (r"\bain[\u2019']t\b", "is not"), (r"\bcannot\b", "can not"), (r"n[\u2019']t\b", " not"),
]]


def expand_contractions(text: str) -> str:
    """"can't" / "cannot" -> "can not", "isn't" -> "is not", "won't" -> "will not" (straight or curly
    apostrophe): one spelling of each negation, whatever the writer chose."""
    if "'" not in text and "\u2019" not in text and "annot" not in text.lower():
        return text
    for pattern, repl in _CONTRACTIONS:
        text = pattern.sub(repl, text)
    return text


# Phrases with a negation word that negate nothing: "at no cost" is "for free", "no later than 5 pm" is
# "by 5 pm", "not only ... but" adds.
_NEGATION_IDIOMS = re.compile(
    r"\b(?:at\s+)?no\s+(?:extra\s+|additional\s+)?(?:cost|charge|fee)s?\b|\bno\s+(?:later|earlier|more|less)\s+than\b|"
    r"\bnot\s+only\b|\bno\s+(?:problem|worries|matter)\b|\bnothing\s+but\b|\bnone\s+other\s+than\b|"
    r"\b(?:shall|will|does|do|must|may|can|to)\s+not\s+exceed\b|\bnot\s+(?:more|later|earlier)\s+than\b",
    re.I)


def drop_negation_idioms(text: str) -> str:
    return _NEGATION_IDIOMS.sub(" ", text) if _NEGATION_IDIOMS.search(text) else text


def _stem(word: str) -> str:
    """Plural and common suffixes off ("refunded" = "refundable" = "refund"), enough to see that two
    clauses talk about the same thing."""
    if len(word) <= 4:
        return word
    w = re.sub(r"(?:ing|ed|able|ible|ably|ation|ion|ment|es|s|e)$", "", word)
    return w[:-1] if len(w) > 3 and w[-1] == w[-2] else w


def same_topic(a: set[str], b: set[str], need: int = 2) -> bool:
    """Two clauses share at least `need` content words (stemmed), or as many as the first has when it has
    fewer. A clause with no content word but numbers and units ("after 30 days") has no polarity of its own."""
    a = {w for w in a if w.isalpha() and w.rstrip("s") not in UNITS}
    need = min(need, len(a))
    return need > 0 and len({_stem(w) for w in a} & {_stem(w) for w in b}) >= need


# -- times of day -----------------------------------------------------------------------------------------

ZONES = {
    "et": "ET", "est": "ET", "edt": "ET", "eastern": "ET", "pt": "PT", "pst": "PT", "pdt": "PT", "pacific": "PT",
    "ct": "CT", "cst": "CT", "cdt": "CT", "central": "CT", "mt": "MT", "mst": "MT", "mdt": "MT", "mountain": "MT",
    "utc": "UTC", "gmt": "UTC", "z": "UTC", "cet": "CET", "cest": "CET", "bst": "BST", "ist": "IST", "jst": "JST",
    "aest": "AET", "aedt": "AET", "eet": "EET", "eest": "EET", "wet": "WET", "msk": "MSK", "sgt": "SGT",
    "hkt": "HKT", "kst": "KST", "akst": "AKT", "hst": "HST",
}
_ZONE = r"(?:\s*\(?\s*(?P<zone>" + "|".join(sorted((z for z in ZONES if len(z) > 1), key=len, reverse=True)) + \
    r")\b(?:\s+time)?\)?)?"
_AMPM = r"(?P<ampm>a\.?\s?m\b\.?|p\.?\s?m\b\.?)"
_TIME = re.compile(
    r"(?<![\w:.,$])(?:(?P<h>\d{1,2})(?::(?P<m>[0-5]\d))?\s*" + _AMPM + "|(?P<h24>[01]?\\d|2[0-3]):(?P<m24>[0-5]\\d)(?![\\d:])"
    r"(?!\s*(?:a\.?\s?m|p\.?\s?m)\b)|(?P<word>noon|midday|midnight))" + _ZONE, re.I)
_RANGE_JOIN = re.compile(r"^\s*(?:-|\u2013|\u2014|to|until|till|through|and)\s*$", re.I)


@dataclass(frozen=True)
class TimeOfDay:
    text: str
    minutes: frozenset[int]  # minutes after midnight it may mean ("2:00": 120 or 840)
    zone: str | None
    start: int
    end: int

    def matches(self, other: TimeOfDay) -> bool:
        return bool(self.minutes & other.minutes) and (self.zone is None or other.zone is None or self.zone == other.zone)


@lru_cache(maxsize=4096)
def times_of_day(text: str) -> tuple[TimeOfDay, ...]:
    """Every time of day in `text`; a time without a zone takes the zone of the range it opens ("9 am to
    5 pm ET")."""
    found = []
    for m in _TIME.finditer(text):
        if m.group("word"):
            mins = {12 * 60} if m.group("word").lower() in ("noon", "midday") else {0}
        elif m.group("h") is not None:
            h, mm = int(m.group("h")), int(m.group("m") or 0)
            if not 1 <= h <= 12:
                continue
            pm = m.group("ampm").lower().startswith("p")
            mins = {((h % 12) + (12 if pm else 0)) * 60 + mm}
        else:
            h, mm = int(m.group("h24")), int(m.group("m24"))
            mins = {h * 60 + mm}
            if 1 <= h <= 11 and not m.group("h24").startswith("0"):
                mins.add((h + 12) * 60 + mm)  # "2:00" with no am/pm: 2 am or 2 pm
        zone = m.group("zone")
        found.append(TimeOfDay(m.group().strip(), frozenset(mins), ZONES[zone.lower()] if zone else None,
                               m.start(), m.end()))
    out = list(found)
    for i in range(len(out) - 2, -1, -1):  # zones flow backwards over a range: "9 am to 5 pm ET"
        a, b = out[i], out[i + 1]
        if a.zone is None and b.zone is not None and _RANGE_JOIN.match(text[a.end:b.start]):
            out[i] = TimeOfDay(a.text, a.minutes, b.zone, a.start, a.end)
    return tuple(out)


# -- durations --------------------------------------------------------------------------------------------

UNITS = {"millisecond": 0.001, "ms": 0.001, "second": 1, "sec": 1, "s": 1,
         "minute": 60, "min": 60, "hour": 3600, "hr": 3600, "day": 86400,
         "week": 7 * 86400, "fortnight": 14 * 86400, "month": 30 * 86400, "year": 365 * 86400}
NUMBER_WORDS = {
    "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10,
    "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17,
    "eighteen": 18, "nineteen": 19, "twenty": 20, "thirty": 30, "forty": 40, "forty-five": 45, "fifty": 50,
    "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90, "hundred": 100, "a": 1, "an": 1, "a couple of": 2,
    "a few": 3, "several": 3, "half a": 0.5, "half an": 0.5, "a half": 0.5, "a quarter of an": 0.25,
    "a quarter of a": 0.25, "a quarter": 0.25,
}
_VAGUE = {"a few", "several", "a couple of"}  # not exact: such a duration is not checked
_NUM = (r"(?P<n>\d+(?:[.,]\d+)?|" + "|".join(sorted((re.escape(w) for w in NUMBER_WORDS), key=len, reverse=True))
        + r")")
_UNIT = r"(?P<biz>business\s+|working\s+|calendar\s+)?(?P<unit>" + "|".join(sorted(UNITS, key=len, reverse=True)) + r")s?\b"
_DURATION = re.compile(
    r"(?<![\w$.])(?:(?P<n0>\d+(?:[.,]\d+)?|" + "|".join(sorted((re.escape(w) for w in NUMBER_WORDS if " " not in w
                                                                and w not in ("a", "an")), key=len, reverse=True))
    + r")\s*(?:-|\u2013|to|or|and)\s*)?" + _NUM + r"(?:\s*-\s*|\s+)(?:and\s+a\s+half\s+)?" + _UNIT
    + r"(?P<age>(?:-|\s+)old\b)?", re.I)
# "a"/"an" + unit is a duration only in a duration's context; "$12 a month", "twice a week" are rates.
_DURATION_CONTEXT = re.compile(
    r"(?:\b(?:within|for|in|after|about|around|over|under|up\s+to|than|last|lasts|lasted|take|takes|took|wait|"
    r"waited|give\s+it|spend|spent|nearly|almost|roughly|approximately|only|least|most|another)"
    r"|[(,])\s*$", re.I)
_RATE_BEFORE = re.compile(r"(?:\b(?:per|each|every|once|twice|thrice|times)|\d|\b(?:user|seat|month|day|week|year|"
                          r"hour|emails?|requests?|messages?|codes?|calls?))\s*$", re.I)
_AFTER_DURATION = re.compile(r"^\s*(?:ago|later|earlier|before|after|from\s+now|of|long|old|left)\b", re.I)


@dataclass(frozen=True)
class Duration:
    text: str
    seconds: frozenset[float]  # one value, or both ends of a range ("3 to 5 business days")
    business: bool
    start: int
    end: int

    def matches(self, other: Duration) -> bool:
        return self.business == other.business and bool(
            {round(s, 3) for s in self.seconds} & {round(s, 3) for s in other.seconds})


def _value(raw: str) -> float | None:
    raw = raw.lower()
    if raw in NUMBER_WORDS:
        return float(NUMBER_WORDS[raw])
    try:
        return float(raw.replace(",", "."))
    except ValueError:
        return None


@lru_cache(maxsize=4096)
def durations(text: str, keep_ages: bool = False) -> tuple[Duration, ...]:
    """Every exact duration in `text` (see the module docstring for what is left out); with `keep_ages`,
    ages too ("more than 5 minutes old" states a length a claim may repeat as "5 minutes")."""
    out = []
    for m in _DURATION.finditer(text):
        n = m.group("n").lower()
        if (m.group("age") and not keep_ages) or n in _VAGUE:
            continue
        if n in ("a", "an") and m.group("n0") is None:
            before, after = text[:m.start()], text[m.end():]
            if _RATE_BEFORE.search(before) or not (_DURATION_CONTEXT.search(before) or _AFTER_DURATION.match(after)):
                continue
        v = _value(n)
        if v is None:
            continue
        if re.search(r"and\s+a\s+half", m.group(), re.I):
            v += 0.5
        name = m.group("unit").lower()
        unit = UNITS[name]
        values = {v * unit}
        if m.group("n0") is not None and (v0 := _value(m.group("n0"))) is not None:
            values.add(v0 * unit)
        if name == "year":  # a year is also twelve months ("two years" = "24 months")
            values |= {x / unit * 12 * UNITS["month"] for x in values}
        out.append(Duration(m.group().strip(), frozenset(values), m.group("biz") is not None
                            and not m.group("biz").lower().startswith("calendar"), m.start(), m.end()))
    return tuple(out)


# -- number words that are not quantities -----------------------------------------------------------------

_NOT_QUANTITIES = re.compile(
    r"\bfirst(?=\s*(?:[,.;!?]|$))|\bat\s+first\b|\bfirst\s+of\s+all\b|\b(?:once|one\s+of|one\s+another|one\s+or\s+(?:more|another)|no\s+one|someone|anyone|everyone|"
    r"(?:each|every|any|this|that|which|the|a|the\s+right|the\s+same|another|no|new|old)\s+one|one(?=\s+(?:day|time)\b(?!s)))\b",
    re.I)


# numerizer reads an article as 1 ("a user" -> "1 user"), not only where it means one ("a hundred").
_ARTICLE = re.compile(r"\b(?:a|an)\b(?!\s+(?:hundred|thousand|million|billion|dozen|half|quarter|third)\b)", re.I)


def mask(text: str, spans: list[tuple[int, int]]) -> str:
    """`text` with each (start, end) span blanked (same length, so offsets hold)."""
    chars = list(text)
    for a, b in spans:
        chars[a:b] = " " * (b - a)
    return "".join(chars)


@lru_cache(maxsize=4096)
def plain_number_text(text: str, keep_durations: bool = False) -> str:
    """`text` with its times of day, durations (unless `keep_durations`) and non-quantity number words
    blanked: what is left is checked for bare numbers."""
    spans = [(t.start, t.end) for t in times_of_day(text)]
    if not keep_durations:
        spans += [(d.start, d.end) for d in durations(text)]
    spans += [(m.start(), m.end()) for m in _NOT_QUANTITIES.finditer(text)]
    spans += [(m.start(), m.end()) for m in _ARTICLE.finditer(text)]
    return mask(text, spans) if spans else text


_SENTENCE_END = re.compile(r"(?<=[.;!?])\s+|\n+")


def _unit_beside_number(d: Duration, sources_text: str) -> bool:
    """The sources state the duration's number in a sentence that names its unit elsewhere ("`timeout`
    is in seconds (default 30)" backs "30 seconds"); a number inside a duration of its own ("3 to 5
    business days") is that duration's, not this one's."""
    from verifybench.verifiers.anchors.facts import numbers

    for sentence in _SENTENCE_END.split(sources_text):
        found = numbers(plain_number_text(sentence))
        if not found:
            continue
        names = {w.lower().rstrip("s") for w in re.findall(r"[A-Za-z]+", sentence)}
        for unit, length in UNITS.items():
            if unit in names and any(round(sec / length, 6) in found for sec in d.seconds):
                return True
    return False


def quantity_mismatches(claim: str, sources_text: str, response: str = "") -> list[str]:
    """The claim's times of day and durations that no source states. A duration is also backed by a
    source number whose sentence names the unit, and by the same length said another way in the answer
    when that one is backed ("300 seconds (5 minutes)")."""
    problems = []
    src_times = times_of_day(sources_text)
    for t in times_of_day(claim):
        if not any(t.matches(s) for s in src_times):
            problems.append(f"time {t.text!r} is not in the sources")
    src_durations = durations(sources_text, keep_ages=True)
    backed = [x for x in durations(response) if any(x.matches(s) for s in src_durations)] if response else []
    for d in durations(claim):
        if not any(d.matches(s) for s in src_durations) and not any(d.matches(b) for b in backed) \
                and not _unit_beside_number(d, sources_text):
            problems.append(f"duration {d.text!r} is not in the sources")
    return problems
