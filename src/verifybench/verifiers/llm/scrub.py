"""Secret scrubbing for every text the LLM layer stores or shows: error texts, and completions (a reply,
the replay cache's entries, a judge's reason), before anyone can store or print them.

Some upstream servers and proxies echo the request's headers in their error body, and a hostile or
broken server can put them in a reply, so an API key can arrive inside any text. Two nets catch it:

- the values themselves: every key a backend reads from the environment, and every value a verifier's
  options read from `${VAR}`, is registered here (in this process) when it is read, with its
  percent-decoded form where that differs, and with the base64 characters that encode it (standard and
  URL-safe alphabets, at each of the three alignments a key can have inside a longer base64 text, as in
  a Basic `user:key` header);
- the header shapes: the value after `Authorization`, `Proxy-Authorization`, `x-api-key` or `api-key`
  (as `name: value`, `"name": "value"` or `'name': 'value'`), any `Bearer <token>`, and the password
  of a `scheme://user:password@host` URL (a `/` in it too), whether or not the key was registered.

Both are looked for in the text as it is and in the text with its escapes undone, since a server may
write any character escaped: a JSON `\\uXXXX` (either case, a surrogate pair), `\\/` and JSON's other
short escapes, a `\\xXX` byte, a percent-encoded byte (either case), an HTML entity; each may be escaped
again (`\\\\u0073`, `%252F`, `&amp;#x2F;`), and escapes of other escapes are undone up to three deep. So
a key split by a JSON-escaped slash, or written into a JSON string inside a JSON string, is found. A match
in the unescaped text redacts the escapes it came from.
"""

from __future__ import annotations

import base64
import bisect
import functools
import html
import re
import threading
from collections.abc import Iterable
from urllib.parse import unquote

REDACTED = "[redacted]"
# Shorter values are not keys (and replacing them would garble every message).
MIN_SECRET_CHARS = 6

_secrets: set[str] = set()
_registered_forms: list[str] | None = None  # the secrets and their base64 forms, made when first needed
_lock = threading.Lock()

_HEADER = re.compile(
    r"""(?ix)
    (\b(?:proxy-)?authorization|\bx-api-key|\bapi-key|\bx-goog-api-key)   # the header's name
    (["']?\s*[:=]\s*["']?)                                                # : or = with optional quotes
    ((?:bearer|basic|token)\s+)?                                          # an auth scheme, kept
    (?!\[redacted\]|(?:bearer|basic|token)\b)([^"'\s,;&}\]]+)             # the value, unless done
    """)
_BEARER = re.compile(r"(?i)\b(bearer\s+)([A-Za-z0-9._~+/=-]{6,})")
# A password may hold a `/` (an error quoting a URL it broke); it ends at the last `@` before a blank or quote.
_URL_PASSWORD = re.compile(r"""(\b[a-z][a-z0-9+.-]*://[^/\s:@'"<>]+:)([^\s'"<>]+)(@)""", re.I)
# (pattern, the group that holds the value)
_SHAPES = ((_HEADER, 4), (_BEARER, 2), (_URL_PASSWORD, 2))


def register_secret(value: str | None) -> None:
    """Remember a credential this process has read, so that `scrub` removes it from any text."""
    global _registered_forms
    new = secret_values(value)
    with _lock:
        if not new <= _secrets:
            _secrets.update(new)
            _registered_forms = None


def secret_values(value: str | None) -> set[str]:
    """`value` and its percent-decoded form (what a server receives from a URL's password), each when it
    is long enough to be a key."""
    if not value:
        return set()
    return {v for v in (value, unquote(value)) if len(v) >= MIN_SECRET_CHARS}


