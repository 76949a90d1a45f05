"""Cascades and combinations from a run directory (verifybench.feedback.cascade): every test-split figure
equals a brute-force recomputation from the run's verdicts, one case at a time; the confident region
and the thresholds are fitted on the calibration split only."""

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest
import yaml
from typer.testing import CliRunner

import verifybench as vb
from helpers.loop_runs import make_qa_run
from verifybench.cli import app
from verifybench.feedback.cascade import cascades
from verifybench.rundir import RESULTS, read_case_index, read_verdicts


@pytest.fixture(scope="module")
def qa_run(tmp_path_factory, data_dir) -> Path:
    return make_qa_run(tmp_path_factory, data_dir)


def brute(run_dir: Path, name: str, result: dict) -> dict:
    """The candidate's test-split counts, latency and cost recomputed from Verdict objects and the
    case index, one case at a time (the split from `Run.verdicts`, which the metrics layer assigns)."""
    verdicts = {(v.verifier, v.case_id): v for v in read_verdicts(run_dir)}
    labels = {r["id"]: bool(r["label"]) for r in read_case_index(run_dir)}
    split = dict(zip(vb.load_run(run_dir).verdicts["case_id"], vb.load_run(run_dir).verdicts["split"]))
    c = next(r for r in result["candidates"] if r["name"] == name)
    thr = c["thresholds"]
    counts = {"tp": 0, "fp": 0, "fn": 0, "tn": 0}
    lat, deferred, n = [], 0, 0

    def flags(vid, cid):
        v = verdicts[(vid, cid)]
        if v.error is not None or v.score is None:
            return None
        return v.score >= thr[vid]

    for cid, y in labels.items():
        if split[cid] != "test":
            continue
        n += 1
        used = list(c["checks"])
        if c["kind"] == "single":
            f = flags(used[0], cid)
        elif c["kind"] in ("any", "all"):
            fs = [flags(v, cid) for v in used]
            f = None if None in fs else (any(fs) if c["kind"] == "any" else all(fs))
        else:
            cheap, exp = used
            v = verdicts[(cheap, cid)]
            lo = c["region"]["allow_at_or_below"]
            hi = c["region"]["flag_at_or_above"]
            lo = -math.inf if lo is None else lo
            hi = math.inf if hi is None else hi
            if v.error is None and v.score is not None and v.score <= lo:
                f, used = False, [cheap]
            elif v.error is None and v.score is not None and v.score >= hi:
                f, used = True, [cheap]
            else:
                f = flags(exp, cid)
                deferred += 1
        pred = (not y) if f is None else f  # an error counts as wrong
        counts[("t" if pred == y else "f") + ("p" if pred else "n")] += 1
        ls = [verdicts[(u, cid)] for u in used]
        if all(x.latency_ms is not None and x.latency_kind != "warmup" for x in ls):
            lat.append(sum(x.latency_ms for x in ls))
    return {"counts": counts, "n": n, "lat": lat, "deferred": deferred}


def test_every_candidate_equals_a_brute_force_recomputation(qa_run):
    result = cascades(qa_run, ["rouge", "bleu"])
    metrics = json.loads((qa_run / "metrics.json").read_text())
    names = [c["name"] for c in result["candidates"]]
    assert names == ["rouge", "bleu", "any(rouge,bleu)", "all(rouge,bleu)", "cascade(rouge->bleu)"]
    for vid in ("rouge", "bleu"):  # the thresholds are the ones the report fitted on the calibration split
        assert result["candidates"][names.index(vid)]["thresholds"][vid] == \
            metrics["verifiers"][vid]["overall"]["threshold"]["value"]
    for c in result["candidates"]:
        b = brute(qa_run, c["name"], result)
        t = c["test"]
        assert t["confusion"] == b["counts"], c["name"]
        assert t["n"] == b["n"] == result["test_cases"]
        tp, fp, fn = b["counts"]["tp"], b["counts"]["fp"], b["counts"]["fn"]
        assert t["f1"] == pytest.approx(2 * tp / (2 * tp + fp + fn))
        assert t["precision"] == pytest.approx(tp / (tp + fp)) and t["recall"] == pytest.approx(tp / (tp + fn))
        lo, hi = t["ci"]["f1"]
        assert lo <= t["f1"] <= hi and hi - lo > 0
        assert t["latency_ms"]["cases"] == len(b["lat"])
        assert t["latency_ms"]["mean"] == pytest.approx(np.mean(b["lat"]))
        assert t["latency_ms"]["p95"] == pytest.approx(np.percentile(b["lat"], 95))
        if c["kind"] == "cascade":
            assert t["deferred_share"] == pytest.approx(b["deferred"] / b["n"])
    cas = result["candidates"][-1]
    # the single test-split metrics agree with the report's, which counts only scored cases (none failed here)
    assert result["candidates"][0]["test"]["f1"] == pytest.approx(metrics["verifiers"]["rouge"]["overall"]["test"]["f1"])
    assert cas["fit"]["grid_points"] > 100


def test_the_region_and_thresholds_are_fitted_on_the_calibration_split_only(qa_run, tmp_path):
    """Scrambling every test-split score changes the test figures but not one fitted number."""
    before = cascades(qa_run, ["rouge", "bleu"])
    copy = tmp_path / "run"
    shutil.copytree(qa_run, copy)
    test_ids = set(vb.load_run(qa_run).verdicts.query("split == 'test'")["case_id"])
    rng = np.random.default_rng(1)
    lines = []
    for raw in (qa_run / RESULTS).read_text().splitlines():
        v = json.loads(raw)
        if v["case_id"] in test_ids and v.get("score") is not None:
            v["score"] = float(rng.random())
        lines.append(json.dumps(v))
    (copy / RESULTS).write_text("\n".join(lines) + "\n")
    (copy / "metrics.json").unlink()
    after = cascades(copy, ["rouge", "bleu"])
    for a, b in zip(before["candidates"], after["candidates"]):
        assert a["thresholds"] == b["thresholds"]
        assert a.get("region") == b.get("region") and a.get("fit") == b.get("fit")
    assert [c["test"]["confusion"] for c in before["candidates"]] != [c["test"]["confusion"] for c in after["candidates"]]


