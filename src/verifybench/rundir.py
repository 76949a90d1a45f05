"""The run directory: what a run writes, and how it is read back.

```
manifest.json   suite, dataset hash and counts, verifier configs and hashes, package versions, status
                (running -> scored -> complete, or failed with the reason)
writer.lock     while a process writes the run: its pid, host and command (see `RunLock`)
cases.jsonl     one line per case: id, dataset, doc_type, split, label, meta, a clipped text and gold spans
results.jsonl   one Verdict per line, appended as batches finish (never rewritten)
errors.jsonl    skipped input records and failed verdicts, one per line
cues.jsonl      surface cues per case for the shortcut check (computed after the run, written whole)
metrics.json    computed from cases.jsonl + results.jsonl
report.html     rendered from the above
```
"""

from __future__ import annotations

import json
import os
import socket
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from pydantic_core import to_json

from verifybench.cases import Case, Verdict
from verifybench.errors import VerifybenchError

MANIFEST = "manifest.json"
CASES = "cases.jsonl"
RESULTS = "results.jsonl"
ERRORS = "errors.jsonl"
CUES = "cues.jsonl"
METRICS = "metrics.json"
REPORT = "report.html"
LOCK = "writer.lock"

# Manifest statuses: every verdict written ("scored") is not yet a finished run; "complete" is set only
# once metrics.json and report.html exist, so a kill in between leaves a run that `--resume` or `report`
# finishes.
RUNNING, SCORED, COMPLETE, FAILED = "running", "scored", "complete", "failed"

# The case index keeps the response for the report's per-case view; sources are read back from the
# dataset for the few cases the report shows, rather than copied for every case.
TEXT_CLIP = 2000


class RunDirError(VerifybenchError):
    pass


def case_index_row(case: Case) -> dict[str, Any]:
    row = {
        "id": case.id,
        "dataset": case.dataset,
        "doc_type": case.doc_type,
        "split": case.split,
        "label": case.label,
        "meta": case.meta,
        "question": (case.question or "")[:TEXT_CLIP] or None,
        "response": case.response[:TEXT_CLIP],
    }
    if case.spans is not None:  # gold hallucinated spans, as [start, end) pairs: the span metrics' truth
        row["spans"] = [[s.start, s.end] for s in case.spans]
    return row


def write_json(path: Path, data: Any) -> None:
    # Write then rename, so a reader never sees half a file.
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, default=str, ensure_ascii=False), encoding="utf-8")
    os.replace(tmp, path)


def read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise RunDirError(f"{path}: not found; is {path.parent} a verifybench run directory?") from None


def iter_jsonl(path: Path) -> Iterator[dict[str, Any]]:
    """Complete lines only: a line cut short by a killed run is ignored (its batch is re-run)."""
    if not path.exists():
        return
    with open(path, "rb") as f:
        for raw in f:
            if not raw.endswith(b"\n"):
                return
            if raw.strip():
                yield json.loads(raw)


def repair_tail(path: Path) -> int:
    """Cut a partial last line left by a killed writer; returns how many bytes were cut."""
    if not path.exists():
        return 0
    with open(path, "rb+") as f:
        f.seek(0, os.SEEK_END)
        size = f.tell()
        if size == 0:
            return 0
        pos = size
        while pos > 0:
            step = min(65536, pos)
            f.seek(pos - step)
            chunk = f.read(step)
            nl = chunk.rfind(b"\n")
            if nl >= 0:
                keep = pos - step + nl + 1
                break
            pos -= step
        else:
            keep = 0
        if keep < size:
            f.truncate(keep)
        return size - keep


class JsonlAppender:
    """Appends JSON lines and flushes after each `write`, so what was written survives a killed process.

    Rows are dicts or pydantic models, serialised by pydantic-core (several times faster than `json`,
    which matters when the verifier itself takes a tenth of a millisecond a case).
    """

    def __init__(self, path: Path, mode: str = "a"):
        self._f = open(path, mode + "b")

    def write(self, rows: Iterable[Any]) -> None:
        self._f.write(b"".join(_line(r) for r in rows))
        self._f.flush()

    def close(self) -> None:
        self._f.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _line(row: Any) -> bytes:
    if hasattr(row, "__pydantic_serializer__"):
        return row.__pydantic_serializer__.to_json(row, exclude_none=True) + b"\n"
    return to_json(row, fallback=str) + b"\n"


def write_jsonl(path: Path, rows: Iterable[Any]) -> None:
    """Write a whole JSONL file then rename it into place: a reader sees all of it or none of it."""
    tmp = path.with_suffix(path.suffix + ".tmp")
    with JsonlAppender(tmp, mode="w") as out:
        out.write(rows)
    os.replace(tmp, path)


def read_verdicts(run_dir: Path) -> list[Verdict]:
    """Every complete line of results.jsonl as a Verdict; a line that is not one (a score that is not a
    number, bad JSON) is an error naming the file, the line and the field."""
    path = run_dir / RESULTS
    out = []
    if not path.exists():
        return out
    with open(path, "rb") as f:
        for line, raw in enumerate(f, 1):
            if not raw.endswith(b"\n"):
                break  # cut short by a killed writer: its batch is re-run on resume
            if not raw.strip():
                continue
            try:
                out.append(Verdict.model_validate_json(raw))
            except ValidationError as e:
                err = e.errors()[0]
                field = ".".join(str(p) for p in err["loc"])
                where = f"field {field!r}: " if field else ""
                raise RunDirError(f"{path}:{line}: not a verdict: {where}{err['msg']}") from None
    return out


