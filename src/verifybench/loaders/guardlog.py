"""A guard's decision log read as a dataset (`loader: guardlog`), and the reader the guard's tools share.

A decision log (`verifybench.guard`, `verifybench serve`) is a folder of JSON Lines files,
`decisions-<pid>-<seq>.jsonl`, one record per check (`formats.decision.DecisionRecord`), in the case
schema (id, response, sources, question, doc_type, meta) plus a `decision` object. A process killed mid-write leaves at most its
last line cut short; the reader skips that line and reports it (file and line), and never mixes it
with a later process's records (each process writes its own files).

```yaml
dataset:
  loader: guardlog
  path: ../guard-log          # a log folder, or one log file
  unlabeled: skip             # skip records without a label (default); `keep`: unlabeled cases (scored,
                              # left out of the label metrics); or `decision`: the guard's own decision as
                              # the label, marked meta.label_source = "guard decision"
```

A record is labeled when it has a `label` field (added by a reviewer or a label queue), read as any
label is (`FieldSpec`: true/1/hallucinated vs false/0/faithful).
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from verifybench.cases import Case
from verifybench.errors import Location, RecordError, SuiteError
from verifybench.formats.base import FormatError
from verifybench.formats.decision import DecisionRecord
from verifybench.loaders.fields import FieldSpec, record_to_case
from verifybench.loaders.readers import Record

PATTERN = "decisions-*.jsonl"
HEADER = {"kind", "format", "written_by"}  # the record's own header: not part of the case
LABEL_SOURCE = "guard decision"


@dataclass
class TornLines:
    """Lines cut short by a killed writer: skipped, and listed here as `file:line`."""

    where: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.where)

    def __str__(self) -> str:
        return (f"{len(self.where)} torn last line(s) skipped (a writer killed mid-write): "
                + ", ".join(self.where[:5]) + (" ..." if len(self.where) > 5 else ""))


def _sort_key(p: Path) -> tuple:
    parts = p.stem.split("-")
    try:
        return (int(parts[1]), int(parts[2]), p.name)
    except (IndexError, ValueError):
        return (1 << 62, 0, p.name)


def log_files(path: str | Path) -> list[Path]:
    """The log files of a log folder (by pid, then sequence), or the one file given."""
    path = Path(path)
    if path.is_file():
        return [path]
    if not path.is_dir():
        raise SuiteError(f"{path}: no such decision log folder or file")
    return sorted(path.glob(PATTERN), key=_sort_key)


def iter_log(path: str | Path, torn: TornLines | None = None
             ) -> Iterator[tuple[Location, DecisionRecord] | RecordError]:
    """Every record of a decision log, in order, each read through `DecisionRecord` (a line from before
    kinds migrated, a newer format refused naming who wrote it); a line that is not a record is a
    `RecordError` naming its file, line and key, except a file's last line cut short (no newline), which
    is skipped and added to `torn`."""
    index = 0
    for file in log_files(path):
        with open(file, "rb") as f:
            for lineno, raw in enumerate(f, start=1):
                if not raw.endswith(b"\n"):
                    if raw.strip() and torn is not None:
                        torn.where.append(f"{file}:{lineno}")
                    break
                if not raw.strip():
                    continue
                loc = Location(str(file), index, lineno)
                index += 1
                try:
                    data = json.loads(raw)
                except (json.JSONDecodeError, UnicodeDecodeError) as e:
                    yield RecordError(loc, f"not a JSON line: {e}")
                    continue
                try:
                    yield loc, DecisionRecord.parse(data, str(loc))
                except FormatError as e:
                    yield RecordError(loc, e.problem, e.field)


def read_log(path: str | Path) -> tuple[list[DecisionRecord], TornLines]:
    """All records of a decision log, and the torn lines skipped; a bad line raises."""
    torn = TornLines()
    out = []
    for item in iter_log(path, torn):
        if isinstance(item, RecordError):
            raise item
        out.append(item[1])
    return out, torn


_SPEC = FieldSpec(id="id", response="response", sources="sources", question="question", doc_type="doc_type",
                  label="label", meta=["meta", "decision"])


def guardlog(path: str | Path, unlabeled: Literal["skip", "keep", "decision"] = "skip", name: str | None = None
             ) -> Iterator[Case | RecordError]:
    """Cases from a guard's decision log folder (`verifybench serve --log-dir`, `Guard(log_dir=...)`).

    Args:
        path: the log folder (or one of its files).
        unlabeled: records without a `label`: "skip" them, "keep" them as unlabeled cases, or "decision":
            label them by the guard's own decision (flagged, blocked or rewritten = hallucinated), marked
            meta.label_source.
        name: the dataset name; default: the folder's name.
    """
    if unlabeled not in ("skip", "keep", "decision"):
        raise SuiteError(f"guardlog: unlabeled: expected skip, keep or decision, got {unlabeled!r}")
    dataset = name or Path(path).resolve().name
    torn = TornLines()
    for item in iter_log(path, torn):
        if isinstance(item, RecordError):
            yield item
            continue
        loc, rec = item
        data = rec.model_dump(exclude=HEADER)
        source: str | None = "label"
        if rec.label is None:
            if unlabeled == "keep":
                source = None
            elif unlabeled == "skip" or rec.decision.action is None:
                continue
            else:
                data["label"] = rec.decision.action != "allowed"
                source = LABEL_SOURCE
        case = record_to_case(Record(data, loc), _SPEC, dataset)
        if isinstance(case, Case):
            meta = dict(case.meta.get("meta") or {})
            case.meta = {**meta, "decision": case.meta.get("decision"), "label_source": source}
        yield case
    if torn:
        warnings.warn(f"{path}: {torn}", stacklevel=2)


guardlog.files = lambda path, **_: log_files(path)  # type: ignore[attr-defined]
