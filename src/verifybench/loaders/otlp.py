"""Traces as cases (`loader: otlp`): one unlabeled case per LLM answer span of an OpenTelemetry trace.

What it reads, told apart record by record (so one folder may mix them):

- OTLP JSON: what the OpenTelemetry collector's file exporter and the SDK's OTLP JSON file exporter
  write, one `ExportTraceServiceRequest` (`{"resourceSpans": [...]}`) per line, or one such document.
  Trace and span ids are hex, as the OTLP/JSON encoding says; base64 (protobuf's own JSON mapping) is
  read too. Attribute values are OTLP `AnyValue`s (`stringValue`, `intValue`, `arrayValue`, ...).
- Phoenix's span exports: its spans API (`{"context": {"trace_id", "span_id"}, "span_kind",
  "attributes": {...}}`, or `{"data": [...]}` of them) and `get_spans_dataframe()` written as JSON
  Lines or Parquet (`context.trace_id`, `span_kind`, `attributes.llm.input_messages`, ...).
- Langfuse's trace exports: a trace with its `observations`, or observations alone (`traceId`, `type`
  GENERATION / RETRIEVER, `input`, `output`, `parentObservationId`).

Attribute names, both conventions: the OpenTelemetry GenAI semantic conventions (`gen_ai.operation.name`
chat / text_completion / generate_content, `gen_ai.input.messages`, `gen_ai.output.messages`, a
`retrieval` operation's `gen_ai.retrieval.documents`; the deprecated `gen_ai.prompt` / `gen_ai.completion`
too) and OpenInference's, which Phoenix uses (`openinference.span.kind` LLM / RETRIEVER,
`llm.input_messages.N.message.content`, `retrieval.documents.N.document.content`, `input.value`,
`output.value`).

A case: id `<trace id>:<span id>`; question, the last user message of the span's input; response, the
text of its first output message; sources, the documents of the trace's retrieval spans that started
before it; doc type, the first of `doc_type_attribute` found on the span, its ancestors or the resource;
`meta`: trace and span ids, span name, model, response id, service, conversation. An LLM span inside a
retrieval span (a query rewrite) and one that answered with tool calls only are not answers; a span
that cannot be read (no ids, an attribute that should be JSON and is not, an answer span without a
response) is a bad record naming the file, the line and the span, never a dropped case. Spans are held
in memory until the files are read: a trace's spans may arrive in any batch.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from verifybench.cases import Case, Source
from verifybench.errors import DataError, Location, RecordError, SuiteError
from verifybench.loaders.readers import read_jsonl, read_parquet

# GenAI semantic conventions (tests check these against opentelemetry-semantic-conventions)
GEN_AI_OPERATION = "gen_ai.operation.name"
GEN_AI_INPUT = "gen_ai.input.messages"
GEN_AI_OUTPUT = "gen_ai.output.messages"
GEN_AI_SYSTEM_INSTRUCTIONS = "gen_ai.system_instructions"
GEN_AI_RETRIEVAL_DOCUMENTS = "gen_ai.retrieval.documents"
GEN_AI_PROMPT = "gen_ai.prompt"  # deprecated, still written by older instrumentations
GEN_AI_COMPLETION = "gen_ai.completion"
GEN_AI_ANSWER_OPERATIONS = ("chat", "text_completion", "generate_content")
GEN_AI_RETRIEVAL = "retrieval"
# OpenInference (tests check these against openinference-semantic-conventions)
OI_KIND = "openinference.span.kind"
OI_INPUT_MESSAGES = "llm.input_messages"
OI_OUTPUT_MESSAGES = "llm.output_messages"
OI_DOCUMENTS = "retrieval.documents"
OI_INPUT, OI_OUTPUT = "input.value", "output.value"

_MODEL_KEYS = ("gen_ai.response.model", "gen_ai.request.model", "llm.model_name")
_CONVERSATION_KEYS = ("gen_ai.conversation.id", "session.id", "langfuse.session.id")
_HEX = re.compile(r"^[0-9a-fA-F]+$")


@dataclass
class SpanRecord:
    """One span, whatever file it came from: ids as lowercase hex (or a backend's own id), attributes
    flat (`llm.input_messages.0.message.content`) with Python values."""

    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    start: float  # seconds since the epoch; 0 when unknown
    attrs: dict[str, Any]
    resource: dict[str, Any]
    loc: Location
    kind: str | None = None  # "llm", "retrieval" or None
    fmt: str = "otlp"
    status_error: bool = False
    extra: dict[str, Any] = field(default_factory=dict)  # Langfuse: its input/output as JSON values

    def where(self) -> str:
        return f"span {self.span_id} ({self.name!r}) of trace {self.trace_id}"


class SpanError(ValueError):
    """A span that cannot be read; becomes a `RecordError` naming the span."""

    def __init__(self, message: str, field: str | None = None):
        super().__init__(message)
        self.field = field


# --- reading files --------------------------------------------------------------------------------------

def trace_files(path: str | Path) -> list[Path]:
    """The trace files of `path`: the file, or a folder's .json / .jsonl / .parquet files, sorted."""
    p = Path(path)
    if p.is_file():
        return [p]
    if p.is_dir():
        return sorted(f for f in p.rglob("*") if f.is_file() and f.suffix.lower() in (".json", ".jsonl", ".parquet"))
    raise DataError(f"{p}: no such trace file or folder")


def _documents(path: Path) -> Iterator[tuple[Any, Location] | RecordError]:
    """Each JSON document of a file with where it sits: a line of JSON Lines, the whole of a JSON file,
    a row of a Parquet file."""
    if path.suffix.lower() == ".parquet":
        for rec in read_parquet(path):
            yield rec if isinstance(rec, RecordError) else (rec.data, rec.loc)
        return
    with open(path, "rb") as f:
        head = f.read(1 << 16).lstrip(b"\xef\xbb\xbf \t\r\n")
    if head.startswith(b"[") or (path.suffix.lower() == ".json" and not _one_object_per_line(path)):
        try:
            with open(path, encoding="utf-8-sig") as f:
                yield json.load(f), Location(str(path), 0)
        except (ValueError, UnicodeDecodeError) as e:
            yield RecordError(Location(str(path), 0), f"not a JSON document: {e}")
        return
    for rec in read_jsonl(path):
        yield rec if isinstance(rec, RecordError) else (rec.data, rec.loc)


def _one_object_per_line(path: Path) -> bool:
    with open(path, "rb") as f:
        first = next((line for line in f if line.strip()), b"")
    try:
        return isinstance(json.loads(first), dict)
    except ValueError:
        return False


def _records(doc: Any, loc: Location) -> Iterator[SpanRecord | RecordError]:
    """The spans of one JSON document, in whichever export it is."""
    if isinstance(doc, dict) and ("resourceSpans" in doc or "resource_spans" in doc):
        yield from _otlp_spans(doc, loc)
    elif isinstance(doc, dict) and isinstance(doc.get("data"), list):
        for item in doc["data"]:
            yield from _records(item, loc)
    elif isinstance(doc, list):
        for item in doc:
            yield from _records(item, loc)
    elif isinstance(doc, dict) and ("observations" in doc or ("traceId" in doc and "type" in doc)):
        yield from _langfuse_spans(doc, loc)
    elif isinstance(doc, dict) and ("context" in doc or "context.span_id" in doc):
        yield _guard(lambda: _phoenix_span(doc, loc), loc, doc)
    else:
        kind = type(doc).__name__ if not isinstance(doc, dict) else "an object with keys " + ", ".join(list(doc)[:6])
        yield RecordError(loc, f"not a trace export: expected OTLP JSON (resourceSpans), Phoenix spans (context, "
                               f"span_kind) or Langfuse observations (traceId, type), got {kind}")


def _guard(build, loc: Location, raw: Any) -> SpanRecord | RecordError:
    try:
        return build()
    except SpanError as e:
        return RecordError(loc, f"{_raw_where(raw)}: {e}", e.field)


def _raw_where(raw: Any) -> str:
    if not isinstance(raw, dict):
        return "span"
    sid = raw.get("spanId") or raw.get("span_id") or raw.get("id") or (raw.get("context") or {}).get("span_id") \
        or raw.get("context.span_id")
    name = raw.get("name")
    return f"span {sid or '(no id)'}" + (f" ({name!r})" if name else "")


# --- OTLP JSON ------------------------------------------------------------------------------------------

def any_value(v: Any) -> Any:
    """An OTLP JSON `AnyValue` as a Python value."""
    if not isinstance(v, dict):
        raise SpanError(f"an attribute value must be an object such as {{'stringValue': ...}}, got {v!r}")
    if not v:
        return None
    if "stringValue" in v:
        return v["stringValue"]
    if "boolValue" in v:
        return bool(v["boolValue"])
    if "intValue" in v:
        return int(v["intValue"])  # int64 travels as a string in JSON
    if "doubleValue" in v:
        return float(v["doubleValue"])
    if "arrayValue" in v:
        return [any_value(x) for x in (v["arrayValue"] or {}).get("values", [])]
    if "kvlistValue" in v:
        return attributes((v["kvlistValue"] or {}).get("values", []))
    if "bytesValue" in v:
        return v["bytesValue"]
    raise SpanError(f"unknown attribute value type {next(iter(v))!r}")


def attributes(kvs: Any) -> dict[str, Any]:
    if not isinstance(kvs, list):
        raise SpanError(f"attributes must be a list of {{key, value}}, got {type(kvs).__name__}")
    out = {}
    for kv in kvs:
        if not isinstance(kv, dict) or "key" not in kv:
            raise SpanError(f"an attribute must be {{key, value}}, got {kv!r}")
        try:
            out[str(kv["key"])] = any_value(kv.get("value") or {})
        except SpanError as e:
            raise SpanError(f"{e}", str(kv["key"])) from None
    return out


def otel_id(value: Any, n_bytes: int, what: str) -> str:
    """A trace (16 bytes) or span (8 bytes) id as lowercase hex, from hex (OTLP/JSON) or base64
    (protobuf's JSON mapping)."""
    if not isinstance(value, str) or not value:
        raise SpanError(f"{what} is missing", what)
    if len(value) == 2 * n_bytes and _HEX.match(value):
        raw = bytes.fromhex(value)
    else:
        try:
            raw = base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            raw = b""
        if len(raw) != n_bytes:
            raise SpanError(f"{what} {value!r} is neither {2 * n_bytes} hex digits nor base64 of {n_bytes} bytes",
                            what)
    if not any(raw):
        raise SpanError(f"{what} is all zeros (an invalid id)", what)
    return raw.hex()


def _otlp_spans(doc: dict[str, Any], loc: Location) -> Iterator[SpanRecord | RecordError]:
    for rs in doc.get("resourceSpans") or doc.get("resource_spans") or []:
        try:
            resource = attributes(((rs or {}).get("resource") or {}).get("attributes") or [])
        except SpanError as e:
            yield RecordError(loc, f"resource: {e}", e.field)
            continue
        for ss in rs.get("scopeSpans") or rs.get("scope_spans") or []:
            for raw in (ss or {}).get("spans") or []:
                yield _guard(lambda raw=raw, res=resource: _otlp_span(raw, res, loc), loc, raw)


def _otlp_span(raw: Any, resource: dict[str, Any], loc: Location) -> SpanRecord:
    if not isinstance(raw, dict):
        raise SpanError(f"a span must be an object, got {type(raw).__name__}")
    trace_id = otel_id(raw.get("traceId"), 16, "traceId")
    span_id = otel_id(raw.get("spanId"), 8, "spanId")
    parent = raw.get("parentSpanId") or None
    attrs = attributes(raw.get("attributes") or [])
    for ev in raw.get("events") or []:  # older GenAI events carry the content (gen_ai.content.prompt, ...)
        if isinstance(ev, dict) and str(ev.get("name", "")).startswith("gen_ai."):
            for k, v in attributes(ev.get("attributes") or []).items():
                attrs.setdefault(k, v)
    try:
        start = int(raw.get("startTimeUnixNano") or 0) / 1e9
    except (TypeError, ValueError):
        raise SpanError(f"startTimeUnixNano {raw.get('startTimeUnixNano')!r} is not a number",
                        "startTimeUnixNano") from None
    status = raw.get("status") or {}
    return SpanRecord(trace_id=trace_id, span_id=span_id, name=str(raw.get("name") or ""), start=start,
                      parent_id=otel_id(parent, 8, "parentSpanId") if parent else None, attrs=attrs,
                      resource=resource, loc=loc, status_error=status.get("code") in (2, "STATUS_CODE_ERROR"))


# --- Phoenix ---------------------------------------------------------------------------------------------

def flatten(value: Any, prefix: str = "", out: dict[str, Any] | None = None) -> dict[str, Any]:
    """Nested attributes (Phoenix's dataframe: `llm.input_messages` as a list of {message.role, ...})
    as OpenInference's flat keys (`llm.input_messages.0.message.role`)."""
    out = {} if out is None else out
    if type(value).__name__ == "ndarray":
        value = value.tolist()
    if isinstance(value, dict):
        for k, v in value.items():
            flatten(v, f"{prefix}.{k}" if prefix else str(k), out)
    elif isinstance(value, (list, tuple)) and value and all(isinstance(x, dict) for x in value):
        for i, v in enumerate(value):
            flatten(v, f"{prefix}.{i}", out)
    else:
        out[prefix] = value
    return out


def _seconds(value: Any) -> float:
    if value is None:
        return 0.0
    if isinstance(value, (int, float)):
        return float(value) / (1e9 if value > 1e14 else 1e3 if value > 1e11 else 1)
    if hasattr(value, "timestamp"):
        return float(value.timestamp())
    try:
        return datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp()
    except ValueError:
        raise SpanError(f"start time {value!r} is not an ISO time", "start_time") from None


def _phoenix_span(raw: dict[str, Any], loc: Location) -> SpanRecord:
    ctx: dict[str, Any] = raw["context"] if isinstance(raw.get("context"), dict) else {}
    trace_id = ctx.get("trace_id") or raw.get("context.trace_id")
    span_id = ctx.get("span_id") or raw.get("context.span_id")
    if not trace_id or not span_id:
        raise SpanError("context.trace_id or context.span_id is missing", "context")
    nested = raw.get("attributes")
    attrs = flatten(nested) if isinstance(nested, dict) else {}
    attrs.update(flatten({k[len("attributes."):]: v for k, v in raw.items() if k.startswith("attributes.")}))
    attrs = {k: v for k, v in attrs.items() if v is not None and not (isinstance(v, float) and v != v)}
    if raw.get("span_kind") and OI_KIND not in attrs:
        attrs[OI_KIND] = raw["span_kind"]
    return SpanRecord(trace_id=str(trace_id), span_id=str(span_id), parent_id=raw.get("parent_id") or None,
                      name=str(raw.get("name") or ""), start=_seconds(raw.get("start_time")), attrs=attrs,
                      resource={}, loc=loc, fmt="phoenix",
                      status_error=str(raw.get("status_code") or "").upper() == "ERROR")


# --- Langfuse --------------------------------------------------------------------------------------------

_LANGFUSE_KINDS = {"GENERATION": "llm", "RETRIEVER": "retrieval"}


def _langfuse_spans(doc: dict[str, Any], loc: Location) -> Iterator[SpanRecord | RecordError]:
    if "observations" in doc:
        trace_meta = {"langfuse.trace.name": doc.get("name"), "langfuse.session.id": doc.get("sessionId"),
                      **({f"metadata.{k}": v for k, v in doc["metadata"].items()}
                         if isinstance(doc.get("metadata"), dict) else {})}
        for obs in doc.get("observations") or []:
            if isinstance(obs, dict) and not obs.get("traceId"):
                obs = {**obs, "traceId": doc.get("id")}
            yield _guard(lambda obs=obs: _langfuse_span(obs, loc, trace_meta), loc, obs)
    else:
        yield _guard(lambda: _langfuse_span(doc, loc, {}), loc, doc)


def _langfuse_span(obs: Any, loc: Location, trace_meta: dict[str, Any]) -> SpanRecord:
    if not isinstance(obs, dict):
        raise SpanError(f"an observation must be an object, got {type(obs).__name__}")
    if not obs.get("id") or not obs.get("traceId"):
        raise SpanError("id or traceId is missing", "id")
    meta = obs.get("metadata")
    attrs = {k: v for k, v in trace_meta.items() if v is not None}
    if isinstance(meta, dict):
        attrs.update({f"metadata.{k}": v for k, v in meta.items()})
    if obs.get("model"):
        attrs["llm.model_name"] = obs["model"]
    return SpanRecord(trace_id=str(obs["traceId"]), span_id=str(obs["id"]),
                      parent_id=obs.get("parentObservationId") or None, name=str(obs.get("name") or ""),
                      start=_seconds(obs.get("startTime")), attrs=attrs, resource={}, loc=loc, fmt="langfuse",
                      kind=_LANGFUSE_KINDS.get(str(obs.get("type") or "").upper()),
                      status_error=str(obs.get("level") or "").upper() == "ERROR",
                      extra={"input": obs.get("input"), "output": obs.get("output")})


# --- what a span says -------------------------------------------------------------------------------------

def span_kind(s: SpanRecord) -> str | None:
    if s.kind is not None:
        return s.kind
    oi = str(s.attrs.get(OI_KIND) or "").upper()
    op = str(s.attrs.get(GEN_AI_OPERATION) or "").lower()
    if oi == "LLM" or op in GEN_AI_ANSWER_OPERATIONS:
        return "llm"
    if oi == "RETRIEVER" or op == GEN_AI_RETRIEVAL:
        return "retrieval"
    return None


def _json(value: Any, key: str) -> Any:
    """An attribute that holds JSON as a string (or already structured)."""
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except ValueError as e:
        raise SpanError(f"not valid JSON ({e})", key) from None


def _text(content: Any) -> str | None:
    """The text of a message's content: a string, GenAI parts ({type: text, content}), OpenAI-style
    parts ({type: text, text}) or OpenInference's contents."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [t for p in content if (t := _part_text(p)) is not None]
        return "\n".join(texts) if texts else None
    return None


def _part_text(p: Any) -> str | None:
    if isinstance(p, str):
        return p
    if not isinstance(p, dict) or p.get("type", "text") not in ("text", "output_text", "input_text"):
        return None
    for k in ("content", "text", "message_content.text"):
        if isinstance(p.get(k), str):
            return p[k]
    return None


def _message(m: Any) -> tuple[str, str | None]:
    if not isinstance(m, dict):
        return "", _text(m)
    role = str(m.get("role") or m.get("message.role") or "")
    for k in ("parts", "content", "message.content", "text"):
        if m.get(k) is not None:
            return role, _text(m[k])
    contents = m.get("message.contents") or m.get("contents")
    if isinstance(contents, list):
        return role, _text([c.get("message_content", c) if isinstance(c, dict) else c for c in contents])
    return role, None


def _indexed(attrs: dict[str, Any], prefix: str) -> list[dict[str, Any]]:
    """OpenInference's flattened lists (`prefix.0.message.role`) as a list of dicts, by index."""
    rows: dict[int, dict[str, Any]] = {}
    pre = prefix + "."
    for k, v in attrs.items():
        if k.startswith(pre):
            head, _, rest = k[len(pre):].partition(".")
            if head.isdigit() and rest:
                rows.setdefault(int(head), {})[rest] = v
    out = []
    for i in sorted(rows):
        row = rows[i]
        contents = _indexed(row, "message.contents")
        if contents:
            row["message.contents"] = [{"type": c.get("message_content.type", "text"),
                                        "text": c.get("message_content.text")} for c in contents]
        out.append(row)
    return out


def _messages(s: SpanRecord, side: str) -> tuple[list[tuple[str, str | None]] | None, str | None]:
    """The span's input or output messages as (role, text), and the attribute they came from."""
    if s.fmt == "langfuse":
        value = s.extra.get(side)
        if isinstance(value, dict) and isinstance(value.get("messages"), list):
            value = value["messages"]
        if isinstance(value, dict) and isinstance(value.get("choices"), list):  # an OpenAI response
            value = [c.get("message", c) for c in value["choices"] if isinstance(c, dict)]
        if isinstance(value, list):
            return [_message(m) for m in value], side
        if isinstance(value, dict):
            return [_message(value)], side
        return ([("user" if side == "input" else "assistant", value)] if isinstance(value, str) else None), side
    genai = GEN_AI_INPUT if side == "input" else GEN_AI_OUTPUT
    oi = OI_INPUT_MESSAGES if side == "input" else OI_OUTPUT_MESSAGES
    if s.attrs.get(genai) is not None:
        value = _json(s.attrs[genai], genai)
        if not isinstance(value, list):
            raise SpanError(f"expected a JSON array of messages, got {type(value).__name__}", genai)
        return [_message(m) for m in value], genai
    rows = _indexed(s.attrs, oi)
    if rows:
        return [_message(r) for r in rows], oi
    old = GEN_AI_PROMPT if side == "input" else GEN_AI_COMPLETION
    rows = _indexed(s.attrs, old)  # OpenLLMetry: gen_ai.prompt.0.role / .content
    if rows:
        return [_message(r) for r in rows], old
    if isinstance(s.attrs.get(old), str):
        try:
            value = json.loads(s.attrs[old])
        except ValueError:
            value = s.attrs[old]
        msgs = value if isinstance(value, list) else [value]
        return [_message(m) if isinstance(m, dict) else ("", _text(m)) for m in msgs], old
    plain = OI_INPUT if side == "input" else OI_OUTPUT
    value = s.attrs.get(plain)
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
        except ValueError:
            parsed = None
        if isinstance(parsed, dict) and isinstance(parsed.get("messages"), list):
            return [_message(m) for m in parsed["messages"]], plain
        if isinstance(parsed, dict) and isinstance(parsed.get("choices"), list):
            return [_message(c.get("message", c)) for c in parsed["choices"] if isinstance(c, dict)], plain
        return [("user" if side == "input" else "assistant", value)], plain
    return None, None


def question_of(s: SpanRecord) -> str | None:
    msgs, _ = _messages(s, "input")
    users = [t for role, t in msgs or [] if role in ("user", "human", "") and t]
    return users[-1] if users else None


def response_of(s: SpanRecord) -> str | None:
    """The text of the span's first output message with text; None for an answer of tool calls only.
    Raises `SpanError` when the span records no output at all."""
    msgs, key = _messages(s, "output")
    if msgs is None:
        raise SpanError(f"an answer span without a response: none of {GEN_AI_OUTPUT}, {OI_OUTPUT_MESSAGES}.N, "
                        f"{GEN_AI_COMPLETION} or {OI_OUTPUT} is set", GEN_AI_OUTPUT)
    texts = [t for role, t in msgs if role in ("assistant", "model", "ai", "") and t]
    return texts[0] if texts else None


def documents_of(s: SpanRecord) -> list[Source]:
    """The documents a retrieval span returned, as sources (ids prefixed by the span, so two retrievals'
    document 0 stay apart); a document with no text is left out."""
    docs: list[dict[str, Any]] = []
    if s.fmt == "langfuse":
        value = s.extra.get("output")
        if isinstance(value, dict):
            value = value.get("documents") or value.get("docs") or value.get("results") or [value]
        docs = [d if isinstance(d, dict) else {"content": d} for d in (value if isinstance(value, list) else [])]
    elif s.attrs.get(GEN_AI_RETRIEVAL_DOCUMENTS) is not None:
        value = _json(s.attrs[GEN_AI_RETRIEVAL_DOCUMENTS], GEN_AI_RETRIEVAL_DOCUMENTS)
        if not isinstance(value, list):
            raise SpanError(f"expected a JSON array of documents, got {type(value).__name__}",
                            GEN_AI_RETRIEVAL_DOCUMENTS)
        docs = [d if isinstance(d, dict) else {"content": d} for d in value]
    else:
        docs = [{k.removeprefix("document."): v for k, v in row.items()} for row in _indexed(s.attrs, OI_DOCUMENTS)]
    out = []
    for i, d in enumerate(docs):
        text = next((d[k] for k in ("content", "text", "page_content", "pageContent") if isinstance(d.get(k), str)),
                    None)
        if text is None:
            continue
        meta = {k: v for k, v in d.items() if k not in ("content", "text", "page_content", "pageContent", "id")
                and v is not None}
        out.append(Source(id=f"{s.span_id}:{d.get('id', i)}", text=text, metadata=meta))
    return out


# --- traces to cases ----------------------------------------------------------------------------------------

def _first(attrs: dict[str, Any], keys: Iterable[str]) -> Any:
    return next((attrs[k] for k in keys if attrs.get(k) not in (None, "")), None)


def _case(s: SpanRecord, trace: dict[str, SpanRecord], name: str, doc_type: str,
          doc_type_attribute: list[str]) -> Case | None:
    chain = _ancestors(s, trace)
    if any(span_kind(a) == "retrieval" for a in chain):
        return None  # a model call inside a retrieval (a query rewrite) is not the answer
    if s.status_error and not any(k.startswith(("gen_ai.output", "llm.output", "output")) for k in s.attrs) \
            and s.extra.get("output") is None:
        return None  # a failed call: no answer to check
    response = response_of(s)
    if response is None:
        return None  # tool calls only
    inside = {a.span_id for a in chain}
    sources = [src for r in sorted(trace.values(), key=lambda r: r.start)
               if span_kind(r) == "retrieval" and r.start <= s.start and r.span_id not in inside
               for src in documents_of(r)]
    doc = next((str(v) for key in doc_type_attribute for span in (s, *chain)
                if (v := span.attrs.get(key)) not in (None, "")), None)
    if doc is None:
        doc = next((str(s.resource[k]) for k in doc_type_attribute if s.resource.get(k) not in (None, "")), doc_type)
    meta = {"trace_id": s.trace_id, "span_id": s.span_id, "span_name": s.name, "trace_format": s.fmt,
            "model": _first(s.attrs, _MODEL_KEYS), "response_id": s.attrs.get("gen_ai.response.id"),
            "conversation_id": _first({**s.resource, **s.attrs}, _CONVERSATION_KEYS),
            "service": s.resource.get("service.name"), "started": s.start or None}
    return Case(id=f"{s.trace_id}:{s.span_id}", dataset=name, doc_type=doc, question=question_of(s),
                sources=sources, response=response, label=None,
                meta={k: v for k, v in meta.items() if v is not None}).at(s.loc)


def _ancestors(s: SpanRecord, trace: dict[str, SpanRecord]) -> list[SpanRecord]:
    out, seen, parent = [], {s.span_id}, s.parent_id
    while parent and parent in trace and parent not in seen:
        seen.add(parent)
        out.append(trace[parent])
        parent = trace[parent].parent_id
    return out


def otlp(path: str | Path, name: str | None = None, doc_type: str = "default",
         doc_type_attribute: str | list[str] | None = None) -> Iterator[Case | RecordError]:
    """Unlabeled cases from trace files: OTLP JSON, Phoenix or Langfuse exports (see the module).

    Args:
        path: a trace file or a folder of them (.json, .jsonl, .parquet).
        name: the dataset name; default: the file's or folder's stem.
        doc_type: the doc type of a case whose spans carry no `doc_type_attribute`.
        doc_type_attribute: the attribute(s) that hold the doc type, looked up on the answer span, then
            its ancestors, then the resource (e.g. `app.doc_type`, `metadata.doc_type` for Langfuse).
    """
    keys = [doc_type_attribute] if isinstance(doc_type_attribute, str) else list(doc_type_attribute or [])
    if not all(isinstance(k, str) and k for k in keys):
        raise SuiteError(f"otlp: doc_type_attribute: expected an attribute name or a list of them, got "
                         f"{doc_type_attribute!r}")
    dataset = name or Path(path).stem
    traces: dict[str, dict[str, SpanRecord]] = {}
    order: list[SpanRecord] = []
    for file in trace_files(path):
        for item in _documents(file):
            if isinstance(item, RecordError):
                yield item
                continue
            doc, loc = item
            for rec in _records(doc, loc):
                if isinstance(rec, RecordError):
                    yield rec
                    continue
                traces.setdefault(rec.trace_id, {})[rec.span_id] = rec
                if span_kind(rec) == "llm":
                    order.append(rec)
    for s in order:
        try:
            case = _case(s, traces[s.trace_id], dataset, doc_type, keys)
        except SpanError as e:
            yield RecordError(s.loc, f"{s.where()}: {e}", e.field)
            continue
        if case is not None:
            yield case


otlp.files = lambda path, **_: trace_files(path)  # type: ignore[attr-defined]
