"""Russian for the anchors method: sentences, atomic claims, facts and negation.

- Sentences and tokens: razdel (pysbd stays for English).
- Claims: slovnet's syntax parser (natasha's packaged navec embeddings and news model, loaded from
  natasha's data folder without importing natasha, whose import needs pymorphy2) splits a sentence at
  coordinated predicates ("стоит 2 000 ₽ в месяц и включает до 10 мест" -> two claims, the second
  borrowing the subject) and lists ("картой, через СБП или по счёту" -> one claim per item); clauses
  joined by ", а", ", но", ", однако", ", зато" or ";" are split even where the parse of an elliptical
  sentence ("Стоимость 92 доллара в месяц, а лимит 10 мест") has no predicate to hang them on.
  Offsets are character offsets into the response.
- Facts (`extract`): numbers in digits and in words ("трёх" = 3, "полторы тысячи" = 1500, "15 тыс." =
  15000), amounts with their currency ("92 доллара" = "$92", "15 000 ₽" = "15 000 рублей", percentages),
  dates ("1 марта", "01.03.2026", months alone), times ("18:00", "до 18 часов", "в 9 вечера"),
  durations ("трёх рабочих дней" = (3, "рабочий день")), weekdays, and names: slovnet's NER (people,
  places, organisations), names in «quotes», Latin-script words (product names, API, CSV). Words are
  compared by their pymorphy3 lemmas, so "Казани" matches "Казань" and "Смирновой" matches "Смирнова".
- Negation: "не", "нет", "ни", "нельзя", "невозможно" and the other "ни"-words (negative concord: "никогда
  не" is one negation), and words with a negative prefix whose remainder is a word of the same part of
  speech ("недоступен" = not "доступен").
"""

from __future__ import annotations

import importlib.util
import os
import re
from dataclasses import dataclass, field
from datetime import date
from functools import lru_cache

from verifybench.verifiers.anchors.derived import Quantity, date_derivation, derivation, quantities
from verifybench.verifiers.anchors.facts import Findings
from verifybench.verifiers.anchors.text import AtomicClaim, Sentence

# -- models (lazy) -----------------------------------------------------------------------------------

BATCH = 64
CACHE_ITEMS = 50_000  # parsed sentences and tagged texts kept between batches
_SYNTAX: dict[tuple[str, ...], tuple[list[int], list[str]]] = {}
_ENTITIES: dict[str, tuple[tuple[str, str], ...]] = {}


def _natasha_data() -> str:
    """natasha's data folder (its navec embeddings and slovnet models), found without importing natasha."""
    spec = importlib.util.find_spec("natasha")
    if spec is None or spec.origin is None:
        raise ImportError("Russian answers need the natasha package (its slovnet models): pip install natasha")
    return os.path.join(os.path.dirname(spec.origin), "data")


@lru_cache(maxsize=1)
def _navec():
    from navec import Navec

    return Navec.load(os.path.join(_natasha_data(), "emb", "navec_news_v1_1B_250K_300d_100q.tar"))


@lru_cache(maxsize=1)
def syntax_parser():
    from slovnet import Syntax

    parser = Syntax.load(os.path.join(_natasha_data(), "model", "slovnet_syntax_news_v1.tar"))
    parser.navec(_navec())
    parser.batch_size = BATCH  # a call costs about as much for 1 sentence as for 8: batch them
    return parser


@lru_cache(maxsize=1)
def ner_tagger():
    from slovnet import NER

    tagger = NER.load(os.path.join(_natasha_data(), "model", "slovnet_ner_news_v1.tar"))
    tagger.navec(_navec())
    tagger.batch_size = BATCH
    return tagger


@lru_cache(maxsize=1)
def morph():
    import pymorphy3

    return pymorphy3.MorphAnalyzer()


@lru_cache(maxsize=200_000)
def _parses(word: str) -> tuple[tuple[str, str, frozenset], ...]:
    """(lemma, part of speech, grammemes) of every reading of a word."""
    return tuple((p.normal_form.replace("ё", "е"), str(p.tag.POS), frozenset(p.tag.grammemes))
                 for p in morph().parse(word))


def lemma(word: str) -> str:
    p = _parses(word.lower())
    return p[0][0] if p else word.lower().replace("ё", "е")


def lemmas(word: str) -> frozenset[str]:
    return frozenset(p[0] for p in _parses(word.lower())) | {word.lower().replace("ё", "е")}


def pos(word: str) -> str:
    p = _parses(word.lower())
    return p[0][1] if p else ""


# -- sentences and tokens ------------------------------------------------------------------------------


def sentences(text: str) -> list[Sentence]:
    """Sentences with offsets (razdel)."""
    from razdel import sentenize

    out = []
    for s in sentenize(text):
        raw = text[s.start:s.stop]
        stripped = raw.strip()
        if stripped:
            start = s.start + (len(raw) - len(raw.lstrip()))
            out.append(Sentence(stripped, start, start + len(stripped)))
    return out


@dataclass(frozen=True)
class Token:
    text: str
    start: int
    end: int


