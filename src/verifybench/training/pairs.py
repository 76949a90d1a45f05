"""Training pairs (premise window, claim, label) for the consistency model, and the development sets.

Where the data comes from, and what it never touches:

| part | source | side |
|---|---|---|
| synthetic | windows of HaluEval summarization documents and AttributionBench dev evidence, with `perturb`'s faithful rewrites (label 1) and one-fact perturbations (label 0) | HaluEval: the `halueval` loader's `holdout: train` side, less the development slice |
| real, summaries | HaluEval summarization: right-summary sentences (1), hallucinated-summary sentences absent from the right summary (0), each with its best window | same |
| real, dialogue | HaluEval dialogue: knowledge -> right response (1) / hallucinated response (0) | `holdout: train` side of dialogue, less its development slice |
| real, attribution | AttributionBench dev: evidence (best window) -> claim | dev only (test and test_ood are evaluation data) |

Development sets (design choices are made on these only): the development slice of the HaluEval
`holdout: train` side (a second hash of the document, `DEV_SEED`, `DEV_FRACTION`), and the SummEdits
domains in `DEV_DOMAINS`. The HaluEval `holdout: test` side, the other SummEdits domains and
AttributionBench test / test_ood are evaluation data, read by no function here.
"""  # noqa: E501 - a markdown table, one row a line

from __future__ import annotations

import hashlib
import random
import re
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from verifybench.cases import Case
from verifybench.errors import RecordError
from verifybench.loaders.attributionbench import attributionbench
from verifybench.loaders.halueval import halueval
from verifybench.loaders.holdout import hash_fraction
from verifybench.loaders.summedits import summedits
from verifybench.training import perturb
from verifybench.training.windows import pack
from verifybench.verifiers.anchors.text import sentences

# The development slice of HaluEval's train side: a second, independent hash of the source text.
DEV_SEED = 21
DEV_FRACTION = 0.1
# Two SummEdits domains for development: a written genre and a transcript genre. The other six are
# evaluation data.
DEV_DOMAINS = ("news", "sales_call")

WORDS = re.compile(r"\w+")
JOINED = re.compile(r"([a-z0-9)\"])\.([A-Z])")


@dataclass(frozen=True)
class Pair:
    premise: str
    claim: str
    label: int  # 1 = the premise supports the claim (entailment), 0 = it does not
    kind: str   # which generator or data set made it
    key: str    # the source it came from: `doc_key` of a HaluEval document or knowledge, a case id
    group: str = ""  # a synthetic pair's twin group (same window and source sentence): positive and negative


