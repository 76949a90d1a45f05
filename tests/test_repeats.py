"""`repeats: N`: each case scored N times, one verdict keeping the mean and the spread, the report's flips
across the fitted threshold, and the gate's flicker band. The judge at a temperature above 0 on the real
llama.cpp server is in tests/test_judge_llama.py."""

import json
import shutil
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from verifybench import api
from verifybench.errors import SuiteError, VerifybenchError
from verifybench.metrics.repeats import flicker, flip_summary, flips, repeat_matrix, spread
from verifybench.rundir import iter_jsonl, read_verdict_frame
from verifybench.suite import parse_suite
from verifybench.tables import verdict_table

NOISY = "helpers.repeat_verifiers:Noisy"

TEST_CODE = ["helpers.repeat_verifiers"]  # a guard may import the test verifiers' module


def demo_suite(root: Path, folder: Path, *verifiers, name="repeats", batch_size=64):
    return parse_suite({"name": name, "dataset": {"loader": "jsonl", "path": str(root / "datasets/demo/cases.jsonl"),
                                                  "fields": {"doc_type": "doc_type", "split": "split"}},
                        "verifiers": list(verifiers), "batch_size": batch_size}, folder,
                       where=str(folder / f"{name}.yaml"))


def results(run_dir: Path) -> dict[tuple[str, str], dict]:
    rows = list(iter_jsonl(run_dir / "results.jsonl"))
    assert max(Counter((r["verifier"], r["case_id"]) for r in rows).values()) == 1  # one verdict per pair
    return {(r["verifier"], r["case_id"]): r for r in rows}


# --- the pure functions ---------------------------------------------------------------------------------

def test_spread_is_over_the_repeats_that_gave_a_score():
    assert spread([0.2, 0.4, None, 0.9]) == pytest.approx(
        {"n": 3, "mean": 0.5, "std": float(np.std([0.2, 0.4, 0.9])), "min": 0.2, "max": 0.9})
    assert spread([None, None]) == {"n": 0, "mean": None, "std": None, "min": None, "max": None}
    assert spread([0.3, 0.3])["std"] == 0.0


def test_a_case_flips_when_the_threshold_lies_between_its_repeats():
    m = repeat_matrix([[0.2, 0.6], [0.5, 0.5], [0.49, np.nan, 0.51], None, [0.6, 0.7]])
    assert m.shape == (5, 3) and np.isnan(m[3]).all() and np.isnan(m[0, 2])
    # flagged means score >= threshold: 0.5 flags the second case on every repeat, so it never flips
    assert flips(m, 0.5).tolist() == [True, False, True, False, False]
    assert flips(m, 0.6).tolist() == [True, False, False, False, False]
    s = flip_summary(m, 0.5)
    assert (s["repeats"], s["cases"], s["flipped"]) == (3, 4, 2)  # the case with no score is not counted
    assert s["mean_range"] == pytest.approx((0.4 + 0 + 0.02 + 0.1) / 4) and s["max_range"] == pytest.approx(0.4)
    assert flip_summary(m, None)["flipped"] is None


def test_flicker_is_how_far_a_metric_moves_between_repeats():
    y = np.array([True, True, False, False])
    same = np.array([[0.9, 0.9], [0.8, 0.8], [0.1, 0.1], [0.2, 0.2]])
    assert flicker(y, same, 0.5, ["auroc", "f1"]) == {"auroc": 0.0, "f1": 0.0}
    # repeat 1 ranks one faithful case above a hallucinated one: AUROC 1.0 vs 0.75, F1 at 0.5 1.0 vs 0.8
    moved = np.array([[0.9, 0.9], [0.8, 0.4], [0.1, 0.6], [0.2, 0.2]])
    f = flicker(y, moved, 0.5, ["auroc", "f1", "recall"])
    assert f["auroc"] == pytest.approx(0.25) and f["recall"] == pytest.approx(0.5)
    assert f["f1"] == pytest.approx(1.0 - 0.5)  # tp 1, fp 1, fn 1 on repeat 1
    # a repeat's missing score counts as wrong, as an error verdict does
    assert flicker(y, np.array([[0.9, np.nan], [0.8, 0.8], [0.1, 0.1], [0.2, 0.2]]), 0.5, ["recall"])["recall"] == 0.5
    assert flicker(y, same[:, :1], 0.5, ["auroc"]) == {"auroc": None}  # one repeat: nothing moves
    assert flicker(y, moved, None, ["f1", "auroc"])["f1"] is None


# --- the suite option ------------------------------------------------------------------------------------

@pytest.mark.parametrize("bad", [0, -2, 1.5, "3", True])
def test_repeats_must_be_a_whole_number_of_at_least_one(tmp_path, root, bad):
    with pytest.raises(SuiteError, match=r"repeats\.yaml: verifiers\[1\] \(noisy\): repeats: expected a whole "
                                         rf"number of at least 1 .*got {bad!r}"):
        demo_suite(root, tmp_path, "rouge", {NOISY: {"id": "noisy", "repeats": bad}})


