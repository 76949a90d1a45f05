"""Drift (verifybench.feedback.drift) of a production window against a baseline's test split, on real
HaluEval QA cases: an unchanged sample passes (exit 0), a planted shift (scores moved, a new doc type)
is flagged (exit 1), an impossible comparison is refused (exit 2)."""

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import verifybench as vb
from helpers.loop_runs import make_qa_run, write_guard_log
from verifybench import api
from verifybench.cli import app
from verifybench.feedback.drift import psi
from verifybench.feedback.runs import read_run


@pytest.fixture(scope="module")
def qa_run(tmp_path_factory, data_dir) -> Path:
    return make_qa_run(tmp_path_factory, data_dir)


@pytest.fixture(scope="module")
def base(qa_run, tmp_path_factory) -> Path:
    return vb.baseline(qa_run, out=tmp_path_factory.mktemp("base") / "baseline.json")


def _drift(*args):
    return CliRunner().invoke(app, ["drift", *map(str, args)])


def test_an_unchanged_sample_passes(qa_run, base, tmp_path):
    """Production = the calibration half of the same data (other cases, the same distribution)."""
    t = read_run(qa_run)
    log = write_guard_log(qa_run, tmp_path / "log", rows=np.flatnonzero(t.cal))
    summary = tmp_path / "drift.md"
    r = _drift(base, log, "--summary", summary)
    assert r.exit_code == 0, r.output
    assert "no drift beyond the limits" in r.output and "torn last line" in r.output
    text = summary.read_text()
    assert text.startswith("### verifybench drift: no drift") and "| rouge | all |" in text
    res = api.drift(base, log)
    overall = [row for row in res.rows if row["slice"] == "all"]
    assert {row["check"] for row in overall} == {"rouge", "bleu"}
    assert all(row["psi"] < 0.2 and abs(row["flag_rate_change"]) < 0.05 for row in overall)
    # The flag rate is the policy's threshold applied to the production scores, recomputed by hand.
    b = json.loads(base.read_text())
    thr = b["verifiers"]["rouge"]["slices"]["all"]["threshold"]
    rouge = t.checks["rouge"].score[t.cal]
    row = next(x for x in overall if x["check"] == "rouge")
    assert row["production_flag_rate"] == pytest.approx(np.mean(rouge >= thr))
    assert row["production_cases"] == int(t.cal.sum())


def test_a_planted_shift_and_a_new_doc_type_are_flagged(qa_run, base, tmp_path):
    t = read_run(qa_run)
    cal = np.flatnonzero(t.cal)
    new_doc = {int(i): "contract" for i in cal[:40]}  # 40 of 300 cases: 13% without a slice
    log = write_guard_log(qa_run, tmp_path / "log", rows=cal, shift={"rouge": 0.3}, doc_types=new_doc)
    r = _drift(base, log, "--summary", tmp_path / "d.md", "--json")
    assert r.exit_code == 1, r.output
    res = json.loads(r.stdout)
    rouge = next(x for x in res["rows"] if x["check"] == "rouge" and x["slice"] == "all")
    bleu = next(x for x in res["rows"] if x["check"] == "bleu" and x["slice"] == "all")
    assert rouge["status"] == "drift" and rouge["psi"] > 0.2 and rouge["ks_p_value"] < 0.001
    assert bleu["status"] == "ok"  # the unshifted check is not blamed
    assert res["unseen_doc_types"]["doc_types"] == ["contract"]
    assert res["unseen_doc_types"]["share"] == pytest.approx(40 / len(cal)) and res["unseen_doc_types"]["status"] == "drift"
    assert "**DRIFT**" in (tmp_path / "d.md").read_text()
    # The new doc type alone (no score shift) also fails, through the unseen share.
    log2 = write_guard_log(qa_run, tmp_path / "log2", rows=cal, doc_types=new_doc, torn=False)
    assert _drift(base, log2).exit_code == 1
    assert _drift(base, log2, "--max-unseen-share", "0.2").exit_code == 0


def test_an_impossible_comparison_is_refused(base, tmp_path):
    empty = tmp_path / "nothing"
    empty.mkdir()
    r = _drift(base, empty, "--summary", tmp_path / "d.md")
    assert r.exit_code == 2 and "neither a run directory" in r.output
    assert "REFUSED" in (tmp_path / "d.md").read_text()
    log = tmp_path / "log"
    log.mkdir()
    (log / "decisions-1-0.jsonl").write_text(json.dumps({"id": "a", "response": "x", "doc_type": "qa", "decision": {
        "action": "allow", "checks": [{"verifier": "anchors", "score": 0.3, "threshold": 0.5}]}}) + "\n")
    r = _drift(base, log)
    assert r.exit_code == 2 and "no check in common" in r.output


def test_psi_of_a_sample_against_itself_is_zero_and_grows_with_a_shift():
    rng = np.random.default_rng(0)
    x = rng.random(5000)
    assert psi(x, x) == pytest.approx(0.0, abs=1e-12)
    assert 0 < psi(x, x + 0.05) < psi(x, x + 0.2)


@pytest.mark.slow
def test_drift_figures_are_logged_to_mlflow(qa_run, base, tmp_path, monkeypatch):
    mlflow = pytest.importorskip("mlflow")
    monkeypatch.chdir(tmp_path)  # MLflow puts artifacts under the working directory
    uri = f"sqlite:///{tmp_path / 'store.db'}"
    t = read_run(qa_run)
    log = write_guard_log(qa_run, tmp_path / "log", rows=np.flatnonzero(t.cal), shift={"rouge": 0.3})
    result = api.drift(base, log, mlflow=uri)
    assert result.exit_code == 1
    client = mlflow.MlflowClient(uri)
    (run,) = client.search_runs([client.get_experiment_by_name("verifybench-drift").experiment_id])
    row = next(r for r in result.rows if r["check"] == "rouge" and r["slice"] == "all")
    assert run.data.metrics["rouge.all.psi"] == pytest.approx(row["psi"])
    assert run.data.metrics["exit_code"] == 1 and run.info.status == "FAILED"
    assert any(f"run {run.info.run_id}" in n for n in result.notes)
