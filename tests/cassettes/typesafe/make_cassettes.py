"""Write the TypeSafe cassettes of this folder by running the real SDK against an in-process responder.

    python tests/cassettes/typesafe/make_cassettes.py          # authored answers (scenarios.py)
    TYPESAFE_API_KEY=... python tests/cassettes/typesafe/make_cassettes.py --live   # record the service

The request side is whatever `TypeSafeClient.system_one` puts on the wire; `RecordingTransport` keeps
the method, path and JSON body and drops every credential header.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import httpx2

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))

import scenarios  # noqa: E402

from verifybench.verifiers.decision.backends import TypeSafeBackend  # noqa: E402
from verifybench.verifiers.decision.cassettes import RecordingTransport  # noqa: E402
from verifybench.verifiers.decision.units import split_units  # noqa: E402


def main(live: bool = False) -> None:
    for old in HERE.glob("*.json"):
        old.unlink()
    for name, case in scenarios.cases().items():
        def respond(request: httpx2.Request, name=name) -> httpx2.Response:
            status, body = scenarios.response_for(name)
            return httpx2.Response(status, json=body, headers={"x-typesafe-request-id": f"req-{name}"})

        inner = None if live else httpx2.MockTransport(respond)
        backend = TypeSafeBackend(retries=0)
        from typesafe_sdk import RetryPolicy, TypeSafeClient

        recorder = RecordingTransport(HERE, inner)
        recorder.next_name = name
        key = os.environ["TYPESAFE_API_KEY"] if live else "sk-not-a-real-key"
        backend._client = TypeSafeClient(api_key=key, model=backend.model, retry=RetryPolicy(max_retries=0),
                                         transport=recorder)
        units = split_units(case)
        result = backend.answer_batch([(case, units)])[0]
        print(name, "->", type(result).__name__)
    for f in sorted(HERE.glob("*.json")):
        tape = json.loads(f.read_text())
        assert "sk-not-a-real-key" not in f.read_text() and "Bearer" not in f.read_text(), f"credential in {f}"
        print(f.name, tape["request"]["path"], tape["response"]["status"])


if __name__ == "__main__":
    main(live="--live" in sys.argv)
