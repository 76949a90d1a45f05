"""What the service must survive, each on a real uvicorn on 127.0.0.1: a decision log that cannot be
written (a full disk on a small tmpfs, or a file-size limit where no tmpfs can be mounted; a commit that
hangs), requests a JSON line cannot hold, a stranger's half-sent body, slow and idle clients, a large
request beside a small one, SIGTERM while the disk is full. Most run uvicorn in a thread of this process
(the guard built once); the last runs `verifybench serve` as a subprocess."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
import yaml

from helpers.full_disk import FileSizeLimit, SmallFS, tmpfs_refusal
from helpers.guard_verifiers import demo_cases, fit_demo_policy
from verifybench.guard import Guard
from verifybench.guard.service import MAX_SOURCES, GuardHTTPProtocol, HeadDeadline, create_app
from verifybench.loaders.guardlog import read_log

ROOT = Path(__file__).resolve().parents[1]
TOKEN = "tok-51c2-never-in-a-log"
OK = {"response": "The Team plan costs $29.", "sources": ["The Team plan costs $29 per user."]}


@pytest.fixture(scope="module")
def policy(tmp_path_factory):
    _, _, p = fit_demo_policy(tmp_path_factory.mktemp("limits"), verifiers=[
        "rouge", {"helpers.guard_verifiers:SentencesStateless": {"id": "inline"}}])
    return p


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def served(app, header_timeout: float = 10.0, protocol: type = GuardHTTPProtocol):
    """`app` on a real uvicorn on 127.0.0.1, in a thread of this process, with the service's protocol."""
    import uvicorn

    protocol = type("TestProtocol", (protocol,), {"header_timeout": header_timeout})
    port = _free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", access_log=False,
                                           http=protocol))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.time() + 30
    while not server.started and time.time() < deadline:
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}", port
    finally:
        server.should_exit = True
        thread.join(15)


def _strict_lines(folder: Path) -> list[dict]:
    out = []
    for f in sorted(folder.glob("decisions-*.jsonl")):
        data = f.read_bytes()
        assert not data or data.endswith(b"\n"), f"{f.name} ends inside a record"
        out += [json.loads(line, parse_constant=lambda c: pytest.fail(f"{c} in the log"))
                for line in data.splitlines() if line.strip()]
    return out


def _raw(port: int, data: bytes, wait: float = 5.0) -> tuple[bytes, bool]:
    """Send `data` on a new connection and read until the server closes it or `wait` seconds pass:
    (what came back, whether the server closed the connection)."""
    with socket.create_connection(("127.0.0.1", port), timeout=wait) as s:
        if data:
            s.sendall(data)
        got = b""
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            s.settimeout(max(0.01, deadline - time.monotonic()))
            try:
                chunk = s.recv(65536)
            except TimeoutError:
                return got, False
            except ConnectionResetError:
                return got, True
            if not chunk:
                return got, True
            got += chunk
        return got, False


def _metric(text: str, name: str) -> float | None:
    m = re.search(rf"^{name}(?:\{{[^}}]*\}})? ([0-9.e+-]+)$", text, re.M)
    return None if m is None else float(m.group(1))


# --- requests ---------------------------------------------------------------------------------------------


