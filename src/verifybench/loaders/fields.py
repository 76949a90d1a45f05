"""Map any record's fields onto a `Case`, so a user's own file needs a suite entry, not code.

Labels: a label value is compared by what it means, not how it is spelled: 1, 1.0, "1", "1.0", True and
"true" are one value (so are 0, 0.0, "0", False, "false"); other strings compare lower-cased and
stripped. By default 1/true/yes and the words hallucinated, unfaithful, inconsistent mean hallucinated;
0/false/no and faithful, consistent, supported mean faithful. A label column whose name says the
opposite (`is_correct`, `faithful`, `supported`, ...) must say which way it points (`positive:` or
explicit lists): a silently inverted benchmark scores every verifier backwards.
"""

from __future__ import annotations

import ast
import json
import math
import numbers
import re
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from functools import lru_cache
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, model_validator

from verifybench._util.fieldpath import parse_path
from verifybench._util.safeio import lone_surrogate, surrogate_message
from verifybench.cases import Case, Source, Span
from verifybench.errors import RecordError
from verifybench.loaders.readers import Record
from verifybench.text.locate import SpanError, gold_spans

# What a true/1/yes value means depends on `positive`; the words mean the same either way.
TRUE_VALUES = [1, "yes"]
FALSE_VALUES = [0, "no"]
HALLUCINATED_WORDS = ["hallucinated", "unfaithful", "inconsistent"]
FAITHFUL_WORDS = ["faithful", "consistent", "supported"]
HALLUCINATED_VALUES = TRUE_VALUES + HALLUCINATED_WORDS  # the defaults with `positive: hallucinated`
FAITHFUL_VALUES = FALSE_VALUES + FAITHFUL_WORDS

# Words in a label column's name that say a true value means the response is right.
_OPPOSITE = {"correct", "correctness", "faithful", "faithfulness", "consistent", "consistency", "supported",
             "support", "grounded", "groundedness", "factual", "factuality", "accurate", "accuracy", "valid",
             "validity", "entailed", "entailment", "attributable", "attributed", "truthful", "verified", "ok",
             "good", "right", "pass", "passed", "passes", "true", "acceptable", "approved"}
_NEGATION = {"not", "non", "no", "in", "un", "is_not", "hallucinated", "hallucination", "hallucinations",
             "unfaithful", "incorrect", "inconsistent", "unsupported", "wrong", "bad", "error", "false", "fail"}


class FieldSpec(BaseModel):
    """Which record field holds each part of a `Case`. Dotted names reach into nested objects.

    A label value in neither `hallucinated` nor `faithful` is an error naming the value, never a silent
    guess. `positive` says what a true/1/yes label means; it is required when the label column's name
    suggests the opposite of "hallucinated" (is_correct, faithful, consistent, supported, ...).
    """

    model_config = ConfigDict(extra="forbid")

    id: str | None = Field(None, description="case id field; default: `id` when present and not null, else "
                           "`#<index>` (the record's 0-based index, marked so it never equals a given id)")
    response: str = "response"
    sources: str | list[str] | None = Field(
        "sources", description="a field holding a string, a list of strings or of {id, text, ...}; or a list of fields"
    )
    question: str | None = None
    label: str = "label"
    positive: Literal["hallucinated", "faithful"] | None = Field(
        None, description="what a true/1/yes label means (default: hallucinated)")
    hallucinated: list[Any] | None = Field(None, description="label values meaning hallucinated")
    faithful: list[Any] | None = Field(None, description="label values meaning faithful")
    doc_type: str | None = Field(None, description="field holding the document type")
    split: str | None = None
    claims: str | None = None
    spans: str | None = Field(None, description="hallucinated spans: strings located in the response, "
                              "{start, end} offsets, or one such list per annotator (with spans_merge)")
    spans_merge: Literal["union", "majority"] | None = Field(
        None, description="several annotators' spans: characters marked by any (union) or by more than half (majority)")
    group: str | None = Field(None, description="cases sharing this field's value are a minimal pair (or set): "
                              "kept on one side of the split, scored by pairwise accuracy")
    meta: list[str] | None = Field(
        None, description="fields copied into Case.meta; default: all unmapped fields, a `meta` object flattened"
    )
    _keys: tuple[set, set] | None = PrivateAttr(None)  # the label values' keys, computed on first use
    _listed: bool = PrivateAttr(False)  # `hallucinated:` or `faithful:` given (not only the defaults)

    @model_validator(mode="after")
    def _paths(self) -> FieldSpec:
        """Every field path parses (a key with a dot in it is written `meta["a.b"]`)."""
        for key in ("id", "response", "sources", "question", "label", "doc_type", "split", "claims", "spans",
                    "group", "meta"):
            value = getattr(self, key)
            for path in value if isinstance(value, list) else [value]:
                if isinstance(path, str):
                    try:
                        parse_path(path)
                    except ValueError as e:
                        raise ValueError(f"{key}: {e}") from None
        return self

    @model_validator(mode="after")
    def _polarity(self) -> FieldSpec:
        explicit = self.positive is not None or self.hallucinated is not None or self.faithful is not None
        if not explicit and opposite_polarity(self.label):
            raise ValueError(
                f"the label column {self.label!r} sounds like true/1 means the response is right, but by default "
                "true/1 means hallucinated. Say which: `positive: faithful` (true/1 = faithful) or "
                "`positive: hallucinated`, or list the values in `hallucinated:` and `faithful:`")
        flip = self.positive == "faithful"
        self._listed = self.hallucinated is not None or self.faithful is not None
        if self.hallucinated is None:
            self.hallucinated = (FALSE_VALUES if flip else TRUE_VALUES) + HALLUCINATED_WORDS
        if self.faithful is None:
            self.faithful = (TRUE_VALUES if flip else FALSE_VALUES) + FAITHFUL_WORDS
        both = {label_key(v) for v in self.hallucinated} & {label_key(v) for v in self.faithful}
        if both:
            raise ValueError(f"label value(s) {sorted(map(str, both))} are listed as both hallucinated and faithful")
        return self

    def label_of(self, value: Any) -> bool:
        """The label a raw value means (see `parse_label`), with the value lists' keys computed once."""
        keys = self._keys
        if keys is None:
            keys = self._keys = (_key_set(self.hallucinated), _key_set(self.faithful))
        v = label_key(value)
        try:
            if v in keys[0]:
                return True
            if v in keys[1]:
                return False
        except TypeError:  # an unhashable value (a list) is in neither
            pass
        raise ValueError(f"label value {value!r} is in neither hallucinated={self.hallucinated} "
                         f"nor faithful={self.faithful}")


