"""verifybench from Python: cases given in memory, a `Run` with DataFrames out, the package's public surface.

The data is the project's own demo set (datasets/demo, written by its generator), read into pandas the
way a notebook would."""

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import roc_auc_score
from typer.testing import CliRunner

import verifybench
from verifybench import api
from verifybench.cases import Case
from verifybench.cli import app
from verifybench.errors import DataError, SuiteError, VerifybenchError

FIELDS = {"id": "id", "question": "question", "doc_type": "doc_type", "split": "split"}
METRICS = {"by": "doc_type", "bootstrap": 300}


def demo_rows(root: Path) -> list[dict]:
    return [json.loads(line) for line in (root / "datasets/demo/cases.jsonl").read_text().splitlines()]


@pytest.fixture(scope="module")
def frame_run(root, tmp_path_factory):
    """The demo set as a DataFrame through `verifybench.run`, and the same data as a suite file."""
    tmp = tmp_path_factory.mktemp("python-api")
    df = pd.DataFrame(demo_rows(root))
    run = verifybench.run(cases=df, fields=FIELDS, verifiers=["rouge", "anchors"], metrics=METRICS, name="demo-df",
                          out=tmp / "from-df", progress=False)
    data = tmp / "files" / "cases.jsonl"
    data.parent.mkdir()
    df.to_json(data, orient="records", lines=True, force_ascii=False)
    suite = tmp / "files" / "suite.yaml"
    suite.write_text(json.dumps({"name": "demo-file", "dataset": {"loader": "jsonl", "path": "cases.jsonl",
                                                                  "name": "demo-df", "fields": FIELDS},
                                 "verifiers": ["rouge", "anchors"], "metrics": METRICS}), encoding="utf-8")
    from_file = api.run(suite, out=tmp / "from-file", progress=False)
    return {"df": df, "run": run, "file_run": from_file, "tmp": tmp}


# --- the "done when": a DataFrame in, frames out that agree with metrics.json -------------------------

def test_a_dataframe_runs_through_verifybench_run(frame_run):
    run, df = frame_run["run"], frame_run["df"]
    assert isinstance(run, verifybench.Run) and run.status == "complete" and run.report_path.exists()
    assert run.n_cases == len(df) == len(run.cases) and run.result.errors == 0 and run.n_error_verdicts == 0
    assert set(run.cases["case_id"]) == set(df["id"])
    assert len(run.verdicts) == 2 * len(df)
    assert run.verdicts.groupby("verifier").size().to_dict() == {"rouge": len(df), "anchors": len(df)}
    # The data and the suite that points at it are in the run directory.
    assert (run.run_dir / "dataset.jsonl").exists() and (run.run_dir / "suite.yaml").exists()


def test_verdicts_agree_with_the_metrics_json_of_the_same_run(frame_run):
    run = frame_run["run"]
    m = json.loads((run.run_dir / "metrics.json").read_text())
    v = run.verdicts
    for vid in ("rouge", "anchors"):
        mine = v[v["verifier"] == vid]
        overall = m["verifiers"][vid]["overall"]
        # AUROC from the frame's scores, by scikit-learn, is the run's AUROC.
        assert roc_auc_score(mine["label"], mine["score"]) == pytest.approx(overall["auroc"], abs=1e-12)
        # The flags at the fitted threshold, on the test split, are the run's confusion matrix.
        test = mine[mine["split"] == "test"]
        flagged, label = test["flagged"].astype(bool), test["label"]
        assert test["threshold"].iloc[0] == overall["threshold"]["value"]
        assert {"tp": int((flagged & label).sum()), "fp": int((flagged & ~label).sum()),
                "fn": int((~flagged & label).sum()), "tn": int((~flagged & ~label).sum())} == overall["test"]["confusion"]
        assert (mine["split"] == "test").sum() == overall["test"]["n"]
        # Per doc type, at each slice's own threshold.
        for key, sm in m["verifiers"][vid]["slices"].items():
            part = test[test["slice"] == key]
            assert sm["threshold"]["value"] is not None, f"{vid}/{key} should have its own threshold"
            assert (part["slice_threshold"] == sm["threshold"]["value"]).all()
            got = part["slice_flagged"].astype(bool)
            assert int((got & part["label"]).sum()) == sm["test"]["confusion"]["tp"]
            assert int((got & ~part["label"]).sum()) == sm["test"]["confusion"]["fp"]