def tokens(text: str, offset: int = 0) -> list[Token]:
    """Tokens with offsets (razdel)."""
    from razdel import tokenize

    return [Token(t.text, t.start + offset, t.stop + offset) for t in tokenize(text)]


_WORDS = re.compile(r"[^\W\d_]+(?:-[^\W\d_]+)*", re.UNICODE)


def words(text: str) -> list[str]:
    return [w.lower() for w in _WORDS.findall(text)]


# -- claims ----------------------------------------------------------------------------------------------

_PREDICATE_POS = {"VERB", "INFN", "PRTS", "ADJS", "PRED"}
_SUBJECT = ("nsubj", "nsubj:pass", "csubj")
_ADVERSATIVE = {"а", "но", "однако", "зато", "причем", "причём"}
_SUBORDINATORS = {"если", "когда", "хотя", "чтобы", "пока", "так", "потому", "поскольку", "раз", "как", "где",
                  "что", "который", "которая", "которое", "которые", "после", "перед", "прежде"}
_JOINERS = {"и", "а", "но", "или", "либо", "однако", "зато", "причем", "причём", "да"}


@dataclass
class _Parsed:
    toks: list[Token]
    head: list[int]  # index of the head token, -1 for the root (or a broken link)
    rel: list[str]
    children: list[list[int]] = field(default_factory=list)

    def __post_init__(self):
        self.children = [[] for _ in self.toks]
        for i, h in enumerate(self.head):
            if h >= 0:
                self.children[h].append(i)

    def subtree(self, i: int, skip: set[int] = frozenset()) -> list[int]:  # type: ignore[assignment]
        out, stack, seen = [], [i], set()
        while stack:
            j = stack.pop()
            if j in seen:
                continue
            seen.add(j)
            out.append(j)
            stack.extend(c for c in self.children[j] if c not in skip)
        return sorted(out)


def _syntax(token_lists: list[tuple[str, ...]]) -> None:
    """Parse, in batches, the sentences (as token tuples) not parsed yet."""
    todo = list(dict.fromkeys(t for t in token_lists if t and t not in _SYNTAX))
    if not todo:
        return
    if len(_SYNTAX) > CACHE_ITEMS:
        _SYNTAX.clear()
    for toks, markup in zip(todo, syntax_parser().map([list(t) for t in todo])):
        ids = {tok.id: k for k, tok in enumerate(markup.tokens)}
        head, rel = [], []
        for k, tok in enumerate(markup.tokens):
            h = ids.get(tok.head_id, -1)
            head.append(-1 if h == k else h)
            rel.append(tok.rel)
        _SYNTAX[toks] = (head, rel)


def _parse(sents: list[Sentence], text: str) -> list[_Parsed]:
    toks = [tokens(text[s.start:s.end], s.start) for s in sents]
    keys = [tuple(t.text for t in ts) for ts in toks]
    _syntax(keys)
    out = []
    for ts, key in zip(toks, keys):
        if not key:
            out.append(_Parsed([], [], []))
            continue
        head, rel = list(_SYNTAX[key][0]), list(_SYNTAX[key][1])
        # A cycle in the parse would make every subtree the whole sentence: cut the link that closes it.
        for k in range(len(head)):
            seen, j = set(), k
            while j >= 0 and j not in seen:
                seen.add(j)
                j = head[j]
            if j >= 0:
                head[j] = -1
        out.append(_Parsed(ts, head, rel))
    return out


def _is_word(t: Token) -> bool:
    return any(c.isalnum() for c in t.text)


def _trim(p: _Parsed, lo: int, hi: int) -> tuple[int, int]:
    """Token range without leading or trailing joiners and punctuation."""
    while lo < hi and (not _is_word(p.toks[lo]) or p.toks[lo].text.lower() in _JOINERS):
        lo += 1
    while hi > lo and (not _is_word(p.toks[hi - 1]) or p.toks[hi - 1].text.lower() in _JOINERS):
        hi -= 1
    return lo, hi


def _quoted(p: _Parsed) -> list[bool]:
    inside, out = False, []
    for t in p.toks:
        if t.text in ("«", "“", "„"):
            inside = True
        elif t.text in ("»", "”"):
            inside = False
        out.append(inside)
    return out


def _predicate(p: _Parsed, i: int) -> bool:
    return (pos(p.toks[i].text) in _PREDICATE_POS
            or any(p.rel[c] in _SUBJECT or p.rel[c] == "cop" for c in p.children[i]))


