"""How a consistency model is applied to a long source, as the `nli` verifier does it (SummaC-ZS style).

The premise is cut into windows: its sentences (the anchors splitter, pysbd) packed in order up to a
token budget, consecutive windows sharing `overlap` sentences. The response is cut into claims (the
anchors splitter: sentences, or spaCy clauses). Each claim is paired with every window, or only with
the `top_k` windows the MiniLM embedding ranks closest to it; a claim's support is its best window's
P(entailment), and a response's consistency is the min (or mean) over its claims. The score in the
project's convention (higher = more likely hallucinated) is 1 - consistency.

Training uses the same packing to build its premises, and the development figures are computed with
`score_pairs` below, so a design chosen here carries over to the verifier.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from verifybench.verifiers.anchors.text import claims as split_claims
from verifybench.verifiers.anchors.text import sentences


@dataclass(frozen=True)
class WindowSpec:
    """Premise windows of at most `budget` word pieces (a longer sentence is a window of its own),
    `overlap` sentences shared by consecutive windows; claims by `claims` ("sentences" or "clauses");
    `top_k` windows per claim by embedding similarity (0 = all); `aggregate` over claims."""

    budget: int = 120
    overlap: int = 1
    claims: str = "sentences"
    top_k: int = 0
    aggregate: str = "min"

    def describe(self) -> str:
        k = "all windows" if not self.top_k else f"top-{self.top_k} windows"
        return (f"windows of <= {self.budget} tokens, overlap {self.overlap} sentence(s), {self.claims}, {k}, "
                f"{self.aggregate} over claims")


def pack(sents: Sequence[str], lengths: Sequence[int], budget: int, overlap: int) -> list[tuple[int, int]]:
    """(first, last + 1) sentence indices of each window: greedy packing in order up to `budget` tokens."""
    out: list[tuple[int, int]] = []
    i, n = 0, len(sents)
    while i < n:
        j, total = i, 0
        while j < n and (j == i or total + lengths[j] <= budget):
            total += lengths[j]
            j += 1
        out.append((i, j))
        if j >= n:
            break
        # The next window repeats up to `overlap` sentences, but never so many that its first new
        # sentence (j) no longer fits: a window inside the previous one would only cost time.
        i = max(i + 1, j - overlap)
        while i < j and sum(lengths[i:j + 1]) > budget:
            i += 1
    return out


def premise_windows(text: str, count_tokens: Callable[[list[str]], list[int]], budget: int, overlap: int) -> list[str]:
    sents = [s.text for s in sentences(text)] or [text]
    return [" ".join(sents[a:b]) for a, b in pack(sents, count_tokens(sents), budget, overlap)]


def response_claims(text: str, kind: str) -> list[str]:
    if kind == "clauses":
        out = [c.text for c in split_claims(text)]
    else:
        out = [s.text for s in sentences(text)]
    return [c for c in out if any(ch.isalnum() for ch in c)] or [text]


def score_pairs(premises: Sequence[str], hypotheses: Sequence[str], entail: Callable[[list[tuple[str, str]]], np.ndarray],
                spec: WindowSpec, count_tokens: Callable[[list[str]], list[int]],
                embed: Callable[[list[str]], np.ndarray] | None = None) -> np.ndarray:
    """Hallucination scores (1 - aggregated P(entailment)) for each (premise, hypothesis) case.

    Windows, claims, embeddings and pair scores are memoised by text, as the verifier's cache does
    (SummEdits repeats a document across ten edited summaries, and most of their sentences too).
    `entail` maps a list of (window, claim) pairs to P(entailment) per pair.
    """
    win_memo: dict[str, list[str]] = {}
    claim_memo: dict[str, list[str]] = {}
    per_case: list[list[list[tuple[str, str]]]] = []
    for p, h in zip(premises, hypotheses):
        if p not in win_memo:
            win_memo[p] = premise_windows(p, count_tokens, spec.budget, spec.overlap)
        if h not in claim_memo:
            claim_memo[h] = response_claims(h, spec.claims)
        wins, cls = win_memo[p], claim_memo[h]
        per_case.append([[(w, c) for w in wins] for c in cls])
    if spec.top_k:
        if embed is None:
            raise ValueError("top_k needs an embedding function")
        texts = sorted({t for rows in per_case for row in rows for pair in row for t in pair})
        vec = dict(zip(texts, embed(texts)))
        ranked = []
        for rows in per_case:
            out = []
            for row in rows:
                sims = np.array([float(vec[w] @ vec[c]) for w, c in row])
                keep = np.argsort(-sims, kind="stable")[:spec.top_k]
                out.append([row[i] for i in sorted(keep)])
            ranked.append(out)
        per_case = ranked
    unique = sorted({pair for rows in per_case for row in rows for pair in row})
    prob = dict(zip(unique, entail(unique))) if unique else {}
    scores = np.empty(len(per_case))
    for i, rows in enumerate(per_case):
        support = np.array([max(prob[pair] for pair in row) for row in rows])
        scores[i] = 1.0 - (support.min() if spec.aggregate == "min" else support.mean())
    return scores
