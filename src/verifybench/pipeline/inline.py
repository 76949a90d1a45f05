"""Runs over data given in Python: `verifybench.run(cases=df, fields=..., verifiers=..., metrics=...)`.

The cases are written into the run directory as `dataset.jsonl`, beside a `suite.yaml` that points at
it with the same `fields:` mapping and `metrics:` block a suite file takes; from there the run goes
exactly as a suite file's does. A file rather than an iterator, because then:
- the dataset content hash is computed from the data's bytes, so gate, compare and resume refuse a run
  over other data as they do for files;
- a killed run resumes from its own directory (`verifybench run --resume R`, no DataFrame needed), and
  `verifybench run R/suite.yaml` repeats it;
- the report reads the sources of the cases it shows back, as for any suite;
- a bad record goes through the file loaders' `FieldSpec` / `record_to_case` path and is named by its
  row in what was passed (`DataFrame[record 12]`: `df.iloc[12]`).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Iterator, Mapping
from datetime import date, datetime, time
from decimal import Decimal
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel

from verifybench._util.safeio import replace_atomically, temp_path, write_text_atomic
from verifybench.cases import Case
from verifybench.errors import SuiteError, VerifybenchError
from verifybench.pipeline.runner import check_installed
from verifybench.rundir import RESULTS
from verifybench.suite import Suite, _relative_paths, load_suite, parse_suite
from verifybench.verifiers import Verifier, build, get_verifier_class

DATA = "dataset.jsonl"  # the cases as given, one record (or one Case) per line
SUITE = "suite.yaml"  # the suite that points at them
DEFAULT_NAME = "cases"


def plain(value: Any) -> Any:
    """`value` as JSON-able Python: numpy scalars and arrays, pandas' missing values (NaN, NA, NaT) as None,
    timestamps as ISO text. A record's missing cell is missing, as the Parquet reader gives it."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if _is_missing(value):  # before the datetime test: pandas.NaT is a datetime
        return None
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):  # np.float64 too
        return None if math.isnan(value) or math.isinf(value) else float(value)
    if type(value).__module__ == "numpy":
        if hasattr(value, "tolist"):  # a scalar (np.int64, np.bool_) or an array
            return plain(value.tolist())
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [plain(v) for v in value]
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, (datetime, date, time)):
        return value.isoformat()
    if isinstance(value, Decimal):
        return plain(float(value))
    if isinstance(value, Path):
        return str(value)
    return str(value)


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _is_missing(value: Any) -> bool:
    # pandas.NA and pandas.NaT without importing pandas for a list of dicts.
    return type(value).__name__ in ("NAType", "NaTType")


# --- what was passed as `cases` -------------------------------------------------------------------------------

class Source:
    """What was passed as `cases`: how its rows are named, whether they are records or `Case`s, and how
    to stream them."""

    def __init__(self, cases: Any):
        self.list_cells = False
        module = type(cases).__module__.split(".")[0]
        if module in ("polars", "pyarrow") and hasattr(cases, "to_pandas"):
            cases, module = cases.to_pandas(), "pandas"  # another table library: read as its pandas frame
        self.cases = cases
        if module == "pandas" and type(cases).__name__ == "DataFrame":
            dup = cases.columns[cases.columns.duplicated()].tolist()
            if dup:
                raise VerifybenchError(f"cases: the DataFrame has duplicate column names: {', '.join(map(str, dup))}")
            self.origin, self.kind, self.list_cells = "DataFrame", "records", True
        elif module == "datasets":
            if type(cases).__name__ in ("DatasetDict", "IterableDatasetDict"):
                raise VerifybenchError(f"cases: a DatasetDict with splits {list(cases)}; pass one split, "
                                       f"e.g. cases=ds[{next(iter(cases), 'train')!r}]")
            self.origin, self.kind, self.list_cells = "Dataset", "records", True
        elif isinstance(cases, (str, os.PathLike)):
            raise VerifybenchError(f"cases: {str(cases)!r} is a path; cases= takes data in memory (a DataFrame, a "
                                   "list of dicts or of Case, a datasets.Dataset). For a file, write a suite "
                                   "(docs/data.md) or read it first, e.g. pd.read_csv")
        elif isinstance(cases, Mapping) or not isinstance(cases, Iterable):
            raise VerifybenchError(f"cases: expected a DataFrame, a list of dicts or of Case, or a datasets.Dataset; "
                                   f"got {type(cases).__name__}")
        else:
            self.cases = list(cases)  # a generator is read once, here
            first = self.cases[0] if self.cases else None
            self.origin = "list"
            self.kind = "cases" if isinstance(first, Case) else "records"
            want = Case if self.kind == "cases" else Mapping
            for i, item in enumerate(self.cases):
                if not isinstance(item, want):
                    raise VerifybenchError(
                        f"cases[{i}]: expected {'a Case' if want is Case else 'a dict (a record)'} like cases[0], "
                        f"got {type(item).__name__}")

    def rows(self) -> Iterator[dict[str, Any]]:
        if self.origin == "DataFrame":
            df = self.cases
            for start in range(0, len(df), 10_000):  # a chunk at a time: to_dict of a million rows at once is not needed
                for row in df.iloc[start:start + 10_000].to_dict(orient="records"):
                    yield plain(row)
        elif self.kind == "cases":
            for case in self.cases:
                yield case.model_dump(mode="json", exclude_none=True)
        else:
            for row in self.cases:
                yield plain(dict(row))

    def write(self, path: Path) -> int:
        """Write every row as a JSON line, then rename into place (a reader sees all of it or none)."""
        tmp = temp_path(path)
        n = 0
        try:
            with open(tmp, "x", encoding="utf-8") as f:
                for row in self.rows():
                    line = json.dumps(row, ensure_ascii=False, allow_nan=False, sort_keys=False)
                    if not _utf8(line):
                        # A lone surrogate ("\ud800") cannot be UTF-8: the row is written with escapes, so
                        # the loader reads it back and names it as a bad record instead of the run failing.
                        line = json.dumps(row, ensure_ascii=True, allow_nan=False, sort_keys=False)
                    f.write(line + "\n")
                    n += 1
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        replace_atomically(tmp, path)
        return n