def test_cli_cascade_writes_a_guard_file(qa_run, tmp_path):
    out = tmp_path / "guard.yaml"
    r = CliRunner().invoke(app, ["cascade", str(qa_run), "--checks", "rouge,bleu", "--out", str(out), "--json"])
    assert r.exit_code == 0, r.output
    result = json.loads(r.stdout)
    doc = yaml.safe_load(out.read_text())
    best = next(c for c in result["candidates"] if c["name"] == result["best"])
    assert (doc["kind"], doc["format"]) == ("verifybench.guard", 2)  # the guard file names its format
    assert doc["combination"] == "cascade" and doc["checks"] == best["checks"]
    assert doc["cascade"] == {"allow_at_or_below": best["region"]["allow_at_or_below"],
                              "flag_at_or_above": best["region"]["flag_at_or_above"]}
    # The file is a guard the service builds: its checks, at the run's thresholds, with the measured region.
    from verifybench.guard import Guard

    guard = Guard(out, log_dir=False)
    assert guard.bounds == (best["region"]["allow_at_or_below"], best["region"]["flag_at_or_above"])
    assert [c.id for c in guard.checks] == best["checks"]
    bad = CliRunner().invoke(app, ["cascade", str(qa_run), "--checks", "rouge,nope"])
    assert bad.exit_code == 2 and "nope" in bad.output and "rouge, bleu" in bad.output


def test_the_stack_is_fitted_on_calibration_cases_only(qa_run, monkeypatch, tmp_path):
    """Every row scikit-learn is given to fit on is a calibration case's, the final fit holds them all, and
    scrambling the test split's scores and labels leaves the fitted model and threshold as they were."""
    from sklearn.preprocessing import StandardScaler

    from verifybench.feedback.runs import RunTable
    from verifybench.feedback.stack import coefficients, fit_stack
    from verifybench.metrics.thresholds import parse_target

    t = RunTable.open(qa_run)
    seen = []
    real_fit = StandardScaler.fit

    def spy(self, X, y=None, **kw):
        seen.append(np.asarray(X).copy())
        return real_fit(self, X, y, **kw)

    monkeypatch.setattr(StandardScaler, "fit", spy)
    st = fit_stack(t, ["rouge", "bleu"], parse_target("f1"))
    monkeypatch.undo()
    cal_rows = np.flatnonzero(t.cal)
    assert set(st.fitted_rows.tolist()) == set(cal_rows.tolist()) and not (set(cal_rows) & set(np.flatnonzero(t.test)))
    cal_x = st.features(t, cal_rows)
    cal_set = {tuple(r) for r in cal_x.tolist()}
    test_set = {tuple(r) for r in st.features(t, np.flatnonzero(t.test)).tolist()} - cal_set
    assert len(seen) == 6 and len(seen[-1]) == len(cal_rows)  # 5 folds, then the whole calibration split
    for x in seen:
        rows = {tuple(r) for r in x.tolist()}
        assert rows <= cal_set and not rows & test_set
    # Scramble the test split: same model, same threshold.
    t.checks["rouge"].score[t.test] = np.random.default_rng(0).random(int(t.test.sum()))
    t.label = t.label.copy()
    t.label[t.test] = ~t.label[t.test]
    again = fit_stack(t, ["rouge", "bleu"], parse_target("f1"))
    assert coefficients(again) == coefficients(st) and again.threshold == st.threshold

    result = cascades(qa_run, ["rouge", "bleu"], stack=True)
    s = result["candidates"][-1]
    assert s["kind"] == "stack" and s["fitted_on_cases"] == len(cal_rows) == result["calibration_cases"]
    assert [p["b"] for p in s["paired"]] == ["rouge", "bleu"]
    for p in s["paired"]:
        d = p["metrics"]["f1"]
        assert d["diff"] == pytest.approx(s["test"]["f1"] - next(c for c in result["candidates"]
                                                                   if c["name"] == p["b"])["test"]["f1"])
        assert d["ci"][0] <= d["diff"] <= d["ci"][1]


def test_saved_cascades_join_the_reports_operating_points(qa_run, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(qa_run, run)
    r = CliRunner().invoke(app, ["cascade", str(run), "--checks", "rouge,bleu", "--save", "--json"])
    assert r.exit_code == 0, r.output
    result = json.loads(r.stdout)
    points = {p["verifier"]: p for p in json.loads((run / "metrics.json").read_text())["operating_points"]}
    assert {"rouge", "bleu", "any(rouge,bleu)", "all(rouge,bleu)", "cascade(rouge->bleu)"} <= set(points)
    cas = next(c for c in result["candidates"] if c["kind"] == "cascade")
    assert points["cascade(rouge->bleu)"]["f1"] == pytest.approx(cas["test"]["f1"])
    assert any(p["pareto"] for p in points.values())
    assert (run / "report.html").stat().st_mtime >= (run / "cascades.json").stat().st_mtime
    # Verdicts that changed since: the saved combinations are left off, with a note.
    with open(run / RESULTS, "a") as f:
        f.write("\n")
    vb.report(run)
    points = {p["verifier"] for p in json.loads((run / "metrics.json").read_text())["operating_points"]}
    assert points == {"rouge", "bleu"}
    assert "cascades.json was measured on other verdicts" in (run / "report.html").read_text()
