import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from conftest import write

from verifybench import api
from verifybench.errors import DataError, VerifybenchError
from verifybench.rundir import iter_jsonl
from verifybench.runner import Runner
from verifybench.suite import parse_suite


def small_suite(tmp_path: Path, n: int = 20, verifiers=("rouge",), extra_rows=(), batch_size=4, **dataset):
    rows = [json.dumps({"id": f"c{i}", "response": f"the answer is {i}", "sources": [f"the answer is {i % 3}"],
                        "label": i % 2, "doc_type": ["qa", "summary"][i % 2]}) for i in range(n)]
    data = write(tmp_path / "cases.jsonl", "\n".join([*rows, *extra_rows]) + "\n")
    raw = {"name": "small", "dataset": {"loader": "jsonl", "path": str(data),
                                        "fields": {"doc_type": "doc_type"}, **dataset},
           "verifiers": list(verifiers), "batch_size": batch_size}
    return parse_suite(raw, tmp_path, where=str(tmp_path / "small.yaml"))


def verdicts(run_dir):
    return list(iter_jsonl(Path(run_dir) / "results.jsonl"))


def test_run_writes_every_artifact(tmp_path):
    result = api.run(small_suite(tmp_path, verifiers=("rouge", "bleu")), out=tmp_path / "run", progress=False)
    run = tmp_path / "run"
    for name in ("manifest.json", "cases.jsonl", "results.jsonl", "errors.jsonl", "metrics.json", "report.html"):
        assert (run / name).exists(), name
    assert result.n_cases == 20 and result.new_verdicts == 40 and result.errors == 0
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["status"] == "complete"
    assert len(manifest["dataset"]["hash"]) == 64 and manifest["suite"]["hash"]
    assert [v["id"] for v in manifest["verifiers"]] == ["rouge", "bleu"]
    assert all(len(v["config_hash"]) == 16 for v in manifest["verifiers"])
    assert "sacrebleu" in manifest["packages"] and "rouge-score" in manifest["packages"]
    assert manifest["dataset"]["by_doc_type"] == {"qa": 10, "summary": 10}
    assert all(v["latency_ms"] >= 0 for v in verdicts(run))
    metrics = json.loads((run / "metrics.json").read_text())
    assert set(metrics["verifiers"]) == {"rouge", "bleu"}
    assert set(metrics["verifiers"]["rouge"]["slices"]) == {"qa", "summary"}


def test_a_raising_verifier_yields_counted_error_verdicts(tmp_path):
    suite = small_suite(tmp_path, n=30, verifiers=({"helpers.verifiers:FailEvery": {"id": "flaky", "every": 3}},))
    result = api.run(suite, out=tmp_path / "run", progress=False)
    rows = verdicts(tmp_path / "run")
    assert len(rows) == 30 and result.errors == 10
    failed = [r for r in rows if "error" in r]
    assert len(failed) == 10 and all("planted failure" in r["error"] and "score" not in r for r in failed)
    m = json.loads((tmp_path / "run/metrics.json").read_text())["verifiers"]["flaky"]["overall"]
    assert (m["n"], m["n_scored"], m["errors"]) == (30, 20, 10)
    logged = [e for e in iter_jsonl(tmp_path / "run/errors.jsonl") if e["kind"] == "verdict"]
    assert len(logged) == 10
    assert "10 failed verdict(s)" in (tmp_path / "run/report.html").read_text()


def test_a_batch_that_raises_is_retried_case_by_case(tmp_path):
    boom = json.dumps({"id": "boom", "response": "boom", "sources": ["x"], "label": 1})
    suite = small_suite(tmp_path, n=7, extra_rows=[boom], batch_size=8,
                        verifiers=({"helpers.verifiers:BatchFails": {"id": "batchy"}},))
    api.run(suite, out=tmp_path / "run", progress=False)
    rows = {r["case_id"]: r for r in verdicts(tmp_path / "run")}
    assert len(rows) == 8
    assert "boom in batch" in rows["boom"]["error"]
    assert all(r["score"] == 0.5 for cid, r in rows.items() if cid != "boom")


def test_bad_input_stops_the_run_and_keeps_what_was_computed(tmp_path):
    suite = small_suite(tmp_path, extra_rows=["{broken"])
    with pytest.raises(DataError, match=r"cases.jsonl:21: malformed JSON"):
        Runner(suite, tmp_path / "run", progress=False).run()
    assert len(verdicts(tmp_path / "run")) == 20  # the 20 good cases before the bad line
    manifest = json.loads((tmp_path / "run/manifest.json").read_text())
    assert manifest["status"] == "failed" and "cases.jsonl:21" in manifest["error"]