def read_case_index(run_dir: Path) -> list[dict[str, Any]]:
    path = run_dir / CASES
    if not path.exists():
        raise RunDirError(f"{path}: not found; is {run_dir} a verifybench run directory?")
    return list(iter_jsonl(path))


def read_errors(run_dir: Path) -> list[dict[str, Any]]:
    return list(iter_jsonl(run_dir / ERRORS))


# --- one writer per run directory ------------------------------------------------------------------------

class RunLocked(RunDirError):
    """Another process holds (or may hold) the run directory's lock."""

    def __init__(self, message: str, holder: dict[str, Any] | None = None):
        super().__init__(message)
        self.holder = holder or {}


def _holder_text(h: dict[str, Any]) -> str:
    parts = [f"pid {h.get('pid', '?')} on host {h.get('host', '?')}"]
    if h.get("started"):
        parts.append(f"since {h['started']}")
    if h.get("command"):
        parts.append(f"`{h['command']}`")
    return ", ".join(parts)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # alive, owned by someone else
    return True


class RunLock:
    """An exclusive lock on a run directory, held by the one process that writes it.

    The lock is `fcntl.flock` on `writer.lock`, which the kernel releases when the holder dies, however
    it dies; the file's content (pid, host, start time, command) names the holder in a refusal. A lock
    file found without a live lock is the trace of a writer that was killed: it is reported (`stale`),
    never taken over silently. Two cases are refused rather than taken over, because this host cannot
    prove the holder dead: a holder on another host (a shared file system), and a holder pid that is
    still alive here while the lock is free.
    """

    def __init__(self, run_dir: Path):
        self.run_dir = Path(run_dir)
        self.path = self.run_dir / LOCK
        self.stale: str | None = None  # what a killed writer left behind, when one did
        self._fd: int | None = None

    def acquire(self) -> RunLock:
        import fcntl

        while True:
            try:
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            except OSError as e:
                raise RunDirError(f"{self.run_dir}: cannot write here ({e.strerror}): a run directory "
                                  "must be writable to run, resume or report it") from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = _read_holder(fd)
                os.close(fd)
                raise RunLocked(
                    f"{self.run_dir} is being written by another process ({_holder_text(holder)}); "
                    "wait for it to finish, or write this run somewhere else", holder) from None
            # A holder that released between our open and our flock unlinked the file we opened:
            # lock the file that is there now instead.
            try:
                same = os.path.samestat(os.fstat(fd), os.stat(self.path))
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(fd)
        self._fd = fd
        previous = _read_holder(fd)
        if previous:
            here = socket.gethostname()
            pid = previous.get("pid")
            if previous.get("host") != here:
                self._close()
                raise RunLocked(
                    f"{self.run_dir} is locked by {_holder_text(previous)}, another host: this machine cannot "
                    f"tell whether that run is still going. If it is not, delete {self.path} and try again",
                    previous)
            if isinstance(pid, int) and pid != os.getpid() and _pid_alive(pid):
                self._close()
                raise RunLocked(
                    f"{self.run_dir}: {self.path.name} names {_holder_text(previous)}, which is still running "
                    f"although it holds no lock. If that process is not writing this run, delete {self.path} "
                    "and try again", previous)
            self.stale = (f"a stale lock was found: {_holder_text(previous)} stopped without releasing "
                          f"{self.path.name} (the process is gone); this run takes over")
        me = {"pid": os.getpid(), "host": socket.gethostname(),
              "started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
              "command": " ".join(["verifybench", *sys.argv[1:]]) if sys.argv and sys.argv[0] else ""}
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(me).encode(), 0)
        os.fsync(fd)
        return self

    def release(self) -> None:
        if self._fd is None:
            return
        # Unlink while still holding the lock, so no one locks a file that is about to vanish.
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass
        self._close()

    def _close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor releases the flock
            self._fd = None


def _read_holder(fd: int) -> dict[str, Any]:
    try:
        raw = os.pread(fd, 65536, 0)
        data = json.loads(raw) if raw.strip() else {}
    except (OSError, ValueError):
        return {"pid": "?", "host": "?"}
    return data if isinstance(data, dict) else {}


_HELD: dict[str, list] = {}  # resolved run dir -> [RunLock, depth]: the lock is re-entrant in one process


@contextmanager
def hold(run_dir: Path) -> Iterator[RunLock]:
    """Hold the run directory's writer lock for the block (re-entrant within this process).

    Raises `RunLocked` when another process holds it. The directory must exist."""
    key = str(Path(run_dir).resolve())
    if key in _HELD:
        _HELD[key][1] += 1
        try:
            yield _HELD[key][0]
        finally:
            _HELD[key][1] -= 1
        return
    if not Path(run_dir).is_dir():
        raise RunDirError(f"{run_dir}: no such run directory")
    lock = RunLock(Path(run_dir)).acquire()
    _HELD[key] = [lock, 1]
    try:
        yield lock
    finally:
        del _HELD[key]
        lock.release()