def test_metrics_frame_is_metrics_json_in_long_form(frame_run):
    run = frame_run["run"]
    m = json.loads((run.run_dir / "metrics.json").read_text())
    f = run.metrics
    assert list(f.columns) == ["verifier", "slice", "split", "metric", "value", "ci_low", "ci_high"]
    assert not f.duplicated(["verifier", "slice", "split", "metric"]).any()

    def one(vid, key, split, metric):
        row = f[(f.verifier == vid) & (f.slice == key) & (f.split == split) & (f.metric == metric)]
        assert len(row) == 1, (vid, key, split, metric)
        return row.iloc[0]

    for vid in ("rouge", "anchors"):
        for key, sm in [("all", m["verifiers"][vid]["overall"]), *m["verifiers"][vid]["slices"].items()]:
            r = one(vid, key, "all", "auroc")
            assert (r.value, r.ci_low, r.ci_high) == (sm["auroc"], *sm["ci"]["auroc"])
            for metric in ("precision", "recall", "f1"):
                r = one(vid, key, "test", metric)
                assert (r.value, r.ci_low, r.ci_high) == (sm["test"][metric], *sm["test"]["ci"][metric])
                assert one(vid, key, "calibration", metric).value == sm["calibration_split"][metric]
            assert one(vid, key, "all", "threshold").value == sm["threshold"]["value"]
            assert one(vid, key, "all", "p95_ms").value == sm["latency_ms"]["p95"]
            assert one(vid, key, "test", "tp").value == sm["test"]["confusion"]["tp"]
    # The demo's planted error types are a breakdown of the test split.
    assert (f["slice"].str.startswith("meta.error_type=")).sum() == 0  # no breakdown asked for in METRICS


def test_the_same_data_as_a_suite_file_gives_identical_scores(frame_run):
    mem, files = frame_run["run"], frame_run["file_run"]
    key = ["verifier", "case_id"]
    a = mem.verdicts.sort_values(key).reset_index(drop=True)
    b = files.verdicts.sort_values(key).reset_index(drop=True)
    assert a[key].equals(b[key])
    assert np.array_equal(a["score"].to_numpy(float), b["score"].to_numpy(float))  # identical, not close
    for col in ("split", "label", "doc_type", "slice", "threshold", "flagged", "slice_flagged"):
        assert a[col].equals(b[col]), col
    ma, mb = (json.loads((r.run_dir / "metrics.json").read_text()) for r in (mem, files))
    for vid in ("rouge", "anchors"):
        for part in ("auroc", "auprc", "ci", "threshold", "test", "calibration_split"):
            assert ma["verifiers"][vid]["overall"][part] == mb["verifiers"][vid]["overall"][part], (vid, part)


def test_load_run_gives_the_same_object(frame_run):
    run = frame_run["run"]
    loaded = verifybench.load_run(run.run_dir)
    for name in ("cases", "verdicts", "metrics", "threshold_table", "summary"):
        pd.testing.assert_frame_equal(getattr(loaded, name), getattr(run, name))
    assert loaded.n_cases == run.n_cases and loaded.n_error_verdicts == 0 and loaded.result is None
    assert "anchors" in repr(loaded) and "<table" in loaded._repr_html_()
    with pytest.raises(VerifybenchError, match="manifest.json: not found"):
        verifybench.load_run(frame_run["tmp"])


def test_cases_frame_carries_the_split_the_metrics_used(frame_run):
    cases = frame_run["run"].cases
    assert set(cases["split"]) == {"calibration", "test"}
    assert (cases["split"] == cases["data_split"]).all()  # the demo names its split; the metrics used it
    assert {"meta.error_type", "meta.scenario"} <= set(cases.columns)
    assert cases["label"].sum() == (frame_run["df"]["label"] == "hallucinated").sum()


def test_summary_and_thresholds(frame_run):
    run = frame_run["run"]
    s = run.summary.set_index("verifier")
    m = json.loads((run.run_dir / "metrics.json").read_text())["verifiers"]
    assert s.loc["anchors", "auroc"] == m["anchors"]["overall"]["auroc"]
    assert s.loc["anchors", "test_f1"] == m["anchors"]["overall"]["test"]["f1"]
    assert s.loc["anchors", "threshold_source"].startswith("fitted")
    t = run.threshold_table
    assert set(t["slice"]) == {"all", "support_answer", "contract_summary", "technical_doc"}
    assert len(t) == 2 * 4


