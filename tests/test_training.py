"""Training commands: the data they read (never an evaluation split), the perturbation generators, the
inference windowing mirrored by the development scoring, and the shipped consistency model's hashes."""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path

import numpy as np
import pytest

from verifybench.loaders.halueval import halueval
from verifybench.training import decision, perturb
from verifybench.training.pairs import (
    DataMix,
    Windower,
    build_pairs,
    dev_cases,
    doc_key,
    halueval_rows,
    is_dev,
)
from verifybench.training.windows import WindowSpec, pack, score_pairs

MODEL_DIR = Path(decision.__file__).resolve().parents[1] / "models" / "consistency-minilm"


def words(texts: list[str]) -> list[int]:
    return [len(t.split()) for t in texts]


# ---------- decision training uses the loader's holdout and the metrics layer ----------

def test_decision_rows_come_from_the_loaders_holdout(data_dir):
    qa = data_dir / "halueval" / "qa_data.json"
    test_knowledge = {c.sources[0].text for c in halueval(qa, holdout="test")}
    train = decision.halueval_rows(data_dir, "train", cap=300)
    test = decision.halueval_rows(data_dir, "test", cap=300)
    assert len(train) == len(test) == 300
    assert not {r["knowledge"] for r in train} & test_knowledge
    assert {r["knowledge"] for r in test} <= test_knowledge
    assert all(set(r) == {"question", "knowledge", "right_answer", "hallucinated_answer"} for r in train)
    assert all(r["right_answer"] != r["hallucinated_answer"] for r in train)


def test_decision_thresholds_are_the_metrics_layers_choice():
    y = np.array([1, 1, 0, 1, 0, 0, 0, 1])
    p = np.array([0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2])
    # Max F1: flag the top 4 (tp 3, fp 1, fn 1): F1 0.75, the best on this curve.
    assert decision.pick_threshold(y, p, None) == 0.6
    # Precision >= 0.99 holds only for the top two.
    assert decision.pick_threshold(y, p, 0.99) == 0.8
    # Unreachable precision (weights make every negative count 100x) falls back to max F1.
    w = np.where(y == 1, 1.0, 100.0)
    assert decision.pick_threshold(y, p, 1.01, w) == decision.pick_threshold(y, p, None, w)


# ---------- windows as the nli verifier cuts them ----------

def test_pack_respects_budget_and_overlap():
    sents = ["a b c", "d e", "f g h i", "j", "k l m n o p"]
    wins = pack(sents, words(sents), budget=6, overlap=1)
    assert wins == [(0, 2), (1, 3), (2, 4), (4, 5)]  # "j" alone would sit inside (2, 4)
    for a, b in wins:
        assert b - a == 1 or sum(words(sents[a:b])) <= 6
    # A sentence longer than the budget is a window of its own; nothing is dropped.
    assert pack(["x " * 20], [20], budget=5, overlap=1) == [(0, 1)]
    covered = {i for a, b in pack(sents, words(sents), 3, 0) for i in range(a, b)}
    assert covered == set(range(len(sents)))


def overlap_entail(pairs):
    """A real, simple consistency judge: the share of the claim's words present in the window."""
    out = []
    for window, claim in pairs:
        w = set(window.lower().replace(".", "").split())
        c = claim.lower().replace(".", "").split()
        out.append(sum(x in w for x in c) / len(c))
    return np.array(out)


def test_score_pairs_finds_an_unsupported_claim_after_the_first_window():
    premise = " ".join(f"Sentence number {i} talks about topic {i}." for i in range(12)) + \
        " The committee approved the budget on Friday."
    good = "Sentence number 3 talks about topic 3. The committee approved the budget on Friday."
    bad = "Sentence number 3 talks about topic 3. The committee rejected the budget on Monday."
    spec = WindowSpec(budget=12, overlap=1)
    s = score_pairs([premise, premise], [good, bad], overlap_entail, spec, words)
    assert s[0] == pytest.approx(0.0)  # both claims fully supported by some window (the last one)
    assert s[1] > 0.2
    # Mean over claims is gentler than min: the supported first claim dilutes the failure.
    m = score_pairs([premise], [bad], overlap_entail, WindowSpec(budget=12, overlap=1, aggregate="mean"), words)
    assert 0 < m[0] < s[1]