def test_repeats_is_a_generic_entry_option_not_the_verifiers(tmp_path, root):
    suite = demo_suite(root, tmp_path, {"rouge": {"repeats": 2}}, {NOISY: {"id": "noisy", "noise": 0.1}})
    assert [(e.id, e.repeats, e.options) for e in suite.verifiers] == [("rouge", 2, {}), ("noisy", 1, {"noise": 0.1})]
    with pytest.raises(SuiteError, match="option 'repeat': Extra inputs are not permitted"):
        api.run(demo_suite(root, tmp_path, {NOISY: {"id": "noisy", "repeat": 2}}), out=tmp_path / "r", progress=False)


# --- the runner --------------------------------------------------------------------------------------------

def test_repeats_keep_the_mean_the_spread_and_each_repeat(tmp_path, root):
    once = api.run(demo_suite(root, tmp_path, "rouge", {NOISY: {"id": "noisy"}}), out=tmp_path / "once",
                   progress=False)
    thrice = api.run(demo_suite(root, tmp_path, {"rouge": {"repeats": 3}}, {NOISY: {"id": "noisy", "repeats": 3}}),
                     out=tmp_path / "thrice", progress=False)
    assert once.n_cases == thrice.n_cases == 384 and thrice.result.new_verdicts == 2 * 384
    single, repeated = results(tmp_path / "once"), results(tmp_path / "thrice")
    spreads = []
    for (vid, cid), v in repeated.items():
        r = v["detail"]["repeats"]
        assert r["of"] == r["n"] == 3 and len(r["scores"]) == 3 and "errors" not in r
        assert v["score"] == pytest.approx(np.mean(r["scores"])) == pytest.approx(r["mean"])
        assert r["std"] == pytest.approx(np.std(r["scores"])) and (r["min"], r["max"]) == (min(r["scores"]), max(r["scores"]))
        # repeat 0 is the verifier as configured: the single run's score
        assert r["scores"][0] == pytest.approx(single[(vid, cid)]["score"])
        if vid == "rouge":  # deterministic: three equal scores
            assert r["std"] == 0.0 and v["score"] == pytest.approx(single[(vid, cid)]["score"])
        else:
            spreads.append(r["std"])
            assert len(set(r["scores"])) == 3  # fresh draws
    assert min(spreads) > 0
    manifest = json.loads((tmp_path / "thrice/manifest.json").read_text())
    assert [v.get("repeats") for v in manifest["verifiers"]] == [3, 3]
    first = json.loads((tmp_path / "once/manifest.json").read_text())
    assert "repeats" not in first["verifiers"][0]
    # the verifier is the same: its config hash does not change with the number of repeats
    assert [v["config_hash"] for v in manifest["verifiers"]] == [v["config_hash"] for v in first["verifiers"]]

    metrics = json.loads((tmp_path / "thrice/metrics.json").read_text())["verifiers"]
    assert "repeats" not in json.loads((tmp_path / "once/metrics.json").read_text())["verifiers"]["noisy"]
    rouge, noisy = metrics["rouge"]["repeats"], metrics["noisy"]["repeats"]
    assert (rouge["flipped"], rouge["mean_std"], rouge["cases"]) == (0, 0.0, 192)
    t = metrics["noisy"]["overall"]["threshold"]["value"]
    assert noisy["threshold"] == t and noisy["repeats"] == 3
    test_ids = {r["id"] for r in iter_jsonl(tmp_path / "thrice/cases.jsonl") if r["split"] == "test"}
    by_hand = sum(min(v["detail"]["repeats"]["scores"]) < t <= max(v["detail"]["repeats"]["scores"])
                  for (vid, cid), v in repeated.items() if vid == "noisy" and cid in test_ids)
    assert noisy["flipped"] == by_hand > 0 and noisy["cases"] == len(test_ids)
    html = (tmp_path / "thrice/report.html").read_text()
    assert f"{by_hand} of 192 test cases flip across the fitted threshold" in html
    assert "flip across" not in (tmp_path / "once/report.html").read_text()
    tidy = thrice.metrics
    row = tidy[(tidy["verifier"] == "noisy") & (tidy["metric"] == "repeats.flipped")]
    assert row["value"].tolist() == [by_hand] and row["split"].tolist() == ["test"]


