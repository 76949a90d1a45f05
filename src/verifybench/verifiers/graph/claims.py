"""Gate 1: the shape of a structured claim, checked with pydantic before any graph query.

A claim is `{claim_type, subject_id, value, evidence}`. An unknown claim type, a missing field or a
value of the wrong type for its claim type is rejected with the reason. Accepted values are normalised
to the text form the knowledge graph derives (rules.py), so gate 2 compares like with like:

- names (tier, refund method): trimmed, upper-case, inner spaces and hyphens as `_` ("original payment"
  -> ORIGINAL_PAYMENT);
- booleans: true/false, also from "yes"/"no"; a number is not a boolean;
- money: integer cents, from 129.99, "129.99", "$1,299.00", "129,99 EUR" (rounded half-up to the cent);
- days: a whole number, from 30, 30.0 or "30 days".
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    ValidationError,
    model_validator,
)

from verifybench.verifiers.graph.rules import CLAIM_TYPES

# The value kind of every claim type the knowledge graph can check.
KINDS: dict[str, str] = {
    "customer_tier": "name", "refund_method": "name",
    "defective": "bool", "refund_eligible": "bool", "shipping_refundable": "bool", "bereavement_refund": "bool",
    "return_window_days": "days",
    "restocking_fee": "money", "refund_amount": "money",
}
assert set(KINDS) == set(CLAIM_TYPES), "claims.KINDS and rules.CLAIM_TYPES must name the same claim types"

ClaimType = Literal["customer_tier", "refund_method", "defective", "refund_eligible", "shipping_refundable",
                    "bereavement_refund", "return_window_days", "restocking_fee", "refund_amount"]

_TRUE, _FALSE = {"true", "yes", "y"}, {"false", "no", "n"}
_MONEY = re.compile(r"^(?:[A-Z]{3}|[$€£])?\s*([0-9][0-9 ,.]*)\s*(?:[A-Z]{3}|[$€£])?$", re.IGNORECASE)
_DAYS = re.compile(r"^([0-9]+)(?:\s*(?:days?|d))?$", re.IGNORECASE)


def normalise(kind: str, value: Any) -> str:
    """`value` in the knowledge graph's text form for `kind`; ValueError saying why when it cannot be."""
    if kind == "name":
        if not isinstance(value, str) or not value.strip():
            raise ValueError(f"expected a name (text), got {value!r}")
        return "_".join(value.replace("-", " ").upper().split())
    if kind == "bool":
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
            return "true" if value.strip().lower() in _TRUE else "false"
        raise ValueError(f"expected true or false, got {value!r}")
    if kind == "money":
        return str(_cents(value))
    if kind == "days":
        if isinstance(value, bool):
            raise ValueError(f"expected a whole number of days, got {value!r}")
        if isinstance(value, int) or (isinstance(value, float) and value.is_integer()):
            n = int(value)
        elif isinstance(value, str) and (m := _DAYS.match(value.strip())):
            n = int(m.group(1))
        else:
            raise ValueError(f"expected a whole number of days, got {value!r}")
        if n < 0:
            raise ValueError(f"a number of days cannot be negative, got {value!r}")
        return str(n)
    raise ValueError(f"unknown value kind {kind!r}")


def _cents(value: Any) -> int:
    if isinstance(value, bool):  # pydantic validators report ValueError, not TypeError
        raise ValueError(f"expected an amount of money, got {value!r}")  # noqa: TRY004
    if isinstance(value, (int, float)):
        amount = Decimal(str(value))
    elif isinstance(value, str) and (m := _MONEY.match(value.strip())):
        amount = _money_text(m.group(1).replace(" ", ""), value)
    else:
        raise ValueError(f"expected an amount of money, got {value!r}")
    if not amount.is_finite():  # NaN and Infinity parse as JSON and as Decimal: not money
        raise ValueError(f"expected an amount of money, got {value!r}")
    if amount < 0:
        raise ValueError(f"an amount cannot be negative, got {value!r}")
    return int((amount * 100).quantize(Decimal(1), rounding=ROUND_HALF_UP))


