"""Dataset loaders: each turns a source of records into a stream of `Case`s.

A loader is a function returning an iterator of `Case | RecordError`. `iter_cases` runs one from a
suite's `dataset:` block and applies what every loader shares: the limit, duplicate-id checks and the
`on_error` policy (raise: stop yielding cases at the first bad record, read on to list every bad record
of the file, then raise them all; or skip them and record why).

A suite names a loader by its built-in name, by a `verifybench.loaders` entry point, or by an import
path `package.module:function`. A loader declares the files it reads (`@loader(files=...)`) so the
dataset hash covers them; without a declaration the hash covers the local files and folders named by
its `path`, `paths`, `file`, `files` or `data_files` option (glob patterns expanded) and by any option
whose value is an absolute path that exists (a suite makes "./x" and "../x" absolute).
"""

from __future__ import annotations

import glob
import hashlib
import inspect
import json
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from importlib import import_module
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from verifybench.cases import Case
from verifybench.errors import DataError, Location, RecordError, SuiteError
from verifybench.loaders import generic
from verifybench.loaders.attributionbench import attributionbench
from verifybench.loaders.bipia import bipia
from verifybench.loaders.fields import LISTS_HINT, FieldSpec, note_label
from verifybench.loaders.guardlog import guardlog
from verifybench.loaders.halueval import halueval
from verifybench.loaders.labelqueue import label_queue
from verifybench.loaders.memory import records
from verifybench.loaders.mlflow_labels import mlflow
from verifybench.loaders.otlp import otlp
from verifybench.loaders.summedits import summedits, summedits_files
from verifybench.loaders.tensortrust import injection_sets, tensortrust

__all__ = ["LOADERS", "BadRecords", "DatasetSpec", "FieldSpec", "available_loaders", "dataset_files",
           "dataset_hash", "get_loader", "iter_cases", "loader", "note_label", "validate_dataset"]

LoaderFn = Callable[..., Iterator[Case | RecordError]]
PATH_OPTIONS = ("path", "paths", "file", "files", "data_files")  # options whose local files are hashed


def loader(files: Callable[..., Iterable[str | Path]] | None = None) -> Callable[[LoaderFn], LoaderFn]:
    """Mark a function as a verifybench loader and declare the files it reads.

    Args:
        files: called with the loader's options (as keyword arguments), returns the local files (or
            folders, or glob patterns) the loader will read; the dataset hash covers their bytes.

    ```python
    @loader(files=lambda path, **_: [path])
    def tickets(path: str, team: str = "support"): ...
    ```
    """
    def mark(fn: LoaderFn) -> LoaderFn:
        fn.files = files  # type: ignore[attr-defined]
        return fn
    return mark

LOADERS: dict[str, Callable[..., Iterator[Case | RecordError]]] = {
    "jsonl": generic.jsonl,
    "json": generic.json,
    "csv": generic.csv,
    "parquet": generic.parquet,
    "hf": generic.hf,
    "halueval": halueval,
    "summedits": summedits,
    "bipia": bipia,
    "tensortrust": tensortrust,
    "injection-sets": injection_sets,
    "attributionbench": attributionbench,
    "records": records,
    "guardlog": guardlog,
    "label-queue": label_queue,
    "otlp": otlp,
    "mlflow": mlflow,
}


def available_loaders() -> dict[str, str]:
    """Every loader name with where it comes from: built-in, then `verifybench.loaders` entry points."""
    found = {name: f"{fn.__module__}:{fn.__name__}" for name, fn in LOADERS.items()}
    for ep in entry_points(group="verifybench.loaders"):
        found.setdefault(ep.name, ep.value)
    return found


