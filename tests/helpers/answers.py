"""Seeded support answers for small-data tests: each answer is a prefix of its source with some words
swapped for others; a hallucinated one swaps more, so rouge and bleu rank the classes imperfectly."""

import numpy as np


def swapped_answers(n: int = 100, seed: int = 44, hallucinated: float = 0.45, faithful: float = 0.25) -> list[dict]:
    """`n` cases `c000`..., alternately faithful (label 0) and hallucinated (label 1), each word of an answer
    swapped with probability `hallucinated` or `faithful`."""
    rng = np.random.default_rng(seed)
    words = [f"w{i}" for i in range(200)]
    out = []
    for i in range(n):
        source = list(rng.choice(words, 20))
        label = i % 2
        answer = source[: int(rng.integers(8, 16))]
        swapped = rng.random(len(answer)) < (hallucinated if label else faithful)
        answer = [str(rng.choice(words)) if s else w for w, s in zip(answer, swapped, strict=True)]
        out.append({"id": f"c{i:03d}", "response": " ".join(answer), "sources": [" ".join(source)], "label": label})
    return out