def test_score_pairs_top_k_uses_the_embedding_ranking():
    premise = "Alpha beta gamma. Delta epsilon zeta. Eta theta iota."
    claim = "Eta theta iota."

    def embed(texts):  # one-hot of the first word: a window ranks first when it starts like the claim
        vocab = sorted({t.split()[0] for t in texts})
        return np.array([[float(t.split()[0] == v) for v in vocab] for t in texts])

    spec = WindowSpec(budget=3, overlap=0, top_k=1)
    assert score_pairs([premise], [claim], overlap_entail, spec, words, embed)[0] == pytest.approx(0.0)
    with pytest.raises(ValueError, match="top_k needs an embedding"):
        score_pairs([premise], [claim], overlap_entail, spec, words)


# ---------- perturbations ----------

@pytest.fixture(scope="module")
def window():
    from verifybench.verifiers.anchors.text import english_pipeline

    return english_pipeline()(
        "Barack Obama met Angela Merkel in Berlin on Monday, March 3, 2014. He said that 12 agreements were "
        "signed. The talks, which lasted three hours, ended early because Merkel had to fly to Paris.")


def test_negatives_change_one_fact(window):
    rng = random.Random(0)
    text = "Barack Obama met Angela Merkel in Berlin on Monday, March 3, 2014."
    swapped = perturb.swap_entity(text, window, {"GPE": ["Madrid"], "PERSON": ["John Smith"]}, rng)
    assert swapped and swapped != text and len(swapped.split()) >= len(text.split()) - 1
    assert perturb.swap_number("He said that 12 agreements were signed.", window, rng) != \
        "He said that 12 agreements were signed."
    date = perturb.swap_date(text, rng)
    assert date != text and ("Monday" not in date or "March" not in date or "2014" not in date)
    assert perturb.swap_pronoun("He said that 12 agreements were signed.", rng).startswith("She said")
    assert perturb.negate("The talks ended early.", rng) in ("The talks did not end early.",)
    assert perturb.negate("The talks were not long.", rng) == "The talks were long."
    assert perturb.negate("Merkel wasn't there.", rng) == "Merkel was there."
    assert perturb.swap_antonym("The talks ended early.", rng) in ("The talks ended late.", "The talks started early.")
    assert perturb.swap_date("No dates here.", rng) is None


def test_positives_are_rewrites_not_copies(window):
    rng = random.Random(1)
    sources = {s.text.strip() for s in window.sents}
    made = [perturb.positive(s, list(window.sents), rng) for s in window.sents for _ in range(5)]
    made = [m for m in made if m]
    assert made
    assert all(text.strip() not in sources for _, text in made)
    assert {k for k, _ in made} <= set(perturb.POSITIVE_KINDS)


def test_answer_style_positives_keep_the_meaning():
    rng = random.Random(0)
    assert perturb.contract("Monthly plans are not refundable.") == "Monthly plans aren't refundable."
    assert perturb.contract("You cannot reissue it.") == "You can't reissue it."
    assert perturb.number_words("It takes 3 days.") == "It takes three days."
    # Never a decimal, a time of day, an ordinal, a percentage or a large number.
    for text in ("It costs 3.5 dollars.", "Open at 9 am.", "The 3rd floor.", "A 5% fee.", "In 2014."):
        assert perturb.number_words(text) is None, text
    assert perturb.same_duration("Refunds take 14 days.") == "Refunds take two weeks."
    styled = perturb.answer_style("Annual plans are not refundable after 7 days.", rng)
    assert "aren't" in styled and "a week" in styled


