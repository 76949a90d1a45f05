"""Features the local decision model reads: MiniLM embeddings plus cheap text signals.

MiniLM sees at most 256 word pieces, so an instruction at the end of a long table would be cut off:
text is first cut into windows of whole lines (long lines at sentence ends) of at most
`WINDOW_WORDS` words, and each window is embedded. Injection is judged per window (a unit's answer is
its worst window); pair questions (relevance, contradiction, citation) use the unit's window that is
closest to the other side.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np

from verifybench.verifiers.anchors.encoders import CachedEncoder, make_encoder

WINDOW_WORDS = 120
_SENT = re.compile(r"(?<=[.!?])\s+")
_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9'_-]*")
_NUM = re.compile(r"\d+(?:[.,]\d+)?")
STOP = frozenset("""a an the of to in on for and or is are was were be been by with as at from that this it its
which who what when where why how do does did not no yes i you he she they we his her their our your my me
than then so but if into about over after before up down out can could would should will shall may might""".split())
NEGATIONS = frozenset("not no never none nobody nothing neither nor cannot without "
                      "isn't wasn't aren't don't doesn't didn't won't".split())

# Words that address the reader as an agent to be steered; their rate is a cheap injection signal.
STEER = ("ignore", "disregard", "instead", "instruction", "instructions", "prompt", "system", "assistant",
         "respond", "response", "reply", "answer", "output", "print", "say", "write", "include", "add",
         "must", "always", "never", "pretend", "roleplay", "act", "forget", "override", "access", "granted",
         "password", "reveal", "repeat", "translate", "encode", "base64", "language", "model", "ai", "user")
TEXT_FEATURES = ("log_words", "you_rate", "your_rate", "steer_rate", "imperative_start", "code_fence",
                 "url", "upper_rate", "nonascii_rate", "punct_rate", "line_count", "bracket_tag",
                 *(f"kw_{w}" for w in ("ignore", "instruction", "respond", "your_response", "access_granted",
                                        "previous", "following")))
PAIR_FEATURES = ("cos", "unit_in_premise", "premise_in_unit", "numbers_missing", "premise_numbers_missing",
                 "numbers_present",
                 "negation_diff", "log_len_ratio")
IMPERATIVES = frozenset("""add answer append ask begin change check convert create delete describe do ensure explain
forget give ignore include insert list make output please pretend print provide put remember repeat reply
respond return reveal rewrite say send shift show start stop summarize tell translate use write""".split())


@dataclass(frozen=True)
class Window:
    text: str
    start: int
    end: int


def windows(text: str, max_words: int = WINDOW_WORDS) -> list[Window]:
    """Consecutive pieces of `text` (character offsets kept) of at most about `max_words` words."""
    pieces: list[tuple[int, int]] = []
    pos = 0
    for line in text.splitlines(keepends=True):
        start, pos = pos, pos + len(line)
        if len(line.split()) <= max_words:
            pieces.append((start, pos))
            continue
        s = start
        for m in _SENT.finditer(line):
            pieces.append((s, start + m.end()))
            s = start + m.end()
        pieces.append((s, pos))
    out: list[Window] = []
    cur_start, cur_end, cur_words = None, 0, 0  # cur_end is read only while cur_start is set
    for s, e in pieces:
        n = len(text[s:e].split())
        if n == 0:
            if cur_start is not None:
                cur_end = e
            continue
        if cur_start is not None and cur_words + n > max_words:
            out.append(Window(text[cur_start:cur_end], cur_start, cur_end))
            cur_start, cur_words = None, 0
        if n > max_words:  # one sentence longer than a window: hard-cut by words
            words = list(re.finditer(r"\S+", text[s:e]))
            for i in range(0, len(words), max_words):
                chunk = words[i:i + max_words]
                a, b = s + chunk[0].start(), s + chunk[-1].end()
                out.append(Window(text[a:b], a, b))
            continue
        if cur_start is None:
            cur_start = s
        cur_end, cur_words = e, cur_words + n
    if cur_start is not None:
        out.append(Window(text[cur_start:cur_end], cur_start, cur_end))
    return out or [Window(text, 0, len(text))]


def sentence_pieces(text: str) -> list[str]:
    """The sentences of a text (cut after . ! ? before a blank, and at line ends), blanks dropped."""
    return [p.strip() for line in text.splitlines() for p in _SENT.split(line) if p.strip()]


def _words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text)]


def content_words(text: str) -> set[str]:
    return {w for w in _words(text) if w not in STOP and len(w) > 1}


def text_features(text: str) -> np.ndarray:
    """Cheap signals of text written to steer a model (order: TEXT_FEATURES)."""
    words = _words(text)
    n = max(len(words), 1)
    low = text.lower()
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    first_words = [(_words(ln) or [""])[0] for ln in lines]
    letters = [c for c in text if c.isalpha()]
    return np.array([
        math.log1p(len(words)),
        words.count("you") / n,
        words.count("your") / n,
        sum(w in STEER for w in words) / n,
        sum(w in IMPERATIVES for w in first_words) / max(len(lines), 1),
        float("```" in text),
        float("http" in low or "www." in low),
        sum(c.isupper() for c in letters) / max(len(letters), 1),
        sum(ord(c) > 127 for c in text) / max(len(text), 1),
        sum(c in "!?:;*#=<>[]{}" for c in text) / max(len(text), 1),
        math.log1p(len(lines)),
        float(bool(re.search(r"\[(system|instruction|admin)|<\|?(system|im_start)", low))),
        float("ignore" in low),
        float("instruction" in low),
        float("respond" in low or "reply" in low),
        float("your response" in low or "your answer" in low or "your reply" in low),
        float("access granted" in low),
        float("previous" in low or "above" in low),
        float("following" in low),
    ], dtype=np.float32)


def pair_features(premise: str, unit: str, cos: float) -> np.ndarray:
    """Cheap agreement signals between a premise and a unit (order: PAIR_FEATURES)."""
    p, u = content_words(premise), content_words(unit)
    pn, un = set(_NUM.findall(premise)), set(_NUM.findall(unit))
    neg_p = sum(w in NEGATIONS for w in _words(premise))
    neg_u = sum(w in NEGATIONS for w in _words(unit))
    return np.array([
        cos,
        len(u & p) / max(len(u), 1),
        len(u & p) / max(len(p), 1),
        len(un - pn) / max(len(un), 1) if un else 0.0,
        len(pn - un) / max(len(pn), 1) if pn else 0.0,
        float(bool(un)),
        float(neg_u > 0) - float(neg_p > 0),
        math.log1p(len(unit)) - math.log1p(len(premise)),
    ], dtype=np.float32)


class Featurizer:
    """Turns units into feature rows; embeddings come from a shared, disk-cached MiniLM encoder."""

    def __init__(self, model: str = "minilm", cache_dir: str | None = None, batch_size: int = 64):
        self.model = model
        self.cache_dir = cache_dir
        self.batch_size = batch_size
        self._encoder: CachedEncoder | None = None

    @property
    def encoder(self) -> CachedEncoder:
        if self._encoder is None:
            self._encoder = CachedEncoder(make_encoder(self.model, batch_size=self.batch_size), self.cache_dir)
        return self._encoder

    def embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, 384), dtype=np.float32)
        return self.encoder.encode([t if t.strip() else "(empty)" for t in texts], "passage")

    def injection_rows(self, texts: list[str]) -> np.ndarray:
        """One row per text (a window): embedding, then text features."""
        emb = self.embed(texts)
        cheap = np.stack([text_features(t) for t in texts]) if texts else np.zeros((0, len(TEXT_FEATURES)))
        return np.hstack([emb, cheap]).astype(np.float32)

    def pair_rows(self, premises: list[str], units: list[str]) -> np.ndarray:
        """One row per (premise, unit): p*u, |p-u|, then pair features; the unit's best window is used."""
        unit_windows = [[w.text for w in windows(u)] for u in units]
        flat = [w for ws in unit_windows for w in ws]
        pe = self.embed(premises)
        we = self.embed(flat)
        rows, k = [], 0
        for i, ws in enumerate(unit_windows):
            block = we[k:k + len(ws)]
            k += len(ws)
            sims = block @ pe[i]
            j = int(np.argmax(sims))
            u = block[j]
            rows.append(np.hstack([pe[i] * u, np.abs(pe[i] - u),
                                   pair_features(premises[i], units[i], float(sims[j]))]))
        if not rows:
            return np.zeros((0, 2 * 384 + len(PAIR_FEATURES)), dtype=np.float32)
        return np.stack(rows).astype(np.float32)

    def __getstate__(self):
        return {**self.__dict__, "_encoder": None}
