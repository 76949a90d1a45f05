"""A loader plugin for tests: one folder of ticket files, read as a third-party package would."""

from __future__ import annotations

import json
from pathlib import Path

from verifybench.cases import Case, Source
from verifybench.errors import RecordError
from verifybench.loaders import loader, note_label
from verifybench.loaders.readers import read_jsonl


def _ticket_files(folder: str, teams: list[str] | None = None, **_) -> list[Path]:
    return [Path(folder) / f"{t}.jsonl" for t in teams or ("support",)]


@loader(files=_ticket_files)
def tickets(folder: str, teams: list[str] | None = None):
    """Support tickets: one <team>.jsonl per team, `ok` true when the answer was right."""
    for file in _ticket_files(folder, teams):
        for rec in read_jsonl(file):
            if isinstance(rec, RecordError):
                yield rec
                continue
            d = rec.data
            note_label("ok", d["ok"], not d["ok"])
            yield Case(id=d["id"], dataset="tickets", doc_type=file.stem, sources=[Source(id="kb", text=d["kb"])],
                       response=d["answer"], label=not d["ok"]).at(rec.loc)


def undeclared(folder: str):
    """A plugin that declares nothing: its `folder` option is not a path option, so nothing is hashed."""
    yield from tickets(folder)


def write_tickets(folder: Path, team: str, n: int) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{team}.jsonl"
    path.write_text("".join(json.dumps({"id": f"{team}-{i}", "kb": f"plan {i} costs {i} dollars",
                                        "answer": f"plan {i} costs {i + i % 2} dollars", "ok": i % 2 == 0}) + "\n"
                            for i in range(n)))
    return path