# --- verifiers given as names, {name: options} or objects ------------------------------------------------------

def _class_name(v: Verifier) -> str:
    """How a suite names `v`'s class: its registered name, else its import path."""
    try:
        if get_verifier_class(v.name) is type(v):
            return v.name
    except SuiteError:
        pass
    return f"{type(v).__module__}:{type(v).__qualname__}"


def verifier_entries(verifiers: Any) -> tuple[list[Any], list[Verifier | None]]:
    """The suite's `verifiers:` list for `verifiers`, and the objects given (None where a name was).

    Options given in Python that are written as "./x" or "../x" are relative to the working directory
    (in a suite file they are relative to the file's folder)."""
    if verifiers is None:
        raise VerifybenchError("verifiers: name the verifiers to run, e.g. verifiers=['rouge', 'anchors'] "
                               "(`verifybench list` shows them)")
    if isinstance(verifiers, (str, Verifier, Mapping)):
        verifiers = [verifiers]
    raw: list[Any] = []
    objects: list[Verifier | None] = []
    here = Path.cwd()
    for i, item in enumerate(verifiers):
        if isinstance(item, str):
            raw.append(item)
            objects.append(None)
        elif isinstance(item, Mapping):
            for name, options in item.items():  # {name: options, other: options} is two verifiers
                if options is not None and not isinstance(options, Mapping):
                    raise VerifybenchError(f"verifiers[{i}] ({name}): options must be a mapping, got "
                                           f"{type(options).__name__}")
                raw.append({str(name): _relative_paths(plain(dict(options or {})), here)})
                objects.append(None)
        elif isinstance(item, Verifier):
            options = _relative_paths(item.options_as_written(), here)  # `${VAR}` as written, never its value
            repeats = {"repeats": item.repeats} if item.repeats > 1 else {}  # set on the object: kept
            raw.append({_class_name(item): {"id": item.id, **repeats, **options}})
            objects.append(item)
        else:
            raise VerifybenchError(f"verifiers[{i}]: expected a verifier name, a {{name: options}} mapping or a "
                                   f"Verifier object, got {type(item).__name__}")
    if not raw:
        raise VerifybenchError("verifiers: the list is empty")
    return raw, objects


# --- the plan: checked before anything is written ------------------------------------------------------------

class InlineRun:
    """An in-memory run, checked: the suite it will write, and the verifier objects to run.

    Everything that can be wrong with the arguments (a `fields:` typo, an unknown verifier or option, a
    bad `metrics:` block) is raised here, before the run directory gets a file."""

    def __init__(self, cases: Any, fields: Mapping | None, verifiers: Any, metrics: Mapping | None,
                 name: str | None, limit: int | None, on_error: str | None, batch_size: int | None):
        self.source = Source(cases)
        if self.source.kind == "cases" and fields is not None:
            raise VerifybenchError("fields: the cases are Case objects already; fields= maps the fields of records "
                                   "(dicts, DataFrame rows) onto a Case")
        name = name or DEFAULT_NAME
        dataset: dict[str, Any] = {"loader": "records", "path": DATA, "origin": self.source.origin,
                                   "kind": self.source.kind}
        if self.source.kind == "records":
            dataset["name"] = name
            if fields is not None:
                dataset["fields"] = plain(dict(fields))
            if self.source.list_cells:
                dataset["list_cells"] = True
        if limit is not None:
            dataset["limit"] = limit
        if on_error is not None:
            dataset["on_error"] = on_error
        entries, self.objects = verifier_entries(verifiers)
        self.raw: dict[str, Any] = {"name": name, "dataset": dataset, "verifiers": entries}
        if metrics is not None:
            self.raw["metrics"] = plain(dict(metrics))
        if batch_size is not None:
            self.raw["batch_size"] = batch_size
        # The same checks a suite file gets (the data is not read), with errors naming the argument.
        suite = parse_suite(self.raw, Path.cwd(), where="verifybench.run()")
        self.verifiers = [obj or build(e.name, e.id, **e.options) for obj, e in zip(self.objects, suite.verifiers)]
        check_installed(suite, self.verifiers)
        if yaml.safe_load(yaml.safe_dump(self.raw, sort_keys=False, allow_unicode=True)) != self.raw:
            raise VerifybenchError("fields, metrics or verifier options hold a value a suite file cannot keep")

    def write(self, run_dir: Path) -> tuple[Suite, list[Verifier]]:
        """Write the cases and the suite into `run_dir` (held by the caller's lock) and read the suite back.

        Refuses a run directory that already holds results: its data file is what a resume reads."""
        results = run_dir / RESULTS
        if results.exists() and results.stat().st_size > 0:
            raise VerifybenchError(f"{run_dir} already holds results; resume it with verifybench.resume({str(run_dir)!r}) "
                                   f"(or `verifybench run --resume {run_dir}`), or pass another out=")
        self.source.write(run_dir / DATA)
        text = ("# Written by verifybench.run(cases=...): the cases are in dataset.jsonl beside this file.\n"
                + yaml.safe_dump(self.raw, sort_keys=False, allow_unicode=True))
        write_text_atomic(run_dir / SUITE, text)
        return load_suite((run_dir / SUITE).resolve()), self.verifiers
