"""The gate on runs the tests produce: its outcomes, the defects of issue 14 (each a test that failed
before the fix), JUnit and Markdown output (refusals included), and the CLI exit codes.

The runs are made once per module (they are only read): a clean baseline run, a second clean run, a
run whose judge times out on about 3% of cases, and a run whose judge got worse."""

import json
import os
import shutil
import subprocess
import sys
from types import SimpleNamespace
from xml.etree import ElementTree as ET

import numpy as np
import pytest
import yaml
from conftest import write
from typer.testing import CliRunner

from verifybench import api
from verifybench.cli import app
from verifybench.errors import VerifybenchError
from verifybench.gating.gate import GateRefused
from verifybench.rundir import RunDirError, iter_jsonl

SUITE = """
name: gated
dataset:
  loader: jsonl
  path: {data}
  fields: {{doc_type: doc_type, split: split}}
  {extra}
verifiers:
  - rouge
  - "helpers.gate_verifiers:Timeouts": {{id: judge}}
{metrics}
"""


def make_suite(folder, root, name="gated", extra="", metrics="metrics: {breakdown: [meta.error_type], target: f1}"):
    text = SUITE.format(data=root / "datasets/demo/cases.jsonl", extra=extra, metrics=metrics)
    return write(folder / f"{name}-{abs(hash(extra + metrics))}.yaml", text.replace("name: gated", f"name: {name}"))


def run(suite_file, out, **environment):
    """A run with `environment` set for its duration (the module-scoped runs cannot take `monkeypatch`)."""
    with pytest.MonkeyPatch.context() as mp:
        for key, value in environment.items():
            mp.setenv(key, str(value))
        api.run(suite_file, out=out, progress=False)
    return out


def cli(root, *args, process=False):
    """The command line, in this process (typer's runner: no second interpreter to start per call), or, with
    `process`, as a real process, where the exit status a CI job sees is what the test is about."""
    if process:
        e = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root / "tests"), os.environ.get("PYTHONPATH", "")]),
             "COLUMNS": "200"}
        return subprocess.run([sys.executable, "-m", "verifybench.cli", *map(str, args)], capture_output=True,
                              text=True, env=e)
    result = CliRunner().invoke(app, [str(a) for a in args], env={"COLUMNS": "200"})
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return SimpleNamespace(returncode=result.exit_code, stdout=result.stdout, stderr=result.stderr)


@pytest.fixture(scope="module")
def tmp(tmp_path_factory):
    return tmp_path_factory.mktemp("gate")


@pytest.fixture(scope="module")
def suite(tmp, root):
    return make_suite(tmp, root)


@pytest.fixture(scope="module")
def base_run(tmp, suite):
    return run(suite, tmp / "base")


@pytest.fixture(scope="module")
def baseline(tmp, base_run):
    return api.baseline(base_run, out=tmp / "metrics/gated.json")


@pytest.fixture(scope="module")
def again(tmp, suite):
    return run(suite, tmp / "again")


@pytest.fixture(scope="module")
def timeouts(tmp, suite):
    return run(suite, tmp / "timeouts", VB_TIMEOUTS=3)


@pytest.fixture(scope="module")
def weak(tmp, suite):
    return run(suite, tmp / "weak", VB_WEAKEN="strong")


def copy_run(src, dst):
    shutil.copytree(src, dst)
    return dst


# --- the four outcomes ------------------------------------------------------------------------------

def test_pass_when_nothing_changed(tmp, again, baseline):
    result = api.gate(again, baseline, junit=tmp / "j.xml", summary=tmp / "s.md")
    assert result.exit_code == 0 and not result.failed
    assert {(c.verifier, c.metric) for c in result.gated} == {("rouge", "f1"), ("rouge", "auroc"), ("judge", "f1"),
                                                               ("judge", "auroc")}
    gated = [c for c in result.gated if c.status == "pass"]
    assert gated and all(c.drop == 0 and c.baseline == c.current for c in gated)
    assert "passed" in (tmp / "s.md").read_text()