def test_answer_style_negatives_change_one_fact(window):
    rng = random.Random(0)
    timed = perturb.swap_time("Support closes at 5 pm ET.", rng)
    assert timed and timed != "Support closes at 5 pm ET." and len(timed.split()) == 6
    assert perturb.swap_time("No time here.", rng) is None
    unit = perturb.swap_duration("Refunds arrive within 5 business days.", rng)
    assert unit and unit.startswith("Refunds arrive within 5 ") and "business days" not in unit
    assert perturb.swap_tier("Annual plans can be refunded.", rng) == "Monthly plans can be refunded."
    noun = perturb.swap_noun("The talks ended early.", window, rng)
    assert noun and noun != "The talks ended early." and noun.endswith(" ended early.")
    neg = perturb.negate_answer("The refund is approved.", random.Random(3))
    assert neg in ("The refund is not approved.", "The refund isn't approved.")
    seen = set()
    for seed in range(40):
        made = perturb.answer_negative("Merkel had 12 agreements signed on Monday at 5 pm.", window, {"GPE": ["Rome"]},
                                       ["A foreign sentence about something else."], random.Random(seed))
        assert made and made[1] != "Merkel had 12 agreements signed on Monday at 5 pm."
        seen.add(made[0])
    assert {"number", "date", "time", "negation", "insertion"} <= seen <= set(perturb.ANSWER_NEGATIVE_KINDS)


def test_policy_pairs_paraphrase_the_faithful_claim_and_copy_the_unfaithful_one():
    from verifybench.training import policy

    pairs = policy.policy_pairs(300, seed=5)
    assert pairs == policy.policy_pairs(300, seed=5)  # seeded
    by_group: dict[str, list] = {}
    for p in pairs:
        by_group.setdefault(p.group, []).append(p)
    assert all(sorted(q.label for q in g) == [0, 1] and len({q.premise for q in g}) == 1 for g in by_group.values())
    for p in pairs:
        chunk = {s.strip() for s in p.premise.replace(". ", ".\n").splitlines()}
        assert p.claim not in chunk or p.kind == "policy/near-copy", p  # only a near-copy is the source itself
        if p.kind.startswith("policy/copy-") and p.kind != "policy/copy-negation" \
                and not p.claim.startswith(tuple(policy.FRAMES)):
            # one fact changed in the source's own words: most of its words are some chunk sentence's
            # (a flipped negation is the negated rule's own source form, another sentence)
            best = max(len(set(p.claim.split()) & set(s.split())) / len(set(p.claim.split())) for s in chunk)
            assert best >= 0.5, p
    kinds = {p.kind for p in pairs}
    assert {"policy/paraphrase", "policy/near-copy", "policy/copy-hour", "policy/copy-dur", "policy/copy-group",
            "policy/copy-negation", "policy/copy-addition"} <= kinds
    # The grammar's vocabulary is its own: none of a software help center's words (CONSISTENCY_DEV.md stage 4).
    text = " ".join(p.premise + " " + p.claim for p in pairs).lower()
    assert not {"refund", "subscription", "billing", "account", "plan", "invoice"} & set(text.replace(".", " ").split())


def test_policy_rephrasings_keep_the_fact_and_changes_change_one_slot():
    from verifybench.training import policy

    rng = random.Random(0)
    said = {policy.duration((14, "day"), True, rng) for _ in range(40)}
    assert "two weeks" in said and "fourteen days" in said and said <= {"two weeks", "2 weeks", "fourteen days", "14 days"}
    assert policy.duration((1, "week"), False, rng) == "1 week"
    times = {policy.clock((6, 0, "pm"), True, rng) for _ in range(40)}
    assert {"18:00", "6 in the evening", "6pm"} <= times
    fact = policy.Fact("seniors", 4, "lanes", (48, "hour"), (6, 30, "pm"), "Monday", False)
    for seed in range(20):
        slot, wrong = policy.changed(fact, "hours", policy.DOMAINS["pool"], random.Random(seed))
        diff = {k for k in fact.__dict__ if getattr(fact, k) != getattr(wrong, k)}
        assert len(diff) == 1 and slot in ("hour", "day", "negation")


