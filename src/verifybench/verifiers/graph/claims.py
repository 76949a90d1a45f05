"""Gate 1: the shape of a structured claim, checked with pydantic before any graph query.

A claim is `{claim_type, subject_id, value, evidence}`. The claim types and the kind of value each takes
come from the domain pack's claim schema (pack.yaml); an alias names its claim type
(`eligible_for_refund` = `refund_eligible` in the refund pack). An unknown claim type, a missing field or
a value of the wrong kind is rejected with the reason. Accepted values are normalised to the text form
the knowledge graph derives, so gate 2 compares like with like:

- name: trimmed, upper-case, inner spaces and hyphens as `_` ("original payment" -> ORIGINAL_PAYMENT);
- text: trimmed;
- bool: true/false, also from "yes"/"no"; a number is not a boolean;
- money: integer cents, from 129.99, "129.99", "$1,299.00", "129,99 EUR" (rounded half-up to the cent);
- days, int: a whole number, from 30, 30.0 or "30 days";
- date: ISO 8601, from "2026-03-14", "14 March 2026", "March 14, 2026".
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Any, Protocol

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)


class Schema(Protocol):
    """What gate 1 needs of a pack: its claim types, their kinds, and aliases."""

    claims: dict
    aliases: dict[str, str]

    def canonical(self, claim_type: str) -> str | None: ...

    def kind(self, claim_type: str) -> str: ...


_TRUE, _FALSE = {"true", "yes", "y"}, {"false", "no", "n"}
_MONEY = re.compile(r"^(?:[A-Z]{3}|[$€£])?\s*([0-9][0-9 ,.]*)\s*(?:[A-Z]{3}|[$€£])?$", re.IGNORECASE)
_DAYS = re.compile(r"^([0-9]+)(?:\s*(?:(?:calendar|working|business)\s+)?(?:days?|d))?$", re.IGNORECASE)
_DATE_FORMATS = ("%Y-%m-%d", "%d %B %Y", "%d %b %Y", "%B %d %Y", "%b %d %Y", "%d %B, %Y", "%B %d, %Y",
                 "%b %d, %Y", "%d %b, %Y")
_ORDINAL = re.compile(r"(\d{1,2})(?:st|nd|rd|th)\b", re.IGNORECASE)


def normalise(kind: str, value: Any) -> str:
    """`value` in the knowledge graph's text form for `kind`; ValueError saying why when it cannot be."""
    if kind == "name":
        if not isinstance(value, str) or not value.strip():
            raise ValueError(f"expected a name (text), got {value!r}")
        return "_".join(value.replace("-", " ").upper().split())
    if kind == "text":
        if not isinstance(value, str) or not value.strip():
            raise ValueError(f"expected text, got {value!r}")
        return value.strip()
    if kind == "bool":
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
            return "true" if value.strip().lower() in _TRUE else "false"
        raise ValueError(f"expected true or false, got {value!r}")
    if kind == "money":
        return str(_cents(value))
    if kind in ("days", "int"):
        what = "a whole number of days" if kind == "days" else "a whole number"
        if isinstance(value, bool):
            raise ValueError(f"expected {what}, got {value!r}")
        if isinstance(value, int) or (isinstance(value, float) and value.is_integer()):
            n = int(value)
        elif isinstance(value, str) and (m := _DAYS.match(value.strip())):
            n = int(m.group(1))
        else:
            raise ValueError(f"expected {what}, got {value!r}")
        if n < 0:
            raise ValueError(f"a number of days cannot be negative, got {value!r}" if kind == "days"
                             else f"cannot be negative, got {value!r}")
        return str(n)
    if kind == "date":
        return parse_date(value).isoformat()
    raise ValueError(f"unknown value kind {kind!r}")


def parse_date(value: Any) -> dt.date:
    """A calendar date from ISO text or a written date ("14 March 2026", "Mar 14th, 2026"); a bare
    number or a day/month order that could be read two ways ("03/04/2026") is refused."""
    if isinstance(value, dt.datetime):
        return value.date()
    if isinstance(value, dt.date):
        return value
    if not isinstance(value, str):  # pydantic validators report ValueError, not TypeError
        raise ValueError(f"expected a date (YYYY-MM-DD or '14 March 2026'), got {value!r}")  # noqa: TRY004
    text = " ".join(_ORDINAL.sub(r"\1", value.strip().replace(".", " ").replace(",", ", ")).split()).replace(" ,", ",")
    for fmt in _DATE_FORMATS:
        try:
            return dt.datetime.strptime(text, fmt).date()
        except ValueError:
            continue
    raise ValueError(f"expected a date (YYYY-MM-DD or '14 March 2026'), got {value!r}")


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


