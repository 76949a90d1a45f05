"""The `scores` verifier: scores a detector already produced, measured like any other verifier.

Two places a score can come from:
- a field of each case (`field: meta.vendor_score`): what a loader copied from the record;
- a predictions file keyed by case id (`file: ./preds.csv, key: case_id, column: score`): CSV, TSV,
  JSONL or Parquet, read once (pyarrow for CSV and Parquet: a million rows in about a second).

What teams log is rarely our convention, so values are converted: `scale` divides (a 0-100 score with
`scale: 100`; values outside 0..scale are errors), `higher_means: faithful` inverts (score = 1 - value:
a consistency score becomes a hallucination score), `binary: true` says the values are a 0/1 decision
(anything else is an error; the metrics then report one operating point at the decision itself instead
of fitting a threshold). `probabilistic: true` says the converted values are probabilities of
"hallucinated", so the report shows their calibration.

Every case gets a verdict: a case without a value (no row, an empty cell, no such field), with a value
that is not a number, or with two rows that disagree, gets an error verdict that names the file and line
(or the field and the case's own record). Ids in the file that match no case of the run are reported
by `run_notes` after the run, with how many and a few examples.
"""

from __future__ import annotations

import csv
import hashlib
import json
import math
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from verifybench._util.fieldpath import parse_path, show_path
from verifybench.cases import Case, Verdict
from verifybench.errors import SuiteError
from verifybench.verifiers.base import Verifier

FORMATS = {".csv": "csv", ".tsv": "tsv", ".jsonl": "jsonl", ".ndjson": "jsonl", ".parquet": "parquet", ".pq": "parquet"}
EXAMPLES = 5
# A logged cost per case above this is a unit or column mix-up, not a cost (and sums of such values overflow).
MAX_COST_USD = 1e6


class ScoresOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    field: str | None = Field(None, description="a case field holding the score, e.g. meta.vendor_score")
    file: str | None = Field(None, description="a predictions file (CSV, TSV, JSONL, Parquet) keyed by case id")
    format: Literal["auto", "csv", "tsv", "jsonl", "parquet"] = Field("auto", description="auto: from the file's suffix")
    key: str = Field("id", description="(file) the column holding the case id")
    column: str = Field("score", description="(file) the column holding the score")
    higher_means: Literal["hallucinated", "faithful"] = "hallucinated"
    scale: float | None = Field(None, gt=0, description="values lie in 0..scale (100 for percentages); divided by it")
    binary: bool = Field(False, description="the values are a 0/1 decision, not a ranking")
    probabilistic: bool = Field(False, description="the converted values are probabilities of 'hallucinated'")
    latency_column: str | None = Field(None, description="(file) a column of logged latencies in milliseconds")
    cost_column: str | None = Field(None, description="(file) a column of logged costs in USD per case")

    @model_validator(mode="after")
    def _one_source(self):
        if (self.field is None) == (self.file is None):
            raise ValueError("give exactly one of `field` (a case field) or `file` (a predictions file)")
        if self.field is not None and (self.latency_column or self.cost_column):
            raise ValueError("latency_column and cost_column need a predictions `file`")
        return self


class ScoresError(ValueError):
    """A value that cannot be used as a score; the message names where it is."""


