"""Span and pair metrics through a whole run: gold spans from a field-mapped file, units from a verifier,
metrics.json's `spans` and `pairs` entries checked against a reference computed from the run's files."""

import json
import random

import numpy as np
import pytest
from conftest import write
from test_spans_metrics import reference

from verifybench import api
from verifybench.metrics.thresholds import split_roles
from verifybench.rundir import iter_jsonl
from verifybench.suite import parse_suite

SOURCE = "The store opens at nine and closes at five on weekdays and stays closed on public holidays"
NOVEL = ["Sundays", "midnight", "twenty", "free parking", "a cafe", "ten percent off"]


def make_rows(n_groups=90, seed=0):
    rng = random.Random(seed)
    words = SOURCE.split()
    rows = []
    for g in range(n_groups):
        base = " ".join(words[: rng.randint(6, len(words))])
        faithful = base
        if rng.random() < 0.25:  # a harmless new word: the word-novelty verifier's false alarm
            faithful = f"{base} indeed"
        bad = rng.choice(NOVEL)
        cut = rng.randint(2, len(base.split()) - 1)
        hallucinated = " ".join(base.split()[:cut] + [bad] + base.split()[cut:])
        at = hallucinated.index(bad)
        kind = g % 5
        if kind == 0:
            gold = [{"start": at, "end": at + len(bad)}]
        elif kind == 4 and g % 10 == 4:
            gold = ["this text is not in the response"]  # unlocatable: counted, case left out
        else:
            gold = [bad] if hallucinated.count(bad) == 1 else [{"start": at, "end": at + len(bad)}]
        rows.append({"id": f"{g}-f", "response": faithful, "sources": [SOURCE], "label": 0, "pair": g})
        rows.append({"id": f"{g}-h", "response": hallucinated, "sources": [SOURCE], "label": 1, "pair": g,
                     "bad": gold})
    return rows


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("spans")
    data = write(tmp / "cases.jsonl", "".join(json.dumps(r) + "\n" for r in make_rows()))
    suite = parse_suite({"name": "spans", "dataset": {"loader": "jsonl", "path": str(data),
                                                      "fields": {"spans": "bad", "group": "pair"}},
                         "verifiers": ["rouge", {"helpers.span_verifiers:WordNovelty": {"id": "novelty"}}],
                         "metrics": {"min_per_class": 10, "bootstrap": 200}}, tmp)
    api.run(suite, out=tmp / "run", progress=False)
    return tmp / "run"


def _run_files(run):
    cases = list(iter_jsonl(run / "cases.jsonl"))
    verdicts = list(iter_jsonl(run / "results.jsonl"))
    metrics = json.loads((run / "metrics.json").read_text())
    return cases, verdicts, metrics


def test_gold_spans_reach_the_metrics_with_unlocatable_ones_counted(run):
    cases, _, metrics = _run_files(run)
    gold = metrics["spans"]["gold"]
    unlocated = [c for c in cases if c["meta"].get("spans_not_found")]
    assert gold["not_found"] == len(unlocated) == 9 and gold["cases_with_unlocated"] == 9
    assert gold["cases_with_spans"] == sum(1 for c in cases if c.get("spans")) == 81
    ev = metrics["spans"]["evaluated"]
    assert ev["calibration"] + ev["test"] == len(cases) - 9  # the 9 incomplete cases are left out
    assert "spans" not in metrics["verifiers"]["rouge"]  # rouge returns no units: nothing to localize


