"""Columnar forms of a run's case index and verdicts: what the metrics, the run checks, the gate and the
report read, without a Python object per case.

A million cases x a few verifiers as pydantic `Verdict`s and one dict per case take gigabytes; as
columns they take tens of megabytes. Two tables, each a pandas DataFrame:

- the case table (`case_table`, or `rundir.read_case_frame`): one row per case, in index order:
  `id` (string), `dataset`, `doc_type`, `split` (categoricals; a missing split is NaN), `label` (bool),
  `group` (integer code of `meta.group`, in order of first appearance; a case without one has a group
  of its own), one `meta.<key>` column per requested meta key holding the slice value (`str` of the
  value, "none" where a case has no such key), and, when read from a file, `offset` (byte offset of
  the case's line, to read the whole row back). `attrs["meta_keys"]` lists every meta key any case has.
- the verdict table (`verdict_table`, or `rundir.read_verdict_frame`): one row per verdict, in file
  order: `case_id` (string), `verifier` (categorical, in order of first appearance), `score`,
  `error`, `latency_ms`, `latency_kind` (categorical), `cost_usd`, `units` (how many units; NaN for
  none), `usage` (the dict, or None), `flipped` and `injected_flip` (from `detail`; nullable
  booleans), and, when read from a file, `offset` (byte offset of the verdict's line, to read the full
  verdict back, units and all, with `rundir.read_verdicts_at`).

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
                   "usage", "flipped", "injected_flip")
LATENCY_KINDS = ("case", "batch", "warmup")
_CHUNK = 65536  # rows kept as Python objects before they are packed into arrays


def slice_value(value: Any) -> str:
    """A field's value as a slice name: "none" for no value, else `str` of it."""
    return "none" if value is None else str(value)


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
            enc = values.dictionary_encode()
            codes = np.asarray(enc.indices.fill_null(-1), dtype=np.int64)
            missing = codes < 0
            codes[missing] = len(enc.dictionary) + np.arange(int(missing.sum()))
            return codes
        index: dict[Any, int] = {}  # the rare case: one dict over every value
        out = []
        for kind, p in self.parts:
            for v in (p.to_pylist() if kind == "arrow" else p):
                if v is None and kind == "arrow" or v is _MISSING:
                    out.append(-1 - len(out))  # unique, negative: renumbered below
                    continue
                key = _group_key(v)
                c = index.get(key)
                if c is None:
                    c = index[key] = len(index)
                out.append(c)
        codes = np.array(out, dtype=np.int64)
        missing = codes < 0
        codes[missing] = len(index) + np.arange(int(missing.sum()))
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
        self.groups = _Groups()
        self.offsets: list[np.ndarray] = []
        self.meta_keys: set[str] = set()
        self._ids: list[str] = []
        self._labels: list[bool] = []
        self._groups: list[Any] = []
        self._offsets: list[int] = []

    def add(self, row: dict[str, Any], offset: int | None = None) -> None:
        meta = row.get("meta") or {}
        self.meta_keys.update(meta)
        self._ids.append(row["id"])
        for f in CASE_FIELDS:
            self.codes[f].add(row.get(f))
        self._labels.append(bool(row["label"]))
        self._groups.append(meta["group"] if "group" in meta else _MISSING)
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
        self.groups.add_python(self._groups)
        if self._offsets:
            self.offsets.append(np.array(self._offsets, dtype=np.int64))
        for c in self.codes.values():
            c.pack()
        self._ids, self._labels, self._groups, self._offsets = [], [], [], []

    def add_arrays(self, ids: pa.Array, fields: dict[str, pa.Array], label: np.ndarray, group: pa.Array | None,
                   offsets: np.ndarray, meta_keys: Iterable[str]) -> None:
        """A parsed block: `fields` holds dataset, doc_type, split and `meta.<key>` (slice names) as
        string arrays; `group` the block's groups (int64 or string, no nulls) or None (no case has one)."""
        self._pack()
        self.ids.append(ids)
        for k, values in fields.items():
            self.codes[k].add_arrow(values)
        self.labels.append(label)
        if group is None:
            self.groups.add_missing(len(label))
        else:
            self.groups.add_arrow(group)
        self.offsets.append(offsets)
        self.meta_keys.update(meta_keys)

    def frame(self) -> pd.DataFrame:
        self._pack()
        ids = pa.chunked_array(self.ids, pa.string()).combine_chunks() if self.ids else pa.array([], pa.string())
        self.ids = []
        cols: dict[str, Any] = {"id": pd.Series(ids.to_pandas(), dtype="str")}
        del ids
        for f in CASE_FIELDS:
            cols[f] = self.codes[f].categorical()
        cols["label"] = np.concatenate(self.labels) if self.labels else np.empty(0, bool)
        cols["group"] = self.groups.codes()
        for k in self.meta:
            cols[f"meta.{k}"] = self.codes[f"meta.{k}"].categorical()
        if self.offsets:
            cols["offset"] = np.concatenate(self.offsets)
        df = pd.DataFrame(cols, copy=False)
        df.attrs["meta_keys"] = sorted(self.meta_keys)
        return df


def case_table(rows: Iterable[dict[str, Any]], meta: Iterable[str] = ()) -> pd.DataFrame:
    """The case table of case-index rows (dicts with id, dataset, doc_type, split, label, meta)."""
    b = CaseColumns(meta)
    for row in rows:
        b.add(row)
    return b.frame()


