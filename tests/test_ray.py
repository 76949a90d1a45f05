"""The Ray executor on a real multi-node Ray cluster on this machine (127.0.0.1 only): the same suite gives
the same run directory as the local runner, resumes, and survives losing a worker node mid-run.

The cluster: a head node with no CPUs (so every batch is scored on a worker node) and two worker nodes
of one CPU each, all on the loopback address, no dashboard, small object stores.
"""

import json
import os
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pytest
from conftest import write

from verifybench import api
from verifybench.executors.ray import RayExecutor  # imports no ray by itself
from verifybench.rundir import iter_jsonl
from verifybench.suite import parse_suite

OBJECT_STORE = 100 * 2**20
# Ray Data's own context warns about its deprecated settings each time it copies itself.
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.fixture(scope="module", autouse=True)
def ray_environment(root):
    """Worker processes import the test verifiers (tests/helpers) by module path; restored after this
    module. (Loopback binding and no usage statistics: conftest.py, before anything imports Ray.)"""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PYTHONPATH", os.pathsep.join(p for p in (str(root / "tests"), os.environ.get("PYTHONPATH")) if p))
        yield


@pytest.fixture(scope="module")
def cluster(root, ray_environment):
    ray = pytest.importorskip("ray")
    from ray.cluster_utils import Cluster

    c = None
    try:
        c = Cluster(initialize_head=True, head_node_args={
            "num_cpus": 0, "include_dashboard": False, "object_store_memory": OBJECT_STORE})
        c.workers = [c.add_node(num_cpus=1, object_store_memory=OBJECT_STORE) for _ in range(2)]
        ray.init(address=c.address, include_dashboard=False, log_to_driver=False, logging_level="warning")
        c.wait_for_nodes()
        yield c
    finally:
        ray.shutdown()
        if c is not None:
            c.shutdown()


def halueval_suite(tmp_path: Path, data_dir: Path, n: int, verifiers, batch_size: int = 16):
    raw = {"name": "ray-halueval",
           "dataset": {"loader": "halueval", "path": str(data_dir / "halueval/qa_data.json"), "limit": n},
           "verifiers": list(verifiers), "batch_size": batch_size}
    return parse_suite(raw, tmp_path, where=str(tmp_path / "ray-halueval.yaml"))


def results(run_dir: Path) -> list[dict]:
    return list(iter_jsonl(Path(run_dir) / "results.jsonl"))


def keyed_scores(run_dir: Path) -> dict[tuple[str, str], float]:
    rows = results(run_dir)
    keys = Counter((r["verifier"], r["case_id"]) for r in rows)
    assert max(keys.values()) == 1, "a (verifier, case) was written twice"
    return {(r["verifier"], r["case_id"]): r.get("score") for r in rows}


