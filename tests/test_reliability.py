"""Reliability defects found by probing the run machinery as an attacker would (issue 27): one record must
not take down a run, no secret reaches an artifact, every recovery path ends where the docs say, untrusted
input gets a message instead of a traceback. Real processes for kills and races, a real HTTP server on
127.0.0.1 for the key, a real MLflow store."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest
from conftest import write

from verifybench import api
from verifybench.errors import DataError
from verifybench.loaders import DatasetSpec, iter_cases
from verifybench.rundir import iter_jsonl, read_case_frame


def rows(n: int = 12, **extra) -> list[dict]:
    return [{"id": f"c{i}", "response": f"the answer is {i}", "sources": [f"the answer is {i % 3}"],
             "label": i % 2, **extra} for i in range(n)]


def jsonl_text(records: list[dict | str]) -> str:
    return "\n".join(r if isinstance(r, str) else json.dumps(r) for r in records) + "\n"


def suite_file(tmp_path: Path, data: Path, loader: str = "jsonl", verifiers=("rouge",), **dataset) -> Path:
    block = json.dumps({"loader": loader, "path": str(data), **dataset})
    return write(tmp_path / "s.yaml", f"name: s\ndataset: {block}\nverifiers: {json.dumps(list(verifiers))}\nbatch_size: 4\n")


# --- one record must not take down a run ----------------------------------------------------------------

LONE = '"lone \\ud800 surrogate"'  # as a JSON file holds it: an escape of half a UTF-16 pair


@pytest.mark.parametrize("where", ["response", "id"])
def test_a_lone_surrogate_in_jsonl_is_a_bad_record_named_by_line(tmp_path, where):
    good = [json.dumps(r) for r in rows()]
    bad = good[4].replace('"the answer is 4"', LONE) if where == "response" else good[4].replace('"c4"', LONE)
    data = write(tmp_path / "d.jsonl", "\n".join([*good[:4], bad, *good[5:]]) + "\n")
    run = api.run(suite_file(tmp_path, data, on_error="skip"), out=tmp_path / "run", progress=False)
    assert run.n_cases == 11 and run.n_skipped_records == 1
    (err,) = [e for e in iter_jsonl(tmp_path / "run/errors.jsonl") if e["kind"] == "input"]
    assert err["line"] == 5 and err["file"].endswith("d.jsonl") and "surrogate" in err["message"]
    assert err["field"] == where
    # on_error: raise stops with the record named, not a serialisation traceback.
    with pytest.raises(DataError, match=r"d\.jsonl:5: field '(response|id)': text with a lone UTF-16 surrogate"):
        api.run(suite_file(tmp_path, data), out=tmp_path / "run2", progress=False)


def test_a_lone_surrogate_in_a_dataframe_is_a_bad_record_named_by_row(tmp_path):
    import pandas as pd

    records = rows()
    records[3]["response"] = "lone \ud800 surrogate"
    records[7]["id"] = "c\udfff"
    df = pd.DataFrame(records, dtype=object)  # object columns: pandas' arrow strings refuse such text
    run = api.run(cases=df, verifiers=["rouge"], out=tmp_path / "run", on_error="skip", progress=False)
    assert run.n_cases == 10
    errs = [e for e in iter_jsonl(tmp_path / "run/errors.jsonl") if e["kind"] == "input"]
    assert [(e["file"], e["index"], e["field"]) for e in errs] == [("DataFrame", 3, "response"), ("DataFrame", 7, "id")]


def test_a_lone_surrogate_in_a_csv_list_cell_is_a_bad_record(tmp_path):
    data = write(tmp_path / "d.csv", 'id,response,sources,label\na,"x","[""fine""]",1\nb,"y","[""\\ud800""]",0\n'
                                     'c,"z","[""ok""]",0\n')
    errors: list = []
    got = [c.id for c in iter_cases(DatasetSpec(loader="csv", path=str(data), on_error="skip"), errors)]
    assert got == ["a", "c"]
    assert len(errors) == 1 and errors[0].loc.line == 3 and errors[0].field == "sources"
    assert "surrogate" in errors[0].message


def test_null_id_and_null_group_are_not_given(tmp_path):
    records = [{"id": None, "response": "a", "label": 1, "group": None},
               {"id": 0, "response": "b", "label": 0, "group": None},
               {"response": "c", "label": 0, "group": None}]
    data = write(tmp_path / "d.jsonl", jsonl_text(records))
    errors: list = []
    cases = list(iter_cases(DatasetSpec(loader="jsonl", path=str(data), on_error="skip"), errors))
    # The real id 0 is kept; the records without one get a marked id that cannot equal a given one.
    assert [c.id for c in cases] == ["#0", "0", "#2"] and errors == []
    assert all("group" not in c.meta for c in cases)
    run = api.run(suite_file(tmp_path, data), out=tmp_path / "run", progress=False)
    assert run.n_cases == 3
    f = read_case_frame(tmp_path / "run")
    assert f["group"].nunique() == 3  # each case a group of its own, not one group of all
    # A case index written before (meta.group null) reads the same way.
    old = tmp_path / "old"
    old.mkdir()
    write(old / "cases.jsonl", jsonl_text([{"id": str(i), "dataset": "d", "doc_type": "default", "split": None,
                                            "label": bool(i % 2), "meta": {"group": None}} for i in range(4)]))
    assert read_case_frame(old)["group"].nunique() == 4


def test_a_non_finite_score_is_an_error_verdict_counted_everywhere(tmp_path):
    data = write(tmp_path / "d.jsonl", jsonl_text(rows(12)))
    suite = suite_file(tmp_path, data, verifiers=({"helpers.reliability:NonFinite": {"id": "nf", "every": 3}},))
    run = api.run(suite, out=tmp_path / "run", progress=False)
    failed = [v for v in iter_jsonl(tmp_path / "run/results.jsonl") if "error" in v]
    assert sorted(v["case_id"] for v in failed) == ["c0", "c3", "c6", "c9"]
    assert all("not a finite number" in v["error"] and "score" not in v for v in failed)
    assert {"nan", "inf", "-inf"} == {v["error"].rsplit("(", 1)[1].rstrip(")") for v in failed}
    assert run.result.errors == 4 == run.n_error_verdicts  # what the CLI prints as "N failed"
    logged = [e for e in iter_jsonl(tmp_path / "run/errors.jsonl") if e["kind"] == "verdict"]
    assert len(logged) == 4
    m = json.loads((tmp_path / "run/metrics.json").read_text())["verifiers"]["nf"]["overall"]
    assert (m["n"], m["errors"]) == (12, 4)
    assert "not a finite number" in (tmp_path / "run/report.html").read_text()
    assert all(v.get("score") is None or math.isfinite(v["score"]) for v in iter_jsonl(tmp_path / "run/results.jsonl"))


# --- no secret in any artifact ----------------------------------------------------------------------------

KEY = "sk-test-ECHOED-IN-A-200-0123456789"
PASSWORD = "hunter2-PASSWORD-must-not-leak"


def _files(*folders: Path) -> list[Path]:
    return [f for folder in folders for f in folder.rglob("*") if f.is_file()]


def _leaks(text_forms: list[str], *folders: Path) -> list[tuple[str, str]]:
    return [(f.name, form) for f in _files(*folders) for form in text_forms
            if form in f.read_text(encoding="utf-8", errors="ignore")]


def test_a_key_inside_a_200_completion_reaches_no_file(fake, tmp_path, monkeypatch):
    import base64
    from urllib.parse import quote

    forms = [KEY, base64.b64encode(f"user:{KEY}".encode()).decode()[8:-4], quote(KEY + "/x", safe="")[:-5]]
    # A server that puts the key (as it is, inside a base64 Basic header, URL-encoded) in its reply.
    reason = f"the key is {KEY}; Basic {base64.b64encode(f'user:{KEY}'.encode()).decode()}; q={quote(KEY, safe='')}"
    server = fake([], default=json.dumps({"hallucinated": True, "probability": 0.7, "claim": "", "reason": reason}))
    monkeypatch.setenv("ECHO_KEY", KEY)
    data = write(tmp_path / "d.jsonl", jsonl_text(rows(6)))
    suite = suite_file(tmp_path, data, verifiers=[{"judge": {"backend": "openai", "model": "m", "base_url": server.base_url,
                                                             "api_key_env": "ECHO_KEY", "cache_dir": str(tmp_path / "cache"),
                                                             "backoff_s": 0.01}}])
    api.run(suite, out=tmp_path / "run", progress=False)
    assert server.headers[0]["authorization"] == f"Bearer {KEY}"  # the key was used...
    assert len(_files(tmp_path / "cache")) == 6
    assert _leaks(forms, tmp_path / "run", tmp_path / "cache") == []  # ...and stored nowhere, in no form
    judged = list(iter_jsonl(tmp_path / "run/results.jsonl"))
    assert all("error" not in v and "[redacted]" in v["detail"]["reason"] for v in judged)
    # A replay from the cache is as clean (and an entry written before replies were scrubbed is cleaned).
    entry = _files(tmp_path / "cache")[0]
    doc = json.loads(entry.read_text())
    entry.write_text(json.dumps({**doc, "text": doc["text"].replace("[redacted]", KEY)}))
    api.run(suite, out=tmp_path / "replay", progress=False)
    assert _leaks(forms, tmp_path / "replay") == []


@pytest.mark.slow
def test_credentials_in_options_are_stored_as_written(fake, tmp_path, monkeypatch):
    mlflow = pytest.importorskip("mlflow")
    server = fake([], default=(True, 0.7))
    monkeypatch.setenv("PASSWORD", PASSWORD)
    port = server.base_url.split(":")[-1].split("/")[0]
    data = write(tmp_path / "d.jsonl", jsonl_text(rows(6)))
    judge = {"backend": "openai", "model": "m", "base_url": f"http://user:${{PASSWORD}}@127.0.0.1:{port}/v1",
             "cache_dir": str(tmp_path / "cache")}
    literal = {**judge, "id": "literal", "base_url": f"http://user:{PASSWORD}-2@127.0.0.1:{port}/v1"}
    suite = suite_file(tmp_path, data, verifiers=[{"judge": judge}, {"judge": literal}])
    run = api.run(suite, out=tmp_path / "run", progress=False)
    assert run.n_error_verdicts == 0  # the expanded URL was the one used
    manifest = json.loads((tmp_path / "run/manifest.json").read_text())
    configs = {v["id"]: v["config"] for v in manifest["verifiers"]}
    assert configs["judge"]["base_url"] == judge["base_url"]  # `${PASSWORD}`, as written
    assert configs["literal"]["base_url"] == f"http://user:***@127.0.0.1:{port}/v1"
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    monkeypatch.chdir(tmp_path)  # MLflow's artifacts go beside the store
    api.log(tmp_path / "run", uri, "secrets")
    assert list((tmp_path / "mlruns").rglob("manifest.json"))
    assert mlflow is not None
    # The run directory, the MLflow store and its artifacts hold no expanded password (the literal one is
    # in the suite's own text, which the manifest keeps to resume the run; only the expanded one is checked).
    for f in _files(tmp_path / "run", tmp_path / "mlruns"):
        if f.name not in ("dataset.jsonl",):
            assert PASSWORD not in f.read_text(errors="ignore").replace(f"{PASSWORD}-2", ""), f
    assert PASSWORD not in (tmp_path / "mlflow.db").read_bytes().decode(errors="ignore").replace(f"{PASSWORD}-2", "")


# --- every recovery path ends where the docs say ----------------------------------------------------------

def _cli_env(root: Path) -> dict[str, str]:
    import os

    path = [str(root / "src"), str(root / "tests"), os.environ.get("PYTHONPATH", "")]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in path if p)}


def _cli():
    import sys

    return [sys.executable, "-m", "verifybench.cli"]


def _wait(cond, proc=None, timeout: float = 120.0) -> None:
    import time

    deadline = time.time() + timeout
    while time.time() < deadline:
        if cond():
            return
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"the process ended first: {proc.stderr.read() if proc.stderr else ''}")
        time.sleep(0.02)
    raise AssertionError("timed out")


def _count(path: Path) -> int:
    return len(list(iter_jsonl(path))) if path.exists() else 0


def held_suite(tmp_path: Path, n: int = 40, loader: str = "jsonl", **dataset) -> Path:
    write(tmp_path / "cases.jsonl", jsonl_text(rows(n)))
    block = json.dumps({"loader": loader, "path": "cases.jsonl", **dataset})
    return write(tmp_path / "held.yaml", f"""