def get_loader(name: str) -> LoaderFn:
    """A built-in loader, an entry point's, or a function by import path `package.module:function`."""
    if name in LOADERS:
        return LOADERS[name]
    if ":" in name:
        module, _, attr = name.partition(":")
        try:
            fn = getattr(import_module(module), attr)
        except (ImportError, AttributeError) as e:
            raise SuiteError(f"loader {name!r} cannot be imported: {e}") from None
        if not callable(fn):
            raise SuiteError(f"loader {name!r} is not a function")
        return fn
    for ep in entry_points(group="verifybench.loaders"):
        if ep.name == name:
            try:
                return ep.load()
            except Exception as e:  # noqa: BLE001 - a broken plugin is named, not a traceback
                raise SuiteError(f"loader {name!r} (entry point {ep.value}) cannot be loaded: "
                                 f"{type(e).__name__}: {e}") from None
    known = ", ".join(sorted(available_loaders()))
    raise SuiteError(f"unknown loader {name!r}; known loaders: {known} (or an import path package.module:function)")


def describe_loader(fn: Callable) -> str:
    return ((inspect.getdoc(fn) or "").splitlines() or [""])[0]


class DatasetSpec(BaseModel):
    """A suite's `dataset:` block. Keys other than these are passed to the loader function."""

    model_config = ConfigDict(extra="allow")

    loader: str
    limit: int | None = Field(None, ge=1)
    sample: int | None = Field(None, ge=1, description="a seeded random sample of this many cases, in file order")
    seed: int = 0
    on_error: Literal["raise", "skip"] = "raise"
    require_labels: bool = Field(False, description="a case without a label is a bad record (a labeled set: a "
                                 "label queue read back); by default it is an unlabeled case, scored and left "
                                 "out of the metrics that need a label")

    @property
    def options(self) -> dict[str, Any]:
        return dict(self.model_extra or {})

    def label_field(self) -> str:
        """The record field the label is read from (for an error naming it)."""
        fields = self.options.get("fields")
        label = fields.get("label") if isinstance(fields, dict) else getattr(fields, "label", None)
        return str(label or "label")


