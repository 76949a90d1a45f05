"""`verifybench serve`: a guard behind HTTP, on FastAPI and uvicorn (the `serve` extra).

FastAPI (imported by this module only: the rest of the package never needs it), because the request
and the decision are already pydantic models: the same models validate the body (a 4xx names the
field), document it in the OpenAPI schema (/openapi.json, /docs) and serialise the answer; it runs on
uvicorn like any ASGI app, and Ray Serve deploys a FastAPI app as it is (docs/rollout.md).

Endpoints: POST /v1/check, POST /v1/check/batch, GET /v1/escalations (drains the escalation queue),
POST /v1/filter and GET /v1/filter/escalations (with a context filter, `serve --filter`: units of context
judged and placed for a reasoning model, `guard.context_filter`), GET /healthz (the process answers),
GET /readyz (200 once the guard is built, its models are loaded and its decision log takes records;
503 otherwise), GET /metrics (Prometheus text).

In front of the app, before any body is read (`_Gate`): with the environment variable named by
`token_env` set (default VERIFYBENCH_GUARD_TOKEN), every path but /healthz and /readyz needs
`Authorization: Bearer <token>` (a 401 comes before the body is read or validated; the token is never
logged or returned); a body above `max_body` bytes gets 413, one not received within `body_timeout`
seconds 408. Under uvicorn (`serve`), a connection whose request headers are not complete within
`header_timeout` seconds is closed (`GuardHTTPProtocol`).
"""

from __future__ import annotations

import asyncio
import hmac
import json
import os
import signal
import sys
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

from fastapi import FastAPI, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from pydantic import BaseModel, ConfigDict, Field
from starlette.exceptions import HTTPException as StarletteHTTPException
from uvicorn.protocols.http.auto import AutoHTTPProtocol

from verifybench.executors.threads import current_threads
from verifybench.guard.context_filter import (
    ContextFilter,
    FilterError,
    FilterRequest,
    FilterResult,
    UnitOutcome,
)
from verifybench.guard.core import Decision, Guard
from verifybench.guard.filter_policy import read_filter_policy
from verifybench.guard.log import LogError, json_problem
from verifybench.guard.middleware import replaying
from verifybench.guard.spec import served_log_dir
from verifybench.guard.telemetry import request_context

TOKEN_ENV = "VERIFYBENCH_GUARD_TOKEN"
MAX_BODY = 1 << 20  # 1 MiB
MAX_BATCH = 256
MAX_SOURCES = 1000  # per answer: a bound on what one request makes a verifier score
HEADER_TIMEOUT = 10.0  # seconds for a request's headers (from the connection, or from the previous response)
BODY_TIMEOUT = 30.0  # seconds for a request's whole body, once its headers are in
DRAIN_S = 5.0  # on SIGTERM / SIGINT: how long requests in flight may finish before they are cancelled
THREADS = 1  # torch and BLAS threads per worker (`serve --threads`)
ENV_PATH, ENV_LOG, ENV_MAX_BODY, ENV_TOKEN_ENV = ("VERIFYBENCH_GUARD", "VERIFYBENCH_GUARD_LOG_DIR",
                                                  "VERIFYBENCH_GUARD_MAX_BODY", "VERIFYBENCH_GUARD_TOKEN_ENV")
ENV_ALLOW_CODE = "VERIFYBENCH_GUARD_ALLOW_CODE"  # a JSON list: the allow-list of `serve --allow-code`
ENV_FILTER = "VERIFYBENCH_GUARD_FILTER"  # the filter policy of `serve --filter`
ENV_HEADER_TIMEOUT, ENV_BODY_TIMEOUT = "VERIFYBENCH_GUARD_HEADER_TIMEOUT", "VERIFYBENCH_GUARD_BODY_TIMEOUT"
OPEN_PATHS = frozenset({"/healthz", "/readyz"})  # answered without the token (/readyz says only whether it is ready)
ENDPOINTS = frozenset({"/v1/check", "/v1/check/batch", "/v1/escalations", "/v1/filter", "/v1/filter/escalations",
                       "/metrics", *OPEN_PATHS})


class SourceIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str | None = None
    text: str


class CheckRequest(BaseModel):
    """One answer to check."""

    model_config = ConfigDict(extra="forbid")

    response: str = Field(description="the answer to check")
    sources: list[str | SourceIn] = Field(max_length=MAX_SOURCES,
                                          description=f"the grounding texts: strings or {{id, text}}; at most {MAX_SOURCES}")
    question: str | None = None
    doc_type: str | None = Field(None, max_length=200, description="picks the policy slice's threshold")
    meta: dict[str, Any] | None = None
    request_id: str | None = Field(None, max_length=200, description="your own request or ticket id, kept in the log")

    def arguments(self) -> dict[str, Any]:
        return {"response": self.response,
                "sources": [s if isinstance(s, str) else s.model_dump(exclude_none=True) for s in self.sources],
                "question": self.question, "doc_type": self.doc_type, "meta": self.meta, "request_id": self.request_id}

    def problem(self) -> tuple[tuple, str] | None:
        """What JSON validation lets through and a JSON line cannot hold (a lone surrogate, NaN or an
        infinity in meta, meta nested too deep), with its location; None when the request can be logged."""
        for name in ("response", "question", "doc_type", "request_id"):
            bad = json_problem(getattr(self, name), (name,))
            if bad is not None:
                return bad
        for i, s in enumerate(self.sources):
            bad = json_problem(s, ("sources", i)) if isinstance(s, str) else (
                json_problem(s.id, ("sources", i, "id")) or json_problem(s.text, ("sources", i, "text")))
            if bad is not None:
                return bad
        return json_problem(self.meta, ("meta",), depth=1)  # meta sits one level down in the record


class BatchRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    items: list[CheckRequest] = Field(max_length=MAX_BATCH)


class BatchResponse(BaseModel):
    decisions: list[Decision]


class FilterEscalations(BaseModel):
    units: list[UnitOutcome]


_UNION_TAGS = {"str", "SourceIn"}


def _field(loc: Any) -> str:
    """A validation error's location as a field path: ('body', 'sources', 0, 'text') -> sources[0].text."""
    out = ""
    loc = [p for p in loc if p not in _UNION_TAGS]  # pydantic names the union member it tried
    for part in loc[1:] if loc and loc[0] == "body" else loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif not out:
            out = str(part)
        else:
            out += f".{part}"
    return out or "body"


def _unloggable(items: list[CheckRequest], prefix: tuple = ()) -> None:
    """A 422 naming the field for what the decision log could not hold."""
    for i, item in enumerate(items):
        bad = item.problem()
        if bad is not None:
            loc, msg = bad
            where = (*prefix, i) if prefix else ()
            raise RequestValidationError([{"loc": ("body", *where, *loc), "msg": msg, "type": "value_error"}])


def endpoint_label(path: str) -> str:
    """The path as a metrics label: the service's own endpoints by name, anything else `other` (a client
    cannot grow the series with made-up paths)."""
    return path if path in ENDPOINTS else "other"


def bearer_ok(headers: Any, token: str | None) -> bool:
    """Whether the request carries the token (constant-time comparison); True when there is no token."""
    if token is None:
        return True
    given = b""
    for k, v in headers:
        if k == b"authorization":
            given = v
    return given.startswith(b"Bearer ") and hmac.compare_digest(given[7:], token.encode())


