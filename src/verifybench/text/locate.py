"""Where a piece of text sits in a response: gold spans given as strings, a judge's quoted claim.

Both sides of a span metric are character offsets [start, end) into the response, so text has to be
turned into offsets once, with a rule anyone can check:
- a gold span given as a string is located exactly and only where it occurs once: a string found
  nowhere, or found more than once, is counted (`GoldSpans.not_found`, `.ambiguous`), never guessed;
- a model's quote (the judge's offending claim) is located exactly (once), then fuzzily: the window of
  the response most similar to the quote, both lower-cased (rapidfuzz's `partial_ratio_alignment`:
  windows as long as the quote, so on a short quote one character is a large share), kept only at a
  similarity of at least `MIN_SIMILARITY` (0-100, rapidfuzz's scale). Otherwise it is not localized,
  with the reason, and stays a unit without offsets.

Several annotators' spans are merged character by character: `union` (marked by any annotator) or
`majority` (marked by more than half of them).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

MIN_SIMILARITY = 90.0  # a quote differing by about one character in ten is still the same text
MERGES = ("union", "majority")


def occurrences(text: str, needle: str, most: int = 2) -> list[int]:
    """Start offsets of `needle` in `text`, overlapping ones included, at most `most` of them."""
    out: list[int] = []
    i = text.find(needle)
    while i >= 0 and len(out) < most:
        out.append(i)
        i = text.find(needle, i + 1)
    return out


def merge(intervals: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Sorted, disjoint intervals covering the same characters (overlapping or touching ones joined)."""
    out: list[list[int]] = []
    for s, e in sorted(intervals):
        if e <= s:
            continue
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return [(s, e) for s, e in out]


def majority(per_annotator: list[list[tuple[int, int]]]) -> list[tuple[int, int]]:
    """The characters marked by more than half of the annotators, as sorted disjoint intervals."""
    need = len(per_annotator) // 2 + 1
    events: dict[int, int] = {}
    for spans in per_annotator:
        for s, e in merge(spans):  # an annotator's own overlaps count once
            events[s] = events.get(s, 0) + 1
            events[e] = events.get(e, 0) - 1
    out, depth, start = [], 0, None
    for pos in sorted(events):
        depth += events[pos]
        if depth >= need and start is None:
            start = pos
        elif depth < need and start is not None:
            out.append((start, pos))
            start = None
    return merge(out)


@dataclass
class GoldSpans:
    """Gold spans of one response: located intervals, and how many given strings could not be placed."""

    intervals: list[tuple[int, int]] = field(default_factory=list)
    not_found: int = 0
    ambiguous: int = 0

    @property
    def unlocated(self) -> int:
        return self.not_found + self.ambiguous


class SpanError(ValueError):
    """A gold span that is malformed (not a string or offsets, offsets outside the response)."""


def _one(item: Any, response: str, where: str, out: GoldSpans) -> tuple[int, int] | None:
    if isinstance(item, str) or (isinstance(item, dict) and "start" not in item and isinstance(item.get("text"), str)):
        text = item if isinstance(item, str) else item["text"]
        if not text.strip():
            raise SpanError(f"{where}: an empty span")
        found = occurrences(response, text)
        if not found:
            out.not_found += 1
            return None
        if len(found) > 1:
            out.ambiguous += 1
            return None
        return found[0], found[0] + len(text)
    if isinstance(item, dict):
        start, end = item.get("start"), item.get("end")
    elif isinstance(item, (list, tuple)) and len(item) == 2:
        start, end = item
    else:
        raise SpanError(f"{where}: expected a string, {{start, end}} or [start, end], got {type(item).__name__}")
    if not (isinstance(start, int) and isinstance(end, int)) or isinstance(start, bool) or isinstance(end, bool):
        raise SpanError(f"{where}: start and end must be integers, got {start!r} and {end!r}")
    if not 0 <= start < end <= len(response):
        raise SpanError(f"{where}: [{start}, {end}) is not a span of the {len(response)}-character response")
    text = item.get("text") if isinstance(item, dict) else None
    if isinstance(text, str) and response[start:end] != text:
        raise SpanError(f"{where}: text {text[:40]!r} is not the response's text at [{start}, {end}) "
                        f"({response[start:end][:40]!r})")
    return start, end


def _is_annotators(value: list) -> bool:
    """A list of lists of spans (one per annotator), as opposed to one list of spans, whose items are
    strings, objects or [start, end] pairs of integers."""
    return bool(value) and all(isinstance(v, list) and not (len(v) == 2 and all(isinstance(x, int) for x in v))
                               for v in value)


def gold_spans(value: Any, response: str, merge_by: Literal["union", "majority"] | None = None) -> GoldSpans:
    """Gold spans from a record's field: a list of strings, `{start, end[, text]}` objects or `[start, end]`
    pairs; or, with `merge_by`, a list of such lists, one per annotator. Raises `SpanError` (naming the
    item) for a malformed one."""
    out = GoldSpans()
    if value is None:
        return out
    if isinstance(value, tuple) or type(value).__name__ == "ndarray":
        value = list(value)
    if not isinstance(value, list):
        raise SpanError(f"expected a list of spans, got {type(value).__name__}")
    if _is_annotators(value):
        if merge_by is None:
            raise SpanError(f"holds {len(value)} annotators' lists of spans: say how to merge them with "
                            "`spans_merge: union` or `spans_merge: majority` in the dataset's fields")
        per = [[iv for j, item in enumerate(spans) if (iv := _one(item, response, f"[{i}][{j}]", out))]
               for i, spans in enumerate(value)]
        out.intervals = majority(per) if merge_by == "majority" else merge([iv for p in per for iv in p])
        return out
    out.intervals = merge([iv for j, item in enumerate(value) if (iv := _one(item, response, f"[{j}]", out))])
    return out


@dataclass(frozen=True)
class Located:
    start: int
    end: int
    method: str  # "exact" or "fuzzy"
    similarity: float  # 0-100; 100 for an exact match


def locate_quote(text: str, quote: str, min_similarity: float = MIN_SIMILARITY) -> Located | str:
    """Where a model's quote of `text` sits: exact (once), then the most similar window at
    `min_similarity` or more. Returns the reason when it cannot be placed."""
    q = quote.strip().strip("\"'“”‘’`").strip()
    if not q:
        return "empty quote"
    found = occurrences(text, q)
    if len(found) == 1:
        return Located(found[0], found[0] + len(q), "exact", 100.0)
    if len(found) > 1:
        return "found more than once in the response"

    from rapidfuzz import fuzz

    # Compared lower-cased (where that keeps every offset: a few characters lower-case to two).
    if len(text.lower()) == len(text) and len(q.lower()) == len(q):
        text, q = text.lower(), q.lower()
    if len(q) >= len(text):
        # A quote longer than the response: partial matching would call the response a perfect part of it.
        score = fuzz.ratio(q, text)
        return Located(0, len(text), "fuzzy", score) if score >= min_similarity else \
            f"no part of the response is {min_similarity:g}% similar to it (best {score:.0f}%)"
    best = fuzz.partial_ratio_alignment(q, text)
    if best is None or best.score < min_similarity:
        got = f" (best {best.score:.0f}%)" if best is not None else ""
        return f"no part of the response is {min_similarity:g}% similar to it{got}"
    return Located(best.dest_start, best.dest_end, "fuzzy", float(best.score))
