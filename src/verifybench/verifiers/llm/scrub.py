"""Secret scrubbing for every error text a backend produces, before it is stored or printed.

Some upstream servers and proxies echo the request's headers in their error body, so an API key can
arrive inside an exception message. Two nets catch it:

- the values themselves: every key a backend reads from the environment is registered here (in this
  process) at the moment it is read, and any occurrence of it in a text is replaced;
- the header shapes: the value after `Authorization`, `Proxy-Authorization`, `x-api-key` or `api-key`
  (as `name: value`, `"name": "value"` or `'name': 'value'`), any `Bearer <token>`, and the password
  of a `scheme://user:password@host` URL, whether or not the key was registered.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable

REDACTED = "[redacted]"
# Shorter values are not keys (and replacing them would garble every message).
MIN_SECRET_CHARS = 6

_secrets: set[str] = set()
_lock = threading.Lock()

_HEADER = re.compile(
    r"""(?ix)
    (\b(?:proxy-)?authorization|\bx-api-key|\bapi-key|\bx-goog-api-key)   # the header's name
    (["']?\s*[:=]\s*["']?)                                                # : or = with optional quotes
    ((?:bearer|basic|token)\s+)?                                          # an auth scheme, kept
    (?!\[redacted\]|(?:bearer|basic|token)\b)([^"'\s,;&}\]]+)             # the value, unless done
    """)
_BEARER = re.compile(r"(?i)\b(bearer\s+)([A-Za-z0-9._~+/=-]{6,})")
_URL_PASSWORD = re.compile(r"(\b[a-z][a-z0-9+.-]*://[^/\s:@]+:)([^/\s@]+)(@)", re.I)


def register_secret(value: str | None) -> None:
    """Remember a credential this process has read, so that `scrub` removes it from any text."""
    if value and len(value) >= MIN_SECRET_CHARS:
        with _lock:
            _secrets.add(value)


def scrub(text: str, extra: Iterable[str] = ()) -> str:
    """`text` with every registered secret (and `extra` ones) and every credential-shaped header value
    replaced by [redacted]."""
    with _lock:
        values = set(_secrets)
    values.update(v for v in extra if v and len(v) >= MIN_SECRET_CHARS)
    # Longest first: a key that contains another key must not be half replaced.
    for value in sorted(values, key=len, reverse=True):
        if value in text:
            text = text.replace(value, REDACTED)
    text = _HEADER.sub(lambda m: m.group(1) + m.group(2) + (m.group(3) or "") + REDACTED, text)
    text = _BEARER.sub(lambda m: m.group(1) + REDACTED, text)
    return _URL_PASSWORD.sub(lambda m: m.group(1) + REDACTED + m.group(3), text)


def describe(error: BaseException, extra: Iterable[str] = ()) -> str:
    """`TypeName: message`, scrubbed: the form an error takes in a verdict, a log or a report."""
    return scrub(f"{type(error).__name__}: {error}", extra)