def opposite_polarity(column: str) -> bool:
    """True when a label column's name suggests that a true value means faithful (is_correct, supported)."""
    try:
        last = parse_path(column)[-1]
    except ValueError:
        last = column
    name = re.sub(r"([a-z])([A-Z])", r"\1_\2", last).lower()
    words = set(re.split(r"[^a-z0-9]+", name)) - {""}
    return bool(words & _OPPOSITE) and not words & _NEGATION


_MISSING = object()
def get_field(data: dict[str, Any], name: str) -> Any:
    """`data[name]`, following dots (and `["quoted.keys"]`) into nested objects; `_MISSING` when absent."""
    value: Any = data
    if name in data:  # the common case, and a flat key that holds a dot (a CSV column "score.v2")
        return data[name]
    for part in parse_path(name):
        if not isinstance(value, dict) or part not in value:
            return _MISSING
        value = value[part]
    return value


class MissingLabel(ValueError):
    pass


def label_key(value: Any) -> Any:
    """The value a label compares by: 1, 1.0, "1", "1.0", True and "true" all give 1; strings otherwise
    compare stripped and lower-cased. A NaN (pandas' missing value) is a missing label, not a value."""
    if isinstance(value, bool) or type(value).__name__ == "bool_":
        return int(value)
    if isinstance(value, numbers.Real):
        f = float(value)
        if math.isnan(f):
            raise MissingLabel("the label is missing (NaN)")
        return int(f) if f.is_integer() else f
    if isinstance(value, str):
        return _str_key(value)
    return value


@lru_cache(maxsize=4096)  # a label column holds few distinct strings; parsing one costs an exception
def _str_key(value: str) -> Any:
    s = value.strip().lower()
    if s in ("true", "false"):
        return int(s == "true")
    if s in ("", "nan", "none", "null", "na", "n/a"):
        raise MissingLabel(f"the label is missing ({value!r})")
    try:
        f = float(s)
    except ValueError:
        return s
    return label_key(f) if math.isfinite(f) else s


def _key_set(values: list[Any] | None) -> set:
    return {k for k in map(label_key, values or []) if isinstance(k, (str, int, float))}


def parse_label(value: Any, hallucinated: list[Any], faithful: list[Any]) -> bool:
    v = label_key(value)

    def member(options: list[Any]) -> bool:
        return any(v == label_key(o) for o in options)

    if member(hallucinated):
        return True
    if member(faithful):
        return False
    raise ValueError(f"label value {value!r} is in neither hallucinated={hallucinated} nor faithful={faithful}")


