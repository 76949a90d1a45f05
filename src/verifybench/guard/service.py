"""`verifybench serve`: a guard behind HTTP, on FastAPI and uvicorn (the `serve` extra).

FastAPI (imported by this module only: the rest of the package never needs it), because the request
and the decision are already pydantic models: the same models validate the body (a 4xx names the
field), document it in the OpenAPI schema (/openapi.json, /docs) and serialise the answer; it runs on
uvicorn like any ASGI app, and Ray Serve deploys a FastAPI app as it is (docs/rollout.md).

Endpoints: POST /v1/check, POST /v1/check/batch, GET /v1/escalations (drains the escalation queue),
GET /healthz (the process answers), GET /readyz (200 once the guard is built and its models are
loaded, 503 before), GET /metrics (Prometheus text). A body above `max_body` bytes is refused with 413
before it is parsed. With the environment variable named by `token_env` set (default
VERIFYBENCH_GUARD_TOKEN), /v1/* and /metrics need `Authorization: Bearer <token>`; the token is never
logged or returned.
"""

from __future__ import annotations

import hmac
import os
import threading
from pathlib import Path
from typing import Any

from fastapi import FastAPI, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from pydantic import BaseModel, ConfigDict, Field

from verifybench.guard.core import Decision, Guard
from verifybench.guard.telemetry import request_context

TOKEN_ENV = "VERIFYBENCH_GUARD_TOKEN"
MAX_BODY = 1 << 20  # 1 MiB
MAX_BATCH = 256
ENV_PATH, ENV_LOG, ENV_MAX_BODY, ENV_TOKEN_ENV = ("VERIFYBENCH_GUARD", "VERIFYBENCH_GUARD_LOG_DIR",
                                                  "VERIFYBENCH_GUARD_MAX_BODY", "VERIFYBENCH_GUARD_TOKEN_ENV")


class SourceIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str | None = None
    text: str


class CheckRequest(BaseModel):
    """One answer to check."""

    model_config = ConfigDict(extra="forbid")

    response: str = Field(description="the answer to check")
    sources: list[str | SourceIn] = Field(description="the grounding texts: strings or {id, text}")
    question: str | None = None
    doc_type: str | None = Field(None, max_length=200, description="picks the policy slice's threshold")
    meta: dict[str, Any] | None = None
    request_id: str | None = Field(None, max_length=200, description="your own request or ticket id, kept in the log")

    def arguments(self) -> dict[str, Any]:
        return {"response": self.response,
                "sources": [s if isinstance(s, str) else s.model_dump(exclude_none=True) for s in self.sources],
                "question": self.question, "doc_type": self.doc_type, "meta": self.meta, "request_id": self.request_id}


class BatchRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    items: list[CheckRequest] = Field(max_length=MAX_BATCH)


class BatchResponse(BaseModel):
    decisions: list[Decision]


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


class _Metrics:
    def __init__(self) -> None:
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


class _BodyLimit:
    """Pure ASGI middleware: a body above `limit` bytes gets 413 before anything parses it."""

    def __init__(self, app: Any, limit: int):
        self.app, self.limit = app, limit

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope.get("method") not in ("POST", "PUT", "PATCH"):
            await self.app(scope, receive, send)
            return
        for k, v in scope.get("headers") or []:
            if k == b"content-length" and v.isdigit() and int(v) > self.limit:
                await self._refuse(send)
                return
        chunks, size, more = [], 0, True
        while more:
            message = await receive()
            if message["type"] != "http.request":
                break
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.limit:
                await self._refuse(send)
                return
            chunks.append(chunk)
            more = message.get("more_body", False)
        body = b"".join(chunks)
        sent = False

        async def replay() -> dict:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    async def _refuse(self, send: Any) -> None:
        body = (b'{"error": "request body too large: at most %d bytes", "field": "body"}' % self.limit)
        await send({"type": "http.response.start", "status": 413,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})


