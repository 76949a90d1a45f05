"""Binding: a claim's value said of the subject the sources say it of, not merely present somewhere.

Retrieved chunks often hold a related distractor: the same limit for another plan, version or card.
"On v2023-09 a batch holds up to 500 messages" has every item in the sources when the sources say "up to
500 messages per request on v2024-06 and up to 100 on v2023-09"; what is wrong is which one the number
is said of. So each pair of a value of the claim (a number, amount, duration or time) and a term of the
claim (a proper name, an identifier or version, or a two-word term a modifier makes, "credit card"),
both of which the sources hold, is looked up where the sources state the value:

- in a sentence that states the value, the term of the claim's term's kind nearest to the value in the
  parse tree is the one the value is said of (kinds: identifiers, proper names, and two-word terms with
  the same head, "debit card" / "credit card"); the pair is bound when that is the claim's term in some
  such sentence;
- a sentence that names no term of that kind says nothing of whom; then the source that states the
  value decides: bound when it holds the claim's term, not when it names only others of its kind.

A value said only of another term is flagged, naming that term. Nothing here lists plans or products:
the kinds come from the parse and the shapes of words. English only; items the sources do not hold at
all are the fact checks' business. The Russian counterpart is the passage check of
`russian.fact_mismatches`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from verifybench.verifiers.anchors.quantities import UNITS, _stem, durations, mask, times_of_day

_IDENTIFIER = re.compile(r"(?<![\w.-])(?:[A-Za-z][\w.:/-]*(?:\d|_)[\w.:/-]*[A-Za-z0-9]|[a-z]+(?:[._][a-z0-9]+)+)(?![\w-])")
_CODE = re.compile(r"(?<![\w-])\d+(?:-\d+){2,}(?![\w-])")  # phone numbers and the like: not quantities
_NUMBER = re.compile(r"(?<![\w.])\d{1,3}(?:,\d{3})+(?:\.\d+)?(?!\d)|(?<![\w.])\d+(?:\.\d+)?(?![\d])")


@dataclass(frozen=True)
class Item:
    key: str  # "n:45", "d:86400b", "t:1020", "w:credit card"
    kind: str  # "value", or the kind of term: rivals share it (see `items`)
    token: int  # index of its token in the parsed sentence


@lru_cache(maxsize=8192)
def _parse(text: str):
    from verifybench.verifiers.anchors.text import english_pipeline

    return english_pipeline()(text)


def _token_at(doc, char: int) -> int | None:
    for tok in doc:
        if tok.idx <= char < tok.idx + len(tok.text):
            return tok.i
    return None


def _shape(word: str) -> str:
    return re.sub(r"[a-z]+", "a", re.sub(r"\d+", "9", word.lower()))


@lru_cache(maxsize=8192)
def items(text: str) -> tuple[Item, ...]:
    """The values and terms of one sentence (or claim), each with its token. Terms of one kind are the
    alternatives a value may be said of: identifiers of one shape ("v2023-09", "v2024-06"), names and
    two-word terms with the same last word ("Cash Rewards Visa", "Voyager Visa"; "debit card", "credit
    card"), and one-word names ("Growth", "Scale")."""
    doc = _parse(text)
    out: list[Item] = []
    ids = [(m.start(), m.end()) for m in _IDENTIFIER.finditer(text)]
    ids += [(m.start(), m.end()) for m in _CODE.finditer(text)]
    for a, b in ids:
        if (t := _token_at(doc, a)) is not None and _IDENTIFIER.fullmatch(text[a:b]):
            out.append(Item(f"w:{text[a:b].lower()}", f"id:{_shape(text[a:b])}", t))
    quantities = [(d.start, d.end, f"d:{min(d.seconds):g}{'b' if d.business else ''}")
                  for d in durations(text, keep_ages=True)]
    quantities += [(t.start, t.end, f"t:{min(t.minutes)}") for t in times_of_day(text)]
    for a, _, key in quantities:
        if (t := _token_at(doc, a)) is not None:
            out.append(Item(key, "value", t))
    rest = mask(text, ids + [(a, b) for a, b, _ in quantities])
    for m in _NUMBER.finditer(rest):
        if (t := _token_at(doc, m.start())) is not None:
            out.append(Item(f"n:{float(m.group().replace(',', '')):g}", "value", t))
    taken = {i.token for i in out}
    i = 0
    while i < len(doc):
        tok = doc[i]
        if tok.i in taken or not tok.is_alpha or tok.is_stop:
            i += 1
            continue
        if tok.pos_ == "PROPN" and tok.ent_type_ not in ("DATE", "TIME", "MONEY", "CARDINAL"):
            j = i
            while j + 1 < len(doc) and doc[j + 1].pos_ == "PROPN" and doc[j + 1].is_alpha and j + 1 not in taken:
                j += 1
            words = [_stem(t.lower_) for t in doc[i:j + 1]]
            if len(words) > 1:  # a one-word name has no kind to find its rivals by
                out.append(Item("w:" + " ".join(words), f"head:{words[-1]}", j))
            i = j + 1
            continue
        if (tok.dep_ in ("compound", "amod") and tok.head.i == tok.i + 1 and tok.head.pos_ in ("NOUN", "PROPN")
                and tok.head.lower_.rstrip("s") not in UNITS):  # "business days" is the duration's
            head = _stem(tok.head.lower_)
            out.append(Item(f"w:{_stem(tok.lower_)} {head}", f"head:{head}", tok.head.i))
        i += 1
    return tuple(out)


def _words(key: str) -> set[str]:
    return set(key.removeprefix("w:").split())


def _same(a: str, b: str) -> bool:
    """One term is the other, or a shorter name of it ("Plus" and "Harbor Plus Checking")."""
    wa, wb = _words(a), _words(b)
    return wa <= wb or wb <= wa


def _distance(doc, a: int, b: int) -> int:
    up_a = [a] + [t.i for t in doc[a].ancestors]
    up_b = [b] + [t.i for t in doc[b].ancestors]
    common = set(up_a) & set(up_b)
    if not common:
        return 10_000
    return min(up_a.index(c) + up_b.index(c) for c in common)


@lru_cache(maxsize=4096)
def _source_sentences(text: str) -> tuple[str, ...]:
    from verifybench.verifiers.anchors.text import sentences

    return tuple(s.text for s in sentences(text))


def _owner(value: str, kind: str, sentence: str, claim_words: frozenset[str]) -> set[str] | None:
    """The terms of `kind` nearest to `value` in `sentence`'s parse (a term whose words the claim says
    too is no rival); None when the sentence does not state the value or names no such term."""
    found = items(sentence)
    at = [i.token for i in found if i.key == value]
    rivals = [i for i in found if i.kind == kind]
    if not at or not rivals:
        return None
    doc = _parse(sentence)
    # Near in the parse tree and in the text ("up to 500 on v2024-06 and up to 100 on v2023-09": the small
    # model's parse alone may hang both numbers on one version; "Scale keys 200": the text alone decides).
    dist = {i.key: min(_distance(doc, t, i.token) + abs(t - i.token) for t in at) for i in rivals}
    best = min(dist.values())
    return {k for k, d in dist.items() if d == best}


def _bound(value: str, term: Item, sources: list[str], claim_keys: frozenset[str]) -> tuple[bool, str | None]:
    """Whether the sources say `value` of `term` (and, when not, of which other term)."""
    other = None
    undecided = []
    for src in sources:
        for sent in _source_sentences(src):
            owners = _owner(value, term.kind, sent, claim_keys)
            if owners is None:
                if any(i.key == value for i in items(sent)):
                    undecided.append(src)
                continue
            if any(_same(term.key, o) or _words(o) <= claim_keys for o in owners):
                return True, None
            other = other or sorted(owners)[0]
    for src in undecided:  # the value's sentence names no term of the kind: its source decides
        keys = {i.key for s in _source_sentences(src) for i in items(s) if i.kind == term.kind}
        if not keys or any(_same(term.key, k) for k in keys):
            return True, None
        other = other or sorted(keys)[0]
    return other is None, other


def unbound(claim: str, sources: list[str]) -> list[str]:
    """A problem for a value of the claim that the sources say of another term than the claim does."""
    mine = items(claim)
    source_keys = {i.key for s in sources for sent in _source_sentences(s) for i in items(sent)}
    claim_keys = frozenset(_stem(w) for w in re.findall(r"[a-z0-9]+", claim.lower()))
    values = sorted({i.key for i in mine if i.kind == "value" and i.key in source_keys})
    terms = {i.key: i for i in mine if i.kind != "value"
             and any(_same(i.key, k) for k in source_keys if k[0] == "w")}
    for v in values:
        for term in terms.values():
            ok, other = _bound(v, term, sources, claim_keys)
            if not ok:
                return [f"{v[2:]} is said of '{other[2:] if other else '?'}' in the sources, not of '{term.key[2:]}'"]
    return []
