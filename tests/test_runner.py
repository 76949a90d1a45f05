import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from conftest import write

from verifybench import api
from verifybench.errors import DataError, VerifybenchError
from verifybench.pipeline.runner import Runner
from verifybench.rundir import iter_jsonl
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


CLI = [sys.executable, "-m", "verifybench.cli"]


def cli_env(root: Path) -> dict[str, str]:
    """The environment of a CLI subprocess: this checkout's code and the test verifiers importable."""
    path = [str(root / "src"), str(root / "tests"), os.environ.get("PYTHONPATH", "")]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in path if p)}


def wait_for_verdicts(proc, run_dir: Path, n: int = 1, timeout: float = 120) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline and len(verdicts(run_dir)) < n:
        assert proc.poll() is None, proc.stderr.read()
        time.sleep(0.05)
    assert len(verdicts(run_dir)) >= n, "the first writer never wrote"


def test_run_writes_every_artifact(tmp_path):
    result = api.run(small_suite(tmp_path, verifiers=("rouge", "bleu")), out=tmp_path / "run", progress=False)
    run = tmp_path / "run"
    for name in ("manifest.json", "cases.jsonl", "results.jsonl", "errors.jsonl", "metrics.json", "report.html"):
        assert (run / name).exists(), name
    assert result.n_cases == 20 and result.result.new_verdicts == 40 and result.n_error_verdicts == 0
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
    assert len(rows) == 30 and result.result.errors == 10 == result.n_error_verdicts
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
    assert result.result.load_errors == 2 == result.n_skipped_records and result.n_cases == 20
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
    assert result.result.new_verdicts == 80 - 25
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


