"""Columnar forms of a run's case index and verdicts: what the metrics, the run checks, the gate and the
report read, without a Python object per case.

A million cases x a few verifiers as pydantic `Verdict`s and one dict per case take gigabytes; as
columns they take tens of megabytes. Two tables, each a pandas DataFrame:

- the case table (`case_table`, or `rundir.read_case_frame`): one row per case, in index order:
  `id` (string), `dataset`, `doc_type`, `split` (categoricals; a missing split is NaN), `label` (bool;
  False where the case has none), `labeled` (bool: whether the case has a label),
  `group` (integer code of `meta.group`, in order of first appearance; a case without one has a group
  of its own, coded at or above `attrs["groups"]`, the number of groups the cases name), one
  `meta.<key>` column per requested meta key holding the slice value (`str` of the value, "none" where
  a case has no such key), and, when read from a file, `offset` (byte offset of
  the case's line, to read the whole row back). `attrs["meta_keys"]` lists every meta key any case has.
- the verdict table (`verdict_table`, or `rundir.read_verdict_frame`): one row per verdict, in file
  order: `case_id` (string), `verifier` (categorical, in order of first appearance), `score`,
  `error`, `latency_ms`, `latency_kind` (categorical), `cost_usd`, `units` (how many units; NaN for
  none), `usage` (the dict, or None), `flipped` and `injected_flip` (from `detail`; nullable
  booleans), `repeats` (a repeated verdict's per-repeat scores, `detail.repeats.scores`, a list with None
  for a failed repeat; None for a verdict scored once), and, when read from a file, `offset` (byte
  offset of the verdict's line, to read the full verdict back, units and all, with
  `rundir.read_verdicts_at`).

Both builders here take rows already in memory (dicts, `Verdict`s); the run-directory readers fill the
same columns from the files, block by block.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from verifybench.cases import Verdict

CASE_FIELDS = ("dataset", "doc_type", "split")  # the categorical columns of the case table
VERDICT_COLUMNS = ("case_id", "verifier", "score", "error", "latency_ms", "latency_kind", "cost_usd", "units",
                   "usage", "flipped", "injected_flip", "repeats")
LATENCY_KINDS = ("case", "batch", "warmup")
_CHUNK = 65536  # rows kept as Python objects before they are packed into arrays


def slice_value(value: Any) -> str:
    """A field's value as a slice name: "none" for no value, else `str` of it."""
    return "none" if value is None else str(value)


def strings_column(chunks: list[pa.Array]) -> pd.Series:
    """Arrow string chunks as a pandas string column, without a Python object per value (and without
    joining the chunks: pandas keeps them as they are)."""
    if not chunks:
        return pd.Series([], dtype="str")
    arr = pa.chunked_array([c.cast(pa.large_string()) for c in chunks], pa.large_string())
    return pd.Series(pd.array(arr, dtype=pd.StringDtype("pyarrow", na_value=np.nan)))


class _Codes:
    """Integer codes of a column with few distinct values (doc types, splits, slice names), added a
    block at a time; the values themselves are kept once each."""

    def __init__(self):
        self.index: dict[Any, int] = {}
        self.parts: list[np.ndarray] = []
        self.pending: list[int] = []

    def code(self, value: Any) -> int:
        if value is None:
            return -1
        c = self.index.get(value)
        if c is None:
            c = self.index[value] = len(self.index)
        return c

    def add(self, value: Any) -> None:
        self.pending.append(self.code(value))

    def add_arrow(self, values: pa.Array) -> None:
        self.pack()
        enc = values.dictionary_encode()
        remap = np.array([self.code(v) for v in enc.dictionary.to_pylist()] + [-1], dtype=np.int32)
        self.parts.append(remap[np.asarray(enc.indices.fill_null(-1), dtype=np.int64)])

    def pack(self) -> None:
        if self.pending:
            self.parts.append(np.array(self.pending, dtype=np.int32))
            self.pending = []

    def categorical(self) -> pd.Categorical:
        """A categorical with the categories sorted (as `sorted` orders them); None is NaN."""
        self.pack()
        codes = np.concatenate(self.parts) if self.parts else np.empty(0, np.int32)
        self.parts = []
        names = list(self.index)
        order = sorted(range(len(names)), key=names.__getitem__)
        remap = np.empty(len(names) + 1, np.int32)
        remap[order] = np.arange(len(names), dtype=np.int32)
        remap[len(names)] = -1
        return pd.Categorical.from_codes(remap[codes], categories=pd.Index([names[i] for i in order], dtype=object))


_MISSING = object()  # a case whose meta has no group: a group of its own


