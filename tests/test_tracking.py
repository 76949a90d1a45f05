"""MLflow tracking against real MLflow stores: a SQLite store in a temp dir, and a real `mlflow server`
on 127.0.0.1. Every value is read back with `mlflow.search_runs` and compared with the run's own
metrics.json and manifest.json."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from typer.testing import CliRunner

from helpers.tracked_runs import make_run, suite_file, with_created
from verifybench import api
from verifybench.cli import app
from verifybench.rundir import read_json
from verifybench.tracking import mlflow_store as tracking

mlflow = pytest.importorskip("mlflow", reason="the tracking tests need the mlflow extra (part of the test extra)")
# A real MLflow store: the first one of a session runs its schema migrations (about 10 s), and every test
# logs into one; the quick loop leaves the module out (docs/testing.md), CI runs it.
pytestmark = pytest.mark.slow
cli = CliRunner()
EXPERIMENT = "tracked"  # the suite's name


@pytest.fixture(scope="module")
def runs(tmp_path_factory, root):
    """A finished run, and a second one of the same suite with a threshold policy applied."""
    folder = tmp_path_factory.mktemp("tracked")
    suite = suite_file(folder, root)
    first = make_run(folder / "first", suite)
    policy = folder / "policy.yaml"
    api.thresholds(first, out=policy)
    return {"suite": suite, "first": first, "with_policy": make_run(folder / "with-policy", suite, policy=policy)}


@pytest.fixture
def sqlite_uri(tmp_path, monkeypatch, mlflow_empty_store):
    """A fresh SQLite store; the working directory is the temp dir, where MLflow puts its artifacts."""
    monkeypatch.chdir(tmp_path)
    for var in ("MLFLOW_TRACKING_URI", "MLFLOW_EXPERIMENT_NAME", "MLFLOW_EXPERIMENT_ID"):
        monkeypatch.delenv(var, raising=False)
    shutil.copyfile(mlflow_empty_store, tmp_path / "store.db")
    uri = f"sqlite:///{tmp_path / 'store.db'}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)  # what mlflow.search_runs reads back from
    return uri


def flat(text: str) -> str:
    """CLI output with rich's box drawing and line wrapping undone."""
    return " ".join(text.replace("│", " ").split())


def read_runs(experiment: str = EXPERIMENT):
    return mlflow.search_runs(experiment_names=[experiment], output_format="pandas")


def assert_matches_run_dir(row, run_dir: Path) -> None:
    """The MLflow run holds the run directory's numbers, exactly."""
    metrics = json.loads((run_dir / "metrics.json").read_text())
    manifest = json.loads((run_dir / "manifest.json").read_text())
    logged = {k.removeprefix("metrics."): v for k, v in row.items() if k.startswith("metrics.") and v == v}
    # The metrics the issue names, read straight from metrics.json's layout.
    for vid, entry in metrics["verifiers"].items():
        for key, m in [("all", entry["overall"]), *entry["slices"].items()]:
            assert logged[f"{vid}/{key}/auroc"] == m["auroc"]
            assert logged[f"{vid}/{key}/auprc"] == m["auprc"]
            assert logged[f"{vid}/{key}/auroc_ci_low"] == m["ci"]["auroc"][0]
            assert logged[f"{vid}/{key}/p50_ms"] == m["latency_ms"]["p50"]
            assert logged[f"{vid}/{key}/p95_ms"] == m["latency_ms"]["p95"]
            assert logged[f"{vid}/{key}/errors"] == m["errors"]
            if m["threshold"]["value"] is None:
                assert f"{vid}/{key}/threshold" not in logged and f"{vid}/{key}/test_f1" not in logged
            else:
                assert logged[f"{vid}/{key}/threshold"] == m["threshold"]["value"]
                for rate in ("precision", "recall", "f1"):
                    if m["test"][rate] is None:  # undefined (nothing flagged): left out, never a 0
                        assert f"{vid}/{key}/test_{rate}" not in logged
                    else:
                        assert logged[f"{vid}/{key}/test_{rate}"] == m["test"][rate]
            if m["cost_per_1k"] is None:
                assert f"{vid}/{key}/cost_per_1k" not in logged
            else:
                assert logged[f"{vid}/{key}/cost_per_1k"] == m["cost_per_1k"]
    # ... and nothing else than what the flattening gives, value for value.
    assert logged == tracking.metric_rows(metrics)
    assert row["params.suite"] == manifest["suite"]["name"] == EXPERIMENT
    assert row["params.suite.hash"] == manifest["suite"]["hash"]
    assert row["params.dataset.hash"] == manifest["dataset"]["hash"]
    assert row["params.executor"] == manifest["executor"]["name"]
    for v in manifest["verifiers"]:
        assert row[f"params.verifier.{v['id']}.config_hash"] == v["config_hash"]
    for pkg, ver in manifest["packages"].items():
        assert row[f"params.version.{pkg}"] == ver
    assert row["tags.verifybench.run_key"] == tracking.run_key(manifest, run_dir)
    assert row["status"] == "FINISHED"


