"""`${VAR}` in options: read from the environment where the option is used, kept as written everywhere else.

A suite's or a policy's verifier options may name an environment variable (`base_url:
"http://user:${PASSWORD}@host/v1"`). Every value read this way is treated as a secret: the verifier
built from the options registers it for scrubbing (verifiers/llm/scrub.py), its config and config hash
hold the option as written (`${PASSWORD}`, never the value: a hash of a short password can be matched by
guessing), and a manifest, a policy or a report stores it as written. So a policy fitted on one machine
is served on another whose environment holds the same names, and rebuilding a verifier from any stored
copy reads the variables again.

`${VERIFYBENCH_DATA}` is the exception: a path to the shared datasets, expanded where it is read (a
suite falls back to `--data-dir`) and stored expanded; a file option enters the config hash by its name
and content wherever it lies.
"""

from __future__ import annotations

import os
import re
from typing import Any

from verifybench.errors import SuiteError

DATA_ENV = "VERIFYBENCH_DATA"
VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
# Characters a URL's user or password cannot hold as they are: they end it, or start the host.
_URL_BREAKERS = re.compile(r"[/?#@\s]")


def names_variable(written: Any) -> bool:
    """`written` is a string that reads a variable from the environment (other than `${VERIFYBENCH_DATA}`)."""
    return isinstance(written, str) and any(m.group(1) != DATA_ENV for m in VAR.finditer(written))


def expand(value: Any, where: str) -> tuple[Any, dict[str, str]]:
    """`value` (options: strings in mappings and lists) with every `${VAR}` read from the environment, and
    the values read, by name (`${VERIFYBENCH_DATA}`'s left out: a path, not a secret).

    Raises SuiteError, as `{where}: option '<path>': ...`, for a variable that is not set, and for a value
    that would break the URL it is put in (a `/` in a password), without quoting the value."""
    read: dict[str, str] = {}
    if not _names_any(value):
        return value, read  # as given, untouched

    def walk(v: Any, path: str) -> Any:
        if isinstance(v, str) and VAR.search(v):
            return _expand_string(v, f"{where}: option {path!r}", read)
        if isinstance(v, dict):
            return {k: walk(x, f"{path}.{k}" if path else str(k)) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [walk(x, f"{path}[{i}]") for i, x in enumerate(v)]
        return v

    return walk(value, ""), read


def _names_any(value: Any) -> bool:
    if isinstance(value, str):
        return VAR.search(value) is not None
    if isinstance(value, dict):
        return any(_names_any(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(_names_any(v) for v in value)
    return False


def _expand_string(text: str, at: str, read: dict[str, str]) -> str:
    userinfo = _userinfo_span(text)
    out, pos = [], 0
    for m in VAR.finditer(text):
        var = m.group(1)
        if var not in os.environ:
            raise SuiteError(f"{at}: environment variable {var} is not set")
        value = os.environ[var]
        if userinfo[0] <= m.start() < userinfo[1] and _URL_BREAKERS.search(value):
            raise SuiteError(
                f"{at}: the value of ${{{var}}} holds a character a URL's user or password cannot hold as it is "
                "(/, ?, #, @ or a blank), so the URL would break and its error would quote part of the value; "
                "percent-encode it in the variable (/ as %2F, ? as %3F, # as %23, @ as %40, a blank as %20)")
        if var != DATA_ENV:
            read[var] = value
        out += [text[pos:m.start()], value]
        pos = m.end()
    return "".join(out) + text[pos:]


def _userinfo_span(written: str) -> tuple[int, int]:
    """Where the user and password of the URL `written` starts with lie ([start, end); empty if none)."""
    m = re.match(r"[a-zA-Z][a-zA-Z0-9+.-]*://", written)
    if not m:
        return (0, 0)
    end = len(written)
    for stop in "/?#":  # the authority ends at the path, the query or the fragment (a `${VAR}` holds none)
        i = written.find(stop, m.end())
        end = min(end, i) if i >= 0 else end
    at = written.rfind("@", m.end(), end)
    return (m.end(), at) if at >= 0 else (0, 0)


def as_written(value: Any, written: Any) -> Any:
    """`value` (options as used, or as dumped by an options model) with every part that came from a string
    naming a variable put back as it was written (`${PASSWORD}`); `written` is the options as given (None:
    nothing came from the environment)."""
    if written is None:
        return value
    if names_variable(written):
        return written
    if isinstance(value, dict):
        w = written if isinstance(written, dict) else {}
        return {k: as_written(v, w.get(k)) for k, v in value.items()}
    if isinstance(value, list):
        items = written if isinstance(written, (list, tuple)) and len(written) == len(value) else [None] * len(value)
        return [as_written(v, x) for v, x in zip(value, items)]
    return value


def names_back(value: Any, read: dict[str, str], min_chars: int) -> Any:
    """`value` with any value of `read` (of `min_chars` or more) still inside a string replaced by its
    `${NAME}`: for an option a verifier rewrote after it was read (the net under `as_written`)."""
    if isinstance(value, str):
        for name, secret in sorted(read.items(), key=lambda p: -len(p[1])):
            if len(secret) >= min_chars and secret in value:
                value = value.replace(secret, f"${{{name}}}")
        return value
    if isinstance(value, dict):
        return {k: names_back(v, read, min_chars) for k, v in value.items()}
    if isinstance(value, list):
        return [names_back(v, read, min_chars) for v in value]
    return value
