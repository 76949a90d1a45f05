"""The project's own decision model: small linear heads over MiniLM + text features, in plain numpy.

Each question has one head fitted by `python -m verifybench.training.decision` (standardise, logistic regression, then a Platt
sigmoid fitted on a calibration fold the regression never saw), stored as JSON in `params/`. Applying a
head is a dot product, so after the embeddings (cached) a decision costs microseconds.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import numpy as np

from verifybench.verifiers.decision.features import Featurizer, sentence_pieces, windows

PARAMS_DIR = Path(__file__).parent / "params"
DEFAULT_PARAMS = PARAMS_DIR / "local-v1.json"


@dataclass
class LinearHead:
    """Standardise -> linear -> softmax (k classes) or sigmoid (binary), then Platt scaling if fitted."""

    classes: list[str]
    mean: np.ndarray
    scale: np.ndarray
    coef: np.ndarray  # (k, d); one row for a binary head (the positive class last in `classes`)
    intercept: np.ndarray
    platt: tuple[float, float] | None = None
    threshold: float | None = None
    info: dict = field(default_factory=dict)
    # The abstention band (binary heads): P(positive) in [low, high] is answered "cannot determine";
    # fitted on the calibration fold with the threshold (`python -m verifybench.training.decision`).
    abstain: dict | None = None
    # The context contradiction head only: how pair answers become a unit's answer (`combine_context`),
    # {"min_relevance", "threshold", ...}, fitted on calibration cases by the training command.
    gate: dict | None = None

    @classmethod
    def from_dict(cls, d: dict) -> LinearHead:
        return cls(d["classes"], np.asarray(d["mean"], np.float32), np.asarray(d["scale"], np.float32),
                   np.atleast_2d(np.asarray(d["coef"], np.float32)), np.asarray(d["intercept"], np.float32),
                   tuple(d["platt"]) if d.get("platt") else None, d.get("threshold"), d.get("info", {}),
                   d.get("abstain"), d.get("gate"))

    def to_dict(self) -> dict:
        r = lambda a: np.round(np.asarray(a, np.float64), 6).tolist()  # noqa: E731 - six digits are plenty
        return {"classes": self.classes, "mean": r(self.mean), "scale": r(self.scale), "coef": r(self.coef),
                "intercept": r(self.intercept), "platt": list(self.platt) if self.platt else None,
                "threshold": self.threshold, "info": self.info, **({"abstain": self.abstain} if self.abstain else {}),
                **({"gate": self.gate} if self.gate else {})}

    def decision(self, X: np.ndarray) -> np.ndarray:
        return ((X - self.mean) / self.scale) @ self.coef.T + self.intercept

    def proba(self, X: np.ndarray) -> np.ndarray:
        """(n, len(classes)) probabilities."""
        z = self.decision(X)
        if self.coef.shape[0] == 1:
            z = z[:, 0]
            if self.platt is not None:
                a, b = self.platt
                z = a * z + b
            p = 1.0 / (1.0 + np.exp(-z))
            return np.stack([1.0 - p, p], axis=1)
        z = z - z.max(axis=1, keepdims=True)
        e = np.exp(z)
        return e / e.sum(axis=1, keepdims=True)


def combine_context(p: np.ndarray, relevance: np.ndarray, min_relevance: float) -> list[tuple[float | None, int | None]]:
    """One case's context units: `p[a, b]` = P(unit a contradicts the question + unit b), `relevance[a]`
    the unit's relevance to the question. Contradiction is symmetric, so a pair's score is the mean of
    its two readings; it counts only when both units are about the question (relevance >=
    `min_relevance`). Per unit: the highest such score and the unit it is against; (None, None) when
    no other unit of the case qualifies (nothing about the same thing to contradict)."""
    n = len(relevance)
    out: list[tuple[float | None, int | None]] = []
    for a in range(n):
        best: tuple[float | None, int | None] = (None, None)
        for b in range(n):
            if b == a or min(relevance[a], relevance[b]) < min_relevance:
                continue
            score = float(p[a, b] + p[b, a]) / 2.0
            if best[0] is None or score > best[0]:
                best = (score, b)
        out.append(best)
    return out


def pieces(text: str) -> list[str]:
    """A text's windows, and the sentences of each window that holds more than one (distinct texts)."""
    out: list[str] = []
    for w in windows(text):
        out.append(w.text)
        parts = sentence_pieces(w.text)
        if len(parts) > 1:
            out += parts
    return list(dict.fromkeys(out))