def test_requests_a_json_line_cannot_hold_get_a_422_naming_the_field(policy, tmp_path):
    deep = '{"response": "x", "sources": ["x"], "meta": ' + '{"a": ' * 900 + "1" + "}" * 900 + "}"
    bodies = [
        ('{"response": "a\\ud800b", "sources": ["x"]}', "response", "surrogate"),
        ('{"response": "x", "sources": ["ok", "\\udc00"]}', "sources[1]", "surrogate"),
        ('{"response": "x", "sources": [{"id": "s", "text": "\\ud800"}]}', "sources[0].text", "surrogate"),
        ('{"response": "x", "sources": ["x"], "meta": {"k\\ud800": 1}}', "meta.k\\ud800", "surrogate"),
        (deep, "meta" + ".a" * 63, "nested deeper than 64 levels"),
        ('{"response": "x", "sources": ["x"], "meta": {"x": NaN}}', "meta.x", "nan is not a JSON number"),
        ('{"response": "x", "sources": ["x"], "meta": {"y": [1, -Infinity]}}', "meta.y[1]", "-inf is not a JSON"),
        (json.dumps({"response": "x", "sources": ["s"] * (MAX_SOURCES + 1)}), "sources", f"at most {MAX_SOURCES}"),
    ]
    batch = '{"items": [{"response": "x", "sources": ["x"]}, {"response": "x", "sources": ["x"], "meta": {"x": NaN}}]}'
    with Guard(policy, log_dir=tmp_path / "log", checks=["rouge"]) as g, served(create_app(g)) as (url, _):
        with httpx.Client(base_url=url, timeout=30, headers={"content-type": "application/json"}) as client:
            for body, field, why in bodies:
                r = client.post("/v1/check", content=body.encode())
                assert r.status_code == 422, (field, r.status_code, r.text[:300])
                assert r.json()["field"] == field and why in r.json()["error"], r.json()
            r = client.post("/v1/check/batch", content=batch.encode())
            assert r.status_code == 422 and r.json()["field"] == "items[1].meta.x"
            assert client.post("/v1/check", json={**OK, "meta": {"note": "NaN is a word"}}).status_code == 200
    assert [r["meta"] for r in _strict_lines(tmp_path / "log")] == [{"note": "NaN is a word"}]


def test_a_stranger_gets_401_before_the_body_is_read_and_readyz_tells_only_readiness(policy, tmp_path, monkeypatch):
    monkeypatch.setenv("VERIFYBENCH_GUARD_TOKEN", TOKEN)
    with Guard(policy, log_dir=tmp_path / "log", checks=["rouge"]) as g, served(create_app(g)) as (url, port):
        # Headers promise 100,000 bytes; 6 arrive. The 401 comes at once, and the connection is closed.
        got, closed = _raw(port, b"POST /v1/check HTTP/1.1\r\nHost: guard\r\nContent-Type: application/json\r\n"
                                 b"Content-Length: 100000\r\n\r\n{\"resp")
        assert got.startswith(b"HTTP/1.1 401") and closed, got[:200]
        assert b"missing or wrong bearer token" in got and TOKEN.encode() not in got
        with httpx.Client(base_url=url, timeout=30) as client:
            bad = client.post("/v1/check", content=b"{not json", headers={"content-type": "application/json"})
            assert bad.status_code == 401 and "field" not in bad.json()  # not a 422 describing the schema
            assert client.get("/openapi.json").status_code == 401
            stranger = client.get("/readyz")
            assert stranger.status_code == 200 and stranger.json() == {"ready": True}
            insider = client.get("/readyz", headers={"authorization": f"Bearer {TOKEN}"}).json()
            assert insider["pid"] == os.getpid() and insider["log"] and "rouge" in insider["guard"]["checks"]
            metrics = client.get("/metrics", headers={"authorization": f"Bearer {TOKEN}"}).text
    assert _metric(metrics, 'verifybench_guard_requests_total{endpoint="/v1/check",status="401"}') == 2
    assert read_log(tmp_path / "log")[0] == []


def test_without_a_token_readyz_tells_everyone_only_whether_it_is_ready(policy, tmp_path, monkeypatch):
    monkeypatch.delenv("VERIFYBENCH_GUARD_TOKEN", raising=False)
    with Guard(policy, log_dir=tmp_path / "log", checks=["rouge"]) as g, served(create_app(g)) as (url, _):
        r = httpx.get(url + "/readyz", timeout=30)
        made_up = [httpx.get(f"{url}/made-up-{i}", timeout=30).status_code for i in range(3)]
        metrics = httpx.get(url + "/metrics", timeout=30).text
    assert r.status_code == 200 and r.json() == {"ready": True}
    # a path the service does not have is counted as `other`: a client cannot grow the series
    assert made_up == [404] * 3 and "made-up" not in metrics
    assert _metric(metrics, 'verifybench_guard_requests_total{endpoint="other",status="404"}') == 3