# ---------- training data never comes from an evaluation split ----------

@pytest.mark.slow  # reads HaluEval summarization and dialogue whole
def test_training_pairs_use_only_the_fit_side(data_dir):
    summ = data_dir / "halueval" / "summarization_data.json"
    fit = halueval_rows(data_dir, "summarization", "fit")
    dev = halueval_rows(data_dir, "summarization", "dev")
    test_docs = {c.sources[0].text for c in halueval(summ, holdout="test")}
    assert fit and dev
    assert not {d for d, _, _ in fit} & test_docs and not {d for d, _, _ in dev} & test_docs
    assert not {d for d, _, _ in fit} & {d for d, _, _ in dev}
    assert all(is_dev(d) for d, _, _ in dev) and not any(is_dev(d) for d, _, _ in fit)

    mix = DataMix(synthetic_windows=15, halueval_summary_rows=5, halueval_dialogue_rows=5, attributionbench_dev=5)
    pairs = build_pairs(data_dir, mix, Windower(words, 60, 1))
    assert {p.label for p in pairs} == {0, 1}
    fit_keys = {doc_key(d) for d, _, _ in fit}
    dial = data_dir / "halueval" / "dialogue_data.json"
    held_out = {doc_key(c.sources[0].text) for f in (summ, dial) for c in halueval(f, holdout="test")}
    held_out |= {doc_key(d) for d, _, _ in dev + halueval_rows(data_dir, "dialogue", "dev")}
    fit_keys |= {doc_key(d) for d, _, _ in halueval_rows(data_dir, "dialogue", "fit")}
    for p in pairs:
        if p.kind.startswith("halueval") or p.kind.startswith("synthetic"):
            assert p.key in fit_keys and p.key not in held_out, p
        else:
            assert p.kind == "attributionbench-dev"
    again = build_pairs(data_dir, mix, Windower(words, 60, 1))
    assert again == pairs  # seeded: the same pairs every time


@pytest.mark.slow  # reads HaluEval QA whole
def test_answer_style_pairs_use_only_the_fit_side_of_qa(data_dir):
    qa = data_dir / "halueval" / "qa_data.json"
    held_out = {doc_key(c.sources[0].text) for c in halueval(qa, holdout="test")}
    held_out |= {doc_key(k) for k, _, _ in halueval_rows(data_dir, "qa", "dev")}
    fit_keys = {doc_key(k) for k, _, _ in halueval_rows(data_dir, "qa", "fit")}
    pairs = build_pairs(data_dir, DataMix(synthetic_windows=0, qa_synthetic_windows=20, halueval_qa_rows=5),
                        Windower(words, 60, 1))
    kinds = {p.kind.split("/")[0] for p in pairs}
    assert kinds == {"answer", "halueval-qa"} and {p.label for p in pairs} == {0, 1}
    assert all(p.key in fit_keys and p.key not in held_out for p in pairs)
    assert sum(p.kind.startswith("halueval-qa") for p in pairs) == 10


def test_dev_sets_are_named_and_disjoint_from_evaluation(data_dir):
    sets = dev_cases(data_dir, halueval_rows_cap=10)
    assert set(sets) == {"halueval-summarization-dev", "summedits-news", "summedits-sales_call"}
    assert len(sets["halueval-summarization-dev"]) == 20
    assert {c.doc_type for c in sets["summedits-news"]} == {"news"}