def test_sqlite_store_holds_the_run_as_metrics_json_says(runs, sqlite_uri, tmp_path):
    logged = api.log(runs["first"], sqlite_uri)
    assert logged.created and logged.experiment == EXPERIMENT
    df = read_runs()
    assert len(df) == 1 and df.iloc[0]["run_id"] == logged.run_id
    assert_matches_run_dir(df.iloc[0], runs["first"])
    metrics = json.loads((runs["first"] / "metrics.json").read_text())
    # The run had costs (priced), errors (flaky) and a verifier without cost (rouge): all as they are.
    assert metrics["verifiers"]["priced"]["overall"]["cost_per_1k"] > 0
    assert metrics["verifiers"]["flaky"]["overall"]["errors"] > 0

    client = mlflow.MlflowClient(sqlite_uri)
    assert {a.path for a in client.list_artifacts(logged.run_id)} == {"report.html", "metrics.json", "manifest.json"}
    got = Path(client.download_artifacts(logged.run_id, "metrics.json", str(tmp_path)))
    assert got.read_bytes() == (runs["first"] / "metrics.json").read_bytes()
    run = client.get_run(logged.run_id)
    assert run.info.run_name == "first"
    manifest = json.loads((runs["first"] / "manifest.json").read_text())
    assert run.info.start_time == tracking._ms(manifest["created"])  # MLflow's time is when the run ran


def test_a_policy_applied_to_the_run_is_an_artifact_and_a_param(runs, sqlite_uri):
    logged = api.log(runs["with_policy"], sqlite_uri)
    client = mlflow.MlflowClient(sqlite_uri)
    assert "policy.yaml" in {a.path for a in client.list_artifacts(logged.run_id)}
    row = read_runs().iloc[0]
    assert row["params.policy"] == "policy.yaml"
    assert row["tags.verifybench.threshold_source.rouge"] == "policy"
    assert_matches_run_dir(row, runs["with_policy"])