class _Metrics:
    def __init__(self, state: dict[str, Any]) -> None:
        from prometheus_client import CollectorRegistry, Counter, Histogram

        self.registry = CollectorRegistry()
        p = "verifybench_guard"
        self.requests = Counter(f"{p}_requests", "HTTP requests by endpoint and status", ["endpoint", "status"],
                                registry=self.registry)
        self.decisions = Counter(f"{p}_decisions", "decisions by action and doc type", ["action", "doc_type"],
                                 registry=self.registry)
        self.latency = Histogram(f"{p}_check_latency_seconds", "latency of each check", ["verifier"],
                                 buckets=(.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10),
                                 registry=self.registry)
        self.errors = Counter(f"{p}_check_errors", "checks that failed (verifier errors and timeouts)", ["verifier"],
                              registry=self.registry)
        self.timeouts = Counter(f"{p}_check_timeouts", "checks that ran out of the request's time budget",
                                ["verifier"], registry=self.registry)
        self.registry.register(_LogCollector(state))

    def observe(self, d: Decision, doc_type: str) -> None:
        self.decisions.labels(d.action, doc_type).inc()
        for r in d.checks:
            if r.skipped is not None:
                continue
            self.latency.labels(r.verifier).observe(r.latency_ms / 1000.0)
            if r.error is not None:
                self.errors.labels(r.verifier).inc()
            if r.timed_out:
                self.timeouts.labels(r.verifier).inc()


class _LogCollector:
    """The decision log's own counts, read from it at each scrape."""

    def __init__(self, state: dict[str, Any]):
        self.state = state

    def collect(self) -> Any:
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

        g = self.state.get("guard")
        log = None if g is None else g.log
        if log is None:
            return
        p = "verifybench_guard_log"
        yield GaugeMetricFamily(f"{p}_ready", "1 while the decision log takes records, 0 while it cannot be written",
                                value=float(log.ready))
        yield CounterMetricFamily(f"{p}_failures", "decision-log writes, syncs and file opens that failed",
                                  value=log.failures)
        yield CounterMetricFamily(f"{p}_lost", "decisions returned without their record (log.fail_open: true)",
                                  value=log.lost)
        yield CounterMetricFamily(f"{p}_records", "records written to the decision log", value=log.written)


class _Gate:
    """Pure ASGI middleware, in front of the app: the token before anything else (a stranger's body is
    never read, so never validated), then the body, read here within `max_body` bytes (413) and
    `body_timeout` seconds (408)."""

    def __init__(self, app: Any, token: str | None, max_body: int, body_timeout: float, count: Any):
        self.app, self.token, self.max_body, self.body_timeout, self.count = app, token, max_body, body_timeout, count

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        with_body = scope.get("method") in ("POST", "PUT", "PATCH")
        if scope["path"] not in OPEN_PATHS and not bearer_ok(scope.get("headers") or [], self.token):
            await self._refuse(scope, send, 401, {"error": "missing or wrong bearer token"}, close=with_body,
                               headers=[(b"www-authenticate", b"Bearer")])
            return
        if not with_body:
            await self.app(scope, receive, send)
            return
        for k, v in scope.get("headers") or []:
            if k == b"content-length" and v.isdigit() and self.max_body and int(v) > self.max_body:
                await self._too_large(scope, send)
                return
        chunks, size, more = [], 0, True
        deadline = asyncio.get_running_loop().time() + self.body_timeout
        while more:
            try:
                message = await asyncio.wait_for(receive(), deadline - asyncio.get_running_loop().time())
            except TimeoutError:
                await self._refuse(scope, send, 408, {
                    "error": f"request body not received within {self.body_timeout:g} s", "field": "body"}, close=True)
                return
            if message["type"] != "http.request":
                return  # the client went away
            chunk = message.get("body", b"")
            size += len(chunk)
            if self.max_body and size > self.max_body:
                await self._too_large(scope, send)
                return
            chunks.append(chunk)
            more = message.get("more_body", False)
        await self.app(scope, replaying(b"".join(chunks), receive), send)

    async def _too_large(self, scope: dict, send: Any) -> None:
        await self._refuse(scope, send, 413, {"error": f"request body too large: at most {self.max_body} bytes",
                                              "field": "body"}, close=True)

    async def _refuse(self, scope: dict, send: Any, status: int, content: dict, close: bool,
                      headers: list | None = None) -> None:
        """An answer before the body was read whole: with `close`, the connection is closed after it (what
        is left of the body is never read)."""
        import json

        body = json.dumps(content).encode()
        head = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                *(headers or []), *([(b"connection", b"close")] if close else [])]
        self.count(scope["path"], status)
        await send({"type": "http.response.start", "status": status, "headers": head})
        await send({"type": "http.response.body", "body": body})


