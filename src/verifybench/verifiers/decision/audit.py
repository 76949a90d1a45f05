"""The audit log (every unit id with its answers and action) and the escalation queue, as JSONL files.

The folder is the `audit_dir` option, else `<run directory>/decision` when a runner has bound the
verifier to a run, else `./reports/decision-audit` (a verifier called directly). Files are
`<verifier id>.audit.jsonl` and `<verifier id>.escalations.jsonl`; each line is written with one
append, so parallel workers interleave whole lines.
"""

from __future__ import annotations

import json
import os
from pathlib import Path


def audit_folder(option: str | None, run_dir: Path | None = None) -> Path:
    if option:
        return Path(option).expanduser()
    if run_dir is not None:
        return Path(run_dir) / "decision"
    return Path.cwd() / "reports" / "decision-audit"


class AuditLog:
    def __init__(self, folder: Path, verifier_id: str):
        self.folder = folder
        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in verifier_id)
        self.audit_path = folder / f"{safe}.audit.jsonl"
        self.escalation_path = folder / f"{safe}.escalations.jsonl"

    def _append(self, path: Path, rows: list[dict]) -> None:
        if not rows:
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        data = "".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in rows)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            os.write(fd, data.encode("utf-8"))
        finally:
            os.close(fd)

    def write(self, audit_rows: list[dict], escalations: list[dict]) -> None:
        self._append(self.audit_path, audit_rows)
        self._append(self.escalation_path, escalations)
