"""Map any record's fields onto a `Case`, so a user's own file needs a suite entry, not code."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from verifybench.cases import Case, Source, Span
from verifybench.errors import RecordError
from verifybench.loaders.readers import Record

HALLUCINATED_VALUES = [True, 1, "1", "true", "yes", "hallucinated", "unfaithful", "inconsistent"]
FAITHFUL_VALUES = [False, 0, "0", "false", "no", "faithful", "consistent", "supported"]


class FieldSpec(BaseModel):
    """Which record field holds each part of a `Case`. Dotted names reach into nested objects.

    `label` values are compared after lower-casing strings; a value in neither `hallucinated` nor
    `faithful` is an error naming the value, never a silent guess.
    """

    model_config = ConfigDict(extra="forbid")

    id: str | None = Field(None, description="case id field; default: `id` when present, else the record's index")
    response: str = "response"
    sources: str | list[str] | None = Field(
        "sources", description="a field holding a string, a list of strings or of {id, text, ...}; or a list of fields"
    )
    question: str | None = None
    label: str = "label"
    hallucinated: list[Any] = Field(default_factory=lambda: list(HALLUCINATED_VALUES))
    faithful: list[Any] = Field(default_factory=lambda: list(FAITHFUL_VALUES))
    doc_type: str | None = Field(None, description="field holding the document type")
    split: str | None = None
    claims: str | None = None
    spans: str | None = None
    meta: list[str] | None = Field(
        None, description="fields copied into Case.meta; default: all unmapped fields, a `meta` object flattened"
    )


_MISSING = object()


def get_field(data: dict[str, Any], name: str) -> Any:
    """`data[name]`, following dots into nested objects; `_MISSING` when absent."""
    value: Any = data
    for part in name.split("."):
        if not isinstance(value, dict) or part not in value:
            return _MISSING
        value = value[part]
    return value


def _norm(value: Any) -> Any:
    return value.strip().lower() if isinstance(value, str) else value


def parse_label(value: Any, hallucinated: list[Any], faithful: list[Any]) -> bool:
    v = _norm(value)
    # bool is an int in Python: compare type-strictly so that 1 and True stay distinct entries.
    def member(options: list[Any]) -> bool:
        return any(type(v) is type(_norm(o)) and v == _norm(o) for o in options)

    if member(hallucinated):
        return True
    if member(faithful):
        return False
    raise ValueError(f"label value {value!r} is in neither hallucinated={hallucinated} nor faithful={faithful}")


def _sources(value: Any, field: str) -> list[Source]:
    if value is None:
        return []
    if isinstance(value, str):
        return [Source(id=field, text=value)]
    if isinstance(value, list):
        out = []
        for i, item in enumerate(value):
            if isinstance(item, str):
                out.append(Source(id=str(i), text=item))
            elif isinstance(item, dict) and isinstance(item.get("text"), str):
                meta = {k: v for k, v in item.items() if k not in ("id", "text")}
                out.append(Source(id=str(item.get("id", i)), text=item["text"], metadata=meta))
            else:
                raise ValueError(f"item {i} must be a string or an object with a 'text' string")
        return out
    raise ValueError(f"expected a string or a list, got {type(value).__name__}")


def record_to_case(
    record: Record, spec: FieldSpec, dataset: str, doc_type: str = "default"
) -> Case | RecordError:
    """Build a `Case` from one record, or a `RecordError` naming the record and the field."""
    data, loc = record.data, record.loc

    def required(field: str) -> Any:
        value = get_field(data, field)
        if value is _MISSING or value is None:
            present = ", ".join(sorted(data)) or "none"
            raise RecordError(loc, f"missing required field (fields present: {present})", field)
        return value

    def optional(field: str | None) -> Any:
        if field is None:
            return None
        value = get_field(data, field)
        return None if value is _MISSING else value

    try:
        response = required(spec.response)
        if not isinstance(response, str):
            raise RecordError(loc, f"must be a string, got {type(response).__name__}", spec.response)
        try:
            label = parse_label(required(spec.label), spec.hallucinated, spec.faithful)
        except ValueError as e:
            raise RecordError(loc, str(e), spec.label) from None

        sources: list[Source] = []
        source_fields = [spec.sources] if isinstance(spec.sources, str) else (spec.sources or [])
        for field in source_fields:
            try:
                sources += _sources(optional(field), field)
            except ValueError as e:
                raise RecordError(loc, str(e), field) from None

        mapped = {f for f in (spec.id or "id", spec.response, spec.question, spec.label, spec.doc_type, spec.split,
                              spec.claims, spec.spans, *source_fields) if f}
        meta_fields = spec.meta if spec.meta is not None else [k for k in data if k not in mapped]
        meta = {k: v for k in meta_fields if (v := get_field(data, k)) is not _MISSING}
        if spec.meta is None and isinstance(meta.get("meta"), dict):
            meta.update(meta.pop("meta"))  # a record's own `meta` object is flattened, not nested
        case_id = required(spec.id) if spec.id else optional("id")
        doc = optional(spec.doc_type)
        split = optional(spec.split)
        question = optional(spec.question)
        spans = optional(spec.spans)
        return Case(
            id=str(case_id) if case_id is not None else str(loc.index),
            dataset=dataset,
            doc_type=str(doc) if doc is not None else doc_type,
            split=str(split) if split is not None else None,
            question=str(question) if question is not None else None,
            sources=sources,
            response=response,
            claims=optional(spec.claims),
            label=label,
            spans=[Span.model_validate(s) for s in spans] if spans else None,
            meta=meta,
        ).at(loc)
    except RecordError as e:
        return e
    except ValidationError as e:
        err = e.errors()[0]
        field = ".".join(str(p) for p in err["loc"])
        return RecordError(loc, err["msg"], field)