class HeadDeadline:
    """A deadline for request headers, mixed into one of uvicorn's HTTP protocols (h11 or httptools): a
    connection that has not sent a whole request head within `header_timeout` seconds of opening, or of
    its previous response, is closed (uvicorn has none: a client that sends half a request line holds its
    connection forever)."""

    header_timeout = HEADER_TIMEOUT
    cycle: Any
    loop: Any
    transport: Any

    def connection_made(self, transport: Any) -> None:
        super().connection_made(transport)  # type: ignore[misc]
        self._head_timer: Any = None
        self._arm()

    def _arm(self) -> None:
        self._disarm()
        self._waiting = self.cycle
        self._head_timer = self.loop.call_later(self.header_timeout, self._head_expired)

    def _disarm(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_expired(self) -> None:
        self._head_timer = None
        idle = self.cycle is None or self.cycle.response_complete  # no request whose head is in
        if self.cycle is self._waiting and idle and not self.transport.is_closing():
            self.transport.close()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)  # type: ignore[misc]
        if self._head_timer is not None and self.cycle is not self._waiting:
            self._disarm()  # a new request's head is complete

    def on_response_complete(self) -> None:
        super().on_response_complete()  # type: ignore[misc]
        if not self.transport.is_closing():
            self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)  # type: ignore[misc]


class GuardHTTPProtocol(HeadDeadline, AutoHTTPProtocol):  # type: ignore[misc, valid-type]
    """The protocol `serve` runs uvicorn with: uvicorn's own (httptools if installed, else h11) with the
    header deadline; `header_timeout` from $VERIFYBENCH_GUARD_HEADER_TIMEOUT in a worker process."""

    header_timeout = float(os.environ.get(ENV_HEADER_TIMEOUT) or HEADER_TIMEOUT)


