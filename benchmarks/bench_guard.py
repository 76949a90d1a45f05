"""The guard's cost, as ratios within one run, and its memory over a long one.

    python benchmarks/bench_guard.py [--verifiers rouge,anchors,nli] [--seconds S] [--calls N] [--skip-http]
                                     [--single N] [--src DIR] [--before DIR] [--rounds N] [--skip-inprocess]
                                     [--breakdown]
    python benchmarks/bench_guard.py --fsync-probe
    python benchmarks/bench_guard.py --soak [SECONDS] [--verifiers rouge] [--concurrency C] [--every S]
    python benchmarks/bench_guard.py --telemetry [--seconds S] [--rounds N]

1. In process: `guard.check` (no log) against calling the verifier directly (`verifier.verify([case])`)
   on the same demo cases, alternating, per call; goal: at most 5% or 0.1 ms slower.
2. Over HTTP on loopback, every decision durably logged (fsync): requests/s and p50/p95/p99 at
   concurrency 1, 8 and 32 for each verifier's served guard, beside a bare FastAPI endpoint that
   validates the same request model and returns a constant, all driven by the same httpx client in the
   same run (goal: served rouge >= 60% of the bare endpoint's requests/s at each concurrency); anchors
   also unbatched (`max_batch: 1`) at concurrency 32 (goal: batched >= 2x unbatched). Each server's
   resident memory (VmRSS) is read before and after its load, and its peak (VmHWM).
3. Anchors, one request at a time over HTTP (`--single N` requests after a warm-up, on the anchors
   server): p50 and p95; goal p95 <= 150 ms on an idle machine (the semantic-anchors article's figure).
4. `--anchors-goal` instead of 1-3: anchors on new text every request (each sentence of the answer and of
   its sources carries a word never seen before, so every embedding is a cache miss), one request at a
   time, with `--load K` CPU-bound busy loops running beside it (another job on the machine): in process
   (`guard.check`, no log), torch and BLAS at the machine's CPU count (torch's own default) and at one
   thread, alternating blocks of 10 calls in the same process; over HTTP, `--single N` requests to each
   of a server started with `serve --threads 1`, one with `--threads <CPUs>`, and with `--before DIR` the
   same guard on DIR's code (which left threads to torch), all running at once and asked in turn.
   Goal: anchors p95 <= 150 ms in process and over HTTP under load, no worse than today on a quiet
   machine (`--load 0`).
5. `--large` instead of 1-3: a rouge server; a small request's latency, one at a time, alone and while
   large requests (the most sources a request may carry, about 0.86 MB of text) are scored back to back
   (and with `--before DIR`, the same on DIR's code, where rouge ran on the event loop).
6. `--soak [SECONDS]` (default 120) instead of 1-5: one served guard of the `--verifiers` checks (default
   for the soak: rouge), durable logging, driven by a bounded client loop (`--concurrency` requests in
   flight) for SECONDS; the server's resident memory sampled every `--every` seconds (psutil if
   installed, else /proc/PID/status); prints start / peak / end RSS, the slope after the first fifth of
   the run (MB per minute, least squares) and the requests served. Goal: memory stays flat.

5. `--telemetry` instead of 1-3: the served rouge guard with its OpenTelemetry events on (every decision
   a gen_ai.evaluation.result event through the batching OTLP/HTTP exporter, to a receiver on 127.0.0.1
   in this process that decodes and counts them) against the same guard with them off, durable logging
   both, at concurrency 1, 8 and 32, which goes first alternating by round; req/s and p50/p95 as ratios
   on/off, and the events received against the decisions made. Goal: within noise of off.

`--src DIR` runs the servers (bare and guard) on another version's code (`git archive <commit> src | tar -x
-C /tmp/before`, then `--src /tmp/before/src`); `--before DIR` adds, beside each served guard of this
checkout, the same guard on DIR's code, in the same run, and `--rounds N` repeats the HTTP part N times,
the before/after order swapped each round, so that a change is measured as a ratio within one run on a
shared machine. The policy is fitted by this checkout's code either way.

Policies come from a run over a fifth of the demo set (77 cases), fitted here. Servers run one uvicorn
worker each, started as `verifybench serve`, on 127.0.0.1. Report `cat /proc/loadavg` beside any
figure: on a shared machine the absolute numbers mean little.
"""

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
import yaml

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "datasets" / "demo" / "cases.jsonl"


def bare_app():
    """A bare endpoint of the same framework: validates the guard's request model, returns a constant."""
    from fastapi import FastAPI

    from verifybench.guard.service import CheckRequest

    app = FastAPI()

    @app.post("/v1/check")
    async def check(body: CheckRequest) -> dict:
        return {"action": "allowed"}

    @app.get("/readyz")
    async def readyz() -> dict:
        return {"ready": True}

    return app


def cases() -> list[dict]:
    return [json.loads(line) for line in DEMO.read_text(encoding="utf-8").splitlines() if line.strip()][::5]


