import json

import numpy as np
import pytest
import yaml
from conftest import write

from verifybench import api
from verifybench.errors import VerifybenchError
from verifybench.metrics import parse_target, select_threshold, split_roles, threshold_curve
from verifybench.metrics.thresholds import Target
from verifybench.suite import parse_suite


@pytest.fixture(scope="module")
def summedits_run(tmp_path_factory, data_dir):
    tmp = tmp_path_factory.mktemp("se")
    suite = parse_suite({"name": "summedits", "dataset": {"loader": "summedits", "path": str(data_dir / "summedits")},
                         "verifiers": ["rouge"]}, tmp)
    api.run(suite, out=tmp / "run", progress=False)
    return tmp / "run"


def test_summedits_policy_has_one_threshold_per_domain(summedits_run, tmp_path):
    policy = api.thresholds(summedits_run, by="doc_type", target="f1", out=tmp_path / "policy.yaml")
    rows = policy["thresholds"]["rouge"]
    domains = [k for k in rows if k != "all"]
    assert len(domains) == 8
    fitted = {k: r for k, r in rows.items() if r["threshold"] is not None and k != "all"}
    # scitldr's calibration split has 28 faithful cases: under the default minimum of 30, so a warning.
    assert set(domains) - set(fitted) == {"scitldr"}
    assert "28 faithful" in rows["scitldr"]["warning"]
    differ = [k for k, r in fitted.items() if r["test_split"]["f1"] != r["calibration_split (tuned)"]["f1"]]
    assert len(differ) == len(fitted)
    assert yaml.safe_load((tmp_path / "policy.yaml").read_text())["thresholds"]["rouge"]["news"]["threshold"] == \
        rows["news"]["threshold"]
    lenient = api.thresholds(summedits_run, min_per_class=25)
    assert all(r["threshold"] is not None for r in lenient["thresholds"]["rouge"].values())


def test_test_split_is_never_the_calibration_split(summedits_run):
    metrics = json.loads((summedits_run / "metrics.json").read_text())
    assert metrics["split"] == {"test": 3695, "calibration": 986}  # SummEdits' own split field
    news = metrics["verifiers"]["rouge"]["slices"]["news"]
    assert news["test"]["n"] + news["calibration_split"]["n"] == news["n"]
    assert news["calibration_split"]["tuned"] is True


def test_run_with_a_policy_applies_its_thresholds(tmp_path, root):
    first = api.run(root / "evals/demo.yaml", out=tmp_path / "a", progress=False)
    policy = api.thresholds(first.run_dir, target="recall=0.9", out=tmp_path / "p.yaml")
    api.run(root / "evals/demo.yaml", out=tmp_path / "b", progress=False, policy=tmp_path / "p.yaml")
    metrics = json.loads((tmp_path / "b/metrics.json").read_text())
    for vid, rows in policy["thresholds"].items():
        for key, row in rows.items():
            m = metrics["verifiers"][vid]["overall" if key == "all" else "slices"]
            m = m if key == "all" else m[key]
            if row["threshold"] is not None:
                assert m["threshold"]["value"] == pytest.approx(row["threshold"])
                assert m["threshold"]["source"].startswith("policy")


def test_bad_policy_is_refused_before_running(tmp_path, root):
    bad = write(tmp_path / "p.yaml", "by: doc_type\nthresholds: {rouge: {all: {threshold: high}}}\n")
    with pytest.raises(VerifybenchError, match=r"thresholds.rouge.all: threshold must be a number"):
        api.run(root / "evals/demo.yaml", out=tmp_path / "r", progress=False, policy=bad)
    assert not (tmp_path / "r").exists()


def test_compare_refuses_runs_over_different_data(tmp_path, root, summedits_run):
    api.run(root / "evals/demo.yaml", out=tmp_path / "demo", progress=False)
    with pytest.raises(VerifybenchError, match="the runs scored different data"):
        api.compare(tmp_path / "demo", summedits_run)


def test_compare_within_and_across_runs(tmp_path, root):
    api.run(root / "evals/demo.yaml", out=tmp_path / "a", progress=False)
    api.run(root / "evals/demo.yaml", out=tmp_path / "b", progress=False)
    [within] = api.compare(tmp_path / "a", verifiers=["rouge", "bleu"])
    assert (within["a"], within["b"]) == ("rouge", "bleu") and within["cases"] == 192
    lo, hi = within["auroc_diff"]["ci"]
    assert lo <= within["auroc_diff"]["diff"] <= hi
    across = api.compare(tmp_path / "a", tmp_path / "b")
    # The same deterministic verifier on the same cases: no difference at all.
    assert all(r["auroc_diff"]["diff"] == 0 and r["mcnemar"]["a_only_right"] == 0 for r in across)