@pytest.mark.parametrize("at", ["fitted", "every unit"])
def test_span_metrics_match_a_reference_at_the_fitted_unit_threshold(run, at):
    cases, verdicts, metrics = _run_files(run)
    entry = metrics["verifiers"]["novelty"]["spans"]
    t = entry["unit_threshold"]
    assert t["value"] is not None and t["source"].startswith("fitted") and t["target"] == "max balanced accuracy"
    threshold = t["value"] if at == "fitted" else -np.inf
    measured = entry["test"] if at == "fitted" else entry["flag_all_units"]
    roles = split_roles([c.get("split") for c in cases], seed=0, test_fraction=0.5,
                        labels=[c["label"] for c in cases], groups=[c["meta"].get("group") for c in cases],
                        strata=[c["doc_type"] for c in cases])
    units = {v["case_id"]: v.get("units") or [] for v in verdicts if v["verifier"] == "novelty"}
    sums = {"hallucinated": {}, "all": {}}
    n_test = 0
    for c, role in zip(cases, roles):
        if role != "test" or c["meta"].get("spans_not_found"):
            continue
        n_test += 1
        pred = [(u["start"], u["end"]) for u in units[c["id"]] if "start" in u and u["score"] >= threshold]
        counts = reference([tuple(s) for s in c.get("spans", [])], pred)
        for scope in ("hallucinated", "all") if c["label"] else ("all",):
            for k, v in counts.items():
                sums[scope][k] = sums[scope].get(k, 0) + v
    assert metrics["spans"]["evaluated"]["test"] == n_test
    for scope in ("hallucinated", "all"):
        got, s = measured[scope], sums[scope]
        assert got["counts"] == pytest.approx({k: float(v) for k, v in s.items()})
        p = s["char_tp"] / (s["char_tp"] + s["char_fp"])
        r = s["char_tp"] / (s["char_tp"] + s["char_fn"])
        assert got["char"]["precision"] == pytest.approx(p) and got["char"]["recall"] == pytest.approx(r)
        if at == "fitted":
            lo, hi = got["char"]["ci"]["f1"]
            assert lo <= got["char"]["f1"] <= hi
    # faithful responses with a new word are false alarms: precision over all cases is lower
    assert entry["test"]["all"]["char"]["precision"] < entry["test"]["hallucinated"]["char"]["precision"]
    assert entry["units"]["not_localized"] == metrics["spans"]["evaluated"]["calibration"] + n_test
    assert set(entry["slices"]) == {"default"}


def test_pairwise_accuracy_per_verifier_matches_a_loop(run):
    cases, verdicts, metrics = _run_files(run)
    assert metrics["pairs"]["groups"] == 90 and metrics["pairs"]["pairs"] == 90
    by_case = {c["id"]: c for c in cases}
    for vid in ("rouge", "novelty"):
        score = {v["case_id"]: v["score"] for v in verdicts if v["verifier"] == vid}
        wins = []
        for g in range(90):
            h, f = score[f"{g}-h"], score[f"{g}-f"]
            wins.append(1.0 if h > f else 0.5 if h == f else 0.0)
        p = metrics["verifiers"][vid]["pairs"]
        assert p["accuracy"] == pytest.approx(np.mean(wins)) and p["pairs"] == 90
        assert p["ci"][0] <= p["accuracy"] <= p["ci"][1]
        assert by_case["0-h"]["meta"]["group"] == 0


def test_finish_again_gives_the_same_metrics(run):
    before = json.loads((run / "metrics.json").read_text())
    api.report(run)
    after = json.loads((run / "metrics.json").read_text())
    assert before["spans"] == after["spans"]
    assert before["verifiers"]["novelty"]["spans"] == after["verifiers"]["novelty"]["spans"]
    assert before["verifiers"]["rouge"]["pairs"] == after["verifiers"]["rouge"]["pairs"]


def test_a_run_without_spans_or_groups_gets_no_such_keys(tmp_path, root):
    rows = [json.loads(line) for line in (root / "datasets/demo/cases.jsonl").read_text().splitlines()]
    for r in rows:
        r["meta"].pop("group")
    data = write(tmp_path / "demo.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    suite = parse_suite({"name": "plain", "dataset": {"loader": "jsonl", "path": str(data),
                                                      "fields": {"doc_type": "doc_type", "split": "split"}},
                         "verifiers": ["rouge"], "metrics": {"bootstrap": 10}}, tmp_path)
    api.run(suite, out=tmp_path / "run", progress=False)
    m = json.loads((tmp_path / "run/metrics.json").read_text())
    assert "spans" not in m and "pairs" not in m and "pairs" not in m["verifiers"]["rouge"]