def base64_cores(value: str) -> set[str]:
    """The base64 characters that encode `value` wherever it sits in a longer encoded text (standard and
    URL-safe alphabets; the one or two characters at each end that mix in neighbouring bytes are left
    out)."""
    raw = value.encode("utf-8")
    forms = set()
    for k in range(3):
        encoded = base64.b64encode(b"\0" * k + raw + b"\0" * 2).decode("ascii")
        core = encoded[-(-8 * k // 6):(8 * (k + len(raw))) // 6]
        forms.update({core, core.translate(_URLSAFE)})
    return {f for f in forms if len(f) >= MIN_SECRET_CHARS}


_URLSAFE = str.maketrans("+/", "-_")

# One escaped character (or a run of escaped bytes), as servers write them back; each escape may itself
# be escaped again (`\\\\u0073`, `%252F`, `&amp;#x2F;`).
_ESCAPE = re.compile(r"""(?x)
    \\(?:(?P<pair>\\*u[dD][89abAB][0-9a-fA-F]{2}\\+u[dD][c-fC-F][0-9a-fA-F]{2})  # a JSON surrogate pair
        | \\*u(?P<u>[0-9a-fA-F]{4})                                           # JSON \u0073
        | (?P<xbytes>\\*x[0-9a-fA-F]{2}(?:\\+x[0-9a-fA-F]{2})*)                # a byte string's \x73
        | \\*(?P<short>[/"\\bfnrt]))                                          # JSON's short escapes
  | %(?P<pbytes>(?:25)*[0-9a-fA-F]{2}(?:%(?:25)*[0-9a-fA-F]{2})*)           # URL-encoding
  | &(?:amp;)*(?P<entity>\#[0-9]{1,7}|\#[xX][0-9a-fA-F]{1,6}|[A-Za-z]{2,8});  # HTML entities
    """)
_BYTE = re.compile(r"(?:%(?:25)*|\\+x)([0-9a-fA-F]{2})")
_SHORT = {"/": "/", '"': '"', "\\": "\\", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


def _byte_chars(run: str, at: int) -> list[tuple[str, int, int]]:
    """The characters a run of escaped bytes (`%2F%C3%A9`, `\\x2f`) starting at `at` encodes, each with
    the span of its escapes: UTF-8 where it is, a byte as a Latin-1 character where it is not."""
    found = [(int(m.group(1), 16), at + m.start(), at + m.end()) for m in _BYTE.finditer(run)]
    out, i = [], 0
    while i < len(found):
        b = found[i][0]
        size = 1 if b < 0x80 else 2 if b >> 5 == 6 else 3 if b >> 4 == 14 else 4 if b >> 3 == 30 else 1
        try:
            ch = bytes(x[0] for x in found[i:i + size]).decode("utf-8")
        except UnicodeDecodeError:
            ch = ""
        if len(ch) != 1:
            ch, size = chr(b), 1
        out.append((ch, found[i][1], found[i + size - 1][2]))
        i += size
    return out


def _decoded(m: re.Match[str]) -> list[tuple[str, int, int]]:
    """What one escape stands for: (character, start, end) in the text it was found in."""
    if m.group("pair"):
        units = [int(u, 16) for u in re.findall(r"u([0-9a-fA-F]{4})", m.group())]
        return [(chr(0x10000 + ((units[0] - 0xD800) << 10) + units[1] - 0xDC00), *m.span())]
    if m.group("u"):
        return [(chr(int(m.group("u"), 16)), *m.span())]
    if m.group("short"):
        return [(_SHORT[m.group("short")], *m.span())]
    if m.group("entity"):
        ch = html.unescape(f"&{m.group('entity')};")
        return [(ch, *m.span())] if len(ch) == 1 and ch != f"&{m.group('entity')};" else []
    return _byte_chars(m.group(), m.start())


class _Unescaped:
    """A text with every escape undone (`text`), and where each of its characters came from."""

    def __init__(self, source: str):
        # Segments of the result: (start in `text`, start in `source`, end in `source`, literal or not); a
        # literal segment maps character for character, an escaped character maps to its whole escape.
        self.starts: list[int] = []
        self.segments: list[tuple[int, int, bool]] = []
        out: list[str] = []
        at = size = 0
        for m in _ESCAPE.finditer(source):
            one = _undone(m.group())
            if one == m.group():
                continue  # not an escape after all (an unknown entity)
            chars = [(one, *m.span())] if len(one) == 1 else _decoded(m)
            if m.start() > at:
                self._add(size, at, m.start(), True)
                out.append(source[at:m.start()])
                size += m.start() - at
            for ch, s, e in chars:
                self._add(size, s, e, False)
                out.append(ch)
                size += 1
            at = m.end()
        if at < len(source):
            self._add(size, at, len(source), True)
            out.append(source[at:])
        self.text = "".join(out)

    def _add(self, start: int, s: int, e: int, literal: bool) -> None:
        self.starts.append(start)
        self.segments.append((s, e, literal))

    def _where(self, i: int) -> tuple[int, int]:
        k = bisect.bisect_right(self.starts, i) - 1
        s, e, literal = self.segments[k]
        return (s + i - self.starts[k], s + i - self.starts[k] + 1) if literal else (s, e)

    def span(self, start: int, end: int) -> tuple[int, int]:
        """The span of the source that `text[start:end]` came from."""
        return self._where(start)[0], self._where(end - 1)[1]


def _forms(values: frozenset[str]) -> list[str]:
    """`values` and their base64 forms, longest first."""
    return sorted({f for v in values for f in {v} | base64_cores(v)}, key=lambda f: (-len(f), f))


def _registered() -> list[str]:
    global _registered_forms
    with _lock:
        if _registered_forms is None:
            _registered_forms = _forms(frozenset(_secrets))
        return _registered_forms


def _found(text: str, forms: list[str]) -> list[tuple[int, int]]:
    spans = []
    for form in forms:
        i = text.find(form)
        while i >= 0:
            spans.append((i, i + len(form)))
            i = text.find(form, i + len(form))
    return spans


def _spans(text: str, forms: list[str], rounds: int = 3) -> list[tuple[int, int]]:
    """Where `text` holds one of `forms` or a credential-shaped value, as it is or escaped (escapes of
    escapes: up to `rounds` deep)."""
    spans = _found(text, forms)
    for pattern, group in _SHAPES:
        spans += [m.span(group) for m in pattern.finditer(text)]
    plain = _ESCAPE.sub(_undo, text) if rounds and _ESCAPE.search(text) else text
    inner = _spans(plain, forms, rounds - 1) if plain != text else []
    if inner:  # where each character came from, worked out only when there is something to redact
        undone = _Unescaped(text)
        spans += [undone.span(s, e) for s, e in inner]
    return spans


@functools.lru_cache(maxsize=4096)
def _undone(escape: str) -> str:
    m = _ESCAPE.fullmatch(escape)  # `escape` is one match of it
    chars = _decoded(m) if m else []
    return "".join(c for c, _, _ in chars) if chars else escape


def _undo(m: re.Match[str]) -> str:
    return _undone(m.group())


def secret_spans(text: str, extra: Iterable[str] = ()) -> list[tuple[int, int]]:
    """Where `text` holds a registered secret (or an `extra` one) in any encoding, or a credential-shaped
    header value: sorted, merged [start, end) spans."""
    forms = _registered()
    more = frozenset(v for e in extra for v in secret_values(e))
    if more:
        forms = _forms(frozenset(forms) | more)
    merged: list[tuple[int, int]] = []
    for s, e in sorted(_spans(text, forms)):
        if merged and s <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], e))
        else:
            merged.append((s, e))
    return merged


