"""Suite files: which dataset, which verifiers with which options, and metric settings.

```yaml
name: halueval-qa
dataset:
  loader: halueval
  path: ${VERIFYBENCH_DATA}/halueval/qa_data.json
  limit: 2000
verifiers:
  - rouge
  - bleu: {order: 2}
  - rouge: {type: rouge2, id: rouge2}     # `id` names a second configuration of one verifier
  - judge: {temperature: 0.8, repeats: 3}  # `repeats` scores each case 3 times: mean and spread kept
```

`id` and `repeats` are the generic options every verifier entry takes; the rest are the verifier's own.

`${NAME}` is replaced from the environment; `${VERIFYBENCH_DATA}` falls back to `--data-dir`, then to a
`shared/datasets` folder found beside the suite's repository. A variable must be set when the suite is
read; a verifier's options keep `${NAME}` and read it when the verifier is built, so its config and config
hash hold the name, never the value (`verifybench._util.envvars`). Relative paths are relative to the suite
file's folder, and so are other dataset and verifier options written as "./x" or "../x".
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from verifybench._util.envvars import DATA_ENV, VAR
from verifybench._util.envvars import as_written as _as_written
from verifybench.errors import SuiteError
from verifybench.loaders import PATH_OPTIONS, DatasetSpec, validate_dataset

PATH_KEYS = PATH_OPTIONS  # dataset options resolved against the suite's folder


class VerifierEntry(BaseModel):
    """One verifier of a suite: its registered `name`, the `id` its results carry, how many times each
    case is scored (`repeats`, see `verifybench.executors.repeats`), its options."""

    id: str
    name: str
    repeats: int = 1
    options: dict[str, Any] = Field(default_factory=dict)


def _repeats(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise SuiteError(f"{where}: repeats: expected a whole number of at least 1 (how many times each case is "
                         f"scored), got {_short(value)}")
    return value


class Suite(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    description: str = ""
    dataset: DatasetSpec
    verifiers: list[VerifierEntry]
    metrics: dict[str, Any] = Field(default_factory=dict)
    batch_size: int = Field(64, ge=1)
    # Not part of the file: where it came from, and the raw mapping it was parsed from (hashed).
    source: str | None = Field(None, exclude=True)
    data_dir: str | None = Field(None, exclude=True)
    raw: dict[str, Any] = Field(default_factory=dict, exclude=True)
    # The dataset options and each verifier's options (by position) with every `${VAR}` but
    # `${VERIFYBENCH_DATA}` left as written: what a manifest, a report or a tracker may store.
    written: dict[str, Any] = Field(default_factory=dict, exclude=True)

    @property
    def hash(self) -> str:
        return hashlib.sha256(json.dumps(self.raw, sort_keys=True, default=str).encode()).hexdigest()


def find_data_dir(start: Path) -> Path | None:
    """The nearest `shared/datasets` folder beside `start` or one of its parents."""
    for folder in [start, *start.parents]:
        candidate = folder / "shared" / "datasets"
        if candidate.is_dir():
            return candidate
    return None


def _expand(value: Any, lookup, where: str) -> Any:
    if isinstance(value, str):
        return VAR.sub(lambda m: lookup(m.group(1), where), value)
    if isinstance(value, list):
        return [_expand(v, lookup, f"{where}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, dict):
        return {k: _expand(v, lookup, f"{where}.{k}" if where else k) for k, v in value.items()}
    return value


def _resolve_path(value: Any, base: Path) -> Any:
    if isinstance(value, str):
        p = Path(value).expanduser()
        return str(p if p.is_absolute() else (base / p).resolve())
    if isinstance(value, list):
        return [_resolve_path(v, base) for v in value]
    if isinstance(value, dict):
        return {k: _resolve_path(v, base) for k, v in value.items()}
    return value


def _relative_paths(value: Any, base: Path) -> Any:
    """Verifier options that are written as relative paths ("./x", "../x") are relative to the suite's
    folder, like the dataset's path; any other string is left alone."""
    if isinstance(value, str) and value.startswith(("./", "../")):
        return str((base / value).resolve())
    if isinstance(value, list):
        return [_relative_paths(v, base) for v in value]
    if isinstance(value, dict):
        return {k: _relative_paths(v, base) for k, v in value.items()}
    return value


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