def test_run_methods_call_the_commands(frame_run, tmp_path):
    run = frame_run["run"]
    base = run.baseline(out=tmp_path / "baseline.json")
    assert json.loads(base.read_text())["dataset_hash"] == run.dataset_hash
    assert run.gate(base).exit_code == 0
    pairs = run.compare()
    assert len(pairs) == 1 and {pairs[0]["a"], pairs[0]["b"]} == {"rouge", "anchors"}
    # The suite-file run scored the same cases from another file: the same cases by content, so they compare.
    across = run.compare(frame_run["file_run"])
    assert across and all(r["cases"] > 0 for r in across)
    policy = run.policy(by="doc_type", out=tmp_path / "policy.yaml")
    assert (tmp_path / "policy.yaml").exists() and set(policy.thresholds) == {"rouge", "anchors"}


@pytest.mark.slow  # a real MLflow store (see test_tracking.py)
def test_log_to_mlflow_from_a_run(frame_run, tmp_path, monkeypatch):
    mlflow = pytest.importorskip("mlflow")
    monkeypatch.chdir(tmp_path)  # MLflow puts a SQLite store's artifacts under the working directory
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    logged = frame_run["run"].log(uri, experiment="python-api")
    got = mlflow.MlflowClient(uri).get_run(logged.run_id)
    auroc = json.loads((frame_run["run"].run_dir / "metrics.json").read_text())["verifiers"]["anchors"]["overall"]["auroc"]
    assert any(v == pytest.approx(auroc) for k, v in got.data.metrics.items() if "anchors" in k and "auroc" in k)


# --- every kind of input: list of dicts, list of Case, datasets.Dataset ----------------------------------------

@pytest.fixture(scope="module")
def small(root):
    rows = [r for r in demo_rows(root) if r["doc_type"] == "support_answer"][:40]
    return rows


def _rouge(cases, out, **kw):
    return verifybench.run(cases=cases, verifiers=["rouge"], out=out, progress=False, **kw)


def test_list_of_dicts_list_of_cases_and_hf_dataset_give_the_same_scores(small, tmp_path):
    datasets = pytest.importorskip("datasets")
    fields = {"doc_type": "doc_type", "split": "split", "question": "question"}
    as_dicts = _rouge(small, tmp_path / "dicts", fields=fields)
    as_frame = _rouge(pd.DataFrame(small), tmp_path / "frame", fields=fields)
    as_hf = _rouge(datasets.Dataset.from_list(small), tmp_path / "hf", fields=fields)
    import pyarrow as pa

    as_arrow = _rouge(pa.Table.from_pylist(small), tmp_path / "arrow", fields=fields)  # read as its pandas frame
    cases = [Case(id=r["id"], dataset="cases", doc_type=r["doc_type"], split=r["split"], response=r["response"],
                  sources=r["sources"],
                  label=r["label"] == "hallucinated", meta=r["meta"]) for r in small]
    as_cases = _rouge(cases, tmp_path / "cases")
    scores = [r.verdicts.set_index("case_id")["score"].sort_index() for r in (as_dicts, as_frame, as_hf, as_arrow, as_cases)]
    for other in scores[1:]:
        pd.testing.assert_series_equal(scores[0], other)
    # 40 cases are too few to fit a threshold: no flag is made up.
    assert as_dicts.verdicts["threshold"].isna().all() and as_dicts.verdicts["flagged"].isna().all()
    assert as_dicts.threshold_table["warning"].str.startswith("too few cases").all()
    assert as_hf.manifest["dataset"]["options"]["origin"] == "Dataset"
    assert as_cases.manifest["dataset"]["options"]["kind"] == "cases"
    assert list(as_cases.cases["doc_type"].unique()) == ["support_answer"]