def test_real_regression_fails_naming_verifier_slice_and_metric(tmp, weak, baseline, root):
    result = api.gate(weak, baseline, junit=tmp / "j.xml")
    assert result.exit_code == 1
    failed = {(c.verifier, c.slice, c.metric) for c in result.failed}
    assert ("judge", "all", "auroc") in failed and all(v == "judge" for v, _, _ in failed)
    c = next(c for c in result.failed if c.metric == "auroc")
    assert c.drop > 0.02 and c.ci[0] > 0 and "excludes 0" in c.message
    out = cli(root, "gate", weak, "--baseline", baseline, process=True)
    assert out.returncode == 1
    assert "regression: judge / all / auroc: auroc dropped by" in " ".join(out.stderr.split())


def test_noise_level_drop_passes(tmp, suite, baseline):
    nudged = run(suite, tmp / "nudged", VB_WEAKEN="tiny")
    result = api.gate(nudged, baseline, max_drop=["auroc=0", "f1=0"])
    drops = [c for c in result.gated if c.verifier == "judge" and c.drop and c.drop > 0]
    assert drops, "the nudge should lower something a little"
    assert not result.failed  # a drop above the allowance, but inside the noise
    assert all(c.ci[0] <= 0 for c in drops) and any("within noise" in c.message for c in drops)
    # f1 asked for by name, and rouge's threshold is degenerate: that one check cannot be gated (exit 2).
    assert [(c.verifier, c.metric) for c in result.refused] == [("rouge", "f1")] and result.exit_code == 2


def test_refuses_other_data_or_suite(tmp, root, baseline):
    with pytest.raises(GateRefused, match="different cases"):
        api.gate(run(make_suite(tmp, root, extra="limit: 300"), tmp / "fewer"), baseline)
    # A suite renamed over the same cases is the same experiment (the cases' content decides, issue 26).
    assert api.gate(run(make_suite(tmp, root, name="other"), tmp / "other"), baseline).exit_code == 0


def test_refuses_a_slice_below_min_cases(again, baseline):
    with pytest.raises(GateRefused, match="fewer than the minimum 100"):
        api.gate(again, baseline, slices="each", min_cases=100)


# --- issue 14, defect 1: one error verdict broke the gate for every verifier -------------------------

def test_error_verdicts_in_the_run_leave_other_verifiers_untouched(timeouts, baseline):
    errors = [v for v in iter_jsonl(timeouts / "results.jsonl") if "error" in v]
    assert errors and {v["verifier"] for v in errors} == {"judge"}  # the judge timed out on a few cases
    result = api.gate(timeouts, baseline)
    rouge = [c for c in result.gated if c.verifier == "rouge" and c.status == "pass"]
    assert rouge and all(c.drop == 0 and c.baseline == c.current for c in rouge)
    assert not [c for c in result.failed if c.verifier == "rouge"]
    # The judge's own checks count its timeouts as wrong, and nothing else changed.
    base_doc = json.loads(baseline.read_text())
    judge = next(c for c in result.gated if c.verifier == "judge" and c.metric == "auroc")
    assert judge.baseline == pytest.approx(base_doc["verifiers"]["judge"]["slices"]["all"]["auroc"])
    assert judge.current < judge.baseline


def test_error_verdicts_in_the_baseline_do_not_hide_a_regression(tmp, timeouts, weak):
    with_errors = api.baseline(timeouts, out=tmp / "metrics/with-errors.json")
    doc = json.loads(with_errors.read_text())
    rouge, judge = doc["verifiers"]["rouge"]["test_scores"], doc["verifiers"]["judge"]["test_scores"]
    assert all(isinstance(s, float) for s in rouge.values())  # not None for every case
    errored = {v["case_id"] for v in iter_jsonl(timeouts / "results.jsonl") if "error" in v}
    assert {cid for cid, s in judge.items() if s is None} == errored & set(judge)
    result = api.gate(weak, with_errors)
    assert result.exit_code == 1 and {c.verifier for c in result.failed} == {"judge"}


# --- defect 2: dropping calibration verdicts passed silently -----------------------------------------

def drop_verdicts(run_dir, verifier, n, role="calibration"):
    # The demo data carries its own split names: "calibration" and "test".
    cases = {c["id"]: c for c in iter_jsonl(run_dir / "cases.jsonl")}
    lines = (run_dir / "results.jsonl").read_text().splitlines(keepends=True)
    dropped, kept = [], []
    for line in lines:
        v = json.loads(line)
        if v["verifier"] == verifier and len(dropped) < n and cases[v["case_id"]]["split"] == role:
            dropped.append(v["case_id"])
        else:
            kept.append(line)
    (run_dir / "results.jsonl").write_text("".join(kept))
    return dropped


