"""What makes two runs comparable: the cases' content after field mapping, not the files or the suite.

`gate` and `compare` compare two runs case by case, so they need the same cases on the same sides of the
calibration/test split. Two runs are over the same cases when the *content hash* of their cases is
equal: a sha256 over every case as the loaders built it (id, response, sources, question, label, doc
type, split, claims, gold spans and meta), in id order. So

- a run from Python (`verifybench.run(cases=df, ...)`) and a run of a suite file over the same CSV are
  comparable: the same rows mapped by the same `fields:` give the same cases;
- renaming a suite, moving its file, renaming the dataset (`name:`) or reading the same records through
  another loader changes nothing;
- what does make two runs incomparable: another case (a changed response, source, label, split, doc
  type or meta value), another selection of cases (`limit`, `sample`), or another test split (the
  `metrics:` block's `seed` or `test_fraction` on a drawn split). A changed verifier configuration is
  what a gate is for, never a refusal.

Meta values compare by what they mean, since a CSV cell is a string and the same column read by pandas
is a number: 1, 1.0, "1" and "1.0" are one value (numbers to 15 significant digits), and an empty cell
is a missing one (None).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable
from typing import Any

from verifybench.cases import Case


def _canon(value: Any) -> Any:
    """A meta value as it compares: numbers and numeric strings as one number, an empty string as None."""
    if isinstance(value, dict):
        return {str(k): _canon(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_canon(v) for v in value]
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, (int, float)):
        f = float(value)
        if math.isnan(f):
            return None
        # 15 significant digits: a CSV cell parsed by Python and by pandas may differ in the last bit.
        return int(f) if f.is_integer() and abs(f) < 2 ** 53 else float(f"{f:.15g}")
    if isinstance(value, str):
        s = value.strip()
        if not s:
            return None
        try:
            f = float(s)
        except ValueError:
            return value
        return _canon(f) if math.isfinite(f) else value
    return value


def case_digest(case: Case) -> bytes:
    """sha256 of one case's content: every field but the dataset's name, meta compared by meaning."""
    doc = case.model_dump(mode="json", exclude={"dataset"})
    doc["meta"] = _canon(doc.get("meta") or {})
    if doc.get("claims") is not None:
        doc["claims"] = _canon(doc["claims"])
    return hashlib.sha256(json.dumps(doc, sort_keys=True, ensure_ascii=False, separators=(",", ":"),
                                     default=str).encode()).digest()


class ContentHash:
    """The content hash of a stream of cases, fed a batch at a time (order does not matter: the digests
    are combined in id order).

    Held as columns, not a tuple of Python objects per case: the ids as UTF-8 bytes in Arrow arrays and
    the digests in one buffer (a million cases: about 45 MB instead of 200 MB, held through the whole
    scoring pass). Arrow sorts the ids by their bytes, which for UTF-8 is code-point order, the order
    `sorted` gives the strings; the sort is stable, so cases with equal ids keep their order, as `sorted`
    keeps it."""

    _PACK = 65536  # ids kept as Python bytes before they are packed into an Arrow array

    def __init__(self) -> None:
        self._ids: list[Any] = []  # pyarrow binary arrays
        self._pending: list[bytes] = []
        self._digests = bytearray()

    def add(self, cases: Iterable[Case]) -> None:
        for c in cases:
            self._pending.append(c.id.encode())
            self._digests += case_digest(c)
        if len(self._pending) >= self._PACK:
            self._pack()

    def _pack(self) -> None:
        import pyarrow as pa

        if self._pending:
            self._ids.append(pa.array(self._pending, pa.binary()))
            self._pending = []

    def hexdigest(self) -> str:
        import numpy as np
        import pyarrow as pa
        import pyarrow.compute as pc

        h = hashlib.sha256(b"verifybench cases v1\n")
        self._pack()
        if self._ids:
            order = np.asarray(pc.sort_indices(pa.chunked_array(self._ids, pa.binary())), dtype=np.int64)
            h.update(np.frombuffer(self._digests, np.uint8).reshape(-1, 32)[order].tobytes())
        return h.hexdigest()


def content_hash(cases: Iterable[Case]) -> str:
    h = ContentHash()
    h.add(cases)
    return h.hexdigest()


def same_cases(a: dict[str, Any], b: dict[str, Any]) -> bool | None:
    """Whether two manifests' `dataset` blocks hold the same cases by content (`same_content`)."""
    return same_content(a.get("content_hash"), b.get("content_hash"))


def same_content(ha: str | None, hb: str | None) -> bool | None:
    """Whether two content hashes (of runs or baselines) name the same cases; None when either predates
    the content hash (then the caller falls back to the file hash)."""
    if not ha or not hb:
        return None
    return ha == hb