def _money_text(digits: str, value: Any) -> Decimal:
    """"129.99", "129,99", "1,299.00", "1.299,00", "1299": with both separators the last one is the
    decimal mark; a lone separator followed by one or two digits is a decimal mark, by three digits a
    thousands separator ("1,299" / "1.299"); anything else is refused rather than guessed."""
    if "," in digits and "." in digits:
        decimal_mark = "," if digits.rfind(",") > digits.rfind(".") else "."
        thousands = "." if decimal_mark == "," else ","
        if not re.fullmatch(rf"\d{{1,3}}(\{thousands}\d{{3}})*\{decimal_mark}\d{{1,2}}", digits):
            raise ValueError(f"expected an amount of money, got {value!r}")
        digits = digits.replace(thousands, "").replace(decimal_mark, ".")
    elif "," in digits or "." in digits:
        mark = "," if "," in digits else "."
        if re.fullmatch(rf"\d+\{mark}\d{{1,2}}", digits):
            digits = digits.replace(mark, ".")
        elif re.fullmatch(rf"\d{{1,3}}(\{mark}\d{{3}})+", digits):
            digits = digits.replace(mark, "")
        else:
            raise ValueError(f"expected an amount of money, got {value!r}")
    try:
        return Decimal(digits)
    except InvalidOperation:
        raise ValueError(f"expected an amount of money, got {value!r}") from None


def display(claim_type: str, normalised: str) -> str:
    """A normalised value as a person reads it: cents as 135.98, days as '30 days'."""
    kind = KINDS.get(claim_type)
    if kind == "money":
        cents = int(normalised)
        return f"{cents // 100}.{cents % 100:02d}"
    if kind == "days":
        return f"{normalised} days"
    return normalised


class Claim(BaseModel):
    """One structured claim about an order. `normalised` is filled by validation."""

    model_config = ConfigDict(extra="ignore", str_strip_whitespace=True)

    claim_type: ClaimType
    subject_id: StrictStr = Field(min_length=1)
    value: StrictBool | StrictInt | StrictFloat | StrictStr
    evidence: StrictStr
    normalised: str = Field("", exclude=True)

    @model_validator(mode="after")
    def _normalise(self) -> Claim:
        try:
            self.normalised = normalise(KINDS[self.claim_type], self.value)
        except ValueError as e:
            raise ValueError(f"value for {self.claim_type}: {e}") from None
        return self


@dataclass
class Rejection:
    """A claim gate 1 stopped, with the reason naming the field."""

    index: int
    raw: Any
    reason: str


def _reason(e: ValidationError) -> str:
    parts = []
    for err in e.errors():
        field = ".".join(str(p) for p in err["loc"]) or "claim"
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "literal_error":
            msg = f"unknown claim type {err.get('input')!r}; known: {', '.join(CLAIM_TYPES)}"
        elif err["type"] == "missing":
            msg = "missing required field"
        elif err["loc"][:1] == ("value",) and len(err["loc"]) > 1:
            # A union of strict types reports one error per member: say it once.
            field, msg = "value", f"expected text, a number or true/false, got {type(err.get('input')).__name__}"
        parts.append(msg if field == "claim" or msg.startswith("value for") else f"{field}: {msg}")
    return "; ".join(dict.fromkeys(parts))


def gate1(raw_claims: Any) -> tuple[list[tuple[int, Claim]], list[Rejection]]:
    """Split raw claims into accepted (index, Claim) and rejected ones.

    Args:
        raw_claims: a list of claim objects (dicts) as the model emitted them.
    """
    if not isinstance(raw_claims, list):
        return [], [Rejection(-1, raw_claims, f"claims must be a list of objects, got {type(raw_claims).__name__}")]
    accepted, rejected = [], []
    for i, raw in enumerate(raw_claims):
        if not isinstance(raw, dict):
            rejected.append(Rejection(i, raw, f"a claim must be an object, got {type(raw).__name__}"))
            continue
        try:
            accepted.append((i, Claim.model_validate(raw)))
        except ValidationError as e:
            rejected.append(Rejection(i, raw, _reason(e)))
        except Exception as e:  # noqa: BLE001 - whatever a value does, it is this claim's rejection
            rejected.append(Rejection(i, raw, f"{type(e).__name__}: {e}"))
    if not raw_claims:
        rejected.append(Rejection(-1, raw_claims, "no claims: an empty list grounds nothing"))
    return accepted, rejected