class Predictions:
    """A predictions file as arrays: case id -> row, the row's value (NaN when empty), its location.

    Rows whose value is not a number, or ids given twice with different values, are kept as messages
    (`bad`), so exactly those cases get error verdicts and every other case is scored.
    """

    def __init__(self, path: Path, fmt: str, key: str, column: str, extra: list[str]):
        self.path, self.fmt, self.key, self.column = path, fmt, key, column
        self.name = path.name
        reader = {"csv": self._read_csv, "tsv": self._read_csv, "jsonl": self._read_jsonl,
                  "parquet": self._read_parquet}[fmt]
        ids, columns, self._lines = reader([column, *extra])
        self.ids: list[str] = ids
        self.values: dict[str, np.ndarray] = {}
        self.bad: dict[int, str] = {}
        for name, raw in columns.items():
            self.values[name] = self._numeric(name, raw)
        self.row: dict[str, int] = dict(zip(ids, range(len(ids))))
        if len(self.row) != len(ids):
            self._duplicates()

    # -- where a row is -----------------------------------------------------------------------------
    def where(self, row: int) -> str:
        if self.fmt == "parquet":
            return f"{self.name} row {row + 1}"
        return f"{self.name}:{self.line(row)}"

    def line(self, row: int) -> int:
        if self._lines is None:  # CSV read by pyarrow: exact lines only when a message needs one
            self._lines = _csv_record_lines(self.path, "\t" if self.fmt == "tsv" else ",")
        return int(self._lines[row])

    # -- readers ------------------------------------------------------------------------------------
    def _missing_columns(self, have: list[str], want: list[str]) -> None:
        lost = [c for c in [self.key, *want] if c not in have]
        if lost:
            raise SuiteError(f"{self.path}: no column {lost[0]!r}; the file has: {', '.join(map(str, have)) or 'none'}")

    def _read_csv(self, want: list[str]):
        import pyarrow as pa
        from pyarrow import csv as pacsv

        delimiter = "\t" if self.fmt == "tsv" else ","
        try:
            with open(self.path, encoding="utf-8-sig", newline="") as f:
                header = next(csv.reader(f, delimiter=delimiter), [])
        except UnicodeDecodeError as e:
            raise SuiteError(f"{self.path}: not UTF-8 text ({e.reason} at byte {e.start})") from None
        self._missing_columns(header, want)
        try:
            table = pacsv.read_csv(
                self.path, parse_options=pacsv.ParseOptions(delimiter=delimiter),
                convert_options=pacsv.ConvertOptions(include_columns=[self.key, *want],
                                                     column_types={self.key: pa.string()}))
        except (pa.ArrowInvalid, OSError) as e:
            raise SuiteError(f"{self.path}: cannot be read as {self.fmt.upper()}: {e}") from None
        ids = table.column(self.key).to_pylist()
        return self._check_ids(ids), {c: table.column(c) for c in want}, None

    def _read_parquet(self, want: list[str]):
        import pyarrow as pa
        import pyarrow.parquet as pq

        try:
            schema = pq.read_schema(self.path)
            self._missing_columns(schema.names, want)
            table = pq.read_table(self.path, columns=[self.key, *want])
        except (pa.ArrowInvalid, OSError) as e:
            raise SuiteError(f"{self.path}: cannot be read as Parquet: {e}") from None
        ids = [None if v is None else str(v) for v in table.column(self.key).to_pylist()]
        return self._check_ids(ids), {c: table.column(c) for c in want}, None

    def _read_jsonl(self, want: list[str]):
        ids, lines = [], []
        cols: dict[str, list] = {c: [] for c in want}
        seen_keys: set[str] = set()
        with open(self.path, "rb") as f:
            for n, raw in enumerate(f, 1):
                if not raw.strip():
                    continue
                try:
                    obj = json.loads(raw)
                except (json.JSONDecodeError, UnicodeDecodeError) as e:
                    raise SuiteError(f"{self.name}:{n}: not a JSON object: {e}") from None
                if not isinstance(obj, dict):
                    raise SuiteError(f"{self.name}:{n}: expected a JSON object, got {type(obj).__name__}")
                seen_keys.update(obj)
                if self.key not in obj or obj[self.key] is None:
                    raise SuiteError(f"{self.name}:{n}: no {self.key!r} (the case id key)")
                ids.append(str(obj[self.key]))
                lines.append(n)
                for c in want:
                    cols[c].append(obj.get(c))
        if ids:
            for c in want:
                if all(v is None for v in cols[c]):
                    self._missing_columns(sorted(seen_keys), [c])
        return ids, cols, np.asarray(lines, dtype=np.int64)

    def _check_ids(self, ids: list) -> list[str]:
        if None in ids:
            row = ids.index(None)
            self._lines = None
            raise SuiteError(f"{self.where(row)}: empty {self.key!r} (the case id key)")
        return ids

    # -- values -------------------------------------------------------------------------------------
    def _numeric(self, name: str, raw) -> np.ndarray:
        """Float values, NaN where the cell is empty; a value that is not a number is kept as a message."""
        import pyarrow as pa

        if isinstance(raw, (pa.ChunkedArray, pa.Array)):
            t = raw.type
            if pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t) or pa.types.is_null(t):
                return raw.cast(pa.float64()).to_numpy(zero_copy_only=False).astype(float)
            raw = raw.to_pylist()
        out = np.empty(len(raw), dtype=float)
        for i, v in enumerate(raw):
            x = _number(v)
            if x is None:
                out[i] = np.nan
                if v is not None and not (isinstance(v, str) and not v.strip()):
                    self.bad.setdefault(i, f"{self.where(i)}: column {name!r}: {v!r} is not a number")
            else:
                out[i] = x
        return out

    def check_logged(self, latency: str | None, cost: str | None) -> None:
        """A logged latency that is negative or infinite, or a cost that is negative, infinite or past
        `MAX_COST_USD` (a sum of such costs overflows, and the cost per 1k silently becomes nothing), is
        a bad value: that case gets an error verdict naming the file and line."""
        for column, what in ((latency, "latency"), (cost, "cost")):
            if not column:
                continue
            v = self.values[column]
            given = ~np.isnan(v)
            with np.errstate(invalid="ignore"):
                wrong = given & (~np.isfinite(v) | (v < 0) | ((v > MAX_COST_USD) if what == "cost" else False))
            for row in np.flatnonzero(wrong).tolist():
                expected = ("a latency in milliseconds (0 or more)" if what == "latency"
                            else f"a cost in USD per case (0 to {MAX_COST_USD:g})")
                self.bad.setdefault(row, f"{self.where(row)}: column {column!r}: {v[row]:g} is not {expected}")

    def _duplicates(self) -> None:
        import pandas as pd

        frame = pd.DataFrame({"id": self.ids, "v": self.values[self.column]})
        dup = frame[frame["id"].duplicated(keep=False)]
        for cid, group in dup.groupby("id", sort=False):
            rows = group.index.tolist()
            vals = group["v"].to_numpy()
            if not (np.all(vals == vals[0]) or np.all(np.isnan(vals))):
                where = " and ".join(self.where(r) for r in rows[:3])
                msg = f"case id {cid!r} has {len(rows)} rows with different values ({where})"
                for r in rows:
                    self.bad[r] = msg
            self.row[cid] = rows[0]


