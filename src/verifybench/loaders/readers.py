"""Record readers: each streams one file format as `Record`s, yielding a `RecordError` for a bad record.

Nothing here holds a whole file in memory. Lines are decoded one at a time so an invalid UTF-8 byte is
reported with its line, column and byte offset instead of failing the file. A UTF-8 byte-order mark at the
start of a file (what Excel and Windows tools write) is read as such, as `utf-8-sig` does.
"""

from __future__ import annotations

import codecs
import csv
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from verifybench._util.safeio import lone_surrogate, surrogate_message
from verifybench.errors import DataError, Location, RecordError

# A JSON escape of a UTF-16 surrogate: only a line holding one can decode to a lone surrogate.
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


@dataclass(frozen=True)
class Record:
    data: dict[str, Any]
    loc: Location


RecordStream = Iterator[Record | RecordError]


def _decode(raw: bytes, loc: Location, offset: int) -> str | RecordError:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        return RecordError(
            loc,
            f"invalid UTF-8 byte 0x{raw[e.start]:02x} at column {e.start + 1} "
            f"(byte offset {offset + e.start} in the file)",
        )


BOM = codecs.BOM_UTF8


def _open_binary(path: Path):
    try:
        return open(path, "rb")
    except FileNotFoundError:
        raise DataError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise DataError(f"{path}: is a folder, expected a file") from None


def read_jsonl(path: str | Path) -> RecordStream:
    """Stream a JSON Lines file: one JSON object per line; blank lines are passed over.

    Args:
        path: the file to read.
    """
    path = Path(path)
    offset = 0
    index = 0
    with _open_binary(path) as f:
        for lineno, raw in enumerate(f, start=1):
            line_offset, offset = offset, offset + len(raw)
            if lineno == 1 and raw.startswith(BOM):
                raw, line_offset = raw[len(BOM):], line_offset + len(BOM)
            if not raw.strip():
                continue
            loc = Location(str(path), index, lineno)
            index += 1
            text = _decode(raw, loc, line_offset)
            if isinstance(text, RecordError):
                yield text
                continue
            try:
                data = json.loads(text)
            except json.JSONDecodeError as e:
                yield RecordError(loc, f"malformed JSON: {e.msg} at column {e.colno}")
                continue
            if not isinstance(data, dict):
                yield RecordError(loc, f"expected a JSON object, got {type(data).__name__}")
                continue
            if _SURROGATE_ESCAPE.search(raw) and (field := lone_surrogate(data)) is not None:
                # `"\ud800"` alone decodes to a string no file (nor the run's case index) can hold.
                yield RecordError(loc, surrogate_message(field), field or None)
                continue
            yield Record(data, loc)


def read_json(path: str | Path, records: str = "item") -> RecordStream:
    """Stream the objects of a JSON array (or of an array nested inside the document).

    Args:
        path: the file to read.
        records: ijson prefix of the records: "item" for a top-level array, "data.item" for the array
            under a top-level "data" key.
    """
    import ijson

    path = Path(path)
    done = 0  # records yielded: a second parser goes on from there
    backend = ijson
    while True:
        with _open_binary(path) as f:
            if f.read(len(BOM)) != BOM:
                f.seek(0)
            try:
                for index, data in enumerate(backend.items(f, records, use_float=True)):
                    if index < done:
                        continue
                    loc = Location(str(path), index)
                    done = index + 1
                    if not isinstance(data, dict):
                        yield RecordError(loc, f"expected a JSON object, got {type(data).__name__}")
                        continue
                    yield Record(data, loc)
                return
            except (ijson.JSONError, UnicodeDecodeError) as e:
                if "integer overflow" in str(e) and backend is ijson and ijson.backend != "python":
                    # The C parser holds integers in 64 bits; the Python one reads any integer (slower, and
                    # only from the record that needs it on).
                    backend = ijson.get_backend("python")
                    continue
                # A broken array cannot be re-synchronised: nothing after this point is readable.
                raise DataError(f"{path}: unreadable JSON after record {max(done - 1, 0)}: {e}") from None


