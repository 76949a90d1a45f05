"""What every stored file has in common: it names its kind and its format version, says which verifybench
wrote it, and is read by one reader that migrates what is older and refuses what is newer.

Teams keep baselines, policies and guard files in git and gate CI on them for months; a key renamed by an
upgrade must neither break their gate silently nor change what it means. So:

- a written file carries `kind` ("verifybench.policy"), `format` (an integer that grows when the meaning
  or shape of a key changes) and `written_by` ("verifybench 0.2.0");
- `Model.parse` reads any older format it has a migration for, one step at a time (`MIGRATIONS[n]` turns
  format n into n + 1), and refuses a newer one naming the version that wrote it;
- a file from before kinds were written (no `kind`) is read as its `format` says, or as `LEGACY` when it
  names none;
- a field that fails validation is named with its path and the file.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, ClassVar, Self

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from verifybench.errors import VerifybenchError

Migration = Callable[[dict[str, Any]], dict[str, Any]]


def _absent(value: Any) -> bool:
    return value is None or (isinstance(value, (list, dict)) and not value)


def omitted(default: Any = None, **kw: Any) -> Any:
    """A field left out of the written file while it holds `default`'s emptiness (None, [] or {}): a key
    that only some files need (a failed run's `error`, a repeated verifier's `repeats`) is written where
    it means something, as the writers before the models did."""
    if "default_factory" in kw:
        return Field(exclude_if=_absent, **kw)
    return Field(default, exclude_if=_absent, **kw)


class FormatError(VerifybenchError):
    """A stored file that cannot be read as its kind: another kind, a newer format, a bad field. The
    message names `where` (the file, or file:line) and the key (`field`); `problem` is what is wrong."""

    def __init__(self, where: str | Path, problem: str, field: str | None = None):
        super().__init__(f"{where}: {field}: {problem}" if field else f"{where}: {problem}")
        self.where, self.problem, self.field = str(where), problem, field


class StaleFormat(FormatError):
    """A file older than any format this installation migrates (derived files are computed again)."""


@functools.cache  # asked for every decision record the guard writes
def written_by() -> str:
    """This installation, as a file's `written_by` names it."""
    from importlib import metadata

    try:
        return f"verifybench {metadata.version('verifybench')}"
    except metadata.PackageNotFoundError:  # a source tree on sys.path, not installed
        return "verifybench 0+unknown"