def create_app(guard: Guard | str | Path, log_dir: str | Path | None = None, max_body: int = MAX_BODY,
               token_env: str = TOKEN_ENV, allow_code: Iterable[str] = (), body_timeout: float = BODY_TIMEOUT,
               context_filter: ContextFilter | str | Path | None = None) -> Any:
    """The ASGI app. A guard (and a context filter) given by path is built in a background thread once the
    app starts, so /healthz answers at once and /readyz says when the models are loaded. `allow_code`:
    see `Guard`; the log goes to `log_dir`, else the guard file's `log.dir`, else ./guard-log
    (`served_log_dir`). `context_filter`: serves POST /v1/filter (its log: `<log_dir>/filter`, else its policy's)."""
    state: dict[str, Any] = {"guard": guard if isinstance(guard, Guard) else None, "error": None,
                             "filter": context_filter if isinstance(context_filter, ContextFilter) else None}
    metrics = _Metrics(state)

    def build() -> None:
        try:
            if state["guard"] is None:
                state["guard"] = Guard(guard, log_dir=served_log_dir(guard, log_dir),  # type: ignore[arg-type]
                                       allow_code=allow_code)
            if context_filter is not None and state["filter"] is None:
                state["filter"] = build_filter(context_filter, log_dir, allow_code)
        except Exception as e:  # noqa: BLE001 - /readyz says why the guard could not start
            state["error"] = f"{type(e).__name__}: {e}"

    from contextlib import asynccontextmanager

    @asynccontextmanager
    async def lifespan(app: Any):
        if state["guard"] is None or (context_filter is not None and state["filter"] is None):
            threading.Thread(target=build, name="guard-start", daemon=True).start()
        yield
        if state["guard"] is not None and not isinstance(guard, Guard):
            state["guard"].close()
        if state["filter"] is not None and not isinstance(context_filter, ContextFilter):
            state["filter"].close()

    app = FastAPI(title="verifybench guard", version="1",
                  description="Checks answers against a verifybench threshold policy; every decision is logged "
                              "durably before it is returned.", lifespan=lifespan)
    token = os.environ.get(token_env) or None

    def count(path: str, status: int | str) -> None:
        metrics.requests.labels(endpoint_label(path), str(status)).inc()

    def ready_guard() -> Guard:
        g = state["guard"]
        if g is None or not g.ready:
            raise HTTPException(503, detail=state["error"] or "the guard is starting (loading models)")
        return g

    def ready_filter() -> ContextFilter:
        if context_filter is None:
            raise HTTPException(404, detail="this service has no context filter (start it with serve --filter FILE)")
        f = state["filter"]
        if f is None or not f.ready:
            raise HTTPException(503, detail=state["error"] or "the context filter is starting (loading models)")
        return f

    def doc_type_label(g: Guard, doc_type: str | None) -> str:
        # A label per slice the policy knows, "other" for the rest: a client cannot grow the series without bound.
        key = doc_type or "default"
        return key if any(key in c.rows for c in g.checks) else "other"

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = exc.errors()
        # The deepest location first: for a union (a source as a string or an object) it is the member
        # the value was meant as.
        first = max(errors, key=lambda e: len(_field(e.get("loc") or ()))) if errors else {
            "loc": ("body",), "msg": "invalid request"}
        field = _field(first.get("loc") or ())
        count(request.url.path, 422)
        return JSONResponse(status_code=422, content={
            "error": f"{field}: {first.get('msg')}", "field": field,
            "errors": [{"field": _field(e.get("loc") or ()), "message": e.get("msg")} for e in errors[:20]]})

    @app.exception_handler(StarletteHTTPException)  # FastAPI's and the router's own (404, 405)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        count(request.url.path, exc.status_code)
        return JSONResponse(status_code=exc.status_code, content={"error": exc.detail},
                            headers=getattr(exc, "headers", None))

    @app.exception_handler(LogError)
    async def log_failed(request: Request, exc: LogError) -> JSONResponse:
        # Fail closed (log.fail_open: false): no decision leaves without its record.
        count(request.url.path, 503)
        return JSONResponse(status_code=503, headers={"retry-after": "1"}, content={
            "error": f"the decision log cannot be written ({exc.reason}); the decision is withheld, as "
                     "log.fail_open: false asks", "reason": "decision log"})

    @app.post("/v1/check", response_model=Decision)
    async def check(body: CheckRequest, request: Request) -> Response:
        _unloggable([body])
        g = ready_guard()
        with request_context(g, request.headers):  # a W3C traceparent parents the decision's events
            d, durable = await g.adecide(**body.arguments())
        content = d.model_dump_json()  # while the log writer syncs the record: off the critical path
        if durable is not None and g.log is not None:
            await g.log.acommitted(durable)  # on disk before the response leaves; LogError: 503 (fail closed)
        metrics.observe(d, doc_type_label(g, body.doc_type))
        count("/v1/check", 200)
        return Response(content, media_type="application/json")

    @app.post("/v1/check/batch", response_model=BatchResponse)
    async def check_batch(body: BatchRequest, request: Request) -> BatchResponse:
        _unloggable(body.items, ("items",))
        g = ready_guard()
        # One verifier call per check for the whole batch, as a run scores it, its records in the items'
        # order; in a thread (which carries the request's trace context), so the event loop serves other
        # requests meanwhile. LogError: 503.
        with request_context(g, request.headers):
            decisions = await asyncio.to_thread(g.check_many, [item.arguments() for item in body.items])
        for item, d in zip(body.items, decisions):
            metrics.observe(d, doc_type_label(g, item.doc_type))
        count("/v1/check/batch", 200)
        return BatchResponse(decisions=decisions)

    @app.post("/v1/filter", response_model=FilterResult)
    async def filter_units(body: FilterRequest) -> Response:
        f = ready_filter()
        try:  # every unit's record is on disk before the answer leaves (LogError: 503, fail closed)
            result = await asyncio.to_thread(f.decide, body)
        except FilterError as e:
            count("/v1/filter", 502)
            return JSONResponse(status_code=502, content={"error": str(e)})
        count("/v1/filter", 200)
        return Response(result.model_dump_json(), media_type="application/json")

    @app.get("/v1/filter/escalations", response_model=FilterEscalations)
    async def filter_escalations(max: int = 100) -> FilterEscalations:
        f = ready_filter()
        out: list[UnitOutcome] = []
        while len(out) < max and not f.escalations.empty():
            out.append(f.escalations.get_nowait())
        return FilterEscalations(units=out)

    @app.get("/v1/escalations", response_model=BatchResponse)
    async def escalations(request: Request, max: int = 100) -> BatchResponse:
        g = ready_guard()
        out: list[Decision] = []
        while len(out) < max and not g.escalations.empty():
            out.append(g.escalations.get_nowait())
        return BatchResponse(decisions=out)

    @app.get("/healthz")
    async def healthz() -> dict:
        return {"status": "ok"}

    @app.get("/readyz")
    async def readyz(request: Request) -> Response:
        g = state["guard"]
        why = state["error"] if g is None or not g.ready else (
            None if g.log is None or g.log.ready else f"the decision log cannot be written: {g.log.error or 'stuck'}")
        if why is None and context_filter is not None and (state["filter"] is None or not state["filter"].ready):
            why = "the context filter is starting (loading models)"
        ready = g is not None and g.ready and why is None
        status = 200 if ready else 503
        if token is None or not bearer_ok(request.scope.get("headers") or [], token):
            return JSONResponse(status_code=status, content={"ready": ready})  # a stranger learns only this
        if not ready or g is None:
            return JSONResponse(status_code=status, content={"ready": False, "error": why})
        return JSONResponse({"ready": True, "guard_hash": g.hash, "policy_hash": g.policy_hash,
                             "checks": [c.id for c in g.checks], "pid": os.getpid(), "threads": current_threads(),
                             "log": None if g.log is None else str(g.log.path), "guard": g.describe(),
                             **({"filter": state["filter"].describe()} if state["filter"] is not None else {})})

    @app.get("/metrics")
    async def prometheus(request: Request) -> Response:
        from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

        return PlainTextResponse(generate_latest(metrics.registry), media_type=CONTENT_TYPE_LATEST)

    app.state.guard_state = state
    return _Gate(app, token, max_body, body_timeout, count)


