"""Unlabeled cases are cases: `run` scores them (verdicts, latency, cost), the metrics that need a label
count only the labeled ones, and the unlabeled are counted in the summary, metrics.json and the report.
A missing label is a bad record only where the dataset asks for labels (`require_labels: true`)."""

import json

import pytest
from conftest import write

from verifybench import api
from verifybench.errors import DataError
from verifybench.loaders import DatasetSpec, iter_cases
from verifybench.metrics.settings import OVERALL
from verifybench.rundir import iter_jsonl
from verifybench.suite import parse_suite

N = 80  # 40 of each class: enough for a whole-set threshold at min_per_class 10


def _rows(n=N, unlabeled=0):
    rows = [{"id": f"c{i}", "response": f"the answer is {i}", "sources": [f"the answer is {i % 3}"],
             "label": i % 2, "doc_type": ["qa", "summary"][i % 2]} for i in range(n)]
    # unlabeled rows: no label field, null, and an empty string, in turn
    for j in range(unlabeled):
        row = {"id": f"u{j}", "response": f"the answer is {j}", "sources": [f"the answer is {j % 3}"],
               "doc_type": "qa"}
        if j % 3 == 1:
            row["label"] = None
        elif j % 3 == 2:
            row["label"] = ""
        rows.append(row)
    return rows


def _suite(tmp_path, rows, name="cases", **dataset):
    data = write(tmp_path / f"{name}.jsonl", "\n".join(json.dumps(r) for r in rows) + "\n")
    raw = {"name": name, "dataset": {"loader": "jsonl", "path": str(data), "fields": {"doc_type": "doc_type"},
                                     **dataset},
           "verifiers": ["rouge"], "metrics": {"min_per_class": 10}}
    return parse_suite(raw, tmp_path, where=str(tmp_path / f"{name}.yaml"))


def test_a_missing_label_is_an_unlabeled_case_unless_the_dataset_requires_labels(tmp_path):
    path = write(tmp_path / "c.jsonl", "\n".join(json.dumps(r) for r in _rows(4, unlabeled=3)) + "\n")
    cases = list(iter_cases(DatasetSpec(loader="jsonl", path=str(path))))
    assert [c.label for c in cases] == [False, True, False, True, None, None, None]
    with pytest.raises(DataError) as e:
        list(iter_cases(DatasetSpec(loader="jsonl", path=str(path), require_labels=True,
                                    fields={"label": "label"})))
    assert "3 bad records" in str(e.value)
    assert "c.jsonl:5: field 'label': the label is missing (the dataset sets require_labels: true)" in str(e.value)
    errors: list = []
    kept = list(iter_cases(DatasetSpec(loader="jsonl", path=str(path), require_labels=True, on_error="skip"), errors))
    assert len(kept) == 4 and [e.loc.line for e in errors] == [5, 6, 7]


def test_a_label_value_no_list_names_is_still_a_bad_record(tmp_path):
    path = write(tmp_path / "c.jsonl", json.dumps({"id": "a", "response": "r", "label": "maybe"}) + "\n")
    with pytest.raises(DataError, match="field 'label': label value 'maybe' is in neither"):
        list(iter_cases(DatasetSpec(loader="jsonl", path=str(path))))


def test_unlabeled_cases_are_scored_and_counted_and_leave_the_label_metrics_unchanged(tmp_path):
    labeled = api.run(_suite(tmp_path / "a", _rows()), out=tmp_path / "a/run", progress=False)
    mixed = api.run(_suite(tmp_path / "b", _rows(unlabeled=9)), out=tmp_path / "b/run", progress=False)
    # every case has its verdict, the unlabeled too
    ids = {v["case_id"] for v in iter_jsonl(tmp_path / "b/run/results.jsonl")}
    assert len(ids) == N + 9 and {f"u{j}" for j in range(9)} <= ids
    m, m0 = mixed.metrics_json, labeled.metrics_json
    assert m["unlabeled"] == 9 and m0["unlabeled"] == 0 and m["n_cases"] == N + 9
    assert m["split"] == m0["split"]  # the labeled cases land on the same sides: the draw is over them alone
    o, o0 = m["verifiers"]["rouge"]["overall"], m0["verifiers"]["rouge"]["overall"]
    assert o["n"] == o0["n"] == N and o["unlabeled"] == {"n": 9, "n_scored": 9, "errors": 0}
    for key in ("auroc", "auprc", "positives", "negatives"):
        assert o[key] == o0[key], key
    assert o["threshold"]["value"] == o0["threshold"]["value"] is not None
    assert o["test"] == o0["test"]
    assert m["verifiers"]["rouge"]["slices"]["qa"]["unlabeled"]["n"] == 9
    assert "unlabeled" not in m["verifiers"]["rouge"]["slices"]["summary"]
    manifest = json.loads((tmp_path / "b/run/manifest.json").read_text())
    assert manifest["dataset"]["by_label"] == {"hallucinated": 40, "faithful": 40, "unlabeled": 9}
    assert "9 unlabeled: scored, left out of every metric that needs a label" in \
        (tmp_path / "b/run/report.html").read_text()
    cases = mixed.cases
    assert cases["label"].isna().sum() == 9 and set(cases.loc[cases["label"].isna(), "split"]) == {"unlabeled"}
    verdicts = mixed.verdicts
    assert verdicts["label"].isna().sum() == 9 and verdicts["score"].notna().all()


def test_a_whole_unlabeled_file_runs_and_is_a_window_for_label_queue_and_drift(tmp_path):
    base = api.run(_suite(tmp_path / "a", _rows()), out=tmp_path / "a/run", progress=False)
    baseline = api.baseline(base.run_dir, out=tmp_path / "baseline.json")
    prod = [{k: v for k, v in r.items() if k != "label"} for r in _rows(40)]
    run = api.run(_suite(tmp_path / "p", prod, name="prod"), out=tmp_path / "p/run", progress=False)
    assert run.metrics_json["unlabeled"] == 40 and run.metrics_json["split"] == {}
    overall = run.metrics_json["verifiers"]["rouge"]["overall"]
    assert overall["n"] == 0 and overall["unlabeled"]["n_scored"] == 40 and overall["latency_ms"]["p50"] is not None
    queue = api.label_queue(tmp_path / "p/run", budget=10, out=tmp_path / "queue.csv")
    assert queue["budget"] == 10 and len((tmp_path / "queue.csv").read_text().splitlines()) == 11
    result = api.drift(baseline, tmp_path / "p/run")
    overall_rows = [r for r in result.rows if r["check"] == "rouge" and r["slice"] == OVERALL]
    assert overall_rows and overall_rows[0]["production_cases"] == 40 and overall_rows[0]["production_flag_rate"] is not None


def test_a_guard_log_keeps_its_unlabeled_records_as_cases_when_asked(tmp_path):
    log = tmp_path / "log"
    log.mkdir()
    records = [{"id": "a", "response": "r", "sources": [], "decision": {"action": "flagged", "checks": []}},
               {"id": "b", "response": "r", "sources": [], "label": "faithful", "decision": {"action": "allowed"}}]
    write(log / "decisions-1-0.jsonl", "\n".join(json.dumps(r) for r in records) + "\n")
    kept = list(iter_cases(DatasetSpec(loader="guardlog", path=str(log), unlabeled="keep")))
    assert [(c.id, c.label) for c in kept] == [("a", None), ("b", False)]
    assert [c.id for c in iter_cases(DatasetSpec(loader="guardlog", path=str(log)))] == ["b"]  # skip: the default