@pytest.mark.parametrize("http", ["auto", "h11"])
def test_slow_and_idle_clients_are_cut_after_the_header_and_body_timeouts(policy, tmp_path, http):
    from uvicorn.protocols.http.h11_impl import H11Protocol

    protocol = GuardHTTPProtocol if http == "auto" else type("H11Guard", (HeadDeadline, H11Protocol), {})
    with Guard(policy, log_dir=tmp_path / "log", checks=["rouge"]) as g, \
            served(create_app(g, body_timeout=0.5), header_timeout=0.5, protocol=protocol) as (url, port):
        assert _raw(port, b"", wait=5) == (b"", True)  # connected, sent nothing
        assert _raw(port, b"POST /v1/check HTTP/1.1\r\nHost: gu", wait=5) == (b"", True)  # half a head
        got, closed = _raw(port, b"POST /v1/check HTTP/1.1\r\nHost: guard\r\nContent-Type: application/json\r\n"
                                 b"Content-Length: 50\r\n\r\n{\"response\"", wait=5)  # a tenth of the body
        assert got.startswith(b"HTTP/1.1 408") and b"not received within 0.5 s" in got and closed, got[:300]
        body = json.dumps(OK).encode()
        got, closed = _raw(port, b"POST /v1/check HTTP/1.1\r\nHost: guard\r\nContent-Type: application/json\r\n"
                                 b"Content-Length: %d\r\n\r\n%s" % (len(body), body) + b"POST /v1/ch", wait=5)
        assert got.startswith(b"HTTP/1.1 200") and closed  # answered, then cut: the next head never came whole
    assert len(read_log(tmp_path / "log")[0]) == 1


def test_a_slow_check_on_one_request_does_not_hold_another_behind_it(policy, tmp_path):
    """A stateless check (as rouge is) that takes a second on one request: the event loop is free
    meanwhile, so a request that comes after it is answered first."""
    done: list[str] = []
    with Guard(policy, log_dir=tmp_path / "log", checks=["inline"], allow_code=["helpers.guard_verifiers"]) as g, \
            served(create_app(g)) as (url, _):
        assert g.checks[0].batcher is None  # no batch thread: scored where the guard puts a stateless check

        def send_slow() -> None:
            httpx.post(url + "/v1/check", json={**OK, "meta": {"sleep_ms": 1500}, "request_id": "slow"},
                       timeout=60).raise_for_status()
            done.append("slow")

        t = threading.Thread(target=send_slow)
        t.start()
        time.sleep(0.3)  # the slow one is being scored
        httpx.post(url + "/v1/check", json={**OK, "request_id": "quick"}, timeout=60).raise_for_status()
        done.append("quick")
        t.join(60)
    assert done == ["quick", "slow"]
    assert sorted(r.decision.request_id for r in read_log(tmp_path / "log")[0]) == ["quick", "slow"]


# --- the decision log -------------------------------------------------------------------------------------


def test_a_log_commit_that_hangs_is_a_503_within_its_budget_and_readyz_says_not_ready(policy, tmp_path):
    guard_file = tmp_path / "guard.yaml"
    guard_file.write_text(yaml.safe_dump({"policy": str(policy), "checks": ["rouge"], "log": {"timeout_ms": 300}}))
    release = threading.Event()
    with Guard(guard_file, log_dir=tmp_path / "log") as g, served(create_app(g)) as (url, _):
        assert g.log is not None
        real = g.log.sync
        g.log.sync = lambda fd: (release.wait(20), real(fd))  # type: ignore[assignment]
        with httpx.Client(base_url=url, timeout=30) as client:
            r = client.post("/v1/check", json={**OK, "request_id": "stuck"})
            assert r.status_code == 503 and "not written within 300 ms" in r.json()["error"], r.text
            assert r.json()["reason"] == "decision log" and str(tmp_path) not in r.text
            assert client.get("/readyz").status_code == 503
            release.set()
            deadline = time.time() + 10
            while client.get("/readyz").status_code != 200 and time.time() < deadline:
                time.sleep(0.05)
            g.log.sync = real
            assert client.get("/readyz").status_code == 200
            assert client.post("/v1/check", json={**OK, "request_id": "after"}).status_code == 200
    # the stuck commit had begun when its caller was answered: its record may be there (it was written late)
    assert [r.decision.request_id for r in read_log(tmp_path / "log")[0]][-1] == "after"