def test_missing_calibration_verdicts_are_refused(tmp, again, baseline, root):
    holed = copy_run(again, tmp / "holed")
    dropped = drop_verdicts(holed, "rouge", 10)
    with pytest.raises(GateRefused, match=r"verifier 'rouge' has no verdict for 10 of 384 cases"):
        api.gate(holed, baseline)
    with pytest.raises(RunDirError, match="resume the run"):
        api.baseline(holed, out=tmp / "never.json")
    out = cli(root, "gate", holed, "--baseline", baseline)
    assert out.returncode == 2 and dropped[0] in out.stderr


# --- defect 3: duplicated verdicts were counted twice --------------------------------------------------

def test_duplicated_verdicts_are_refused_by_report_baseline_and_gate(tmp, again, baseline, root):
    doubled = copy_run(again, tmp / "doubled")
    results = doubled / "results.jsonl"
    results.write_text(results.read_text() * 2)
    for call in (lambda: api.report(doubled), lambda: api.baseline(doubled, out=tmp / "never.json"),
                 lambda: api.gate(doubled, baseline)):
        with pytest.raises(VerifybenchError, match=r"768 duplicated verdict\(s\) for 768 \(verifier, case\) pair"):
            call()
    out = cli(root, "report", doubled)
    assert out.returncode == 2 and "duplicated" in out.stderr and "Traceback" not in out.stderr


# --- defect 4: a baseline from an unfinished run --------------------------------------------------------

def test_baseline_refuses_a_failed_or_running_run(tmp, root):
    rows = (root / "datasets/demo/cases.jsonl").read_text().splitlines()
    data = write(tmp / "broken/cases.jsonl", "\n".join(rows[:200] + ['{"id": "bad", "label": 1}'] + rows[200:]) + "\n")
    broken = write(tmp / "broken.yaml", SUITE.format(data=data, extra="", metrics=""))
    with pytest.raises(VerifybenchError):
        api.run(broken, out=tmp / "broken-run", progress=False)
    assert json.loads((tmp / "broken-run/manifest.json").read_text())["status"] == "failed"
    with pytest.raises(RunDirError, match=r"the run is failed \(.*\); a baseline needs a finished run"):
        api.baseline(tmp / "broken-run", out=tmp / "never.json")

    running = copy_run(tmp / "base", tmp / "running")
    manifest = json.loads((running / "manifest.json").read_text())
    (running / "manifest.json").write_text(json.dumps({**manifest, "status": "running"}))
    with pytest.raises(RunDirError, match="the run is running"):
        api.baseline(running, out=tmp / "never.json")
    out = cli(root, "baseline", running, "--out", tmp / "never.json")
    assert out.returncode == 2 and not (tmp / "never.json").exists()


# --- defect 5: a score that is not a number -------------------------------------------------------------

def test_non_numeric_score_is_a_refusal_naming_file_and_line(tmp, again, baseline, root):
    bad = copy_run(again, tmp / "bad-score")
    lines = (bad / "results.jsonl").read_text().splitlines(keepends=True)
    row = json.loads(lines[4])
    lines[4] = json.dumps({**row, "score": "high"}) + "\n"
    (bad / "results.jsonl").write_text("".join(lines))
    out = cli(root, "gate", bad, "--baseline", baseline, "--junit", tmp / "bad.xml")
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "results.jsonl:5: not a verdict: field 'score'" in " ".join(out.stderr.split())
    assert "results.jsonl:5" in (tmp / "bad.xml").read_text()


# --- a refusal still writes its files ------------------------------------------------------------------

def test_a_refusal_still_writes_junit_and_markdown_with_the_reason(tmp, root, baseline):
    fewer = run(make_suite(tmp, root, extra="limit: 300"), tmp / "fewer-files")
    out = cli(root, "gate", fewer, "--baseline", baseline, "--junit", tmp / "r/gate.xml", "--summary", tmp / "r/gate.md")
    assert out.returncode == 2 and "refusing to compare" in out.stderr
    suite_el = ET.parse(tmp / "r/gate.xml").getroot().find("testsuite")
    assert suite_el.get("errors") == "1" and "different cases" in suite_el.find("testcase/error").get("message")
    md = (tmp / "r/gate.md").read_text()
    assert "REFUSED" in md and "different cases" in md
    # A baseline that is not there: the files are still written.
    out = cli(root, "gate", fewer, "--baseline", tmp / "nope.json", "--junit", tmp / "r2/gate.xml")
    assert out.returncode == 2 and "no such baseline" in ET.parse(tmp / "r2/gate.xml").getroot().find(
        "testsuite/testcase/error").get("message")


