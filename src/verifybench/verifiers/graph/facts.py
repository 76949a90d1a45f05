"""The facts of the refund knowledge graph: three CSV files in one folder, checked row by row.

    customers.csv  customer_id, name, tier
    orders.csv     order_id, customer_id, amount, shipping, final_sale, defective, days_since_delivery
    policies.csv   policy_id, tier, return_window_days, restocking_fee_pct, refund_method,
                   shipping_refundable, retroactive_bereavement

Money is read as decimal text ("129.99") and kept as integer cents, so no rule ever compares floats.
Booleans are `true`/`false`. A bad cell is an error naming the file, the line and the field; nothing is
guessed. Identifiers and tiers are stripped; tiers and refund methods are upper-cased.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from pathlib import Path

import pandas as pd


class FactsError(ValueError):
    """A facts file is missing or holds a value that cannot be read."""


def _text(v: str) -> str:
    v = v.strip()
    if not v:
        raise ValueError("is empty")
    return v


def _upper(v: str) -> str:
    return "_".join(_text(v).upper().split())


def _cents(v: str) -> int:
    try:
        d = Decimal(_text(v))
    except InvalidOperation:
        raise ValueError(f"{v!r} is not a decimal amount") from None
    if d < 0 or d != d.quantize(Decimal("0.01")):
        raise ValueError(f"{v!r} is not a non-negative amount with at most 2 decimals")
    return int(d * 100)


def _bool(v: str) -> bool:
    s = v.strip().lower()
    if s in ("true", "1", "yes"):
        return True
    if s in ("false", "0", "no"):
        return False
    raise ValueError(f"{v!r} is not a boolean (true/false)")


def _int(v: str) -> int:
    try:
        n = int(_text(v))
    except ValueError:
        raise ValueError(f"{v!r} is not a whole number") from None
    if n < 0:
        raise ValueError(f"{v!r} is negative")
    return n


def _percent(v: str) -> int:
    n = _int(v)
    if n > 100:
        raise ValueError(f"{v!r} is over 100 percent")
    return n


# file -> {csv column: (reader, table column)}; the table columns are what rules.py reads.
SCHEMAS: dict[str, dict[str, tuple]] = {
    "customers": {"customer_id": (_text, "customer_id"), "name": (_text, "name"), "tier": (_upper, "tier")},
    "orders": {
        "order_id": (_text, "order_id"), "customer_id": (_text, "customer_id"),
        "amount": (_cents, "amount_cents"), "shipping": (_cents, "shipping_cents"),
        "final_sale": (_bool, "final_sale"), "defective": (_bool, "defective"),
        "days_since_delivery": (_int, "days_since_delivery"),
    },
    "policies": {
        "policy_id": (_text, "policy_id"), "tier": (_upper, "tier"),
        "return_window_days": (_int, "return_window_days"), "restocking_fee_pct": (_percent, "restocking_fee_pct"),
        "refund_method": (_upper, "refund_method"), "shipping_refundable": (_bool, "shipping_refundable"),
        "retroactive_bereavement": (_bool, "retroactive_bereavement"),
    },
}
KEYS = {"customers": "customer_id", "orders": "order_id", "policies": "policy_id"}


@dataclass
class Facts:
    """The three fact tables, as typed DataFrames with the column names rules.py reads."""

    customers: pd.DataFrame
    orders: pd.DataFrame
    policies: pd.DataFrame
    folder: str | None = None

    def tables(self) -> dict[str, pd.DataFrame]:
        return {"customers": self.customers, "orders": self.orders, "policies": self.policies}


def read_table(path: Path, name: str) -> pd.DataFrame:
    """One facts file as a typed DataFrame.

    Args:
        path: the CSV file.
        name: which schema of `SCHEMAS` it follows.

    Raises:
        FactsError: naming the file, the line and the field of the first bad value.
    """
    schema = SCHEMAS[name]
    if not path.is_file():
        raise FactsError(f"{path}: no such facts file (expected {name}.csv with columns {', '.join(schema)})")
    columns: dict[str, list] = {col: [] for _, col in schema.values()}
    seen: dict[str, int] = {}
    with path.open(newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        missing = [c for c in schema if c not in (reader.fieldnames or [])]
        if missing:
            raise FactsError(f"{path}:1: missing column(s) {', '.join(missing)}; found {reader.fieldnames}")
        for row in reader:
            line = reader.line_num
            for field, (parse, col) in schema.items():
                raw = row.get(field)
                try:
                    columns[col].append(parse(raw if raw is not None else ""))
                except ValueError as e:
                    raise FactsError(f"{path}:{line}: field {field!r}: {e}") from None
            key = columns[schema[KEYS[name]][1]][-1]
            if key in seen:
                raise FactsError(f"{path}:{line}: field {KEYS[name]!r}: {key!r} repeats line {seen[key]}")
            seen[key] = line
    return pd.DataFrame(columns)


def load_facts(folder: str | Path) -> Facts:
    """The facts folder (customers.csv, orders.csv, policies.csv) read and checked.

    Args:
        folder: the folder holding the three files.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise FactsError(f"{folder}: no such facts folder")
    facts = Facts(**{name: read_table(folder / f"{name}.csv", name) for name in SCHEMAS}, folder=str(folder))
    # An order of an unknown customer would silently derive nothing: say where it is instead.
    known = set(facts.customers["customer_id"])
    for row, customer in enumerate(facts.orders["customer_id"]):
        if customer not in known:
            raise FactsError(f"{folder / 'orders.csv'}:{row + 2}: field 'customer_id': {customer!r} is not in customers.csv")
    return facts
