"""`GuardMiddleware` on a real FastAPI app served by a real uvicorn on 127.0.0.1: a route's JSON answer
checked before it leaves (sources from the result or the request), a plain-text stream and server-sent
events released sentence by sentence (a flagged sentence stripped, or the stream stopped), every decision
logged, and the app's contract mistakes answered with the field they miss."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time

import httpx
import pytest
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, StreamingResponse

from helpers.guard_verifiers import fit_demo_policy
from verifybench.guard import Guard
from verifybench.guard.middleware import Contract, GuardMiddleware
from verifybench.loaders.guardlog import read_log

TEST_CODE = ["helpers.guard_verifiers"]
GOOD1 = "The Team plan costs $29 per user per month."
BAD = "Purple dragons deliver every invoice by carrier pigeon."
GOOD2 = "Data export to CSV is supported on the Team plan."
ANSWER = f"{GOOD1} {BAD} {GOOD2}"
SOURCES = ["Northwind CRM pricing. The Team plan costs $29 per user per month and includes up to 10 user seats. "
           "Data export to CSV is supported on the Team plan, but API access is not included."]
OPENAI_TEXT = "choices.0.delta.content"


def words(text: str) -> list[str]:
    return [w + " " for w in text.split(" ")[:-1]] + [text.split(" ")[-1]]


def build_app(strip: Guard, block: Guard, seen: dict):
    app = FastAPI()

    @app.post("/answer")
    async def answer(request: Request) -> dict:
        return {"answer": ANSWER, "sources": SOURCES, "model": "m-1"}

    @app.post("/answer-from-request")
    async def answer_from_request(request: Request) -> dict:
        return {"data": {"text": ANSWER}}

    @app.post("/no-answer")
    async def no_answer() -> dict:
        return {"text": ANSWER, "sources": SOURCES}

    @app.post("/refused")
    async def refused() -> JSONResponse:
        return JSONResponse({"answer": "Purple dragons.", "sources": []}, status_code=429)

    @app.post("/open")
    async def unguarded() -> dict:
        return {"answer": ANSWER, "sources": SOURCES}

    @app.post("/stream")
    async def stream(request: Request) -> StreamingResponse:
        async def text():
            for w in words(GOOD1):
                yield w
            yield " Purple"
            # Go on only once the client holds the first sentence: released before the answer is done.
            seen["first_held"] = await asyncio.to_thread(seen["client_has_first"].wait, 10)
            for w in words(BAD[len("Purple"):] + " " + GOOD2):
                yield w
        return StreamingResponse(text(), media_type="text/plain; charset=utf-8")

    def sse_events(answer: str, cancelled_key: str):
        async def events():
            try:
                yield f"event: sources\ndata: {json.dumps(SOURCES)}\n\n"
                yield ": keep-alive\n\n"
                for w in words(answer):
                    yield f"data: {json.dumps({'choices': [{'delta': {'content': w}}]})}\n\n"
                    await asyncio.sleep(0.005)
                yield f"data: {json.dumps({'choices': [{'delta': {}, 'finish_reason': 'stop'}]})}\n\n"
                yield "data: [DONE]\n\n"
            except asyncio.CancelledError:
                seen[cancelled_key] = True
                raise
        return events()

    @app.get("/sse")
    async def sse() -> StreamingResponse:
        return StreamingResponse(sse_events(ANSWER, "sse_cancelled"), media_type="text/event-stream")

    @app.get("/sse-block")
    async def sse_block() -> StreamingResponse:
        return StreamingResponse(sse_events(ANSWER + " " + GOOD1 * 40, "block_cancelled"),
                                 media_type="text/event-stream")

    @app.get("/sse-no-sources")
    async def sse_no_sources() -> StreamingResponse:
        async def events():
            for w in words(GOOD1 + " " + GOOD2):
                yield f"data: {json.dumps({'choices': [{'delta': {'content': w}}]})}\n\n"
        return StreamingResponse(events(), media_type="text/event-stream")

    @app.get("/sse-not-json")
    async def sse_not_json() -> StreamingResponse:
        async def events():
            yield f"event: sources\ndata: {json.dumps(SOURCES)}\n\n"
            yield "data: The Team plan costs $29.\n\n"
        return StreamingResponse(events(), media_type="text/event-stream")

    @app.post("/text-block")
    async def text_block() -> StreamingResponse:
        async def text():
            for w in words(ANSWER):
                yield w
        return StreamingResponse(text(), media_type="text/plain")

    app.add_middleware(GuardMiddleware, guard=strip,
                       paths=["/answer", "/no-answer", "/refused", "/stream", "/sse", "/sse-no-sources", "/sse-not-json"],
                       contract={"sse_text": OPENAI_TEXT})
    app.add_middleware(GuardMiddleware, guard=strip, paths=["/answer-from-request"],
                       contract=Contract(answer="data.text", decision="data.guard"))
    app.add_middleware(GuardMiddleware, guard=block, paths=["/sse-block", "/text-block"],
                       contract={"sse_text": OPENAI_TEXT, "stop_text": "\n[stopped by the guard]"})
    return app


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    import uvicorn

    base = tmp_path_factory.mktemp("middleware")
    policy = fit_demo_policy(base)[2]
    seen: dict = {"client_has_first": threading.Event()}
    strip = Guard(policy, allow_code=TEST_CODE, checks=["sentences"], action="strip", log_dir=base / "log")
    block = Guard(policy, allow_code=TEST_CODE, checks=["sentences"], action="block", log_dir=False)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(build_app(strip, block, seen), host="127.0.0.1", port=port,
                                           log_level="warning", access_log=False))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.time() + 30
    while not server.started and time.time() < deadline:
        time.sleep(0.05)
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as client:
            yield {"client": client, "seen": seen, "log": base / "log", "policy": policy}
    finally:
        server.should_exit = True
        thread.join(10)
        strip.close()
        block.close()


def events(text: str) -> list[tuple[str, str]]:
    """(event name, data) of each server-sent event; comments as ('comment', text)."""
    out = []
    for block in text.strip().split("\n\n"):
        name, data = "message", []
        for line in block.split("\n"):
            if line.startswith(":"):
                name = "comment"
                data.append(line[1:].strip())
            elif line.startswith("event: "):
                name = line[7:]
            elif line.startswith("data: "):
                data.append(line[6:])
        out.append((name, "\n".join(data)))
    return out


def test_a_json_answer_is_checked_and_stripped_before_it_leaves(served):
    r = served["client"].post("/answer", json={"question": "What does the Team plan cost?"},
                              headers={"x-request-id": "TICKET-9"})
    assert r.status_code == 200
    body = r.json()
    assert body["answer"] == f"{GOOD1} {GOOD2}" and body["model"] == "m-1"  # the rest of the result is kept
    assert body["guard"]["action"] == "rewritten" and [x["text"] for x in body["guard"]["removed"]] == [BAD]
    assert int(r.headers["content-length"]) == len(r.content)
    records = [x for x in read_log(served["log"])[0] if x.decision.request_id == "TICKET-9"]
    assert [(x.response, x.question, x.meta["route"]) for x in records] == [
        (ANSWER, "What does the Team plan cost?", "/answer")]


def test_sources_from_the_request_and_a_nested_contract(served):
    r = served["client"].post("/answer-from-request", json={"sources": SOURCES, "question": "q"})
    assert r.status_code == 200
    assert r.json()["data"]["text"] == f"{GOOD1} {GOOD2}" and r.json()["data"]["guard"]["action"] == "rewritten"
    missing = served["client"].post("/answer-from-request", json={"question": "q"})
    assert missing.status_code == 500 and missing.json()["error"] == (
        "guard middleware: sources: in neither the handler's result nor the request's JSON body (contract.sources)")
    bad = served["client"].post("/answer-from-request", json={"sources": [{"id": "a"}]})
    assert bad.status_code == 500 and "sources[0]: expected a string or an object with a `text` string" in bad.text
    assert ANSWER not in missing.text + bad.text  # fail closed: the unchecked answer never leaves


def test_a_result_without_the_answer_is_a_500_naming_the_field(served):
    r = served["client"].post("/no-answer", json={})
    assert r.status_code == 500
    assert r.json() == {"error": "guard middleware: answer: not in the handler's result (contract.answer)"}


def test_other_responses_and_paths_pass_untouched(served):
    refused = served["client"].post("/refused", json={})
    assert refused.status_code == 429 and refused.json() == {"answer": "Purple dragons.", "sources": []}
    open_ = served["client"].post("/open", json={})
    assert open_.json() == {"answer": ANSWER, "sources": SOURCES}


def test_a_text_stream_is_released_sentence_by_sentence_before_it_ends(served):
    seen = served["seen"]
    got = []
    with served["client"].stream("POST", "/stream", json={"sources": SOURCES}) as r:
        assert r.status_code == 200 and "content-length" not in r.headers
        for piece in r.iter_text():
            got.append(piece)
            if "".join(got) == GOOD1:
                seen["client_has_first"].set()  # the handler waits for this before it goes on
    assert seen["first_held"] is True  # the first sentence reached the client while the answer went on
    assert "".join(got) == f"{GOOD1} {GOOD2}"


def test_server_sent_events_strip_a_flagged_sentence(served):
    r = served["client"].get("/sse")
    assert r.status_code == 200
    got = events(r.text)
    names = [n for n, _ in got]
    assert names[:2] == ["sources", "comment"]  # passed through at once
    texts = [json.loads(d)["choices"][0]["delta"]["content"] for n, d in got if n == "message" and d != "[DONE]"]
    assert texts == [GOOD1, " " + GOOD2]  # one event per sentence, in the upstream's own shape
    guard = json.loads(next(d for n, d in got if n == "guard"))
    assert guard["stopped"] is False
    assert [(s["action"], s["released"]) for s in guard["sentences"]] == [
        ("allowed", True), ("blocked", False), ("allowed", True)]
    assert got[-1] == ("message", "[DONE]") and names[-2] == "guard"


def test_server_sent_events_stop_at_a_flagged_sentence_under_block(served):
    r = served["client"].get("/sse-block")
    got = events(r.text)
    texts = [json.loads(d)["choices"][0]["delta"]["content"] for n, d in got if n == "message" and d != "[DONE]"]
    assert texts == [GOOD1]
    guard = json.loads(next(d for n, d in got if n == "guard"))
    assert guard["stopped"] is True and guard["reason"].startswith("flagged by sentences")
    assert got[-1] == ("message", "[DONE]")
    deadline = time.time() + 5
    while not served["seen"].get("block_cancelled") and time.time() < deadline:
        time.sleep(0.02)
    assert served["seen"].get("block_cancelled") is True  # the handler's generator was stopped, not drained


def test_a_stream_without_sources_releases_nothing_and_says_why(served):
    got = events(served["client"].get("/sse-no-sources").text)
    assert [n for n, _ in got] == ["guard", "message"]
    guard = json.loads(got[0][1])
    assert guard["stopped"] is True and "sources: no sources in the request's JSON body" in guard["reason"]


def test_an_event_that_breaks_the_contract_ends_the_stream_naming_it(served):
    got = events(served["client"].get("/sse-not-json").text)
    assert [n for n, _ in got] == ["sources", "guard", "message"]
    assert json.loads(got[1][1])["reason"] == (
        "guard middleware: an event's data is not JSON (contract.sse_text: 'choices.0.delta.content')")


def test_a_stopped_text_stream_ends_with_the_stop_text(served):
    r = served["client"].post("/text-block", json={"sources": SOURCES})
    assert r.text == GOOD1 + "\n[stopped by the guard]"


def test_a_contract_with_an_unknown_key_or_a_bad_path_is_refused(served):
    with pytest.raises(ValueError, match="Extra inputs"):
        GuardMiddleware(None, guard=Guard.__new__(Guard), paths=["/a"], contract={"anwser": "x"})
    with pytest.raises(ValueError, match="contract.answer: field path 'a.' ends with a dot"):
        GuardMiddleware(None, guard=Guard.__new__(Guard), paths=["/a"], contract={"answer": "a."})
    with pytest.raises(ValueError, match="paths: name at least one path"):
        GuardMiddleware(None, guard=Guard.__new__(Guard), paths=[])


def test_a_decision_the_log_cannot_take_withholds_the_answer_with_a_503(served, tmp_path):
    policy = served["policy"]
    app = FastAPI()

    @app.post("/answer")
    async def answer() -> dict:
        return {"answer": ANSWER, "sources": SOURCES}

    with Guard(policy, allow_code=TEST_CODE, checks=["sentences"], log_dir=tmp_path / "log") as g:
        def broken(fd: int) -> None:
            raise OSError(28, "No space left on device")

        g.log.sync = broken  # type: ignore[union-attr]
        app.add_middleware(GuardMiddleware, guard=g, paths=["/answer"])

        async def call():
            async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://app") as client:
                return await client.post("/answer", json={})

        r = asyncio.run(call())
    assert r.status_code == 503 and r.json()["reason"] == "decision log" and ANSWER not in r.text
