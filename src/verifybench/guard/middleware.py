"""ASGI middleware: the guard applied to a route's answer before the response leaves.

As the semantic-anchors article puts it, the check sits in an asynchronous middleware that intercepts the
model's output before it reaches the client. `GuardMiddleware` wraps any ASGI app (Starlette, FastAPI):

```python
app = FastAPI()
app.add_middleware(GuardMiddleware, guard=Guard("guard.yaml"), paths=["/answer", "/chat/*"])
```

The contract (`Contract`, every name a field path: `data.answer` steps into objects, a key of digits
into a list, `choices.0.delta.content`):

- A JSON response (`application/json`, status 2xx): the handler returns an object; its `answer` field is
  the answer. `sources`, `question` and `doc_type` are read from the handler's result, else from the
  request's JSON body. The answer is replaced by the guard's `response` (the answer, the answer without
  its flagged units, or `blocked_answer`, null by default, when blocked), and the decision is added
  under `decision` (`{"id", "action", "applied", "reason", "escalated", "removed"}`).
- A streamed response (a `StreamingResponse` of `text/plain`, or `text/event-stream`): the text goes
  through `StreamGuard`: released sentence by sentence, each after its check; the guard's action strips
  a flagged sentence or stops the stream. Sources come from the request's JSON body, or for server-sent
  events from an event named `sse_sources_event` (data: a JSON list) sent before the text. Each text
  event's data is text, or with `sse_text` a JSON object holding the text at that path (events where it
  is missing or null carry no text); each released sentence goes out as one event of the same form.
  Other events pass through at once; `sse_done` (`[DONE]`) is held to the end. The last event is
  `event: guard` with what the guard did (`{"stream", "stopped", "reason", "sentences": [...]}`); a
  plain-text stream that was stopped ends with `stop_text`.
- The request id is the `request_id_header` header; every decision is logged as the guard logs any.
- Any other response (another content type, a status outside 2xx, a path not in `paths`) passes
  untouched.

Fail closed: an answer is never let out unchecked. A JSON result without the answer, or without sources
anywhere, gets a 500 naming the field (a mistake in the app, not the client's); a decision the log
cannot take gets a 503 (as `verifybench serve`). On a stream, where the status has already left, such a
failure ends the stream with the `guard` event saying why (plain text: `stop_text`).
"""

from __future__ import annotations

import asyncio
import codecs
import json
from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from verifybench._util.fieldpath import parse_path
from verifybench.guard.core import Decision, Guard
from verifybench.guard.log import LogError
from verifybench.guard.spec import GuardError
from verifybench.guard.stream import StreamGuard

MAX_REQUEST_BODY = 1 << 20
_MISSING = object()


class Contract(BaseModel):
    """Where the middleware finds the answer and its sources, and how it answers (field paths)."""

    model_config = ConfigDict(extra="forbid")

    answer: str = Field("answer", description="the answer in the handler's JSON result")
    sources: str = Field("sources", description="the sources: in the result, else in the request's JSON body")
    question: str = Field("question", description="the question: in the result, else in the request")
    doc_type: str = Field("doc_type", description="the policy slice: in the result, else in the request")
    request_id_header: str = Field("x-request-id", description="the header holding the request id")
    decision: str | None = Field("guard", description="where the decision goes in the result; null: left out")
    blocked_answer: str | None = Field(None, description="the answer sent in place of a blocked one")
    sse_sources_event: str = Field("sources", description="the server-sent event whose data is the sources")
    sse_text: str | None = Field(None, description="the text in a JSON event's data; null: the data is the text")
    sse_done: str | None = Field("[DONE]", description="the data that ends an event stream, held to the end")
    stop_text: str = Field("", description="appended to a plain-text stream the guard stopped")
    max_request_body: int = Field(MAX_REQUEST_BODY, ge=0, description="the largest request body read (413 above)")


def lookup(obj: Any, path: str) -> Any:
    """The value at a field path of a JSON value (a key made of digits indexes a list:
    `choices.0.delta.content`), or _MISSING."""
    for key in parse_path(path):
        if isinstance(obj, list) and key.isdigit() and int(key) < len(obj):
            obj = obj[int(key)]
        elif isinstance(obj, dict) and key in obj:
            obj = obj[key]
        else:
            return _MISSING
    return obj