def test_junit_is_valid_and_has_one_case_per_check(tmp, weak, baseline):
    result = api.gate(weak, baseline, slices="each", junit=tmp / "j.xml")
    suite_el = ET.parse(tmp / "j.xml").getroot().find("testsuite")
    cases = suite_el.findall("testcase")
    assert len(cases) == len(result.gated) == int(suite_el.get("tests"))
    assert int(suite_el.get("failures")) == len(result.failed) == len([c for c in cases if c.find("failure") is not None])
    assert all(c.get("classname") and c.get("name") for c in cases)
    slices = {c.get("name").split(".")[0] for c in cases}
    assert {"all", "support_answer", "contract_summary", "technical_doc"} <= slices


# --- gate and compare tell one story ---------------------------------------------------------------------

def test_gate_holds_the_baseline_threshold_and_shows_a_refit(tmp, weak, baseline):
    base = json.loads(baseline.read_text())
    held = base["verifiers"]["judge"]["slices"]["all"]["threshold"]
    own = json.loads((weak / "metrics.json").read_text())["verifiers"]["judge"]["overall"]["threshold"]["value"]
    assert own != held  # a refit on the weakened run would move the threshold
    result = api.gate(weak, baseline, summary=tmp / "held.md")
    f1 = next(c for c in result.gated if (c.verifier, c.slice, c.metric) == ("judge", "all", "f1"))
    assert f1.threshold == held and f1.refit_threshold == own
    # The held F1 is computed at the baseline's threshold, the refit one at the run's own.
    scores = {v["case_id"]: v.get("score") for v in iter_jsonl(weak / "results.jsonl") if v["verifier"] == "judge"}
    labels = {c["id"]: c["label"] for c in iter_jsonl(weak / "cases.jsonl")}
    ids = sorted(base["verifiers"]["judge"]["test_scores"])
    y, s = np.array([labels[i] for i in ids]), np.array([scores[i] for i in ids])
    for t, value in ((held, f1.current), (own, f1.refit_value)):
        tp, fp, fn = ((s >= t) & y).sum(), ((s >= t) & ~y).sum(), ((s < t) & y).sum()
        assert value == pytest.approx(2 * tp / (2 * tp + fp + fn))
    md = (tmp / "held.md").read_text()
    assert "held at the baseline's" in md and f"@ {own:.4f}" in md


def test_gate_and_compare_show_the_same_numbers_over_the_same_cases(base_run, weak, baseline):
    result = api.gate(weak, baseline, max_drop=["auroc=0.02", "auprc=0.02", "f1=0.02"])
    [judge] = [r for r in api.compare(base_run, weak) if r["a"].startswith("judge")]
    assert "held" in judge["threshold_mode"]
    assert judge["cases"] == next(c.cases for c in result.gated if c.verifier == "judge") == 192
    for c in (c for c in result.gated if c.verifier == "judge"):
        m = judge["metrics"][c.metric]
        assert (m["a"], m["b"], m["diff"]) == pytest.approx((c.baseline, c.current, c.drop))
        assert m["ci"] == pytest.approx(list(c.ci))
    # The drop is baseline minus now, over the test split only (not AUROC over every case).
    auroc = next(c for c in result.gated if (c.verifier, c.metric) == ("judge", "auroc"))
    assert auroc.baseline - auroc.current == pytest.approx(auroc.drop)
    refit = [r for r in api.compare(base_run, weak, refit=True) if r["a"].startswith("judge")][0]
    assert "refit" in refit["threshold_mode"] and refit["thresholds"][0] != refit["thresholds"][1]


def test_auroc_is_gated_for_slices_without_a_threshold(tmp, root):
    suite = make_suite(tmp, root, name="nothresholds", metrics="metrics: {min_per_class: 100, breakdown: [meta.error_type]}")
    first, second = run(suite, tmp / "nt-1"), run(suite, tmp / "nt-2")
    path = api.baseline(first, out=tmp / "metrics/nt.json")
    doc = json.loads(path.read_text())
    assert all(r["threshold"] is None and r["test_cases"] == 64 for k, r in doc["verifiers"]["judge"]["slices"].items()
               if k != "all")
    result = api.gate(second, path, slices="each")
    auroc = [c for c in result.gated if c.metric == "auroc"]
    assert len(auroc) == 8 and all(c.status == "pass" and c.drop == 0 for c in auroc)
    assert all(c.status == "skipped" and "no threshold" in c.message for c in result.gated if c.metric == "f1")


