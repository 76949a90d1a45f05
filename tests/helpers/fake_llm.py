"""A scripted chat server on 127.0.0.1 that speaks the OpenAI format (POST .../chat/completions) and
Anthropic's (POST .../v1/messages), for the failure paths of the LLM layer: it answers each request
with the next scripted step and records what it was sent (bodies and headers).

Steps:
- `(hallucinated, p_true)`: a judge verdict with log-probabilities (OpenAI format);
- a string: that reply text;
- an int: that HTTP status with a JSON error body;
- `Raw(status, body, content_type, headers)`: exactly these bytes (a proxy's HTML page under a 200, a
  429 with Retry-After, ...);
- `Echo(status)`: an error whose body echoes every request header, as some proxies and debug servers
  do (this is how an API key ends up in an error message);
- `Stall(seconds)`: no answer for that long (a timeout); `Drop()`: the connection closed unanswered;
- a function: called with the request's body and headers, it returns the reply text (or any other step).
"""

from __future__ import annotations

import json
import socket
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Raw:
    status: int
    body: str
    content_type: str = "application/json"
    headers: dict | None = None


@dataclass
class Echo:
    status: int = 400


@dataclass
class Stall:
    """Answer nothing for `seconds` (longer than the client's timeout), then close."""

    seconds: float


@dataclass
class Drop:
    """Close the connection without a response."""


def verdict_tokens(hallucinated: bool, p_true: float, probability: float = 0.5) -> tuple[str, list[dict]]:
    """The reply text and its logprobs, the decision token carrying `p_true` vs false."""
    import math

    value = "true" if hallucinated else "false"
    pieces = ['{"', 'hall', 'ucinated', '":', ' ' + value, f', "probability": {probability}, "claim": "", "reason": "x"}}']
    top = [{"token": " true", "logprob": math.log(p_true), "bytes": None},
           {"token": " false", "logprob": math.log(1 - p_true), "bytes": None}]
    content = [{"token": t, "logprob": -0.01, "bytes": None, "top_logprobs": top if t.strip() in ("true", "false") else []}
               for t in pieces]
    return "".join(pieces), content


class FakeLLM:
    def __init__(self, script: list, default=(False, 0.2)):
        self.script = list(script)
        self.default = default
        self.requests: list[dict] = []
        self.headers: list[dict] = []
        self.paths: list[str] = []
        lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def send(self, status: int, data: bytes, content_type: str = "application/json", headers=None):
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self):
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                try:
                    body = json.loads(raw)
                except ValueError:  # e.g. a zstd-compressed body (TypeSafe's SDK): only its headers matter here
                    body = {"undecoded_bytes": len(raw)}
                with lock:
                    outer.requests.append(body)
                    outer.headers.append({k.lower(): v for k, v in self.headers.items()})
                    outer.paths.append(self.path)
                    step = outer.script.pop(0) if outer.script else outer.default
                if callable(step):
                    step = step(body, {k.lower(): v for k, v in self.headers.items()})
                if isinstance(step, int):
                    return self.send(step, json.dumps({"error": {"message": f"status {step}"}}).encode())
                if isinstance(step, Stall):
                    time.sleep(step.seconds)
                    self.close_connection = True
                    return None
                if isinstance(step, Drop):
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return None
                if isinstance(step, Raw):
                    return self.send(step.status, step.body.encode(), step.content_type, step.headers)
                if isinstance(step, Echo):
                    # The message quotes the headers, so every client library shows them in its error text.
                    seen = dict(self.headers.items())
                    return self.send(step.status, json.dumps({"error": {
                        "message": f"invalid request; headers received: {seen}", "type": "invalid_request_error"},
                        "headers": seen}).encode())
                if isinstance(step, tuple):  # (hallucinated, p_true)
                    text, content = verdict_tokens(*step)
                else:  # raw text (garbage or a verdict without logprobs)
                    text, content = step, None
                if self.path.rstrip("/").endswith("/messages"):  # Anthropic's Messages API
                    reply = {"id": "msg_x", "type": "message", "role": "assistant", "model": body.get("model", "?"),
                             "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
                             "stop_sequence": None, "usage": {"input_tokens": 100, "output_tokens": 20}}
                else:
                    reply = {"id": "x", "object": "chat.completion", "created": 0, "model": body.get("model", "?"),
                             "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                                          "logprobs": {"content": content} if content else None,
                                          "finish_reason": "stop"}],
                             "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}}
                self.send(200, json.dumps(reply).encode())

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.root_url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.base_url = f"{self.root_url}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()