def _clause_starts(p: _Parsed) -> list[int]:
    """Token indices where a new clause begins."""
    n = len(p.toks)
    quoted = _quoted(p)
    starts: set[int] = set()
    # Lexical: ", а/но/однако/зато" and ";" join clauses, whatever the parse made of an ellipsis.
    for i in range(n - 1):
        t = p.toks[i].text
        nxt = p.toks[i + 1].text.lower()
        if quoted[i]:
            continue
        if t == ";" or (t == "," and nxt in _ADVERSATIVE):
            starts.add(i + 1)
    # Syntactic: coordinated predicates ("стоит ... и включает ...").
    roots = [i for i in range(n) if p.head[i] < 0]
    for r in roots:
        for c in p.children[r]:
            if p.rel[c] in ("conj", "parataxis") and c > r and _predicate(p, c) and not quoted[c]:
                # The clause is the contiguous part of the predicate's subtree left of it (a parse may
                # hang a number of the first clause on the second's object).
                sub, lo = set(p.subtree(c)), c
                while lo - 1 > r and lo - 1 in sub:
                    lo -= 1
                starts.add(lo)
    # Asyndeton: ", он будет ..." after a comma, a clause with a subject of its own, unless the sentence
    # opens with a subordinate clause ("Если ..., он ...") that the main clause completes.
    first = p.toks[0].text.lower() if n else ""
    if first not in _SUBORDINATORS:
        commas = [i for i in range(n) if p.toks[i].text == "," and not quoted[i]]
        for k, i in enumerate(commas):
            hi = commas[k + 1] if k + 1 < len(commas) else n
            seg = range(i + 1, hi)
            if p.toks[i + 1].text.lower() in _SUBORDINATORS | {"который", "которая", "которое", "которые"}:
                continue
            if any(p.rel[j] in ("nsubj", "nsubj:pass") and pos(p.toks[j].text) in ("NOUN", "NPRO")
                   and any(_predicate(p, x) or p.rel[x] == "cop" for x in seg if x != j) for j in seg):
                starts.add(i + 1)
    # A clause keeps at least two words: a lone predicative ("..., нужно") stays with its sentence.
    ordered = sorted(s for s in starts if 0 < s < n)
    # An infinitive needs the modal that follows it ("входить ... не придётся", "входить ... не нужно"):
    # a segment whose only predicate is an infinitive is not cut from the next one.
    for k in range(len(ordered) - 1, -1, -1):
        lo = ordered[k - 1] if k > 0 else 0
        tags = [pos(t.text) for t in p.toks[lo:ordered[k]]]
        if "INFN" in tags and not any(x in _PREDICATE_POS - {"INFN"} for x in tags):
            del ordered[k]
    kept: list[int] = []
    for cut in ordered:
        prev = kept[-1] if kept else 0
        following = next((x for x in ordered if x > cut), n)
        if (sum(_is_word(t) and t.text.lower() not in _JOINERS for t in p.toks[cut:following]) >= 2
                and sum(_is_word(t) and t.text.lower() not in _JOINERS for t in p.toks[prev:cut]) >= 2):
            kept.append(cut)
    return kept


def _subject_text(p: _Parsed, root: int, text: str) -> str | None:
    subj = next((c for c in p.children[root] if p.rel[c] in ("nsubj", "nsubj:pass")), None)
    if subj is None:
        return None
    idx = p.subtree(subj)
    return text[p.toks[idx[0]].start:p.toks[idx[-1]].end]


def _split_list(p: _Parsed, text: str, lo: int, hi: int) -> list[tuple[str, int, int]] | None:
    """One claim per item of a coordinated list of nouns inside tokens lo..hi."""
    for i in range(lo, hi):
        items = [i] + [c for c in p.children[i] if p.rel[c] == "conj" and lo <= c < hi]
        if len(items) < 2 or _predicate(p, i) or any(_predicate(p, c) for c in items[1:]):
            continue
        if pos(p.toks[i].text) not in ("NOUN", "NPRO", "") and not p.toks[i].text[:1].isupper():
            continue
        skip = set(items[1:])
        spans = []
        for k, item in enumerate(items):
            idx = [j for j in p.subtree(item, skip if k == 0 else set()) if lo <= j < hi]
            a, b = _trim(p, min(idx), max(idx) + 1)
            if a >= b:
                return None
            spans.append((a, b))
        first, last = min(a for a, _ in spans), max(b for _, b in spans)
        head = text[p.toks[lo].start:p.toks[first].start]
        tail = text[p.toks[last - 1].end:p.toks[hi - 1].end]
        out = []
        for a, b in spans:
            s, e = p.toks[a].start, p.toks[b - 1].end
            out.append(((head + text[s:e] + tail).strip(), s, e))
        return out
    return None


def claims(text: str, split: bool = True) -> list[AtomicClaim]:
    """Atomic claims of a Russian response, with character offsets into it."""
    sents = sentences(text)
    if not split:
        return [AtomicClaim(s.text, s.start, s.end) for s in sents if any(c.isalnum() for c in s.text)]
    parsed = _parse(sents, text)
    out: list[AtomicClaim] = []
    for p in parsed:
        n = len(p.toks)
        starts = _clause_starts(p)
        bounds = list(zip([0] + starts, starts + [n]))
        roots = [i for i in range(n) if p.head[i] < 0]
        subject = _subject_text(p, roots[0], text) if roots else None
        pieces: list[tuple[str, int, int]] = []
        for k, (lo, hi) in enumerate(bounds):
            a, b = _trim(p, lo, hi)
            if a >= b:
                continue
            s, e = p.toks[a].start, p.toks[b - 1].end
            clause = text[s:e]
            if len(bounds) == 1:
                listed = _split_list(p, text, a, b)
                if listed:
                    pieces.extend(listed)
                    continue
            own_subject = any(p.rel[j] in _SUBJECT for j in range(a, b))
            heads = [j for j in range(a, b) if not (a <= p.head[j] < b)]
            verb_conj = any(p.rel[j] == "conj" and _predicate(p, j) for j in heads)
            if k > 0 and subject and not own_subject and verb_conj and p.toks[lo].text.lower() not in _ADVERSATIVE:
                clause = f"{subject} {clause}"
            pieces.append((clause, s, e))
        for piece, s, e in pieces:
            if any(c.isalnum() for c in piece):
                out.append(AtomicClaim(piece, s, e))
    return out


