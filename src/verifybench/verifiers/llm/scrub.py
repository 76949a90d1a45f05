"""Secret scrubbing for every text the LLM layer stores or shows: error texts, and completions (a reply,
the replay cache's entries, a judge's reason), before anyone can store or print them.

Some upstream servers and proxies echo the request's headers in their error body, and a hostile or
broken server can put them in a reply, so an API key can arrive inside any text. Two nets catch it:

- the values themselves: every key a backend reads from the environment is registered here (in this
  process) at the moment it is read, and any occurrence of it in a text is replaced, as are its
  URL-encoded forms and the characters of its base64 forms (at each of the three alignments a key can
  have inside a longer base64 text, as in a Basic `user:key` header);
- the header shapes: the value after `Authorization`, `Proxy-Authorization`, `x-api-key` or `api-key`
  (as `name: value`, `"name": "value"` or `'name': 'value'`), any `Bearer <token>`, and the password
  of a `scheme://user:password@host` URL, whether or not the key was registered.
"""

from __future__ import annotations

import base64
import re
import threading
from collections.abc import Iterable

REDACTED = "[redacted]"
# Shorter values are not keys (and replacing them would garble every message).
MIN_SECRET_CHARS = 6

_secrets: set[str] = set()
_variants: set[str] = set()  # encoded forms of the registered secrets
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
        forms = encoded_forms(value)
        with _lock:
            _secrets.add(value)
            _variants.update(forms)


def encoded_forms(value: str) -> set[str]:
    """The URL-encoded forms of `value`, and the base64 characters that encode it wherever it sits in a
    longer encoded text (standard and URL-safe alphabets; the one or two characters at each end that
    mix in neighbouring bytes are left out)."""
    from urllib.parse import quote, quote_plus

    raw = value.encode("utf-8")
    forms = {quote(value, safe=""), quote_plus(value), quote(value)}
    for k in range(3):
        encoded = base64.b64encode(b"\0" * k + raw + b"\0" * 2).decode("ascii")
        core = encoded[-(-8 * k // 6):(8 * (k + len(raw))) // 6]
        forms.update({core, core.translate(_URLSAFE)})
    return {f for f in forms if f != value and len(f) >= MIN_SECRET_CHARS}


_URLSAFE = str.maketrans("+/", "-_")


def scrub(text: str, extra: Iterable[str] = ()) -> str:
    """`text` with every registered secret (and `extra` ones) and every credential-shaped header value
    replaced by [redacted]."""
    with _lock:
        values = set(_secrets) | _variants
    for v in extra:
        if v and len(v) >= MIN_SECRET_CHARS:
            values.add(v)
            values.update(encoded_forms(v))
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