# --- which raw label values became which label (for `verifybench describe`) ----------------------------

class LabelLog:
    """Counts (label field, raw value, label) while a dataset is read; loaders report through `note_label`."""

    MAX_VALUES = 100  # a free-text column would otherwise list every value

    def __init__(self):
        self.counts: Counter = Counter()

    def add(self, field: str, raw: Any, label: bool) -> None:
        key = (field, _show(raw), label)
        if key in self.counts or len(self.counts) < self.MAX_VALUES:
            self.counts[key] += 1

    def rows(self) -> list[dict[str, Any]]:
        return [{"field": f, "value": v, "label": "hallucinated" if lab else "faithful", "cases": n}
                for (f, v, lab), n in sorted(self.counts.items(), key=lambda kv: (kv[0][0], not kv[0][2], -kv[1]))]


def _show(raw: Any) -> str:
    """A raw value as a reader recognises it: strings quoted, so "1" and 1 are told apart."""
    try:
        text = json.dumps(raw, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(raw)
    if type(raw).__name__ not in ("str", "int", "float", "bool", "NoneType"):
        text = f"{text} ({type(raw).__name__})"
    return text if len(text) <= 60 else text[:57] + "..."


_LABELS: ContextVar[LabelLog | None] = ContextVar("verifybench_label_log", default=None)


@contextmanager
def recording_labels(log: LabelLog) -> Iterator[LabelLog]:
    """Record, into `log`, every label a loader reads while the block runs."""
    token = _LABELS.set(log)
    try:
        yield log
    finally:
        _LABELS.reset(token)


def note_label(field: str, raw: Any, label: bool) -> None:
    """A loader says which raw value it read as which label (shown by `verifybench describe`)."""
    log = _LABELS.get()
    if log is not None:
        log.add(field, raw, label)


# --- sources ----------------------------------------------------------------------------------------------

# A cell that starts like a list of strings or objects: `["a", ...]`, `['a', ...]`, `[{...}]`, `[]`.
_LIST_LIKE = re.compile(r"^\s*\[\s*(?:[\"'{]|\])")


def list_cell(value: str) -> list[Any] | None:
    """A flat file's cell holding a list (JSON, or the Python repr `DataFrame.to_csv` writes), parsed; None
    when the cell does not look like a list. Raises ValueError when it looks like one but does not parse
    (a cell cut short by a spreadsheet's cell limit, say)."""
    if not _LIST_LIKE.match(value):
        return None
    try:
        parsed = json.loads(value)
    except ValueError:
        try:
            parsed = ast.literal_eval(value.strip())
        except (ValueError, SyntaxError, MemoryError, RecursionError) as e:
            head = value.strip()[:40] + ("..." if len(value.strip()) > 40 else "")
            raise ValueError(f"looks like a list ({head!r}) but parses neither as JSON nor as a Python list: "
                             f"{type(e).__name__}: {e}") from None
    if not isinstance(parsed, list):
        raise ValueError(f"looks like a list but is a {type(parsed).__name__}")
    if "\\" in value and lone_surrogate(parsed) is not None:  # an escape such as \ud800 alone
        raise ValueError(surrogate_message(""))
    return parsed


def _sources(value: Any, field: str, list_cells: bool = False) -> list[Source]:
    if value is None:
        return []
    if isinstance(value, str) and list_cells:
        if not value.strip():
            return []  # an empty cell: no source
        parsed = list_cell(value)
        if parsed is not None:
            value = parsed
    if isinstance(value, str):
        return [Source(id=field, text=value)]
    if isinstance(value, tuple) or type(value).__name__ == "ndarray":
        value = list(value)
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


def span_field(value: Any, response: str, spec: FieldSpec, loc: Any, meta: dict[str, Any]) -> list[Span] | None:
    """The gold spans of a record (see `verifybench.text.locate.gold_spans`); strings that could not be located
    are counted in `meta` (`spans_not_found`, `spans_ambiguous`), and the case is then left out of the
    span metrics, since its gold is incomplete."""
    if value is None:
        return None
    try:
        gold = gold_spans(value, response, spec.spans_merge)
    except SpanError as e:
        raise RecordError(loc, str(e), spec.spans) from None
    note_unlocated(meta, gold)
    return [Span(start=s, end=e, text=response[s:e]) for s, e in gold.intervals] or None


def note_unlocated(meta: dict[str, Any], gold: Any) -> None:
    """Count, in a case's meta, the gold span strings found nowhere or more than once in its response."""
    if gold.not_found:
        meta["spans_not_found"] = gold.not_found
    if gold.ambiguous:
        meta["spans_ambiguous"] = gold.ambiguous


def generated_id(loc: Any) -> str:
    """The id of a record that gives none (no id field, or `id: null`): `#` and its 0-based index in the
    file. Marked, so it never equals an id another record gives (a real `id: 0`)."""
    return f"#{loc.index}"


LISTS_HINT = ("name them in the dataset's `fields:`: `hallucinated: [...]` and `faithful: [...]` (known without "
              "lists: 1/true/yes, hallucinated, unfaithful, inconsistent and 0/false/no, faithful, consistent, supported)")


def unknown_label(loc: Any, spec: FieldSpec, raw: Any, message: str) -> RecordError:
    """The error of a label value in neither list. Without `hallucinated:`/`faithful:` lists, a text label
    column's values are unknown to the defaults: the message names the missing lists (skipping such
    records would skip them all). The value rides on the error (`label_value`), so a report of many
    bad records can list the values to put in the lists."""
    if spec._listed or not isinstance(raw, str):
        err = RecordError(loc, message, spec.label)
    else:
        err = RecordError(loc, f"{message}: this text label column needs its values listed; {LISTS_HINT}", spec.label)
    err.label_value = raw  # type: ignore[attr-defined]
    err.label_lists_given = spec._listed  # type: ignore[attr-defined]
    return err


def record_to_case(
    record: Record, spec: FieldSpec, dataset: str, doc_type: str = "default", list_cells: bool = False
) -> Case | RecordError:
    """Build a `Case` from one record, or a `RecordError` naming the record and the field.

    Args:
        list_cells: the record comes from a flat file (CSV, Parquet) whose cells are strings: a sources,
            claims or spans cell holding a list literal is parsed.
    """
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

    def structured(field: str | None) -> Any:
        value = optional(field)
        if list_cells and isinstance(value, str):
            if not value.strip():
                return None
            try:
                parsed = list_cell(value)
            except ValueError as e:
                raise RecordError(loc, str(e), field) from None
            return parsed if parsed is not None else value
        return value

    try:
        response = required(spec.response)
        if not isinstance(response, str):
            raise RecordError(loc, f"must be a string, got {type(response).__name__}", spec.response)
        raw_label = optional(spec.label)
        label: bool | None = None
        if raw_label is not None:  # no label (absent, null, NaN, empty): an unlabeled case, not a bad record
            try:
                label = spec.label_of(raw_label)
            except MissingLabel:
                label = None
            except ValueError as e:
                raise unknown_label(loc, spec, raw_label, str(e)) from None
            else:
                note_label(spec.label, raw_label, label)

        sources: list[Source] = []
        source_fields = [spec.sources] if isinstance(spec.sources, str) else (spec.sources or [])
        for field in source_fields:
            try:
                sources += _sources(optional(field), field, list_cells)
            except ValueError as e:
                raise RecordError(loc, str(e), field) from None

        mapped = {f for f in (spec.id or "id", spec.response, spec.question, spec.label, spec.doc_type, spec.split,
                              spec.claims, spec.spans, spec.group, *source_fields) if f}
        meta_fields = spec.meta if spec.meta is not None else [k for k in data if k not in mapped]
        meta = {k: v for k in meta_fields if (v := get_field(data, k)) is not _MISSING}
        if spec.meta is None and isinstance(meta.get("meta"), dict):
            meta.update(meta.pop("meta"))  # a record's own `meta` object is flattened, not nested
        case_id = required(spec.id) if spec.id else optional("id")
        doc = optional(spec.doc_type)
        split = optional(spec.split)
        question = optional(spec.question)
        spans = span_field(structured(spec.spans), response, spec, loc, meta)
        if spec.group and (group := optional(spec.group)) is not None:
            meta["group"] = group
        elif meta.get("group", 0) is None:
            del meta["group"]  # `group: null` is no group, not one group that every such case shares
        return Case(
            id=str(case_id) if case_id is not None else generated_id(loc),
            dataset=dataset,
            doc_type=str(doc) if doc is not None else doc_type,
            split=str(split) if split is not None else None,
            question=str(question) if question is not None else None,
            sources=sources,
            response=response,
            claims=structured(spec.claims),
            label=label,
            spans=spans,
            meta=meta,
        ).at(loc)
    except RecordError as e:
        return e
    except ValidationError as e:
        err = e.errors()[0]
        field = ".".join(str(p) for p in err["loc"])
        return RecordError(loc, err["msg"], field)