def test_a_dataframe_read_from_csv_gets_its_sources_back_as_lists(small, tmp_path):
    """`DataFrame.to_csv` writes a list as its Python repr; a DataFrame read back holds that string."""
    pd.DataFrame(small).to_csv(tmp_path / "x.csv", index=False)
    df = pd.read_csv(tmp_path / "x.csv")
    assert isinstance(df["sources"].iloc[0], str) and df["sources"].iloc[0].startswith("[{'id': ")
    run = _rouge(df, tmp_path / "run", fields={"doc_type": "doc_type", "split": "split"})
    direct = _rouge(pd.DataFrame(small), tmp_path / "direct", fields={"doc_type": "doc_type", "split": "split"})
    pd.testing.assert_series_equal(run.verdicts.set_index("case_id")["score"].sort_index(),
                                   direct.verdicts.set_index("case_id")["score"].sort_index())


def test_numpy_and_missing_values_are_read_as_plain_values(tmp_path):
    df = pd.DataFrame({"response": ["The plan costs 10 dollars.", "Refunds take 30 days.", "It is free."],
                       "sources": [["The plan costs 10 dollars."], ["Refunds take 14 days."], ["It costs 5."]],
                       "label": np.array([0, 1, 1], dtype=np.int64),
                       "score_hint": [0.5, np.nan, 1.5], "when": pd.to_datetime(["2024-01-01", None, "2024-03-01"])})
    run = _rouge(df, tmp_path / "run")
    rows = [json.loads(line) for line in (run.run_dir / "dataset.jsonl").read_text().splitlines()]
    assert rows[1]["score_hint"] is None and rows[1]["when"] is None and rows[0]["label"] == 0
    assert list(run.cases["label"]) == [False, True, True]
    assert run.cases["meta.score_hint"].isna().tolist() == [False, True, False]


# --- bad input: named by row and field, checked before anything is written -------------------------------------

def test_a_bad_record_names_the_row_and_the_field(small, tmp_path):
    df = pd.DataFrame(small)
    df.loc[3, "label"] = "maybe"
    with pytest.raises(DataError, match=r"DataFrame\[record 3\]: field 'label': label value 'maybe'"):
        _rouge(df, tmp_path / "run")
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["status"] == "failed"
    rows = [dict(r) for r in small]
    del rows[2]["response"]
    with pytest.raises(DataError, match=r"list\[record 2\]: field 'response': missing required field"):
        _rouge(rows, tmp_path / "run2")
    skipped = _rouge(rows, tmp_path / "run3", on_error="skip")
    assert skipped.n_cases == len(rows) - 1 and skipped.result.load_errors == 1 == skipped.n_skipped_records
    errors = [json.loads(line) for line in (tmp_path / "run3" / "errors.jsonl").read_text().splitlines()]
    assert errors[0]["file"] == "list" and errors[0]["index"] == 2 and errors[0]["field"] == "response"


@pytest.mark.parametrize("kwargs, message", [
    ({"fields": {"lable": "label"}}, r"fields: unknown key 'lable'"),
    ({"fields": {"label": "is_correct"}}, r"positive: faithful"),
    ({"verifiers": ["nope"]}, r"unknown verifier 'nope'"),
    ({"verifiers": [{"rouge": {"typo": 1}}]}, r"option 'typo'"),
    ({"verifiers": None}, r"verifiers: name the verifiers to run"),
    ({"verifiers": [3]}, r"verifiers\[0\]: expected a verifier name"),
    ({"suite": "evals/demo.yaml"}, r"a suite or cases=, not both"),
])
def test_argument_errors_come_before_any_file(small, tmp_path, kwargs, message):
    args = {"cases": small, "verifiers": ["rouge"], "out": tmp_path / "run", "progress": False, **kwargs}
    with pytest.raises(VerifybenchError, match=message):
        verifybench.run(**args)
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("cases, message", [
    ("cases.csv", r"is a path; cases= takes data in memory"),
    ({"response": "x"}, r"expected a DataFrame, a list of dicts"),
    ([{"response": "x", "label": 1}, "oops"], r"cases\[1\]: expected a dict"),
])
def test_what_cases_cannot_be(tmp_path, cases, message):
    with pytest.raises(VerifybenchError, match=message):
        _rouge(cases, tmp_path / "run")


def test_fields_with_case_objects_and_suite_options_without_cases_are_refused(tmp_path):
    case = Case(id="a", dataset="d", response="x", label=True)
    with pytest.raises(VerifybenchError, match="Case objects already"):
        _rouge([case], tmp_path / "run", fields={"response": "answer"})
    with pytest.raises(VerifybenchError, match="fields, verifiers: given with cases= only"):
        api.run("evals/demo.yaml", fields={"x": "y"}, verifiers=["rouge"])