name: held
dataset: {block}
verifiers: [{{"helpers.blocking:Hold": {{id: held, release: ./release}}}}]
batch_size: 5
""")


def _start_and_kill(args: list[str], env: dict, until) -> None:
    import signal
    import subprocess

    proc = subprocess.Popen([*_cli(), *args], env=env, text=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        _wait(until, proc)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)


@pytest.mark.slow
def test_report_of_a_sigkilled_run_shows_what_was_computed(tmp_path, root):
    import subprocess

    suite, run_dir, env = held_suite(tmp_path), tmp_path / "run", _cli_env(root)
    _start_and_kill(["run", str(suite), "--out", str(run_dir), "-q"], env, lambda: _count(run_dir / "results.jsonl") >= 5)
    assert json.loads((run_dir / "manifest.json").read_text())["status"] == "running"
    out = subprocess.run([*_cli(), "report", str(run_dir)], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "Traceback" not in out.stderr
    html = (run_dir / "report.html").read_text()
    assert "status running" in html and "cases (" in html  # the counts come from the case index
    assert json.loads((run_dir / "manifest.json").read_text())["status"] == "running"  # not made complete


@pytest.mark.slow
def test_a_killed_resume_never_leaves_the_case_index_short(tmp_path, root):
    """A run killed, then its `--resume` killed while it reads the data again: the case index still covers
    every verdict, `report` works, and a second resume finishes the run with every verdict once."""
    import subprocess
    from collections import Counter

    suite = held_suite(tmp_path, loader="helpers.reliability:slow_jsonl", delay=0.15)
    run_dir, env = tmp_path / "run", _cli_env(root)
    _start_and_kill(["run", str(suite), "--out", str(run_dir), "-q"], env, lambda: _count(run_dir / "results.jsonl") >= 5)
    before = _count(run_dir / "cases.jsonl")
    assert before >= 5

    def resuming() -> bool:
        return json.loads((run_dir / "manifest.json").read_text()).get("resumes") == 1

    # Killed while it reads the data again (0.15 s a record: the first batch takes 0.75 s).
    _start_and_kill(["run", "--resume", str(run_dir), "-q"], env, resuming)
    indexed = {c["id"] for c in iter_jsonl(run_dir / "cases.jsonl")}
    judged = {v["case_id"] for v in iter_jsonl(run_dir / "results.jsonl")}
    assert judged <= indexed and len(indexed) >= before
    out = subprocess.run([*_cli(), "report", str(run_dir)], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    # The last resume, let go once it runs (the release file is part of the verifier's config: it must not
    # exist when the resume compares configs).
    done = subprocess.Popen([*_cli(), "run", "--resume", str(run_dir), "-q"], env=env, text=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _wait(lambda: json.loads((run_dir / "manifest.json").read_text()).get("resumes") == 2, done)
    write(tmp_path / "release", "")
    assert done.wait(timeout=300) == 0, done.stderr.read()
    keys = Counter((v["verifier"], v["case_id"]) for v in iter_jsonl(run_dir / "results.jsonl"))
    assert len(keys) == 40 and max(keys.values()) == 1
    assert [c["id"] for c in iter_jsonl(run_dir / "cases.jsonl")] == [f"c{i}" for i in range(40)]


def test_a_short_case_index_says_resume(tmp_path):
    from verifybench.errors import VerifybenchError

    data = write(tmp_path / "d.jsonl", jsonl_text(rows(12)))
    api.run(suite_file(tmp_path, data), out=tmp_path / "run", progress=False)
    index = (tmp_path / "run/cases.jsonl").read_text().splitlines(keepends=True)
    (tmp_path / "run/cases.jsonl").write_text("".join(index[:3]))  # as a resume killed by an older version left it
    with pytest.raises(VerifybenchError, match=r"verifybench run --resume .*run"):
        api.baseline(tmp_path / "run", out=tmp_path / "b.json")
    api.resume(tmp_path / "run", progress=False)  # and it does recover
    assert len(list(iter_jsonl(tmp_path / "run/cases.jsonl"))) == 12
    api.baseline(tmp_path / "run", out=tmp_path / "b.json")


def _race(target, args_list: list[tuple]) -> list:
    """Run `target(*args)` in one process per args, all let go at the same instant; their results
    (or the repr of what they raised)."""
    import multiprocessing as mp

    ctx = mp.get_context("fork")
    start, results = ctx.Barrier(len(args_list)), ctx.Queue()

    def one(i, args):
        start.wait()
        try:
            results.put((i, target(*args)))
        except BaseException as e:  # noqa: BLE001 - reported to the test
            results.put((i, f"raised {type(e).__name__}: {e}"))

    procs = [ctx.Process(target=one, args=(i, a)) for i, a in enumerate(args_list)]
    for p in procs:
        p.start()
    got = dict(results.get(timeout=300) for _ in procs)
    for p in procs:
        p.join(timeout=60)
    return [got[i] for i in range(len(procs))]


def _write_many(path: str, n: int, tag: int) -> str:
    from verifybench.rundir import write_json

    doc = {"tag": tag, "rows": [{"i": i, "text": "x" * 50} for i in range(5000)]}
    for _ in range(n):
        write_json(Path(path), doc)
    return "ok"


def test_writers_by_rename_of_one_file_never_share_a_temporary(tmp_path):
    """Processes writing one JSON file at once (two `baseline --out same.json`): each write is whole, none
    fails, and the file holds one writer's document."""
    out = tmp_path / "race.json"
    assert _race(_write_many, [(str(out), 30, k) for k in range(3)]) == ["ok"] * 3
    assert json.loads(out.read_text())["tag"] in (0, 1, 2)
    assert [p.name for p in tmp_path.iterdir()] == ["race.json"]  # no temporary left behind