def display(kind: str | None, normalised: str) -> str:
    """A normalised value as a person reads it: cents as 135.98, days as '30 days'."""
    if kind == "money":
        cents = int(normalised)
        return f"{cents // 100}.{cents % 100:02d}"
    if kind == "days":
        return f"{normalised} days"
    return normalised


class Claim(BaseModel):
    """One structured claim about a subject. `claim_type` is the canonical type after validation (an
    alias is resolved; `written_type` keeps what the model wrote); `normalised` is the value in the
    graph's text form. Validate with `context={"schema": pack}`."""

    model_config = ConfigDict(extra="ignore", str_strip_whitespace=True)

    claim_type: StrictStr
    subject_id: StrictStr = Field(min_length=1)
    value: StrictBool | StrictInt | StrictFloat | StrictStr
    evidence: StrictStr
    normalised: str = Field("", exclude=True)
    written_type: str = Field("", exclude=True)
    kind: str = Field("", exclude=True)

    @field_validator("claim_type")
    @classmethod
    def _known(cls, v: str, info: ValidationInfo) -> str:
        schema: Schema = (info.context or {})["schema"]
        canonical = schema.canonical(v)
        if canonical is None:
            known = list(schema.claims) + [f"{a} (= {t})" for a, t in schema.aliases.items()]
            raise ValueError(f"unknown claim type {v!r}; known: {', '.join(known)}")
        return v

    @model_validator(mode="after")
    def _normalise(self, info: ValidationInfo) -> Claim:
        schema: Schema = (info.context or {})["schema"]
        claim_type = schema.canonical(self.claim_type)
        assert claim_type is not None  # _known refused an unknown type
        kind = schema.kind(claim_type)
        try:
            normalised = normalise(kind, self.value)
        except ValueError as e:
            raise ValueError(f"value for {claim_type}: {e}") from None
        # Straight into __dict__: BaseModel.__setattr__ costs about 3 us a field, a third of gate 1's time.
        self.__dict__.update(written_type=self.claim_type, claim_type=claim_type, kind=kind, normalised=normalised)
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
        if err["type"] == "missing":
            msg = "missing required field"
        elif err["loc"][:1] == ("value",) and len(err["loc"]) > 1:
            # A union of strict types reports one error per member: say it once.
            field, msg = "value", f"expected text, a number or true/false, got {type(err.get('input')).__name__}"
        if field == "claim_type" and msg.startswith("unknown claim type"):
            field = "claim"
        parts.append(msg if field == "claim" or msg.startswith("value for") else f"{field}: {msg}")
    return "; ".join(dict.fromkeys(parts))


def gate1(raw_claims: Any, schema: Schema) -> tuple[list[tuple[int, Claim]], list[Rejection]]:
    """Split raw claims into accepted (index, Claim) and rejected ones.

    Args:
        raw_claims: a list of claim objects (dicts) as the model emitted them.
        schema: the pack whose claim schema applies.
    """
    if not isinstance(raw_claims, list):
        return [], [Rejection(-1, raw_claims, f"claims must be a list of objects, got {type(raw_claims).__name__}")]
    accepted, rejected = [], []
    for i, raw in enumerate(raw_claims):
        if not isinstance(raw, dict):
            rejected.append(Rejection(i, raw, f"a claim must be an object, got {type(raw).__name__}"))
            continue
        try:
            accepted.append((i, Claim.model_validate(raw, context={"schema": schema})))
        except ValidationError as e:
            rejected.append(Rejection(i, raw, _reason(e)))
        except Exception as e:  # noqa: BLE001 - whatever a value does, it is this claim's rejection
            rejected.append(Rejection(i, raw, f"{type(e).__name__}: {e}"))
    if not raw_claims:
        rejected.append(Rejection(-1, raw_claims, "no claims: an empty list grounds nothing"))
    return accepted, rejected
