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


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory, root):
    """One run of the demo suite, only read by the tests that take it (a test that writes runs its own)."""
    out = tmp_path_factory.mktemp("demo") / "run"
    api.run(root / "evals/demo.yaml", out=out, progress=False)
    return out


@pytest.mark.slow  # SummEdits read whole
def test_summedits_policy_has_one_threshold_per_domain(summedits_run, tmp_path):
    policy = api.thresholds(summedits_run, by="doc_type", target="f1", out=tmp_path / "policy.yaml")
    rows = policy.document()["thresholds"]["rouge"]
    domains = [k for k in rows if k != "all"]
    assert len(domains) == 8
    fitted = {k: r for k, r in rows.items() if r["source"] == "fitted" and k != "all"}
    # scitldr's calibration split has 28 faithful cases: under the default minimum of 30, so it falls back
    # to the whole set's threshold, labelled so, with the reason.
    assert set(domains) - set(fitted) == {"scitldr"}
    assert "28 faithful" in rows["scitldr"]["warning"]
    assert rows["scitldr"]["source"] == "fallback" and rows["scitldr"]["fallback_from"] == "all"
    assert rows["scitldr"]["threshold"] == rows["all"]["threshold"]
    differ = [k for k, r in fitted.items() if r["test_split"]["f1"] != r["calibration_split (tuned)"]["f1"]]
    assert len(differ) == len(fitted)
    assert yaml.safe_load((tmp_path / "policy.yaml").read_text())["thresholds"]["rouge"]["news"]["threshold"] == \
        rows["news"]["threshold"]
    lenient = api.thresholds(summedits_run, min_per_class=25)
    assert all(r.source == "fitted" for r in lenient.thresholds["rouge"].values())


@pytest.mark.slow  # SummEdits read whole
def test_test_split_is_never_the_calibration_split(summedits_run):
    metrics = json.loads((summedits_run / "metrics.json").read_text())
    assert metrics["split"] == {"test": 3695, "calibration": 986}  # SummEdits' own split field
    news = metrics["verifiers"]["rouge"]["slices"]["news"]
    assert news["test"]["n"] + news["calibration_split"]["n"] == news["n"]
    assert news["calibration_split"]["tuned"] is True


def test_run_with_a_policy_applies_its_thresholds(tmp_path, root, demo_run):
    policy = api.thresholds(demo_run, target="recall=0.9", out=tmp_path / "p.yaml")
    api.run(root / "evals/demo.yaml", out=tmp_path / "b", progress=False, policy=tmp_path / "p.yaml")
    metrics = json.loads((tmp_path / "b/metrics.json").read_text())
    for vid, rows in policy.document()["thresholds"].items():
        for key, row in rows.items():
            m = metrics["verifiers"][vid]["overall" if key == "all" else "slices"]
            m = m if key == "all" else m[key]
            if row["threshold"] is not None:
                assert m["threshold"]["value"] == pytest.approx(row["threshold"])
                assert m["threshold"]["source"].startswith("policy")


def test_bad_policy_is_refused_before_running(tmp_path, root):
    bad = write(tmp_path / "p.yaml", "by: doc_type\nthresholds: {rouge: {all: {threshold: high}}}\n")
    with pytest.raises(VerifybenchError, match=r"thresholds.rouge.all.threshold: a threshold must be a finite number"):
        api.run(root / "evals/demo.yaml", out=tmp_path / "r", progress=False, policy=bad)
    assert not (tmp_path / "r").exists()


@pytest.mark.slow  # SummEdits read whole
def test_compare_refuses_runs_over_different_data(demo_run, summedits_run):
    with pytest.raises(VerifybenchError, match="the runs scored different data"):
        api.compare(demo_run, summedits_run)