class LocalDecisionModel:
    """Answers the four typed questions offline; contradiction has two heads (an answer against the question
    and context; a chunk or tool result against the question and another unit). Picklable; params and
    MiniLM load on first use."""

    def __init__(self, params: str | Path | None = None, featurizer: Featurizer | None = None,
                 heads: dict[str, LinearHead] | None = None):
        """`heads`: heads in memory instead of the params file's (the training command, fitting one)."""
        self.params_path = Path(params) if params else DEFAULT_PARAMS
        self.featurizer = featurizer or Featurizer()
        if heads is not None:
            self.__dict__["heads"] = heads  # the cached property's value: the file is never read

    @cached_property
    def heads(self) -> dict[str, LinearHead]:
        try:
            raw = json.loads(self.params_path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise FileNotFoundError(
                f"{self.params_path}: no fitted decision model; run python -m verifybench.training.decision"
            ) from None
        return {name: LinearHead.from_dict(d) for name, d in raw["heads"].items()}

    def threshold(self, question: str) -> float | None:
        return self.heads[question].threshold

    def abstain_band(self, question: str) -> tuple[float, float] | None:
        """[low, high] of P(positive) where the head answers "cannot determine"; None: never abstains."""
        band = self.heads[question].abstain
        return (float(band["low"]), float(band["high"])) if band else None

    def region_accuracy(self, question: str, p: float) -> float | None:
        """The calibration fold's accuracy where `p` falls (below, inside or above the band)."""
        band = self.heads[question].abstain
        if not band:
            return None
        region = "below" if p < band["low"] else "above" if p > band["high"] else "inside"
        return band["accuracy"][region]

    def injection(self, texts: list[str], by_sentence: bool = False) -> list[float]:
        """P(the text holds instructions addressed to the model): the highest of its windows. With
        `by_sentence`, each sentence of a window that holds several is read on its own too: one
        instruction among honest sentences no longer hides in their window's embedding."""
        spans = [pieces(t) if by_sentence else [w.text for w in windows(t)] for t in texts]
        flat = [w for ws in spans for w in ws]
        if not flat:
            return []
        p = self.heads["injection"].proba(self.featurizer.injection_rows(flat))[:, 1]
        out, k = [], 0
        for ws in spans:
            out.append(float(p[k:k + len(ws)].max()))
            k += len(ws)
        return out

    def relevance(self, questions: list[str], texts: list[str]) -> np.ndarray:
        """(n, levels) probabilities of each relevance level (0 = unrelated ... top = answers it)."""
        if not texts:
            return np.zeros((0, len(self.heads["relevance"].classes)))
        return self.heads["relevance"].proba(self.featurizer.pair_rows(questions, texts))

    def contradiction(self, premises: list[str], texts: list[str]) -> list[float]:
        """P(the text contradicts the premise)."""
        if not texts:
            return []
        return self.heads["contradiction"].proba(self.featurizer.pair_rows(premises, texts))[:, 1].tolist()

    def context_contradiction(self, premises: list[str], texts: list[str]) -> list[float]:
        """P(a context unit contradicts the premise: the question and one other unit of the case)."""
        if not texts:
            return []
        return self.heads["context_contradiction"].proba(self.featurizer.pair_rows(premises, texts))[:, 1].tolist()

    def citation(self, claims: list[str], evidence: list[str]) -> list[float]:
        """P(the cited evidence does NOT support the claim)."""
        if not claims:
            return []
        return self.heads["citation"].proba(self.featurizer.pair_rows(claims, evidence))[:, 1].tolist()

    def __getstate__(self):
        state = dict(self.__dict__)
        state.pop("heads", None)
        return state