def test_skipped_records_are_in_error_log_and_report(tmp_path):
    suite = small_suite(tmp_path, extra_rows=["{broken", json.dumps({"id": "z", "label": 1})], on_error="skip")
    result = api.run(suite, out=tmp_path / "run", progress=False)
    assert result.load_errors == 2 and result.n_cases == 20
    logged = [e for e in iter_jsonl(tmp_path / "run/errors.jsonl") if e["kind"] == "input"]
    assert [(e["line"], e["field"]) for e in logged] == [(21, None), (22, "response")]
    html = (tmp_path / "run/report.html").read_text()
    assert "2 input record(s) were skipped" in html and "missing required field" in html


def test_refuses_to_overwrite_a_run(tmp_path):
    suite = small_suite(tmp_path)
    api.run(suite, out=tmp_path / "run", progress=False)
    with pytest.raises(VerifybenchError, match="already holds results; resume it"):
        api.run(suite, out=tmp_path / "run", progress=False)


def test_resume_after_a_cut_line_scores_the_rest_once(tmp_path):
    suite = small_suite(tmp_path, n=40, verifiers=("rouge", "bleu"))
    api.run(suite, out=tmp_path / "full", progress=False)
    api.run(suite, out=tmp_path / "run", progress=False)
    results = tmp_path / "run/results.jsonl"
    lines = results.read_bytes().splitlines(keepends=True)
    results.write_bytes(b"".join(lines[:25]) + lines[25][:17])  # a killed writer leaves half a line
    result = api.resume(tmp_path / "run", progress=False)
    assert result.new_verdicts == 80 - 25
    got = Counter((r["verifier"], r["case_id"]) for r in verdicts(tmp_path / "run"))
    want = Counter((r["verifier"], r["case_id"]) for r in verdicts(tmp_path / "full"))
    assert got == want and max(got.values()) == 1


def test_resume_refuses_changed_data(tmp_path):
    suite = small_suite(tmp_path)
    api.run(suite, out=tmp_path / "run", progress=False)
    with open(tmp_path / "cases.jsonl", "a") as f:
        f.write(json.dumps({"id": "new", "response": "r", "label": 0}) + "\n")
    with pytest.raises(VerifybenchError, match="the dataset changed since this run started"):
        api.resume(tmp_path / "run", progress=False)


def test_sigkill_mid_run_then_resume_matches_an_uninterrupted_run(tmp_path, data_dir, root):
    """A real process killed with SIGKILL while it writes, resumed from the CLI, on real HaluEval rows."""
    suite = write(tmp_path / "kill.yaml", f"""
name: kill
dataset: {{loader: halueval, path: {data_dir / 'halueval/qa_data.json'}, limit: 1200}}
verifiers: [rouge, {{"helpers.verifiers:Slow": {{id: slow, ms: 1.5}}}}]
batch_size: 50
""")
    env = {**os.environ, "PYTHONPATH": str(root / "tests")}
    cli = [sys.executable, "-m", "verifybench.cli"]
    run_dir = tmp_path / "killed"
    proc = subprocess.Popen([*cli, "run", str(suite), "--out", str(run_dir), "-q"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    results = run_dir / "results.jsonl"
    deadline = time.time() + 120
    while time.time() < deadline and (not results.exists() or results.stat().st_size < 40_000):
        assert proc.poll() is None, proc.stderr.read().decode()
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    partial = len(verdicts(run_dir))
    assert 0 < partial < 2400, "the kill should land mid-run"

    done = subprocess.run([*cli, "run", "--resume", str(run_dir), "-q"], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().endswith("report.html")
    full = subprocess.run([*cli, "run", str(suite), "--out", str(tmp_path / "full"), "-q"], env=env,
                          capture_output=True, text=True)
    assert full.returncode == 0, full.stderr

    def keyed(run):
        return Counter((r["verifier"], r["case_id"]) for r in verdicts(run))

    got, want = keyed(run_dir), keyed(tmp_path / "full")
    assert got == want and max(got.values()) == 1 and len(got) == 2400
    scores = {(r["verifier"], r["case_id"]): r["score"] for r in verdicts(run_dir)}
    assert scores == {(r["verifier"], r["case_id"]): r["score"] for r in verdicts(tmp_path / "full")}
    assert json.loads((run_dir / "manifest.json").read_text())["resumes"] == 1


def test_dataset_hash_does_not_depend_on_where_the_data_lives(tmp_path, root):
    import shutil

    from verifybench.loaders import DatasetSpec, dataset_hash

    for d in ("a", "b/deeper"):
        (tmp_path / d).mkdir(parents=True)
        shutil.copy(root / "datasets/demo/cases.jsonl", tmp_path / d / "cases.jsonl")
    a = dataset_hash(DatasetSpec(loader="jsonl", path=str(tmp_path / "a/cases.jsonl")))
    b = dataset_hash(DatasetSpec(loader="jsonl", path=str(tmp_path / "b/deeper/cases.jsonl")))
    assert a == b
    with open(tmp_path / "b/deeper/cases.jsonl", "a") as f:
        f.write("\n")
    assert dataset_hash(DatasetSpec(loader="jsonl", path=str(tmp_path / "b/deeper/cases.jsonl"))) != a
