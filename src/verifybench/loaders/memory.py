"""Cases given in Python (a DataFrame, a list of dicts or of `Case`s, a `datasets.Dataset`), read back from
the JSON Lines file `verifybench.run` writes them to in the run directory (see `verifybench.pipeline.inline`).

Records go through the same `FieldSpec` / `record_to_case` path as every file loader; `Case` objects are
validated as they are. A bad record is named by where it sat in what the user passed: `DataFrame[record
12]` is the DataFrame's 13th row (`df.iloc[12]`), `list[record 3]` the list's 4th item.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import ValidationError

from verifybench.cases import Case
from verifybench.errors import Location, RecordError
from verifybench.loaders.fields import FieldSpec
from verifybench.loaders.generic import CaseStream, _map
from verifybench.loaders.readers import Record, RecordStream, read_jsonl


def _relocated(records: RecordStream, origin: str) -> RecordStream:
    # The file is verifybench's own copy: a user knows the row of what they passed, not the file's line.
    for rec in records:
        if isinstance(rec, RecordError):
            yield RecordError(Location(origin, rec.loc.index), rec.message, rec.field)
        else:
            yield Record(rec.data, Location(origin, rec.loc.index))


def records(path: str | Path, fields: FieldSpec | dict | None = None, name: str = "cases",
            doc_type: str = "default", origin: str = "records", kind: Literal["records", "cases"] = "records",
            list_cells: bool = False) -> CaseStream:
    """Cases given in Python to `verifybench.run(cases=...)`, as written into the run directory.

    Args:
        path: the JSON Lines file the run wrote (one record, or one `Case`, per line).
        fields: the field mapping, as in a suite's `fields:` block (records only).
        name: the dataset name recorded on each case.
        doc_type: the doc type of cases whose record has no doc-type field.
        origin: what the user passed ("DataFrame", "list", "Dataset"): bad records are named by it.
        kind: "records" (mapped with `fields`) or "cases" (`Case` objects, validated as they are).
        list_cells: a sources (claims, spans) string holding a list literal is read as that list, as the
            csv and parquet loaders do (a DataFrame read from a CSV holds such strings).
    """
    stream = _relocated(read_jsonl(path), origin)
    if kind == "cases":
        return _cases(stream)
    return _map(stream, fields, name, doc_type, list_cells)


def _cases(stream: RecordStream) -> CaseStream:
    for rec in stream:
        if isinstance(rec, RecordError):
            yield rec
            continue
        try:
            yield Case.model_validate(rec.data).at(rec.loc)
        except ValidationError as e:
            err = e.errors()[0]
            yield RecordError(rec.loc, err["msg"], ".".join(str(p) for p in err["loc"]))