def validate_dataset(spec: DatasetSpec) -> LoaderFn:
    """Check a dataset block without reading any data: the loader exists, takes every option given, and
    its `fields:` mapping is valid. Raises `SuiteError` naming the key."""
    fn = get_loader(spec.loader)
    params = inspect.signature(fn).parameters
    takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    unknown = [k for k in spec.options if k not in params and not takes_any]
    if unknown:
        names = [n for n, p in params.items() if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
        raise SuiteError(f"dataset: loader {spec.loader!r} takes no option {unknown[0]!r}; it takes: {', '.join(names)}")
    if "fields" in spec.options and "fields" in params:
        from verifybench.loaders.generic import field_spec

        try:
            field_spec(spec.options["fields"])
        except SuiteError as e:
            raise SuiteError(f"dataset.{e}") from None
    return fn


def _call_loader(spec: DatasetSpec) -> Iterator[Case | RecordError]:
    return validate_dataset(spec)(**spec.options)


class BadRecords(DataError):
    """`on_error: raise` found bad records: every one of the file read (the first `MAX_KEPT` kept).

    The message lists them, a record per line; records failing the same way in the same field (a column
    of the wrong type) are one line naming the first of them and how many more there are."""

    MAX_LISTED = 20  # lines in the message
    MAX_KEPT = 1000  # in `errors` (and so in the run's errors.jsonl)

    def __init__(self, errors: list[RecordError], total: int, good: int | None = None):
        self.errors = errors
        self.total = total
        labels = unknown_label_values(errors)
        if labels is not None and len(errors) == total and good == 0:
            # No record read, every one for a text label no list names: the lists are missing, not the
            # records bad (on_error: skip would skip them all).
            values = ", ".join(f"{v!r} ({n})" for v, n in labels.most_common(10))
            field = errors[0].field
            super().__init__(f"{total} record(s) have a label no list names, in the label column {field!r}: {values}. "
                             f"A text label column says which value is which: {LISTS_HINT}. (on_error: skip would "
                             f"skip these {total} records.) First: {errors[0]}")
            return
        hint = ("set on_error: skip in the suite's dataset block (on_error='skip' in verifybench.run) to skip "
                "bad records")
        if total == 1:
            super().__init__(f"{errors[0]} ({hint})")
            return
        groups: dict[tuple, list[RecordError]] = {}
        for e in errors:
            groups.setdefault((e.loc.file, e.field, e.message), []).append(e)
        lines = [f"{total} bad records ({hint}):"]
        for same in list(groups.values())[:self.MAX_LISTED]:
            more = f" (and {len(same) - 1} more records like it)" if len(same) > 1 else ""
            lines.append(f"  {same[0]}{more}")
        listed = sum(len(g) for g in list(groups.values())[:self.MAX_LISTED])
        if total > listed:
            lines.append(f"  ... and {total - listed} more")
        super().__init__("\n".join(lines))


def unknown_label_values(errors: list[RecordError]) -> Counter | None:
    """The raw label values of `errors` when every one is a text label value that no list names and no
    `hallucinated:`/`faithful:` list was given (see `fields.unknown_label`); None otherwise."""
    if not errors or not all(isinstance(getattr(e, "label_value", None), str)
                             and not getattr(e, "label_lists_given", True) for e in errors):
        return None
    return Counter(e.label_value for e in errors)  # type: ignore[attr-defined]


def iter_cases(spec: DatasetSpec, errors: list[RecordError] | None = None) -> Iterator[Case]:
    """Stream the cases of a dataset spec.

    Args:
        spec: the dataset block (paths already resolved).
        errors: where skipped records go when `on_error` is "skip". With "raise", no case is yielded
            after the first bad record; the rest of the data is read for its bad records, and then
            `BadRecords` (a `DataError`) is raised listing them all.
    """
    if spec.sample is not None:
        yield from _sampled(_iter_all(spec, errors), spec.sample, spec.seed)
    else:
        yield from _iter_all(spec, errors)


def _sampled(cases: Iterator[Case], n: int, seed: int) -> Iterator[Case]:
    """Reservoir sampling (algorithm R): n cases drawn uniformly from a stream of unknown length,
    holding only n in memory; they come out in their original order."""
    import random

    rng = random.Random(seed)
    reservoir: list[tuple[int, Case]] = []
    for i, case in enumerate(cases):
        if i < n:
            reservoir.append((i, case))
        elif (j := rng.randint(0, i)) < n:
            reservoir[j] = (i, case)
    yield from (c for _, c in sorted(reservoir, key=lambda p: p[0]))


def _iter_all(spec: DatasetSpec, errors: list[RecordError] | None) -> Iterator[Case]:
    seen: dict[str, str] = {}
    count = 0
    bad: list[RecordError] = []  # on_error: raise
    n_bad = 0
    for item in _call_loader(spec):
        if spec.limit is not None and count >= spec.limit:
            break
        if isinstance(item, Case):
            loc = item._loc or Location(item.dataset, count)
            if item.label is None and spec.require_labels:
                item = RecordError(loc, "the label is missing (the dataset sets require_labels: true)",
                                   spec.label_field())
            elif item.id in seen:
                item = RecordError(loc, f"duplicate case id {item.id!r} (first seen at {seen[item.id]})", "id")
            else:
                seen[item.id] = str(loc)
        if isinstance(item, RecordError):
            if spec.on_error == "raise":
                n_bad += 1
                if len(bad) < BadRecords.MAX_KEPT:
                    bad.append(item)
            elif errors is not None:
                errors.append(item)
            continue
        count += 1
        if not n_bad:
            yield item
    if n_bad:
        raise BadRecords(bad, n_bad, good=count)


def dataset_hash(spec: DatasetSpec) -> str:
    """sha256 over the loader settings, the selection (`limit`, `sample` and its `seed`) and the bytes of
    every local file the dataset reads.

    Local paths enter only by file name, so the same data hashes the same in any checkout or folder
    (a CI clone, a colleague's machine); a hub name (hf loader) enters as it is. The selection enters
    only when set, so a dataset read whole hashes as it always has, and a `--limit 100` run is not
    mistaken for a run over all of it by compare, gate or resume."""
    h = hashlib.sha256()
    files = dataset_files(spec)
    options = {k: v for k, v in spec.options.items() if not _names_local_data(k, v)}
    selection = {k: v for k, v in (("limit", spec.limit), ("sample", spec.sample)) if v is not None}
    if spec.sample is not None:
        selection["seed"] = spec.seed  # the seed picks the sample; without one it changes nothing
    if spec.require_labels:
        selection["require_labels"] = True  # it can leave unlabeled records out (on_error: skip)
    h.update(json.dumps({"loader": spec.loader, **options, **selection}, sort_keys=True, default=str).encode())
    for file in files:
        h.update(str(file.name).encode())
        with open(file, "rb") as f:
            while chunk := f.read(1 << 20):
                h.update(chunk)
    return h.hexdigest()


def dataset_files(spec: DatasetSpec) -> list[Path]:
    """The local files a dataset reads, in a stable order: what the loader declares (`@loader(files=)`),
    else what its path-like options name (folders walked, glob patterns expanded)."""
    fn = get_loader(spec.loader)
    declared = getattr(fn, "files", None)
    if declared is not None:
        try:
            named = list(declared(**spec.options))
        except (DataError, OSError):
            return []  # the loader reports the missing data itself, when it reads
        return _dedup(p for v in named for p in _local_files(v))
    return _dedup(p for k, v in spec.options.items() if k in PATH_OPTIONS or _absolute(v) for p in _local_files(v))


def _names_local_data(key: str, value: Any) -> bool:
    """An option that names local data enters the hash by the data's content, not by its (absolute,
    machine-specific) path."""
    return (key in PATH_OPTIONS or _absolute(value)) and _all_local(value)


def _absolute(value: Any) -> bool:
    if isinstance(value, dict):
        return bool(value) and all(_absolute(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return bool(value) and all(_absolute(v) for v in value)
    return isinstance(value, (str, Path)) and Path(value).is_absolute()


def _dedup(paths: Iterable[Path]) -> list[Path]:
    return list(dict.fromkeys(paths))


def _local_files(value: Any) -> list[Path]:
    """Files named by an option value: a path, a folder (walked), a glob pattern, or a list/dict of them."""
    if isinstance(value, dict):
        return [p for v in value.values() for p in _local_files(v)]
    if isinstance(value, (list, tuple)):
        return [p for v in value for p in _local_files(v)]
    if not isinstance(value, (str, Path)):
        return []
    path = Path(value)
    try:
        if path.is_dir():
            return sorted(p for p in path.rglob("*") if p.is_file())
        if path.is_file():
            return [path]
    except OSError:
        return []
    if glob.has_magic(str(value)):
        return [p for m in sorted(glob.glob(str(value), recursive=True)) for p in _local_files(m)]
    return []


def _all_local(value: Any) -> bool:
    """Whether an option names only local files or folders: then they enter the hash by content, and
    the option itself (an absolute path of this machine) stays out of it."""
    if isinstance(value, dict):
        return bool(value) and all(_all_local(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return bool(value) and all(_all_local(v) for v in value)
    if not isinstance(value, (str, Path)):
        return False
    return Path(value).exists() or (glob.has_magic(str(value)) and bool(_local_files(value)))


# Built-in loaders declare what they read; the rest of the options are settings.
_BUILT_IN: list[Any] = [generic.jsonl, generic.json, generic.csv, generic.parquet, halueval, bipia, tensortrust,
                        attributionbench, records]
for _fn in _BUILT_IN:
    _fn.files = lambda path, **_: [path]
# Its path is the whole shared datasets folder; it reads two benchmarks of it.
injection_sets.files = lambda path, **_: [Path(path) / "bipia", Path(path) / "tensortrust"]  # type: ignore[attr-defined]
generic.hf.files = lambda data_files=None, **_: [data_files] if data_files else []  # type: ignore[attr-defined]
summedits.files = lambda path, **_: summedits_files(path)  # type: ignore[attr-defined]
mlflow.files = lambda **_: []  # type: ignore[attr-defined]  # a store, not files: the options name it