def create_app(guard: Guard | str | Path, log_dir: str | Path | None = None, max_body: int = MAX_BODY,
               token_env: str = TOKEN_ENV) -> Any:
    """The ASGI app. A guard given by path is built in a background thread once the app starts, so
    /healthz answers at once and /readyz says when the models are loaded."""
    state: dict[str, Any] = {"guard": guard if isinstance(guard, Guard) else None, "error": None}
    metrics = _Metrics()

    def build() -> None:
        try:
            state["guard"] = Guard(guard, log_dir=log_dir)  # type: ignore[arg-type]
        except Exception as e:  # noqa: BLE001 - /readyz says why the guard could not start
            state["error"] = f"{type(e).__name__}: {e}"

    from contextlib import asynccontextmanager

    @asynccontextmanager
    async def lifespan(app: Any):
        if state["guard"] is None:
            threading.Thread(target=build, name="guard-start", daemon=True).start()
        yield
        if state["guard"] is not None and not isinstance(guard, Guard):
            state["guard"].close()

    app = FastAPI(title="verifybench guard", version="1",
                  description="Checks answers against a verifybench threshold policy; every decision is logged "
                              "durably before it is returned.", lifespan=lifespan)
    token = os.environ.get(token_env) or None

    def authorise(request: Request) -> None:
        if token is None:
            return
        given = request.headers.get("authorization", "")
        if not (given.startswith("Bearer ") and hmac.compare_digest(given[7:].encode(), token.encode())):
            raise HTTPException(401, detail="missing or wrong bearer token", headers={"WWW-Authenticate": "Bearer"})

    def ready_guard() -> Guard:
        g = state["guard"]
        if g is None or not g.ready:
            raise HTTPException(503, detail=state["error"] or "the guard is starting (loading models)")
        return g

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
        metrics.requests.labels(request.url.path, "422").inc()
        return JSONResponse(status_code=422, content={
            "error": f"{field}: {first.get('msg')}", "field": field,
            "errors": [{"field": _field(e.get("loc") or ()), "message": e.get("msg")} for e in errors[:20]]})

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, exc: HTTPException) -> JSONResponse:
        metrics.requests.labels(request.url.path, str(exc.status_code)).inc()
        return JSONResponse(status_code=exc.status_code, content={"error": exc.detail},
                            headers=getattr(exc, "headers", None))

    @app.post("/v1/check", response_model=Decision)
    async def check(body: CheckRequest, request: Request) -> Response:
        authorise(request)
        g = ready_guard()
        with request_context(g, request.headers):  # a W3C traceparent parents the decision's events
            d, durable = await g.adecide(**body.arguments())
        content = d.model_dump_json()  # while the log writer syncs the record: off the critical path
        if durable is not None:
            await durable  # the decision is on disk before its response leaves (and before it is counted)
        metrics.observe(d, doc_type_label(g, body.doc_type))
        metrics.requests.labels("/v1/check", "200").inc()
        return Response(content, media_type="application/json")

    @app.post("/v1/check/batch", response_model=BatchResponse)
    async def check_batch(body: BatchRequest, request: Request) -> BatchResponse:
        import asyncio

        authorise(request)
        g = ready_guard()
        with request_context(g, request.headers):
            decisions = await asyncio.gather(*(g.acheck(**item.arguments()) for item in body.items))
        for item, d in zip(body.items, decisions):
            metrics.observe(d, doc_type_label(g, item.doc_type))
        metrics.requests.labels("/v1/check/batch", "200").inc()
        return BatchResponse(decisions=list(decisions))

    @app.get("/v1/escalations", response_model=BatchResponse)
    async def escalations(request: Request, max: int = 100) -> BatchResponse:
        authorise(request)
        g = ready_guard()
        out: list[Decision] = []
        while len(out) < max and not g.escalations.empty():
            out.append(g.escalations.get_nowait())
        return BatchResponse(decisions=out)

    @app.get("/healthz")
    async def healthz() -> dict:
        return {"status": "ok"}

    @app.get("/readyz")
    async def readyz() -> Response:
        g = state["guard"]
        if g is None or not g.ready:
            return JSONResponse(status_code=503, content={"ready": False, "error": state["error"]})
        return JSONResponse({"ready": True, "guard_hash": g.hash, "policy_hash": g.policy_hash,
                             "checks": [c.id for c in g.checks], "pid": os.getpid(),
                             "log": None if g.log is None else str(g.log.path), "guard": g.describe()})

    @app.get("/metrics")
    async def prometheus(request: Request) -> Response:
        from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

        authorise(request)
        return PlainTextResponse(generate_latest(metrics.registry), media_type=CONTENT_TYPE_LATEST)

    app.state.guard_state = state
    return _BodyLimit(app, max_body) if max_body else app


