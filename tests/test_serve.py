"""`verifybench serve`: the guard over HTTP. The app in process (through httpx's ASGI transport) for the
request checks, and a real uvicorn server on 127.0.0.1 in a subprocess for decisions against
`run --policy`, /metrics against the log, the token, and a SIGKILL under load."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import httpx
import pytest
import yaml

import verifybench
from helpers.guard_verifiers import demo_cases, fit_demo_policy
from verifybench.guard import Guard
from verifybench.guard.service import MAX_BATCH, create_app
from verifybench.loaders.guardlog import read_log

ROOT = Path(__file__).resolve().parents[1]
TOKEN = "tok-3b1f0c9e-never-in-a-log"


@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    base = tmp_path_factory.mktemp("serve")
    suite, run, policy = fit_demo_policy(base)
    both = base / "both.yaml"  # every check the policy records, by name (a bare policy runs its best one)
    both.write_text(yaml.safe_dump({"policy": str(policy), "checks": ["rouge", "sentences"]}), encoding="utf-8")
    return {"base": base, "suite": suite, "run": run, "policy": policy, "both": both}


def _item(c: dict) -> dict:
    return {"response": c["response"], "sources": c["sources"], "question": c.get("question"),
            "doc_type": c.get("doc_type"), "request_id": c["id"]}


async def _asgi(app, calls):
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://guard") as client:
        return [await client.request(method, url, **kw) for method, url, kw in calls]


# --- the app in process ------------------------------------------------------------------------------------


def test_malformed_and_oversized_requests_get_a_4xx_naming_the_field(fitted, tmp_path):
    with Guard(fitted["policy"], log_dir=tmp_path / "log", checks=["rouge"]) as g:
        app = create_app(g, max_body=20_000)
        ok = {"response": "The Team plan costs $29.", "sources": ["The Team plan costs $29 per user."]}
        r = asyncio.run(_asgi(app, [
            ("POST", "/v1/check", {"json": {"sources": ["x"]}}),
            ("POST", "/v1/check", {"json": {"response": "x", "sources": [{"id": "a"}]}}),
            ("POST", "/v1/check", {"json": {**ok, "colour": "red"}}),
            ("POST", "/v1/check", {"json": {**ok, "meta": "not an object"}}),
            ("POST", "/v1/check", {"content": b"{not json", "headers": {"content-type": "application/json"}}),
            ("POST", "/v1/check", {"json": {**ok, "response": "a" * 30_000}}),
            ("POST", "/v1/check/batch", {"json": {"items": [ok] * (MAX_BATCH + 1)}}),
            ("POST", "/v1/check/batch", {"json": {"items": [ok, {**ok, "response": 3}]}}),
            ("POST", "/v1/check", {"json": ok}),
            ("GET", "/openapi.json", {}),
        ]))
        assert [x.status_code for x in r[:8]] == [422, 422, 422, 422, 422, 413, 413, 422]
        assert r[0].json()["field"] == "response"
        assert r[1].json()["field"] == "sources[0].text"
        assert r[2].json()["field"] == "colour" and "Extra inputs" in r[2].json()["error"]
        assert r[3].json()["field"] == "meta"
        assert "JSON" in r[4].json()["error"]
        assert "too large" in r[5].json()["error"]
        assert r[7].json()["field"] == "items[1].response"
        assert r[8].status_code == 200 and r[8].json()["checks"][0]["verifier"] == "rouge"
        schema = r[9].json()
        assert {"/v1/check", "/v1/check/batch", "/healthz", "/readyz", "/metrics"} <= set(schema["paths"])
        assert "CheckRequest" in schema["components"]["schemas"]
    recs, _ = read_log(tmp_path / "log")
    assert len(recs) == 1  # refused requests are not decisions


def test_the_bearer_token_is_required_and_never_logged_or_returned(fitted, tmp_path, monkeypatch):
    monkeypatch.setenv("MY_GUARD_TOKEN", TOKEN)
    with Guard(fitted["policy"], log_dir=tmp_path / "log", checks=["rouge"]) as g:
        app = create_app(g, token_env="MY_GUARD_TOKEN")
        body = {"response": "x y", "sources": ["x y z"], "meta": {"note": "hello"}}
        r = asyncio.run(_asgi(app, [
            ("POST", "/v1/check", {"json": body}),
            ("POST", "/v1/check", {"json": body, "headers": {"authorization": "Bearer wrong"}}),
            ("POST", "/v1/check", {"json": body, "headers": {"authorization": f"Bearer {TOKEN}"}}),
            ("GET", "/metrics", {}),
            ("GET", "/metrics", {"headers": {"authorization": f"Bearer {TOKEN}"}}),
            ("GET", "/healthz", {}),
            ("GET", "/readyz", {}),
            ("GET", "/readyz", {"headers": {"authorization": f"Bearer {TOKEN}"}}),
        ]))
    assert [x.status_code for x in r] == [401, 401, 200, 401, 200, 200, 200, 200]
    assert r[6].json() == {"ready": True}  # a caller without the token learns only that
    assert r[7].json()["guard"]["checks"]["rouge"]["thresholds"]["all"]["native"].startswith("rouge1 precision <= ")
    for x in r:
        assert TOKEN not in x.text and TOKEN not in str(x.headers)
    for f in (tmp_path / "log").iterdir():
        assert TOKEN not in f.read_text()


# --- a real server ------------------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, target: Path, log_dir: Path, cwd: Path, env: dict | None = None, workers: int = 1,
                 args: tuple[str, ...] = ()):
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_dir = log_dir
        self.out = cwd / f"server-{self.port}.out"
        environ = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT / "tests")]),
                   **(env or {})}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "verifybench.cli", "serve", str(target), "--host", "127.0.0.1", "--port",
             str(self.port), "--log-dir", str(log_dir), "--workers", str(workers),
             "--allow-code", "helpers.guard_verifiers", *args],  # the policies name test verifiers by import path
            cwd=cwd, env=environ, stdout=open(self.out, "wb"), stderr=subprocess.STDOUT)
        deadline = time.time() + 90
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the server exited: {self.out.read_text()[-2000:]}")
            try:
                if httpx.get(self.url + "/readyz", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.3)
        self.stop()
        raise RuntimeError(f"the server did not get ready in 90 s: {self.out.read_text()[-2000:]}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)


@pytest.fixture
def server(fitted, tmp_path):
    started = []

    def start(target=None, **kw):
        s = Server(target or fitted["both"], kw.pop("log_dir", tmp_path / "log"), tmp_path, **kw)
        started.append(s)
        return s

    yield start
    for s in started:
        s.stop()


def _metric(text: str, name: str) -> Counter:
    out: Counter = Counter()
    for line in text.splitlines():
        m = re.match(rf"{name}\{{(.*)\}} ([0-9.e+-]+)$", line)
        if m:
            labels = dict(re.findall(r'(\w+)="([^"]*)"', m.group(1)))
            out[tuple(sorted(labels.items()))] += float(m.group(2))
    return out


@pytest.mark.slow
def test_served_decisions_equal_run_with_policy_and_metrics_match_the_log(fitted, server, tmp_path):
    applied = verifybench.run(fitted["suite"], out=tmp_path / "applied", progress=False, policy=fitted["policy"])
    v = applied.verdicts
    s = server()
    cases = demo_cases()
    decisions = []
    with httpx.Client(base_url=s.url, timeout=30) as client:
        for i in range(0, len(cases), 100):
            r = client.post("/v1/check/batch", json={"items": [_item(c) for c in cases[i:i + 100]]})
            assert r.status_code == 200, r.text
            decisions += r.json()["decisions"]
        singles = [client.post("/v1/check", json=_item(c)).json() for c in cases[:20]]
        metrics = client.get("/metrics").text
    for vid in ("rouge", "sentences"):
        want = v[v["verifier"] == vid].set_index("case_id")
        for c, d in zip(cases, decisions):
            r = next(r for r in d["checks"] if r["verifier"] == vid)
            assert r["score"] == pytest.approx(float(want.loc[c["id"], "score"]), abs=1e-12)
            assert r["flagged"] == bool(want.loc[c["id"], "slice_flagged"])
        for c, d in zip(cases[:20], singles):
            r = next(r for r in d["checks"] if r["verifier"] == vid)
            assert r["flagged"] == bool(want.loc[c["id"], "slice_flagged"])
    recs, torn = read_log(s.log_dir)
    assert not torn and len(recs) == len(cases) + 20
    assert [r.decision.request_id for r in recs[:len(cases)]] == [c["id"] for c in cases]
    logged = Counter((r.decision.action, r.doc_type) for r in recs)
    served = _metric(metrics, "verifybench_guard_decisions_total")
    assert {(dict(k)["action"], dict(k)["doc_type"]): n for k, n in served.items()} == dict(logged)
    per_check = _metric(metrics, "verifybench_guard_check_latency_seconds_count")
    assert {dict(k)["verifier"]: n for k, n in per_check.items()} == {"rouge": len(recs), "sentences": len(recs)}
    requests = _metric(metrics, "verifybench_guard_requests_total")
    assert requests[(("endpoint", "/v1/check"), ("status", "200"))] == 20
    s.stop()
    assert "POST /v1/check" not in s.out.read_text()  # no access log unless asked (--access-log)


@pytest.mark.slow
def test_a_served_shadow_guard_with_a_token_and_timeouts(fitted, server, tmp_path):
    guard_file = tmp_path / "guard.yaml"
    guard_file.write_text(yaml.safe_dump({"policy": str(fitted["policy"]), "checks": ["sentences"], "action": "block",
                                          "mode": "shadow", "timeout_ms": 150, "on_error": "flag"}))
    s = server(guard_file, env={"VERIFYBENCH_GUARD_TOKEN": TOKEN}, args=("--access-log",))
    answer = "The Team plan costs $29 per user per month. Purple dragons deliver every invoice."
    body = {"response": answer, "sources": ["The Team plan costs $29 per user per month."]}
    auth = {"authorization": f"Bearer {TOKEN}"}
    with httpx.Client(base_url=s.url, timeout=30) as client:
        assert client.post("/v1/check", json=body).status_code == 401
        d = client.post("/v1/check", json=body, headers=auth).json()
        slow = client.post("/v1/check", json={**body, "meta": {"sleep_ms": 1000}}, headers=auth).json()
        metrics = client.get("/metrics", headers=auth).text
        ready = client.get("/readyz", headers=auth).json()
    assert d["action"] == "blocked" and d["mode"] == "shadow" and d["response"] == answer and not d["applied"]
    assert ready["threads"] == 1  # `serve`'s default: one torch / BLAS thread per worker
    assert slow["checks"][0]["timed_out"] and slow["action"] == "blocked" and slow["response"] == answer
    assert _metric(metrics, "verifybench_guard_check_timeouts_total")[(("verifier", "sentences"),)] == 1
    s.stop()
    for f in [*s.log_dir.iterdir(), s.out]:
        assert TOKEN not in f.read_text(errors="replace")
    # --access-log: uvicorn's line per request (the 401 too), on the server's output
    assert re.findall(r'"POST /v1/check HTTP/1.1" (\d+)', s.out.read_text()) == ["401", "200", "200"]


@pytest.mark.slow
def test_sigkill_under_load_leaves_one_record_per_answered_request(fitted, server, tmp_path):
    s = server()
    cases = demo_cases()
    answered: list[str] = []
    lock = threading.Lock()
    stop = threading.Event()

    def client_loop(worker: int) -> None:
        with httpx.Client(base_url=s.url, timeout=10) as client:
            for n in range(400):  # bounded
                if stop.is_set():
                    return
                c = cases[(worker * 400 + n) % len(cases)]
                rid = f"w{worker}-{n}"
                try:
                    r = client.post("/v1/check", json={**_item(c), "request_id": rid})
                except httpx.HTTPError:
                    return  # the server is gone
                if r.status_code == 200 and r.json()["request_id"] == rid:
                    with lock:
                        answered.append(rid)

    threads = [threading.Thread(target=client_loop, args=(w,)) for w in range(8)]
    for t in threads:
        t.start()
    deadline = time.time() + 60
    while len(answered) < 300 and time.time() < deadline:
        time.sleep(0.05)
    s.proc.send_signal(signal.SIGKILL)
    s.proc.wait(10)
    stop.set()
    for t in threads:
        t.join(30)
    assert len(answered) >= 300
    recs, torn = read_log(s.log_dir)
    logged = Counter(r.decision.request_id for r in recs)
    assert all(logged[rid] == 1 for rid in answered), [rid for rid in answered if logged[rid] != 1][:5]
    assert max(logged.values()) == 1  # no record twice
    assert len(torn.where) <= 1


@pytest.mark.slow
def test_several_workers_each_write_their_own_log_file(fitted, server, tmp_path):
    s = server(workers=2, env={"VERIFYBENCH_GUARD_TOKEN": TOKEN})  # /readyz names the pid to the token's holder
    auth = {"authorization": f"Bearer {TOKEN}"}
    pids: set[int] = set()
    answered: list[str] = []
    deadline = time.time() + 20
    n = 0
    while time.time() < deadline and (len(answered) < 40 or len(pids) < 2) and n < 200:  # bounded
        # a fresh connection each time, so the workers' shared socket spreads them
        ready = httpx.get(s.url + "/readyz", timeout=10, headers=auth)
        if ready.status_code == 200:
            pids.add(ready.json()["pid"])
            r = httpx.post(s.url + "/v1/check", json={"response": f"Answer {n}.", "sources": ["Answer one."],
                                                      "request_id": f"r{n}"}, timeout=10, headers=auth)
            if r.status_code == 200:
                answered.append(f"r{n}")
        n += 1
    s.stop()
    recs, torn = read_log(s.log_dir)
    assert sorted(r.decision.request_id for r in recs) == sorted(answered) and not torn
    writers = {int(p.name.split("-")[1]) for p in s.log_dir.glob("decisions-*.jsonl") if p.stat().st_size}
    assert writers <= pids and len(pids) >= 1
    for f in s.log_dir.glob("decisions-*.jsonl"):
        assert all(json.loads(line)["decision"]["guard_hash"] for line in f.read_text().splitlines())


def test_a_response_leaves_only_after_its_record_is_synced_to_disk(fitted, tmp_path):
    """A real uvicorn on 127.0.0.1 (in this process, so the log's sync call can be slowed down): each
    response arrives after the fsync of its own record returned, with the record in the file. A service
    that answered before the commit would answer these in well under the 0.2 s each sync takes."""
    import uvicorn

    synced: list[tuple[float, bytes]] = []  # (when each sync returned, the file's content then)
    with Guard(fitted["policy"], log_dir=tmp_path / "log", checks=["rouge"]) as g:
        assert g.log is not None and g.log.fsync
        log_path, real_sync = g.log.path, g.log.sync

        def slow_sync(fd: int) -> None:
            time.sleep(0.2)
            real_sync(fd)
            synced.append((time.perf_counter(), log_path.read_bytes()))

        g.log.sync = slow_sync
        port = _free_port()
        server = uvicorn.Server(uvicorn.Config(create_app(g), host="127.0.0.1", port=port, log_level="warning",
                                               access_log=False))
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        try:
            deadline = time.time() + 30
            while not server.started and time.time() < deadline:
                time.sleep(0.05)
            with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as client:
                for i, c in enumerate(demo_cases()[:4]):
                    r = client.post("/v1/check", json={**_item(c), "request_id": f"durable-{i}"})
                    arrived = time.perf_counter()
                    assert r.status_code == 200 and r.json()["request_id"] == f"durable-{i}"
                    done = [content for t, content in synced if t <= arrived]
                    assert len(done) == i + 1  # this request's own commit had returned
                    assert f'"request_id":"durable-{i}"'.encode() in done[-1]
        finally:
            server.should_exit = True
            thread.join(10)