def test_the_verdict_table_reads_repeats_from_the_file_as_from_verdicts(tmp_path, root):
    api.run(demo_suite(root, tmp_path, {NOISY: {"id": "noisy", "repeats": 2}}, "rouge"), out=tmp_path / "run",
            progress=False)
    fast = read_verdict_frame(tmp_path / "run")
    from verifybench.rundir import read_verdicts

    slow = verdict_table(read_verdicts(tmp_path / "run"))
    assert fast["repeats"].tolist() == slow["repeats"].tolist()
    assert all(len(x) == 2 for x in fast["repeats"][fast["verifier"] == "noisy"])
    assert fast["repeats"][fast["verifier"] == "rouge"].isna().all()


def test_a_failed_repeat_is_recorded_and_left_out_of_the_mean(tmp_path, root):
    fail = {"support_plan-0-0": [1], "support_plan-0-1": [0, 1, 2]}
    suite = demo_suite(root, tmp_path, {"helpers.repeat_verifiers:FailingRepeats": {"id": "f", "repeats": 3,
                                                                                    "fail": fail}})
    result = api.run(suite, out=tmp_path / "run", progress=False)
    rows = results(tmp_path / "run")
    part = rows[("f", "support_plan-0-0")]
    r = part["detail"]["repeats"]
    assert part["score"] == pytest.approx(0.1) and (r["n"], r["of"]) == (2, 3) and r["scores"] == [0.0, None, 0.2]
    assert list(r["errors"]) == ["1"] and "planted failure on support_plan-0-0, repeat 1" in r["errors"]["1"]
    whole = rows[("f", "support_plan-0-1")]
    assert "score" not in whole and whole["error"].startswith("all 3 repeats failed; the first: RuntimeError: planted")
    assert whole["detail"]["repeats"]["n"] == 0 and result.n_error_verdicts == 1
    ok = rows[("f", "support_plan-0-2")]
    assert ok["score"] == pytest.approx(0.1) and ok["detail"]["repeats"]["std"] == pytest.approx(np.std([0, 0.1, 0.2]))


def test_a_killed_run_with_repeats_resumes_to_the_same_results(tmp_path, root):
    suite = demo_suite(root, tmp_path, "rouge", {NOISY: {"id": "noisy", "repeats": 3}}, batch_size=16)
    api.run(suite, out=tmp_path / "full", progress=False)
    api.run(suite, out=tmp_path / "run", progress=False)
    path = tmp_path / "run/results.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:301]) + lines[301][:40])  # a killed writer leaves half a line
    resumed = api.resume(tmp_path / "run", progress=False)
    assert resumed.result.new_verdicts == 2 * 384 - 301
    got, want = results(tmp_path / "run"), results(tmp_path / "full")
    assert set(got) == set(want)
    for key, v in want.items():
        assert got[key]["score"] == v["score"] and got[key].get("detail") == v.get("detail")
    assert json.loads((tmp_path / "run/metrics.json").read_text())["verifiers"]["noisy"]["repeats"] == \
        json.loads((tmp_path / "full/metrics.json").read_text())["verifiers"]["noisy"]["repeats"]