@pytest.fixture
def small_fs(tmp_path):
    why = tmpfs_refusal(tmp_path / "probe")
    if why:
        pytest.skip(f"no tmpfs here ({why}); test_a_served_guard_on_a_full_disk covers the service with RLIMIT_FSIZE")
    fs = SmallFS(tmp_path / "disk", size=512 << 10, inodes=32)
    yield fs
    fs.close()


@pytest.mark.parametrize("fail_open", [False, True])
def test_a_full_disk_fails_closed_with_a_503_or_open_counting_the_loss_and_recovers(policy, small_fs, fail_open):
    guard_file = small_fs.dir / "guard.yaml"
    guard_file.write_text(yaml.safe_dump({"policy": str(policy), "checks": ["rouge"], "log": {"fail_open": fail_open}}))
    big = {**OK, "response": "The Team plan costs $29. " * 400}  # a record past a page: a write gets part-way
    with Guard(guard_file, log_dir=small_fs.dir / "log") as g, served(create_app(g)) as (url, _):
        assert g.log is not None
        g.log.retry_s = 0.05
        with httpx.Client(base_url=url, timeout=30) as client:
            assert client.post("/v1/check", json={**big, "request_id": "before"}).status_code == 200
            small_fs.fill()
            r = client.post("/v1/check", json={**big, "request_id": "during"})
            batch = client.post("/v1/check/batch", json={"items": [{**big, "request_id": "b1"}, {**big, "request_id": "b2"}]})
            assert client.get("/readyz").status_code == 503
            metrics = client.get("/metrics").text
            small_fs.free()
            deadline = time.time() + 10
            while client.get("/readyz").status_code != 200 and time.time() < deadline:
                time.sleep(0.05)
            assert client.get("/readyz").status_code == 200
            assert client.post("/v1/check", json={**big, "request_id": "after"}).status_code == 200
    if fail_open:
        assert r.status_code == 200 and r.json()["request_id"] == "during"
        assert batch.status_code == 200 and [d["request_id"] for d in batch.json()["decisions"]] == ["b1", "b2"]
        assert _metric(metrics, "verifybench_guard_log_lost_total") == 3
    else:
        assert r.status_code == 503 and r.headers["content-type"] == "application/json"
        assert "No space left on device (ENOSPC)" in r.json()["error"] and batch.status_code == 503
        assert _metric(metrics, 'verifybench_guard_requests_total{endpoint="/v1/check",status="503"}') == 1
    assert _metric(metrics, "verifybench_guard_log_ready") == 0 and _metric(metrics, "verifybench_guard_log_failures_total")
    recs, torn = read_log(small_fs.dir / "log")
    assert not torn and [r.decision.request_id for r in recs] == ["before", "after"]
    assert len(_strict_lines(small_fs.dir / "log")) == 2