def place(obj: Any, path: str, value: Any) -> None:
    """Set the value at a field path, making the objects (or, for a key of digits, lists) on the way."""
    keys = parse_path(path)
    for key, after in zip(keys, keys[1:]):
        fresh: Any = [] if after.isdigit() else {}
        if isinstance(obj, list) and key.isdigit():
            i = int(key)
            obj.extend([None] * (i + 1 - len(obj)))
            obj[i] = obj[i] if isinstance(obj[i], (dict, list)) else fresh
            obj = obj[i]
        else:
            if not isinstance(obj.get(key), (dict, list)):
                obj[key] = fresh
            obj = obj[key]
    last = keys[-1]
    if isinstance(obj, list) and last.isdigit():
        obj.extend([None] * (int(last) + 1 - len(obj)))
        obj[int(last)] = value
    else:
        obj[last] = value


def summary(d: Decision) -> dict[str, Any]:
    return {"id": d.id, "action": d.action, "applied": d.applied, "reason": d.reason, "escalated": d.escalated,
            "removed": [r.model_dump() for r in d.removed]}


class ContractError(Exception):
    """The app's response does not hold what the contract names (a 500: the app's mistake)."""


class GuardMiddleware:
    """Check the answers of `paths` with `guard` before they leave.

    Args:
        app: the ASGI app.
        guard: a `Guard`, or a guard or policy file to build one from (models load here).
        paths: the guarded paths: exact, or a prefix when one ends with `*` (`/chat/*`).
        contract: a `Contract` or its fields as a mapping.
    """

    def __init__(self, app: Any, guard: Guard | str, paths: Iterable[str], contract: Contract | dict | None = None):
        self.app = app
        self.guard = guard if isinstance(guard, Guard) else Guard(guard)
        self.paths = list(paths)
        if not self.paths:
            raise ValueError("paths: name at least one path to guard")
        self.contract = contract if isinstance(contract, Contract) else Contract(**(contract or {}))
        for name in ("answer", "sources", "question", "doc_type", "decision", "sse_text"):
            value = getattr(self.contract, name)
            if value is not None:
                try:
                    parse_path(value)
                except ValueError as e:
                    raise ValueError(f"contract.{name}: {e}") from None

    def guarded(self, path: str) -> bool:
        return any(path.startswith(p[:-1]) if p.endswith("*") else path == p for p in self.paths)

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or not self.guarded(scope.get("path", "")):
            await self.app(scope, receive, send)
            return
        body, complete = b"", False
        while not complete:
            message = await receive()
            if message["type"] != "http.request":
                break
            body += message.get("body", b"")
            complete = not message.get("more_body", False)
            if len(body) > self.contract.max_request_body:
                await _respond(send, 413, {"error": f"request body above {self.contract.max_request_body} bytes"})
                return
        await _Exchange(self, scope, _json_body(scope, body), send).run(replaying(body, receive))


def replaying(body: bytes, receive: Any) -> Any:
    """An ASGI `receive` that gives the app the body already read, once, then the server's messages (a
    disconnect): for a layer that reads the whole request before the app does."""
    sent = False

    async def replay() -> dict:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


def _json_body(scope: dict, body: bytes) -> Any:
    kind = dict(scope.get("headers") or []).get(b"content-type", b"")
    if not body or b"json" not in kind:
        return None
    try:
        return json.loads(body)
    except ValueError:
        return None  # the app answers the malformed request as it would without the middleware


async def _respond(send: Any, status: int, content: dict) -> None:
    data = json.dumps(content).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]})
    await send({"type": "http.response.body", "body": data})