# --- selection rules --------------------------------------------------------------------------------

def test_targets_parse():
    assert parse_target("f1") == Target("fbeta", 1.0)
    assert parse_target({"precision": 0.9}) == Target("precision", 0.9)
    assert parse_target("recall=0.8") == Target("recall", 0.8)
    with pytest.raises(VerifybenchError, match="precision must be in"):
        parse_target("precision=2")
    with pytest.raises(VerifybenchError, match="expected f1"):
        parse_target("accuracy=0.9")


def test_select_threshold_rules():
    y = np.array([1, 1, 0, 1, 0, 0, 1, 0], bool)
    s = np.array([0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2])
    c = threshold_curve(y, s)
    i = select_threshold(c, Target("precision", 0.75))
    assert c.thresholds[i] == pytest.approx(0.6)  # the lowest threshold still at precision >= 0.75
    i = select_threshold(c, Target("recall", 0.75))
    assert c.thresholds[i] == pytest.approx(0.6)  # the highest threshold reaching recall >= 0.75
    i = select_threshold(c, Target("recall", 1.0))
    assert c.thresholds[i] == pytest.approx(0.3)
    assert select_threshold(threshold_curve([0, 1], [0.9, 0.1]), Target("precision", 0.9)) is None


def test_seeded_split_is_stratified_group_aware_and_reproducible():
    n = 400
    labels = np.arange(n) % 2 == 1
    groups = np.arange(n) // 2  # pairs, one of each label, like HaluEval
    a = split_roles([None] * n, seed=3, labels=labels, groups=groups)
    assert (a == split_roles([None] * n, seed=3, labels=labels, groups=groups)).all()
    assert not (a == split_roles([None] * n, seed=4, labels=labels, groups=groups)).all()
    assert all(a[2 * g] == a[2 * g + 1] for g in range(n // 2))
    assert abs((a == "test").sum() - n / 2) <= 2
    assert (labels[a == "test"].mean()) == pytest.approx(0.5)


def test_split_field_names_are_used_when_present():
    roles = split_roles(["evaluation", "test", "Test", "dev", "other"])
    assert list(roles) == ["calibration", "test", "test", "calibration", ""]


def test_suite_can_fix_a_threshold_instead_of_fitting_one(tmp_path, root):
    """`metrics.fixed` states a threshold that means something by itself; the report says where it came from,
    and `test_fraction: 1.0` puts every case on the reported side when nothing is fitted."""
    raw = yaml.safe_load((root / "evals/demo.yaml").read_text())
    raw["dataset"]["path"] = str(root / "datasets/demo/cases.jsonl")
    raw["dataset"]["fields"].pop("split")
    raw["verifiers"] = ["rouge", "bleu"]
    raw["metrics"] = {"fixed": {"rouge": 0.5}, "test_fraction": 1.0, "breakdown": ["meta.error_type"]}
    run = api.run(parse_suite(raw, tmp_path), out=tmp_path / "run", progress=False)
    metrics = json.loads((run.run_dir / "metrics.json").read_text())
    rouge, bleu = metrics["verifiers"]["rouge"]["overall"], metrics["verifiers"]["bleu"]["overall"]
    assert rouge["threshold"]["value"] == 0.5 and rouge["threshold"]["source"] == "suite (metrics.fixed)"
    assert rouge["test"]["n"] == run.n_cases and metrics["split"] == {"test": run.n_cases}
    assert rouge["positives"] * rouge["test"]["recall"] == pytest.approx(
        sum(r["flagged"] for r in metrics["verifiers"]["rouge"]["breakdown"]["meta.error_type"].values()
            if r["label"] == "hallucinated"))
    # bleu is not fixed and has nothing to calibrate on: no threshold, and the report says so.
    assert bleu["threshold"]["value"] is None and "too few cases" in bleu["threshold"]["warning"]
    html = (run.run_dir / "report.html").read_text()
    assert "Flagged at the threshold from the suite (metrics.fixed), by meta.error_type" in html
    assert "By meta.error_type (test split): no threshold" in html