def _tag(n: int) -> str:
    """A word no text has used: `n` in letters (a number would be a fact anchors checks)."""
    out = ""
    n += 26 * 26
    while n:
        n, r = divmod(n, 26)
        out += "abcdefghijklmnopqrstuvwxyz"[r]
    return "ref" + out


def fresh(c: dict, n: int, sources: bool = True) -> dict:
    """Case `c` as new text: the word `_tag(n)` starts every sentence of the answer and (with `sources`)
    of each source, so no sentence, claim or chunk is in any cache (without: the sources as before, as
    when the same documents are retrieved again)."""
    import re

    tag = _tag(n)

    def mark(text: str) -> str:
        return f"{tag} " + re.sub(r"([.!?])\s+", rf"\1 {tag} ", text)

    given = c["sources"]
    sources = [mark(s) if isinstance(s, str) else {**s, "text": mark(s["text"])} for s in given] if sources else given
    return {"response": mark(c["response"]), "sources": sources, "question": c.get("question"),
            "doc_type": c.get("doc_type")}


def group_nice(pid: int | str = "self", nice: int | None = None) -> str:
    """The niceness of a process's scheduling group (Linux autogroup: one per session, and CFS shares
    the CPU between groups before it looks at a process's own niceness); set it with `nice` (root)."""
    path = Path(f"/proc/{pid}/autogroup")
    if not path.exists():
        return "no autogroup"
    if nice is not None:
        path.write_text(str(nice))
    return path.read_text().strip()


class Load:
    """`k` CPU-bound jobs beside the benchmark (busy Python loops, one core each), each in a session
    (a scheduling group) of its own as another job would be, while in a `with` block; with `nice`, their
    groups get that niceness too."""

    JOBS = {"python": "while True: pass",  # one core
            # torch at its own default threads (one per core), as another model job would run
            "torch": "import torch\na = torch.randn(512, 512)\nwhile True: a @ a"}

    def __init__(self, k: int, nice: int | None = None, kind: str = "python"):
        self.k, self.nice, self.kind, self.procs = k, nice, kind, []

    def __enter__(self) -> "Load":
        env = {k: v for k, v in os.environ.items() if not k.endswith("_NUM_THREADS")}
        self.procs = [subprocess.Popen([sys.executable, "-c", self.JOBS[self.kind]], start_new_session=True, env=env)
                      for _ in range(self.k)]
        for p in self.procs:
            if self.nice is not None:
                group_nice(p.pid, self.nice)
        return self

    def __exit__(self, *exc) -> None:
        for p in self.procs:
            p.kill()
            p.wait(10)