# A suite is a page of YAML: more values than this once its aliases are expanded is an alias bomb
# ("billion laughs"), refused before anything walks it.
MAX_NODES = 200_000


def _check_size(raw: Any, where: str) -> None:
    """Refuse a document whose aliases expand past `MAX_NODES` values (or refer to themselves)."""
    seen = 0
    stack = [(raw, 0)]
    while stack:
        value, depth = stack.pop()
        seen += 1
        if seen > MAX_NODES or depth > 100:
            deep = " (or nests deeper than 100)" if depth > 100 else ""
            raise SuiteError(f"{where}: the YAML expands to more than {MAX_NODES:,} values{deep} once its aliases "
                             "(*name) are expanded; a suite that large is refused (an alias bomb?)")
        if isinstance(value, dict):
            stack.extend((v, depth + 1) for v in value.values())
            seen += len(value)  # the keys
        elif isinstance(value, list):
            stack.extend((v, depth + 1) for v in value)


def _verifier_entries(raw: Any, where: str, base_dir: Path | None = None) -> list[VerifierEntry]:
    if not isinstance(raw, list) or not raw:
        raise SuiteError(f"{where}: 'verifiers' must be a non-empty list")
    entries: list[VerifierEntry] = []
    for i, item in enumerate(raw):
        options: Any
        if isinstance(item, str):
            name, options = item, {}
        elif isinstance(item, dict) and len(item) == 1:
            name, options = next(iter(item.items()))
            if options is not None and not isinstance(options, dict):
                raise SuiteError(f"{where}: verifiers[{i}] ({name}): options must be a mapping of option: value, "
                                 f"got {type(options).__name__} {_short(options)}")
            options = dict(options or {})
        else:
            raise SuiteError(f"{where}: verifiers[{i}] must be a name or a one-key mapping name: {{options}}")
        if base_dir is not None:
            options = _relative_paths(options, base_dir)
        vid = str(options.pop("id", name))
        if any(e.id == vid for e in entries):
            raise SuiteError(f"{where}: verifiers[{i}]: id {vid!r} is used twice; give one of them `id: <other>`")
        repeats = _repeats(options.pop("repeats", 1), f"{where}: verifiers[{i}] ({vid})")
        entries.append(VerifierEntry(id=vid, name=name, repeats=repeats, options=options))
    return entries


def _written(kept: Any) -> dict[str, Any]:
    dataset = kept.get("dataset") if isinstance(kept.get("dataset"), dict) else {}
    verifiers = []
    for item in kept.get("verifiers") or []:
        options = next(iter(item.values()), None) if isinstance(item, dict) and len(item) == 1 else None
        verifiers.append({k: v for k, v in options.items() if k not in ("id", "repeats")}
                         if isinstance(options, dict) else {})
    return {"dataset": {k: v for k, v in dataset.items() if k not in ("loader", "limit", "sample", "seed", "on_error")},
            "verifiers": verifiers}


def as_written(value: Any, written: Any) -> Any:
    """`value` (an option as the run uses it) with every string that came from an environment variable
    put back as it was written (`${PASSWORD}`), and every URL's password replaced by ***: what may be
    stored in a manifest, a report or a tracker."""
    from verifybench._util.safeio import redact_url_credentials

    return redact_url_credentials(_as_written(value, written))


def _register_read(dataset: Any, where: str) -> None:
    """Register the values the dataset's options (`kept`: `${VAR}` as written) read from the environment
    for scrubbing, as a verifier does with its own."""
    from verifybench._util.envvars import expand
    from verifybench.verifiers.llm.scrub import register_secret

    for value in expand(dataset, f"{where}: dataset")[1].values():
        register_secret(value)


