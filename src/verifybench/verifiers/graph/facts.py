"""The fact tables of a domain pack, read and checked cell by cell.

Each table of pack.yaml names its file (CSV, Parquet, or a table of a DuckDB file), its key and the type
of every column:

    text     stripped, not empty              name     upper-case, spaces as `_` ("store credit" -> STORE_CREDIT)
    int      a whole number >= 0              percent  a whole number 0..100
    money    decimal text ("129.99", at most two decimals), kept as integer cents
    bool     true/false (also yes/no, 1/0)    date     ISO 8601 (2026-03-14)

A bad cell, a missing column, a repeated key or a reference to a row that does not exist is an error
naming the file, the line (or row) and the field (`orders.csv:4: field 'amount': '80.0x' is not a
decimal amount`); nothing is guessed. Money never becomes a float, so no rule compares floats.
"""

from __future__ import annotations

import csv
import datetime as dt
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from verifybench.verifiers.graph.pack import FACT_FORMATS, Pack, Table, load_pack


class FactsError(ValueError):
    """A facts file is missing or holds a value that cannot be read."""


def _text(v: Any) -> str:
    v = "" if v is None else str(v).strip()
    if not v:
        raise ValueError("is empty")
    return v


def _upper(v: Any) -> str:
    return "_".join(_text(v).replace("-", " ").upper().split())


def _cents(v: Any) -> int:
    try:
        d = Decimal(_text(v))
    except InvalidOperation:
        raise ValueError(f"{v!r} is not a decimal amount") from None
    if not d.is_finite() or d < 0 or d != d.quantize(Decimal("0.01")):
        raise ValueError(f"{v!r} is not a non-negative amount with at most 2 decimals")
    return int(d * 100)


def _bool(v: Any) -> bool:
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    s = "" if v is None else str(v).strip().lower()
    if s in ("true", "1", "yes"):
        return True
    if s in ("false", "0", "no"):
        return False
    raise ValueError(f"{v!r} is not a boolean (true/false)")


def _int(v: Any) -> int:
    if isinstance(v, (bool, np.bool_)):
        raise ValueError(f"{v!r} is not a whole number")  # noqa: TRY004 - a cell error, reported as such
    try:
        n = int(_text(v))
    except ValueError:
        raise ValueError(f"{v!r} is not a whole number") from None
    if n < 0:
        raise ValueError(f"{v!r} is negative")
    return n


def _percent(v: Any) -> int:
    n = _int(v)
    if n > 100:
        raise ValueError(f"{v!r} is over 100 percent")
    return n


def _date(v: Any) -> dt.date:
    if isinstance(v, dt.datetime):
        return v.date()
    if isinstance(v, dt.date):
        return v
    try:
        return dt.date.fromisoformat(_text(v)[:10] if isinstance(v, pd.Timestamp) else _text(v))
    except ValueError:
        raise ValueError(f"{v!r} is not a date (YYYY-MM-DD)") from None


READERS = {"text": _text, "name": _upper, "int": _int, "percent": _percent, "money": _cents, "bool": _bool,
           "date": _date}
DTYPES = {"text": "object", "name": "object", "int": "int64", "percent": "int64", "money": "int64", "bool": "bool",
          "date": "object"}  # datetime.date objects: DuckDB stores them as DATE


@dataclass
class Facts:
    """A pack's fact tables as typed DataFrames, with the column names rules.py reads (`as:`)."""

    pack: Pack
    frames: dict[str, pd.DataFrame] = field(default_factory=dict)
    folder: str | None = None
    paths: dict[str, Path] = field(default_factory=dict)  # table -> the file it was read from

    def tables(self) -> dict[str, pd.DataFrame]:
        return self.frames


def _rows_of_file(path: Path, table: Table) -> tuple[list[str], list[tuple[int, dict]], str]:
    """(column names, [(line or row number, row)], how to name a row) of one facts file."""
    if path.suffix == ".csv":
        with path.open(newline="", encoding="utf-8") as f:
            reader = csv.DictReader(f)
            names = list(reader.fieldnames or [])
            rows = [(reader.line_num, row) for row in reader]
        return names, rows, "line"
    if path.suffix == ".parquet":
        df = pd.read_parquet(path)
    else:  # a DuckDB database file
        import duckdb

        con = duckdb.connect(str(path), read_only=True)
        try:
            df = con.execute(f'select * from "{table.db_table or table.name}"').df()
        except duckdb.Error as e:
            raise FactsError(f"{path}: table {table.db_table or table.name!r}: {e}") from None
        finally:
            con.close()
    # Row numbers from 1, as a person counts them in a table viewer.
    return list(df.columns), [(i + 1, row) for i, row in enumerate(df.to_dict("records"))], "row"