def test_the_local_path_never_imports_ray(tmp_path, root):
    code = ("import sys, verifybench, verifybench.api, verifybench.cli, verifybench.pipeline.runner, verifybench.executors;"
            "from verifybench.executors import make_executor; make_executor('local');"
            "print('ray' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=root)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


def test_the_cli_refuses_executor_options_that_cannot_work(tmp_path):
    from typer.testing import CliRunner

    from verifybench.cli import app

    cli = CliRunner()
    for args, message in ((["--address", "127.0.0.1:1"], "need --executor ray"),
                          (["--executor", "dask"], "unknown executor 'dask'"),
                          (["--executor", "ray", "--ray-pool", "judge=0"], "expected VERIFIER_ID=N")):
        out = cli.invoke(app, ["run", str(tmp_path / "never-read.yaml"), "--out", str(tmp_path / "run"), *args])
        assert out.exit_code == 2, out.output
        assert message in out.output.replace("\n", " ")
    assert not (tmp_path / "run").exists()


@pytest.mark.slow
def test_a_pool_for_a_verifier_the_suite_lacks_is_refused(cluster, tmp_path, data_dir):
    from verifybench.errors import VerifybenchError

    suite = halueval_suite(tmp_path, data_dir, 20, ["rouge"])
    with pytest.raises(VerifybenchError, match="--ray-pool names no verifier of this suite: judge"):
        api.run(suite, out=tmp_path / "run", progress=False, executor=RayExecutor(pools={"judge": 2}))
    assert json.loads((tmp_path / "run/manifest.json").read_text())["status"] == "failed"


@pytest.mark.slow
def test_a_ray_run_equals_the_local_run(cluster, tmp_path, data_dir):
    noisy = {"helpers.repeat_verifiers:Noisy": {"id": "noisy", "repeats": 3}}  # seeded per repeat: equal too
    suite = halueval_suite(tmp_path, data_dir, 300, ["rouge", "bleu", {"rouge": {"id": "rouge2", "type": "rouge2"}},
                                                     noisy])
    local = api.run(suite, out=tmp_path / "local", progress=False)
    on_ray = api.run(suite, out=tmp_path / "ray", progress=False, executor=RayExecutor(batches_per_block=2))
    assert on_ray.result is not None and local.result is not None
    assert (on_ray.n_cases, on_ray.result.new_verdicts, on_ray.n_error_verdicts) == \
        (local.n_cases, local.result.new_verdicts, 0) == (300, 1200, 0)

    want, got = keyed_scores(tmp_path / "local"), keyed_scores(tmp_path / "ray")
    assert got == want  # same case ids, same verifiers, bit-identical scores
    assert len({cid for _, cid in got}) == 300 and len(set(got.values())) > 50
    repeats = {d: {r["case_id"]: r["detail"]["repeats"]["scores"] for r in results(tmp_path / d) if r["verifier"] == "noisy"}
               for d in ("local", "ray")}
    assert repeats["ray"] == repeats["local"] and all(len(set(v)) == 3 for v in repeats["ray"].values())

    # The same case index, and everything computed from the run directory agrees.
    assert (tmp_path / "ray/cases.jsonl").read_bytes() == (tmp_path / "local/cases.jsonl").read_bytes()
    metrics = {d: json.loads((tmp_path / d / "metrics.json").read_text())["verifiers"] for d in ("local", "ray")}
    for vid in ("rouge", "bleu", "rouge2"):
        assert metrics["ray"][vid]["overall"]["auroc"] == metrics["local"][vid]["overall"]["auroc"]
    assert api.compare(tmp_path / "ray", tmp_path / "local", verifiers=["rouge"])[0]["cases"] > 0

    manifest = json.loads((tmp_path / "ray/manifest.json").read_text())
    assert manifest["status"] == "complete"
    ex = manifest["executor"]
    assert ex["name"] == "ray" and ex["ray"] and ex["nodes"] == 3 and ex["cpus"] == 2
    assert ex["gcs_address"].startswith("127.0.0.1:") and ex["address"] == ex["gcs_address"]
    assert json.loads((tmp_path / "local/manifest.json").read_text())["executor"] == {"name": "local"}


@pytest.mark.slow
def test_model_holding_verifier_runs_in_an_actor_pool_with_the_same_scores(cluster, tmp_path, data_dir):
    """`anchors` (MiniLM and spaCy, loaded once per actor) through Ray against the local runner."""
    anchors = {"anchors": {"cache_dir": None}}  # no shared disk cache: each side embeds for itself
    suite = halueval_suite(tmp_path, data_dir, 48, [anchors], batch_size=8)
    api.run(suite, out=tmp_path / "local", progress=False)
    api.run(suite, out=tmp_path / "ray", progress=False, executor=RayExecutor(batches_per_block=1, pools={"anchors": 1}))
    want, got = keyed_scores(tmp_path / "local"), keyed_scores(tmp_path / "ray")
    assert got.keys() == want.keys() and len(got) == 48
    assert all(v is not None for v in got.values())
    # Same batches, same model, same CPU kernels: equal to float rounding at worst.
    assert max(abs(got[k] - want[k]) for k in want) < 1e-6


@pytest.mark.slow
def test_a_ray_run_resumes_from_the_cli_on_the_cluster(cluster, tmp_path, data_dir):
    """A separate driver process joins the cluster by address, then finishes a cut run."""
    suite = write(tmp_path / "s.yaml", json.dumps({
        "name": "ray-cli", "batch_size": 20, "verifiers": ["rouge", "bleu"],
        "dataset": {"loader": "halueval", "path": str(data_dir / "halueval/qa_data.json"), "limit": 200}}))
    cli = [sys.executable, "-m", "verifybench.cli", "run"]
    on = ["--executor", "ray", "--address", cluster.address]
    first = subprocess.run([*cli, str(suite), "--out", str(tmp_path / "run"), "-q", *on], capture_output=True, text=True)
    assert first.returncode == 0, first.stderr
    assert first.stdout.strip().endswith("report.html")
    api.run(suite, out=tmp_path / "local", progress=False)
    want = keyed_scores(tmp_path / "local")
    assert keyed_scores(tmp_path / "run") == want

    # A killed writer: 150 whole lines and half of the next one.
    path = tmp_path / "run/results.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:150]) + lines[150][:20])
    done = subprocess.run([*cli, "--resume", str(tmp_path / "run"), "-q", *on], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "250 new verdicts" in done.stdout
    assert keyed_scores(tmp_path / "run") == want
    manifest = json.loads((tmp_path / "run/manifest.json").read_text())
    assert manifest["resumes"] == 1 and manifest["executor"]["name"] == "ray"
    assert manifest["executor"]["address"] == cluster.address


@pytest.mark.slow
def test_losing_a_worker_node_mid_run_still_scores_every_case_once(cluster, tmp_path, data_dir):
    slow = {"helpers.verifiers:Slow": {"id": "slow", "ms": 15}}
    suite = halueval_suite(tmp_path, data_dir, 400, ["rouge", slow], batch_size=10)
    api.run(suite, out=tmp_path / "local", progress=False)

    outcome = {}

    def run_on_ray():
        try:
            outcome["result"] = api.run(suite, out=tmp_path / "ray", progress=False,
                                        executor=RayExecutor(batches_per_block=1))
        except BaseException as e:  # noqa: BLE001 - reported by the main thread
            outcome["error"] = e

    runner = threading.Thread(target=run_on_ray)
    runner.start()
    try:
        # Ray starts and stops nodes from the main thread only (signal handlers): the run goes in a thread.
        deadline = time.time() + 180
        while time.time() < deadline and not any(r["verifier"] == "slow" for r in results(tmp_path / "ray")):
            assert runner.is_alive(), outcome
            time.sleep(0.05)
        scored_before = sum(r["verifier"] == "slow" for r in results(tmp_path / "ray"))
        assert 0 < scored_before < 400, "the node should be lost mid-run"
        cluster.remove_node(cluster.workers.pop(0))
        print(f"worker node removed after {scored_before} of 400 slow verdicts")
        cluster.workers.append(cluster.add_node(num_cpus=1, object_store_memory=OBJECT_STORE))
    finally:
        runner.join(timeout=300)
    assert not runner.is_alive() and "error" not in outcome, outcome
    assert outcome["result"].result.new_verdicts == 800
    assert keyed_scores(tmp_path / "ray") == keyed_scores(tmp_path / "local")
    assert json.loads((tmp_path / "ray/manifest.json").read_text())["status"] == "complete"
