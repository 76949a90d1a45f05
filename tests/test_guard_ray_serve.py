"""The guard as a Ray Serve deployment (`verifybench.guard.ray_serve`) on a real local Ray bound to
127.0.0.1: the same app answers over HTTP through Serve's proxy, with the same decisions as the guard in
process, each replica writing its own decision log."""

from __future__ import annotations

import os
import socket
import threading
from pathlib import Path

import httpx
import pytest
import yaml

from helpers.guard_verifiers import demo_cases, fit_demo_policy
from verifybench.errors import VerifybenchError
from verifybench.guard import Guard
from verifybench.loaders.guardlog import read_log

ROOT = Path(__file__).resolve().parents[1]
# Ray's own modules warn about their deprecated settings.
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_the_builder_names_what_it_takes(tmp_path):
    from verifybench.guard.ray_serve import build

    with pytest.raises(VerifybenchError, match="unknown: colour"):
        build({"guard": str(tmp_path / "guard.yaml"), "colour": "red"})
    with pytest.raises(VerifybenchError, match="guard= is missing"):
        build({"log_dir": str(tmp_path)})


def test_workers_are_uvicorn_s_and_replicas_ray_serve_s(tmp_path):
    from verifybench.guard.service import serve

    with pytest.raises(VerifybenchError, match="on Ray Serve use --replicas"):
        serve(tmp_path / "guard.yaml", ray=True, workers=2)
    with pytest.raises(VerifybenchError, match="--replicas and --ray-address need --ray"):
        serve(tmp_path / "guard.yaml", replicas=2)


@pytest.mark.slow
def test_a_ray_serve_deployment_gives_the_in_process_decisions_and_logs_per_replica(tmp_path, monkeypatch):
    ray = pytest.importorskip("ray")
    serve = pytest.importorskip("ray.serve")
    from verifybench.guard.ray_serve import APP_NAME, application

    _, _, policy = fit_demo_policy(tmp_path)
    guard_file = tmp_path / "guard.yaml"
    guard_file.write_text(yaml.safe_dump({"policy": str(policy), "checks": ["rouge"]}))
    cases = demo_cases()[:40]
    with Guard(guard_file, log_dir=False) as g:
        want = [g.check(c["response"], c["sources"], c.get("question"), c.get("doc_type")) for c in cases]

    # The replicas import this worktree's package; Ray's workers inherit the driver's environment.
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in (str(ROOT / "src"), os.environ.get("PYTHONPATH")) if p))
    # and its token: /readyz tells its pid and log file only to a caller that holds it
    monkeypatch.setenv("VERIFYBENCH_GUARD_TOKEN", "tok-ray-serve-test")
    port = _free_port()
    log_dir = tmp_path / "log"
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="warning",
             object_store_memory=100 * 2**20, _node_ip_address="127.0.0.1")
    try:
        assert {n["NodeManagerAddress"] for n in ray.nodes()} == {"127.0.0.1"}
        serve.start(http_options={"host": "127.0.0.1", "port": port})
        deployed: list[BaseException | None] = []

        def deploy() -> None:
            try:
                serve.run(application(guard_file, log_dir=log_dir), name=APP_NAME, route_prefix="/")
                deployed.append(None)
            except BaseException as e:  # noqa: BLE001 - reported by the test below
                deployed.append(e)

        t = threading.Thread(target=deploy, daemon=True)
        t.start()
        t.join(240)  # bounded: the replica loads its guard before Serve reports the app running
        assert deployed == [None], deployed or "the deployment did not start in 240 s"

        url = f"http://127.0.0.1:{port}"
        with httpx.Client(base_url=url, timeout=30, headers={"authorization": "Bearer tok-ray-serve-test"}) as client:
            ready = client.get("/readyz")
            assert ready.status_code == 200, ready.text
            replica = ready.json()
            got = [client.post("/v1/check", json={"response": c["response"], "sources": c["sources"],
                                                  "question": c.get("question"), "doc_type": c.get("doc_type"),
                                                  "request_id": c["id"]})
                   for c in cases]
            bad = client.post("/v1/check", json={"sources": ["x"]})
        assert all(r.status_code == 200 for r in got), [r.text for r in got if r.status_code != 200][:1]
        for w, r in zip(want, got):
            d = r.json()
            assert d["action"] == w.action and d["checks"][0]["verifier"] == "rouge"
            assert d["checks"][0]["score"] == pytest.approx(w.checks[0].score, abs=1e-12)
            assert d["checks"][0]["flagged"] == w.checks[0].flagged
        assert len({w.action for w in want}) == 2  # both allowed and flagged answers were compared
        assert bad.status_code == 422 and bad.json()["field"] == "response"  # the same app's validation

        # The replica is its own process and writes its own file, named by its pid, before answering.
        assert replica["pid"] != os.getpid()
        assert Path(replica["log"]) == log_dir / f"decisions-{replica['pid']}-1.jsonl"
        recs, torn = read_log(log_dir)
        assert not torn and [r.decision.request_id for r in recs] == [c["id"] for c in cases]
        assert {r.decision.guard_hash for r in recs} == {replica["guard_hash"]}
    finally:
        try:
            serve.shutdown()
        finally:
            ray.shutdown()