def doc_key(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass
class DataMix:
    """How many pairs of each part to build (a synthetic "window" yields one positive and one negative)."""

    synthetic_windows: int = 1500
    synthetic_attribution_windows: int = 0
    halueval_summary_rows: int = 0
    halueval_summary_negatives: bool = True
    halueval_dialogue_rows: int = 0
    attributionbench_dev: int = 0
    negative_kinds: tuple[str, ...] = perturb.NEGATIVE_KINDS
    curriculum: bool = False  # easy contrasts first (see `curriculum_order`)
    pairs_per_window: int = 1  # source sentences drawn per synthetic window, each giving a positive and a negative
    real_in_hard: float = 0.0  # (curriculum) share of the real pairs kept back and mixed into the minimal-pair phase
    # Stage 3 (answer style): windows of HaluEval QA knowledge with answer-style claims, and real QA pairs.
    qa_synthetic_windows: int = 0
    halueval_qa_rows: int = 0
    answer_style_share: float = 0.7  # of the answer-style positives, the share said with perturb.answer_style
    # Stage 4 (v4): rule facts from `policy`'s grammar, each a paraphrased-vs-copied contrast pair.
    policy_facts: int = 0
    # Stage 5 (v5): chunks of `policy`'s grammar with two-fact claims, in-place negation and foreign facts.
    compound_facts: int = 0
    # Stage 8 (v8): chunks with two rules of one kind on sibling subjects, one subject given the other's rule.
    binding_facts: int = 0
    seed: int = 0
    extra: dict = field(default_factory=dict)


def _cases(stream: Iterable) -> list[Case]:
    out = []
    for c in stream:
        if isinstance(c, RecordError):
            raise SystemExit(f"bad record: {c}")
        out.append(c)
    return out


def is_dev(source_text: str) -> bool:
    return hash_fraction(source_text, seed=DEV_SEED) < DEV_FRACTION


def halueval_rows(data: Path, task: str, side: str) -> list[tuple[str, str, str]]:
    """(source, right output, hallucinated output) of HaluEval `task` rows on the loader's `holdout: train`
    side, `side` = "fit" (training) or "dev" (the development slice)."""
    rows: dict[int, dict] = {}
    for c in _cases(halueval(data / "halueval" / f"{task}_data.json", holdout="train")):
        src = c.sources[0].text
        if is_dev(src) != (side == "dev"):
            continue
        r = rows.setdefault(c.meta["group"], {"src": src})
        r["bad" if c.label else "good"] = c.response
    return [(r["src"], r["good"], r["bad"]) for r in rows.values()]


def dev_cases(data: Path, halueval_rows_cap: int | None = None) -> dict[str, list[Case]]:
    """The development sets: {"halueval-summarization-dev": [...], "summedits-<domain>": [...]}."""
    out: dict[str, list[Case]] = {}
    hal = [c for c in _cases(halueval(data / "halueval" / "summarization_data.json", holdout="train"))
           if is_dev(c.sources[0].text)]
    if halueval_rows_cap:
        groups = list(dict.fromkeys(c.meta["group"] for c in hal))[:halueval_rows_cap]
        keep = set(groups)
        hal = [c for c in hal if c.meta["group"] in keep]
    out["halueval-summarization-dev"] = hal
    for domain in DEV_DOMAINS:
        out[f"summedits-{domain}"] = _cases(summedits(data / "summedits", domains=[domain]))
    return out


# The support set's suite, in the checkout this module runs from (the training command is a checkout's tool).
SUPPORT_SUITE = Path(__file__).resolve().parents[3] / "evals" / "support.yaml"


def answer_dev_cases(data: Path, rows_cap: int | None = None) -> dict[str, list[Case]]:
    """Stage 3's answer-style development sets: the support set's calibration split (the repository's
    datasets/support, through evals/support.yaml's field mapping) and the development slices of HaluEval
    QA and dialogue (the first `rows_cap` rows of each, 2 cases a row). The support test split and
    HaluEval's `holdout: test` side are evaluation data, read by no function here."""
    from verifybench.loaders import iter_cases
    from verifybench.suite import load_suite

    suite = load_suite(SUPPORT_SUITE, data_dir=data)
    out = {"support-calibration": [c for c in iter_cases(suite.dataset) if c.split == "calibration"]}
    for task in ("qa", "dialogue"):
        cases = [c for c in _cases(halueval(data / "halueval" / f"{task}_data.json", holdout="train"))
                 if is_dev(c.sources[0].text)]
        if rows_cap:
            keep = set(list(dict.fromkeys(c.meta["group"] for c in cases))[:rows_cap])
            cases = [c for c in cases if c.meta["group"] in keep]
        out[f"halueval-{task}-dev"] = cases
    return out


class Windower:
    """Premise windows exactly as inference cuts them (`windows.pack` over pysbd sentences)."""

    def __init__(self, count_tokens: Callable[[list[str]], list[int]], budget: int, overlap: int):
        self.count_tokens, self.budget, self.overlap = count_tokens, budget, overlap

    def __call__(self, text: str) -> list[str]:
        sents = [s.text for s in sentences(text)] or [text]
        return [" ".join(sents[a:b]) for a, b in pack(sents, self.count_tokens(sents), self.budget, self.overlap)]


def best_window(windows: list[str], claim: str) -> str:
    """The window sharing the most word types with the claim (cheap; training only)."""
    cw = set(WORDS.findall(claim.lower()))
    return max(windows, key=lambda w: len(cw & set(WORDS.findall(w.lower()))))


def synthetic_pairs(docs: list[tuple[str, str]], n_windows: int, windower: Windower, mix: DataMix,
                    rng: random.Random, progress: Callable | None = None, answer: bool = False) -> list[Pair]:
    """One faithful and one perturbed claim per sampled window of the documents (key, text). With `answer`,
    the claims are answer-style (`perturb.answer_style`, `perturb.answer_negative`) and short windows
    count: a QA knowledge passage is a sentence or three."""
    from verifybench.verifiers.anchors.text import english_pipeline

    nlp = english_pipeline()
    chosen: list[tuple[str, list[str], int]] = []
    order = list(range(len(docs)))
    rng.shuffle(order)
    for i in order:
        if len(chosen) >= n_windows:
            break
        key, text = docs[i]
        wins = windower(text)
        good = [j for j, w in enumerate(wins) if len(w.split()) >= (8 if answer else 25)]
        if good:
            chosen.append((key, wins, rng.choice(good)))
    parsed = list(nlp.pipe([wins[j] for _, wins, j in chosen], batch_size=32))
    pool: dict[str, list[str]] = defaultdict(list)
    for doc in parsed:
        for e in doc.ents:
            if len(pool[e.label_]) < 5000 and any(ch.isalnum() for ch in e.text):
                pool[e.label_].append(e.text)
    out: list[Pair] = []
    for n, ((key, wins, j), doc) in enumerate(zip(chosen, parsed)):
        if progress:
            progress(n)
        sents = [s for s in doc.sents if len(s) >= 6]
        if not sents:
            continue
        # One sentence per window (v1) or several: the window's parse is the costly part, so more
        # sentences per window are more pairs for the same building time.
        picked = [rng.choice(sents)] if mix.pairs_per_window == 1 else rng.sample(sents, min(mix.pairs_per_window, len(sents)))
        for sent in picked:
            made = perturb.positive(sent, list(doc.sents), rng)
            if made is None:
                continue
            pos_kind, pos_text = made
            if answer and rng.random() < mix.answer_style_share:
                pos_text = perturb.answer_style(pos_text, rng)
            # Foreign sentences: from this document outside the window (hard) or from another document.
            outside = [w for k, w in enumerate(wins) if abs(k - j) > 1]
            _, other_wins, _ = chosen[rng.randrange(len(chosen))]
            foreign_src = rng.choice(outside) if outside and rng.random() < 0.5 else rng.choice(other_wins)
            foreign = [s.text for s in sentences(foreign_src) if len(s.text.split()) >= 5]
            neg = (perturb.answer_negative(pos_text, doc, pool, foreign, rng) if answer
                   else perturb.negative(pos_text, doc, pool, foreign, rng, mix.negative_kinds))
            if neg is None:
                continue
            premise = wins[j]
            group = "" if mix.pairs_per_window == 1 else f"{key}:{j}:{sent.start}"
            prefix = "answer" if answer else "synthetic"
            out.append(Pair(premise, pos_text, 1, f"{prefix}/{pos_kind}", key, group))
            out.append(Pair(premise, neg[1], 0, f"{prefix}/{neg[0]}", key, group))
    return out


def summary_pairs(rows: list[tuple[str, str, str]], windower: Windower, with_negatives: bool) -> list[Pair]:
    """Right-summary sentences (1) and hallucinated-summary sentences not in the right summary (0)."""
    out = []
    for doc, good, bad in rows:
        wins = windower(doc)
        good_s = [s.text for s in sentences(good)]
        for s in good_s:
            out.append(Pair(best_window(wins, s), s, 1, "halueval-summary/right", doc_key(doc)))
        if with_negatives:
            known = {g.strip().lower() for g in good_s}
            for s in (x.text for x in sentences(bad)):
                if s.strip().lower() not in known:
                    out.append(Pair(best_window(wins, s), s, 0, "halueval-summary/hallucinated", doc_key(doc)))
    return out


def dialogue_pairs(rows: list[tuple[str, str, str]], task: str = "dialogue") -> list[Pair]:
    """Knowledge -> right output (1) and hallucinated output (0): HaluEval dialogue or QA rows."""
    out = []
    for knowledge, good, bad in rows:
        out.append(Pair(knowledge, good, 1, f"halueval-{task}/right", doc_key(knowledge)))
        out.append(Pair(knowledge, bad, 0, f"halueval-{task}/hallucinated", doc_key(knowledge)))
    return out


def attribution_pairs(cases: list[Case], windower: Windower) -> list[Pair]:
    out = []
    for c in cases:
        evidence = "\n".join(s.text for s in c.sources).strip()
        if not evidence:
            continue
        out.append(Pair(best_window(windower(evidence), c.response), c.response, 0 if c.label else 1,
                        "attributionbench-dev", c.id))
    return out


def build_pairs(data: Path, mix: DataMix, windower: Windower, progress: Callable | None = None) -> list[Pair]:
    """The whole training set for `mix`, shuffled with its seed."""
    rng = random.Random(mix.seed)
    pairs: list[Pair] = []
    summ = halueval_rows(data, "summarization", "fit")
    rng.shuffle(summ)
    # Documents for the synthetic part and rows for the real-summary part never overlap.
    n_real = mix.halueval_summary_rows
    real_rows, synth_docs = summ[:n_real], summ[n_real:]
    if mix.synthetic_windows:
        docs = [(doc_key(d), d) for d, _, _ in synth_docs]
        pairs += synthetic_pairs(docs, mix.synthetic_windows, windower, mix, rng, progress)
    ab = _cases(attributionbench(data / "attributionbench", splits=["dev"])) if (
        mix.attributionbench_dev or mix.synthetic_attribution_windows) else []
    if mix.synthetic_attribution_windows:
        docs = [(c.id, "\n".join(s.text for s in c.sources)) for c in ab]
        pairs += synthetic_pairs(docs, mix.synthetic_attribution_windows, windower, mix, rng)
    if n_real:
        pairs += summary_pairs(real_rows, windower, mix.halueval_summary_negatives)
    if mix.halueval_dialogue_rows:
        dial = halueval_rows(data, "dialogue", "fit")
        rng.shuffle(dial)
        pairs += dialogue_pairs(dial[:mix.halueval_dialogue_rows])
    if mix.attributionbench_dev:
        picked = list(ab)
        rng.shuffle(picked)
        pairs += attribution_pairs(picked[:mix.attributionbench_dev], windower)
    if mix.qa_synthetic_windows or mix.halueval_qa_rows:
        qa = halueval_rows(data, "qa", "fit")
        rng.shuffle(qa)
        # Rows for the real QA pairs and knowledge for the synthetic ones never overlap.
        real_qa, synth_qa = qa[:mix.halueval_qa_rows], qa[mix.halueval_qa_rows:]
        pairs += dialogue_pairs(real_qa, "qa")
        if mix.qa_synthetic_windows:
            # HaluEval QA joins its Wikipedia sentences without a space ("century.First for Women"): the
            # synthetic premises get the space back, so a claim is one sentence, not two run together.
            docs = [(doc_key(k), JOINED.sub(r"\1. \2", k)) for k, _, _ in synth_qa]
            pairs += synthetic_pairs(docs, mix.qa_synthetic_windows, windower, mix, rng, answer=True)
    if mix.policy_facts:
        # policy builds on Pair, so it is imported here, not at the top
        from verifybench.training.policy import policy_pairs

        pairs += policy_pairs(mix.policy_facts, mix.seed)
    if mix.compound_facts:
        from verifybench.training.policy import compound_pairs

        pairs += compound_pairs(mix.compound_facts, mix.seed + 1)
    if mix.binding_facts:
        from verifybench.training.policy import binding_pairs

        pairs += binding_pairs(mix.binding_facts, mix.seed + 2)
    rng.shuffle(pairs)
    return curriculum_order(pairs, mix.real_in_hard, random.Random(mix.seed + 1)) if mix.curriculum else pairs


EASY_NEGATIVES = ("synthetic/outside", "synthetic/insertion", "answer/insertion")
SYNTHETIC = ("synthetic/", "answer/", "policy/")  # kinds made by `synthetic_pairs` (the others are real pairs)


def curriculum_order(pairs: list[Pair], real_in_hard: float = 0.0, rng: random.Random | None = None) -> list[Pair]:
    """Easy contrasts first: the real pairs, and the synthetic twins whose negative is a sentence or
    clause from elsewhere; then the one-fact minimal pairs. A minimal pair's two claims are nearly the
    same input with opposite labels, so before the model can see the changed fact their gradients
    cancel (probes 1-7: the loss stayed at chance). With `real_in_hard`, that share of the real pairs
    is kept back from the first phase and shuffled into the second, so the last steps still see real
    hallucinations (probe 12 lost HaluEval's style signal by ending on minimal pairs only)."""
    easy = {(p.premise, p.group) for p in pairs if p.kind in EASY_NEGATIVES}
    real = [p for p in pairs if not p.kind.startswith(SYNTHETIC)]
    held = {id(p) for p in real[:round(real_in_hard * len(real))]}  # `pairs` is already shuffled
    first = [p for p in pairs if id(p) not in held and (not p.kind.startswith(SYNTHETIC) or (p.premise, p.group) in easy)]
    keep = {id(p) for p in first}
    rest = [p for p in pairs if id(p) not in keep]
    if held:
        (rng or random.Random(0)).shuffle(rest)
    return first + rest
