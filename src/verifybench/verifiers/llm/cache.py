"""A content-addressed cache of completions (the replay cache), for determinism and for CI without
paid calls.

The key is a sha256 over (backend kind, model, messages, sampling parameters, sample index): the same
request always maps to the same file, and nothing secret is part of it. With replay-only, a miss is an
error (`ReplayMiss`) for that case instead of a call. The key's recipe is the one the judge has always
used, so caches written before the LLM layer existed still replay."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from verifybench._util.safeio import write_text_atomic
from verifybench.verifiers.llm.providers import Completion


def request_key(kind: str, model: str, messages: list[dict], params: dict[str, Any], sample: int) -> str:
    blob = json.dumps({"backend": kind, "model": model, "messages": messages, "params": params, "sample": sample},
                      sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class CompletionCache:
    """One file per completion under `directory` (None: no cache), written atomically."""

    def __init__(self, directory: str | Path | None):
        self.directory = Path(directory).expanduser() if directory else None

    def _path(self, key: str) -> Path:
        assert self.directory is not None  # every caller checks that there is a cache first
        return self.directory / key[:2] / f"{key}.json"

    def get(self, key: str) -> Completion | None:
        if self.directory is None:
            return None
        try:
            return Completion.from_dict(json.loads(self._path(key).read_text(encoding="utf-8")))
        except FileNotFoundError:
            return None
        except (ValueError, KeyError, TypeError):
            return None  # an entry damaged by hand is a miss: asked again and rewritten

    def put(self, key: str, completion: Completion) -> None:
        if self.directory is None:
            return
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        # A temporary name of this writer's own (pid, thread, random: a cache on a shared disk has writers on
        # several hosts), then a rename: a reader sees a whole entry or none.
        write_text_atomic(path, json.dumps(completion.to_dict(), ensure_ascii=False))