class _Exchange:
    """One guarded request: the app's response intercepted, checked, and sent on."""

    def __init__(self, mw: GuardMiddleware, scope: dict, request: Any, send: Any):
        self.mw, self.scope, self.request, self.send = mw, scope, request, send
        self.contract = mw.contract
        self.mode: str | None = None  # pass | json | text | sse
        self.start: dict | None = None
        self.body: list[bytes] = []
        self.text: asyncio.Queue[str | None] = asyncio.Queue()
        self.streaming = asyncio.Event()
        self.decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self.events = _EventReader()
        self.sources: list[Any] = []  # a stream's: filled from the request, or from the sources event
        self.have_sources = False
        self.done_seen = False
        self.error: str | None = None  # why a stream ended early (the app's events broke the contract)
        self.lock = asyncio.Lock()  # the app's pass-through events and the released text share `send`
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers") or []}
        self.request_id = headers.get(self.contract.request_id_header.lower())

    # -- what the app sends ----------------------------------------------------------------------------
    async def from_app(self, message: dict) -> None:
        kind = message["type"]
        if kind == "http.response.start":
            self.start, self.mode = message, _mode(message)
            if self.mode == "pass":
                await self.send(message)
            elif self.mode in ("text", "sse"):
                headers = [(k, v) for k, v in message.get("headers") or [] if k.lower() != b"content-length"]
                await self.send({**message, "headers": headers})
                self.streaming.set()
            return
        if kind != "http.response.body" or self.mode == "pass":
            await self.send(message)
            return
        data, more = message.get("body", b""), message.get("more_body", False)
        if self.mode == "json":
            self.body.append(data)
            return
        if self.error is not None:
            return  # the stream is ending: the rest is not the client's
        text = self.decoder.decode(data, final=not more)
        if self.mode == "text" and text:
            self.text.put_nowait(text)
        elif self.mode == "sse":
            try:
                for event in self.events.feed(text, final=not more):
                    await self._event(event)
            except ContractError as e:
                self.error = f"guard middleware: {e}"
                more = False
        if not more:
            self.text.put_nowait(None)

    async def _event(self, event: dict) -> None:
        c = self.contract
        if event["event"] == c.sse_sources_event:
            try:
                self.sources[:] = json.loads(event["data"])
                self.have_sources = True
            except ValueError as e:
                raise ContractError(f"the {c.sse_sources_event!r} event's data is not JSON: {e}") from None
            await self._out(event["raw"])
        elif event["event"] in ("", "message") and event["data"] is not None:
            if c.sse_done is not None and event["data"] == c.sse_done:
                self.done_seen = True
                return
            text = event["data"]
            if c.sse_text is not None:
                try:
                    text = lookup(json.loads(event["data"]), c.sse_text)
                except ValueError:
                    raise ContractError(f"an event's data is not JSON (contract.sse_text: {c.sse_text!r})") from None
                if text is _MISSING or text is None:
                    return
                if not isinstance(text, str):
                    raise ContractError(f"{c.sse_text}: expected text in an event's data, got {type(text).__name__}")
            if text:
                self.text.put_nowait(text)
        else:
            await self._out(event["raw"])

    async def _out(self, text: str, more: bool = True) -> None:
        async with self.lock:
            await self.send({"type": "http.response.body", "body": text.encode(), "more_body": more})

    # -- the exchange --------------------------------------------------------------------------------
    async def run(self, receive: Any) -> None:
        app = asyncio.create_task(self.mw.app(self.scope, receive, self.from_app))
        streaming = asyncio.create_task(self.streaming.wait())
        try:
            await asyncio.wait({app, streaming}, return_when=asyncio.FIRST_COMPLETED)
            if self.streaming.is_set():
                # An app that ends or fails mid-stream ends the text: what came is checked, then the end.
                app.add_done_callback(lambda _: self.text.put_nowait(None))
                await self._stream(app)
                return
            await app
            if self.mode == "json":
                await self._json()
        finally:
            streaming.cancel()
            if not app.done():
                app.cancel()
            await asyncio.gather(app, streaming, return_exceptions=True)

    def _field(self, name: str, result: Any) -> Any:
        path = getattr(self.contract, name)
        got = lookup(result, path)
        return lookup(self.request, path) if got is _MISSING else got

    async def _json(self) -> None:
        assert self.start is not None
        try:
            result = json.loads(b"".join(self.body))
            if not isinstance(result, dict):
                raise ContractError(f"the handler's result is a JSON {type(result).__name__}, not an object")
            answer = lookup(result, self.contract.answer)
            if answer is _MISSING or not isinstance(answer, str):
                raise ContractError(f"{self.contract.answer}: " + ("not in the handler's result" if answer is _MISSING
                                    else f"expected the answer as text, got {type(answer).__name__}")
                                    + " (contract.answer)")
            sources = self._field("sources", result)
            if sources is _MISSING:
                raise ContractError(f"{self.contract.sources}: in neither the handler's result nor the request's "
                                    "JSON body (contract.sources)")
            question, doc_type = (None if v is _MISSING else v for v in
                                  (self._field("question", result), self._field("doc_type", result)))
            d = await self.mw.guard.acheck(answer, sources, question, doc_type, {"route": self.scope.get("path")},
                                           self.request_id)
        except LogError as e:
            await _respond(self.send, 503, {"error": f"the decision log cannot be written ({e.reason}); the answer "
                                                     "is withheld", "reason": "decision log"})
            return
        except (ContractError, GuardError, ValueError) as e:  # GuardError: the sources' shape
            await _respond(self.send, 500, {"error": f"guard middleware: {e}"})
            return
        place(result, self.contract.answer, d.response if d.response is not None else self.contract.blocked_answer)
        if self.contract.decision is not None:
            place(result, self.contract.decision, summary(d))
        data = json.dumps(result, ensure_ascii=False).encode()
        headers = [(k, v) for k, v in self.start.get("headers") or [] if k.lower() != b"content-length"]
        await self.send({**self.start, "headers": [*headers, (b"content-length", str(len(data)).encode())]})
        await self.send({"type": "http.response.body", "body": data})

    async def _stream(self, app: asyncio.Task) -> None:
        if self.request is not None and (got := lookup(self.request, self.contract.sources)) is not _MISSING:
            self.sources[:] = got if isinstance(got, list) else [got]
            self.have_sources = True
        question, doc_type = (lookup(self.request, getattr(self.contract, n)) for n in ("question", "doc_type"))
        stream = StreamGuard(self.mw.guard, self.sources, None if question is _MISSING else question,
                             None if doc_type is _MISSING else doc_type, {"route": self.scope.get("path")},
                             self.request_id)
        error = None
        try:
            async for piece in stream.run(self._checked_text()):
                await self._out(self._format(piece))
        except ContractError as e:
            error = f"guard middleware: {e}"
        except Exception as e:  # noqa: BLE001 - the status has left: the stream ends saying why
            error = f"{type(e).__name__}: {e}"
        if not app.done():
            app.cancel()  # stopped: the handler (and the model behind it) need not go on
        elif not app.cancelled() and app.exception() is not None:
            error = error or f"the handler failed: {type(app.exception()).__name__}: {app.exception()}"
        await self._finish(stream, error or self.error)

    async def _checked_text(self):
        while (text := await self.text.get()) is not None:
            if not self.have_sources:
                raise ContractError(f"{self.contract.sources}: no sources in the request's JSON body nor a "
                                    f"{self.contract.sse_sources_event!r} event before the text (contract.sources)")
            yield text

    def _format(self, text: str) -> str:
        if self.mode == "text":
            return text
        if self.contract.sse_text is not None:
            obj: dict = {}
            place(obj, self.contract.sse_text, text)  # the text in an event of the same shape
            text = json.dumps(obj, ensure_ascii=False)
        return "".join(f"data: {line}\n" for line in text.split("\n")) + "\n"

    async def _finish(self, stream: StreamGuard, error: str | None) -> None:
        stopped = stream.stopped is not None or error is not None
        if self.mode == "text":
            await self._out(self.contract.stop_text if stopped else "", more=False)
            return
        report = {"stream": stream.id, "stopped": stopped,
                  "reason": error or (stream.stopped.reason if stream.stopped is not None else "every sentence checked"),
                  "sentences": [{"index": s.index, "action": s.decision.action, "released": s.released is not None}
                                for s in stream.sentences]}
        end = f"event: guard\ndata: {json.dumps(report, ensure_ascii=False)}\n\n"
        if self.contract.sse_done is not None and (self.done_seen or stopped):
            end += f"data: {self.contract.sse_done}\n\n"
        await self._out(end, more=False)