def tag(texts: list[str]) -> None:
    """Run slovnet's NER, in batches, over the texts not tagged yet."""
    todo = list(dict.fromkeys(t for t in texts if t not in _ENTITIES))
    if not todo:
        return
    if len(_ENTITIES) > CACHE_ITEMS:
        _ENTITIES.clear()
    for text, markup in zip(todo, ner_tagger().map(todo)):
        _ENTITIES[text] = tuple((text[s.start:s.stop], s.type) for s in markup.spans)


def entities(text: str) -> tuple[tuple[str, str], ...]:
    """(text, PER/LOC/ORG) named entities of slovnet's NER."""
    if text not in _ENTITIES:
        tag([text])
    return _ENTITIES[text]


def _mask(text: str) -> str:
    return _TZ.sub(lambda m: " " * len(m.group()), text)


def windows(text: str) -> list[str]:
    """Passages of two consecutive sentences (one, for a one-sentence text)."""
    sents = sentences(text)
    if len(sents) <= 1:
        return [text]
    return [text[sents[i].start:sents[i + 1].end] for i in range(len(sents) - 1)]


def prepare(responses: list[str], sources: list[list[str]], split: bool = True) -> None:
    """Parse and tag what a batch of cases will need in as few model calls as possible: every sentence
    of the responses through the parser, then the claims, the sources and their passages through NER."""
    keys = [tuple(t.text for t in tokens(text[s.start:s.end])) for text in responses for s in sentences(text)]
    _syntax(keys)
    texts = [_mask(c.text) for r in responses for c in claims(r, split)]
    for srcs in sources:
        texts.append(_mask("\n".join(srcs)))
        texts.extend(_mask(w) for t in srcs for w in windows(t))
    tag(texts)


# -- facts -------------------------------------------------------------------------------------------

_UNITS = {"ноль": 0, "один": 1, "два": 2, "три": 3, "четыре": 4, "пять": 5, "шесть": 6, "семь": 7, "восемь": 8,
          "девять": 9, "десять": 10, "одиннадцать": 11, "двенадцать": 12, "тринадцать": 13, "четырнадцать": 14,
          "пятнадцать": 15, "шестнадцать": 16, "семнадцать": 17, "восемнадцать": 18, "девятнадцать": 19,
          "двадцать": 20, "тридцать": 30, "сорок": 40, "пятьдесят": 50, "шестьдесят": 60, "семьдесят": 70,
          "восемьдесят": 80, "девяносто": 90, "сто": 100, "двести": 200, "триста": 300, "четыреста": 400,
          "пятьсот": 500, "шестьсот": 600, "семьсот": 700, "восемьсот": 800, "девятьсот": 900,
          "полтора": 1.5, "полторы": 1.5, "пол": 0.5, "оба": 2, "двое": 2, "трое": 3, "четверо": 4, "пятеро": 5}
_MULTIPLIERS = {"тысяча": 1_000, "тыс": 1_000, "миллион": 1_000_000, "млн": 1_000_000, "миллиард": 1_000_000_000,
                "млрд": 1_000_000_000, "полтысячи": 500}
_ORDINALS = {"первый": 1, "второй": 2, "третий": 3, "четвертый": 4, "пятый": 5, "шестой": 6, "седьмой": 7,
             "восьмой": 8, "девятый": 9, "десятый": 10, "одиннадцатый": 11, "двенадцатый": 12, "тринадцатый": 13,
             "четырнадцатый": 14, "пятнадцатый": 15, "шестнадцатый": 16, "семнадцатый": 17, "восемнадцатый": 18,
             "девятнадцатый": 19, "двадцатый": 20, "тридцатый": 30}
MONTHS = {"январь": 1, "февраль": 2, "март": 3, "апрель": 4, "май": 5, "июнь": 6, "июль": 7, "август": 8,
          "сентябрь": 9, "октябрь": 10, "ноябрь": 11, "декабрь": 12}
_MONTH_GEN = {"января": 1, "февраля": 2, "марта": 3, "апреля": 4, "мая": 5, "июня": 6, "июля": 7, "августа": 8,
              "сентября": 9, "октября": 10, "ноября": 11, "декабря": 12}
WEEKDAYS = ("понедельник", "вторник", "среда", "четверг", "пятница", "суббота", "воскресенье")
_CURRENCIES = {"₽": "RUB", "руб": "RUB", "рубль": "RUB", "р": "RUB", "rub": "RUB", "$": "USD", "доллар": "USD",
               "usd": "USD", "€": "EUR", "евро": "EUR", "eur": "EUR", "%": "%", "процент": "%"}