def app_from_env() -> Any:
    """The app for `uvicorn --factory verifybench.guard.service:app_from_env` and for each of
    `verifybench serve --workers N`'s workers: the guard file from $VERIFYBENCH_GUARD, the log folder
    from $VERIFYBENCH_GUARD_LOG_DIR. Each worker builds its own guard and writes its own log files."""
    path = os.environ.get(ENV_PATH)
    if not path:
        raise RuntimeError(f"set {ENV_PATH} to a guard or policy file")
    return create_app(path, log_dir=os.environ.get(ENV_LOG) or None,
                      max_body=int(os.environ.get(ENV_MAX_BODY) or MAX_BODY),
                      token_env=os.environ.get(ENV_TOKEN_ENV) or TOKEN_ENV)


def serve(path: str | Path, host: str = "127.0.0.1", port: int = 8080, log_dir: str | Path | None = None,
          workers: int = 1, max_body: int = MAX_BODY, token_env: str = TOKEN_ENV, ray: bool = False,
          replicas: int = 1, ray_address: str | None = None, access_log: bool = False) -> None:
    """Run the service on uvicorn until interrupted. With one worker the guard is built (models loaded,
    config hashes checked) before the port opens, so a bad guard stops the command with its reason; with
    several, each worker builds its own (and /readyz says when it is ready, or why not). With `ray`, the
    same app as a Ray Serve deployment of `replicas` replicas (`verifybench.guard.ray_serve`).
    `access_log`: uvicorn's line per request (off by default: the decision log is the record, and the
    access log costs every request a formatted line on stderr)."""
    from verifybench.guard.spec import GuardError, read_policy, read_spec

    if ray:
        if workers > 1:
            raise GuardError("--workers is uvicorn's; on Ray Serve use --replicas")
        from verifybench.guard.ray_serve import run

        run(path, host=host, port=port, log_dir=log_dir, replicas=replicas, address=ray_address,
            max_body=max_body, token_env=token_env)
        return
    if replicas > 1 or ray_address is not None:
        raise GuardError("--replicas and --ray-address need --ray")
    import uvicorn

    # uvicorn writes its access lines at INFO: at "warning" an access log asked for would print nothing.
    level = "info" if access_log else "warning"
    if workers <= 1:
        guard = Guard(path, log_dir=log_dir)
        try:
            uvicorn.run(create_app(guard, max_body=max_body, token_env=token_env), host=host, port=port,
                        access_log=access_log, log_level=level)
        finally:
            guard.close()
        return
    _, policy = read_spec(path)
    read_policy(policy)  # a bad file stops the command here, not in each worker
    os.environ[ENV_PATH] = str(Path(path).resolve())
    if log_dir is not None:
        os.environ[ENV_LOG] = str(Path(log_dir).resolve())
    os.environ[ENV_MAX_BODY] = str(max_body)
    os.environ[ENV_TOKEN_ENV] = token_env
    uvicorn.run("verifybench.guard.service:app_from_env", factory=True, host=host, port=port, workers=workers,
                access_log=access_log, log_level=level)
