"""Field paths: how a suite names a field of a record or a case.

Dots step into nested objects (`meta.vendor.score`). A key that itself holds a dot, or a bracket, is
written in quotes inside brackets: `meta["published.hhem-2.1"]`, `meta['a.b'].c`, `["x.y"]`.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache

_PATH_PART = re.compile(r"""\[\s*(?:"((?:[^"\\]|\\.)*)"|'((?:[^'\\]|\\.)*)')\s*\]|([^.\[\]]+)""")


@lru_cache(maxsize=1024)
def parse_path(name: str) -> tuple[str, ...]:
    """The keys a field path names, in order. Dots step into nested objects (`meta.vendor.score`); a key
    that holds a dot (or brackets) is written in quotes inside brackets: `meta["published.hhem-2.1"]`,
    `meta['a.b'].c`, `["x.y"]`. A ValueError names a path that does not parse."""
    parts: list[str] = []
    pos, n = 0, len(name)
    while pos < n:
        m = _PATH_PART.match(name, pos)
        if not m:
            raise ValueError(f"field path {name!r}: cannot read it at character {pos + 1} ({name[pos:]!r}); "
                             f"write a key holding a dot as [\"key.with.dots\"], e.g. meta[\"published.hhem-2.1\"]")
        quoted = m.group(1) if m.group(1) is not None else m.group(2)
        parts.append(re.sub(r"\\(.)", r"\1", quoted) if quoted is not None else m.group(3))
        pos = m.end()
        if pos < n and name[pos] == ".":
            pos += 1
            if pos == n:
                raise ValueError(f"field path {name!r} ends with a dot")
        elif pos < n and name[pos] != "[":
            raise ValueError(f"field path {name!r}: unexpected {name[pos]!r} at character {pos + 1}")
    if not parts:
        raise ValueError("a field path cannot be empty")
    return tuple(parts)


def show_path(parts: tuple[str, ...] | list[str]) -> str:
    """The path written back: dotted, with a key that holds a dot or a bracket in `["..."]`."""
    out = ""
    for i, p in enumerate(parts):
        if re.search(r"[.\[\]]", p) or not p:
            out += "[" + json.dumps(p, ensure_ascii=False) + "]"
        else:
            out += ("." if i else "") + p
    return out
