"""The label queue's files, read as a dataset (`loader: label-queue`), and the rules its writers share.

`verifybench label-queue` writes two files a reviewer's spreadsheet and the loop read back:

- the CSV (`to_label.csv`): every text cell neutralised for spreadsheets. A cell that begins with `=`,
  `+`, `-`, `@` (or their full-width forms), a tab or a carriage return would run as a formula where a
  spreadsheet opens it (`=HYPERLINK(...)`, `=WEBSERVICE(...)`), so it is written with a leading `'`, the
  usual mark of "text, not a formula". A cell that itself begins with `'` gets one too, so the rule is
  unambiguous: a reader drops exactly one leading `'` and gets the text back exactly. A plain number
  (`-0.25`) stays a number;
- the queue record (`to_label.queue.jsonl`): which case ids were queued. A JSON header line
  (`formats.labelqueue.QueueRecord`), then one JSON string per line, one id each. A row whose id is in
  no queue record (added to the CSV by hand) is not a case anyone queued: every reader lists it and
  leaves it out. A CSV from before queue records (0.1) is read as such: every row, with a note.

```yaml
dataset:
  loader: label-queue
  path: ./to_label.csv
  queue: ./to_label.queue.jsonl   # default: the record beside the CSV
  on_error: skip                  # rows still unlabeled, and rows in no queue, are skipped and counted
```
"""

from __future__ import annotations

import json
import re
import warnings
from collections.abc import Generator, Iterable, Iterator
from pathlib import Path
from typing import Any

from verifybench._util.safeio import replace_atomically, temp_path
from verifybench.errors import DataError, RecordError
from verifybench.formats.base import FormatError
from verifybench.formats.labelqueue import QUEUE_COLUMN, QueueRecord, csv_format
from verifybench.loaders.fields import FieldSpec, record_to_case
from verifybench.loaders.generic import field_spec
from verifybench.loaders.readers import RecordStream, read_csv

KIND = QueueRecord.KIND
RECORD_SUFFIX = ".queue.jsonl"
# What a spreadsheet reads as the start of a formula (OWASP's list, and the full-width forms some read
# the same way), and the mark itself, so that a text beginning with the mark reads back unchanged.
MARK = "'"
FORMULA_START = ("=", "+", "-", "@", "\t", "\r", "\uff1d", "\uff0b", "\uff0d", "\uff20", MARK)
_NUMBER = re.compile(r"-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?")


def neutralise(value: Any) -> Any:
    """A cell as written for a spreadsheet: text that a spreadsheet would run (or that begins with the
    mark) behind one `'`; a plain number, and anything not a string, as it is."""
    if isinstance(value, str) and value.startswith(FORMULA_START) and not _NUMBER.fullmatch(value):
        return MARK + value
    return value


def restore(value: str) -> str:
    """A cell as read back: the one leading `'` `neutralise` adds, dropped."""
    return value[1:] if value.startswith(MARK) else value


def record_path(csv_path: str | Path) -> Path:
    """The queue record beside a queue's CSV: `to_label.csv` -> `to_label.queue.jsonl`."""
    p = Path(csv_path)
    return p.with_name(p.stem + RECORD_SUFFIX)


def write_record(path: Path, entries: Iterable[str | dict[str, Any]], **about: Any) -> Path:
    """Write a queue record (by rename: a reader sees the whole record or none): its header
    (`formats.labelqueue.QueueRecord`, from `about`), then one line per case: its id, or an object with
    its id, round, stratum and inclusion probability; returns its path."""
    header = QueueRecord.new(**about).model_dump_json(by_alias=True)
    tmp = temp_path(path)
    try:
        with open(tmp, "xb") as f:  # a new file: never through a planted link
            f.write((header + "\n").encode())
            for e in entries:
                f.write((json.dumps(e if isinstance(e, dict) else str(e), ensure_ascii=False) + "\n").encode())
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    replace_atomically(tmp, path)
    return path


def read_record(path: str | Path) -> Iterator[str]:
    """The ids of a queue record, streamed (see `read_entries`)."""
    for e in read_entries(path):
        yield e["id"]


