"""Issue 44: from 60 labeled cases every check gets a whole-set threshold and a cross-fitted estimate with
an interval, by default; slices are pooled toward the whole set with their weight shown; from 300 labeled
cases (or with the data's own split) the calibration/test split is the default again."""

import json
from types import SimpleNamespace

import numpy as np
import pytest
import yaml
from conftest import write
from typer.testing import CliRunner

from helpers.answers import swapped_answers
from verifybench.cases import Verdict
from verifybench.cli import app
from verifybench.metrics import Settings
from verifybench.metrics.crossfit import crossfit
from verifybench.metrics.pooling import PRIOR, pooled_threshold
from verifybench.metrics.summary import compute_metrics


def labeled(n: int, seed: int = 0, split: str | None = None) -> tuple[list[dict], list[Verdict]]:
    """`n` cases, half hallucinated, in three doc types; the score ranks them moderately (AUROC ~0.75)."""
    rng = np.random.default_rng(seed)
    cases, verdicts = [], []
    for i in range(n):
        lab = i % 2 == 1
        cases.append({"id": f"c{i:03d}", "label": lab, "doc_type": "abc"[i % 3], "dataset": "d", "split": split,
                      "sources": ["s"], "response": "r"})
        verdicts.append(Verdict(case_id=f"c{i:03d}", verifier="v", score=float(rng.normal(1.0 if lab else 0.0))))
    return cases, verdicts


def metrics(n: int, **settings) -> dict:
    cases, verdicts = labeled(n)
    return compute_metrics(cases, verdicts, Settings(n_boot=100, **settings))


@pytest.mark.parametrize("n", [60, 100])
def test_sixty_labeled_cases_give_a_threshold_and_an_interval_by_default(n):
    m = metrics(n)
    assert m["estimate"] == "crossfit" and f"{n} labeled cases" in m["estimate_why"]
    o = m["verifiers"]["v"]["overall"]
    assert o["threshold"]["kind"] == "fitted" and o["threshold"]["value"] is not None
    assert o["threshold"]["source"].startswith(f"fitted on all {n} scored labeled cases")
    test = o["test"]
    assert test["estimate"].startswith("cross-fitted") and test["n"] == n
    for k in ("precision", "recall", "f1"):
        lo, hi = test["ci"][k]
        assert lo <= test[k] <= hi and hi - lo > 0


def test_the_same_hundred_cases_split_give_no_threshold():
    """The premise: half of 100 cases hold fewer than 30 of a class, so the split fits nothing."""
    m = metrics(100, estimate="split")
    assert m["estimate"] == "split"
    assert m["verifiers"]["v"]["overall"]["threshold"]["value"] is None


def test_the_estimate_is_the_out_of_fold_one_and_the_threshold_is_fitted_on_all():
    """What the run prints is `crossfit` of the same cases (folds stratified by slice), so no case is
    counted by a threshold fitted on it; the policy's threshold is the one fitted on every case."""
    cases, verdicts = labeled(100)
    m = compute_metrics(cases, verdicts, Settings(n_boot=100))
    o = m["verifiers"]["v"]["overall"]
    order = np.argsort([-v.score for v in verdicts], kind="mergesort")
    y = np.array([c["label"] for c in cases])[order]
    s = np.array([v.score for v in verdicts])[order]
    strata = np.array([c["doc_type"] for c in cases])[order]
    ref = crossfit(y, s, strata=strata, alpha=0.05, n_boot=100)
    assert o["test"]["confusion"] == ref["confusion"]
    assert o["threshold"]["value"] == ref["threshold"]
    assert o["calibration_split"]["tuned"] and o["calibration_split"]["n"] == 100


def test_slices_are_pooled_toward_the_whole_set_with_their_weight_shown():
    cases, verdicts = labeled(100)
    m = compute_metrics(cases, verdicts, Settings(n_boot=100))
    y = np.array([c["label"] for c in cases])
    s = np.array([v.score for v in verdicts])
    for key, sl in m["verifiers"]["v"]["slices"].items():
        t = sl["threshold"]
        mine = np.array([c["doc_type"] == key for c in cases])
        assert t["kind"] == "pooled" and t["weight"] == pytest.approx(mine.sum() / (mine.sum() + PRIOR))
        assert t["value"] == pooled_threshold(y[mine], s[mine], y, s)["threshold"]
        assert sl["test"]["estimate"].startswith("cross-fitted with pooling") and sl["test"]["n"] == mine.sum()


def test_too_few_of_a_class_gives_no_threshold_and_says_how_many_are_needed():
    cases, verdicts = labeled(100)
    keep = [c for c in cases if not c["label"]] + [c for c in cases if c["label"]][:6]
    m = compute_metrics(keep, verdicts, Settings(n_boot=100))
    t = m["verifiers"]["v"]["overall"]["threshold"]
    assert t["value"] is None
    assert "6 hallucinated and 50 faithful cases: cross-fitting needs 10 of each" in t["warning"]
    assert "test" not in m["verifiers"]["v"]["overall"]


def test_from_300_labeled_cases_or_the_datas_own_split_the_split_is_the_default():
    assert metrics(300)["estimate"] == "split"
    cases, verdicts = labeled(100)
    for i, c in enumerate(cases):
        c["split"] = "test" if i % 2 else "calibration"
    m = compute_metrics(cases, verdicts, Settings(n_boot=100))
    assert m["estimate"] == "split" and m["estimate_why"] == "the data's own split field"
    assert metrics(400, estimate="crossfit")["estimate"] == "crossfit"