def _mode(start: dict) -> str:
    if not 200 <= int(start.get("status", 200)) < 300:
        return "pass"
    kind = dict(start.get("headers") or []).get(b"content-type", b"").split(b";")[0].strip().lower()
    return {b"application/json": "json", b"text/event-stream": "sse", b"text/plain": "text"}.get(kind, "pass")


class _EventReader:
    """Server-sent events from text chunks: each {event, data, raw}; data None for an event without any
    (a comment, a keep-alive)."""

    def __init__(self) -> None:
        self.buffer = ""

    def feed(self, text: str, final: bool) -> list[dict]:
        self.buffer += text
        self.buffer = self.buffer.replace("\r\n", "\n")
        if not final and self.buffer.endswith("\r"):  # the rest of a CRLF may be in the next chunk
            head, tail = self.buffer[:-1].replace("\r", "\n"), "\r"
        else:
            head, tail = self.buffer.replace("\r", "\n"), ""
        *blocks, rest = head.split("\n\n")
        if final and rest.strip():
            blocks.append(rest)
            rest = ""
        self.buffer = rest + tail
        return [self._event(b) for b in blocks if b]

    @staticmethod
    def _event(block: str) -> dict:
        name, data = "", []
        for line in block.split("\n"):
            field, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if field == "event":
                name = value
            elif field == "data":
                data.append(value)
        return {"event": name, "data": "\n".join(data) if data else None, "raw": block + "\n\n"}