class _Groups:
    """Integer codes of `meta.group`: equal for equal values (as a dict keyed by the value sees them),
    unique for each case without one. Blocks of ints or strings are coded by Arrow, without a Python
    object per case; anything else (floats, None, lists, a mix of types) falls back to a dict."""

    def __init__(self):
        self.parts: list[tuple[str, Any]] = []  # ("arrow", array with nulls = missing) | ("python", values)
        self.n_groups = 0  # after `codes`: how many distinct groups; higher codes are cases without one

    def add_arrow(self, values: pa.Array) -> None:
        self.parts.append(("arrow", values))

    def add_missing(self, n: int) -> None:
        self.parts.append(("arrow", pa.nulls(n)))

    def add_python(self, values: list) -> None:
        present = [v for v in values if v is not _MISSING]
        for t, kind in ((int, pa.int64()), (str, pa.string())):
            if all(type(v) is t for v in present):
                self.parts.append(("arrow", pa.array([None if v is _MISSING else v for v in values], kind)))
                return
        self.parts.append(("python", values))

    def codes(self) -> np.ndarray:
        kinds = {p.type for k, p in self.parts if k == "arrow" and not pa.types.is_null(p.type)}
        if all(k == "arrow" for k, _ in self.parts) and len(kinds) <= 1:
            kind = next(iter(kinds), pa.int64())
            values = pa.chunked_array([p.cast(kind) for _, p in self.parts], kind).combine_chunks()
            self.parts = []
            missing = np.asarray(values.is_null(), dtype=bool)
            if pa.types.is_int64(kind):  # numpy's hash of integers is the leanest
                codes, uniques = pd.factorize(np.asarray(values.fill_null(0), dtype=np.int64)[~missing])
                n_unique = len(uniques)
            else:
                enc = values.drop_null().dictionary_encode()
                codes, n_unique = np.asarray(enc.indices, dtype=np.int64), len(enc.dictionary)
            out = np.empty(len(values), np.int64)
            out[~missing] = codes
            out[missing] = n_unique + np.arange(int(missing.sum()))
            self.n_groups = n_unique
            return out
        index: dict[Any, int] = {}  # the rare case: one dict over every value
        found: list[int] = []
        for kind, p in self.parts:
            for v in (p.to_pylist() if kind == "arrow" else p):
                if v is None and kind == "arrow" or v is _MISSING:
                    found.append(-1 - len(found))  # unique, negative: renumbered below
                    continue
                key = _group_key(v)
                c = index.get(key)
                if c is None:
                    c = index[key] = len(index)
                found.append(c)
        codes = np.array(found, dtype=np.int64)
        missing = codes < 0
        codes[missing] = len(index) + np.arange(int(missing.sum()))
        self.n_groups = len(index)
        return codes


def _group_key(value: Any) -> Any:
    try:
        hash(value)
        return value
    except TypeError:  # a list or a dict as a group: equal when written the same
        return ("unhashable", repr(value))


class CaseColumns:
    """Builds the case table from case-index rows: dicts one at a time (`add`), or a parsed block of
    cases.jsonl as Arrow arrays (`add_arrays`)."""

    def __init__(self, meta: Iterable[str] = ()):
        self.meta = tuple(dict.fromkeys(meta))
        self.ids: list[pa.Array] = []
        self.codes = {k: _Codes() for k in (*CASE_FIELDS, *(f"meta.{k}" for k in self.meta))}
        self.labels: list[np.ndarray] = []
        self.labeled: list[np.ndarray] = []
        self.groups = _Groups()
        self.offsets: list[np.ndarray] = []
        self.meta_keys: set[str] = set()
        self._ids: list[str] = []
        self._labels: list[bool] = []
        self._labeled: list[bool] = []
        self._groups: list[Any] = []
        self._offsets: list[int] = []

    def add(self, row: dict[str, Any], offset: int | None = None) -> None:
        meta = row.get("meta") or {}
        self.meta_keys.update(meta)
        self._ids.append(row["id"])
        for f in CASE_FIELDS:
            self.codes[f].add(row.get(f))
        label = row.get("label")
        self._labels.append(bool(label))
        self._labeled.append(label is not None)
        group = meta.get("group")
        self._groups.append(_MISSING if group is None else group)  # a null group is none, not a shared one
        for k in self.meta:
            self.codes[f"meta.{k}"].add(str(meta.get(k, "none")))
        if offset is not None:
            self._offsets.append(offset)
        if len(self._ids) >= _CHUNK:
            self._pack()

    def _pack(self) -> None:
        if not self._ids:
            return
        self.ids.append(pa.array(self._ids, pa.string()))
        self.labels.append(np.array(self._labels, dtype=bool))
        self.labeled.append(np.array(self._labeled, dtype=bool))
        self.groups.add_python(self._groups)
        if self._offsets:
            self.offsets.append(np.array(self._offsets, dtype=np.int64))
        for c in self.codes.values():
            c.pack()
        self._ids, self._labels, self._labeled, self._groups, self._offsets = [], [], [], [], []

    def add_arrays(self, ids: pa.Array, fields: dict[str, pa.Array], label: np.ndarray, group: pa.Array | None,
                   offsets: np.ndarray, meta_keys: Iterable[str], labeled: np.ndarray | None = None) -> None:
        """A parsed block: `fields` holds dataset, doc_type, split and `meta.<key>` (slice names) as
        string arrays; `group` the block's groups (int64 or string, no nulls) or None (no case has one);
        `labeled` which cases have a label (default: all)."""
        self._pack()
        self.ids.append(ids)
        for k, values in fields.items():
            self.codes[k].add_arrow(values)
        self.labels.append(label)
        self.labeled.append(np.ones(len(label), bool) if labeled is None else labeled)
        if group is None:
            self.groups.add_missing(len(label))
        else:
            self.groups.add_arrow(group)
        self.offsets.append(offsets)
        self.meta_keys.update(meta_keys)

    def frame(self) -> pd.DataFrame:
        self._pack()
        cols: dict[str, Any] = {"id": strings_column(self.ids)}
        self.ids = []
        for f in CASE_FIELDS:
            cols[f] = self.codes[f].categorical()
        cols["label"] = np.concatenate(self.labels) if self.labels else np.empty(0, bool)
        cols["labeled"] = np.concatenate(self.labeled) if self.labeled else np.empty(0, bool)
        cols["group"] = self.groups.codes()
        for k in self.meta:
            cols[f"meta.{k}"] = self.codes[f"meta.{k}"].categorical()
        if self.offsets:
            cols["offset"] = np.concatenate(self.offsets)
        df = pd.DataFrame(cols, copy=False)
        df.attrs["meta_keys"] = sorted(self.meta_keys)
        df.attrs["groups"] = self.groups.n_groups  # `group` codes from here on are cases without a group
        return df


