"""The delay a streaming guard adds to each sentence, and what streaming saves against a check of the
whole answer.

    python benchmarks/bench_stream.py [--verifiers anchors,rouge] [--answers N] [--rates 20,60]
                                      [--join K] [--no-log] [--http]

For each verifier's guard (a policy fitted on a fifth of the demo set, as bench_guard.py fits it), the
demo answers are streamed word by word at each rate (words a second: a model's token rate, roughly) into
`StreamGuard` (action `flag`, so every sentence is released and timed), every decision in a decision log
with fsync unless `--no-log`. Per sentence:

- delay: from the moment the sentence is known complete (the next word arrived, or the stream ended) to
  its release: what the check adds;
- hold: from the sentence's last word to its release: the check plus the wait for the next word.

`--join K` streams K demo answers of one doc type in a row as one longer answer (a demo answer is one
or two sentences; a chat answer is often longer). Per answer, the time from the first word to the first
sentence out, against the time a check of the whole answer (`guard.acheck` once the stream has ended,
as a guard without streaming must) lets the answer out. `--http` adds the same through
`GuardMiddleware` on a real uvicorn on 127.0.0.1 (server-sent events): hold per sentence, measured at
the client, from the handler's last word of the sentence.

Report `cat /proc/loadavg` beside the figures: on a shared machine the absolute numbers mean little.
"""

import argparse
import asyncio
import json
import socket
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_guard import cases, fit, loadavg, quantiles  # noqa: E402 - the same policy and cases as bench_guard


def words(text: str) -> list[str]:
    parts = text.split(" ")
    return [w + " " for w in parts[:-1]] + [parts[-1]]


async def paced(tokens: list[str], rate: float, emitted: list[float] | None = None):
    """`tokens` at `rate` a second, on a fixed schedule (a slow consumer does not slow the model)."""
    t0 = time.perf_counter()
    for i, tok in enumerate(tokens):
        wait = t0 + i / rate - time.perf_counter()
        if wait > 0:
            await asyncio.sleep(wait)
        if emitted is not None:
            emitted.append(time.perf_counter())
        yield tok


async def one_answer(guard, c: dict, rate: float) -> dict:
    from verifybench.guard.stream import StreamGuard

    stream = StreamGuard(guard, c["sources"], c.get("question"), c.get("doc_type"))
    t0 = time.perf_counter()
    first = None
    async for _ in stream.run(paced(words(c["response"]), rate)):
        first = first if first is not None else time.perf_counter() - t0
    ended = time.perf_counter()
    await guard.acheck(c["response"], c["sources"], c.get("question"), c.get("doc_type"))  # the whole answer
    whole = time.perf_counter() - t0  # without streaming, the answer leaves once this check returns
    return {"delay": [s.delay_ms for s in stream.sentences], "hold": [s.hold_ms for s in stream.sentences],
            "first_ms": (first or 0.0) * 1000.0, "whole_ms": whole * 1000.0,
            "stream_ms": (ended - t0) * 1000.0, "sentences": len(stream.sentences)}


def in_process(policy: Path, vid: str, answers: list[dict], rate: float, log_dir) -> dict:
    from verifybench.guard import Guard

    with Guard(policy, log_dir=log_dir, checks=[vid], action="flag") as g:
        asyncio.run(one_answer(g, answers[0], 1000.0))  # warm: the first call's thread and caches
        rows = [asyncio.run(one_answer(g, c, rate)) for c in answers]
    return summarise(rows)


def summarise(rows: list[dict]) -> dict:
    delay = [d for r in rows for d in r["delay"]]
    hold = [h for r in rows for h in r["hold"]]
    return {"answers": len(rows), "delay": quantiles(delay), "hold": quantiles(hold),
            "first_ms": statistics.median(r["first_ms"] for r in rows),
            "whole_ms": statistics.median(r["whole_ms"] for r in rows),
            "stream_ms": statistics.median(r["stream_ms"] for r in rows)}


