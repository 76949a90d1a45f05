"""Recorded TypeSafe traffic at the HTTP layer, so tests and CI run the real SDK without the service.

A cassette is one JSON file per interaction:

```json
{"request": {"method": "POST", "path": "/v1/systemone", "body": {...the exact JSON the SDK sends...}},
 "response": {"status": 200, "headers": {"x-typesafe-request-id": "..."}, "body": {...API JSON...}}}
```

`ReplayTransport` (an `httpx2.BaseTransport`, handed to `TypeSafeClient(transport=...)`) answers a request
from the cassette whose method, path and JSON body equal the request's; anything else is a `ReplayMiss`,
never a network call (`ReplayMiss` is the LLM layer's: one meaning, a request nothing recorded
answers). `RecordingTransport` wraps a real transport and writes cassettes; credentials (Authorization
and the other secret headers) are never written: only the body and a few response headers are kept,
and the cassette's text is scrubbed of any key a server echoed in a body.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from urllib.parse import urlsplit

import httpx2

from verifybench.verifiers.llm import ReplayMiss, scrub

__all__ = ["RecordingTransport", "ReplayMiss", "ReplayTransport", "cassette_key"]

KEPT_RESPONSE_HEADERS = ("content-type", "x-typesafe-request-id", "retry-after", "retry-after-ms")


def canonical(body: object) -> str:
    return json.dumps(body, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def request_body(request: httpx2.Request) -> object:
    content = request.read()
    if request.headers.get("content-encoding") == "zstd":
        try:
            from backports.zstd import decompress
        except ImportError:  # Python 3.14 has it in the standard library
            from compression.zstd import decompress
        content = decompress(content)
    return json.loads(content) if content else None


def cassette_key(method: str, path: str, body: object) -> str:
    return hashlib.sha256(f"{method} {path} {canonical(body)}".encode()).hexdigest()


class ReplayTransport(httpx2.BaseTransport):
    def __init__(self, directory: str | Path):
        self.directory = Path(directory)
        if not self.directory.is_dir():
            raise FileNotFoundError(f"{self.directory}: no such cassette folder")
        self._index: dict[str, dict] = {}
        for file in sorted(self.directory.glob("*.json")):
            try:
                tape = json.loads(file.read_text(encoding="utf-8"))
                req = tape["request"]
                key = cassette_key(req["method"], req["path"], req.get("body"))
            except (json.JSONDecodeError, KeyError, TypeError) as e:
                raise ValueError(f"{file}: not a cassette ({type(e).__name__}: {e})") from None
            self._index[key] = {**tape, "file": file.name}
        self.requests: list[dict] = []  # what was asked, for tests: method, path, auth present, cassette used

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        path = urlsplit(str(request.url)).path
        body = request_body(request)
        tape = self._index.get(cassette_key(request.method, path, body))
        self.requests.append({"method": request.method, "path": path,
                              "authorized": request.headers.get("authorization", "").startswith("Bearer "),
                              "cassette": tape["file"] if tape else None})
        if tape is None:
            raise ReplayMiss(f"no cassette in {self.directory} for {request.method} {path} with this body "
                             f"(key {cassette_key(request.method, path, body)[:12]}); replay-only, nothing was sent")
        resp = tape["response"]
        raw = resp.get("raw")  # a body that is not JSON, kept verbatim
        content = raw.encode() if isinstance(raw, str) else json.dumps(resp.get("body")).encode()
        headers = {"content-type": "application/json", **resp.get("headers", {})}
        return httpx2.Response(resp["status"], headers=headers, content=content, request=request)


class RecordingTransport(httpx2.BaseTransport):
    """Send through `inner` (a real transport) and write each interaction as a scrubbed cassette."""

    def __init__(self, directory: str | Path, inner: httpx2.BaseTransport | None = None):
        self.directory = Path(directory)
        self.inner = inner or httpx2.HTTPTransport()
        self.next_name: str | None = None  # the next cassette's file stem; default: a hash of the request

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        body = request_body(request)
        response = self.inner.handle_request(request)
        response.read()
        path = urlsplit(str(request.url)).path
        try:
            resp_body, raw = json.loads(response.content), None
        except ValueError:
            resp_body, raw = None, response.content.decode("utf-8", errors="replace")
        tape = {"request": {"method": request.method, "path": path, "body": body},
                "response": {"status": response.status_code,
                             "headers": {k: v for k, v in response.headers.items() if k.lower() in KEPT_RESPONSE_HEADERS},
                             **({"raw": raw} if raw is not None else {"body": resp_body})}}
        self.directory.mkdir(parents=True, exist_ok=True)
        name = self.next_name or cassette_key(request.method, path, body)[:16]
        text = scrub(json.dumps(tape, indent=1, ensure_ascii=False))
        (self.directory / f"{name}.json").write_text(text + "\n", encoding="utf-8")
        return response