def test_answer_dev_sets_are_the_support_calibration_split_and_qa_dialogue_dev_slices(data_dir):
    from verifybench.training.pairs import answer_dev_cases

    sets = answer_dev_cases(data_dir, rows_cap=10)
    assert set(sets) == {"support-calibration", "halueval-qa-dev", "halueval-dialogue-dev"}
    assert {c.split for c in sets["support-calibration"]} == {"calibration"}  # the test split is evaluation data
    assert len(sets["support-calibration"]) == 216
    for task in ("qa", "dialogue"):
        cases = sets[f"halueval-{task}-dev"]
        assert len(cases) == 20 and all(is_dev(c.sources[0].text) and c.split == "train" for c in cases)


# ---------- the shipped model is the one its card describes ----------

@pytest.mark.skipif(not (MODEL_DIR / "card.json").exists(), reason="no consistency model committed yet")
def test_shipped_weights_match_the_card():
    card = json.loads((MODEL_DIR / "card.json").read_text(encoding="utf-8"))
    assert "model.safetensors" in card["files"]
    for name, digest in card["files"].items():
        assert hashlib.sha256((MODEL_DIR / name).read_bytes()).hexdigest() == digest, name
    assert (MODEL_DIR / "model.safetensors").stat().st_size <= 50 * 2**20
    readme = (MODEL_DIR / "README.md").read_text(encoding="utf-8")
    assert card["files"]["model.safetensors"] in readme


def test_curriculum_puts_easy_contrasts_and_their_twins_first():
    from verifybench.training.pairs import Pair, curriculum_order

    pairs = [Pair("w1", "a", 1, "synthetic/fusion", "k"), Pair("w1", "b", 0, "synthetic/entity", "k"),
             Pair("w2", "c", 1, "synthetic/clause", "k"), Pair("w2", "d", 0, "synthetic/outside", "k"),
             Pair("w3", "e", 0, "attributionbench-dev", "x")]
    ordered = curriculum_order(pairs)
    assert sorted(ordered, key=id) == sorted(pairs, key=id)  # a permutation: nothing lost or repeated
    assert [p.claim for p in ordered] == ["c", "d", "e", "a", "b"]


def test_curriculum_keeps_twins_together_and_mixes_real_pairs_into_the_hard_phase():
    from verifybench.training.pairs import Pair, curriculum_order

    # Two source sentences of one window: each sentence's twins are grouped on their own.
    pairs = [Pair("w", "a", 1, "synthetic/fusion", "k", "g1"), Pair("w", "b", 0, "synthetic/outside", "k", "g1"),
             Pair("w", "c", 1, "synthetic/clause", "k", "g2"), Pair("w", "d", 0, "synthetic/negation", "k", "g2")]
    pairs += [Pair(f"r{i}", f"x{i}", i % 2, "attributionbench-dev", f"r{i}") for i in range(10)]
    ordered = curriculum_order(pairs, real_in_hard=0.4, rng=random.Random(0))
    assert sorted(ordered, key=id) == sorted(pairs, key=id)
    first = ordered[:2 + 6]  # the easy twins and 6 of the 10 real pairs
    assert {p.claim for p in first} == {"a", "b"} | {f"x{i}" for i in range(4, 10)}
    hard = ordered[8:]
    assert {p.claim for p in hard} == {"c", "d"} | {f"x{i}" for i in range(4)}
    assert curriculum_order(pairs, 0.4, random.Random(0)) == ordered  # seeded


def test_several_pairs_per_window_share_the_parse_and_keep_their_twins(data_dir):
    mix = DataMix(synthetic_windows=8, pairs_per_window=2, curriculum=True)
    pairs = build_pairs(data_dir, mix, Windower(words, 60, 1))
    groups: dict[str, list] = {}
    for p in pairs:
        groups.setdefault(p.group, []).append(p)
    assert len(groups) > 8  # more than one source sentence per window
    assert all(sorted(x.label for x in g) == [0, 1] and len({x.premise for x in g}) == 1 for g in groups.values())