def test_the_run_object_lists_span_and_pair_metrics(run):
    from verifybench.runs.run import Run

    _, _, metrics = _run_files(run)
    df = Run(run).metrics
    f1 = df[(df.verifier == "novelty") & (df.slice == "all") & (df.metric == "spans.all.char.f1")].iloc[0]
    want = metrics["verifiers"]["novelty"]["spans"]["test"]["all"]["char"]
    assert f1.split == "test" and f1.value == pytest.approx(want["f1"]) and f1.ci_low == pytest.approx(want["ci"]["f1"][0])
    pa = df[(df.verifier == "rouge") & (df.slice == "all") & (df.metric == "pairwise_accuracy")].iloc[0]
    assert pa.value == pytest.approx(metrics["verifiers"]["rouge"]["pairs"]["accuracy"])


def test_gold_that_could_not_be_located_anywhere_is_still_reported(tmp_path):
    rows = [{"id": str(i), "response": "The store opens at nine.", "sources": [SOURCE], "label": i % 2,
             **({"bad": ["closes at noon"]} if i % 2 else {})} for i in range(20)]
    data = write(tmp_path / "d.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    suite = parse_suite({"name": "lost", "dataset": {"loader": "jsonl", "path": str(data), "fields": {"spans": "bad"}},
                         "verifiers": [{"helpers.span_verifiers:WordNovelty": {"id": "novelty"}}],
                         "metrics": {"bootstrap": 10}}, tmp_path)
    api.run(suite, out=tmp_path / "run", progress=False)
    m = json.loads((tmp_path / "run/metrics.json").read_text())
    assert m["spans"]["gold"]["not_found"] == 10 and m["spans"]["gold"]["cases_with_unlocated"] == 10
    assert m["spans"]["evaluated"]["test"] + m["spans"]["evaluated"]["calibration"] == 10  # the faithful ones


def test_pairs_from_the_run_tables_equal_pairs_from_the_rows(tmp_path):
    """A run without gold spans measures pairs from the columns `finish` already holds; the row path
    (what a run with spans takes) must give the same section, cases without a group left out of both."""
    from verifybench.evaluation import spans_pairs as localization
    from verifybench.evaluation.run_dir import RunDir

    rows = [{k: v for k, v in r.items() if k != "bad"} for r in make_rows(60, seed=3)]
    for r in rows:  # slices by a meta field: each pair in one of three tiers
        r["tier"] = ("gold", "silver", "bronze")[r["pair"] % 3]
    rows += [{"id": f"solo-{i}", "response": SOURCE, "sources": [SOURCE], "label": i % 2} for i in range(12)]
    data = write(tmp_path / "cases.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    suite = parse_suite({"name": "pairs", "dataset": {"loader": "jsonl", "path": str(data), "fields": {"group": "pair"}},
                         "verifiers": ["rouge", {"helpers.span_verifiers:WordNovelty": {"id": "novelty"}}],
                         "metrics": {"min_per_class": 10, "bootstrap": 200, "by": "meta.tier"}}, tmp_path)
    run = tmp_path / "run"
    api.run(suite, out=run, progress=False)
    from_tables = json.loads((run / "metrics.json").read_text())
    assert from_tables["pairs"]["groups"] == 60 and from_tables["pairs"]["cases_in_groups"] == 120
    assert set(from_tables["verifiers"]["rouge"]["pairs"]["slices"]) == {"gold", "silver", "bronze"}
    from_rows = localization.add_metrics({"verifiers": {"rouge": {}, "novelty": {}}}, run,
                                         RunDir.open(run).settings())
    assert from_rows["pairs"] == from_tables["pairs"]
    for vid in ("rouge", "novelty"):
        assert from_rows["verifiers"][vid]["pairs"] == from_tables["verifiers"][vid]["pairs"]
