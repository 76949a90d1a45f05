"""The decision log: one JSON line per check, durable before the check's response returns.

Each record is a `formats.decision.DecisionRecord` (its kind and format on every line). Each process
writes its own files, `decisions-<pid>-<seq>.jsonl` (a new sequence number when a file
passes `max_bytes`, and at start), so several workers never share a file and a killed process leaves
at most its own last line torn. A file is always created new (O_CREAT | O_EXCL | O_NOFOLLOW): a name
already taken, by a file or by a link planted in the folder, is skipped, never written through. One
writer thread appends whatever records are waiting, flushes, fsyncs once (a group commit for requests
that arrived together), and only then releases their callers. Records carry the case schema (id,
response, sources, question, doc_type, meta) and the decision; nothing from the request's headers (no
token) is ever in them.

When a write, an fsync or the opening of the next file fails (a full disk, no inodes left, a file-size
limit), the records of that commit are cut back off the file (it ends at its last whole record again,
or the next record goes to a new file) and every waiting caller gets a `LogError`; the writer thread
goes on, `ready` is False, and the writer tries again (a blank-line probe, cut back at once) every
`retry_s` while nothing is waiting, so `ready` turns True again once the disk takes writes. What a
caller does with a record that could not be written is `fail_open`'s: False (the default) raises the
error (the service answers 503), True returns the decision anyway and counts it in `lost`.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import math
import os
import queue
import threading
import time
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from pathlib import Path
from typing import Any

from pydantic_core import PydanticSerializationError, to_json

from verifybench.formats.decision import DecisionRecord
from verifybench.guard.spec import GuardError
from verifybench.loaders.guardlog import PATTERN, TornLines, read_log

_STOP: Any = object()
_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC
PROBE_BYTES = 64 << 10  # blank lines (a reader skips them) written and cut back to see that the disk takes data
MAX_DEPTH = 64  # the deepest nesting a record's values may have (pydantic-core's serialiser stops near 250)
log = logging.getLogger(__name__)

__all__ = ["MAX_DEPTH", "DecisionLog", "LogError", "TornLines", "json_problem", "read_log"]


class LogError(GuardError):
    """A decision whose record could not be written (or not within the log's time budget). `reason`
    says why without naming the folder (what the service tells a client)."""

    def __init__(self, message: str, reason: str | None = None):
        super().__init__(message)
        self.reason = reason or message


def json_problem(value: Any, loc: tuple = (), depth: int = 0) -> tuple[tuple, str] | None:
    """Where `value` cannot go into a JSON line, and why: a lone UTF-16 surrogate in a string or a key
    (UTF-8 has no encoding for it), NaN or an infinity (JSON has no such number), or nesting deeper
    than `MAX_DEPTH`. None when it can. The location is a tuple of keys and indexes; a key that holds
    a surrogate is given with the surrogate escaped."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as e:
            return loc, f"a lone UTF-16 surrogate ({ascii(value[e.start])[1:-1]}) at character {e.start + 1}: not text"
        return None
    if isinstance(value, float):
        return None if math.isfinite(value) else (loc, f"{value} is not a JSON number")
    if isinstance(value, dict | list | tuple):
        if depth >= MAX_DEPTH:
            return loc, f"nested deeper than {MAX_DEPTH} levels"
        items = value.items() if isinstance(value, dict) else enumerate(value)
        for k, v in items:
            if isinstance(k, str):
                bad = json_problem(k, loc, depth)
                if bad is not None:
                    return (*loc, k.encode("utf-8", "backslashreplace").decode()), f"its key has {bad[1]}"
            bad = json_problem(v, (*loc, k), depth + 1)
            if bad is not None:
                return bad
    return None


def _reason(e: BaseException) -> str:
    if isinstance(e, OSError) and e.errno is not None:
        return f"{e.strerror or os.strerror(e.errno)} ({errno.errorcode.get(e.errno, e.errno)})"
    return f"{type(e).__name__}: {e}"


class DecisionLog:
    """Args:
        directory: the log folder (created if missing).
        max_bytes: a file is rotated once it passes this size.
        fsync: sync every commit to disk before releasing its callers.
        fail_open: a record that cannot be written: False raises `LogError` into its caller; True counts
            it in `lost` and lets the decision go.
        timeout_ms: how long a caller waits for its record before that counts as a failure.
        retry_s: while the log cannot be written and nothing waits, how often the writer tries again.
    """

    def __init__(self, directory: str | Path, max_bytes: int = 64 << 20, fsync: bool = True,
                 fail_open: bool = False, timeout_ms: float = 5000.0, retry_s: float = 1.0):
        self.dir = Path(directory)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.max_bytes = max_bytes
        self.fsync = fsync
        self.fail_open = fail_open
        self.timeout = timeout_ms / 1000.0
        self.retry_s = retry_s
        # The call that puts a commit on disk. fsync, not fdatasync: on Linux fdatasync also flushes the
        # size an append changed (so it would be as durable), but measured on ext4 it was no faster for
        # appends (benchmarks/README.md, guard section): the size change needs the journal commit either way.
        self.sync = os.fsync
        self.pid = os.getpid()
        self.written = 0
        self.commits = 0
        self.failures = 0  # commits, opens and probes that failed
        self.lost = 0  # decisions let go without their record (fail_open)
        self.error: str | None = None  # why the log cannot be written now; None: it can
        self._busy_since: float | None = None  # when the commit in progress began
        mine = [p for p in self.dir.glob(PATTERN.replace("*", f"{self.pid}-*"))]
        seqs = [int(p.stem.rsplit("-", 1)[1]) for p in mine if p.stem.rsplit("-", 1)[1].isdigit()]
        self.seq = max(seqs, default=0) + 1
        self._fd: int | None = None
        self._size = 0
        try:
            self._open()
        except OSError as e:
            raise LogError(f"{self.dir}: cannot create a decision log file: {_reason(e)}") from None
        self._q: queue.SimpleQueue = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._loop, name="guard-log", daemon=True)
        self._thread.start()

    @property
    def path(self) -> Path:
        return self.dir / f"decisions-{self.pid}-{self.seq}.jsonl"

    @property
    def ready(self) -> bool:
        """Whether the log takes records now: no failure since the last good write, and no commit stuck
        for longer than a caller waits."""
        busy = self._busy_since
        return self.error is None and (busy is None or time.monotonic() - busy < self.timeout)

    def _open(self) -> None:
        """A new file of this process, created exclusively: a name already taken (a file, a planted link)
        is skipped."""
        for _ in range(1000):
            try:
                fd = os.open(self.path, _CREATE, 0o644)
                break
            except FileExistsError:
                self.seq += 1
        else:
            raise OSError(errno.EEXIST, f"1000 log file names in a row already taken ({self.path})")
        if self.fsync:  # the new file's name durable too (once per file), before any of its records is released
            try:
                dfd = os.open(self.dir, os.O_RDONLY | os.O_DIRECTORY)
                try:
                    os.fsync(dfd)
                finally:
                    os.close(dfd)
            except OSError:
                os.close(fd)  # left empty; the next try takes the next name
                raise
        self._fd, self._size = fd, 0

    # -- the callers' side ---------------------------------------------------------------------------------
    def append(self, record: DecisionRecord) -> Future:
        """Queue a record; the future is done once it is on disk, or holds a `LogError`. A record that is
        not valid JSON (a lone surrogate, NaN, nesting past `MAX_DEPTH`) raises `LogError` naming the field."""
        try:
            line = to_json(record, fallback=str)
        except PydanticSerializationError:
            line = None
        # NaN / Infinity: written as such by the model's serialiser, so that they are found here; U+FFFD: what
        # the serialiser puts in place of a lone surrogate in a mapping's key (looked at only when present)
        if line is None or ((b"NaN" in line or b"Infinity" in line or b"\xef\xbf\xbd" in line)
                            and json_problem(record.model_dump()) is not None):
            where, why = json_problem(record.model_dump()) or ((), "cannot be written as JSON")
            field = ".".join(str(p) for p in where) or "record"
            raise LogError(f"the decision record's {field}: {why}")
        fut: Future = Future()
        self._q.put((line + b"\n", fut))
        return fut

    def _late(self) -> LogError:
        why = f"the record was not written within {self.timeout * 1000:g} ms"
        return LogError(f"the decision log {self.dir}: {why}", why)

    def _settle(self, error: BaseException) -> bool:
        if self.fail_open:
            self.lost += 1
            return False
        raise error

    def committed(self, fut: Future) -> bool:
        """Wait for an appended record: True once it is on disk; False when it could not be written and
        the log fails open; `LogError` when it fails closed."""
        try:
            fut.result(timeout=self.timeout)
            return True
        except FutureTimeout:
            fut.cancel()
            return self._settle(self._late())
        except LogError as e:
            return self._settle(e)

    async def acommitted(self, fut: asyncio.Future) -> bool:
        """`committed` for a future from `asyncio.wrap_future(append(...))`."""
        try:
            await asyncio.wait_for(fut, self.timeout)  # a timeout cancels it: not written if not yet started
            return True
        except TimeoutError:
            return self._settle(self._late())
        except LogError as e:
            return self._settle(e)

    def write(self, record: DecisionRecord) -> bool:
        """Append a record and wait until it is on disk (`committed`)."""
        return self.committed(self.append(record))

    def close(self, timeout: float = 2.0) -> None:
        """Stop the writer once what is queued is written; a writer stuck in the kernel (a hung disk) is
        left behind after `timeout` seconds (it is a daemon thread), and so is its file."""
        self._q.put(_STOP)
        self._thread.join(timeout=timeout)
        if not self._thread.is_alive() and self._fd is not None:
            os.close(self._fd)
            self._fd = None

    # -- the writer thread ---------------------------------------------------------------------------------
    def _loop(self) -> None:
        while True:
            try:
                first = self._q.get(timeout=self.retry_s if self.error is not None else None)
            except queue.Empty:
                self._guarded(self._probe)
                continue
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
            live = [(line, fut) for line, fut in items if fut.set_running_or_notify_cancel()]
            if live:
                self._guarded(self._commit, live)
            if stop:
                return

    def _guarded(self, step: Any, *args: Any) -> None:
        """Run a step of the writer; nothing it raises ends the thread."""
        try:
            step(*args)
        except BaseException as e:  # noqa: BLE001 - the writer outlives any failure; callers heard of it
            log.exception("decision log writer: unexpected %s", type(e).__name__)

    def _commit(self, items: list[tuple[bytes, Future]]) -> None:
        data = b"".join(line for line, _ in items)
        self._busy_since = time.monotonic()
        try:
            if self._fd is None:
                self._open()
            assert self._fd is not None
            self._write_all(self._fd, data)
            if self.fsync:
                self.sync(self._fd)
        except BaseException as e:  # noqa: BLE001 - every waiting caller hears of a failed commit
            self._failed(e)
            err = LogError(f"the decision log {self.dir} cannot be written: {_reason(e)}", _reason(e))
            for _, fut in items:
                fut.set_exception(err)
            return
        finally:
            self._busy_since = None
        self._size += len(data)
        self.written += len(items)
        self.commits += 1
        self._recovered()
        for _, fut in items:
            fut.set_result(None)
        if self._size >= self.max_bytes:
            self._rotate()

    def _rotate(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)
        self.seq += 1
        try:
            self._open()
        except OSError as e:  # the next commit tries again; meanwhile the log is not ready
            self._failed(e)

    def _probe(self) -> None:
        """While the log cannot be written: try it (blank lines, cut back at once), so `ready` comes back
        without waiting for a caller to risk a record."""
        try:
            if self._fd is None:
                self._open()
            assert self._fd is not None
            os.write(self._fd, b"\n" * PROBE_BYTES)
            if self.fsync:
                self.sync(self._fd)
            os.ftruncate(self._fd, self._size)
        except OSError as e:
            self._failed(e)
            return
        self._recovered()

    @staticmethod
    def _write_all(fd: int, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]

    def _failed(self, e: BaseException) -> None:
        """Cut the file back to its last whole record (or, if that fails, leave the file: the next record
        goes to a new one), and say the log cannot be written."""
        self.failures += 1
        if self.error is None:
            log.error("decision log %s cannot be written: %s; requests get %s until it can", self.dir, _reason(e),
                      "their decisions without a record (fail_open)" if self.fail_open else "503")
        self.error = _reason(e)
        if self._fd is None:
            return
        try:
            os.ftruncate(self._fd, self._size)
        except OSError:
            os.close(self._fd)
            self._fd = None
            self.seq += 1

    def _recovered(self) -> None:
        if self.error is not None:
            log.warning("decision log %s takes records again", self.dir)
        self.error = None
