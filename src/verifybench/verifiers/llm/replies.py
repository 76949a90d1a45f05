"""The JSON object inside a model's reply.

Models wrap the object they were asked for in prose or code fences, put raw newlines inside strings,
or add a remark after it. `json_object` decodes from the first `{` that starts a complete object (so
a fenced block, a leading sentence and trailing text all work) and ignores what follows it.
"""

from __future__ import annotations

import json
from typing import Any

# Where to give up looking for a later `{` on a long reply of garbage (each try is a partial decode).
MAX_STARTS = 50


def json_object(text: str) -> dict[str, Any]:
    """The first complete JSON object in `text`. ValueError saying why when there is none."""
    # strict=False: small models put raw newlines inside strings; the object is still readable.
    decoder = json.JSONDecoder(strict=False)
    start = text.find("{")
    if start < 0:
        try:
            value = json.loads(text)
        except ValueError:
            raise ValueError("no JSON object in the reply") from None
        raise ValueError(f"the reply is JSON but not an object (a {type(value).__name__})")
    first_error: ValueError | None = None
    for _ in range(MAX_STARTS):
        try:
            obj, _ = decoder.raw_decode(text, start)
        except ValueError as e:
            first_error = first_error or e
        else:
            if isinstance(obj, dict):
                return obj
        start = text.find("{", start + 1)
        if start < 0:
            break
    raise ValueError(f"no complete JSON object in the reply ({first_error})")


def try_json_object(text: str) -> dict[str, Any] | None:
    """`json_object`, or None when the reply holds none."""
    try:
        return json_object(text)
    except ValueError:
        return None
