"""Numbers and dates an answer derives from stated ones: "$15 each, so three would be $45".

A faithful answer does arithmetic on what the sources and the customer state (3 x $15 = $45; 5% of
$2,000 = $100; $7,500 - $4,200 = $3,300; 60 days after March 3 = May 2). A number or date that no source
states is supported when one operation on two numbers the answer or the question states gives it, in a
compatible unit; the verdict then shows the operation. A wrong sum is still flagged: its result is not
what the operation on the stated numbers gives.

- Operands are the numbers the answer itself and the question state (the answer has to show what it
  computes from), each with its kind read from the words around it: money (a currency sign or word),
  percent, a count of something ("8 numbers", "3 requests"), or bare. The operands' own support is
  checked like every other number of the answer: a wrong operand is flagged where it stands.
- Operations: a + b, a - b (same kind), a x b and a / b (one side a count or bare: how many), p% of a,
  and a less or more p%. 0, 1 and bare years are no operands, and the operands are the ones near the
  claim (its sentence and the one before, and the question): on long texts with many numbers (SummEdits'
  summaries) any small number is some pair's sum or quotient.
- Conversion factors (12 months, 24 hours, 60 minutes, 7 days, 365 days, 100, 1,000, 3,600) may only be
  the multiplier or divisor, and are accepted as numbers where the answer writes them as an operand
  ("$399 x 12").
- A date is derived when it is a stated date plus or minus a stated duration in days, weeks or months
  (business days need a calendar, and are not computed).
Nothing here knows a domain: the kinds come from currency signs, "%" and the word after a number.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from functools import lru_cache

FACTORS = (12.0, 24.0, 60.0, 7.0, 52.0, 365.0, 100.0, 1000.0, 3600.0)
_CURRENCY_BEFORE = re.compile(r"(?:[$€£₽¥]|\b(?:usd|eur|gbp|rub|us\$)\s?)\s?-?$", re.I)
_CURRENCY_AFTER = re.compile(r"^\s?(?:[₽€]|(?:dollars?|euros?|pounds?|cents?|rubles?|roubles?|usd|eur|gbp|rub|руб\w*|"
                             r"доллар\w*|евро)\b)", re.I)
_PERCENT_AFTER = re.compile(r"^\s?(?:%|percent\b|per\s+cent\b|процент\w*)", re.I)
_WORD_AFTER = re.compile(r"^\s?(?:-\s?)?([^\W\d_]{2,})", re.UNICODE)
_OPERATOR = re.compile(r"[x×*/÷]\s*$|^\s*[x×*/÷]", re.I)
# Words after a number that say nothing about what it counts.
_NOT_UNITS = {"and", "or", "to", "of", "the", "a", "an", "per", "each", "in", "on", "at", "for", "is", "are", "was",
              "so", "but", "by", "from", "with", "и", "или", "до", "по", "в", "на", "за", "от"}


@dataclass(frozen=True)
class Quantity:
    value: float
    kind: str  # "money" | "percent" | "count" | "bare"
    factor_operand: bool = False  # written next to an arithmetic operator ("x 12")


def kind_at(text: str, start: int, end: int) -> str:
    """The kind of the number text[start:end], read from the characters around it."""
    before, after = text[max(0, start - 6):start], text[end:end + 16]
    if _CURRENCY_BEFORE.search(before) or _CURRENCY_AFTER.match(after):
        return "money"
    if _PERCENT_AFTER.match(after):
        return "percent"
    m = _WORD_AFTER.match(after)
    if m and m.group(1).lower() not in _NOT_UNITS:
        return "count"
    return "bare"


def quantities(text: str, spans: list[tuple[int, int, float]]) -> list[Quantity]:
    """Quantities from (start, end, value) number spans of `text`."""
    return [Quantity(v, kind_at(text, a, b), bool(_OPERATOR.search(text[max(0, a - 3):a])
                                                  or _OPERATOR.match(text[b:b + 3])))
            for a, b, v in spans]


def _compatible(a: str, b: str) -> bool:
    return a == b or "bare" in (a, b) or {a, b} <= {"count", "bare"}


def _close(x: float, t: float) -> bool:
    return math.isfinite(x) and abs(x - t) <= max(0.005, 1e-6 * abs(t))


def _fmt(v: float) -> str:
    return f"{v:,.2f}".rstrip("0").rstrip(".") if v != int(v) else f"{int(v):,}"


def _results(a: Quantity, b: Quantity, kind: str):
    """(value, operation shown) of one operation on a and b whose result may have `kind`."""
    x, y = a.value, b.value
    pa, pb = a.kind == "percent", b.kind == "percent"
    if (not pa and not pb and _compatible(a.kind, kind) and _compatible(b.kind, kind)) or (
            pa and pb and kind in ("percent", "bare")):
        yield x + y, f"{_fmt(x)} + {_fmt(y)}"
        yield x - y, f"{_fmt(x)} - {_fmt(y)}"
    if pa or pb:
        if pb and not pa and _compatible(a.kind, kind):
            yield x * y / 100, f"{_fmt(y)}% of {_fmt(x)}"
            yield x * (1 - y / 100), f"{_fmt(x)} less {_fmt(y)}%"
            yield x * (1 + y / 100), f"{_fmt(x)} plus {_fmt(y)}%"
        return
    if _compatible(a.kind, kind) and b.kind in ("count", "bare"):
        yield x * y, f"{_fmt(x)} x {_fmt(y)}"
        if y:
            yield x / y, f"{_fmt(x)} / {_fmt(y)}"
    if a.kind == b.kind and kind in ("bare", "count") and y:  # a ratio: "365 / 30 is about 12 times"
        yield x / y, f"{_fmt(x)} / {_fmt(y)}"


def _operand(q: Quantity) -> bool:
    """A number arithmetic may start from: not 0 or 1 (x 1, + 0 derive anything from anything) and not a
    bare year ("2021 - 2019 = 2")."""
    return q.value not in (0.0, 1.0) and not (q.kind == "bare" and 1900 <= q.value <= 2100 and q.value == int(q.value))


def derivation(target: float, kind: str, operands: list[Quantity]) -> str | None:
    """How one operation on two of `operands` gives `target` ("3 x 15 = 45"), or None. A conversion
    factor is only ever the multiplier or the divisor."""
    pool = [q for q in operands if not _close(q.value, target) and _operand(q)]
    factors = [Quantity(f, "bare") for f in FACTORS]
    for i, a in enumerate(pool):
        for j, b in enumerate(pool + factors):
            if i == j:
                continue
            for v, shown in _results(a, b, kind):
                if _close(v, target):
                    return f"{shown} = {_fmt(target)}"
    return None


# -- dates --------------------------------------------------------------------------------------------------

_BASE = datetime(2025, 1, 1)  # the year a date without one is read in: fixed, so a verdict never depends on today
_MONTH = re.compile(r"\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\b|\d{1,4}[/.\-]\d{1,2}[/.\-]\d{1,4}",
                    re.I)


@lru_cache(maxsize=4096)
def calendar_date(text: str) -> date | None:
    """A date with a day and a month ("May 2", "2 May 2025", "3/3/2026"); None for anything else. A
    date without a year is read in a fixed year, so two such dates compare as the same year's."""
    if not any(c.isdigit() for c in text) or not _MONTH.search(text):
        return None
    import dateparser

    d = dateparser.parse(text, languages=["en"], settings={"REQUIRE_PARTS": ["day", "month"],
                                                          "RELATIVE_BASE": _BASE,
                                                          "RETURN_AS_TIMEZONE_AWARE": False})
    return d.date() if d else None


def _add_months(d: date, months: int) -> date | None:
    m = d.month - 1 + months
    y, m = d.year + m // 12, m % 12 + 1
    try:
        return d.replace(year=y, month=m)
    except ValueError:
        return None


def date_derivation(target: date, dates: list[date], days: list[float], months: list[int]) -> str | None:
    """How a stated date plus or minus a stated duration gives `target` ("March 3 + 60 days")."""
    for d in dates:
        for n in days:
            for sign, word in ((1, "+"), (-1, "-")):
                if d + timedelta(days=sign * n) == target:
                    return f"{d:%B} {d.day} {word} {n:g} days = {target:%B} {target.day}"
        for k in months:
            for sign, word in ((1, "+"), (-1, "-")):
                if _add_months(d, sign * k) == target:
                    return f"{d:%B} {d.day} {word} {k} months = {target:%B} {target.day}"
    return None
