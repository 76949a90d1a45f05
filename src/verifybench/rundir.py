"""The run directory: what a run writes, and how it is read back.

```
manifest.json   suite, dataset hash and counts, verifier configs and hashes, package versions, status
cases.jsonl     one line per case: id, dataset, doc_type, split, label, meta and a clipped text
results.jsonl   one Verdict per line, appended as batches finish (never rewritten)
errors.jsonl    skipped input records and failed verdicts, one per line
cues.jsonl      surface cues per case for the shortcut check (computed after the run)
metrics.json    computed from cases.jsonl + results.jsonl
report.html     rendered from the above
```
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
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

# The case index keeps the response for the report's per-case view; sources are read back from the
# dataset for the few cases the report shows, rather than copied for every case.
TEXT_CLIP = 2000


class RunDirError(VerifybenchError):
    pass


def case_index_row(case: Case) -> dict[str, Any]:
    return {
        "id": case.id,
        "dataset": case.dataset,
        "doc_type": case.doc_type,
        "split": case.split,
        "label": case.label,
        "meta": case.meta,
        "question": (case.question or "")[:TEXT_CLIP] or None,
        "response": case.response[:TEXT_CLIP],
    }


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