def _number(v: Any) -> float | None:
    if v is None or isinstance(v, bool):
        return None if v is None else float(v)
    if isinstance(v, (int, float)):
        return None if isinstance(v, float) and math.isnan(v) else float(v)
    if isinstance(v, str):
        s = v.strip()
        if s.lower() in ("", "nan", "na", "n/a", "null", "none"):
            return None
        try:
            return float(s)
        except ValueError:
            return None
    return None


def _csv_record_lines(path: Path, delimiter: str) -> np.ndarray:
    """The line each data record starts on, counting quoted newlines, as Python's csv module reads it."""
    out = []
    with open(path, encoding="utf-8-sig", newline="") as f:
        reader = csv.reader(f, delimiter=delimiter)
        end = 0
        for i, row in enumerate(reader):
            start, end = end + 1, reader.line_num
            if i == 0 or not row:
                continue
            out.append(start)
    return np.asarray(out, dtype=np.int64)


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


CASE_FIELDS = tuple(Case.model_fields)


def case_field(case: Case, name: str) -> Any:
    """A field of a case by its path (`meta.vendor_score`, `meta.scores.hhem`, `meta["published.hhem-2.1"]`
    for a key that holds a dot); KeyError when absent."""
    head, *rest = parse_path(name)
    value: Any = getattr(case, head)
    for part in rest:
        if not isinstance(value, dict) or part not in value:
            raise KeyError(name)
        value = value[part]
    if value is None:
        raise KeyError(name)
    return value