def test_compare_within_and_across_runs(tmp_path, root, demo_run):
    api.run(root / "evals/demo.yaml", out=tmp_path / "b", progress=False)  # a second, independent run
    [within] = api.compare(demo_run, verifiers=["rouge", "bleu"])
    assert (within["a"], within["b"]) == ("rouge", "bleu") and within["cases"] == 192
    assert within["threshold_mode"] == "each at its own fitted threshold"
    auroc = within["metrics"]["auroc"]
    lo, hi = auroc["ci"]
    assert lo <= auroc["diff"] <= hi and auroc["diff"] == pytest.approx(auroc["a"] - auroc["b"])
    across = api.compare(demo_run, tmp_path / "b")
    # The same deterministic verifier on the same cases: no difference at all.
    assert all(r["metrics"]["auroc"]["diff"] == 0 and r["mcnemar"]["a_only_right"] == 0 for r in across)


# --- selection rules --------------------------------------------------------------------------------

def test_targets_parse():
    assert parse_target("f1") == Target("fbeta", 1.0)
    assert parse_target({"precision": 0.9}) == Target("precision", 0.9)
    assert parse_target("recall=0.8") == Target("recall", 0.8)
    assert str(parse_target("balanced_accuracy")) == "max balanced accuracy"
    assert str(parse_target("youden")) == "max Youden's J"
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


def test_precision_target_adds_no_false_alarm_that_buys_no_recall():
    # Thresholds 0.9 ... 0.6 all keep precision >= 0.5; below 0.8 only faithful cases are added, so
    # 0.8 gives the most recall at that precision and 0.7 / 0.6 would only add false alarms.
    y = np.array([1, 1, 0, 0, 0, 0], bool)
    s = np.array([0.9, 0.8, 0.7, 0.6, 0.5, 0.4])
    c = threshold_curve(y, s)
    i = select_threshold(c, Target("precision", 0.5))
    assert c.thresholds[i] == pytest.approx(0.8)
    assert (c.tp[i], c.fp[i]) == (2, 0)


def test_balanced_accuracy_and_youden_pick_the_same_separating_threshold():
    # Weak scores: max F1 flags everything (the lowest threshold), balanced accuracy does not.
    y = np.array([1, 0, 0, 0, 1, 0, 1, 0, 1, 1], bool)
    s = np.array([0.9, 0.8, 0.7, 0.6, 0.5, 0.45, 0.3, 0.2, 0.1, 0.05])
    c = threshold_curve(y, s)
    f1 = select_threshold(c, parse_target("f1"))
    assert (c.tp[f1] + c.fp[f1]) == len(y)  # degenerate
    ba, j = select_threshold(c, parse_target("balanced_accuracy")), select_threshold(c, parse_target("youden"))
    assert ba == j and c.tp[ba] + c.fp[ba] < len(y)
    assert c.balanced_accuracy[ba] == pytest.approx(c.balanced_accuracy.max())


def test_seeded_split_is_stratified_by_doc_type_and_label():
    rng = np.random.default_rng(0)
    n = 300
    doc = rng.choice(["support", "contract", "tech"], size=n, p=[0.6, 0.3, 0.1])
    labels = rng.random(n) < np.where(doc == "tech", 0.2, 0.5)  # tech is rare and mostly faithful
    roles = split_roles([None] * n, seed=1, labels=labels, strata=doc)
    for d in ("support", "contract", "tech"):
        for lab in (True, False):
            k = ((doc == d) & (labels == lab)).sum()
            t = ((doc == d) & (labels == lab) & (roles == "test")).sum()
            assert abs(t - k / 2) <= 0.5, (d, lab, k, t)  # each doc type's share of each class, to one case


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


# --- the metrics block --------------------------------------------------------------------------------

def demo_raw(root, **metrics):
    raw = yaml.safe_load((root / "evals/demo.yaml").read_text())
    raw["dataset"]["path"] = str(root / "datasets/demo/cases.jsonl")
    raw["verifiers"] = ["rouge"]
    raw["metrics"] = metrics
    return raw