def app_from_env() -> Any:
    """The app for `uvicorn --factory verifybench.guard.service:app_from_env` and for each of
    `verifybench serve --workers N`'s workers: the guard file from $VERIFYBENCH_GUARD, the log folder
    from $VERIFYBENCH_GUARD_LOG_DIR. Each worker builds its own guard and writes its own log files."""
    path = os.environ.get(ENV_PATH)
    if not path:
        raise RuntimeError(f"set {ENV_PATH} to a guard or policy file")
    return create_app(path, log_dir=os.environ.get(ENV_LOG) or None,
                      context_filter=os.environ.get(ENV_FILTER) or None,
                      max_body=int(os.environ.get(ENV_MAX_BODY) or MAX_BODY),
                      token_env=os.environ.get(ENV_TOKEN_ENV) or TOKEN_ENV,
                      allow_code=json.loads(os.environ.get(ENV_ALLOW_CODE) or "[]"),
                      body_timeout=float(os.environ.get(ENV_BODY_TIMEOUT) or BODY_TIMEOUT))


SERVED_FILTER_LOG_DIR = "filter-log"


def served_filter_log_dir(policy: str | Path, log_dir: str | Path | None) -> str | Path | Literal[False]:
    """Where a served context filter logs: `<log_dir>/filter` beside the guard's when the service is given
    a log folder, else its policy's `log.dir` (false where it says null), else ./filter-log. A filter in
    Python logs only where it is told to (`ContextFilter(log_dir=...)` or `log.dir`)."""
    if log_dir is not None:
        return Path(log_dir) / "filter"
    spec, _ = read_filter_policy(policy)
    if "dir" in spec.log.model_fields_set:
        return spec.log.dir or False
    return SERVED_FILTER_LOG_DIR


