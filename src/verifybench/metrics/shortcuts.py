"""Shortcut test: can the labels be guessed from surface cues alone?

Two trivial scores per case, computed from text only: the response's length, and the share of its words
that appear in none of the sources ("novelty"). If either separates hallucinated from faithful cases
with AUROC >= 0.75 (in either direction), the benchmark rewards that cue, and a verifier's good number
on it may be the cue's, not the method's. (On HaluEval QA, novelty alone gives about 0.9.)
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from verifybench.metrics.curves import auroc

WARN_AT = 0.75
CUES = ("length", "novelty")
_WORD = re.compile(r"\w+", re.UNICODE)


def surface_cues(response: str, sources: list[str]) -> dict[str, float]:
    """The two trivial scores of one case."""
    words = _WORD.findall(response.lower())
    known = set(_WORD.findall(" ".join(sources).lower()))
    novelty = sum(w not in known for w in words) / len(words) if words else 0.0
    return {"length": float(len(response)), "novelty": novelty}


def cue_auroc(y_true: ArrayLike, cue_values: ArrayLike) -> dict[str, float]:
    """AUROC of a cue, and its strength: max(AUROC, 1 - AUROC), since a cue may point either way."""
    a = auroc(y_true, cue_values)
    return {"auroc": a, "strength": max(a, 1 - a) if not np.isnan(a) else float("nan")}


def shortcut_report(y_true: Sequence[Any], cues: dict[str, list[float]], warn_at: float = WARN_AT) -> dict:
    """Per cue: AUROC and strength; `warnings` names each cue at or above `warn_at`."""
    out: dict = {"cues": {}, "warnings": []}
    for name, values in cues.items():
        if len(values) != len(y_true) or any(v is None for v in values):
            continue
        r = cue_auroc(y_true, values)
        out["cues"][name] = r
        if r["strength"] >= warn_at:
            # The strength in the direction named: "lower length means hallucinated" at AUROC 0.11 is a cue
            # of AUROC 0.89 when shorter is read as more likely hallucinated.
            direction = "higher" if r["auroc"] >= 0.5 else "lower"
            out["warnings"].append(
                f"labels are guessable from response {name}: a {direction} {name} means hallucinated "
                f"(AUROC {r['strength']:.2f} from this cue alone, taking {direction} {name} as more likely "
                "hallucinated)")
    return out