def test_a_given_threshold_is_measured_on_every_labeled_case():
    m = metrics(100, policy={"v": {"all": 0.5}})
    o = m["verifiers"]["v"]["overall"]
    assert o["threshold"]["kind"] == "given"
    assert o["test"]["n"] == 100 and "given, not fitted" in o["test"]["estimate"]


def test_an_unknown_estimate_is_refused_naming_the_key():
    from verifybench.errors import SuiteError

    with pytest.raises(SuiteError, match=r"s.yaml: metrics.estimate: Input should be 'auto', 'split' or 'crossfit'"):
        Settings.from_suite({"estimate": "kfold"}, "s.yaml")


def cli(*args):
    result = CliRunner().invoke(app, [str(a) for a in args])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return SimpleNamespace(code=result.exit_code, out=result.stdout, err=result.stderr)


def test_a_team_with_100_labeled_answers_gets_a_policy_from_the_cli(tmp_path):
    """The issue's user: 100 labeled answers in a file, the README's two commands: `run` prints a threshold
    and cross-fitted numbers, `thresholds --out` writes a policy with a threshold per doc type."""
    rows = [{**c, "doc_type": ["billing", "roaming"][i % 2 if i < 50 else (i // 2) % 2]}
            for i, c in enumerate(swapped_answers(100, seed=7, faithful=0.2))]
    data = write(tmp_path / "cases.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    suite = write(tmp_path / "s.yaml", yaml.safe_dump({"name": "t", "dataset": {"loader": "jsonl", "path": str(data),
                                                                                "fields": {"doc_type": "doc_type"}},
                                                       "verifiers": ["rouge"], "metrics": {"bootstrap": 50}}))
    out = cli("run", suite, "--out", tmp_path / "run", "-q")
    assert out.code == 0, out.err
    text = " ".join(out.out.split())
    assert "threshold fitted on all 100 labeled cases; precision / recall / F1 cross-fitted" in text
    assert "fitted on all, cross-fitted" in text
    out = cli("thresholds", tmp_path / "run", "--out", tmp_path / "policy.yaml")
    assert out.code == 0, out.err
    policy = yaml.safe_load((tmp_path / "policy.yaml").read_text())
    assert policy["estimate"] == "crossfit"
    rows = policy["thresholds"]["rouge"]
    assert rows["all"]["threshold"] is not None and rows["all"]["test_split"]["estimate"].startswith("cross-fitted")
    assert {rows[k]["source"] for k in ("billing", "roaming")} == {"pooled"}
    assert all(0 < rows[k]["weight"] < 1 for k in ("billing", "roaming"))


def test_an_interval_of_a_rate_stays_within_0_and_1():
    """The spread interval adds the threshold's movement to the counts' draws: a rate near 1 must not read
    past 1."""
    rng = np.random.default_rng(1)  # a draw whose precision interval read [0.77, 1.003] unclipped
    y = np.r_[np.ones(50, bool), np.zeros(50, bool)]
    s = np.r_[rng.normal(1.5, 1, 50), rng.normal(0, 1, 50)]
    out = crossfit(y, s, alpha=0.05, n_boot=200)
    for m in ("precision", "recall", "f1"):
        assert 0 <= out["ci"][m][0] <= out["ci"][m][1] <= 1


def test_a_group_stays_in_one_fold():
    """HaluEval's pairs (one right, one hallucinated answer to a question) share `meta.group`: the run's
    folds keep each pair together, as `crossfit(groups=...)` does."""
    cases, verdicts = labeled(100)
    for i, c in enumerate(cases):
        c["meta"] = {"group": f"q{i // 2}"}
    m = compute_metrics(cases, verdicts, Settings(n_boot=100))
    order = np.argsort([-v.score for v in verdicts], kind="mergesort")
    y = np.array([c["label"] for c in cases])[order]
    s = np.array([v.score for v in verdicts])[order]
    strata = np.array([c["doc_type"] for c in cases])[order]
    groups = np.array([i // 2 for i in range(100)])[order]
    with_groups = crossfit(y, s, strata=strata, groups=groups, alpha=0.05, n_boot=100)
    without = crossfit(y, s, strata=strata, alpha=0.05, n_boot=100)
    assert with_groups["confusion"] != without["confusion"]  # the premise: grouping changes the folds here
    assert m["verifiers"]["v"]["overall"]["test"]["confusion"] == with_groups["confusion"]


def test_the_gates_refit_thresholds_are_the_cross_fitted_ones():
    """`fitted_thresholds` (the gate's refit column) skips the intervals but fits what `evaluate` fits,
    pooled slices included."""
    from verifybench.metrics.summary import evaluate, fitted_thresholds, frame

    cases, verdicts = labeled(100)
    s = Settings(n_boot=100)
    f = frame(cases, verdicts)
    full = evaluate(f, s)["verifiers"]["v"]
    assert {sm["threshold"]["kind"] for sm in full["slices"].values()} == {"pooled"}
    expected = {"all": full["overall"]["threshold"]["value"],
                **{k: sm["threshold"]["value"] for k, sm in full["slices"].items()}}
    assert fitted_thresholds(f, s) == {"v": expected}