def build_filter(policy: ContextFilter | str | Path, log_dir: str | Path | None, allow_code: Iterable[str]
                 ) -> ContextFilter:
    """The served context filter, logging where `served_filter_log_dir` says."""
    if isinstance(policy, ContextFilter):
        return policy
    return ContextFilter(policy, log_dir=served_filter_log_dir(policy, log_dir), allow_code=allow_code)


def _say(line: str) -> None:
    try:
        print(f"verifybench serve: {line}", file=sys.stderr, flush=True)
    except OSError:  # stderr on a full disk, or past a file-size limit: stopping must not depend on it
        pass


def _started(host: str, port: int, workers: int, log: str, token_env: str, filter_log: str | None = None) -> None:
    where = f"http://{host}:{port} ({workers} worker{'s' if workers > 1 else ''})"
    if filter_log is not None:
        log += f"; context filter log: {filter_log}"
    if os.environ.get(token_env):
        _say(f"listening on {where}; bearer token required (${token_env}); decision log: {log}")
    else:
        _say(f"listening on {where}; UNAUTHENTICATED: ${token_env} is not set, so anyone who can reach this "
             f"address can check answers and read /metrics; decision log: {log}")


def serve(path: str | Path, host: str = "127.0.0.1", port: int = 8080, log_dir: str | Path | None = None,
          workers: int = 1, max_body: int = MAX_BODY, token_env: str = TOKEN_ENV, ray: bool = False,
          replicas: int = 1, ray_address: str | None = None, access_log: bool = False, threads: int = THREADS,
          header_timeout: float = HEADER_TIMEOUT, body_timeout: float = BODY_TIMEOUT,
          allow_code: Iterable[str] = (), context_filter: str | Path | None = None) -> None:
    """Run the service on uvicorn until SIGINT or SIGTERM. With one worker the guard is built (models
    loaded, config hashes checked) before the port opens, so a bad guard stops the command with its
    reason; with several, each worker builds its own (and /readyz says when it is ready, or why not).
    With `ray`, the same app as a Ray Serve deployment of `replicas` replicas (`verifybench.guard.ray_serve`).
    `access_log`: uvicorn's line per request (off by default: the decision log is the record, and the
    access log costs every request a formatted line on stderr). `threads`: torch's and BLAS's threads
    per worker (`verifybench.executors.threads`). On SIGTERM requests in flight get `DRAIN_S` seconds
    to finish; then the guard closes (its log writer gets 2 s) and the process ends. `allow_code`: see
    `Guard`. `context_filter`: a filter policy file, served at POST /v1/filter."""
    from verifybench.executors.threads import set_threads
    from verifybench.guard.load import read_guard
    from verifybench.guard.spec import GuardError

    allow_code = list(allow_code)

    set_threads(threads)  # before any model loads; workers and replicas inherit it through the environment
    main = threading.current_thread() is threading.main_thread()  # only there can signals be handled
    if main:  # a file-size limit (ulimit -f) is then an error the decision log reports, not a kill
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    if ray:
        if workers > 1:
            raise GuardError("--workers is uvicorn's; on Ray Serve use --replicas")
        if context_filter is not None:
            raise GuardError("--filter runs on uvicorn; it is not deployed on Ray Serve")
        from verifybench.guard.ray_serve import run

        run(path, host=host, port=port, log_dir=log_dir, replicas=replicas, address=ray_address,
            max_body=max_body, token_env=token_env, allow_code=allow_code)
        return
    if replicas > 1 or ray_address is not None:
        raise GuardError("--replicas and --ray-address need --ray")
    import uvicorn

    GuardHTTPProtocol.header_timeout = header_timeout
    os.environ[ENV_HEADER_TIMEOUT] = str(header_timeout)  # for the workers' copy of the class
    # uvicorn writes its access lines at INFO: at "warning" an access log asked for would print nothing.
    options: dict[str, Any] = {"host": host, "port": port, "access_log": access_log,
                               "log_level": "info" if access_log else "warning",
                               "http": "verifybench.guard.service:GuardHTTPProtocol",
                               "timeout_graceful_shutdown": DRAIN_S}
    # uvicorn raises the signal again once it has stopped: caught here, SIGTERM ends `uvicorn.run` with a
    # return instead of killing the process, so the guard is closed and the stop is said.
    previous = signal.signal(signal.SIGTERM, lambda *_: None) if main else None
    if workers <= 1:
        guard = Guard(path, log_dir=served_log_dir(path, log_dir), allow_code=allow_code)
        log = "none" if guard.log is None else str(guard.log.path)
        cf = None if context_filter is None else build_filter(context_filter, log_dir, allow_code)
        try:
            _started(host, port, 1, log, token_env,
                     None if cf is None else "none" if cf.log is None else str(cf.log.path))
            uvicorn.run(create_app(guard, max_body=max_body, token_env=token_env, body_timeout=body_timeout,
                                   context_filter=cf), **options)
        finally:
            if main:
                signal.signal(signal.SIGTERM, previous)
            guard.close()
            if cf is not None:
                cf.close()
            _say(f"stopped (http://{host}:{port}; {0 if guard.log is None else guard.log.written} decision(s) logged"
                 f"{'' if guard.log is None or not guard.log.lost else f', {guard.log.lost} lost'})")
            _leave_stuck_checks()
        return
    read_guard(path, allow_code)  # a bad file stops the command here, not in each worker
    os.environ[ENV_PATH] = str(Path(path).resolve())
    folder = served_log_dir(path, log_dir)
    if folder is not False:  # (false: the file says `dir: null`, which each worker reads itself)
        os.environ[ENV_LOG] = str(Path(folder).resolve())
    os.environ[ENV_MAX_BODY] = str(max_body)
    os.environ[ENV_TOKEN_ENV] = token_env
    os.environ[ENV_ALLOW_CODE] = json.dumps(allow_code)
    os.environ[ENV_BODY_TIMEOUT] = str(body_timeout)
    if context_filter is not None:
        os.environ[ENV_FILTER] = str(Path(context_filter).resolve())
    filter_log = None
    if context_filter is not None:  # each worker's filter logs beside its guard's log (`app_from_env`)
        where = served_filter_log_dir(context_filter, None if folder is False else Path(folder).resolve())
        filter_log = "none" if where is False else f"{Path(where).resolve()}/ (a file per worker)"
    _started(host, port, workers, "none" if folder is False else f"{Path(folder).resolve()}/ (a file per worker)",
             token_env, filter_log)
    try:
        uvicorn.run("verifybench.guard.service:app_from_env", factory=True, workers=workers, **options)
    finally:
        if main:
            signal.signal(signal.SIGTERM, previous)
        _say(f"stopped (http://{host}:{port})")


def _leave_stuck_checks(grace: float = 1.0) -> None:
    """After the drain and the guard's close, a check still running (a verifier call Python cannot
    interrupt: a hung model or backend) would keep the process alive, since the interpreter joins the
    guard's worker threads (`guard-check-*`) at exit. They get `grace` seconds; then the process ends
    without them."""
    import time

    deadline = time.monotonic() + grace
    checks = [t for t in threading.enumerate() if t.name.startswith("guard-check") and not t.daemon]
    for t in checks:
        t.join(max(0.0, deadline - time.monotonic()))
    stuck = [t.name for t in checks if t.is_alive()]
    if stuck:
        _say(f"{len(stuck)} check(s) still running were left behind ({', '.join(stuck[:4])})")
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)