def missing_field_message(batch: list[Case], name: str) -> str | None:
    """None when some case of `batch` has the field `name`; otherwise where the path stops, with the keys
    that exist there across the batch (so `meta.published.hhem-2.1`, whose key holds dots, is answered
    with `meta` holding "published.hhem-2.1")."""
    parts = parse_path(name)
    deepest, keys = 0, set[str]()
    for case in batch:
        value: Any = getattr(case, parts[0], None)
        depth = 1
        for part in parts[1:]:
            if not isinstance(value, dict) or part not in value:
                break
            value, depth = value[part], depth + 1
        if depth == len(parts) and value is not None:
            return None
        if depth > deepest:
            deepest, keys = depth, set()
        if depth == deepest and isinstance(value, dict):
            keys |= set(map(str, value))
    where = show_path(parts[:deepest])
    have = ", ".join(show_path([*parts[:deepest], k]) for k in sorted(keys)[:30]) or "none"
    dotted = [k for k in keys if "." in k]
    hint = (f"; a key that holds a dot is written in brackets: {show_path([*parts[:deepest], sorted(dotted)[0]])}"
            if dotted else "")
    return (f"field {name!r}: no case of the first batch ({len(batch)} cases) has it; {where!r} holds: "
            f"{have}{hint}")


class ScoresVerifier(Verifier):
    name = "scores"
    description = "precomputed scores from a case field or a predictions file (CSV, JSONL, Parquet), as a verifier"
    Options = ScoresOptions
    # A worker reads the file itself rather than receiving a million rows through pickle.
    lazy = ("_table",)

    def __init__(self, id: str | None = None, **options):
        super().__init__(id, **options)
        o = self.options
        # What the metrics read from the manifest: a 0/1 decision has one operating point, not a curve.
        self.binary = o.binary
        self.probabilistic = o.probabilistic
        # Logged latencies are each case's own: no share of the batch for a case without one, no warm-up.
        self.latency_logged = o.latency_column is not None
        self._sha = None
        if o.field is not None:
            try:
                head = parse_path(o.field)[0]
            except ValueError as e:
                raise SuiteError(f"verifier {self.id!r} (scores): {e}") from None
            if head not in CASE_FIELDS:
                raise SuiteError(f"verifier {self.id!r} (scores): field {o.field!r}: a case has no field "
                                 f"{head!r}; case fields: {', '.join(CASE_FIELDS)}")
        else:
            path = Path(o.file).expanduser()
            if not path.is_file():
                raise SuiteError(f"verifier {self.id!r} (scores): option 'file': no such file {o.file}")
            fmt = o.format if o.format != "auto" else FORMATS.get(path.suffix.lower())
            if fmt is None:
                raise SuiteError(f"verifier {self.id!r} (scores): {path.name}: unknown format; set "
                                 f"`format:` to one of csv, tsv, jsonl, parquet")
            self._path, self._fmt = path, fmt
            self._sha = file_sha256(path)
            _ = self.table  # read now: a bad file is a suite error before any case is scored

    @property
    def config(self) -> dict:
        cfg = super().config
        if self._sha is not None:
            # The file's content, not only its name, decides the scores: a changed file is a new config.
            cfg["file_sha256"] = self._sha
        return cfg

    @property
    def table(self) -> Predictions:
        o = self.options
        extra = [c for c in (o.latency_column, o.cost_column) if c]

        def read() -> Predictions:
            t = Predictions(self._path, self._fmt, o.key, o.column, extra)
            t.check_logged(o.latency_column, o.cost_column)
            return t
        return self._build_once("_table", read)

    # -- scoring ------------------------------------------------------------------------------------
    def convert(self, value: float, where: str) -> float:
        """A logged value in the score convention: scaled, inverted, checked."""
        o = self.options
        if not math.isfinite(value):
            raise ScoresError(f"{where}: {value!r} is not a finite number")
        if o.scale is not None:
            if not 0 <= value <= o.scale:
                raise ScoresError(f"{where}: {value:g} is outside 0..{o.scale:g} (scale)")
            value = value / o.scale
        if o.binary and value not in (0.0, 1.0):
            top = f"{o.scale:g}" if o.scale is not None else "1"
            raise ScoresError(f"{where}: {value if o.scale is None else value * o.scale:g} is not a 0/{top} "
                              f"decision (binary: true)")
        if o.probabilistic and not 0.0 <= value <= 1.0:
            raise ScoresError(f"{where}: {value:g} is not a probability (probabilistic: true); set `scale`")
        return 1.0 - value if o.higher_means == "faithful" else value

    def check_cases(self, batch: list[Case]) -> None:
        """Called by the runner with the run's first batch: a `field` no case of it has is a suite error
        (a misspelt path, or a key holding a dot written without brackets), not an error verdict on every
        case of the run."""
        if self.options.field is not None:
            missing = missing_field_message(batch, self.options.field)
            if missing is not None:
                raise SuiteError(f"verifier {self.id!r} (scores): {missing}")

    def verify(self, batch: list[Case]) -> list[Verdict]:
        return [self._one(case) for case in batch]

    def _one(self, case: Case) -> Verdict:
        try:
            if self.options.field is not None:
                return self._from_field(case)
            return self._from_file(case)
        except (ScoresError, KeyError) as e:
            msg = e.args[0] if isinstance(e, ScoresError) else str(e)
            return Verdict(case_id=case.id, verifier=self.id, error=msg)

    def _from_field(self, case: Case) -> Verdict:
        o = self.options
        loc = getattr(case, "_loc", None)
        where = f"field {o.field!r}" + (f" of the case at {loc}" if loc is not None else "")
        try:
            raw = case_field(case, o.field)
        except KeyError:
            raise ScoresError(f"no score: the case has no {where}") from None
        value = _number(raw)
        if value is None:
            raise ScoresError(f"{where}: {raw!r} is not a number")
        return Verdict(case_id=case.id, verifier=self.id, score=self.convert(value, where),
                       detail={"raw": value})

    def _from_file(self, case: Case) -> Verdict:
        o, t = self.options, self.table
        row = t.row.get(case.id)
        if row is None:
            raise ScoresError(f"no score: {t.name} has no row with {o.key} = {case.id!r}")
        if row in t.bad:
            raise ScoresError(t.bad[row])
        value = float(t.values[o.column][row])
        if math.isnan(value):
            raise ScoresError(f"no score: {t.where(row)}: column {o.column!r} is empty")
        verdict = Verdict(case_id=case.id, verifier=self.id, score=self.convert(value, t.where(row)),
                          detail={"raw": value, "row": row + 1})
        for column, attr in ((o.latency_column, "latency_ms"), (o.cost_column, "cost_usd")):
            if column:
                logged = float(t.values[column][row])
                if not math.isnan(logged):
                    setattr(verdict, attr, logged)
                    if attr == "latency_ms":
                        verdict.latency_kind = "case"
        return verdict

    # -- after the run ------------------------------------------------------------------------------
    def run_notes(self, case_ids: set[str]) -> list[str]:
        """What the report should say about the file once every case of the run is known: ids that
        match no case (a file for another data set, or ids written differently)."""
        if self.options.file is None:
            return []
        t = self.table
        unmatched = [i for i in t.row if i not in case_ids]
        if not unmatched:
            return []
        examples = ", ".join(repr(i) for i in unmatched[:EXAMPLES])
        return [f"{len(unmatched):,} of {len(t.row):,} ids in {t.name} match no case of this run "
                f"(e.g. {examples}); check `key` ({self.options.key!r}) and that the file is for this data set"]