# --- verifiers as names, options and objects; resume without the DataFrame ------------------------------------

def test_verifiers_as_names_options_and_objects(small, tmp_path):
    from helpers.verifiers import Slow
    from verifybench.verifiers import build

    two = build("rouge", "rouge2", type="rouge2")
    run = verifybench.run(cases=small, verifiers=["rouge", {"bleu": {"order": 2}}, two, Slow(id="slow", ms=0.1)],
                          out=tmp_path / "run", progress=False)
    by_id = {v["id"]: v for v in run.manifest["verifiers"]}
    assert set(by_id) == {"rouge", "bleu", "rouge2", "slow"}
    assert by_id["rouge2"]["config_hash"] == two.config_hash and by_id["bleu"]["config"]["order"] == 2
    suite = (tmp_path / "run" / "suite.yaml").read_text()
    assert "helpers.verifiers:Slow" in suite  # not registered: named by import path, so a resume rebuilds it
    assert run.verdicts.groupby("verifier").size().to_dict() == {k: len(small) for k in by_id}


def _interrupt(run_dir: Path, keep: int) -> int:
    """Leave the run as a kill would: the first `keep` verdicts written, status running."""
    results = run_dir / "results.jsonl"
    lines = results.read_text().splitlines(keepends=True)
    results.write_text("".join(lines[:keep]))
    manifest = json.loads((run_dir / "manifest.json").read_text())
    (run_dir / "manifest.json").write_text(json.dumps({**manifest, "status": "running"}))
    for name in ("metrics.json", "report.html"):
        (run_dir / name).unlink()
    return len(lines) - keep


def test_an_in_memory_run_resumes_from_its_own_directory(small, tmp_path, monkeypatch):
    first = verifybench.run(cases=pd.DataFrame(small), verifiers=["rouge", "bleu"], out=tmp_path / "run",
                            progress=False, batch_size=8)
    before = first.verdicts.set_index(["verifier", "case_id"])["score"].sort_index()
    missing = _interrupt(tmp_path / "run", keep=30)
    # Moved somewhere else and resumed from the command line: no DataFrame, no Python session.
    shutil.move(tmp_path / "run", tmp_path / "moved")
    monkeypatch.chdir(tmp_path)
    out = CliRunner().invoke(app, ["run", "--resume", "moved", "-q"])
    assert out.exit_code == 0, out.output
    resumed = verifybench.load_run(tmp_path / "moved")
    assert resumed.status == "complete" and len(resumed.verdicts) == 2 * len(small)
    pd.testing.assert_series_equal(resumed.verdicts.set_index(["verifier", "case_id"])["score"].sort_index(), before)
    assert f"{missing} new verdicts" in out.stdout
    # The data copy changed: the resume is refused, as for a changed file.
    _interrupt(tmp_path / "moved", keep=30)
    data = tmp_path / "moved" / "dataset.jsonl"
    data.write_text(data.read_text().replace("Team plan", "Team tier", 1))
    with pytest.raises(VerifybenchError, match="the dataset changed since this run started"):
        api.resume(tmp_path / "moved", progress=False)


def test_a_run_directory_with_results_is_not_overwritten(small, tmp_path):
    _rouge(small, tmp_path / "run")
    data = (tmp_path / "run" / "dataset.jsonl").read_bytes()
    with pytest.raises(VerifybenchError, match="already holds results; resume it with verifybench.resume"):
        _rouge(small[:10], tmp_path / "run")
    assert (tmp_path / "run" / "dataset.jsonl").read_bytes() == data  # what a resume reads is untouched


def test_the_dataset_hash_is_the_datas(small, tmp_path):
    a = _rouge(pd.DataFrame(small), tmp_path / "a")
    b = _rouge(pd.DataFrame(small), tmp_path / "b")
    changed = pd.DataFrame(small)
    changed.loc[0, "response"] += " Also, it is free."
    c = _rouge(changed, tmp_path / "c")
    fewer = _rouge(pd.DataFrame(small), tmp_path / "d", limit=20)
    assert a.dataset_hash == b.dataset_hash
    assert len({a.dataset_hash, c.dataset_hash, fewer.dataset_hash}) == 3


# --- the public surface -----------------------------------------------------------------------------------------