_DURATION_UNITS = {"секунда": "секунда", "минута": "минута", "час": "час", "сутки": "сутки", "день": "день",
                   "неделя": "неделя", "месяц": "месяц", "год": "год"}
_DAY_KINDS = {"рабочий", "календарный", "банковский"}
_NUMERIC_DATE = re.compile(r"(?<!\d)(\d{1,2})[./](\d{1,2})[./](\d{2,4})(?!\d)")
_TIME = re.compile(r"(?<![\d:])([01]?\d|2[0-4])[:.]([0-5]\d)(?![\d.:]\d)")
_HOUR_WORDS = re.compile(r"\b(с|до|в|к|после|от)\s+(\d{1,2})(?:\s+до\s+(\d{1,2}))?\s+(час\w*|утра|вечера|дня|ночи)",
                         re.I)
_DIGITS = re.compile(r"(?<![\w.,])\d{1,3}(?:[ \u00a0\u202f]\d{3})+(?:[.,]\d+)?(?![\d])|(?<![\w])\d+(?:[.,]\d+)?(?![\d])")
_LATIN = re.compile(r"[A-Za-z][A-Za-z0-9+#.]*[A-Za-z0-9+#]|[A-Z]")
_QUOTED = re.compile(r"«([^»]{1,80})»")
_TZ = re.compile(r"по\s+москве|по\s+московскому(?:\s+времени)?|\bмск\b", re.I)


@dataclass
class Facts:
    """What a text states that an embedding blurs, normalised."""

    numbers: set[float] = field(default_factory=set)
    amounts: set[tuple[float, str]] = field(default_factory=set)
    dates: set[tuple[int, int]] = field(default_factory=set)
    months: set[int] = field(default_factory=set)
    times: set[tuple[int, int]] = field(default_factory=set)
    durations: set[tuple[float, str]] = field(default_factory=set)
    weekdays: set[str] = field(default_factory=set)
    names: list[tuple[str, ...]] = field(default_factory=list)  # each name: its words, lower case
    words: list[str] = field(default_factory=list)  # every word of the text, lower case

    def count(self) -> int:
        return (len(self.numbers) + len(self.amounts) + len(self.dates) + len(self.months) + len(self.times)
                + len(self.durations) + len(self.weekdays) + len(self.names))


def _to_float(raw: str) -> float:
    s = re.sub(r"[ \u00a0\u202f]", "", raw).replace(",", ".")
    return float(s)


@dataclass
class _Num:
    value: float
    start: int
    end: int  # character offsets of the number (with its multiplier)


def _numbers(text: str, spans: list[tuple[int, int]]) -> list[_Num]:
    """Numbers in digits and in words, with multipliers ("15 тыс.", "полторы тысячи")."""
    out: list[_Num] = []
    taken = [False] * len(text)
    for a, b in spans:
        for k in range(a, b):
            taken[k] = True
    for m in _DIGITS.finditer(text):
        if taken[m.start()]:
            continue
        value, end = _to_float(m.group()), m.end()
        mult = re.match(r"\s*(тыс|млн|млрд|тысяч\w*|миллион\w*|миллиард\w*)\b\.?", text[end:], re.I)
        if mult:
            value *= _MULTIPLIERS.get(lemma(mult.group(1)), _MULTIPLIERS.get(mult.group(1).lower(), 1))
            end += mult.end()
        out.append(_Num(value, m.start(), end))
    # Number words: a run of numeral words is one number ("двадцать пять", "полторы тысячи").
    run: list[tuple[float, int, int, bool]] = []  # (value, start, end, is multiplier)

    def close():
        if not run:
            return
        if len(run) == 1 and run[0][0] == 1 and not run[0][3]:
            run.clear()  # a lone "один" is rarely a figure ("в один клик")
            return
        total, current = 0.0, 0.0
        for v, _, _, is_mult in run:
            if is_mult:
                total += (current or 1) * v
                current = 0
            else:
                current += v
        out.append(_Num(total + current, run[0][1], run[-1][2]))
        run.clear()

    for n in out:
        for k in range(n.start, n.end):
            taken[k] = True
    last_end = -1
    for m in _WORDS.finditer(text):
        w = m.group().lower()
        if taken[m.start()]:
            close()
            last_end = -1
            continue
        if last_end >= 0 and text[last_end:m.start()].strip():
            close()
        word_value: float | None = None
        is_mult = False
        for lem, p, _ in _parses(w):
            if lem in _MULTIPLIERS and p in ("NOUN", "NUMR"):
                word_value, is_mult = _MULTIPLIERS[lem], True
                break
            if lem in _UNITS and p in ("NUMR", "NOUN", "ADJF") and (p != "NOUN" or lem in ("сто", "полтора")):
                word_value = _UNITS[lem]
                break
        if w in ("полторы", "полтора", "полутора"):
            word_value, is_mult = 1.5, False
        if word_value is None:
            close()
            last_end = -1
            continue
        run.append((float(word_value), m.start(), m.end(), is_mult))
        last_end = m.end()
    close()
    return sorted(out, key=lambda n: n.start)


def _next_words(text: str, end: int, k: int = 3) -> list[str]:
    return [w.lower() for w in _WORDS.findall(text[end:end + 40])][:k]


