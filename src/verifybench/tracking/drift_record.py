"""The drift record: one `verifybench drift --out` result as a plain JSON file, the schema the drift
command writes and the history page reads (tracking sits below feedback, so the schema lives here).

    {"kind": "verifybench.drift", "format": 1, "created": ISO time, "reference": str, "source": str,
     "status": "pass" | "warn" | "fail" | "refused", "exit_code": 0 | 1 | 2,
     "limits": {"max_psi", "max_flag_rate_change", "max_unseen_share", "min_cases"},
     "rows": [{"check", "slice", "reference_cases", "production_cases", "threshold",
               "reference_flag_rate", "production_flag_rate", "flag_rate_change", "psi",
               "ks_statistic", "ks_p_value", "status": "ok" | "drift" | "too few", "why"}, ...],
     "unseen_doc_types": {"doc_types", "share", "cases", "limit", "status"},
     "notes": [str], "reason": str (a refusal's)}

Status: `fail` a figure beyond a limit (exit 1); `warn` none beyond a limit, but some slice had too few
scored cases on a side to be judged; `pass` every slice judged and within the limits; `refused` no
comparison could be made (exit 2, `reason` says why).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from verifybench.errors import VerifybenchError
from verifybench.safeio import replace_atomically, temp_path

KIND = "verifybench.drift"
FORMAT = 1
PREFIX = "drift-"  # the name of a record written into a folder: drift-<UTC time>.json
STATUSES = ("pass", "warn", "fail", "refused")
ROW_FIELDS = ("check", "slice", "reference_cases", "production_cases", "threshold", "reference_flag_rate",
              "production_flag_rate", "flag_rate_change", "psi", "ks_statistic", "ks_p_value", "status")
NUMBERS = ROW_FIELDS[2:-1]


class DriftRecordError(VerifybenchError):
    pass


@dataclass
class DriftRecord:
    path: Path
    created: str
    reference: str
    source: str
    status: str
    exit_code: int
    limits: dict[str, Any]
    rows: list[dict[str, Any]]
    unseen: dict[str, Any]
    notes: list[str]
    reason: str | None = None


def status_of(exit_code: int, rows: list[dict[str, Any]]) -> str:
    if exit_code == 2:
        return "refused"
    if exit_code == 1:
        return "fail"
    return "warn" if any(r.get("status") == "too few" for r in rows) else "pass"


def record(body: dict[str, Any], reference: str, source: str, limits: dict[str, Any],
           reason: str | None = None) -> dict[str, Any]:
    """A drift result (`DriftResult.as_dict()`, or nothing and a refusal's `reason`) as a record."""
    code = 2 if reason is not None else int(body["exit_code"])
    rows = list(body.get("rows") or [])
    out = {"kind": KIND, "format": FORMAT, "created": datetime.now(UTC).isoformat(timespec="seconds"),
           "reference": str(reference), "source": str(source), "status": status_of(code, rows), "exit_code": code,
           "limits": limits, "rows": rows, "unseen_doc_types": body.get("unseen_doc_types") or {},
           "notes": list(body.get("notes") or [])}
    if reason is not None:
        out["reason"] = reason
    return out


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


def write_record(out: str | Path, rec: dict[str, Any]) -> Path:
    path = target(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = temp_path(path)
    tmp.write_text(json.dumps(rec, indent=1, allow_nan=False) + "\n", encoding="utf-8")
    replace_atomically(tmp, path)
    return path


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
    """A drift record, every field history shows checked; an error names the file and the field."""
    path = Path(path)
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise DriftRecordError(f"{path}: cannot be read ({e.strerror or e})") from None
    except ValueError as e:
        raise DriftRecordError(f"{path}: not JSON ({e})") from None
    if not isinstance(doc, dict) or doc.get("kind") != KIND:
        raise DriftRecordError(f"{path}: not a drift record (field 'kind' must be {KIND!r}; write one with "
                               "`verifybench drift ... --out`)")
    if doc.get("format") != FORMAT:
        raise DriftRecordError(f"{path}: field 'format': {doc.get('format')!r}, this version reads format {FORMAT}")

    def need(obj: Any, key: str, types: Any, where: str) -> Any:
        v = obj.get(key) if isinstance(obj, dict) else None
        if not isinstance(v, types) or isinstance(v, bool):  # no field is a boolean
            raise DriftRecordError(f"{path}: field '{where}{key}': {v!r} is not a valid value")
        return v

    status = need(doc, "status", str, "")
    if status not in STATUSES:
        raise DriftRecordError(f"{path}: field 'status': {status!r}, expected one of {', '.join(STATUSES)}")
    rows = need(doc, "rows", list, "")
    for i, row in enumerate(rows):
        for k in ROW_FIELDS:
            if k in NUMBERS:
                if not isinstance(row, dict):
                    raise DriftRecordError(f"{path}: field 'rows[{i}]': {row!r} is not an object")
                v = row.setdefault(k, None)  # absent reads as null (not computed)
                if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float))):
                    raise DriftRecordError(f"{path}: field 'rows[{i}].{k}': {v!r} is not a number or null")
            else:
                need(row, k, str, f"rows[{i}].")
    unseen = need(doc, "unseen_doc_types", dict, "")
    if status != "refused":
        need(unseen, "share", (int, float), "unseen_doc_types.")
        need(unseen, "doc_types", list, "unseen_doc_types.")
    return DriftRecord(path=path, created=need(doc, "created", str, ""), reference=need(doc, "reference", str, ""),
                       source=need(doc, "source", str, ""), status=status,
                       exit_code=need(doc, "exit_code", int, ""), limits=need(doc, "limits", dict, ""), rows=rows,
                       unseen=unseen, notes=[str(n) for n in need(doc, "notes", list, "")],
                       reason=doc.get("reason"))