def field_path(loc: tuple[Any, ...]) -> str:
    """A validation error's location as a key path: ('thresholds', 'rouge', 'all', 'threshold') ->
    thresholds.rouge.all.threshold, list positions as [i]."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out or "(top level)"


def validation_error(where: str | Path, e: ValidationError, model: type[BaseModel] | None = None) -> FormatError:
    """The first error of `e`, naming the file and the key (an unknown key: with the keys `model` knows
    there)."""
    err = e.errors()[0]
    msg = err["msg"].removeprefix("Value error, ")
    if err["type"] == "extra_forbidden":
        known = _known_keys(model, tuple(err["loc"][:-1])) if model is not None else None
        msg = f"unknown key (known: {', '.join(known)})" if known else "unknown key"
    more = f" (and {len(e.errors()) - 1} more)" if len(e.errors()) > 1 else ""
    return FormatError(where, msg + more, field_path(tuple(err["loc"])))


def _known_keys(model: type[BaseModel], loc: tuple[Any, ...]) -> list[str]:
    """The keys the model at `loc` (a path of field names, list positions and mapping keys) knows."""
    import typing

    def unwrap(t: Any) -> Any:  # X | None -> X
        args = [a for a in typing.get_args(t) if a is not type(None)]
        return args[0] if len(args) == 1 and type(None) in typing.get_args(t) else t

    here: Any = unwrap(model)
    for part in loc:
        if isinstance(here, type) and issubclass(here, BaseModel):
            field = here.model_fields.get(str(part)) or next(
                (f for f in here.model_fields.values() if f.alias == part), None)
            if field is None:
                return []
            here = field.annotation
        elif typing.get_origin(here) in (list, dict):  # a position or a key: step to the values
            here = typing.get_args(here)[-1]
        else:
            return []
        here = unwrap(here)
    if isinstance(here, type) and issubclass(here, BaseModel):
        return [f.alias or n for n, f in here.model_fields.items() if n not in Stored.model_fields]
    return []


class Stored(BaseModel):
    """A file verifybench writes and reads back. Subclasses set `KIND`, `VERSION` and, for every older
    format still readable, `MIGRATIONS`."""

    model_config = ConfigDict(defer_build=True, extra="forbid", populate_by_name=True)

    KIND: ClassVar[str]
    VERSION: ClassVar[int]
    MIGRATIONS: ClassVar[Mapping[int, Migration]] = {}
    # The format a file without `format` is read as (written before the kind had one); None: such a file
    # is refused.
    LEGACY: ClassVar[int | None] = None
    # What the kind is for, one line (docs/formats.md and refusals name it).
    TITLE: ClassVar[str] = ""
    # Write only the keys given (a key left out keeps its meaning: the installation's default, or "not
    # computed"), not every field with its default.
    SPARSE: ClassVar[bool] = False

    kind: str
    format: int
    written_by: str | None = None

    @classmethod
    def header(cls) -> dict[str, Any]:
        """The first three keys of a file of this kind written now."""
        return {"kind": cls.KIND, "format": cls.VERSION, "written_by": written_by()}

    @classmethod
    def new(cls, **fields: Any) -> Self:
        """A file of this kind written now (its header filled in), validated."""
        return cls.model_validate({**cls.header(), **fields})

    def rewritten(self, **changes: Any) -> Self:
        """This file with `changes`, as this installation writes it again (its header: this format and
        writer, whatever format it was read from)."""
        return self.model_copy(update={**changes, **self.header()})

    @classmethod
    def version_of(cls, doc: dict[str, Any], where: str | Path) -> int:
        kind = doc.get("kind")
        if kind is not None and kind != cls.KIND:
            raise FormatError(where, f"a {kind!r} file, not a {cls.KIND!r} file{_title(cls)}")
        fmt = doc.get("format", cls.LEGACY)
        if fmt is None:
            raise StaleFormat(where, f"no 'format' key: written before {cls.KIND} files named their format, "
                              f"or not one{_title(cls)}")
        if isinstance(fmt, bool) or not isinstance(fmt, int) or fmt < 1:
            raise FormatError(where, f"{fmt!r} is not a format version (a whole number from 1)", "format")
        if fmt > cls.VERSION:
            who = doc.get("written_by") or "a newer verifybench"
            raise FormatError(where, f"{cls.KIND} format {fmt}, written by {who}; this installation "
                              f"({written_by()}) reads {cls.KIND} formats up to {cls.VERSION}: upgrade verifybench "
                              "to read it")
        oldest = min(cls.MIGRATIONS, default=cls.VERSION)
        if fmt < oldest:
            raise StaleFormat(where, f"{cls.KIND} format {fmt} is older than any this installation reads "
                              f"(from {oldest}); write it again with this version")
        return fmt

    @classmethod
    def migrate(cls, doc: dict[str, Any], where: str | Path) -> dict[str, Any]:
        """`doc` brought to this format, one migration at a time."""
        fmt = cls.version_of(doc, where)
        doc = dict(doc)
        while fmt < cls.VERSION:
            doc = cls.MIGRATIONS[fmt](doc)
            fmt += 1
            doc["format"] = fmt
        doc["kind"] = cls.KIND
        return doc

    @classmethod
    def parse(cls, doc: Any, where: str | Path) -> Self:
        """A document (a parsed JSON or YAML mapping) of this kind, migrated and validated; every error
        names `where` and the key."""
        if not isinstance(doc, dict):
            raise FormatError(where, f"expected a mapping (a {cls.KIND} file), got {type(doc).__name__}")
        doc = cls.migrate(doc, where)
        try:
            return cls.model_validate(doc)
        except ValidationError as e:
            raise validation_error(where, e, cls) from None

    @classmethod
    def read(cls, path: str | Path) -> Self:
        """The file at `path` (JSON, or YAML for .yaml / .yml)."""
        return cls.parse(load_document(path, cls.KIND.removeprefix("verifybench.")), path)

    def document(self) -> dict[str, Any]:
        """What is written: the header first, then the fields in declaration order; keys spelled as
        the file spells them (aliases)."""
        return self.model_dump(mode="json", by_alias=True, exclude_unset=self.SPARSE)

    def data(self, yaml_: bool = False) -> bytes:
        """The file's bytes: YAML, or JSON (serialised by pydantic-core from the model, without a copy of
        it as Python objects: a baseline of a million cases stays one string). A NaN or an infinity is
        written as null, as `metrics.summary.jsonable` writes it (JSON has no such number)."""
        if yaml_:
            return dump_document(self.document(), Path("x.yaml")).encode("utf-8")
        return self.__pydantic_serializer__.to_json(self, indent=1, by_alias=True, exclude_unset=self.SPARSE) + b"\n"

    def write(self, path: str | Path) -> Path:
        """Write atomically (a reader sees the old file or the new one, whole) as JSON or YAML by suffix."""
        from verifybench._util.safeio import write_bytes_atomic

        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        write_bytes_atomic(path, self.data(_is_yaml(path)))
        return path


def _title(cls: type[Stored]) -> str:
    return f" ({cls.TITLE})" if cls.TITLE else ""


def _is_yaml(path: Path) -> bool:
    return path.suffix.lower() in (".yaml", ".yml")


def load_document(path: str | Path, what: str = "") -> Any:
    """A JSON or YAML file's content (YAML by suffix, parsed safely); errors name the file (and `what`
    it should have been: "no such policy file")."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise FormatError(path, f"no such {what + ' ' if what else ''}file") from None
    except (OSError, UnicodeDecodeError) as e:
        raise FormatError(path, f"cannot be read ({getattr(e, 'strerror', None) or e})") from None
    if _is_yaml(path):
        import yaml

        try:
            return yaml.safe_load(text)
        except yaml.YAMLError as e:
            mark = getattr(e, "problem_mark", None)
            at = f":{mark.line + 1}:{mark.column + 1}" if mark else ""
            raise FormatError(f"{path}{at}", f"invalid YAML: {getattr(e, 'problem', e)}") from None
    try:
        return json.loads(text)
    except ValueError as e:
        raise FormatError(path, f"not JSON ({e})") from None


def dump_document(doc: dict[str, Any], path: Path) -> str:
    if _is_yaml(path):
        import yaml

        return yaml.safe_dump(doc, sort_keys=False, allow_unicode=True)
    # NaN or an infinity is not JSON: a stored file never holds one (a reader in another language refuses it)
    return json.dumps(doc, indent=1, allow_nan=False, ensure_ascii=False) + "\n"