@pytest.mark.parametrize("metrics,message", [
    ({"min_per_clas": 5}, "my-suite.yaml: metrics.min_per_clas: unknown key (known: by, target"),
    ({"target": "accuracy"}, "my-suite.yaml: metrics.target: threshold target 'accuracy': expected f1"),
    ({"by": "tier"}, "my-suite.yaml: metrics.by: 'tier' is not a slice field"),
    ({"thresholds": {"targt": "f1"}}, "my-suite.yaml: metrics.thresholds.targt: unknown key"),
    ({"test_fraction": 2}, "my-suite.yaml: metrics.test_fraction: Input should be less than or equal to 1"),
])
def test_metrics_block_typos_are_suite_errors_naming_file_and_key(tmp_path, root, metrics, message):
    from verifybench.errors import SuiteError

    write(tmp_path / "my-suite.yaml", yaml.safe_dump(demo_raw(root, **metrics)))
    with pytest.raises(SuiteError) as e:
        api.describe(tmp_path / "my-suite.yaml")
    assert message in str(e.value)


def test_a_slice_field_no_case_has_is_an_error_listing_the_fields(tmp_path, root):
    from verifybench.errors import SuiteError

    run = api.run(parse_suite(demo_raw(root, by="doc_type"), tmp_path), out=tmp_path / "run", progress=False)
    with pytest.raises(SuiteError, match=r"metrics.by: no case has a field 'meta.tier'; the cases have: doc_type, "
                                         r"dataset, split, meta.error_type"):
        api.thresholds(run.run_dir, by="meta.tier")
    with pytest.raises(SuiteError, match=r"metrics.breakdown\[0\]: no case has a field 'meta.kind'"):
        from verifybench.metrics import Settings, compute_metrics
        from verifybench.rundir import read_case_index, read_verdicts

        compute_metrics(read_case_index(run.run_dir), read_verdicts(run.run_dir), Settings(breakdown=["meta.kind"]))


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


def test_the_threshold_interval_is_the_same_drawn_in_smaller_blocks(monkeypatch):
    """Past 20,000 cases the threshold interval's resamples are Poisson draws, taken a few rows at a time
    on a large set (memory): the same draws, so the same interval, as 64 resamples at a time."""
    from verifybench.metrics import thresholds

    rng = np.random.default_rng(1)
    t = rng.random(30_001) < 0.4
    s = np.sort(rng.random(len(t)) + 0.3 * t)[::-1]  # sorted by decreasing score, as the caller gives them
    t = t[np.argsort(-(rng.random(len(t)) + 0.3 * t), kind="stable")]
    target = parse_target("f1")
    whole = thresholds.threshold_interval(t, s, target, n_boot=50, seed=3)
    monkeypatch.setattr(thresholds, "INTERVAL_BLOCK", 100_000)  # 2 resamples a block (3 rounded down to even)
    assert thresholds.threshold_interval(t, s, target, n_boot=50, seed=3) == whole
    assert whole["resamples"] == 50 and whole["low"] < whole["high"]


def test_a_policy_with_no_threshold_at_all_is_refused_and_not_written(demo_run, tmp_path):
    """Too few labeled cases for any threshold: `thresholds --out` exits non-zero, writes nothing, and says
    how many cases of each class the calibration split had against --min-per-class, and what to do."""
    from typer.testing import CliRunner

    from verifybench.cli import app

    out = tmp_path / "policy.yaml"
    r = CliRunner().invoke(app, ["thresholds", str(demo_run), "--min-per-class", "100000", "--out", str(out)])
    assert r.exit_code == 2 and not out.exists(), r.output
    text = " ".join(r.output.split())
    assert "every threshold in the policy is null" in text and "nothing written" in text
    assert "label more, or lower --min-per-class" in text and "minimum 100000 of each" in text
    metrics = json.loads((demo_run / "metrics.json").read_text())
    for vid, v in metrics["verifiers"].items():
        have = v["overall"]["needs"]["threshold"]["calibration_scored"]
        assert f"{vid}: {have['hallucinated']} hallucinated and {have['faithful']} faithful" in text
    with pytest.raises(VerifybenchError, match="every threshold in the policy is null"):
        api.thresholds(demo_run, min_per_class=100000, out=out)
    assert not out.exists()
    # Without --out nothing is written anyway: the table shows the nulls and their reasons.
    assert api.thresholds(demo_run, min_per_class=100000).thresholds
    # One usable threshold is enough to write the policy.
    api.thresholds(demo_run, min_per_class=1, out=out)
    assert out.exists()