def test_logging_the_same_run_directory_again_updates_its_mlflow_run(runs, sqlite_uri, tmp_path):
    first = api.log(runs["first"], sqlite_uri)
    again = api.log(runs["first"], sqlite_uri)
    assert not again.created and again.run_id == first.run_id and again.metrics_logged == 0
    assert "logged before" in again.summary()
    assert len(read_runs()) == 1

    # The same run directory, moved elsewhere and its numbers computed again (another target, say): same
    # MLflow run, only the changed numbers written. (A metrics.json of a newer format is refused by name:
    # test_formats.py.)
    moved = tmp_path / "elsewhere" / "first"
    shutil.copytree(runs["first"], moved)
    metrics = json.loads((moved / "metrics.json").read_text())
    overall = metrics["verifiers"]["rouge"]["overall"]
    thr = overall["threshold"]["value"] + 0.125
    overall["threshold"]["value"] = thr
    overall["test"]["precision"] = 0.25
    overall["auroc"] = 0.5
    (moved / "metrics.json").write_text(json.dumps(metrics))
    updated = api.log(moved, sqlite_uri)
    assert updated.run_id == first.run_id and updated.metrics_logged == 3
    row = read_runs().iloc[0]
    assert len(read_runs()) == 1
    assert row["metrics.rouge/all/threshold"] == pytest.approx(thr) and row["metrics.rouge/all/test_precision"] == 0.25
    assert row["metrics.rouge/all/auroc"] == 0.5

    # A new run into a directory of the same name (another creation time) is another MLflow run.
    rerun = with_created(runs["first"], tmp_path / "rerun" / "first", "2031-01-01T00:00:00+00:00")
    other = api.log(rerun, sqlite_uri)
    assert other.created and other.run_id != first.run_id and len(read_runs()) == 2


def test_params_that_changed_keep_their_first_value_and_are_reported(runs, sqlite_uri, tmp_path):
    moved = tmp_path / "resumed" / "first"
    shutil.copytree(runs["first"], moved)
    api.log(moved, sqlite_uri)
    manifest = json.loads((moved / "manifest.json").read_text())
    before = manifest["packages"]["numpy"]
    manifest["packages"]["numpy"] = "99.0"  # resumed later under another numpy
    (moved / "manifest.json").write_text(json.dumps(manifest))
    again = api.log(moved, sqlite_uri)
    assert again.kept_params == {"version.numpy": (before, "99.0")}
    assert "version.numpy" in again.summary() and "cannot change" in again.summary()
    assert read_runs().iloc[0]["params.version.numpy"] == before