def over_http(policy: Path, vid: str, answers: list[dict], rate: float, log_dir) -> dict:
    """Hold per sentence at the client, through GuardMiddleware on uvicorn (server-sent events)."""
    import httpx
    import uvicorn
    from fastapi import FastAPI
    from fastapi.responses import StreamingResponse

    from verifybench.guard import Guard
    from verifybench.guard.middleware import GuardMiddleware
    from verifybench.guard.stream import complete_sentences

    emitted: dict[int, list[float]] = {}
    app = FastAPI()

    @app.get("/sse/{i}")
    async def sse(i: int) -> StreamingResponse:
        c = answers[i]
        emitted[i] = []

        async def events():
            yield f"event: sources\ndata: {json.dumps(c['sources'])}\n\n"
            async for w in paced(words(c["response"]), rate, emitted[i]):
                yield f"data: {json.dumps({'t': w})}\n\n"
        return StreamingResponse(events(), media_type="text/event-stream")

    with Guard(policy, log_dir=log_dir, checks=[vid], action="flag") as g:
        app.add_middleware(GuardMiddleware, guard=g, paths=["/sse/*"], contract={"sse_text": "t"})
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning",
                                               access_log=False))
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        while not server.started:
            time.sleep(0.05)
        holds: list[float] = []
        try:
            with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60) as client:
                client.get("/sse/0").read()  # warm
                for i, c in enumerate(answers):
                    arrived = []
                    with client.stream("GET", f"/sse/{i}") as r:
                        for line in r.iter_lines():
                            if line.startswith("data: {"):
                                arrived.append(time.perf_counter())
                    text = c["response"]
                    ends = [e for _, e in complete_sentences(text, True, "en")]
                    offsets, at = [], 0
                    for w in words(text):
                        at += len(w)
                        offsets.append(at)
                    last = [next(k for k, o in enumerate(offsets) if o >= e) for e in ends]
                    holds += [(a - emitted[i][k]) * 1000.0 for a, k in zip(arrived, last)]
        finally:
            server.should_exit = True
            thread.join(10)
    return {"hold": quantiles(holds)}


def joined(answers: list[dict], k: int) -> list[dict]:
    """Longer answers: `k` answers of one doc type in a row, with all their sources."""
    by_type: dict = {}
    for c in answers:
        by_type.setdefault(c["doc_type"], []).append(c)
    out = []
    for group in by_type.values():
        for i in range(0, len(group) - k + 1, k):
            part = group[i:i + k]
            out.append({"response": " ".join(c["response"] for c in part), "question": part[0].get("question"),
                        "sources": [s for c in part for s in c["sources"]], "doc_type": part[0]["doc_type"]})
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--verifiers", default="anchors,rouge")
    ap.add_argument("--answers", type=int, default=40, help="demo answers streamed per verifier and rate")
    ap.add_argument("--rates", default="20,60", help="words a second")
    ap.add_argument("--no-log", action="store_true", help="no decision log (default: logged, fsync)")
    ap.add_argument("--http", action="store_true", help="also through GuardMiddleware on uvicorn")
    ap.add_argument("--join", type=int, default=1,
                    help="stream K demo answers of one doc type in a row as one answer (their sources together)")
    args = ap.parse_args()
    vids = args.verifiers.split(",")
    answers = [{k: c[k] for k in ("response", "sources", "question", "doc_type")} for c in cases()]
    if args.join > 1:
        answers = joined(answers, args.join)
    answers = answers[:args.answers]
    print(f"loadavg before: {loadavg()}")
    print("| verifier | words/s | sentences | delay p50 ms | delay p95 ms | hold p50 ms | hold p95 ms | "
          "first sentence out ms (median) | whole answer out ms (median) | ratio |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        policy = fit(base, vids)
        for vid in vids:
            for rate in (float(r) for r in args.rates.split(",")):
                log = False if args.no_log else base / f"log-{vid}-{rate:g}"
                r = in_process(policy, vid, answers, rate, log)
                d, h = r["delay"], r["hold"]
                print(f"| {vid} | {rate:g} | {d['n']} | {d['p50']:.1f} | {d['p95']:.1f} | {h['p50']:.1f} | "
                      f"{h['p95']:.1f} | {r['first_ms']:.0f} | {r['whole_ms']:.0f} | {r['first_ms'] / r['whole_ms']:.2f} |")
                if args.http:
                    hh = over_http(policy, vid, answers, rate, False if args.no_log else base / f"http-{vid}-{rate:g}")["hold"]
                    print(f"|   http {vid} | {rate:g} | {hh['n']} | | | {hh['p50']:.1f} | {hh['p95']:.1f} | | | |")
    print(f"loadavg after: {loadavg()}")


if __name__ == "__main__":
    main()
