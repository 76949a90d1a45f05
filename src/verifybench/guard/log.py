"""The decision log: one JSON line per check, durable before the check's response returns.

Each process writes its own files, `decisions-<pid>-<seq>.jsonl` (a new sequence number when a file
passes `max_bytes`, and at start when this pid already has files), so several workers never share a
file and a killed process leaves at most its own last line torn. One writer thread appends whatever
records are waiting, flushes, fsyncs once (a group commit for requests that arrived together), and
only then releases their callers. Records carry the case schema (id, response, sources, question,
doc_type, meta) and the decision; nothing from the request's headers (no token) is ever in them.
"""

from __future__ import annotations

import os
import queue
import threading
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from pydantic_core import to_json

from verifybench.loaders.guardlog import PATTERN, TornLines, read_log

_STOP: Any = object()

__all__ = ["DecisionLog", "TornLines", "read_log"]


class DecisionLog:
    def __init__(self, directory: str | Path, max_bytes: int = 64 << 20, fsync: bool = True):
        self.dir = Path(directory)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.max_bytes = max_bytes
        self.fsync = fsync
        # The call that puts a commit on disk. fsync, not fdatasync: on Linux fdatasync also flushes the
        # size an append changed (so it would be as durable), but measured on ext4 it was no faster for
        # appends (benchmarks/README.md, guard section): the size change needs the journal commit either way.
        self.sync = os.fsync
        self.pid = os.getpid()
        self.written = 0
        self.commits = 0
        mine = [p for p in self.dir.glob(PATTERN.replace("*", f"{self.pid}-*"))]
        seqs = [int(p.stem.rsplit("-", 1)[1]) for p in mine if p.stem.rsplit("-", 1)[1].isdigit()]
        self.seq = max(seqs, default=0) + 1
        self._open()
        self._q: queue.SimpleQueue = queue.SimpleQueue()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._loop, name="guard-log", daemon=True)
        self._thread.start()

    @property
    def path(self) -> Path:
        return self.dir / f"decisions-{self.pid}-{self.seq}.jsonl"

    def _open(self) -> None:
        self._f = open(self.path, "ab")
        self._size = self._f.tell()
        if self.fsync:  # the new file's name durable too (once per file), before any of its records is released
            fd = os.open(self.dir, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)

    def append(self, record: dict[str, Any]) -> Future:
        """Queue a record; the future is done once it is on disk (or holds the write's error)."""
        fut: Future = Future()
        self._q.put((to_json(record, fallback=str) + b"\n", fut))
        return fut

    def write(self, record: dict[str, Any]) -> None:
        """Append a record and wait until it is on disk."""
        self.append(record).result()

    def close(self) -> None:
        self._q.put(_STOP)
        self._thread.join(timeout=10)
        self._f.close()

    def _loop(self) -> None:
        while True:
            first = self._q.get()
            if first is _STOP:
                return
            items, stop = [first], False
            while True:
                try:
                    item = self._q.get_nowait()
                except queue.Empty:
                    break
                if item is _STOP:
                    stop = True
                    break
                items.append(item)
            try:
                self._f.write(b"".join(line for line, _ in items))
                self._f.flush()
                if self.fsync:
                    self.sync(self._f.fileno())
                self._size += sum(len(line) for line, _ in items)
                self.written += len(items)
                self.commits += 1
                for _, fut in items:
                    fut.set_result(None)
            except BaseException as e:  # noqa: BLE001 - every waiting caller hears of a failed write
                for _, fut in items:
                    fut.set_exception(e)
            if self._size >= self.max_bytes:
                self._f.close()
                self.seq += 1
                self._open()
            if stop:
                return