def read_header(path: str | Path) -> QueueRecord:
    """A queue record's header, read through `QueueRecord` (its ids left unread)."""
    entries = read_entries(path, with_header=True)
    head = next(entries)
    entries.close()
    assert isinstance(head, QueueRecord)
    return head


def read_entries(path: str | Path, with_header: bool = False) -> Generator[Any, None, None]:
    """A queue record's lines, streamed, each as `{"id": ...}` plus, from format 3, its `round`, `stratum`
    and `inclusion_prob`; the header first when `with_header` (a `QueueRecord`: an older format migrated,
    a newer one refused naming who wrote it). A file that is not one, or a bad line, names file and line."""
    path = Path(path)
    try:
        f = open(path, encoding="utf-8")
    except FileNotFoundError:
        raise DataError(f"{path}: no such queue record (label-queue writes it beside its CSV)") from None
    with f:
        for n, line in enumerate(f, 1):
            try:
                value = json.loads(line)
            except ValueError:
                raise DataError(f"{path}:{n}: not a JSON line") from None
            if n == 1:
                try:
                    head = QueueRecord.parse(value, f"{path}:1")
                except FormatError as e:
                    raise DataError(str(e)) from None
                if with_header:
                    yield head
            elif isinstance(value, str):
                yield {"id": value}
            elif isinstance(value, dict) and isinstance(value.get("id"), str):
                yield value
            else:
                raise DataError(f"{path}:{n}: a case id (a JSON string, or an object with an 'id') expected, "
                                f"got {value!r}")


def is_legacy(csv_path: str | Path) -> bool:
    """Whether a queue CSV is of the format before queue records (no `queue` column) and has no record
    beside it: its rows are read as queued, unchecked, with a note (`legacy_note`)."""
    if record_path(csv_path).exists():
        return False
    for rec in read_rows(csv_path):
        return not isinstance(rec, RecordError) and csv_format(list(rec.data)) == 1
    return False


def legacy_note(csv_path: str | Path) -> str:
    return (f"{csv_path}: a label queue from before queue records (verifybench 0.1: no record beside it, no "
            f"`{QUEUE_COLUMN}` column): its rows cannot be checked against a record, so every row is read as queued")


def read_rows(path: str | Path) -> RecordStream:
    """A queue CSV's rows, streamed (a byte-order mark read as such), every cell restored (the header's too)."""
    return read_csv(path, cells=_restored)


def _restored(cells: list[str]) -> list[str]:
    return [v[1:] if v[:1] == MARK else v for v in cells]


def _files(path: str, queue: str | None = None, **_: Any) -> list[str]:
    return [path, str(queue or record_path(path))]


def label_queue(path: str | Path, fields: FieldSpec | dict | None = None, name: str | None = None,
                doc_type: str = "default", queue: str | Path | None = None) -> Iterator[Any]:
    """Cases from a label queue's CSV (`verifybench label-queue`): cells restored, and a row whose id is
    in no queue record a bad record naming it.

    Args:
        path: the queue's CSV.
        fields: the field mapping (the generated suite gives it).
        name: the dataset name; default: the file's stem.
        doc_type: the default doc type.
        queue: the queue record listing the ids queued; default: the one beside the CSV.
    """
    spec = field_spec(fields)
    record = Path(queue) if queue is not None else record_path(path)
    known: set[str] | None = None
    if queue is None and is_legacy(path):
        warnings.warn(legacy_note(path), stacklevel=2)
    else:
        known = set(read_record(record))
    id_field = spec.id or "id"
    for rec in read_rows(path):
        if isinstance(rec, RecordError):
            yield rec
        elif known is not None and str(rec.data.get(id_field, "")) not in known:
            yield RecordError(rec.loc, f"{rec.data.get(id_field)!r} is in no queue record ({record.name}): a row "
                              "added by hand, not a case the queue holds", id_field)
        else:
            yield record_to_case(rec, spec, name or Path(path).stem, doc_type, list_cells=True)


label_queue.files = _files  # type: ignore[attr-defined]  # the dataset hash covers the CSV and its record

__all__ = ["KIND", "QUEUE_COLUMN", "is_legacy", "label_queue", "legacy_note", "neutralise", "read_entries",
           "read_header", "read_record", "read_rows", "record_path", "restore", "write_record"]
