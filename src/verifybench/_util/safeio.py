"""Small defences every layer uses against hostile or damaged input and a hostile file system.

- `temp_path` / `replace_atomically` / `write_text_atomic`: every file verifybench writes by rename gets
  a temporary name of its own (process, thread and a random part), so two processes writing one
  destination never share a temporary file; the last rename wins and a reader sees one whole file.
- `open_no_follow`: the run directory's files are opened without following a symbolic link, so a link
  planted in a run directory (`cases.jsonl -> ~/victim.txt`) is refused instead of written through.
- `safe_name`: a suite's name made into one file name (no separator, no `..`, not absolute).
- `lone_surrogate`: where a decoded record holds a lone UTF-16 surrogate (`"\\ud800"` in JSON), text that
  cannot be written as UTF-8 and so must not reach the run directory.
- `redact_url_credentials`: `scheme://user:password@host` with the password replaced, for options
  written to a manifest, a report or a tracker.
- `disk_error`: an OSError of a full disk (or a file size limit) as one sentence.
"""

from __future__ import annotations

import errno
import os
import re
import secrets
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

TEMP_SUFFIX = ".tmp"


def temp_path(path: Path) -> Path:
    """A temporary name beside `path`, unique to this process and thread (and random besides)."""
    path = Path(path)
    return path.with_name(f".{path.name}.{os.getpid()}-{threading.get_ident()}-{secrets.token_hex(4)}{TEMP_SUFFIX}")


def replace_atomically(tmp: Path, path: Path) -> None:
    """Rename `tmp` over `path` (atomic on one file system); `tmp` is removed when that fails."""
    try:
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def write_bytes_atomic(path: Path, data: bytes) -> None:
    path = Path(path)
    tmp = temp_path(path)
    try:
        with open_no_follow(tmp, "wb") as f:
            f.write(data)
    except BaseException:
        _discard(tmp)
        raise
    replace_atomically(tmp, path)


def write_text_atomic(path: Path, text: str) -> None:
    write_bytes_atomic(path, text.encode("utf-8"))


def _discard(tmp: Path) -> None:
    try:
        os.unlink(tmp)
    except OSError:
        pass


class LinkRefused(OSError):
    """A file verifybench was about to write is a symbolic link it did not create."""


def open_no_follow(path: Path, mode: str = "ab"):
    """`open(path, mode)` (binary modes: "wb", "ab", "rb+", "xb") that refuses a symbolic link at `path`
    (`LinkRefused`) instead of writing through it."""
    flags = {"wb": os.O_WRONLY | os.O_CREAT | os.O_TRUNC, "ab": os.O_WRONLY | os.O_CREAT | os.O_APPEND,
             "rb+": os.O_RDWR, "xb": os.O_WRONLY | os.O_CREAT | os.O_EXCL}[mode]
    try:
        fd = os.open(path, flags | getattr(os, "O_NOFOLLOW", 0), 0o644)
    except OSError as e:
        if e.errno == errno.ELOOP or (Path(path).is_symlink()):
            raise LinkRefused(errno.ELOOP, f"{path} is a symbolic link; verifybench does not write through a "
                                           "link it did not create (remove it)", str(path)) from None
        raise
    return os.fdopen(fd, mode)


def links_in(folder: Path, names: Iterator[str] | list[str] | tuple[str, ...]) -> list[str]:
    """Which of `names` in `folder` are symbolic links."""
    return [n for n in names if (Path(folder) / n).is_symlink()]


_UNSAFE = re.compile(r"[^\w.\- +=@,]+", re.UNICODE)


def safe_name(name: Any, fallback: str = "suite") -> str:
    """`name` as one file name: separators and other unsafe characters become `_`, leading dots go (no
    `..`, no hidden file), at most 100 characters; `fallback` when nothing is left."""
    text = _UNSAFE.sub("_", str(name)).strip(" ._")
    text = re.sub(r"\.{2,}", "_", text)
    return text[:100] or fallback


def lone_surrogate(value: Any, where: str = "") -> str | None:
    """The dotted path of the first string in `value` (dicts and lists walked) that holds a lone UTF-16
    surrogate, "" for `value` itself; None when there is none."""
    stack: list[tuple[Any, str]] = [(value, where)]
    while stack:
        v, at = stack.pop()
        if isinstance(v, str):
            try:
                v.encode("utf-8")
            except UnicodeEncodeError:
                return at
        elif isinstance(v, dict):
            for k, item in v.items():
                if isinstance(k, str) and lone_surrogate(k) is not None:
                    return f"{at}.{k!a}" if at else ascii(k)
                stack.append((item, f"{at}.{k}" if at else str(k)))
        elif isinstance(v, (list, tuple)):
            stack.extend((item, f"{at}[{i}]") for i, item in enumerate(v))
    return None


def surrogate_message(field: str) -> str:
    return (f"text with a lone UTF-16 surrogate{f' in {field!r}' if field else ''} (an escape such as \\ud800 "
            "without its pair): not valid Unicode text, so it cannot be stored; fix the record")


_URL_CREDENTIALS = re.compile(r"(\b[a-z][a-z0-9+.-]*://[^/\s:@]+:)([^/\s@]+)(@)", re.I)


def redact_url_credentials(value: Any) -> Any:
    """`value` (strings in dicts and lists too) with the password of every `scheme://user:password@host`
    replaced by ***; a password written as `${VAR}` is kept, since it names the variable, not the value."""
    if isinstance(value, str):
        return _URL_CREDENTIALS.sub(lambda m: m.group(0) if re.fullmatch(r"\$\{\w+\}", m.group(2))
                                    else m.group(1) + "***" + m.group(3), value)
    if isinstance(value, dict):
        return {k: redact_url_credentials(v) for k, v in value.items()}
    if isinstance(value, list):
        return [redact_url_credentials(v) for v in value]
    return value


DISK_ERRNOS = {errno.ENOSPC, errno.EFBIG, getattr(errno, "EDQUOT", errno.ENOSPC)}


def disk_error(e: BaseException) -> bool:
    """A write failed for want of room: a full disk, a quota, a file size limit."""
    return isinstance(e, OSError) and e.errno in DISK_ERRNOS


def disk_message(e: OSError, what: str) -> str:
    where = f" ({e.filename})" if e.filename else ""
    return f"{what}: no room to write{where}: {e.strerror or e}"