def test_the_timed_schedule_is_linear_on_a_fast_machine_and_ends_at_the_time_cap(monkeypatch):
    import torch

    from verifybench.training import consistency

    clock = [1000.0]
    monkeypatch.setattr(consistency.time, "time", lambda: clock[0])
    opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=1.0)
    sched = consistency.timed_linear(opt, warmup=10, total=110, minutes=10)
    lrs = []
    for _ in range(60):
        opt.step()
        sched.step()
        lrs.append(opt.param_groups[0]["lr"])
    assert lrs[4] == pytest.approx(0.5) and lrs[9] == pytest.approx(1.0)
    assert lrs[59] == pytest.approx(0.5)  # step 60 of 110: the step schedule, no time has passed
    clock[0] += 60 * 7.5  # three quarters of the time cap gone at step 60: time is further along
    opt.step()
    sched.step()
    assert opt.param_groups[0]["lr"] == pytest.approx(0.25)
    clock[0] += 60 * 5
    opt.step()
    sched.step()
    assert opt.param_groups[0]["lr"] == 0.0


def test_held_out_figures_go_into_the_card_as_the_run_reported_them(root, tmp_path):
    """`--held-out RUN_DIR`: a suite run's metrics (AUROC, interval, test balanced accuracy at the fitted
    threshold, per slice) copied into card.json and rendered in README.md; weights and hashes untouched."""
    from verifybench import api
    from verifybench.suite import parse_suite
    from verifybench.training.consistency import main

    suite = parse_suite({"name": "held-demo", "dataset": {"loader": "jsonl", "path": str(root / "datasets/demo/cases.jsonl"),
                                                          "fields": {"split": "split", "doc_type": "doc_type"}},
                         "verifiers": ["rouge", "bleu"], "metrics": {"target": "balanced_accuracy"}},
                        tmp_path, where=str(tmp_path / "held.yaml"))
    api.run(suite, out=tmp_path / "run", progress=False)
    model = tmp_path / "model"
    model.mkdir()
    for name in ("card.json", "README.md"):
        (model / name).write_bytes((MODEL_DIR / name).read_bytes())
    before = json.loads((model / "card.json").read_text(encoding="utf-8"))
    main(["--held-out", str(tmp_path / "run"), "--out", str(model)])
    card = json.loads((model / "card.json").read_text(encoding="utf-8"))
    metrics = json.loads((tmp_path / "run/metrics.json").read_text(encoding="utf-8"))
    got = card["held_out"]["held-demo"]["verifiers"]
    assert set(got) == {"rouge", "bleu"} and card["files"] == before["files"]
    for vid in got:
        m = metrics["verifiers"][vid]["overall"]
        assert got[vid]["all"]["auroc"] == pytest.approx(m["auroc"], abs=1e-4)
        assert got[vid]["all"]["balanced_accuracy_test"] == pytest.approx(m["test"]["balanced_accuracy"], abs=1e-4)
        assert set(got[vid]) == {"all", *metrics["verifiers"][vid]["slices"]}
    readme = (model / "README.md").read_text(encoding="utf-8")
    row = f"| all | rouge | {got['rouge']['all']['n']} | 0 | {got['rouge']['all']['auroc']}"
    assert "### held-demo" in readme and row in readme
    assert card["files"]["model.safetensors"] in readme


def _contrast_groups(pairs: list) -> dict:
    """The pairs by chunk, each chunk checked to be one faithful and one unfaithful claim, the unfaithful
    one never a sentence of its chunk."""
    by_group: dict = {}
    for p in pairs:
        by_group.setdefault(p.group, []).append(p)
    assert all(sorted(q.label for q in g) == [0, 1] for g in by_group.values())
    assert all(p.claim not in p.premise.split(". ") for p in pairs if p.label == 0)
    return by_group