def test_default_tracking_uri_is_mlflows_own(runs, tmp_path, monkeypatch):
    """No URI and no MLFLOW_TRACKING_URI: MLflow's default, which for the installed MLflow is a SQLite
    file mlflow.db in the current directory; MLFLOW_TRACKING_URI, when set, wins."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    logged = api.log(runs["first"])
    assert (tmp_path / "mlflow.db").is_file() and logged.tracking_uri.startswith("sqlite:")
    other = tmp_path / "other.db"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{other}")
    assert api.log(runs["first"]).created  # another store, so a new run there
    assert other.is_file()


def test_experiment_from_option_or_environment(runs, sqlite_uri, monkeypatch):
    assert api.log(runs["first"], sqlite_uri, experiment="nightly").experiment == "nightly"
    monkeypatch.setenv("MLFLOW_EXPERIMENT_NAME", "from-env")
    assert api.log(runs["first"], sqlite_uri).experiment == "from-env"
    assert len(read_runs("nightly")) == 1 and len(read_runs("from-env")) == 1


def test_git_commit_of_the_suites_repository_is_a_tag(root, tmp_path, sqlite_uri):
    repo = tmp_path / "project"
    suite = suite_file(repo, root)
    git = ["git", "-C", str(repo), "-c", "user.email=t@example.com", "-c", "user.name=t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "suite"], check=True)
    head = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    run_dir = make_run(repo / "reports" / "r", suite, limit=60)
    assert read_json(run_dir / "manifest.json")["git"] == {"commit": head, "dirty": False}
    # A later commit does not rename the run's code: the manifest recorded it when the run started.
    (repo / "later.txt").write_text("x")
    subprocess.run([*git, "add", "later.txt"], check=True)
    subprocess.run([*git, "commit", "-qm", "later"], check=True)
    api.log(run_dir, sqlite_uri)
    row = read_runs().iloc[0]
    assert row["tags.mlflow.source.git.commit"] == head and row["tags.verifybench.git_dirty"] == "False"


def test_odd_slice_names_become_valid_distinct_metric_keys():
    keys = {tracking.metric_key("v", s, "auroc") for s in ("a/b", "a?b", "..", "all", "ünïcode ok")}
    assert len(keys) == 5
    assert "v/all/auroc" in keys and "v/ünïcode ok/auroc" in keys
    from mlflow.utils.validation import _validate_metric_name

    for k in keys:
        _validate_metric_name(k)  # raises on a key MLflow would refuse


# --- the command line -------------------------------------------------------------------------------

def test_run_with_bare_mlflow_flag_logs_to_the_environments_store(runs, sqlite_uri, tmp_path):
    out = cli.invoke(app, ["run", str(runs["suite"]), "--out", str(tmp_path / "r"), "-q", "--limit", "60", "--mlflow"])
    assert out.exit_code == 0, out.output
    assert out.stdout.strip().splitlines()[-1] == str(tmp_path / "r" / "report.html")
    assert "MLflow: logged as run" in out.stderr
    df = read_runs()
    assert len(df) == 1
    assert_matches_run_dir(df.iloc[0], tmp_path / "r")


def test_a_failure_to_log_after_the_run_keeps_the_run_and_says_how_to_retry(runs, sqlite_uri, tmp_path, monkeypatch):
    client = mlflow.MlflowClient(sqlite_uri)
    client.delete_experiment(client.create_experiment("gone"))
    monkeypatch.setenv("MLFLOW_EXPERIMENT_NAME", "gone")  # the store answers, but this experiment is deleted
    out = cli.invoke(app, ["run", str(runs["suite"]), "--out", str(tmp_path / "r"), "-q", "--limit", "60", "--mlflow"])
    assert out.exit_code == 2
    assert out.stdout.strip().splitlines()[-1] == str(tmp_path / "r" / "report.html")
    assert (tmp_path / "r" / "metrics.json").exists()
    err = flat(out.stderr)
    assert "experiment 'gone' is deleted; restore it" in err and f"verifybench log {tmp_path / 'r'}" in err
    monkeypatch.setenv("MLFLOW_EXPERIMENT_NAME", "kept")
    assert cli.invoke(app, ["log", str(tmp_path / "r")]).exit_code == 0 and len(read_runs("kept")) == 1


def test_log_command_logs_each_directory_and_says_when_it_updates(runs, sqlite_uri):
    out = cli.invoke(app, ["log", str(runs["first"]), str(runs["with_policy"]), "--mlflow", sqlite_uri])
    assert out.exit_code == 0, out.output
    assert out.stdout.count("MLflow: logged as run") == 2
    again = cli.invoke(app, ["log", str(runs["first"])])  # bare: MLFLOW_TRACKING_URI
    assert again.exit_code == 0 and "logged before" in again.stdout
    assert len(read_runs()) == 2


def test_log_refuses_an_unfinished_run(tmp_path, sqlite_uri, runs):
    broken = tmp_path / "broken"
    shutil.copytree(runs["first"], broken)
    (broken / "metrics.json").unlink()
    out = cli.invoke(app, ["log", str(broken), "--mlflow", sqlite_uri])
    assert out.exit_code == 2
    assert "metrics.json: not found" in flat(out.stderr) and f"verifybench run --resume {broken}" in flat(out.stderr)
    assert mlflow.search_runs(search_all_experiments=True).empty


def test_log_names_a_damaged_metrics_file(tmp_path, sqlite_uri, runs):
    damaged = tmp_path / "damaged"
    shutil.copytree(runs["first"], damaged)
    (damaged / "metrics.json").write_bytes((runs["first"] / "metrics.json").read_bytes()[:300])
    out = cli.invoke(app, ["log", str(damaged), "--mlflow", sqlite_uri])
    assert out.exit_code == 2 and f"{damaged / 'metrics.json'}: not JSON (" in flat(out.stderr)
    assert "Traceback" not in out.output


def test_run_refuses_bad_tracking_uris_before_running(runs, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    secret = "s3cr3t-t0ken"
    out = cli.invoke(app, ["run", str(runs["suite"]), "--out", str(tmp_path / "a"), "-q",
                           "--mlflow", f"http://me:{secret}@127.0.0.1:9"])
    assert out.exit_code == 2 and "MLFLOW_TRACKING_PASSWORD" in flat(out.output) and secret not in out.output
    out = cli.invoke(app, ["run", "--mlflow", str(runs["suite"]), "--out", str(tmp_path / "b"), "-q"])
    assert out.exit_code == 2 and "that is a suite file, not a tracking URI" in flat(out.output)
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out = cli.invoke(app, ["run", str(runs["suite"]), "--out", str(tmp_path / "c"), "-q",
                           "--mlflow", f"http://127.0.0.1:{port}"])
    assert out.exit_code == 2 and "cannot be used" in flat(out.output)
    assert not any((tmp_path / d).exists() for d in "abc")  # refused before any run started


def _python(code: str, root: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root / "src"), str(root / "tests")])}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)


def test_cli_starts_without_mlflow_and_says_how_to_get_it(runs, root, tmp_path):
    out = tmp_path / "never"
    code = ("import sys\nimport verifybench.cli, verifybench.api\nassert 'mlflow' not in sys.modules, 'imported eagerly'\n"
            "sys.modules['mlflow'] = None  # as if not installed\n"
            f"verifybench.cli.app(['run', {str(runs['suite'])!r}, '--out', {str(out)!r}, '-q', '--mlflow'])")
    p = _python(code, root)
    assert p.returncode == 2, p.stderr
    assert "pip install 'verifybench[mlflow]'" in flat(p.stderr) and not out.exists()


# --- a real tracking server ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def mlflow_server(tmp_path_factory):
    """`mlflow server` on 127.0.0.1 (a free port), its own SQLite store and proxied artifact folder;
    stopped (its whole process group) after the module."""
    folder = tmp_path_factory.mktemp("mlflow-server")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = open(folder / "server.log", "wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "mlflow", "server", "--host", "127.0.0.1", "--port", str(port), "--workers", "1",
         "--backend-store-uri", f"sqlite:///{folder / 'server.db'}", "--artifacts-destination", str(folder / "artifacts")],
        cwd=folder, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while True:
            if proc.poll() is not None:
                pytest.fail(f"mlflow server exited with {proc.returncode}:\n{(folder / 'server.log').read_text()[-3000:]}")
            try:
                with urllib.request.urlopen(f"{url}/health", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"mlflow server did not answer in 180 s:\n{(folder / 'server.log').read_text()[-3000:]}")
            time.sleep(0.5)
        yield url
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(10)
        log.close()


@pytest.mark.mlflow_server
def test_run_logs_to_a_real_mlflow_server(runs, mlflow_server, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", mlflow_server)
    out = cli.invoke(app, ["run", str(runs["suite"]), "--out", str(tmp_path / "served"), "-q", "--mlflow", mlflow_server])
    assert out.exit_code == 0, out.output
    assert f"{mlflow_server}/#/experiments/" in out.stderr  # a link to the run in the MLflow UI
    df = read_runs()
    assert len(df) == 1
    assert_matches_run_dir(df.iloc[0], tmp_path / "served")
    run_id = df.iloc[0]["run_id"]
    client = mlflow.MlflowClient(mlflow_server)
    assert {a.path for a in client.list_artifacts(run_id)} == {"report.html", "metrics.json", "manifest.json"}
    got = Path(client.download_artifacts(run_id, "report.html", str(tmp_path)))
    assert got.read_bytes() == (tmp_path / "served" / "report.html").read_bytes()

    again = cli.invoke(app, ["log", str(tmp_path / "served"), "--mlflow", mlflow_server])
    assert again.exit_code == 0 and "logged before" in again.stdout and run_id in again.stdout
    assert len(read_runs()) == 1
