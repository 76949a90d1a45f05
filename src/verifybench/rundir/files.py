"""The run directory: what a run writes, and how it is read back.

```
.verifybench-run  the first file a run writes: this folder is a run directory (see `is_run_dir`)
manifest.json   suite, dataset hash and counts, verifier configs and hashes, package versions, status
                (running -> scored -> complete, or failed with the reason)
writer.lock     while a process writes the run: its pid, host and command (see `RunLock`)
cases.jsonl     one line per case: id, dataset, doc_type, split, label, meta, a clipped text and gold spans
results.jsonl   one Verdict per line, appended as batches finish (never rewritten)
errors.jsonl    skipped input records and failed verdicts, one per line
cues.jsonl      surface cues per case for the shortcut test (computed after the run, written whole)
metrics.json    computed from cases.jsonl + results.jsonl
report.html     rendered from the above
```
"""

from __future__ import annotations

import io
import json
import os
import socket
import sys
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from pydantic import ValidationError
from pydantic_core import to_json

from verifybench._util.safeio import open_no_follow, replace_atomically, temp_path
from verifybench.cases import Case, Verdict
from verifybench.errors import VerifybenchError
from verifybench.formats.base import StaleFormat
from verifybench.formats.metrics import Metrics
from verifybench.tables import LATENCY_KINDS, CaseColumns, VerdictColumns, release_memory