# --- degenerate thresholds -------------------------------------------------------------------------------

def test_a_metric_that_exists_only_because_of_a_degenerate_threshold_is_not_gated(tmp, again, baseline, root):
    rouge = json.loads(baseline.read_text())["verifiers"]["rouge"]["slices"]["all"]
    assert rouge["threshold_degenerate"] == "flags every calibration case"  # rouge ranks the demo set weakly
    result = api.gate(again, baseline)
    f1 = next(c for c in result.gated if (c.verifier, c.metric) == ("rouge", "f1"))
    assert f1.status == "refused" and "flags every calibration case" in f1.message and "0.667" in f1.message
    assert result.exit_code == 0  # f1 was a default, not asked for: listed as not gated
    asked = api.gate(again, baseline, max_drop=["f1=0.02"], junit=tmp / "deg.xml")
    assert asked.exit_code == 2 and [c.verifier for c in asked.refused] == ["rouge"]
    assert ET.parse(tmp / "deg.xml").getroot().find("testsuite").get("errors") == "1"
    out = cli(root, "gate", again, "--baseline", baseline, "--max-drop", "f1=0.02")
    assert out.returncode == 2 and "cannot gate: rouge / all / f1" in " ".join(out.stderr.split())


def test_degenerate_and_fallback_thresholds_are_flagged_in_metrics_policy_and_cli(tmp, again, root):
    metrics = json.loads((again / "metrics.json").read_text())
    rouge = metrics["verifiers"]["rouge"]["overall"]
    assert rouge["threshold"]["degenerate"] == "flags every calibration case"
    assert rouge["flag_all"]["f1"] == pytest.approx(2 / 3) and rouge["test"]["f1"] == pytest.approx(2 / 3)
    assert metrics["verifiers"]["judge"]["overall"]["threshold"]["degenerate"] is None
    policy = api.thresholds(again, out=tmp / "p.yaml")
    assert "degenerate" in yaml.safe_load((tmp / "p.yaml").read_text())["thresholds"]["rouge"]["all"]
    assert policy.thresholds["judge"]["all"].flag_all.f1 == pytest.approx(2 / 3)
    out = cli(root, "thresholds", again)
    assert out.returncode == 0 and "DEGENERATE" in out.stdout and "flag-all F1" in out.stdout
    # balanced accuracy must separate the classes: on the same scores it does not flag everything.
    ba = api.thresholds(again, target="balanced_accuracy")
    assert ba.target == "max balanced accuracy"
    assert ba.thresholds["judge"]["all"].degenerate is None


# --- latency ---------------------------------------------------------------------------------------------

def test_latency_is_gated_only_when_named(tmp, again, baseline):
    doc = json.loads(baseline.read_text())
    for v in doc["verifiers"].values():
        v["slices"]["all"]["p95_ms"] = 1e-6  # pretend the baseline was far faster
    write(tmp / "fast.json", json.dumps(doc))
    assert api.gate(again, tmp / "fast.json").exit_code == 0
    slow = api.gate(again, tmp / "fast.json", max_rise=["p95_ms=50%"])
    assert slow.exit_code == 1 and all(c.metric == "p95_ms" for c in slow.failed)