def _currency_after(text: str, end: int) -> str | None:
    m = re.match(r"\s*(₽|\$|€|%|руб\.?|р\.|usd|eur|rub|[а-яё]+)", text[end:], re.I)
    if not m:
        return None
    tok = m.group(1).lower().rstrip(".")
    if tok in _CURRENCIES:
        return _CURRENCIES[tok]
    return _CURRENCIES.get(lemma(tok)) if tok.isalpha() else None


@lru_cache(maxsize=8192)
def extract(text: str) -> Facts:
    """The facts of a Russian text (see the module docstring)."""
    f = Facts()
    lowered = text.lower()
    f.words = words(text)
    masked = _mask(text)
    consumed: list[tuple[int, int]] = []
    for m in _NUMERIC_DATE.finditer(masked):
        d, mo, y = int(m.group(1)), int(m.group(2)), int(m.group(3))
        if 1 <= d <= 31 and 1 <= mo <= 12:
            f.dates.add((d, mo))
            f.months.add(mo)
            f.numbers.update({float(d), float(mo), float(y if y > 99 else 2000 + y)})
            consumed.append(m.span())
    for m in _TIME.finditer(masked):
        if any(a <= m.start() < b for a, b in consumed):
            continue
        h, mi = int(m.group(1)), int(m.group(2))
        f.times.add((h % 24, mi))
        f.numbers.update({float(h), float(mi)})
        consumed.append(m.span())
    for m in _HOUR_WORDS.finditer(masked):
        tail = m.group(4).lower()
        shift = 12 if tail in ("вечера", "дня") else 0
        for g in (m.group(2), m.group(3)):
            if g is not None and int(g) <= 24:
                h = int(g)
                f.times.add(((h + shift) % 24 if h < 12 or not shift else h % 24, 0))
    nums = _numbers(masked, consumed)
    for n in nums:
        f.numbers.add(round(n.value, 6))
        before = masked[max(0, n.start - 2):n.start]
        cur = "USD" if "$" in before else "EUR" if "€" in before else _currency_after(masked, n.end)
        nxt = _next_words(masked, n.end)
        if cur is not None:
            f.amounts.add((round(n.value, 6), cur))
        # A day of the month: "1 марта", "15-го марта".
        month_m = re.match(r"(?:-?го)?\s+([а-яё]+)", masked[n.end:])
        if month_m and month_m.group(1).lower() in _MONTH_GEN and 1 <= n.value <= 31 and n.value == int(n.value):
            f.dates.add((int(n.value), _MONTH_GEN[month_m.group(1).lower()]))
        # A duration: the number, an optional kind of day, a unit ("трёх рабочих дней", "2 часа").
        kind = None
        for w in nxt[:2]:
            lem = lemma(w)
            if lem in _DAY_KINDS and kind is None:
                kind = lem
                continue
            unit = next((_DURATION_UNITS[x] for x in lemmas(w) if x in _DURATION_UNITS), None)
            if unit is not None:
                prev = _WORDS.findall(masked[max(0, n.start - 12):n.start])
                is_hour = unit == "час" and prev and prev[-1].lower() in ("с", "до", "в", "к", "после")
                is_year = unit == "год" and n.value >= 1900
                if not is_hour and not is_year:
                    f.durations.add((round(n.value, 6), f"{kind} {unit}" if kind else unit))
            break
    # Ordinal days: "первого марта".
    for m in re.finditer(r"([а-яё]+)\s+(" + "|".join(_MONTH_GEN) + r")\b", lowered):
        lem = lemma(m.group(1))
        if lem in _ORDINALS:
            f.dates.add((_ORDINALS[lem], _MONTH_GEN[m.group(2)]))
    for w in f.words:
        lems = lemmas(w)
        for lem in lems:
            if lem in MONTHS:
                f.months.add(MONTHS[lem])
        wd = next((x for x in lems if x in WEEKDAYS), None)
        if wd:
            f.weekdays.add(wd)
    f.months.update(mo for _, mo in f.dates)
    f.names = _names(text, masked)
    return f


def _names(text: str, masked: str) -> list[tuple[str, ...]]:
    out: list[tuple[str, ...]] = []
    for m in _QUOTED.finditer(text):
        ws = tuple(words(m.group(1)))
        if ws:
            out.append(ws)
    for ent, label in entities(masked):
        if label in ("PER", "LOC", "ORG"):
            ws = tuple(w for w in words(ent) if w not in ("ооо", "ао", "пао", "зао", "ип"))
            if ws and ws not in out:
                out.append(ws)
    seen = {w for n in out for w in n}
    for m in _LATIN.finditer(text):
        w = m.group().lower()
        if len(w) >= 2 and w not in seen:
            out.append((w,))
            seen.add(w)
    return out


def _word_matches(w: str, source_words: list[str], source_lemmas: set[str]) -> bool:
    if w in source_words or lemmas(w) & source_lemmas:
        return True
    # Names pymorphy does not know in every case ("Анне" / "Анна"): a shared stem.
    return len(w) >= 4 and any(len(s) >= 4 and abs(len(s) - len(w)) <= 2
                               and os.path.commonprefix([s, w]) and len(os.path.commonprefix([s, w])) >= len(w) - 2
                               for s in source_words if s[:1] == w[:1])