def categorical(values: pa.Array, categories: list[str] | None = None) -> pd.Categorical:
    """An Arrow string array as a categorical without a Python string per row: categories in order of
    first appearance, or the given ones (a value outside them is NaN)."""
    enc = values.dictionary_encode()
    codes = np.asarray(enc.indices.fill_null(-1), dtype=np.int32)
    found = enc.dictionary.to_pylist()
    if categories is None:
        return pd.Categorical.from_codes(codes, categories=pd.Index(found, dtype=object))
    remap = np.array([categories.index(v) if v in categories else -1 for v in found] or [0], dtype=np.int32)
    codes = np.where(codes >= 0, remap[np.maximum(codes, 0)], -1).astype(np.int32)
    return pd.Categorical.from_codes(codes, categories=pd.Index(categories, dtype=object))


def _flag(value: Any) -> int:
    return -1 if value is None else int(bool(value))


class VerdictColumns:
    """Builds the verdict table, a block of rows at a time: either `Verdict`s (`add`) or arrays
    (`add_arrays`, from a parsed block of results.jsonl)."""

    def __init__(self):
        self.case_id: list[pa.Array] = []
        self.verifier: list[pa.Array] = []
        self.error: list[pa.Array] = []
        self.latency_kind: list[pa.Array] = []
        self.floats: dict[str, list[np.ndarray]] = {k: [] for k in ("score", "latency_ms", "cost_usd", "units")}
        self.flags: dict[str, list[np.ndarray]] = {k: [] for k in ("flipped", "injected_flip")}
        self.offsets: list[np.ndarray] = []
        self.usage: dict[int, dict] = {}  # row -> usage, for the few verdicts that report one
        self.n = 0

    def add(self, verdicts: list[Verdict], offsets: list[int] | None = None) -> None:
        vs = verdicts
        for k, values in (("case_id", [v.case_id for v in vs]), ("verifier", [v.verifier for v in vs]),
                          ("error", [v.error for v in vs]), ("latency_kind", [v.latency_kind for v in vs])):
            getattr(self, k).append(pa.array(values, pa.string()))

        def num(values):
            return np.array([np.nan if x is None else x for x in values], dtype=float)

        self.floats["score"].append(num([v.score for v in vs]))
        self.floats["latency_ms"].append(num([v.latency_ms for v in vs]))
        self.floats["cost_usd"].append(num([v.cost_usd for v in vs]))
        self.floats["units"].append(num([len(v.units) if v.units else None for v in vs]))
        for k in self.flags:
            self.flags[k].append(np.array([_flag(v.detail.get(k)) for v in vs], dtype=np.int8))
        for i, v in enumerate(vs):
            if v.usage is not None:
                self.usage[self.n + i] = v.usage
        if offsets is not None:
            self.offsets.append(np.asarray(offsets, dtype=np.int64))
        self.n += len(vs)

    def add_arrays(self, n: int, strings: dict[str, pa.Array], floats: dict[str, np.ndarray],
                   flags: dict[str, np.ndarray], usage: dict[int, dict], offsets: np.ndarray) -> None:
        for k, arr in strings.items():
            getattr(self, k).append(arr)
        for k, arr in floats.items():
            self.floats[k].append(arr)
        for k, arr in flags.items():
            self.flags[k].append(arr)
        for i, u in usage.items():
            self.usage[self.n + i] = u
        self.offsets.append(offsets)
        self.n += n

    def frame(self) -> pd.DataFrame:
        # Each column's parts are let go as soon as they are joined: at most one column is held twice.
        def strings(parts):
            joined = pa.chunked_array(parts, pa.string()).combine_chunks() if parts else pa.array([], pa.string())
            parts.clear()
            return joined

        def floats(k):
            joined = np.concatenate(self.floats[k]) if self.floats[k] else np.empty(0)
            self.floats[k].clear()
            return joined

        flags = {}
        for k, parts in self.flags.items():
            f = np.concatenate(parts) if parts else np.empty(0, np.int8)
            parts.clear()
            flags[k] = pd.arrays.BooleanArray(f == 1, f < 0)
        usage = np.full(self.n, None, dtype=object)
        for i, u in self.usage.items():
            usage[i] = u
        cols = {
            "case_id": pd.Series(strings(self.case_id).to_pandas(), dtype="str"),
            "verifier": categorical(strings(self.verifier)),  # in order of first appearance
            "score": floats("score"),
            "error": pd.Series(strings(self.error).to_pandas(), dtype="str"),
            "latency_ms": floats("latency_ms"),
            "latency_kind": categorical(strings(self.latency_kind), list(LATENCY_KINDS)),
            "cost_usd": floats("cost_usd"),
            "units": floats("units"),
            "usage": usage,
            **flags,
        }
        if self.offsets:
            cols["offset"] = np.concatenate(self.offsets)
            self.offsets.clear()
        return pd.DataFrame(cols, copy=False)


def verdict_table(verdicts: Iterable[Verdict]) -> pd.DataFrame:
    """The verdict table of `Verdict` objects."""
    b = VerdictColumns()
    batch: list[Verdict] = []
    for v in verdicts:
        batch.append(v)
        if len(batch) >= _CHUNK:
            b.add(batch)
            batch = []
    if batch:
        b.add(batch)
    return b.frame()


def positions(ids: pd.Series, in_ids: pd.Series) -> np.ndarray:
    """For each of `ids`, its row in `in_ids` (which holds each id once), or -1."""
    found = pc.index_in(pa.array(ids, pa.string()), value_set=pa.array(in_ids, pa.string()))
    return np.asarray(found.fill_null(-1), dtype=np.int64)