def case_table(rows: Iterable[dict[str, Any]], meta: Iterable[str] = ()) -> pd.DataFrame:
    """The case table of case-index rows (dicts with id, dataset, doc_type, split, label, meta)."""
    b = CaseColumns(meta)
    for row in rows:
        b.add(row)
    return b.frame()


def repeat_scores(detail: Any) -> list[float | None] | None:
    """The per-repeat scores a repeated verdict's detail holds (`detail.repeats.scores`), or None."""
    record = detail.get("repeats") if isinstance(detail, dict) else None
    scores = record.get("scores") if isinstance(record, dict) else None
    if not isinstance(scores, list):
        return None
    return [float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else None for x in scores]


def _flag(value: Any) -> int:
    return -1 if value is None else int(bool(value))


FLOATS = ("score", "latency_ms", "cost_usd", "units")
FLAGS = ("flipped", "injected_flip")


class VerdictColumns:
    """Builds the verdict table a block of rows at a time: `Verdict`s (`add`) or the arrays of a parsed
    block of results.jsonl (`add_arrays`). Numbers, flags and codes go straight into columns allocated
    once for `capacity` rows (a bound on the rows to come: the file's lines), so the table is never
    held twice while it is built."""

    def __init__(self, capacity: int):
        self.capacity = capacity
        self.case_id: list[pa.Array] = []
        self.error: list[pa.Array] = []
        self.verifier = _Codes()  # in order of first appearance
        self.verifier_codes = np.empty(capacity, np.int32)
        self.kind = np.empty(capacity, np.int8)  # index into LATENCY_KINDS, -1: none
        self.floats = {k: np.empty(capacity) for k in FLOATS}
        self.flags = {k: np.empty(capacity, np.int8) for k in FLAGS}  # -1 none, 0, 1
        self.offsets = np.empty(capacity, np.int64)
        self.usage: dict[int, dict] = {}  # row -> usage, for the few verdicts that report one
        self.repeats: dict[int, list] = {}  # row -> per-repeat scores, for repeated verdicts only
        self.n = 0

    def add(self, verdicts: list[Verdict], offsets: list[int] | None = None) -> None:
        vs, i, j = verdicts, self.n, self.n + len(verdicts)
        self.case_id.append(pa.array([v.case_id for v in vs], pa.large_string()))
        self.error.append(pa.array([v.error for v in vs], pa.large_string()))
        self.verifier_codes[i:j] = [self.verifier.code(v.verifier) for v in vs]
        self.kind[i:j] = [-1 if v.latency_kind is None else LATENCY_KINDS.index(v.latency_kind) for v in vs]

        def num(values):
            return [np.nan if x is None else x for x in values]

        self.floats["score"][i:j] = num([v.score for v in vs])
        self.floats["latency_ms"][i:j] = num([v.latency_ms for v in vs])
        self.floats["cost_usd"][i:j] = num([v.cost_usd for v in vs])
        self.floats["units"][i:j] = num([len(v.units) if v.units else None for v in vs])
        for k in FLAGS:
            self.flags[k][i:j] = [_flag(v.detail.get(k)) for v in vs]
        for n, v in enumerate(vs, i):
            if v.usage is not None:
                self.usage[n] = v.usage
            scores = repeat_scores(v.detail)
            if scores is not None:
                self.repeats[n] = scores
        self.offsets[i:j] = offsets if offsets is not None else -1
        self.n = j

    def add_arrays(self, n: int, case_id: pa.Array, error: pa.Array, verifier: pa.Array, kind: np.ndarray,
                   floats: dict[str, np.ndarray], flags: dict[str, np.ndarray], usage: dict[int, dict],
                   offsets: np.ndarray, repeats: dict[int, list] | None = None) -> None:
        i, j = self.n, self.n + n
        self.case_id.append(case_id)
        self.error.append(error)
        enc = verifier.dictionary_encode()
        remap = np.array([self.verifier.code(v) for v in enc.dictionary.to_pylist()], dtype=np.int32)
        self.verifier_codes[i:j] = remap[np.asarray(enc.indices, dtype=np.int64)]
        self.kind[i:j] = kind
        for k, arr in floats.items():
            self.floats[k][i:j] = arr
        for k, arr in flags.items():
            self.flags[k][i:j] = arr
        for r, u in usage.items():
            self.usage[i + r] = u
        for r, scores in (repeats or {}).items():
            self.repeats[i + r] = scores
        self.offsets[i:j] = offsets
        self.n = j

    def frame(self, offsets: bool = True) -> pd.DataFrame:
        n = self.n
        usage = np.full(n, None, dtype=object)
        for i, u in self.usage.items():
            usage[i] = u
        repeats = np.full(n, None, dtype=object)
        for i, scores in self.repeats.items():
            repeats[i] = scores
        cols = {
            "case_id": strings_column(self.case_id),
            "verifier": pd.Categorical.from_codes(self.verifier_codes[:n],
                                                  categories=pd.Index(list(self.verifier.index), dtype=object)),
            "score": self.floats["score"][:n],
            "error": strings_column(self.error),
            "latency_ms": self.floats["latency_ms"][:n],
            "latency_kind": pd.Categorical.from_codes(self.kind[:n], categories=pd.Index(LATENCY_KINDS, dtype=object)),
            "cost_usd": self.floats["cost_usd"][:n],
            "units": self.floats["units"][:n],
            "usage": usage,
            **{k: pd.arrays.BooleanArray(self.flags[k][:n] == 1, self.flags[k][:n] < 0) for k in FLAGS},
            "repeats": repeats,
        }
        self.case_id, self.error = [], []
        if offsets:
            cols["offset"] = self.offsets[:n]
        return pd.DataFrame(cols, copy=False)