@lru_cache(maxsize=1024)
def _lemma_set(text: str) -> frozenset[str]:
    return frozenset(x for w in words(text) for x in lemmas(w))


def _missing(claim: Facts, src: Facts, src_text: str) -> list[str]:
    """What of the claim's facts the source does not state, as messages."""
    problems = []
    for n in sorted(claim.numbers - src.numbers):
        problems.append(f"number {n:g} is not in the sources")
    for v, cur in sorted(claim.amounts - src.amounts):
        if v in src.numbers:
            problems.append(f"amount {v:g} {cur} is not in the sources")
    for d, mo in sorted(claim.dates - src.dates):
        problems.append(f"date {d} {list(_MONTH_GEN)[mo - 1]} is not in the sources")
    for mo in sorted(claim.months - src.months):
        if not any(m == mo for _, m in claim.dates - src.dates):
            problems.append(f"month {list(MONTHS)[mo - 1]} is not in the sources")
    if src.times:
        for h, mi in sorted(claim.times - src.times):
            problems.append(f"time {h:02d}:{mi:02d} is not in the sources")
    src_values = {v for v, _ in src.durations}
    for v, unit in sorted(claim.durations - src.durations):
        if v in src_values:
            problems.append(f"duration {v:g} {unit} is not in the sources")
    for wd in sorted(claim.weekdays - src.weekdays):
        problems.append(f"weekday {wd} is not in the sources")
    src_lemmas = set(_lemma_set(src_text))
    for name in claim.names:
        if not all(_word_matches(w, src.words, src_lemmas) for w in name):
            problems.append(f"name {' '.join(name)!r} is not in the sources")
    return problems


def _together(claim: Facts, window: Facts, window_text: str) -> bool:
    lem = set(_lemma_set(window_text))
    return (claim.numbers <= window.numbers and claim.amounts <= window.amounts and claim.dates <= window.dates
            and claim.weekdays <= window.weekdays
            and (not window.times or claim.times <= window.times)
            and all(all(_word_matches(w, window.words, lem) for w in name) for name in claim.names))


def _merged(a: Facts, b: Facts) -> Facts:
    return Facts(a.numbers | b.numbers, a.amounts | b.amounts, a.dates | b.dates, a.months | b.months,
                 a.times | b.times, a.durations | b.durations, a.weekdays | b.weekdays, a.names + b.names,
                 a.words + b.words)


def _operands(*texts: str) -> list[Quantity]:
    """The numbers `texts` state, with their kinds (`derived.kind_at`): what arithmetic may start from."""
    out: list[Quantity] = []
    for text in texts:
        if text:
            masked = _mask(text)
            out += quantities(masked, [(n.start, n.end, round(n.value, 6)) for n in _numbers(masked, [])])
    return out


def _day_lengths(facts: Facts) -> list[int]:
    per_unit = {"день": 1, "сутки": 1, "неделя": 7, "календарный день": 1}
    return sorted({int(v * per_unit[u]) for v, u in facts.durations if u in per_unit and v == int(v)})


def _derive(cf: Facts, claim: str, stated: Facts, pool: list[Quantity], days: list[int]) -> tuple[Facts, list[str]]:
    """The claim's facts less the numbers and dates one operation on stated ones gives, and how."""
    derived: list[str] = []
    masked = _mask(claim)
    spans = {round(n.value, 6): (n.start, n.end) for n in _numbers(masked, [])}
    for n in sorted(cf.numbers - stated.numbers):
        where = spans.get(n)
        kind = quantities(masked, [(*where, n)])[0].kind if where else "bare"
        how = derivation(n, kind, pool)
        if how is not None:
            derived.append(how)
            cf.numbers.discard(n)
            cf.amounts = {a for a in cf.amounts if a[0] != n}
    for d, mo in sorted(cf.dates - stated.dates):
        try:
            target = date(2025, mo, d)
            known = [date(2025, m, x) for x, m in stated.dates]
        except ValueError:
            continue
        how = date_derivation(target, known, [float(k) for k in days], [])
        if how is not None:
            derived.append(how)
            cf.dates.discard((d, mo))
            cf.numbers.discard(float(d))
            if not any(m == mo for _, m in cf.dates):
                cf.months.discard(mo)
    return cf, derived


def fact_findings(claim: str, sources: list[str], question: str = "", response: str = "") -> Findings:
    """What in a Russian claim the sources (and the question) do not back: numbers, amounts, dates, times,
    durations, weekdays and names, less the numbers and dates the answer derives from stated ones
    (`derived`); and, for a claim whose facts from the sources are each there, whether some passage of
    two consecutive sentences states them together (a plan's price given to another plan is not)."""
    out = Findings()
    cf = extract(claim)
    if not cf.count():
        return out
    joined = "\n".join(sources)
    src = extract(joined)
    asked = extract(question) if question else Facts()
    stated = _merged(src, asked)
    cf, out.derived = _derive(cf, claim, stated, _operands(response or claim, question),
                              _day_lengths(_merged(stated, extract(response or claim))))
    out.problems = _missing(cf, stated, f"{joined}\n{question}")
    # What the user said is checked against the question; the passage check is for the sources' facts.
    cf.numbers -= asked.numbers - src.numbers
    cf.amounts -= asked.amounts - src.amounts
    cf.dates -= asked.dates - src.dates
    if out.problems or cf.count() < 2:
        return out
    for text in sources:
        for window in windows(text):
            if _together(cf, extract(window), window):
                return out
    out.problems = ["its facts are not stated together in any passage of the sources"]
    return out