def test_resume_refuses_another_number_of_repeats(tmp_path, root):
    api.run(demo_suite(root, tmp_path, {NOISY: {"id": "noisy", "repeats": 2}}), out=tmp_path / "run", progress=False)
    manifest = json.loads((tmp_path / "run/manifest.json").read_text())
    manifest["suite"]["raw"]["verifiers"][0][NOISY]["repeats"] = 3
    (tmp_path / "run/manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(VerifybenchError, match="verifier 'noisy' was scored with repeats: 2, now 3"):
        api.resume(tmp_path / "run", progress=False)


# --- the gate ------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def noisy_runs(tmp_path_factory, root):
    """A noisy check scored 5 times per case: the baseline, a run that got a little worse (5% of cases lose
    their signal) and one that got much worse (half of them)."""
    tmp = tmp_path_factory.mktemp("flicker")
    runs = {}
    for name, weaken in (("base", 0.0), ("little", 0.05), ("much", 0.5)):
        suite = demo_suite(root, tmp, {NOISY: {"id": "noisy", "repeats": 5, "noise": 0.6, "weaken": weaken}})
        runs[name] = api.run(suite, out=tmp / name, progress=False).run_dir
    runs["baseline"] = api.baseline(runs["base"], out=tmp / "metrics/repeats.json")
    return runs


def test_the_baseline_records_the_flicker_between_repeats(noisy_runs):
    doc = json.loads(Path(noisy_runs["baseline"]).read_text())
    v = doc["verifiers"]["noisy"]
    assert v["repeats"] == 5
    flick = v["slices"]["all"]["flicker"]
    assert set(flick) == {"f1", "precision", "recall", "balanced_accuracy", "auroc", "auprc"}
    assert all(0 < x < 0.2 for x in flick.values())


def test_a_drop_inside_the_flicker_passes_and_one_beyond_it_fails(noisy_runs, tmp_path):
    little = api.gate(noisy_runs["little"], noisy_runs["baseline"], summary=tmp_path / "s.md")
    assert little.exit_code == 0
    auroc = next(c for c in little.gated if c.metric == "auroc")
    # beyond the allowance and beyond case-sampling noise: without the flicker band it would fail
    assert auroc.drop > 0.02 and auroc.ci[0] > 0
    assert auroc.status == "pass" and "is within the repeats' flicker" in auroc.message
    assert any("noisy: scored 5 times per case in the baseline, 5 now" in n for n in little.notes)
    assert "a drop counts only beyond its flicker between repeats (f1 0." in (tmp_path / "s.md").read_text()

    much = api.gate(noisy_runs["much"], noisy_runs["baseline"])
    assert much.exit_code == 1
    failed = {c.metric: c for c in much.failed}
    band = json.loads(Path(noisy_runs["baseline"]).read_text())["verifiers"]["noisy"]["slices"]["all"]["flicker"]
    assert set(failed) == {"f1", "auroc"} and all(c.drop > band[m] for m, c in failed.items())

    # the same drop with no flicker recorded on either side (a check scored once) is a regression
    plain = tmp_path / "plain.json"
    doc = json.loads(Path(noisy_runs["baseline"]).read_text())
    for row in doc["verifiers"]["noisy"]["slices"].values():
        row.pop("flicker")
    plain.write_text(json.dumps(doc))
    once = tmp_path / "little-once"
    shutil.copytree(noisy_runs["little"], once)
    rows = [r for r in iter_jsonl(once / "results.jsonl")]
    for r in rows:
        r["detail"].pop("repeats")
    (once / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert api.gate(once, plain).exit_code == 1


def test_cases_given_in_python_take_repeats_by_mapping_or_on_the_object(tmp_path):
    from helpers.repeat_verifiers import Noisy

    cases = [{"id": f"c{i}", "response": f"answer {i}", "sources": [f"source {i}"], "label": i % 2} for i in range(8)]
    obj = Noisy(id="obj")
    obj.repeats = 2
    run = api.run(cases=cases, verifiers=[{NOISY: {"id": "mapped", "repeats": 3}}, obj], out=tmp_path / "run",
                  progress=False)
    got = results(run.run_dir)
    assert {vid: v["detail"]["repeats"]["of"] for (vid, _), v in got.items()} == {"mapped": 3, "obj": 2}
    resumed_suite = json.loads((run.run_dir / "manifest.json").read_text())["verifiers"]
    assert [v["repeats"] for v in resumed_suite] == [3, 2]


def test_the_policy_records_repeats_and_the_guard_scores_that_many_times(tmp_path, root):
    # A threshold fitted on the mean of 3 samples is a threshold on a mean: the guard must score the same way.
    from verifybench.guard import Guard

    noisy = "helpers.repeat_verifiers:NoisyText"
    run = api.run(demo_suite(root, tmp_path, "rouge", {noisy: {"id": "noisy", "repeats": 3}}), out=tmp_path / "r",
                  progress=False)
    policy = tmp_path / "policy.yaml"
    api.thresholds(run.run_dir, by="doc_type", out=policy)
    recorded = __import__("yaml").safe_load(policy.read_text())["verifiers"]
    assert recorded["noisy"]["repeats"] == 3 and "repeats" not in recorded["rouge"]
    by_id = results(tmp_path / "r")
    cases = list(iter_jsonl(root / "datasets/demo/cases.jsonl"))[:20]
    with Guard(policy, allow_code=TEST_CODE, log_dir=False) as g:
        assert g.describe()["checks"]["noisy"]["repeats"] == 3
        decisions = [g.check(response=c["response"], sources=c["sources"], question=c.get("question"),
                             doc_type=c.get("doc_type")) for c in cases]
    for c, d in zip(cases, decisions):
        got = next(r for r in d.checks if r.verifier == "noisy").score
        want = by_id[("noisy", c["id"])]
        assert got == pytest.approx(want["score"], abs=1e-12)  # the mean of the run's three samples
        assert got != pytest.approx(want["detail"]["repeats"]["scores"][0], abs=1e-9)  # not one sample


def test_a_policy_with_a_bad_repeats_is_refused_naming_the_field(tmp_path, root):
    import yaml

    from verifybench.guard import Guard, GuardError

    run = api.run(demo_suite(root, tmp_path, "rouge"), out=tmp_path / "r", progress=False)
    policy = tmp_path / "policy.yaml"
    api.thresholds(run.run_dir, by="doc_type", out=policy)
    doc = yaml.safe_load(policy.read_text())
    doc["verifiers"]["rouge"]["repeats"] = 0
    policy.write_text(yaml.safe_dump(doc))
    with pytest.raises(GuardError, match=r"verifiers\.rouge\.repeats: expected a whole number of at least 1, got 0"):
        Guard(policy, allow_code=TEST_CODE, log_dir=False)