def redact(text: str, spans: list[tuple[int, int]]) -> str:
    """`text` with each (merged, sorted) span replaced by [redacted]."""
    out, at = [], 0
    for s, e in spans:
        out += [text[at:s], REDACTED]
        at = e
    return "".join(out) + text[at:]


def scrub(text: str, extra: Iterable[str] = ()) -> str:
    """`text` with every registered secret (and `extra` ones), in any encoding, and every credential-shaped
    header value replaced by [redacted]."""
    spans = secret_spans(text, extra)
    return redact(text, spans) if spans else text


def scrub_pieces(pieces: list[str]) -> list[str]:
    """`pieces` (a reply's tokens) scrubbed as the text they make together: a secret split across pieces
    becomes [redacted] in the first piece it touches and is cut from the others, so the pieces still join
    into the scrubbed text."""
    text = "".join(pieces)
    spans = secret_spans(text)
    if not spans:
        return pieces
    out, at = [], 0
    for piece in pieces:
        start, end = at, at + len(piece)
        at = end
        inside = [(max(s, start) - start, min(e, end) - start, s >= start) for s, e in spans if s < end and e > start]
        kept, pos = [], 0
        for s, e, first in inside:
            kept += [piece[pos:s], REDACTED if first else ""]
            pos = e
        out.append("".join(kept) + piece[pos:])
    return out


def describe(error: BaseException, extra: Iterable[str] = ()) -> str:
    """`TypeName: message`, scrubbed: the form an error takes in a verdict, a log or a report."""
    return scrub(f"{type(error).__name__}: {error}", extra)
