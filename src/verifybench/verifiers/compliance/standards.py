"""Standards with editions, and the clause each requirement comes from.

A standard excerpt in the corpus may carry, in its metadata, the standard's id, its edition and the date
that edition took effect:

    {"id": "STD-BC-204", "doc_type": "standard", "text": "...\\n5.2.1 Prohibited processing aids: ...",
     "metadata": {"standard_id": "V-LABEL", "edition": "2024", "effective_date": "2024-07-01", ...}}

`in_force` keeps, of every standard, the edition in force at the audit date (the latest that took effect
on or before it; with no date, the latest of all) and drops the excerpts of its other editions; an
excerpt without a standard id or effective date is always kept (a corpus without editions behaves as
before). A requirement line may start with its clause id ("5.2.1 Prohibited processing aids: ...");
`clause_at` reads it.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from typing import Any

_CLAUSE = re.compile(r"\s*(?:§\s*|clause\s+)?(\d+(?:\.\d+)*[a-z]?)\.?\s+(?=\S)", re.I)


@dataclass(frozen=True)
class Edition:
    standard_id: str
    edition: str | None
    effective: dt.date

    def __str__(self) -> str:
        return f"{self.standard_id} {self.edition}" if self.edition else f"{self.standard_id} ({self.effective})"


def parse_date(value: Any, what: str) -> dt.date:
    """An ISO date (YYYY-MM-DD) or a date object; ValueError naming `what` otherwise."""
    if isinstance(value, dt.datetime):
        return value.date()
    if isinstance(value, dt.date):
        return value
    try:
        return dt.date.fromisoformat(str(value).strip())
    except ValueError:
        raise ValueError(f"{what}: {value!r} is not a date (YYYY-MM-DD)") from None


def edition_of(doc) -> Edition | None:
    """The edition a standard excerpt belongs to, from its metadata; None when it names none."""
    meta = doc.metadata or {}
    sid, effective = meta.get("standard_id"), meta.get("effective_date")
    if not sid or not effective:
        return None
    edition = meta.get("edition")
    return Edition(str(sid), None if edition is None else str(edition),
                   parse_date(effective, f"document {doc.id!r}: metadata.effective_date"))


def in_force(docs: list, audit_date: dt.date | None) -> list[int]:
    """Row numbers of the excerpts in force at `audit_date` (see the module docstring)."""
    editions = [edition_of(d) for d in docs]
    latest: dict[str, dt.date] = {}
    for e in editions:
        if e is None or (audit_date is not None and e.effective > audit_date):
            continue
        if e.standard_id not in latest or e.effective > latest[e.standard_id]:
            latest[e.standard_id] = e.effective
    return [i for i, e in enumerate(editions) if e is None or latest.get(e.standard_id) == e.effective]


def clause_at(text: str, pos: int) -> str | None:
    """The clause id that starts the line of `text` holding position `pos`, if the line has one."""
    start = text.rfind("\n", 0, pos) + 1
    m = _CLAUSE.match(text, start)
    return m.group(1) if m else None