def quantiles(lat: list[float]) -> dict:
    lat = sorted(lat)
    return {"n": len(lat), "p50": lat[len(lat) // 2], "p95": lat[min(len(lat) - 1, int(0.95 * len(lat)))],
            "max": lat[-1]}


def anchors_in_process(policy: Path, calls: int, cpus: int, new_sources: bool) -> dict[int, dict]:
    """guard.check (no log) on new text each call, torch / BLAS at `cpus` threads and at 1, alternating
    blocks of 10 calls after 10 unmeasured ones."""
    from verifybench.executors.threads import set_threads
    from verifybench.guard import Guard

    items = cases()
    lat: dict[int, list[float]] = {cpus: [], 1: []}
    with Guard(policy, log_dir=False, checks=["anchors"]) as g:
        n = 0
        for i in range(10 + calls):
            threads = (cpus, 1)[(i // 10) % 2]
            set_threads(threads)
            c = fresh(items[n % len(items)], 10_000 + n, new_sources)
            n += 1
            t0 = time.perf_counter()
            g.check(c["response"], c["sources"], c.get("question"), c.get("doc_type"))
            if i >= 10:
                lat[threads].append((time.perf_counter() - t0) * 1000)
    return {k: quantiles(v) for k, v in lat.items()}


def anchors_goal(base: Path, policy: Path, args: argparse.Namespace) -> None:
    from verifybench.executors.threads import available_cpus

    cpus = available_cpus()
    spec = base / "anchors.yaml"
    spec.write_text(yaml.safe_dump({"policy": str(policy), "checks": ["anchors"]}))
    servers = [("serve --threads 1 (this checkout)", ["--threads", "1"], ROOT / "src"),
               (f"serve --threads {cpus} (this checkout)", ["--threads", str(cpus)], ROOT / "src")]
    if args.before:
        servers.append((f"serve, threads left to torch ({args.before})", [], args.before.resolve()))
    what = "answer and sources" if args.fresh == "all" else "the answer; sources as before"
    print(f"\nanchors on new text every request ({what}), "
          f"one at a time; {args.load} busy {args.load_kind} job(s) beside it; {cpus} CPUs; "
          f"/proc/loadavg before: {loadavg()}")
    before = group_nice()
    if args.group_nice is not None:
        group_nice("self", args.group_nice)
    print(f"scheduling group: {group_nice()}")
    try:
        _anchors_goal(base, spec, servers, policy, cpus, args)
    finally:
        if args.group_nice is not None and "nice" in before:
            group_nice("self", int(before.rsplit(" ", 1)[1]))  # the session's group as it was


def _anchors_goal(base: Path, spec: Path, servers: list, policy: Path, cpus: int, args: argparse.Namespace) -> None:
    with Load(args.load, args.group_nice, args.load_kind):
        time.sleep(1.0 if args.load else 0.0)
        print("\n| in process, threads | calls | p50 ms | p95 ms | max ms |\n|---|---|---|---|---|")
        for k, r in anchors_in_process(policy, args.calls, cpus, args.fresh == "all").items():
            print(f"| {k} | {r['n']} | {r['p50']:.1f} | {r['p95']:.1f} | {r['max']:.1f} |", flush=True)
        if not args.single:
            return
        print("\n| over HTTP (fsynced log) | requests | p50 ms | p95 ms | max ms |\n|---|---|---|---|---|")
        procs, urls = [], []
        try:
            for _, extra, code in servers:  # all up at once, asked in turn: a load that drifts hits each alike
                port = free_port()
                cmd = [sys.executable, "-m", "verifybench.cli", "serve", str(spec), "--port", str(port), "--log-dir",
                       str(base / f"log-{port}"), *extra]
                procs.append(start(cmd, port, base / f"server-{port}.out", code))
                urls.append(f"http://127.0.0.1:{port}")
            got = interleaved(urls, args.single, args.fresh == "all")
        finally:
            for proc in procs:
                proc.terminate()
                proc.wait(20)
        for (label, _, _), r in zip(servers, got):
            print(f"| {label} | {r['n']} | {r['p50']:.1f} | {r['p95']:.1f} | {r['max']:.1f} |", flush=True)
        load_after = loadavg()
    print(f"\n/proc/loadavg after (busy loops included): {load_after}")


def _send_large(url: str, large: dict, n: int, running: threading.Event, times: list[float]) -> None:
    with httpx.Client(base_url=url, timeout=300) as c:
        for _ in range(n):
            running.set()
            t0 = time.perf_counter()
            c.post("/v1/check", json=large).raise_for_status()
            times.append(time.perf_counter() - t0)


def large_beside_small(base: Path, policy: Path, args: argparse.Namespace) -> None:
    """A small request's latency alone, then while large ones are scored back to back, per server."""
    from verifybench.guard.service import MAX_SOURCES

    spec = base / "rouge.yaml"
    spec.write_text(yaml.safe_dump({"policy": str(policy), "checks": ["rouge"]}))
    words = [f"w{i}" for i in range(5000)]
    large = {"response": " ".join(words[:300]),
             "sources": [" ".join(words[(i * 37 + k) % 5000] for k in range(150)) for i in range(MAX_SOURCES)]}
    small = {"response": "The Team plan costs $29.", "sources": ["The Team plan costs $29 per user."]}
    print(f"\nlarge request: {len(large['sources'])} sources, {len(json.dumps(large)) / 1e6:.2f} MB; "
          f"/proc/loadavg before: {loadavg()}\n\n| server | small alone p50 / p95 ms | small beside large p50 / p95 / max ms "
          "| smalls answered | large s each |\n|---|---|---|---|---|")
    servers = [("this checkout", ROOT / "src")] + ([(str(args.before), args.before.resolve())] if args.before else [])
    for label, code in servers:
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        proc = start([sys.executable, "-m", "verifybench.cli", "serve", str(spec), "--port", str(port), "--log-dir",
                      str(base / f"log-{port}")], port, base / f"server-{port}.out", code)
        try:
            with httpx.Client(base_url=url, timeout=120) as client:
                alone = []
                for _ in range(30):
                    t0 = time.perf_counter()
                    client.post("/v1/check", json=small).raise_for_status()
                    alone.append((time.perf_counter() - t0) * 1000)
                big_times: list[float] = []
                running = threading.Event()

                t = threading.Thread(target=_send_large, args=(url, large, args.large_n, running, big_times))
                t.start()
                running.wait(30)
                time.sleep(0.2)
                beside = []
                while t.is_alive():
                    t0 = time.perf_counter()
                    client.post("/v1/check", json=small).raise_for_status()
                    beside.append((time.perf_counter() - t0) * 1000)
                t.join()
        finally:
            proc.terminate()
            proc.wait(30)
        a, b = quantiles(alone), quantiles(beside)
        print(f"| {label} | {a['p50']:.1f} / {a['p95']:.1f} | {b['p50']:.1f} / {b['p95']:.1f} / {b['max']:.1f} | "
              f"{b['n']} | {statistics.mean(big_times):.2f} |", flush=True)
    print(f"\n/proc/loadavg after: {loadavg()}")


def fit(base: Path, verifiers: list[str]) -> Path:
    import verifybench

    rows = base / "cases.jsonl"
    rows.write_text("".join(json.dumps(c) + "\n" for c in cases()), encoding="utf-8")
    suite = base / "suite.yaml"
    suite.write_text(yaml.safe_dump({
        "name": "bench-guard", "dataset": {"loader": "jsonl", "path": str(rows), "fields": {
            "id": "id", "response": "response", "sources": "sources", "question": "question", "label": "label",
            "doc_type": "doc_type", "split": "split"}},
        "verifiers": verifiers, "metrics": {"by": "doc_type", "bootstrap": 20}}))
    run = verifybench.run(suite, out=base / "run", progress=False)
    policy = base / "policy.yaml"
    verifybench.thresholds(run.run_dir, target="youden", min_per_class=10, out=policy)
    return policy


def in_process(policy: Path, vid: str, calls: int) -> dict:
    from verifybench.guard import Guard

    with Guard(policy, log_dir=False, checks=[vid]) as g:
        v = g.checks[0].verifier
        items = cases()
        for c in items:  # every cache (embeddings, sentence splits) warm for both paths
            v.verify([g.case(c["response"], c["sources"], c.get("question"), c.get("doc_type"))])
            g.check(c["response"], c["sources"], c.get("question"), c.get("doc_type"))
        direct_t, guard_t = [], []
        for i in range(calls):
            c = items[i % len(items)]
            case = g.case(c["response"], c["sources"], c.get("question"), c.get("doc_type"))
            for first in ((0, 1) if i % 2 else (1, 0)):  # alternate which path goes first
                t0 = time.perf_counter()
                if first:
                    v.verify([case])
                else:
                    g.check(c["response"], c["sources"], c.get("question"), c.get("doc_type"))
                (direct_t if first else guard_t).append((time.perf_counter() - t0) * 1000)
    d, q = statistics.median(direct_t), statistics.median(guard_t)
    return {"verifier": vid, "direct_ms": d, "guard_ms": q, "extra_ms": q - d, "ratio": q / d}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(cmd: list[str], port: int, out: Path, src: Path = ROOT / "src") -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(src)}
    proc = subprocess.Popen(cmd, env=env, stdout=open(out, "wb"), stderr=subprocess.STDOUT)
    deadline = time.time() + 180
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(out.read_text()[-2000:])
        try:
            if httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=1).status_code == 200:
                return proc
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    proc.kill()
    raise RuntimeError("server did not start")


def memory(pid: int) -> dict:
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(("VmRSS", "VmHWM")):
            k, v = line.split(":")
            out[k] = int(v.split()[0]) / 1024
    return out


def rss_mb(pid: int) -> float:
    try:
        import psutil
    except ImportError:
        return memory(pid)["VmRSS"]
    return psutil.Process(pid).memory_info().rss / 2**20


def slope_mb_per_min(samples: list[tuple[float, float]]) -> float:
    """Least-squares slope of (seconds, MB) samples, in MB per minute."""
    n = len(samples)
    if n < 2:
        return 0.0
    mt, mm = sum(t for t, _ in samples) / n, sum(m for _, m in samples) / n
    var = sum((t - mt) ** 2 for t, _ in samples)
    return 60 * sum((t - mt) * (m - mm) for t, m in samples) / var if var else 0.0


def soak(base: Path, policy: Path, vids: list[str], seconds: float, concurrency: int, every: float) -> None:
    spec = base / "soak.yaml"
    spec.write_text(yaml.safe_dump({"policy": str(policy), "checks": vids}))
    port = free_port()
    log_dir = base / "soak-log"
    proc = start([sys.executable, "-m", "verifybench.cli", "serve", str(spec), "--port", str(port),
                  "--log-dir", str(log_dir)], port, base / "soak.out")
    samples: list[tuple[float, float]] = []
    done = threading.Event()
    load_before = loadavg()

    def sample() -> None:
        t0 = time.perf_counter()
        while True:
            samples.append((time.perf_counter() - t0, rss_mb(proc.pid)))
            if done.wait(every):
                samples.append((time.perf_counter() - t0, rss_mb(proc.pid)))
                return

    try:
        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        r = asyncio.run(drive(f"http://127.0.0.1:{port}", concurrency, seconds))
        done.set()
        sampler.join(every + 10)
        peak = memory(proc.pid)["VmHWM"]
        load_after = loadavg()
    finally:
        proc.terminate()
        proc.wait(20)
    logged = sum(1 for f in log_dir.glob("decisions-*.jsonl") for _ in f.open("rb"))
    after = [(t, m) for t, m in samples if t >= seconds / 5]
    print(f"\nsoak: {' + '.join(vids)} guard, concurrency {concurrency}, {seconds:.0f} s, RSS every {every:g} s "
          f"({len(samples)} samples; {'psutil' if _has_psutil() else '/proc VmRSS'})\n/proc/loadavg before: {load_before}; "
          f"after: {load_after}")
    print("\n| requests | req/s | p50 ms | p95 ms | logged | RSS start MB | RSS after warm-up MB | peak sampled MB | "
          "VmHWM MB | RSS end MB | slope after warm-up MB/min |\n|---|---|---|---|---|---|---|---|---|---|---|")
    print(f"| {r['n']} | {r['rps']:.0f} | {r['p50']:.1f} | {r['p95']:.1f} | {logged} | {samples[0][1]:.1f} | "
          f"{after[0][1]:.1f} | {max(m for _, m in samples):.1f} | {peak:.1f} | {samples[-1][1]:.1f} | "
          f"{slope_mb_per_min(after):+.2f} |")
    print("\nRSS samples (s, MB): " + ", ".join(f"{t:.0f}:{m:.1f}" for t, m in samples))


def _has_psutil() -> bool:
    try:
        import psutil  # noqa: F401
    except ImportError:
        return False
    return True


def loadavg() -> str:
    return Path("/proc/loadavg").read_text().strip() if Path("/proc/loadavg").exists() else "n/a"


def interleaved(urls: list[str], n: int, new_sources: bool = True) -> list[dict]:
    """`single` with new text on several servers at once: request i goes to each server in turn (the
    order rotated each time), after 10 unmeasured rounds."""
    items = cases()
    lat: list[list[float]] = [[] for _ in urls]
    clients = [httpx.Client(base_url=u, timeout=120) for u in urls]
    try:
        for i in range(n + 10):
            body = fresh(items[i % len(items)], i, new_sources)
            for k in [(i + j) % len(urls) for j in range(len(urls))]:
                t0 = time.perf_counter()
                clients[k].post("/v1/check", json=body).raise_for_status()
                if i >= 10:
                    lat[k].append((time.perf_counter() - t0) * 1000)
    finally:
        for c in clients:
            c.close()
    return [quantiles(x) for x in lat]


def single(url: str, n: int, fresh_text: bool = False) -> dict:
    """`n` requests one after another (after 10 unmeasured ones), each timed on its own; with
    `fresh_text`, each on new text (`fresh`)."""
    items = cases()
    lat = []
    with httpx.Client(base_url=url, timeout=60) as client:
        for i in range(n + 10):
            c = items[i % len(items)]
            body = fresh(c, i) if fresh_text else {"response": c["response"], "sources": c["sources"],
                                                   "question": c.get("question"), "doc_type": c.get("doc_type")}
            t0 = time.perf_counter()
            client.post("/v1/check", json=body).raise_for_status()
            if i >= 10:
                lat.append((time.perf_counter() - t0) * 1000)
    return quantiles(lat)


async def drive(url: str, concurrency: int, seconds: float) -> dict:
    items = cases()
    lat: list[float] = []
    stop = time.perf_counter() + seconds
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(base_url=url, timeout=60, limits=limits) as client:
        async def worker(w: int) -> None:
            n = w
            while time.perf_counter() < stop:
                c = items[n % len(items)]
                n += concurrency
                t0 = time.perf_counter()
                r = await client.post("/v1/check", json={"response": c["response"], "sources": c["sources"],
                                                         "question": c.get("question"), "doc_type": c.get("doc_type")})
                r.raise_for_status()
                lat.append((time.perf_counter() - t0) * 1000)

        t0 = time.perf_counter()
        await asyncio.gather(*(worker(w) for w in range(concurrency)))
        wall = time.perf_counter() - t0
    lat.sort()

    def q(p: float) -> float:
        return lat[min(len(lat) - 1, int(p * len(lat)))]

    return {"n": len(lat), "rps": len(lat) / wall, "p50": q(0.5), "p95": q(0.95), "p99": q(0.99)}


def fsync_probe(directory: Path, rounds: int = 12, n: int = 40) -> None:
    """What one commit of a ~1.5 KB record costs on this disk: append + fsync (what the log does),
    append + fdatasync, and an overwrite inside a preallocated (zero-written) file + fdatasync (no size
    change, so no journal commit: what a preallocating log could do), alternating, per call."""
    line = b'{"x": "' + b"a" * 1500 + b'"}\n'
    fds = [os.open(directory / name, os.O_WRONLY | os.O_CREAT | (os.O_APPEND if i < 2 else 0))
           for i, name in enumerate(("append-fsync", "append-fdatasync", "prealloc"))]
    os.write(fds[2], b"\0" * (len(line) * n * rounds + 4096))
    os.fsync(fds[2])
    times: list[list[float]] = [[], [], []]
    at = 0
    for r in range(rounds):
        for k in ((0, 1, 2) if r % 2 else (2, 1, 0)):
            for _ in range(n):
                t0 = time.perf_counter()
                if k == 2:
                    os.pwrite(fds[2], line, at)
                    at += len(line)
                else:
                    os.write(fds[k], line)
                (os.fsync if k == 0 else os.fdatasync)(fds[k])
                times[k].append((time.perf_counter() - t0) * 1000)
    for fd in fds:
        os.close(fd)
    print(f"\none commit of a {len(line)}-byte record, {rounds * n} each, alternating ({directory}; /proc/loadavg "
          f"{loadavg()})\n\n| commit | p10 ms | p50 ms | p90 ms | mean ms |\n|---|---|---|---|---|")
    for label, t in zip(("append + fsync (the log)", "append + fdatasync", "preallocated overwrite + fdatasync"), times):
        t.sort()
        print(f"| {label} | {t[len(t) // 10]:.3f} | {t[len(t) // 2]:.3f} | {t[9 * len(t) // 10]:.3f} | "
              f"{statistics.mean(t):.3f} |")


FIGURES = """how to reproduce each figure of benchmarks/README.md (on a quiet machine; note cat /proc/loadavg):
  in-process overhead, rouge and anchors (goal <= 5% or 0.1 ms):   bench_guard.py --skip-http --verifiers rouge,anchors
  HTTP req/s and p50/p95/p99 at concurrency 1, 8, 32 against the bare
  endpoint (rouge >= 60% of bare), anchors batched vs unbatched (>= 2x),
  and anchors p95 one request at a time (<= 150 ms), per-server memory:  bench_guard.py
  served rouge against the bare endpoint only (the >= 60% goal), twice:  bench_guard.py --verifiers rouge
                                                                    --skip-inprocess --rounds 2
  the same, this checkout against an older one in the same run:     ... --before /tmp/before/src
  where served rouge's time goes (no fsync, no log), same run:       ... --breakdown
  what one fsync costs on this disk (fsync / fdatasync / preallocated): bench_guard.py --fsync-probe
  memory flat over a 2-minute run:                                  bench_guard.py --soak 120
  anchors p95 on new text beside a CPU-bound job (<= 150 ms), threads
  1 against the CPU count, in process and over HTTP:                 bench_guard.py --anchors-goal --load 1
                                                                    [--before /tmp/before/src]
  the same on a quiet machine (no worse than before):               bench_guard.py --anchors-goal --load 0
  a small request beside large ones (rouge off the event loop):     bench_guard.py --large [--before DIR]
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=FIGURES)
    ap.add_argument("--verifiers", help="checks to measure (default rouge,anchors,nli; for --soak: rouge)")
    ap.add_argument("--seconds", type=float, default=3.0, help="per (server, concurrency) point")
    ap.add_argument("--calls", type=int, default=400, help="in-process calls per verifier")
    ap.add_argument("--skip-http", action="store_true", help="only the in-process comparison (1.)")
    ap.add_argument("--single", type=int, default=100, metavar="N",
                    help="anchors: N requests one at a time over HTTP for its p50/p95 (3.; 0: skip)")
    ap.add_argument("--soak", type=float, nargs="?", const=120.0, metavar="SECONDS",
                    help="the memory soak (4.) instead of 1-3, for SECONDS (default 120)")
    ap.add_argument("--concurrency", type=int, default=8, help="--soak: requests in flight")
    ap.add_argument("--every", type=float, default=5.0, help="--soak: seconds between RSS samples")
    ap.add_argument("--src", type=Path, default=ROOT / "src",
                    help="the code the servers run (default: this checkout's src)")
    ap.add_argument("--before", type=Path, metavar="DIR",
                    help="also serve each guard on DIR's code (an older src), beside this one, in the same run")
    ap.add_argument("--rounds", type=int, default=1, help="repeat the HTTP part, before/after order swapped each round")
    ap.add_argument("--breakdown", action="store_true",
                    help="also serve rouge with its log not fsynced, and with no log: where the time goes")
    ap.add_argument("--skip-inprocess", action="store_true", help="skip the in-process comparison (1.)")
    ap.add_argument("--fsync-probe", action="store_true",
                    help="only time one log commit on this disk: append + fsync, + fdatasync, preallocated")
    ap.add_argument("--anchors-goal", action="store_true",
                    help="only anchors on new text, one request at a time, in process and over HTTP (4.)")
    ap.add_argument("--load", type=int, default=1, help="--anchors-goal: CPU-bound busy loops running beside it")
    ap.add_argument("--load-kind", choices=["python", "torch"], default="python",
                    help="--anchors-goal: each busy job a Python loop (one core) or torch matrix products at "
                         "torch's default threads")
    ap.add_argument("--group-nice", type=int, metavar="N",
                    help="--anchors-goal: this benchmark's scheduling group (and its busy loops') at niceness N "
                         "(root; Linux autogroup): on a shared machine, -20 leaves other sessions' jobs about "
                         "5%% of the CPU, so the measurement is of this job beside its own busy loops")
    ap.add_argument("--fresh", choices=["all", "response"], default="all",
                    help="--anchors-goal: new text in the answer and every source (all), or in the answer only")
    ap.add_argument("--large", action="store_true", help="only a small request's latency beside large ones (5.)")
    ap.add_argument("--large-n", type=int, default=3, help="--large: large requests scored back to back")
    ap.add_argument("--serve-bare", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--telemetry", action="store_true", help="the served rouge guard with OpenTelemetry events on vs off")
    args = ap.parse_args()
    if args.fsync_probe:
        with tempfile.TemporaryDirectory() as tmp:  # on the disk a benchmark's decision logs go to
            fsync_probe(Path(tmp))
        return
    if args.serve_bare:
        import uvicorn

        uvicorn.run(bare_app(), host="127.0.0.1", port=args.serve_bare, access_log=False, log_level="warning")
        return
    if args.anchors_goal or args.large:
        vid = "anchors" if args.anchors_goal else "rouge"
        with tempfile.TemporaryDirectory() as tmp:
            policy = fit(Path(tmp), [vid])
            (anchors_goal if args.anchors_goal else large_beside_small)(Path(tmp), policy, args)
        return
    vids = (args.verifiers or ("rouge" if args.soak else "rouge,anchors,nli")).split(",")
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        t0 = time.perf_counter()
        policy = fit(base, vids)
        print(f"fitted {', '.join(vids)} on 77 cases in {time.perf_counter() - t0:.0f} s", flush=True)
        if args.soak:
            soak(base, policy, vids, args.soak, args.concurrency, args.every)
            return
        if args.telemetry:
            telemetry(base, policy, args.seconds, args.rounds)
            return
        if not args.skip_inprocess:
            print("\n| verifier | direct verify ms | guard.check ms | extra ms | ratio |\n|---|---|---|---|---|")
        for vid in vids if not args.skip_inprocess else []:
            r = in_process(policy, vid, args.calls if vid == "rouge" else max(77, args.calls // 4))
            print(f"| {vid} | {r['direct_ms']:.3f} | {r['guard_ms']:.3f} | {r['extra_ms']:+.3f} | {r['ratio']:.3f} |",
                  flush=True)
        if args.skip_http:
            return
        src = args.src.resolve()
        guards: list[tuple[str, list[str], list[int], Path]] = []
        for vid in vids:
            spec = base / f"{vid}.yaml"
            spec.write_text(yaml.safe_dump({"policy": str(policy), "checks": [vid]}))
            serve = [sys.executable, "-m", "verifybench.cli", "serve", str(spec)]
            guards.append((f"{vid} guard", serve, [1, 8, 32], src))
            if args.before:
                guards.append((f"{vid} guard (before: {args.before})", serve, [1, 8, 32], args.before.resolve()))
        if args.breakdown:  # where served rouge's time goes: the same guard without the fsync, without the log
            for label, name, log in (("log not fsynced", "nofsync", {"fsync": False}), ("no log", "nolog", {"dir": None})):
                spec = base / f"rouge-{name}.yaml"
                spec.write_text(yaml.safe_dump({"policy": str(policy), "checks": ["rouge"], "log": log}))
                guards.append((f"rouge guard, {label}", [sys.executable, "-m", "verifybench.cli", "serve", str(spec)],
                               [1, 8, 32], src))
        if "anchors" in vids:
            spec = base / "anchors-unbatched.yaml"
            spec.write_text(yaml.safe_dump({"policy": str(policy), "checks": ["anchors"], "max_batch": 1}))
            guards.append(("anchors guard, unbatched", [sys.executable, "-m", "verifybench.cli", "serve", str(spec)],
                           [32], src))
        bare = ("bare FastAPI", [sys.executable, __file__, "--serve-bare", "{port}"], [1, 8, 32], src)
        print(f"\nservers run {src}; /proc/loadavg before: {loadavg()}")
        print("\n| server | concurrency | requests | req/s | p50 ms | p95 ms | p99 ms |\n|---|---|---|---|---|---|---|")
        mem = []
        singles = None
        rps: dict[tuple[int, str, int], float] = {}
        for round_ in range(args.rounds):
            # each round: bare, then the guards; with --before, which of a pair goes first alternates
            pairs = ([guards[i:i + 2] for i in range(0, 2 * len(vids), 2)] + [[g] for g in guards[2 * len(vids):]]
                     if args.before else [[g] for g in guards])
            order = [bare] + [g for pair in pairs for g in (pair if round_ % 2 == 0 else pair[::-1])]
            for label, cmd, levels, code in order:
                port = free_port()
                cmd = [c.replace("{port}", str(port)) for c in cmd]
                if "serve" in cmd:
                    cmd += ["--port", str(port)] + ([] if "no log" in label else ["--log-dir", str(base / f"log-{port}")])
                proc = start(cmd, port, base / f"server-{port}.out", code)
                try:
                    before = memory(proc.pid)
                    for c in levels:
                        r = asyncio.run(drive(f"http://127.0.0.1:{port}", c, args.seconds))
                        rps[(round_, label, c)] = r["rps"]
                        print(f"| {label} | {c} | {r['n']} | {r['rps']:.0f} | {r['p50']:.1f} | {r['p95']:.1f} | "
                              f"{r['p99']:.1f} |", flush=True)
                    if label == "anchors guard" and args.single and singles is None:
                        singles = {**single(f"http://127.0.0.1:{port}", args.single), "load": loadavg()}
                    after = memory(proc.pid)
                    mem.append((label, before["VmRSS"], after["VmRSS"], after["VmHWM"]))
                finally:
                    proc.terminate()
                    proc.wait(20)
        print(f"\n/proc/loadavg after: {loadavg()}")
        print("\nreq/s as a share of the bare endpoint's in the same round (goal for rouge: >= 60% at each "
              "concurrency)\n\n| round | server | c=1 | c=8 | c=32 |\n|---|---|---|---|---|")
        for round_, label, c in rps:
            if c == 1 and label != bare[0]:
                cells = [f"{100 * rps[(round_, label, k)] / rps[(round_, bare[0], k)]:.0f}%"
                         if (round_, label, k) in rps else "" for k in (1, 8, 32)]
                print(f"| {round_ + 1} | {label} | {' | '.join(cells)} |")
        if singles is not None:
            print(f"\nanchors, one request at a time over HTTP (concurrency 1, {singles['n']} requests after 10 "
                  f"unmeasured): p50 {singles['p50']:.1f} ms, p95 {singles['p95']:.1f} ms (goal: p95 <= 150 ms on an "
                  f"idle machine; /proc/loadavg after it: {singles['load']})")
        print("\n| server | RSS before MB | RSS after MB | peak MB |\n|---|---|---|---|")
        for label, b, a, p in mem:
            print(f"| {label} | {b:.0f} | {a:.0f} | {p:.0f} |")


def telemetry(base: Path, policy: Path, seconds: float, rounds: int) -> None:
    """5.: the served rouge guard, events on against off (see the module's docstring)."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest

    received = [0]

    class Receiver(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802
            req = ExportLogsServiceRequest.FromString(self.rfile.read(int(self.headers["content-length"])))
            received[0] += sum(len(s.log_records) for r in req.resource_logs for s in r.scope_logs)
            self.send_response(200)
            self.send_header("content-length", "0")
            self.end_headers()

        def log_message(self, *a) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    endpoint = f"http://127.0.0.1:{server.server_address[1]}"
    specs = {}
    for name, tel in (("off", {"otlp": False}), ("on", {"otlp": True, "endpoint": endpoint})):
        specs[name] = base / f"rouge-telemetry-{name}.yaml"
        specs[name].write_text(yaml.safe_dump({"policy": str(policy), "checks": ["rouge"], "telemetry": tel}))
    print(f"\n/proc/loadavg before: {loadavg()}\n\n| round | events | concurrency | requests | req/s | p50 ms | p95 ms |"
          "\n|---|---|---|---|---|---|---|")
    res: dict[tuple[int, str, int], dict] = {}
    made = 0
    for round_ in range(rounds):
        for name in (("off", "on") if round_ % 2 == 0 else ("on", "off")):
            port = free_port()
            cmd = [sys.executable, "-m", "verifybench.cli", "serve", str(specs[name]), "--port", str(port),
                   "--log-dir", str(base / f"log-{port}")]
            proc = start(cmd, port, base / f"server-{port}.out")
            try:
                for c in (1, 8, 32):
                    r = res[(round_, name, c)] = asyncio.run(drive(f"http://127.0.0.1:{port}", c, seconds))
                    made += r["n"] if name == "on" else 0
                    print(f"| {round_ + 1} | {name} | {c} | {r['n']} | {r['rps']:.0f} | {r['p50']:.2f} | "
                          f"{r['p95']:.2f} |", flush=True)
            finally:
                proc.terminate()  # a clean stop flushes the events still queued
                proc.wait(20)
    server.shutdown()
    print(f"\n/proc/loadavg after: {loadavg()}\n\nevents on / off, same round\n\n| round | concurrency | req/s ratio "
          "| p50 ratio | p95 ratio |\n|---|---|---|---|---|")
    for round_ in range(rounds):
        for c in (1, 8, 32):
            on, off = res[(round_, "on", c)], res[(round_, "off", c)]
            print(f"| {round_ + 1} | {c} | {on['rps'] / off['rps']:.3f} | {on['p50'] / off['p50']:.3f} | "
                  f"{on['p95'] / off['p95']:.3f} |")
    print(f"\nevents received {received[0]} of {made} decisions made with events on (excluding the warm-up)")


if __name__ == "__main__":
    main()
