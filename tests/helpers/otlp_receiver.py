"""A real OTLP/HTTP receiver on 127.0.0.1: it accepts what the SDK's OTLP/HTTP exporters POST to /v1/logs
and /v1/traces (protobuf, gzip or not), decodes it with opentelemetry-proto, and keeps the records."""

from __future__ import annotations

import gzip
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsServiceRequest,
    ExportLogsServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue


def any_value(v: AnyValue) -> Any:
    kind = v.WhichOneof("value")
    if kind == "array_value":
        return [any_value(x) for x in v.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: any_value(kv.value) for kv in v.kvlist_value.values}
    return None if kind is None else getattr(v, kind)


class Receiver:
    """`with Receiver() as r:` ... `r.events(n)` waits for n log records and returns them as dicts:
    event_name, attributes, trace_id / span_id (hex, "" when none), resource attributes."""

    def __init__(self) -> None:
        self.records: list[dict[str, Any]] = []
        self.requests = 0
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - the http.server API
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                if self.headers.get("content-encoding") == "gzip":
                    body = gzip.decompress(body)
                if self.path != "/v1/logs":
                    self.send_response(404)
                    self.end_headers()
                    return
                receiver._take(ExportLogsServiceRequest.FromString(body))
                out = ExportLogsServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("content-type", "application/x-protobuf")
                self.send_header("content-length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.endpoint = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def _take(self, req: ExportLogsServiceRequest) -> None:
        with self._lock:
            self.requests += 1
            for rl in req.resource_logs:
                resource = {kv.key: any_value(kv.value) for kv in rl.resource.attributes}
                for sl in rl.scope_logs:
                    for r in sl.log_records:
                        self.records.append({
                            "event_name": r.event_name, "trace_id": r.trace_id.hex(), "span_id": r.span_id.hex(),
                            "attributes": {kv.key: any_value(kv.value) for kv in r.attributes},
                            "resource": resource, "scope": sl.scope.name})

    def events(self, n: int, timeout: float = 20.0) -> list[dict[str, Any]]:
        deadline = time.time() + timeout
        while time.time() < deadline:
            with self._lock:
                if len(self.records) >= n:
                    return list(self.records)
            time.sleep(0.02)
        with self._lock:
            return list(self.records)

    def __enter__(self) -> Receiver:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()
