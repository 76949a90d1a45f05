"""A claim put in its sources' wording, for a model that reads surface forms (the `nli` option
`source_wording`).

A small consistency model judges "within half an hour" against "within 30 minutes", or "6 pm CET"
against "18:00 CET", as a changed fact: it learned that a changed number is a hallucination. The
anchors parsers (`quantities`) already know when two phrasings are one quantity, so the claim is
rewritten before the model reads it:
each time of day, duration and number word that equals one the sources state (by meaning: the same
minutes and zone, the same length, the same value) takes the sources' words. A quantity no source
states is left as written, so a changed fact stays a changed fact. English only.

Contractions stay as written: spelling "can't" out, as "can not" or as the sources' "cannot", moved
the packaged model's scores both ways at random and cost AUROC on the support calibration split
(docs/measured.md).
"""

from __future__ import annotations

import re

from verifybench.verifiers.anchors.quantities import (
    NUMBER_WORDS,
    Duration,
    TimeOfDay,
    durations,
    plain_number_text,
    times_of_day,
)

_WORDS = {w: v for w, v in NUMBER_WORDS.items() if " " not in w and w not in ("a", "an", "several") and v >= 1}
_NUMBER_WORD = re.compile(r"\b(?:" + "|".join(sorted(map(re.escape, _WORDS), key=len, reverse=True)) + r")\b", re.I)
_DIGITS = re.compile(r"(?<![\w.,:$])\d+(?![\w:]|[.,]\d)")


def _same_time(a: TimeOfDay, b: TimeOfDay) -> bool:
    # "10 am" is the sources' "10:00" (which may be 10 am or 10 pm); "10:00" is not their "10 am".
    return a.minutes <= b.minutes and (a.zone is None or a.zone == b.zone)


def _same_duration(a: Duration, b: Duration) -> bool:
    return a.business == b.business and {round(s, 3) for s in a.seconds} == {round(s, 3) for s in b.seconds}


def in_source_wording(claim: str, sources_text: str) -> str:
    """`claim` with its quantities in the words `sources_text` uses for them (module docstring)."""
    edits: list[tuple[int, int, str]] = []
    src_times = times_of_day(sources_text)
    for t in times_of_day(claim):
        match = next((s for s in src_times if _same_time(t, s)), None)
        if match is not None and match.text != t.text:
            # "6 pm." reads its sentence's full stop as in "p.m.": the stop stays the sentence's.
            stop = "." if t.text.endswith(".") and not match.text.endswith(".") else ""
            edits.append((t.start, t.end, match.text + stop))
    src_durations = durations(sources_text)
    for d in durations(claim):
        same = next((s for s in src_durations if _same_duration(d, s)), None)
        if same is not None and same.text != d.text:
            edits.append((d.start, d.end, same.text))
    # Number words outside the times and durations ("once", "a" and "one of" are not quantities):
    src_numbers = {m.group() for m in _DIGITS.finditer(plain_number_text(sources_text))}
    for m in _NUMBER_WORD.finditer(plain_number_text(claim)):
        digits = str(int(_WORDS[m.group().lower()]))
        if digits in src_numbers:
            edits.append((m.start(), m.end(), digits))
    if not edits:
        return claim
    out, last = [], 0
    for a, b, text in sorted(edits):
        if a < last:  # overlapping finds: the first one wins
            continue
        out.append(claim[last:a])
        out.append(text)
        last = b
    out.append(claim[last:])
    return "".join(out)
