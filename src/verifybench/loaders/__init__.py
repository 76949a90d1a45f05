"""Dataset loaders: each turns a source of records into a stream of `Case`s.

A loader is a function returning an iterator of `Case | RecordError`. `iter_cases` runs one from a
suite's `dataset:` block and applies what every loader shares: the limit, duplicate-id checks and the
`on_error` policy (raise at the first bad record, or skip it and record why).
"""

from __future__ import annotations

import hashlib
import inspect
import json
from collections.abc import Callable, Iterator
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from verifybench.cases import Case
from verifybench.errors import DataError, Location, RecordError, SuiteError
from verifybench.loaders import generic
from verifybench.loaders.attributionbench import attributionbench
from verifybench.loaders.bipia import bipia
from verifybench.loaders.fields import FieldSpec
from verifybench.loaders.halueval import halueval
from verifybench.loaders.summedits import summedits, summedits_files
from verifybench.loaders.tensortrust import injection_sets, tensortrust

__all__ = ["LOADERS", "DatasetSpec", "FieldSpec", "iter_cases", "dataset_hash", "get_loader"]

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
}


def get_loader(name: str) -> Callable[..., Iterator[Case | RecordError]]:
    if name in LOADERS:
        return LOADERS[name]
    for ep in entry_points(group="verifybench.loaders"):
        if ep.name == name:
            return ep.load()
    known = ", ".join(sorted(LOADERS))
    raise SuiteError(f"unknown loader {name!r}; known loaders: {known} (or a 'verifybench.loaders' entry point)")


def describe_loader(fn: Callable) -> str:
    return (inspect.getdoc(fn) or "").splitlines()[0]


class DatasetSpec(BaseModel):
    """A suite's `dataset:` block. Keys other than these are passed to the loader function."""

    model_config = ConfigDict(extra="allow")

    loader: str
    limit: int | None = Field(None, ge=1)
    sample: int | None = Field(None, ge=1, description="a seeded random sample of this many cases, in file order")
    seed: int = 0
    on_error: Literal["raise", "skip"] = "raise"

    @property
    def options(self) -> dict[str, Any]:
        return dict(self.model_extra or {})


def _call_loader(spec: DatasetSpec) -> Iterator[Case | RecordError]:
    fn = get_loader(spec.loader)
    params = inspect.signature(fn).parameters
    unknown = [k for k in spec.options if k not in params]
    if unknown:
        raise SuiteError(
            f"dataset: loader {spec.loader!r} takes no option {unknown[0]!r}; it takes: {', '.join(params)}"
        )
    return fn(**spec.options)


def iter_cases(spec: DatasetSpec, errors: list[RecordError] | None = None) -> Iterator[Case]:
    """Stream the cases of a dataset spec.

    Args:
        spec: the dataset block (paths already resolved).
        errors: where skipped records go when `on_error` is "skip"; with "raise" the first bad
            record raises `DataError`.
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
    for item in _call_loader(spec):
        if spec.limit is not None and count >= spec.limit:
            return
        if isinstance(item, Case):
            loc = item._loc or Location(item.dataset, count)
            if item.id in seen:
                item = RecordError(loc, f"duplicate case id {item.id!r} (first seen at {seen[item.id]})", "id")
            else:
                seen[item.id] = str(loc)
        if isinstance(item, RecordError):
            if spec.on_error == "raise":
                raise DataError(f"{item} (set on_error: skip in the suite's dataset block to skip bad records)")
            if errors is not None:
                errors.append(item)
            continue
        count += 1
        yield item


def dataset_hash(spec: DatasetSpec) -> str:
    """sha256 over the loader settings and the bytes of every local file the dataset reads.

    Local paths enter only by file name, so the same data hashes the same in any checkout or folder
    (a CI clone, a colleague's machine); a hub name (hf loader) enters as it is."""
    h = hashlib.sha256()
    files = _files(spec)
    local = {str(f) for f in files}
    options = {k: v for k, v in spec.options.items()
               if not (k in ("path", "data_files") and (Path(str(v)).exists() or str(v) in local))}
    h.update(json.dumps({"loader": spec.loader, **options}, sort_keys=True, default=str).encode())
    for file in files:
        h.update(str(file.name).encode())
        with open(file, "rb") as f:
            while chunk := f.read(1 << 20):
                h.update(chunk)
    return h.hexdigest()


def _files(spec: DatasetSpec) -> list[Path]:
    opts = spec.options
    if spec.loader == "summedits":
        return summedits_files(opts["path"])
    if spec.loader == "hf":
        files = opts.get("data_files")
        if isinstance(files, dict):
            files = [f for v in files.values() for f in (v if isinstance(v, list) else [v])]
        elif isinstance(files, str):
            files = [files]
        return [Path(f) for f in files or [] if Path(f).exists()]
    path = opts.get("path")
    if path is None:
        return []
    path = Path(path)
    if path.is_dir():
        return sorted(p for p in path.rglob("*") if p.is_file())
    return [path] if path.exists() else []