@pytest.mark.slow
def test_sigkill_mid_run_then_resume_matches_an_uninterrupted_run(tmp_path, data_dir, root):
    """A real process killed with SIGKILL while it writes, resumed from the CLI, on real HaluEval rows."""
    suite = write(tmp_path / "kill.yaml", f"""
name: kill
dataset: {{loader: halueval, path: {data_dir / 'halueval/qa_data.json'}, limit: 1200}}
verifiers: [rouge, {{"helpers.verifiers:Slow": {{id: slow, ms: 1.5}}}}]
batch_size: 50
""")
    env = cli_env(root)
    cli = CLI
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
    # The killed writer's lock file stays behind; the kernel released its lock.
    assert json.loads((run_dir / "writer.lock").read_text())["pid"] == proc.pid

    done = subprocess.run([*cli, "run", "--resume", str(run_dir), "-q"], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().endswith("report.html")
    # The stale lock is reported, not taken over silently.
    assert f"stale lock was found: pid {proc.pid} on host {socket.gethostname()}" in done.stderr
    assert not (run_dir / "writer.lock").exists()
    full = subprocess.run([*cli, "run", str(suite), "--out", str(tmp_path / "full"), "-q"], env=env,
                          capture_output=True, text=True)
    assert full.returncode == 0, full.stderr

    def keyed(run):
        return Counter((r["verifier"], r["case_id"]) for r in verdicts(run))

    got, want = keyed(run_dir), keyed(tmp_path / "full")
    assert got == want and max(got.values()) == 1 and len(got) == 2400
    scores = {(r["verifier"], r["case_id"]): r["score"] for r in verdicts(run_dir)}
    assert scores == {(r["verifier"], r["case_id"]): r["score"] for r in verdicts(tmp_path / "full")}
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["resumes"] == 1 and manifest["status"] == "complete"
    assert any(f"pid {proc.pid}" in n for n in manifest["notes"])


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


# --- one writer per run directory ---------------------------------------------------------------------

def held_suite_file(tmp_path: Path, n: int = 60, batch_size: int = 5) -> Path:
    """A suite whose verifier scores a few cases, then waits until the test writes tmp_path/release."""
    rows = [json.dumps({"id": f"c{i}", "response": f"the answer is {i}", "sources": [f"the answer is {i % 3}"],
                        "label": i % 2}) for i in range(n)]
    write(tmp_path / "cases.jsonl", "\n".join(rows) + "\n")
    return write(tmp_path / "held.yaml", f"""
name: held
dataset: {{loader: jsonl, path: cases.jsonl}}
verifiers: [{{"helpers.blocking:Hold": {{id: held, release: ./release}}}}]
batch_size: {batch_size}
""")


def refused_by(out: subprocess.CompletedProcess, holder: subprocess.Popen, run_dir: Path) -> None:
    assert out.returncode == 2, out.stderr
    assert f"{run_dir} is being written by another process (pid {holder.pid} on host {socket.gethostname()}" in out.stderr
    # No advice to resume a run another process writes (that would write twice); the holder's own command
    # line, quoted in the message, may itself be a `--resume`.
    assert "resume it with" not in out.stderr
    assert "Traceback" not in out.stderr


def race(args: list[str], run_dir: Path, tmp_path: Path, env: dict) -> None:
    """Start the same command twice at once: the loser exits 2 naming the winner, the winner (held by the
    suite's verifier until tmp_path/release appears) finishes, and every (verifier, case) is written once."""
    procs = [subprocess.Popen([*CLI, *args], env=env, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
             for _ in range(2)]
    try:
        # The loser exits on its own; the winner waits for the release file.
        deadline = time.time() + 120
        while time.time() < deadline and all(p.poll() is None for p in procs):
            time.sleep(0.05)
        loser = next(p for p in procs if p.poll() is not None)
        winner = next(p for p in procs if p is not loser)
        refused_by(subprocess.CompletedProcess(loser.args, loser.returncode, "", loser.stderr.read()), winner, run_dir)
        write(tmp_path / "release", "")
        assert winner.wait(timeout=120) == 0, winner.stderr.read()
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    keys = Counter((r["verifier"], r["case_id"]) for r in verdicts(run_dir))
    assert len(keys) == 60 and max(keys.values()) == 1
    assert json.loads((run_dir / "manifest.json").read_text())["status"] == "complete"


@pytest.mark.slow
def test_two_writers_started_together_one_is_refused(tmp_path, root):
    suite, run_dir, env = held_suite_file(tmp_path), tmp_path / "run", cli_env(root)
    race(["run", str(suite), "--out", str(run_dir), "-q"], run_dir, tmp_path, env)


@pytest.mark.slow
def test_two_resumes_started_together_one_is_refused(tmp_path, root):
    """A run killed part-way, then `--resume` twice at once: one resumes, the other exits 2 naming it, and
    every (verifier, case) is written once."""
    suite, run_dir, env = held_suite_file(tmp_path), tmp_path / "run", cli_env(root)
    first = subprocess.Popen([*CLI, "run", str(suite), "--out", str(run_dir), "-q"], env=env, text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        wait_for_verdicts(first, run_dir)
    finally:
        first.kill()
        first.wait()
    assert 0 < len(verdicts(run_dir)) < 60  # killed part-way
    race(["run", "--resume", str(run_dir), "-q"], run_dir, tmp_path, env)


@pytest.mark.slow
def test_a_second_run_or_resume_is_refused_while_the_first_writes(tmp_path, root):
    suite, run_dir, env = held_suite_file(tmp_path), tmp_path / "run", cli_env(root)
    first = subprocess.Popen([*CLI, "run", str(suite), "--out", str(run_dir), "-q"], env=env, text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        wait_for_verdicts(first, run_dir)
        lock = json.loads((run_dir / "writer.lock").read_text())
        assert (lock["pid"], lock["host"]) == (first.pid, socket.gethostname()) and "run" in lock["command"]
        for args in (["run", str(suite), "--out", str(run_dir)], ["run", "--resume", str(run_dir)],
                     ["run", "--resume", str(run_dir)], ["report", str(run_dir)]):
            refused_by(subprocess.run([*CLI, *args, "-q"] if args[0] == "run" else [*CLI, *args], env=env,
                                      capture_output=True, text=True), first, run_dir)
        write(tmp_path / "release", "")
        assert first.wait(timeout=120) == 0, first.stderr.read()
    finally:
        if first.poll() is None:
            first.kill()
    keys = Counter((r["verifier"], r["case_id"]) for r in verdicts(run_dir))
    assert len(keys) == 60 and max(keys.values()) == 1
    assert not (run_dir / "writer.lock").exists()
    # Once the writer is gone, the same directory is refused with the advice to resume, which works.
    again = subprocess.run([*CLI, "run", str(suite), "--out", str(run_dir), "-q"], env=env, capture_output=True, text=True)
    assert again.returncode == 2 and f"resume it with --resume {run_dir}" in again.stderr
    resumed = subprocess.run([*CLI, "run", "--resume", str(run_dir), "-q"], env=env, capture_output=True, text=True)
    assert resumed.returncode == 0, resumed.stderr
    assert "0 new verdicts" in resumed.stdout and len(verdicts(run_dir)) == 60


@pytest.mark.slow
def test_the_ray_driver_holds_the_lock(tmp_path, root):
    pytest.importorskip("ray")
    suite, run_dir = held_suite_file(tmp_path), tmp_path / "run"
    env = {**cli_env(root), "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "RAY_USAGE_STATS_ENABLED": "0"}
    first = subprocess.Popen([*CLI, "run", str(suite), "--out", str(run_dir), "-q", "--executor", "ray"], env=env,
                             text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        # The driver packs every batch into Ray's object store before results come back, and the held
        # verifier keeps the first block from finishing: wait for Ray to be up (the manifest says running).
        deadline = time.time() + 240
        manifest = run_dir / "manifest.json"
        while time.time() < deadline and not (manifest.exists() and '"running"' in manifest.read_text()):
            assert first.poll() is None, first.stderr.read()
            time.sleep(0.1)
        assert json.loads(manifest.read_text())["executor"]["name"] == "ray"
        for executor in ("ray", "local"):
            second = subprocess.run([*CLI, "run", "--resume", str(run_dir), "-q", "--executor", executor], env=env,
                                    capture_output=True, text=True, timeout=120)
            refused_by(second, first, run_dir)
        write(tmp_path / "release", "")
        assert first.wait(timeout=300) == 0, first.stderr.read()
    finally:
        if first.poll() is None:
            first.kill()
    keys = Counter((r["verifier"], r["case_id"]) for r in verdicts(run_dir))
    assert len(keys) == 60 and max(keys.values()) == 1
    assert json.loads((run_dir / "manifest.json").read_text())["executor"]["name"] == "ray"


def test_a_lock_from_another_host_is_refused_not_taken(tmp_path):
    suite = small_suite(tmp_path)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "writer.lock").write_text(json.dumps({"pid": 4242, "host": "build-7", "started": "2025-01-01T00:00:00"}))
    with pytest.raises(VerifybenchError, match=r"locked by pid 4242 on host build-7.*another host.*delete .*writer.lock"):
        api.run(suite, out=run_dir, progress=False)
    assert json.loads((run_dir / "writer.lock").read_text())["host"] == "build-7"  # untouched
    assert not (run_dir / "results.jsonl").exists()


def test_a_lock_naming_a_live_process_that_holds_no_lock_is_refused(tmp_path):
    """The pid in the file is alive but holds no lock (a reused pid?): this host cannot prove the run over."""
    suite = small_suite(tmp_path)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        (run_dir / "writer.lock").write_text(json.dumps({"pid": other.pid, "host": socket.gethostname()}))
        with pytest.raises(VerifybenchError, match=rf"names pid {other.pid} .*which is still running"):
            api.run(suite, out=run_dir, progress=False)
    finally:
        other.kill()
        other.wait()
    result = api.run(suite, out=run_dir, progress=False)  # now the pid is gone: a stale lock, reported
    assert result.notes and f"stale lock was found: pid {other.pid}" in result.notes[0]


# --- the manifest's status --------------------------------------------------------------------------------

def test_complete_only_once_metrics_and_report_exist(tmp_path, monkeypatch):
    from verifybench import reporting as report_mod
    suite = small_suite(tmp_path)
    run_dir = tmp_path / "run"

    def killed(*a, **k):
        raise KeyboardInterrupt  # as a kill between metrics.json and report.html would stop it

    monkeypatch.setattr(report_mod, "render", killed)
    with pytest.raises(KeyboardInterrupt):
        api.run(suite, out=run_dir, progress=False)
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["status"] == "scored"
    assert not (run_dir / "report.html").exists()
    monkeypatch.undo()
    assert api.report(run_dir) == run_dir / "report.html"
    assert json.loads((run_dir / "manifest.json").read_text())["status"] == "complete"


def test_resume_finishes_a_run_that_stopped_before_its_report(tmp_path):
    suite = small_suite(tmp_path)
    run_dir = tmp_path / "run"
    Runner(suite, run_dir, progress=False).run()  # every verdict, no metrics or report yet
    assert json.loads((run_dir / "manifest.json").read_text())["status"] == "scored"
    result = api.resume(run_dir, progress=False)
    assert result.result.new_verdicts == 0 and (run_dir / "report.html").exists() and (run_dir / "metrics.json").exists()
    assert json.loads((run_dir / "manifest.json").read_text())["status"] == "complete"


def test_a_failed_run_stays_failed_after_report(tmp_path):
    suite = small_suite(tmp_path, extra_rows=["{broken"])
    with pytest.raises(DataError):
        api.run(suite, out=tmp_path / "run", progress=False)
    api.report(tmp_path / "run")
    assert json.loads((tmp_path / "run/manifest.json").read_text())["status"] == "failed"


# --- the shortcut-test cache -----------------------------------------------------------------------------

@pytest.mark.parametrize("cut", ["mid-line", "whole-lines", "garbage"])
def test_a_truncated_cues_cache_is_rebuilt(tmp_path, cut):
    rows = [json.dumps({"id": f"c{i}", "response": "the answer is " + "very " * (i % 2 + i % 7) + str(i),
                        "sources": [f"the answer is {i % 3}"], "label": i % 2}) for i in range(60)]
    data = write(tmp_path / "cases.jsonl", "\n".join(rows) + "\n")
    suite = parse_suite({"name": "cues", "dataset": {"loader": "jsonl", "path": str(data)}, "verifiers": ["rouge"]},
                        tmp_path, where="cues.yaml")
    run_dir = tmp_path / "run"
    api.run(suite, out=run_dir, progress=False)
    cues = run_dir / "cues.jsonl"
    full = cues.read_bytes()
    want = json.loads((run_dir / "metrics.json").read_text())["shortcuts"]
    assert len(full.splitlines()) == 60 and want
    lines = full.splitlines(keepends=True)
    cues.write_bytes({"mid-line": full[:len(full) // 2], "whole-lines": b"".join(lines[:30]),
                      "garbage": b"".join(lines[:59]) + b"{not json\n"}[cut])
    api.report(run_dir)
    assert cues.read_bytes() == full
    assert json.loads((run_dir / "metrics.json").read_text())["shortcuts"] == want


# --- no cases ---------------------------------------------------------------------------------------------

def test_an_empty_file_ends_with_no_cases(tmp_path):
    data = write(tmp_path / "empty.jsonl", "")
    suite = parse_suite({"name": "e", "dataset": {"loader": "jsonl", "path": str(data)}, "verifiers": ["rouge"]},
                        tmp_path, where="e.yaml")
    with pytest.raises(DataError, match=r"no cases: .*empty.jsonl gave no records"):
        api.run(suite, out=tmp_path / "run", progress=False)
    manifest = json.loads((tmp_path / "run/manifest.json").read_text())
    assert manifest["status"] == "failed" and "no cases" in manifest["error"]
    assert not (tmp_path / "run/report.html").exists()


def test_every_record_skipped_ends_with_no_cases(tmp_path):
    data = write(tmp_path / "c.jsonl", "\n".join(json.dumps({"id": f"c{i}", "answer": "r", "label": 1}) for i in range(5)) + "\n")
    suite = parse_suite({"name": "e", "dataset": {"loader": "jsonl", "path": str(data), "on_error": "skip"},
                         "verifiers": ["rouge"]}, tmp_path, where="e.yaml")
    with pytest.raises(DataError, match=r"no cases: every record of .*c.jsonl was skipped \(5 bad record"):
        api.run(suite, out=tmp_path / "run", progress=False)
    manifest = json.loads((tmp_path / "run/manifest.json").read_text())
    assert manifest["status"] == "failed" and "every record" in manifest["error"]
    assert len([e for e in iter_jsonl(tmp_path / "run/errors.jsonl") if e["kind"] == "input"]) == 5


def test_on_error_raise_logs_every_bad_record(tmp_path):
    bad = [json.dumps({"id": f"b{i}", "response": "r", "label": "maybe"}) for i in range(3)]
    suite = small_suite(tmp_path, extra_rows=bad)
    with pytest.raises(DataError, match=r"3 bad records"):
        api.run(suite, out=tmp_path / "run", progress=False)
    logged = [e for e in iter_jsonl(tmp_path / "run/errors.jsonl") if e["kind"] == "input"]
    assert [e["line"] for e in logged] == [21, 22, 23] and all(e["field"] == "label" for e in logged)
    assert "3 bad records" in json.loads((tmp_path / "run/manifest.json").read_text())["error"]


@pytest.mark.parametrize("content", [b'{"pid": 12', b"\x00\xff garbage", b"[1, 2]"])
def test_an_unreadable_lock_file_is_a_stale_lock_reported_not_another_host(tmp_path, content):
    """A writer killed while writing writer.lock leaves bytes that are not a holder; nobody holds the
    kernel's lock, so the run takes over and says so (it is not 'locked by pid ? on another host')."""
    suite = small_suite(tmp_path)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "writer.lock").write_bytes(content)
    result = api.run(suite, out=run_dir, progress=False)
    assert result.notes and "could not be read" in result.notes[0]
    assert not (run_dir / "writer.lock").exists()  # released at the end
