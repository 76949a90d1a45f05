"""Generic sources: a file in a common format plus a `FieldSpec` that maps its fields onto a `Case`."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from verifybench.cases import Case
from verifybench.errors import RecordError, SuiteError
from verifybench.loaders.fields import FieldSpec, record_to_case
from verifybench.loaders.readers import RecordStream, read_csv, read_hf, read_json, read_jsonl, read_parquet

CaseStream = Iterator[Case | RecordError]


def field_spec(fields: FieldSpec | dict | None) -> FieldSpec:
    """A `FieldSpec` from its dict form; a bad mapping is a `SuiteError` naming the key."""
    if isinstance(fields, FieldSpec):
        return fields
    if fields is not None and not isinstance(fields, dict):
        raise SuiteError(f"fields: expected a mapping of Case parts to record fields, got {type(fields).__name__}")
    try:
        return FieldSpec.model_validate(fields or {})
    except ValidationError as e:
        raise SuiteError(fields_error(e)) from None


def fields_error(e: ValidationError) -> str:
    err = e.errors()[0]
    key = ".".join(str(p) for p in err["loc"])
    if err["type"] == "extra_forbidden":
        return f"fields: unknown key {key!r}; the keys are: {', '.join(FieldSpec.model_fields)}"
    if not key:  # a check across keys (the label's polarity)
        return f"fields: {err['msg'].removeprefix('Value error, ')}"
    return f"fields.{key}: {err['msg']}"


def _map(records: RecordStream, fields: FieldSpec | dict | None, name: str, doc_type: str,
         list_cells: bool = False) -> CaseStream:
    spec = field_spec(fields)  # before the first record: a bad mapping fails even on an empty file
    return _mapped(records, spec, name, doc_type, list_cells)


def _mapped(records: RecordStream, spec: FieldSpec, name: str, doc_type: str, list_cells: bool) -> CaseStream:
    for rec in records:
        yield rec if isinstance(rec, RecordError) else record_to_case(rec, spec, name, doc_type, list_cells)


def jsonl(path: str | Path, fields: FieldSpec | dict | None = None, name: str | None = None,
          doc_type: str = "default") -> CaseStream:
    """Cases from a JSON Lines file.

    Args:
        path: the .jsonl file.
        fields: the field mapping (`FieldSpec` or its dict form); defaults expect
            `response`, `sources`, `label`.
        name: the dataset name recorded on each case; default: the file's stem.
        doc_type: the doc type of cases whose record has no doc-type field.
    """
    return _map(read_jsonl(path), fields, name or Path(path).stem, doc_type)


def json(path: str | Path, fields: FieldSpec | dict | None = None, name: str | None = None,
         doc_type: str = "default", records: str = "item") -> CaseStream:
    """Cases from a JSON array, streamed.

    Args:
        path: the .json file.
        fields: the field mapping.
        name: the dataset name; default: the file's stem.
        doc_type: the default doc type.
        records: ijson prefix of the records ("item" for a top-level array).
    """
    return _map(read_json(path, records), fields, name or Path(path).stem, doc_type)


def csv(path: str | Path, fields: FieldSpec | dict | None = None, name: str | None = None,
        doc_type: str = "default", delimiter: str = ",") -> CaseStream:
    """Cases from a CSV (or TSV) file with a header row.

    A sources (or claims, spans) cell holding a list, as JSON or as the Python repr `DataFrame.to_csv`
    writes, is read as that list.

    Args:
        path: the .csv file.
        fields: the field mapping; `sources` may name several columns.
        name: the dataset name; default: the file's stem.
        doc_type: the default doc type.
        delimiter: the field separator.
    """
    return _map(read_csv(path, delimiter), fields, name or Path(path).stem, doc_type, list_cells=True)


def parquet(path: str | Path, fields: FieldSpec | dict | None = None, name: str | None = None,
            doc_type: str = "default") -> CaseStream:
    """Cases from a Parquet file, read a row group at a time.

    A string cell in a sources (or claims, spans) column that holds a list literal is read as that list.

    Args:
        path: the .parquet file.
        fields: the field mapping.
        name: the dataset name; default: the file's stem.
        doc_type: the default doc type.
    """
    return _map(read_parquet(path), fields, name or Path(path).stem, doc_type, list_cells=True)


def hf(path: str, fields: FieldSpec | dict | None = None, name: str | None = None,
       doc_type: str = "default", config: str | None = None, split: str = "train",
       data_files: Any = None, revision: str | None = None) -> CaseStream:
    """Cases from Hugging Face `datasets`, streamed: a hub name (online) or local files via a builder.

    For local files use a packaged builder: `path: json` with `data_files: ...`.

    Args:
        path: hub dataset name or builder name.
        fields: the field mapping.
        name: the dataset name; default: `path`.
        doc_type: the default doc type.
        config: the dataset configuration name.
        split: the split to read.
        data_files: local files for a builder.
        revision: a hub revision to pin.
    """
    records = read_hf(path, name=config, split=split, data_files=data_files, revision=revision)
    return _map(records, fields, name or Path(str(path)).name, doc_type, list_cells=path in ("csv", "parquet"))