def verdict_table(verdicts: Iterable[Verdict]) -> pd.DataFrame:
    """The verdict table of `Verdict` objects."""
    verdicts = list(verdicts)
    b = VerdictColumns(len(verdicts))
    for start in range(0, len(verdicts), _CHUNK):
        b.add(verdicts[start:start + _CHUNK])
    return b.frame(offsets=False)


def _arrow_strings(values) -> pa.Array | pa.ChunkedArray:
    arr = pa.array(values) if not isinstance(values, (pa.Array, pa.ChunkedArray)) else values
    return arr if pa.types.is_large_string(arr.type) else arr.cast(pa.large_string())


def positions(ids, in_ids) -> np.ndarray:
    """For each of `ids`, its row in `in_ids` (which holds each id once), or -1. Hashed by Arrow: no
    Python string per id."""
    value_set = _arrow_strings(in_ids)
    if isinstance(value_set, pa.ChunkedArray):
        value_set = value_set.combine_chunks()
    found = pc.index_in(_arrow_strings(ids), value_set=value_set)
    out = np.asarray(found.fill_null(-1), dtype=np.int64)
    del found, value_set
    release_memory()  # the hash table of a million ids
    return out


def release_memory() -> None:
    """Hand freed memory back to the system. Arrow's allocator keeps freed pages for reuse, and glibc's
    malloc keeps the holes that building a million-row table in blocks leaves in its heap (over 100 MB
    after reading a large run): memory a later step of the same process (the report after the scoring,
    the scan of the dataset after the metrics) would otherwise add to the peak."""
    pa.default_memory_pool().release_unused()
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


_TRIM: list = []


def _malloc_trim():
    if not _TRIM:
        import ctypes
        import sys

        fn = None
        if sys.platform.startswith("linux"):
            try:
                fn = ctypes.CDLL(None).malloc_trim  # glibc only; musl and others have none
            except (OSError, AttributeError):
                fn = None
        _TRIM.append(fn)
    return _TRIM[0]