MANIFEST = "manifest.json"
CASES = "cases.jsonl"
RESULTS = "results.jsonl"
ERRORS = "errors.jsonl"
CUES = "cues.jsonl"
METRICS = "metrics.json"
REPORT = "report.html"
LOCK = "writer.lock"
MARKER = ".verifybench-run"
_MARK = {"verifybench": "run directory", "format": 1}

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
    row: dict[str, Any] = {
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
    # Write then rename, so a reader never sees half a file; the temporary name is this writer's own, so
    # two processes writing one file (two `baseline --out same.json`) never write into one temporary.
    path = Path(path)
    tmp = temp_path(path)
    try:
        with open_no_follow(tmp, "xb") as raw, io.TextIOWrapper(raw, encoding="utf-8") as f:
            # Streamed: a baseline of a million cases as one string (and the list of pieces it is joined
            # from) would take several times the file's size.
            json.dump(data, f, indent=2, default=str, ensure_ascii=False)
    except BaseException:
        _discard(tmp)
        raise
    replace_atomically(tmp, path)


def write_json_in_place(path: Path, data: Any) -> None:
    """Overwrite a small JSON file where it is: the last resort when a disk is too full for a temporary
    copy (a failed run's manifest), since truncating the file frees the room its new text takes."""
    text = json.dumps(data, indent=2, default=str, ensure_ascii=False).encode("utf-8")
    with open_no_follow(path, "rb+") as f:
        f.truncate(0)
        f.write(text)


def _discard(tmp: Path) -> None:
    try:
        os.unlink(tmp)
    except OSError:
        pass


def is_run_dir(run_dir: Path) -> bool:
    """Whether the run itself says `run_dir` is a run directory: its marker (written before anything else)
    or a run's manifest. File names alone never do: a user's own cases.jsonl or metrics.json are not a run's."""
    run_dir = Path(run_dir)
    return _json_file(run_dir / MARKER) == _MARK or _is_manifest(_json_file(run_dir / MANIFEST))


def _is_manifest(doc: Any) -> bool:
    return isinstance(doc, dict) and {"format", "status", "suite", "dataset", "verifiers"} <= set(doc)


def _json_file(path: Path) -> Any:
    """A JSON file's content; None when it is missing, a link or not JSON."""
    try:
        return None if path.is_symlink() else json.loads(path.read_bytes())
    except (OSError, ValueError):
        return None


def mark_run_dir(run_dir: Path) -> None:
    """Write the marker that makes `run_dir` a run directory (`is_run_dir`), before any other run file."""
    write_json(Path(run_dir) / MARKER, _MARK)


def read_metrics(run_dir: Path) -> Metrics:
    """A run's metrics.json through its model. One from an older format is not migrated (it is derived
    data): the error says to compute it again with `verifybench report`."""
    path = Path(run_dir) / METRICS
    try:
        return Metrics.read(path)
    except StaleFormat:
        raise StaleFormat(path, "written by an older verifybench, in a format this one does not read; compute it "
                                f"again from the run's results (no verifier runs): verifybench report {run_dir}") from None


def read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise RunDirError(f"{path}: not found; is {path.parent} a verifybench run directory?") from None


def iter_lines(path: Path) -> Iterator[bytes]:
    """The complete, non-blank lines of a JSONL file as bytes: a line cut short by a killed run is ignored
    (its batch is re-run)."""
    if not path.exists():
        return
    with open(path, "rb") as f:
        for raw in f:
            if not raw.endswith(b"\n"):
                return
            if raw.strip():
                yield raw


def iter_jsonl(path: Path) -> Iterator[dict[str, Any]]:
    """Complete lines only, parsed (see `iter_lines`)."""
    for raw in iter_lines(path):
        yield json.loads(raw)


def count_complete_lines(path: Path) -> int:
    """Non-blank complete lines of a JSONL file (what `iter_lines` yields), counted without parsing."""
    return sum(1 for _ in iter_lines(path))


def repair_tail(path: Path) -> int:
    """Cut a partial last line left by a killed writer; returns how many bytes were cut."""
    if not path.exists():
        return 0
    with open_no_follow(path, "rb+") as f:
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
        self._f = open_no_follow(path, mode + "b")  # a link planted in a run directory is not written through

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
    path = Path(path)
    tmp = temp_path(path)
    try:
        with JsonlAppender(tmp, mode="x") as out:
            out.write(rows)
    except BaseException:
        _discard(tmp)
        raise
    replace_atomically(tmp, path)


def _verdict_error(path: Path, line: int, e: ValidationError) -> RunDirError:
    err = e.errors()[0]
    field = ".".join(str(p) for p in err["loc"])
    where = f"field {field!r}: " if field else ""
    return RunDirError(f"{path}:{line}: not a verdict: {where}{err['msg']}")


def read_verdicts(run_dir: Path) -> list[Verdict]:
    """Every complete line of results.jsonl as a Verdict; a line that is not one (a score that is not a
    number, bad JSON) is an error naming the file, the line and the field. One object per verdict: for
    a large run, read the columns with `read_verdict_frame` instead."""
    path = run_dir / RESULTS
    out: list[Verdict] = []
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
                raise _verdict_error(path, line, e) from None
    return out


def read_case_index(run_dir: Path) -> list[dict[str, Any]]:
    """Every row of cases.jsonl as a dict (for a large run, see `read_case_frame`)."""
    path = run_dir / CASES
    if not path.exists():
        raise RunDirError(f"{path}: not found; is {run_dir} a verifybench run directory?")
    return list(iter_jsonl(path))


# --- columnar readers: a million cases without a Python object each ----------------------------------

BLOCK = 1 << 22  # bytes of whole lines parsed at a time (larger blocks parse no faster, and hold more)


def _blocks(path: Path, size: int = BLOCK) -> Iterator[tuple[int, int, bytes]]:
    """(number of its first line, byte offset, bytes) of successive runs of whole lines. A last line
    without its newline (cut short by a killed writer) is left out, as `iter_jsonl` leaves it out."""
    line, offset, rest = 1, 0, b""
    with open(path, "rb") as f:
        while data := f.read(size):
            buf = rest + data if rest else data
            cut = buf.rfind(b"\n") + 1
            if not cut:
                rest = buf
                continue
            block, rest = buf[:cut], buf[cut:]
            yield line, offset, block
            line += block.count(b"\n")
            offset += len(block)


def _count_lines(path: Path) -> int:
    """Complete lines in a file: a bound on the rows it holds, to allocate columns once."""
    if not path.exists():
        return 0
    n = 0
    with open(path, "rb") as f:
        while data := f.read(BLOCK):
            n += data.count(b"\n")
    return n


def _lines(block: bytes) -> tuple[np.ndarray, np.ndarray]:
    """Start and end (the newline's position) of each line of a block of whole lines."""
    ends = np.flatnonzero(np.frombuffer(block, np.uint8) == 10)
    starts = np.empty_like(ends)
    starts[:1] = 0
    starts[1:] = ends[:-1] + 1
    return starts, ends


def _nonblank(block: bytes, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    keep = ends > starts
    if keep.any():  # a line of spaces is blank too (rare: look only when some line is that short)
        short = np.flatnonzero(keep & (ends - starts < 3))
        for i in short:
            keep[i] = bool(block[starts[i]:ends[i]].strip())
    return keep


def _verdict_schema():
    import pyarrow as pa

    # What the metrics read, plus the fields of a unit (typed, so that a line `Verdict` would refuse is
    # refused here too: units are counted, not kept); detail gives two flags. Everything else on a line
    # is skipped by the parser, and read back whole for the cases a report shows.
    unit = pa.struct([("text", pa.string()), ("score", pa.float64()), ("status", pa.string()),
                      ("evidence", pa.string()), ("start", pa.int64()), ("end", pa.int64()),
                      ("detail", pa.struct([]))])
    return pa.schema([
        ("case_id", pa.string()), ("verifier", pa.string()), ("score", pa.float64()), ("error", pa.string()),
        ("latency_ms", pa.float64()), ("latency_kind", pa.string()), ("cost_usd", pa.float64()),
        ("units", pa.list_(unit)),
        ("detail", pa.struct([("flipped", pa.bool_()), ("injected_flip", pa.bool_()),
                              ("repeats", pa.struct([("scores", pa.list_(pa.float64()))]))])),
    ])


def read_verdict_frame(run_dir: Path) -> pd.DataFrame:
    """results.jsonl as the verdict table (see `verifybench.tables`): the same verdicts, lines and
    errors as `read_verdicts`, as columns. Each block of lines is parsed by pyarrow; a block that does
    not parse cleanly (a score that is not a number, bad JSON, a missing field) is read again line by
    line as `Verdict`s, so a bad line is reported exactly as `read_verdicts` reports it."""
    path = Path(run_dir) / RESULTS
    out = VerdictColumns(_count_lines(path))
    if path.exists():
        schema = _verdict_schema()
        for first, offset, block in _blocks(path):
            if not _verdict_block_fast(out, schema, offset, block):
                _verdict_block_slow(path, out, first, offset, block)
    frame = out.frame()
    release_memory()
    return frame





def _verdict_block_fast(out: VerdictColumns, schema, offset: int, block: bytes) -> bool:
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.json as pj

    starts, ends = _lines(block)
    keep = _nonblank(block, starts, ends)
    longest = int((ends - starts).max()) if len(ends) else 0
    try:
        t = pj.read_json(pa.py_buffer(block),
                         read_options=pj.ReadOptions(block_size=max(1 << 20, 2 * longest + 2)),
                         parse_options=pj.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore"))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return False
    if t.num_rows != int(keep.sum()) or t.column("case_id").null_count or t.column("verifier").null_count:
        return False
    units = t.column("units")
    if units.null_count < len(units):  # a unit without its text, or an item that is null, is not a Unit
        items = pc.list_flatten(units)
        if items.null_count or pc.struct_field(items, "text").null_count:
            return False
    kinds = pc.unique(t.column("latency_kind")).drop_null().to_pylist()
    if any(k not in LATENCY_KINDS for k in kinds):
        return False
    rows_at = starts[keep]
    usage: dict[int, dict] = {}
    if b'"usage":' in block:  # model-backed verifiers only: validate those lines as pydantic does
        for i, s in enumerate(rows_at):
            raw = block[s:ends[keep][i] + 1]
            if b'"usage":' in raw:
                try:
                    u = Verdict.model_validate_json(raw).usage
                except ValidationError:
                    return False
                if u is not None:
                    usage[i] = u
    units = pc.list_value_length(units).to_numpy(zero_copy_only=False).astype(float)
    units[units == 0] = np.nan  # no units and an empty list read alike: no per-unit figures

    def flag(k):
        f = pc.struct_field(t.column("detail"), k)
        return np.asarray(pc.fill_null(pc.cast(f, pa.int8()), -1), dtype=np.int8)

    repeats: dict[int, list] = {}
    if b'"repeats":' in block:  # repeated verdicts only: their per-repeat scores, row by row
        scores = pc.struct_field(pc.struct_field(t.column("detail"), "repeats"), "scores").to_pylist()
        repeats = {i: r for i, r in enumerate(scores) if r is not None}

    kind = pc.fill_null(pc.index_in(t.column("latency_kind"), value_set=pa.array(LATENCY_KINDS)), -1)
    out.add_arrays(
        t.num_rows, case_id=t.column("case_id").combine_chunks(), error=t.column("error").combine_chunks(),
        verifier=t.column("verifier").combine_chunks(), kind=np.asarray(kind, dtype=np.int8),
        floats={k: t.column(k).to_numpy() for k in ("score", "latency_ms", "cost_usd")} | {"units": units},
        flags={"flipped": flag("flipped"), "injected_flip": flag("injected_flip")},
        usage=usage, offsets=rows_at.astype(np.int64) + offset, repeats=repeats)
    return True


def _verdict_block_slow(path: Path, out: VerdictColumns, first: int, offset: int, block: bytes) -> None:
    starts, ends = _lines(block)
    verdicts, offsets = [], []
    for i, (s, e) in enumerate(zip(starts.tolist(), ends.tolist())):
        raw = block[s:e + 1]
        if not raw.strip():
            continue
        try:
            verdicts.append(Verdict.model_validate_json(raw))
        except ValidationError as err:
            raise _verdict_error(path, first + i, err) from None
        offsets.append(offset + s)
    out.add(verdicts, offsets)


def read_case_frame(run_dir: Path, meta: Iterable[str] = ()) -> pd.DataFrame:
    """cases.jsonl as the case table (see `verifybench.tables`), with a `meta.<key>` slice column for
    each key in `meta` (the metrics' `by` and breakdown fields). Each block of lines is parsed by
    pyarrow; a block whose meta values pyarrow cannot give exactly as Python would name them (a float,
    a null, a nested value) is read line by line. A line that is not JSON is an error naming the file
    and the line; a last line cut short is left out, as `read_case_index` leaves it."""
    path = Path(run_dir) / CASES
    if not path.exists():
        raise RunDirError(f"{path}: not found; is {run_dir} a verifybench run directory?")
    out = CaseColumns(meta)
    for first, offset, block in _blocks(path):
        if not _case_block_fast(out, offset, block):
            _case_block_slow(path, out, first, offset, block)
    frame = out.frame()
    release_memory()
    return frame


def _case_block_fast(out: CaseColumns, offset: int, block: bytes) -> bool:
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.json as pj

    starts, ends = _lines(block)
    keep = _nonblank(block, starts, ends)
    longest = int((ends - starts).max()) if len(ends) else 0
    schema = pa.schema([("id", pa.string()), ("dataset", pa.string()), ("doc_type", pa.string()),
                        ("split", pa.string()), ("label", pa.bool_())])
    try:  # meta (and the texts) are inferred: their keys vary from run to run
        t = pj.read_json(pa.py_buffer(block),
                         read_options=pj.ReadOptions(block_size=max(1 << 20, 2 * longest + 2)),
                         parse_options=pj.ParseOptions(explicit_schema=schema, unexpected_field_behavior="infer"))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return False
    n = t.num_rows
    if n != int(keep.sum()) or t.column("id").null_count:
        return False
    fields: dict[str, Any] = {}
    if "meta" in t.column_names:
        try:
            m = t.column("meta").combine_chunks()
        except pa.ArrowException:  # pyarrow cannot join some inferred types (a list of nulls, then null)
            return False
        if not pa.types.is_struct(m.type) or m.null_count:
            return False
        fields = {m.type.field(i).name: m.field(i) for i in range(m.type.num_fields)}

    def simple(values) -> bool:  # exactly what str() of the JSON value gives
        return (pa.types.is_string(values.type) or pa.types.is_int64(values.type)) and not values.null_count

    slices = {}
    for k in out.meta:
        if k not in fields:
            slices[f"meta.{k}"] = pa.array(np.full(n, "none", dtype=object), pa.string())
        elif simple(fields[k]):
            slices[f"meta.{k}"] = pc.cast(fields[k], pa.string())
        else:
            return False
    group = fields.get("group")
    if group is not None and not simple(group):
        return False
    out.add_arrays(
        t.column("id").combine_chunks(),
        fields={**{f: t.column(f).combine_chunks() for f in ("dataset", "doc_type", "split")}, **slices},
        label=np.asarray(t.column("label").fill_null(False).to_numpy(), dtype=bool), group=group,
        offsets=starts[keep].astype(np.int64) + offset, meta_keys=fields,
        labeled=np.asarray(t.column("label").is_valid().to_numpy(), dtype=bool))  # null: an unlabeled case
    return True


def _case_block_slow(path: Path, out: CaseColumns, first: int, offset: int, block: bytes) -> None:
    starts, ends = _lines(block)
    for i, (s, e) in enumerate(zip(starts.tolist(), ends.tolist())):
        raw = block[s:e]
        if not raw.strip():
            continue
        try:
            row = json.loads(raw)
            out.add(row, offset + s)
        except ValueError as err:
            raise RunDirError(f"{path}:{first + i}: not a case index row ({err})") from None
        except (KeyError, TypeError, AttributeError) as err:
            raise RunDirError(f"{path}:{first + i}: not a case index row (missing or bad {err})") from None


def _lines_at(path: Path, offsets: Iterable[int]) -> list[bytes]:
    with open(path, "rb") as f:
        out = []
        for o in offsets:
            f.seek(int(o))
            out.append(f.readline())
        return out


def read_verdicts_at(run_dir: Path, offsets: Iterable[int]) -> list[Verdict]:
    """The full verdicts (units, detail and all) at these byte offsets of results.jsonl (the verdict
    table's `offset` column)."""
    path = Path(run_dir) / RESULTS
    out = []
    for raw in _lines_at(path, offsets):
        try:
            out.append(Verdict.model_validate_json(raw))
        except ValidationError as e:
            raise RunDirError(f"{path}: not a verdict: {e.errors()[0]['msg']}") from None
    return out


def read_cases_at(run_dir: Path, offsets: Iterable[int]) -> list[dict[str, Any]]:
    """The case-index rows at these byte offsets of cases.jsonl (the case table's `offset` column)."""
    return [json.loads(raw) for raw in _lines_at(Path(run_dir) / CASES, offsets)]


def read_errors(run_dir: Path) -> list[dict[str, Any]]:
    """The rows of errors.jsonl; a line that is not a JSON object (a file edited by hand, or damaged)
    becomes a row saying so, with its line, rather than failing the report."""
    path = Path(run_dir) / ERRORS
    out = []
    for n, raw in enumerate(iter_lines(path), 1):
        try:
            row = json.loads(raw)
        except ValueError as e:
            row = None
            why = f"not JSON ({e})"
        else:
            why = f"not a JSON object (a {type(row).__name__})"
        if isinstance(row, dict):
            out.append(row)
        else:
            out.append({"kind": "unreadable", "message": f"{path.name}: line {n}: {why}; the line is left out"})
    return out


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
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o644)
            except OSError as e:
                raise RunDirError(f"{self.run_dir}: cannot write here ({e.strerror}): a run directory "
                                  "must be writable to run, resume or report it") from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = _read_holder(fd)
                # The holder writes its name just after taking the lock: a refusal in between would name
                # "pid ? on host ?", so wait a moment for it.
                deadline = time.monotonic() + 2.0
                while (not holder or holder.get("unreadable")) and time.monotonic() < deadline:
                    time.sleep(0.02)
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
        if previous.get("unreadable"):
            # We hold the kernel's lock, so no writer is alive: a writer killed while writing the file.
            self.stale = (f"a stale lock was found: {self.path.name} could not be read (a writer was killed "
                          "while writing it); this run takes over")
        elif previous:
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
              "started": datetime.now(UTC).isoformat(timespec="seconds"),
              "command": " ".join([Path(sys.argv[0]).name, *sys.argv[1:]]) if sys.argv and sys.argv[0] else ""}
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
        return {"pid": "?", "host": "?", "unreadable": True}
    return data if isinstance(data, dict) else {"pid": "?", "host": "?", "unreadable": True}


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