# Each CLI command and the api function it calls: the same name, a dash as an underscore (`list`, the old name
# of `components`, is hidden and left out).
COMMANDS = {"run": "run", "report": "report", "describe": "describe", "thresholds": "thresholds",
            "compare": "compare", "baseline": "baseline", "gate": "gate", "log": "log",
            "history": "history", "components": "components", "cascade": "cascade", "label-queue": "label_queue",
            "label-merge": "label_merge", "label-estimate": "label_estimate", "drift": "drift",
            "serve": "serve"}


def test_api_all_lists_every_command_and_the_root_exports_resolve():
    commands = {c.name or c.callback.__name__.replace("_", "-") for c in app.registered_commands if not c.hidden}
    assert commands == set(COMMANDS), "a new CLI command needs its api function in COMMANDS and api.__all__"
    assert set(COMMANDS.values()) | {"resume", "load_run", "Run", "Case", "Verdict", "Verifier"} <= set(api.__all__)
    for name in api.__all__:
        assert hasattr(api, name), name
    for name in verifybench.__all__:
        assert getattr(verifybench, name) is not None, name
    for name in ("run", "load_run", "Run", "Case", "Verdict", "Verifier", "FieldSpec", "resume", "baseline"):
        assert name in verifybench.__all__
    assert verifybench.run is api.run and verifybench.load_run is api.load_run
    for name in set(COMMANDS.values()):  # every command's call is exported from the root, gate and compare too
        assert getattr(verifybench, name) is getattr(api, name), name


def test_the_old_names_still_work_and_say_what_replaces_them():
    for old, new in (("finish", "report"), ("describe_suite", "describe"), ("log_to_mlflow", "log")):
        with pytest.warns(DeprecationWarning, match=f"use verifybench.api.{new}"):
            assert getattr(api, old) is getattr(api, new)
        with pytest.warns(DeprecationWarning, match=f"use verifybench.api.{new}"):
            assert getattr(verifybench, old) is getattr(api, new)
    with pytest.raises(AttributeError, match="no attribute 'nonesuch'"):
        api.nonesuch  # noqa: B018


def test_run_without_a_suite_or_cases_says_what_to_pass():
    with pytest.raises(VerifybenchError, match=r"needs a suite file .*or cases in memory"):
        verifybench.run()


def test_docs_python_example_runs(root, tmp_path, monkeypatch):
    """Every ```python block of docs/python.md, run in order in one namespace, from a fresh folder."""
    import re

    text = (root / "docs/python.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)\n```", text, re.S)
    assert blocks, "docs/python.md has no python example"
    monkeypatch.chdir(tmp_path)
    (tmp_path / "datasets/demo").mkdir(parents=True)
    shutil.copy(root / "datasets/demo/cases.jsonl", tmp_path / "datasets/demo/cases.jsonl")
    namespace: dict = {}
    for i, block in enumerate(blocks):
        exec(compile(block, f"docs/python.md[block {i}]", "exec"), namespace)  # noqa: S102 - our own docs
    assert isinstance(namespace.get("run"), verifybench.Run)


# --- the terminal -------------------------------------------------------------------------------------------

def test_run_ends_with_a_summary_table_then_the_report_path(root, tmp_path):
    suite = tmp_path / "s.yaml"
    suite.write_text(json.dumps({
        "name": "odd", "dataset": {"loader": "jsonl", "path": str(root / "datasets/demo/cases.jsonl"),
                                   "fields": {"doc_type": "doc_type", "split": "split"}},
        "verifiers": ["rouge", {"bleu": {"id": "[/x]"}}]}), encoding="utf-8")
    out = CliRunner().invoke(app, ["run", str(suite), "--out", str(tmp_path / "run"), "-q"])
    assert out.exit_code == 0, out.output
    lines = out.stdout.strip().splitlines()
    assert lines[-1] == str(tmp_path / "run" / "report.html")
    text = "\n".join(lines)
    for head in ("AUROC, all cases [95% CI]", "threshold (source)", "P / R / F1, test split", "p50 / p95 ms", "errors"):
        assert head in text
    m = json.loads((tmp_path / "run" / "metrics.json").read_text())["verifiers"]
    row = next(line for line in lines if "[/x]" in line)  # an id that looks like markup is shown as it is
    o = m["[/x]"]["overall"]
    assert f"{o['auroc']:.3f} [{o['ci']['auroc'][0]:.2f}, {o['ci']['auroc'][1]:.2f}]" in row
    assert f"{o['test']['f1']:.2f}" in row and "fitted" in row
    rouge = next(line for line in lines if line.strip("│┃ ").startswith("rouge"))
    assert f"{m['rouge']['overall']['auroc']:.3f}" in rouge


