"""A scripted OpenAI-compatible chat server on 127.0.0.1, for the judge's failure paths: it answers
each request with the next scripted reply (an HTTP status, garbage, or a JSON verdict with
log-probabilities) and records what it was sent."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


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
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.requests.append(body)
                outer.headers.append({k.lower(): v for k, v in self.headers.items()})
                step = outer.script.pop(0) if outer.script else outer.default
                if isinstance(step, int):
                    self.send_response(step)
                    self.send_header("Content-Type", "application/json")
                    self.end_headers()
                    self.wfile.write(json.dumps({"error": {"message": f"status {step}"}}).encode())
                    return
                if isinstance(step, tuple):  # (hallucinated, p_true)
                    text, content = verdict_tokens(*step)
                else:  # raw text (garbage or a verdict without logprobs)
                    text, content = step, None
                reply = {"id": "x", "object": "chat.completion", "created": 0, "model": body["model"],
                         "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                                      "logprobs": {"content": content} if content else None, "finish_reason": "stop"}],
                         "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}}
                data = json.dumps(reply).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
