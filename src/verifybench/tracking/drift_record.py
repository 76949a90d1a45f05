"""Where drift records go and how they are found: `verifybench drift --out` writes one (a file named, or a
new `drift-<UTC time>.json` in a folder), the history page reads them. The record itself is
`formats.drift.DriftRecord`, its one reader and writer."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from verifybench.errors import VerifybenchError
from verifybench.formats.base import FormatError
from verifybench.formats.drift import DriftRecord

KIND = DriftRecord.KIND
PREFIX = "drift-"  # the name of a record written into a folder: drift-<UTC time>.json


class DriftRecordError(VerifybenchError):
    pass


def status_of(exit_code: int, rows: list[dict[str, Any]]) -> str:
    if exit_code == 2:
        return "refused"
    if exit_code == 1:
        return "fail"
    return "warn" if any(r.get("status") == "too few" for r in rows) else "pass"


def record(body: dict[str, Any], reference: str, source: str, limits: dict[str, Any],
           reason: str | None = None) -> DriftRecord:
    """A drift result (`DriftResult.as_dict()`, or nothing and a refusal's `reason`) as a record."""
    code = 2 if reason is not None else int(body["exit_code"])
    rows = list(body.get("rows") or [])
    return DriftRecord.new(created=datetime.now(UTC).isoformat(timespec="seconds"), reference=str(reference),
                           source=str(source), status=status_of(code, rows), exit_code=code, limits=limits,
                           rows=rows, unseen_doc_types=body.get("unseen_doc_types") or {},
                           notes=list(body.get("notes") or []), reason=reason)


def target(out: str | Path) -> Path:
    """Where `--out` writes: the file named, or a new `drift-<UTC time>.json` in a folder (an existing
    one, or a path ending in a slash), so a scheduled job can keep every result without naming each."""
    p = Path(out)
    if not (p.is_dir() or str(out).endswith(("/", "\\"))):
        return p
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    path, n = p / f"{PREFIX}{stamp}.json", 1
    while path.exists():
        n += 1
        path = p / f"{PREFIX}{stamp}_{n}.json"  # sorts after the first of that second
    return path


def write_record(out: str | Path, rec: DriftRecord) -> Path:
    return rec.write(target(out))


def is_record(path: Path) -> bool:
    """A file that says it is a drift record (its kind), without validating the rest."""
    if not path.is_file() or path.suffix.lower() != ".json":
        return False
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(doc, dict) and doc.get("kind") == KIND


def records_in(folder: Path) -> list[Path]:
    """The drift records a folder holds (`drift-*.json`), in name order."""
    return sorted(p for p in folder.glob(f"{PREFIX}*.json") if is_record(p))


def read_record(path: str | Path) -> DriftRecord:
    """A drift record, every field checked; an error names the file and the field."""
    try:
        return DriftRecord.read(path)
    except FormatError as e:
        raise DriftRecordError(str(e)) from None