def fact_mismatches(claim: str, sources: list[str], question: str = "", response: str = "") -> list[str]:
    """The problems of `fact_findings`."""
    return fact_findings(claim, sources, question, response).problems


# -- negation ------------------------------------------------------------------------------------------

NEGATIONS = {"не", "нет", "нельзя", "невозможно", "без"}
_NI_WORDS = {"ни", "никогда", "ничего", "ничто", "никто", "нигде", "никуда", "никак", "ниоткуда", "никакой",
             "ничей", "нисколько"}
_NOT_NEGATED = {"несколько", "неделя", "некоторый", "немного", "немало", "нередко", "необходимо", "необходимый",
                "некий", "нечто", "нужно", "нужный", "небо"}


@lru_cache(maxsize=50_000)
def _prefix_negated(word: str) -> bool:
    """'недоступен' (not 'доступен'), 'невозвратный': a 'не' prefix on a word of the same part of speech."""
    w = word.lower()
    if not w.startswith("не") or len(w) < 6 or w in NEGATIONS:
        return False
    p = _parses(w)
    if not p or p[0][0] in _NOT_NEGATED:
        return False
    lem = p[0][0]
    part = _parses(lem)[0][1] if _parses(lem) else p[0][1]
    rest = lem[2:]
    if not lem.startswith("не") or not morph().word_is_known(rest):
        return False
    return any(pp == part for _, pp, _ in _parses(rest))


def negations(text: str) -> int:
    """Negations of a clause: particles and predicatives, prefixes, and 'ни'-words; negative concord
    ('никогда не') counts once."""
    ws = words(text)
    n = sum(w in NEGATIONS for w in ws) + sum(_prefix_negated(w) for w in ws)
    if n == 0 and any(w in _NI_WORDS for w in ws):
        n = 1
    return n


_CLAUSE = re.compile(r"[,;:.!?—]\s|\bа\b|\bно\b|\bхотя\b|\bоднако\b|\bзато\b|\bиначе\b", re.I)


@lru_cache(maxsize=1)
def _stop_words() -> frozenset[str]:
    from spacy.lang.ru.stop_words import STOP_WORDS

    return frozenset(STOP_WORDS) - NEGATIONS - _NI_WORDS - {"нельзя"}


def content_lemmas(text: str) -> set[str]:
    stop = _stop_words()
    return {lemma(w) for w in words(text) if w not in stop and lemma(w) not in stop and w not in NEGATIONS}


def _clauses(text: str) -> list[str]:
    return [p for p in _CLAUSE.split(text) if p and p.strip()]


def polarity_mismatch(claim: str, evidence: list[str]) -> bool:
    """A clause of the claim disagrees in negation with the evidence clause it matches (the one sharing
    most content lemmas, among the claim's best chunks).

    A claim clause without negation whose matched clause has one has dropped it: flagged. A negated
    claim clause whose matched clause has none is flagged only when no clause of the best chunks is
    negated at all, since Russian states one fact either way ("не будет работать" / "будет недоступен")."""
    parts = [p for p in _clauses(claim) if len(content_lemmas(p)) >= 2] or [claim]
    candidates = [c for t in evidence for c in _clauses(t)]
    if not candidates:
        return False
    any_negated = any(negations(c) % 2 for c in candidates)
    for part in parts:
        mine = content_lemmas(part)
        best = max(candidates, key=lambda c: len(mine & content_lemmas(c)))
        if not mine & content_lemmas(best):
            continue
        a, b = negations(part) % 2, negations(best) % 2
        if b and not a:
            return True
        if a and not b and not any_negated:
            return True
    return False


# -- check-worthiness -----------------------------------------------------------------------------------

_PLEASANTRIES = {"здравствуйте", "здравствовать", "добрый", "день", "утро", "вечер", "спасибо", "благодарить",
                 "благодарность", "обращение", "вопрос", "хороший", "рад", "рада", "радый", "помочь", "помощь",
                 "пожалуйста", "обращаться", "писать", "остаться", "понадобиться", "уважаемый", "клиент",
                 "привет", "всего", "доброго", "доброе", "удачи", "приятный", "связь", "оставаться", "ждать",
                 "звонить", "задать", "ответить", "возникнуть", "любой", "ещё", "еще", "пишите"}


def is_pleasantry(claim: str) -> bool:
    """A greeting or a closing formula with no fact in it ("Здравствуйте!", "Хорошего дня!")."""
    cl = content_lemmas(claim)
    return not extract(claim).count() and bool(words(claim)) and cl <= _PLEASANTRIES