def read_table(path: Path, table: Table) -> pd.DataFrame:
    """One facts file as a typed DataFrame.

    Raises:
        FactsError: naming the file, the line (CSV) or row (Parquet, DuckDB) and the field of the first
            bad value.
    """
    if not path.is_file():
        raise FactsError(f"{path}: no such facts file (expected table {table.name!r} with columns "
                         f"{', '.join(table.columns)})")
    names, rows, unit = _rows_of_file(path, table)
    label = f"{path}" if path.suffix in FACT_FORMATS else f"{path}[{table.db_table or table.name}]"
    missing = [c for c in table.columns if c not in names]
    if missing:
        raise FactsError(f"{label}:1: missing column(s) {', '.join(missing)}; found {names}")
    columns: dict[str, list] = {c.name: [] for c in table.columns.values()}
    seen: dict[Any, int] = {}
    key = table.columns[table.key]
    for n, row in rows:
        for col in table.columns.values():
            raw = row.get(col.source)
            if isinstance(raw, float) and np.isnan(raw):
                raw = None
            try:
                columns[col.name].append(READERS[col.type](raw if raw is not None else ""))
            except ValueError as e:
                where = f"{label}:{n}" if unit == "line" else f"{label} row {n}"
                raise FactsError(f"{where}: field {col.source!r}: {e}") from None
        k = columns[key.name][-1]
        if k in seen:
            where = f"{label}:{n}" if unit == "line" else f"{label} row {n}"
            raise FactsError(f"{where}: field {table.key!r}: {k!r} repeats {unit} {seen[k]}")
        seen[k] = n
    return pd.DataFrame({c.name: pd.Series(columns[c.name], dtype=DTYPES[c.type]) for c in table.columns.values()})


def _file_in(folder: Path, table: Table) -> Path:
    for ext in FACT_FORMATS:
        if (folder / f"{table.name}{ext}").is_file():
            return folder / f"{table.name}{ext}"
    if table.file is not None and table.file.suffix in (".duckdb", ".db") and (folder / table.file.name).is_file():
        return folder / table.file.name
    return folder / f"{table.name}.csv"


def load_facts(folder: str | Path | None = None, pack: Pack | str = "refunds") -> Facts:
    """A pack's fact tables read and checked.

    Args:
        folder: a folder holding one file per table (`<table>.csv` or `<table>.parquet`) instead of the
            pack's own files; None = the files pack.yaml names.
        pack: the pack (or its name or folder).
    """
    pack = load_pack(pack) if not isinstance(pack, Pack) else pack
    if folder is not None:
        folder = Path(folder)
        if not folder.is_dir():
            raise FactsError(f"{folder}: no such facts folder")
    frames, paths = {}, {}
    for table in pack.tables.values():
        path = _file_in(folder, table) if folder is not None else table.file
        if path is None:
            raise FactsError(f"{pack.folder / 'pack.yaml'}: table {table.name!r} names no file (and no facts folder was given)")
        frames[table.name], paths[table.name] = read_table(path, table), path
    facts = Facts(pack, frames, str(folder) if folder is not None else str(pack.folder), paths)
    check_references(facts)
    return facts


def check_references(facts: Facts) -> None:
    """Every reference points at an existing row: a dangling one would silently derive nothing."""
    pack = facts.pack
    for table in pack.tables.values():
        for col in table.columns.values():
            if col.references is None:
                continue
            target = pack.tables[col.references]
            known = set(facts.frames[target.name][target.key_column])
            values = facts.frames[table.name][col.name]
            bad = ~values.isin(known)
            if bad.any():
                row = int(np.flatnonzero(bad.to_numpy())[0])
                path, target_path = facts.paths.get(table.name), facts.paths.get(target.name)
                where = (f"{path}:{row + 2}" if path is not None and path.suffix == ".csv"
                         else f"{path or table.name} row {row + 1}")
                raise FactsError(f"{where}: field {col.source!r}: {values.iloc[row]!r} is not in "
                                 f"{target_path.name if target_path is not None else target.name}")


def empty_facts(pack: Pack) -> Facts:
    """Fact tables with no rows, for their column types only (when the facts live in the user's tables)."""
    return Facts(pack, {t.name: pd.DataFrame({c.name: pd.Series(dtype=DTYPES[c.type]) for c in t.columns.values()})
                        for t in pack.tables.values()})