def read_csv(path: str | Path, delimiter: str = ",", cells: Callable[[list[str]], list[str]] | None = None
             ) -> RecordStream:
    """Stream a CSV file with a header row; each row becomes a record of strings.

    Args:
        path: the file to read.
        delimiter: the field separator ("," or "\\t" for TSV).
        cells: applied to the header's and each row's list of cells before they become a record (a file
            format's own escaping undone, say).
    """
    path = Path(path)
    bad_lines: dict[int, RecordError] = {}

    def lines() -> Iterator[str]:
        offset = 0
        with _open_binary(path) as f:
            for lineno, raw in enumerate(f, start=1):
                if lineno == 1 and raw.startswith(BOM):
                    raw, offset = raw[len(BOM):], offset + len(BOM)
                text = _decode(raw, Location(str(path), -1, lineno), offset)
                offset += len(raw)
                if isinstance(text, RecordError):
                    bad_lines[lineno] = text
                    text = raw.decode("utf-8", errors="replace")
                yield text

    reader = csv.reader(lines(), delimiter=delimiter)
    header = next(reader, None)
    if header is None:
        return
    if cells is not None:
        header = cells(header)
    width = len(header)
    first_line = reader.line_num + 1  # the header may span lines (a quoted newline)
    index = 0
    for row in reader:
        spanned = range(first_line, reader.line_num + 1)
        loc = Location(str(path), index, first_line)
        first_line = reader.line_num + 1
        if not row:  # a blank line is no record (as csv.DictReader reads it)
            continue
        index += 1
        bad = next((bad_lines.pop(n) for n in spanned if n in bad_lines), None)
        if bad is not None:
            yield RecordError(loc, bad.message)
        elif len(row) > width:
            yield RecordError(loc, f"{len(row) - width} more values than the header's {width} columns")
        elif len(row) < width:
            yield RecordError(loc, f"fewer values than the header's {width} columns")
        else:
            yield Record(dict(zip(header, row if cells is None else cells(row))), loc)


def read_parquet(path: str | Path, batch_size: int = 1024) -> RecordStream:
    """Stream a Parquet file row group by row group.

    Args:
        path: the file to read.
        batch_size: rows decoded at a time.
    """
    import pyarrow.parquet as pq

    path = Path(path)
    if not path.exists():
        raise DataError(f"{path}: no such file")
    index = 0
    try:
        file = pq.ParquetFile(path)
    except Exception as e:  # noqa: BLE001 - pyarrow raises several types for a file that is not Parquet
        raise DataError(f"{path}: not a readable Parquet file: {e}") from None
    for batch in file.iter_batches(batch_size=batch_size):
        for data in batch.to_pylist():
            yield Record(data, Location(str(path), index))
            index += 1


def read_hf(
    path: str,
    name: str | None = None,
    split: str = "train",
    data_files: str | list[str] | dict[str, Any] | None = None,
    revision: str | None = None,
) -> RecordStream:
    """Stream a Hugging Face `datasets` dataset: a hub name (online) or a local builder such as "json".

    Args:
        path: hub dataset name, or a packaged builder ("json", "csv", "parquet") for local files.
        name: the dataset configuration, if it has several.
        split: which split to read.
        data_files: local files for a packaged builder.
        revision: a hub revision (commit, tag or branch) to pin.
    """
    try:
        import datasets
    except ImportError:
        raise DataError("the 'hf' loader needs the datasets package: pip install 'verifybench[hf]'") from None

    ds = datasets.load_dataset(  # type: ignore[attr-defined]  # datasets re-exports it without __all__
        path, name=name, split=split, data_files=data_files, revision=revision, streaming=True
    )
    where = f"hf:{path}" + (f"/{name}" if name else "") + f"[{split}]"
    for index, data in enumerate(ds):
        yield Record(dict(data), Location(where, index))
