"""Errors that name what went wrong and where: file, line or record, field."""

from __future__ import annotations

from dataclasses import dataclass


class VerifybenchError(Exception):
    """Base class; the CLI prints these without a traceback."""


class SuiteError(VerifybenchError):
    """A suite file that cannot be used as written."""


@dataclass(frozen=True)
class Location:
    """Where a record sits: 1-based `line` for line-oriented files, 0-based `index` always."""

    file: str
    index: int
    line: int | None = None

    def __str__(self) -> str:
        if self.line is not None:
            return f"{self.file}:{self.line}"
        return f"{self.file}[record {self.index}]"


class RecordError(VerifybenchError):
    """One bad record. Loaders yield these (rather than raise) so `on_error: skip` can go on."""

    def __init__(self, loc: Location, message: str, field: str | None = None):
        self.loc = loc
        self.message = message
        self.field = field
        where = f"{loc}: field {field!r}" if field else str(loc)
        super().__init__(f"{where}: {message}")

    def to_dict(self) -> dict:
        return {
            "file": self.loc.file,
            "line": self.loc.line,
            "index": self.loc.index,
            "field": self.field,
            "message": self.message,
        }


class DataError(VerifybenchError):
    """A dataset that cannot be read: the first bad record, or a file that is unreadable as a whole."""