@pytest.mark.slow
def test_a_served_guard_on_a_full_disk_then_no_inode_then_sigterm(policy, tmp_path):
    """`verifybench serve` as a subprocess: on a tmpfs where one can be mounted, else with a file-size
    limit (then without the inode part). Fail closed: the records are exactly the 200s' ones."""
    refusal = tmpfs_refusal(tmp_path / "probe")
    disk = FileSizeLimit(tmp_path / "disk") if refusal else SmallFS(tmp_path / "disk", size=1 << 20, inodes=24)
    guard_file = tmp_path / "guard.yaml"
    guard_file.write_text(yaml.safe_dump({"policy": str(policy), "checks": ["rouge", "inline"],
                                          "log": {"max_bytes": 8192}}))
    env = {k: v for k, v in os.environ.items() if k != "VERIFYBENCH_GUARD_TOKEN"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), str(ROOT / "tests")])
    port = _free_port()
    # the server's output through a pipe: a file would fall under the file-size limit too
    proc = subprocess.Popen([sys.executable, "-m", "verifybench.cli", "serve", str(guard_file), "--port", str(port),
                             "--log-dir", str(disk.dir / "log"), "--allow-code", "helpers.guard_verifiers"],
                            env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT)
    output: list[bytes] = []
    reader = threading.Thread(target=lambda: output.extend(proc.stdout), daemon=True)  # type: ignore[arg-type]
    reader.start()
    url = f"http://127.0.0.1:{port}"
    statuses: dict[str, int] = {}
    cases = demo_cases()
    counter = iter(range(10**6))

    def send(k: int = 1) -> None:
        with httpx.Client(base_url=url, timeout=30) as client:
            for _ in range(k):
                n = next(counter)
                c = cases[n % len(cases)]
                statuses[f"r{n}"] = client.post("/v1/check", json={
                    "response": c["response"] * 3, "sources": c["sources"], "request_id": f"r{n}"}).status_code

    def ready(wait: float = 0.0) -> bool:
        end = time.time() + wait
        while True:
            try:
                if httpx.get(url + "/readyz", timeout=10).status_code == 200:
                    return True
            except httpx.HTTPError:
                pass
            if time.time() >= end or proc.poll() is not None:
                return False
            time.sleep(0.1)

    try:
        assert ready(90), b"".join(output)[-2000:]
        send(3)
        disk.fill(proc.pid)
        send(3)
        assert not ready()
        disk.free(proc.pid)
        assert ready(10)
        send(3)
        if isinstance(disk, SmallFS):  # no inode for the next file: the writer thread lives on
            disk.fill_inodes()
            send(12)  # 8 KB files: the next file is needed within these
            assert 503 in list(statuses.values())[-12:]
            disk.free_inodes()
            assert ready(10)
            send(3)
        disk.fill(proc.pid)
        # SIGTERM with two requests in flight: one whose check ends within the drain (its record cannot be
        # written: a 503), one whose check would take 60 s (cancelled when the drain ends)
        started = [threading.Event(), threading.Event()]
        late: dict[str, object] = {}

        def in_flight(i: int, sleep_ms: int) -> None:
            with httpx.Client(base_url=url, timeout=90) as client:
                started[i].set()
                try:
                    late[f"slow{i}"] = client.post("/v1/check", json={**OK, "response": OK["response"] * 400,
                                                                      "meta": {"sleep_ms": sleep_ms},
                                                                      "request_id": f"slow{i}"}).status_code
                except httpx.HTTPError as e:
                    late[f"slow{i}"] = type(e).__name__

        threads = [threading.Thread(target=in_flight, args=(0, 1000)), threading.Thread(target=in_flight, args=(1, 60_000))]
        for t in threads:
            t.start()
        assert all(e.wait(30) for e in started)
        time.sleep(0.5)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0  # the bound: 5 s of drain, the guard's close, 1 s for checks still running
        for t in threads:
            t.join(30)
        recs, torn = read_log(disk.dir / "log")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
        disk.close()
    reader.join(10)
    text = b"".join(output).decode(errors="replace")
    assert "UNAUTHENTICATED" in text and f"http://127.0.0.1:{port}" in text and str(disk.dir / "log") in text
    assert "verifybench serve: stopped" in text and "1 check(s) still running were left behind" in text
    assert late["slow0"] == 503 and late["slow1"] != 200, late  # finished within the drain / cancelled at its end
    ok = [rid for rid, s in statuses.items() if s == 200]
    enough = 9 if isinstance(disk, SmallFS) else 6  # 3 before, 3 after the disk was freed (3 more after the inodes)
    assert set(statuses.values()) <= {200, 503} and 503 in statuses.values() and len(ok) >= enough, statuses
    assert not torn and sorted(r.decision.request_id for r in recs) == sorted(ok), disk.kind