@pytest.mark.slow
def test_two_baselines_to_one_file_at_once(tmp_path, root):
    import subprocess

    records = [{**r, "score": (i * 37 % 100) / 100} for i, r in enumerate(rows(3000))]
    data = write(tmp_path / "d.jsonl", jsonl_text(records))
    api.run(suite_file(tmp_path, data, verifiers=[{"scores": {"field": "meta.score"}}]), out=tmp_path / "run",
            progress=False)
    env, out = _cli_env(root), tmp_path / "race.json"
    for _ in range(3):
        procs = [subprocess.Popen([*_cli(), "baseline", str(tmp_path / "run"), "--out", str(out)], env=env, text=True,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(2)]
        results = [(p.wait(timeout=300), p.stderr.read()) for p in procs]
        assert [rc for rc, _ in results] == [0, 0], results
        assert all("Traceback" not in e for _, e in results)
        assert json.loads(out.read_text())["verifiers"]
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


def _log(run_dir: str, uri: str) -> bool:
    return api.log(run_dir, uri, "race").created


@pytest.mark.slow
def test_logs_of_one_run_let_go_together_make_one_mlflow_run(tmp_path):
    pytest.importorskip("mlflow")
    from mlflow import MlflowClient

    data = write(tmp_path / "d.jsonl", jsonl_text(rows(12)))
    api.run(suite_file(tmp_path, data), out=tmp_path / "run", progress=False)
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = MlflowClient(uri)
    client.create_experiment("race", artifact_location=str(tmp_path / "artifacts"))
    created = _race(_log, [(str(tmp_path / "run"), uri)] * 3)
    assert sorted(map(str, created)) == ["False", "False", "True"], created
    exp = client.get_experiment_by_name("race")
    assert len(client.search_runs([exp.experiment_id])) == 1


@pytest.mark.slow
def test_two_logs_of_one_run_at_once_make_one_mlflow_run(tmp_path, root):
    import subprocess

    pytest.importorskip("mlflow")
    from mlflow import MlflowClient

    data = write(tmp_path / "d.jsonl", jsonl_text(rows(12)))
    api.run(suite_file(tmp_path, data), out=tmp_path / "run", progress=False)
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    env = _cli_env(root)
    api.check_mlflow(uri)  # the store exists before the race: the race is about the run, not the schema
    procs = [subprocess.Popen([*_cli(), "log", str(tmp_path / "run"), "--mlflow", uri, "--experiment", "race"],
                              env=env, text=True, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
             for _ in range(2)]
    results = [(p.wait(timeout=300), p.stderr.read()) for p in procs]
    assert [rc for rc, _ in results] == [0, 0], results
    client = MlflowClient(uri)
    exp = client.get_experiment_by_name("race")
    assert len(client.search_runs([exp.experiment_id])) == 1
    again = subprocess.run([*_cli(), "log", str(tmp_path / "run"), "--mlflow", uri, "--experiment", "race"], env=env,
                           cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0 and "logged before" in again.stdout, again.stderr


def _mount_tmpfs(path: Path, size: str) -> bool:
    import subprocess

    path.mkdir()
    return subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
                          capture_output=True).returncode == 0


@pytest.mark.slow
@pytest.mark.parametrize("how", ["file-size-limit", "full-tmpfs"])
def test_disk_full_mid_run_is_a_message_and_a_failed_manifest(tmp_path, root, how):
    import resource
    import subprocess

    records = [{**r, "response": f"{r['response']} " + "padding " * 40} for r in rows(3000)]
    data = write(tmp_path / "d.jsonl", jsonl_text(records))
    suite = suite_file(tmp_path, data)
    run_dir, limit = tmp_path / "run", None
    if how == "full-tmpfs":
        if not _mount_tmpfs(tmp_path / "small", "400k"):
            pytest.skip("cannot mount a tmpfs here (needs root)")
        run_dir = tmp_path / "small" / "run"
    else:
        def limit():  # RLIMIT_FSIZE: a write past 300 kB fails with EFBIG (Python ignores SIGXFSZ)
            resource.setrlimit(resource.RLIMIT_FSIZE, (300_000, 300_000))
    try:
        out = subprocess.run([*_cli(), "run", str(suite), "--out", str(run_dir), "-q"], env=_cli_env(root),
                             capture_output=True, text=True, timeout=300, preexec_fn=limit)
        assert out.returncode == 2, out.stderr
        assert "Traceback" not in out.stderr and len(out.stderr.splitlines()) <= 3, out.stderr
        assert "no room to write" in out.stderr and f"--resume {run_dir}" in out.stderr
        manifest = json.loads((run_dir / "manifest.json").read_text())
        assert manifest["status"] == "failed" and "no room to write" in manifest["error"]
    finally:
        if how == "full-tmpfs":
            subprocess.run(["umount", str(tmp_path / "small")], capture_output=True)


# --- untrusted input ----------------------------------------------------------------------------------------

BOMB = """name: bomb
a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]
b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]
c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]
d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]
e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]
f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e]
g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f]
h: &h [*g, *g, *g, *g, *g, *g, *g, *g, *g]
dataset: {loader: jsonl, path: d.jsonl, x: *h}
verifiers: [rouge]
"""


def test_a_yaml_alias_bomb_is_refused_quickly(tmp_path):
    import time

    from verifybench.errors import SuiteError

    write(tmp_path / "d.jsonl", jsonl_text(rows(3)))
    path = write(tmp_path / "bomb.yaml", BOMB)
    assert len(BOMB) < 700
    started = time.perf_counter()
    with pytest.raises(SuiteError, match=r"bomb\.yaml: the YAML expands to more than 200,000 values"):
        api.describe(path)
    assert time.perf_counter() - started < 5
    # Aliases within reason are fine.
    ok = write(tmp_path / "ok.yaml", "name: ok\ndataset: {loader: jsonl, path: d.jsonl}\n"
                                     "verifiers: [{bleu: &o {order: 2}}, {bleu: {<<: *o, id: bleu2}}]\n")
    assert api.describe(ok)["total"] == 3


@pytest.mark.parametrize("name", ["../../escaped", "/tmp/absolute-escape", "..", "a/../../b"])
def test_a_suite_name_becomes_a_safe_file_name(tmp_path, monkeypatch, name):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path / "work")
    write(tmp_path / "work/d.jsonl", jsonl_text(rows(12)))
    write(tmp_path / "work/s.yaml", f"name: {json.dumps(name)}\ndataset: {{loader: jsonl, path: d.jsonl}}\nverifiers: [rouge]\n")
    run = api.run("s.yaml", progress=False)
    assert run.run_dir.resolve().parent == (tmp_path / "work/reports").resolve()
    base = api.baseline(run.run_dir)
    assert base.resolve().parent == (tmp_path / "work/metrics").resolve()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["work"]  # nothing written outside


def test_run_out_refuses_a_folder_of_other_files_and_never_writes_through_a_link(tmp_path):
    from verifybench.errors import VerifybenchError

    data = write(tmp_path / "d.jsonl", jsonl_text(rows(12)))
    suite = suite_file(tmp_path, data)
    mine = tmp_path / "mine"
    mine.mkdir()
    write(mine / "thesis.tex", "my work")
    with pytest.raises(VerifybenchError, match=r"mine is not empty and not a run directory \(thesis\.tex\)"):
        api.run(suite, out=mine, progress=False)
    with pytest.raises(VerifybenchError, match="not empty and not a run directory"):
        api.run(cases=rows(), verifiers=["rouge"], out=mine, progress=False)
    assert sorted(p.name for p in mine.iterdir()) == ["thesis.tex"]  # and nothing was added
    # A folder a file manager has shown holds its litter and nothing else: it is empty to the user.
    shown = tmp_path / "shown"
    shown.mkdir()
    write(shown / ".DS_Store", "\x00\x00\x00\x01Bud1")
    assert api.run(suite, out=shown, progress=False).n_cases == 12
    assert (shown / ".DS_Store").exists()
    # A link planted where a run file goes: in a new folder, and in a run directory that is resumed.
    victim = write(tmp_path / "victim.txt", "precious")
    planted = tmp_path / "planted"
    planted.mkdir()
    (planted / "cases.jsonl").symlink_to(victim)
    with pytest.raises(VerifybenchError, match="cases.jsonl is a symbolic link"):
        api.run(suite, out=planted, progress=False)
    api.run(suite, out=tmp_path / "run", progress=False)
    (tmp_path / "run/errors.jsonl").unlink()
    (tmp_path / "run/errors.jsonl").symlink_to(victim)
    with pytest.raises(VerifybenchError, match="errors.jsonl is a symbolic link"):
        api.resume(tmp_path / "run", progress=False)
    (tmp_path / "run/errors.jsonl").unlink()
    (tmp_path / "run/report.html").unlink()
    (tmp_path / "run/report.html").symlink_to(victim)
    api.report(tmp_path / "run")  # the report is written by rename: the link is replaced, not followed
    assert victim.read_text() == "precious"
    assert not (tmp_path / "run/report.html").is_symlink()


def test_run_out_never_takes_a_users_files_named_like_a_runs_for_a_run(tmp_path, monkeypatch):
    """A folder is a run directory only when the run's own manifest or marker says so: the user's own
    cases.jsonl and metrics.json (or a manifest.json of something else) are refused, never overwritten."""
    from verifybench.errors import VerifybenchError

    suite = suite_file(tmp_path, write(tmp_path / "d.jsonl", jsonl_text(rows(12))))
    mine = tmp_path / "mine"
    mine.mkdir()
    theirs = {"cases.jsonl": '{"q": "my own dataset"}\n', "metrics.json": '{"my": "results"}'}
    for name, text in theirs.items():
        write(mine / name, text)
    said = r"mine is not empty and not a run directory \(cases\.jsonl, metrics\.json\)"
    with pytest.raises(VerifybenchError, match=said):
        api.run(suite, out=mine, progress=False)
    with pytest.raises(VerifybenchError, match=said):
        api.run(cases=rows(), verifiers=["rouge"], out=mine, progress=False)
    write(mine / "manifest.json", '{"name": "my web app", "icons": []}')  # a manifest, not a run's
    with pytest.raises(VerifybenchError, match=r"not a run directory \(cases\.jsonl, manifest\.json, metrics"):
        api.run(suite, out=mine, progress=False)
    assert {p.name: p.read_text() for p in mine.iterdir()} == {**theirs, "manifest.json": '{"name": "my web app", "icons": []}'}
    # A run killed before its manifest was written (cases given in Python: their copy is already there) is
    # still its own run directory: the same --out starts it again.
    import verifybench.pipeline.runner as runner

    def killed(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(runner, "dataset_hash", killed)
    with pytest.raises(KeyboardInterrupt):
        api.run(cases=rows(), verifiers=["rouge"], out=tmp_path / "early", progress=False)
    assert not (tmp_path / "early/manifest.json").exists() and (tmp_path / "early/dataset.jsonl").exists()
    monkeypatch.undo()
    assert api.run(cases=rows(), verifiers=["rouge"], out=tmp_path / "early", progress=False).n_cases == 12
    with pytest.raises(VerifybenchError, match="already holds results; resume it"):  # a run's, and finished
        api.run(suite, out=tmp_path / "early", progress=False)


@pytest.mark.parametrize("entry, said", [('{rouge: [1, 2]}', "options must be a mapping of option: value, got list"),
                                          ('{rouge: "fast"}', "options must be a mapping of option: value, got str")])
def test_verifier_options_of_the_wrong_type_are_a_message(tmp_path, entry, said):
    from verifybench.errors import SuiteError  # a VerifybenchError: the CLI prints it, exit 2

    write(tmp_path / "d.jsonl", jsonl_text(rows(3)))
    suite = write(tmp_path / "s.yaml", f"name: s\ndataset: {{loader: jsonl, path: d.jsonl}}\nverifiers: [{entry}]\n")
    with pytest.raises(SuiteError, match=re.escape(f"s.yaml: verifiers[0] (rouge): {said}")):
        api.describe(suite)
    with pytest.raises(SuiteError, match=re.escape(f"verifiers[0] (rouge): {said}")):
        api.run(suite, out=tmp_path / "run", progress=False)


def test_gate_with_a_folder_as_baseline_is_a_refusal_with_its_junit(tmp_path):
    from verifybench.gating.gate import GateRefused  # the CLI's exit 2, with this message

    data = write(tmp_path / "d.jsonl", jsonl_text(rows(12)))
    api.run(suite_file(tmp_path, data), out=tmp_path / "run", progress=False)
    (tmp_path / "folder").mkdir()
    junit = tmp_path / "junit.xml"
    with pytest.raises(GateRefused, match="folder: cannot be read as a baseline"):
        api.gate(tmp_path / "run", tmp_path / "folder", junit=junit)
    assert "cannot be read as a baseline" in junit.read_text() and "<error" in junit.read_text()


def test_a_line_of_errors_jsonl_that_is_not_json_does_not_stop_the_report(tmp_path):
    data = write(tmp_path / "d.jsonl", jsonl_text([*rows(12), {"id": "bad", "response": 3, "label": 1}]))
    api.run(suite_file(tmp_path, data, on_error="skip"), out=tmp_path / "run", progress=False)
    with open(tmp_path / "run/errors.jsonl", "a") as f:
        f.write("this is not json\n[1, 2]\n")
    api.report(tmp_path / "run")
    html = (tmp_path / "run/report.html").read_text()
    assert "errors.jsonl: line 2: not JSON" in html and "errors.jsonl: line 3: not a JSON object" in html
    assert "must be a string" in html  # the readable rows are still shown


@pytest.mark.parametrize("column, value, said", [
    ("ms", "-3", "column 'ms': -3 is not a latency in milliseconds (0 or more)"),
    ("ms", "inf", "column 'ms': inf is not a latency"),
    ("usd", "1e308", "column 'usd': 1e+308 is not a cost in USD per case"),
    ("usd", "-0.5", "column 'usd': -0.5 is not a cost"),
])
def test_a_bad_logged_latency_or_cost_is_a_bad_value_naming_file_and_line(tmp_path, column, value, said):
    data = write(tmp_path / "d.jsonl", jsonl_text(rows(12)))
    lines = ["id,score,ms,usd", *(f"c{i},{i / 12:.3f},{10 + i},0.001" for i in range(12))]
    row = lines[5].split(",")
    row[{"ms": 2, "usd": 3}[column]] = value
    lines[5] = ",".join(row)
    preds = write(tmp_path / "p.csv", "\n".join(lines) + "\n")
    suite = suite_file(tmp_path, data, verifiers=[{"scores": {"file": str(preds), "latency_column": "ms",
                                                              "cost_column": "usd"}}])
    api.run(suite, out=tmp_path / "run", progress=False)
    (bad,) = [v for v in iter_jsonl(tmp_path / "run/results.jsonl") if "error" in v]
    assert bad["case_id"] == "c4" and bad["error"] == f"p.csv:6: {said}" or said in bad["error"]
    assert bad["error"].startswith("p.csv:6: ")
    m = json.loads((tmp_path / "run/metrics.json").read_text())["verifiers"]["scores"]["overall"]
    assert m["cost_per_1k"] is not None and math.isfinite(m["cost_per_1k"])


def test_logged_latencies_are_per_case_with_no_warmup_dropped(tmp_path):
    data = write(tmp_path / "d.jsonl", jsonl_text(rows(12)))
    lines = ["id,score,ms", *(f"c{i},{i / 12:.3f},{'' if i == 7 else 100 * (i + 1)}" for i in range(12))]
    preds = write(tmp_path / "p.csv", "\n".join(lines) + "\n")
    suite = suite_file(tmp_path, data, verifiers=[{"scores": {"file": str(preds), "latency_column": "ms"}}])
    api.run(suite, out=tmp_path / "run", progress=False)
    got = {v["case_id"]: v for v in iter_jsonl(tmp_path / "run/results.jsonl")}
    assert got["c0"]["latency_ms"] == 100 and got["c0"]["latency_kind"] == "case"  # the first case is no warm-up
    assert "latency_ms" not in got["c7"]  # no logged latency: none, not a share of the batch's time
    lat = json.loads((tmp_path / "run/metrics.json").read_text())["verifiers"]["scores"]["overall"]["latency_ms"]
    assert lat["basis"] == "case" and "warmup" not in lat
    logged = [100 * (i + 1) for i in range(12) if i != 7]
    assert lat["mean"] == pytest.approx(sum(logged) / len(logged))


# --- long phases say what they are doing -------------------------------------------------------------------

class _Terminal:
    def __init__(self, tty: bool):
        self.tty, self.text = tty, ""

    def isatty(self) -> bool:
        return self.tty

    def write(self, s: str) -> int:
        self.text += s
        return len(s)

    def flush(self) -> None:
        pass


def test_a_long_phase_says_so_on_a_terminal_only():
    import time

    from verifybench._util.phases import phase

    out = _Terminal(True)
    with phase("computing metrics", out, after_s=0.05):
        time.sleep(0.3)
    assert out.text.splitlines()[0] == "verifybench: computing metrics ..."
    assert out.text.splitlines()[1].startswith("verifybench: computing metrics done in 0.")
    quick = _Terminal(True)
    with phase("quick", quick, after_s=1.0):
        pass
    time.sleep(0.05)
    assert quick.text == ""  # a quick phase is silent
    pipe = _Terminal(False)
    with phase("computing metrics", pipe, after_s=0.0):
        time.sleep(0.1)
    assert pipe.text == ""  # a log or a pipe never gets it


@pytest.mark.slow
def test_report_and_gate_say_their_phases_on_a_terminal(tmp_path, root):
    """`verifybench report` and `gate` with stderr on a real terminal (a pty) say each phase (the delay
    set to 0 so a small run shows them); with stderr a pipe, they say nothing of the kind."""
    import os
    import subprocess

    data = write(tmp_path / "d.jsonl", jsonl_text(rows(40)))
    api.run(suite_file(tmp_path, data), out=tmp_path / "run", progress=False)
    api.baseline(tmp_path / "run", out=tmp_path / "b.json")
    env = {**_cli_env(root), "VERIFYBENCH_PHASE_AFTER_S": "0"}

    def on_terminal(*args: str) -> str:
        leader, follower = os.openpty()
        proc = subprocess.Popen([*_cli(), *args], env=env, stdout=subprocess.DEVNULL, stderr=follower)
        os.close(follower)
        said = b""
        while True:
            try:
                chunk = os.read(leader, 4096)
            except OSError:
                break
            if not chunk:
                break
            said += chunk
        proc.wait(timeout=300)
        os.close(leader)
        return said.decode(errors="replace")

    said = on_terminal("report", str(tmp_path / "run"))
    for what in ("reading the run and computing metrics", "writing report.html"):
        assert f"verifybench: {what} ..." in said and f"verifybench: {what} done in" in said, said
    said = on_terminal("gate", str(tmp_path / "run"), "--baseline", str(tmp_path / "b.json"))
    assert "verifybench: gate: reading the run, comparing it with the baseline done in" in said, said
    piped = subprocess.run([*_cli(), "report", str(tmp_path / "run")], env=env, capture_output=True, text=True)
    assert piped.returncode == 0 and "verifybench: " not in piped.stderr


@pytest.mark.slow
def test_report_on_a_full_disk_is_a_message(tmp_path, root):
    import resource
    import subprocess

    data = write(tmp_path / "d.jsonl", jsonl_text(rows(40)))
    api.run(suite_file(tmp_path, data), out=tmp_path / "run", progress=False)
    before = (tmp_path / "run/results.jsonl").read_bytes()

    def limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))  # metrics.json and report.html are larger

    out = subprocess.run([*_cli(), "report", str(tmp_path / "run")], env=_cli_env(root), capture_output=True, text=True,
                         timeout=300, preexec_fn=limit)
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
    assert "no room to write" in out.stderr and f"verifybench report {tmp_path / 'run'}" in out.stderr
    assert (tmp_path / "run/results.jsonl").read_bytes() == before
    assert [p.name for p in (tmp_path / "run").iterdir() if p.name.endswith(".tmp")] == []
