"""What the `nli` verifier feeds its model: premise windows cut from the sources and hypothesis units cut
from the response, both on sentence boundaries and both measured in the model's own tokens.

- A window is consecutive sentences of one source packed up to a token budget; consecutive windows
  share `overlap` sentences, so a fact that spans a boundary is whole in one of them. A sentence longer
  than the budget is cut at word boundaries into pieces that fit. Windows never cross sources.
- A hypothesis unit is a sentence (pysbd), an atomic claim (the anchors claim splitter: spaCy clauses
  and list items), or the whole response; a unit longer than its budget is cut the same way.
Offsets are character offsets into the original text, so the report can show the failing sentence and
the window it was checked against.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from verifybench.verifiers.anchors.text import Sentence

Counter = Callable[[Sequence[str]], list[int]]  # texts -> tokens of each, without special tokens
_WORD = re.compile(r"\S+")


@dataclass(frozen=True)
class Window:
    text: str
    source_id: str
    start: int
    end: int
    tokens: int  # the sum of its sentences' token counts
    index: int  # position among its source's windows


@dataclass(frozen=True)
class Piece:
    """A hypothesis unit: `text` is what the model reads (a claim may borrow its sentence's subject),
    `start`/`end` locate it in the response; `part` is (i, n) when a long unit was cut into n pieces."""

    text: str
    start: int
    end: int
    tokens: int
    part: tuple[int, int] | None = None


def split_long(text: str, start: int, end: int, count: Counter, budget: int) -> list[tuple[int, int, int]]:
    """(start, end, tokens) pieces of text[start:end], cut between words, each at most `budget` tokens
    (a single word longer than that stays whole: the model's own truncation then cuts it, and counts it)."""
    words = [(m.start(), m.end()) for m in _WORD.finditer(text, start, end)]
    if not words:
        return []
    counts = count([text[a:b] for a, b in words])
    out: list[tuple[int, int, int]] = []
    lo, hi, total = None, start, 0  # hi is set at the first word
    for (a, b), c in zip(words, counts):
        if lo is not None and total + c > budget:
            out.append((lo, hi, total))
            lo, total = None, 0
        if lo is None:
            lo = a
        hi, total = b, total + c
    assert lo is not None  # set at the first word, and words is not empty
    out.append((lo, hi, total))
    return out


def pack_windows(text: str, source_id: str, sentences: list[Sentence], counts: list[int], budget: int,
                 overlap: int = 1, max_sentences: int | None = None, count: Counter | None = None) -> list[Window]:
    """Sentences of one source packed into windows of at most `budget` tokens (and `max_sentences`)."""
    units: list[tuple[int, int, int]] = []
    for s, c in zip(sentences, counts):
        if c > budget and count is not None:
            units.extend(split_long(text, s.start, s.end, count, budget))
        else:
            units.append((s.start, s.end, c))
    out: list[Window] = []
    i = 0
    while i < len(units):
        j, total = i, 0
        while j < len(units) and (j == i or (total + units[j][2] <= budget
                                             and (max_sentences is None or j - i < max_sentences))):
            total += units[j][2]
            j += 1
        start, end = units[i][0], units[j - 1][1]
        out.append(Window(text[start:end], source_id, start, end, total, len(out)))
        if j >= len(units):
            break
        i = max(i + 1, j - overlap)
    return out


def cut_pieces(text: str, spans: list[tuple[str, int, int]], counts: list[int], budget: int,
               count: Counter) -> list[Piece]:
    """Hypothesis units from (text to score, start, end) spans; a unit over `budget` tokens is cut."""
    out: list[Piece] = []
    for (scored, start, end), c in zip(spans, counts):
        if c <= budget:
            out.append(Piece(scored, start, end, c))
            continue
        parts = split_long(text, start, end, count, budget)
        for k, (a, b, n) in enumerate(parts):
            out.append(Piece(text[a:b], a, b, n, (k + 1, len(parts))))
    return out