def test_resume_with_verifier_objects_by_id(small, tmp_path):
    """A verifier class the suite cannot import (defined in a notebook: here, inside this function) is
    given back to `resume` by id; without it the refusal says how to finish the run."""
    from verifybench.verifiers.base import CaseVerifier

    class Local(CaseVerifier):
        name = "local-length"

        def score_case(self, case):
            return len(case.response) % 7 / 7

    run = verifybench.run(cases=small, verifiers=["rouge", Local()], out=tmp_path / "run", progress=False,
                          batch_size=8)
    before = run.verdicts.set_index(["verifier", "case_id"])["score"].sort_index()
    assert "<locals>.Local" in (tmp_path / "run" / "suite.yaml").read_text()
    missing = _interrupt(tmp_path / "run", keep=20)
    with pytest.raises(SuiteError, match=r"cannot be imported.*verifybench.resume\(.*verifiers=.*verifybench report"):
        api.resume(tmp_path / "run", progress=False)
    with pytest.raises(VerifybenchError, match="verifiers: other not in this run"):
        api.resume(tmp_path / "run", progress=False, verifiers=[Local(id="other")])
    resumed = api.resume(tmp_path / "run", progress=False, verifiers=[Local()])
    assert resumed.result.new_verdicts == missing and resumed.status == "complete"
    pd.testing.assert_series_equal(resumed.verdicts.set_index(["verifier", "case_id"])["score"].sort_index(), before)


def test_a_60_case_team_without_enough_labels_is_told_how_to_get_a_threshold(tmp_path):
    """60 cases split under the split's minimum (30 of each class on the calibration split): no threshold,
    and the warning says what to do about it; with `min_per_class` lowered the same cases get one, and by
    default (cross-fitted below 300 labeled cases) they get one too."""
    rows = [{"id": f"t{i}", "response": "The plan costs $29." if i % 2 == 0 else "The plan costs $49.",
             "sources": ["The Pro plan costs $29 per month."], "label": i % 2} for i in range(60)]
    default = verifybench.run(cases=rows, verifiers=["rouge"], out=tmp_path / "default")
    t = default.metrics_json["verifiers"]["rouge"]["overall"]["threshold"]
    assert t["value"] is not None and t["kind"] == "fitted" and "cross-fitting" in t["source"]
    run = verifybench.run(cases=rows, verifiers=["rouge"], metrics={"estimate": "split"}, out=tmp_path / "split")
    t = run.metrics_json["verifiers"]["rouge"]["overall"]["threshold"]
    # the warning names the minimum that would fit one, and what it costs (the threshold's interval)
    assert t["value"] is None and "with `--min-per-class 15` (metrics: {min_per_class: 15})" in t["warning"]
    assert "95% interval" in t["warning"] and "what a lower minimum costs" in t["warning"]
    lowered = verifybench.run(cases=rows, verifiers=["rouge"], metrics={"min_per_class": 10, "estimate": "split"},
                              out=tmp_path / "ten")
    assert lowered.metrics_json["verifiers"]["rouge"]["overall"]["threshold"]["value"] is not None
    # The operating-points plot (test F1 against latency) only where some verifier has a test F1.
    assert 'alt="operating points' not in Path(run.report_path).read_text(encoding="utf-8")
    assert 'alt="operating points' in Path(lowered.report_path).read_text(encoding="utf-8")


def test_the_old_run_attributes_warn_and_keep_their_meaning(frame_run):
    run = frame_run["run"]
    with pytest.warns(DeprecationWarning, match="use Run.threshold_table"):
        pd.testing.assert_frame_equal(run.thresholds, run.threshold_table)
    with pytest.warns(DeprecationWarning, match="n_error_verdicts"):
        assert run.errors == run.result.errors  # a fresh run: this call's errors
    loaded = verifybench.load_run(run.run_dir)
    with pytest.warns(DeprecationWarning, match="result.new_verdicts"):
        assert loaded.new_verdicts == 0