def test_compound_pairs_contrast_one_fact_and_toggle_negation_in_place():
    """v5's data (stage 5): a faithful claim and an unfaithful one per chunk; a negation toggled in place
    changes only the negation."""
    import random

    from verifybench.training.policy import compound_pairs, toggle_negation

    rng = random.Random(0)
    assert toggle_negation("Visitors cannot reserve any tools.", rng) == "Visitors can reserve any tools."
    assert toggle_negation("Seniors can book a lane within 2 days.", rng) in (
        "Seniors cannot book a lane within 2 days.", "Seniors can't book a lane within 2 days.")
    assert toggle_negation("The pool is lovely.", rng) is None
    pairs = compound_pairs(200, seed=1)
    assert len(_contrast_groups(pairs)) > 150
    kinds = {p.kind for p in pairs}
    assert {"compound/negation-in-place", "compound/foreign"} <= kinds


def test_binding_pairs_give_one_subject_the_sibling_subjects_rule():
    """v8's data (stage 8): the chunk states both siblings' rules; the unfaithful claim is one subject with
    the other's rule, so every fact it states is in the chunk, bound to the wrong subject."""
    import random

    from verifybench.training.policy import DOMAINS, Fact, binding_pairs, crossed, sentence

    dom, rng = DOMAINS["library"], random.Random(0)
    a = Fact("adult cardholders", 5, "books", (14, "day"), (6, 0, "pm"), "Monday", False)
    b = Fact("junior cardholders", 2, "magazines", (3, "day"), (4, 0, "pm"), "Friday", True)
    assert sentence("limit", dom, crossed("limit", a, b), False, rng) == "Adult cardholders cannot borrow any books."
    assert crossed("hours", a, b).day == "Monday" and crossed("hours", a, b).neg
    pairs = binding_pairs(300, seed=2)
    by_group = _contrast_groups(pairs)
    assert len(by_group) > 250
    kinds = {p.kind for p in pairs if p.label == 0}
    assert kinds == {"binding/crossed-group", "binding/crossed-group-polarity", "binding/crossed-day",
                     "binding/crossed-day-polarity"}
    # a contrast pair: one premise, two different claims
    for g in by_group.values():
        pos, neg = sorted(g, key=lambda q: -q.label)
        assert pos.premise == neg.premise and pos.claim != neg.claim


def test_a_continued_design_stops_before_training_when_the_support_suite_is_missing(data_dir, tmp_path, monkeypatch):
    """The answer-style figures of a design with a base read evals/support.yaml after training; a run from
    a copy without it would learn that only at the end, so the command checks first and names the file."""
    from verifybench.training import consistency

    missing = tmp_path / "evals" / "support.yaml"
    monkeypatch.setattr(consistency, "SUPPORT_SUITE", missing)
    with pytest.raises(SystemExit, match=f"{missing}: no such suite file"):
        consistency.main(["--config", "v6", "--base", str(tmp_path), "--out", str(tmp_path / "out"),
                          "--data-dir", str(data_dir)])
    assert not (tmp_path / "out").exists()


def test_paired_figures_compare_two_models_on_the_cases_both_scored():
    """`--compare`'s arithmetic: the difference is model - base over the shared case ids, with a paired
    interval around it; a model equal to its base differs by exactly zero."""
    from verifybench.training.consistency import paired_figures

    rng = np.random.default_rng(0)
    y = rng.random(120) < 0.5
    base = {f"c{i}": (bool(t), float(rng.random())) for i, t in enumerate(y)}
    better = {k: (t, s + (0.6 if t else 0.0)) for k, (t, s) in base.items() if k != "c0"}  # one case not scored
    got = paired_figures({"set": base}, {"set": better})["set"]
    assert got["n"] == 119 and got["model"] > got["base"]
    assert got["diff"] == pytest.approx(got["model"] - got["base"], abs=2e-4)
    assert got["ci95"][0] > 0 and got["ci95"][0] <= got["diff"] <= got["ci95"][1] and got["p_value"] < 0.01
    same = paired_figures({"set": base}, {"set": base})["set"]
    assert same["diff"] == 0 and same["ci95"] == [0.0, 0.0]