def parse_suite(
    raw: dict[str, Any], base_dir: Path, data_dir: Path | str | None = None, where: str = "<suite>",
    check_loader: bool = True,
) -> Suite:
    """Build a `Suite` from its mapping form.

    Args:
        raw: the parsed YAML.
        base_dir: the folder relative paths are resolved against (the suite file's folder).
        data_dir: the value of `${VERIFYBENCH_DATA}` when the environment does not set it.
        where: the file name used in error messages.
        check_loader: find the dataset's loader and check its options (importing a loader named by
            import path); False for a reader of the verifiers only (a guard), which imports nothing.
    """
    if not isinstance(raw, dict):
        raise SuiteError(f"{where}: expected a mapping at the top level")
    _check_size(raw, where)  # a manifest's copy, or a mapping built in Python

    used_data_dir: list[str] = []

    def lookup(var: str, at: str) -> str:
        if var == DATA_ENV:
            found = data_dir or os.environ.get(DATA_ENV) or find_data_dir(base_dir.resolve())
            if found:
                used_data_dir.append(str(found))
            else:
                raise SuiteError(
                    f"{where}: {at}: ${{{DATA_ENV}}} is not set and no shared/datasets folder was found "
                    f"beside {base_dir}; pass --data-dir or set {DATA_ENV}"
                )
            return str(found)
        if var not in os.environ:
            raise SuiteError(f"{where}: {at}: environment variable {var} is not set")
        return os.environ[var]

    expanded = _expand(raw, lookup, "")

    def keep(var: str, at: str) -> str:  # a variable from the environment stays a name, never its value
        return lookup(var, at) if var == DATA_ENV else f"${{{var}}}"

    kept = _expand(raw, keep, "")
    _register_read(kept.get("dataset"), where)
    dataset = dict(expanded.get("dataset") or {})
    for key in list(dataset):
        # The hf loader's `path` is a hub name or a builder, not a file.
        if key in PATH_KEYS and not (key == "path" and dataset.get("loader") == "hf"):
            dataset[key] = _resolve_path(dataset[key], base_dir)
        elif key not in ("loader", "fields"):
            dataset[key] = _relative_paths(dataset[key], base_dir)  # a plugin's "./x" option, as for verifiers
    body = {k: v for k, v in expanded.items() if k not in ("dataset", "verifiers")}
    body.setdefault("name", Path(where).stem)
    if "metrics" in body:
        from verifybench.metrics.settings import validate_metrics_block

        validate_metrics_block(body["metrics"], where)  # a typo'd key is an error here, not a silent default
    try:
        suite = Suite(
            dataset=DatasetSpec.model_validate(dataset),
            # Options keep `${VAR}`: the verifier reads it when built (and hashes the name, not the value).
            verifiers=_verifier_entries(kept.get("verifiers"), where, base_dir),
            source=where,
            data_dir=used_data_dir[0] if used_data_dir else None,
            raw=raw,
            written=_written(kept),
            **body,
        )
    except ValidationError as e:
        err = e.errors()[0]
        field = ".".join(str(p) for p in err["loc"])
        raise SuiteError(f"{where}: {field}: {err['msg']}") from None
    if not check_loader:
        return suite
    try:
        # The loader, its options and the `fields:` mapping are checked now, before any data is read.
        validate_dataset(suite.dataset)
    except SuiteError as e:
        raise SuiteError(f"{where}: {e}") from None
    return suite


def load_suite(path: str | Path, data_dir: Path | str | None = None, limit: int | None = None,
               check_loader: bool = True) -> Suite:
    """Read a suite file.

    Args:
        path: the YAML file.
        data_dir: where `${VERIFYBENCH_DATA}` points when the environment does not say.
        limit: overrides `dataset.limit` (and so changes the suite's hash).
        check_loader: see `parse_suite`.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SuiteError(f"{path}: no such suite file") from None
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        at = f":{mark.line + 1}:{mark.column + 1}" if mark else ""
        raise SuiteError(f"{path}{at}: invalid YAML: {getattr(e, 'problem', e)}") from None
    _check_size(raw, str(path))
    if isinstance(raw, dict) and limit is not None:
        raw = {**raw, "dataset": {**(raw.get("dataset") or {}), "limit": limit}}
    return parse_suite(raw, path.parent, data_dir, str(path), check_loader)