def test_batch_average_latency_is_marked_and_not_gated_unless_asked(tmp, root):
    suite = write(tmp / "batchy.yaml", f"""
name: batchy
dataset: {{loader: jsonl, path: {root / 'datasets/demo/cases.jsonl'}, fields: {{doc_type: doc_type, split: split}}}}
verifiers:
  - rouge
  - "helpers.verifiers:BatchFails": {{id: batchy}}
""")
    first, second = run(suite, tmp / "b-1"), run(suite, tmp / "b-2")
    lat = {v: m["overall"]["latency_ms"] for v, m in json.loads((first / "metrics.json").read_text())["verifiers"].items()}
    # The batch verifier: one figure per batch; its first batch (64 cases) is the warm-up, left out.
    assert lat["batchy"]["basis"] == "batch_average" and lat["batchy"]["warmup"]["cases"] == 64
    assert lat["rouge"]["basis"] == "case" and lat["rouge"]["warmup"]["cases"] == 1
    kinds = [v["latency_kind"] for v in iter_jsonl(first / "results.jsonl") if v["verifier"] == "batchy"]
    assert kinds[:64] == ["warmup"] * 64 and set(kinds[64:]) == {"batch"}
    path = api.baseline(first, out=tmp / "metrics/batchy.json")
    refused = api.gate(second, path, max_rise=["p95_ms=1000%"])
    assert refused.exit_code == 2
    [r] = refused.refused
    assert (r.verifier, r.metric) == ("batchy", "p95_ms") and "batch average" in r.message
    assert [c.status for c in refused.gated if c.verifier == "rouge" and c.metric == "p95_ms"] != ["refused"]
    allowed = api.gate(second, path, max_rise=["p95_ms=1000%"], allow_batch_latency=True)
    assert allowed.exit_code in (0, 1) and not allowed.refused
    assert "gated as asked" in next(c for c in allowed.gated if c.verifier == "batchy" and c.metric == "p95_ms").message


# --- done when: a team's own 60 cases -------------------------------------------------------------------

def team_dataset(folder):
    """60 labeled answers over 3 doc types, balanced within each: 24 support, 24 contract, 12 technical."""
    rows = []
    for doc_type, n in (("support", 24), ("contract", 24), ("technical", 12)):
        for i in range(n):
            label = i % 2
            source = f"The {doc_type} document number {i} says the plan costs {10 + i} dollars a month."
            response = f"The plan costs {10 + i + 5 * label} dollars a month."
            rows.append({"id": f"{doc_type}-{i}", "response": response, "sources": [source], "label": label,
                         "doc_type": doc_type})
    return write(folder / "team/cases.jsonl", "\n".join(json.dumps(r) for r in rows) + "\n")


def test_a_team_dataset_gets_per_doc_type_thresholds_a_baseline_and_a_gate(tmp, root):
    data = team_dataset(tmp)
    suite = write(tmp / "team/suite.yaml", """
name: team
dataset: {loader: jsonl, path: cases.jsonl, fields: {doc_type: doc_type}}
verifiers:
  - "helpers.gate_verifiers:Timeouts": {id: judge}
metrics:
  by: doc_type
  min_per_class: 5
  estimate: split
""")
    assert data.exists()
    first = run(suite, tmp / "team-1")
    metrics = json.loads((first / "metrics.json").read_text())
    assert metrics["split_from"] == "seeded" and metrics["split"] == {"calibration": 30, "test": 30}
    judge = metrics["verifiers"]["judge"]
    # The seeded split keeps each doc type's classes balanced on both sides.
    for key, n in (("support", 6), ("contract", 6), ("technical", 3)):
        assert judge["slices"][key]["labels"] == {"calibration": {"hallucinated": n, "faithful": n},
                                                  "test": {"hallucinated": n, "faithful": n}}
    kinds = {k: s["threshold"]["kind"] for k, s in judge["slices"].items()}
    assert kinds == {"support": "fitted", "contract": "fitted", "technical": "fallback"}
    tech = judge["slices"]["technical"]
    assert tech["threshold"]["value"] == judge["overall"]["threshold"]["value"]
    assert tech["threshold"]["fallback_from"] == "all" and "too few cases" in tech["threshold"]["warning"]
    assert tech["needs"]["threshold"]["more_hallucinated"] == 4  # 2 more in calibration, half of new cases land there
    policy = api.thresholds(first, min_per_class=5, out=tmp / "team/policy.yaml")
    assert policy.thresholds["judge"]["technical"].fallback_from == "all"
    html = (first / "report.html").read_text()
    assert "fallback: all" in html

    path = api.baseline(first, out=tmp / "team/metrics/team.json")
    unchanged = api.gate(run(suite, tmp / "team-2"), path)
    assert unchanged.exit_code == 0 and all(c.drop == 0 for c in unchanged.gated if c.status == "pass")
    worse = api.gate(run(suite, tmp / "team-weak", VB_WEAKEN="strong"), path)
    assert worse.exit_code == 1 and ("judge", "all", "auroc") in {(c.verifier, c.slice, c.metric) for c in worse.failed}
