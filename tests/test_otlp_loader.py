"""Traces in: `loader: otlp` reads trace files written by the real OpenTelemetry SDK (GenAI and OpenInference
conventions), Phoenix's and Langfuse's exports, one unlabeled case per LLM answer span."""

import importlib
import json

import pytest
from conftest import write

from helpers.traces import QA, provider, write_rag_traces
from verifybench import api
from verifybench.errors import DataError
from verifybench.loaders import DatasetSpec, dataset_hash, iter_cases
from verifybench.suite import parse_suite

mod = importlib.import_module("verifybench.loaders.otlp")  # the package's `otlp` is the loader function


def cases_of(path, **options):
    return list(iter_cases(DatasetSpec(loader="otlp", path=str(path), **options)))


def test_attribute_names_are_the_conventions_own():
    """The names the loader reads are those the conventions' own packages define today."""
    from openinference.semconv.trace import DocumentAttributes, MessageAttributes, SpanAttributes
    from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as g

    assert (mod.GEN_AI_OPERATION, mod.GEN_AI_INPUT, mod.GEN_AI_OUTPUT, mod.GEN_AI_RETRIEVAL_DOCUMENTS,
            mod.GEN_AI_PROMPT, mod.GEN_AI_COMPLETION, mod.GEN_AI_SYSTEM_INSTRUCTIONS) == \
        (g.GEN_AI_OPERATION_NAME, g.GEN_AI_INPUT_MESSAGES, g.GEN_AI_OUTPUT_MESSAGES, g.GEN_AI_RETRIEVAL_DOCUMENTS,
         g.GEN_AI_PROMPT, g.GEN_AI_COMPLETION, g.GEN_AI_SYSTEM_INSTRUCTIONS)
    ops = g.GenAiOperationNameValues
    assert mod.GEN_AI_ANSWER_OPERATIONS == (ops.CHAT.value, ops.TEXT_COMPLETION.value, ops.GENERATE_CONTENT.value)
    assert mod.GEN_AI_RETRIEVAL == ops.RETRIEVAL.value
    assert (mod.OI_KIND, mod.OI_INPUT_MESSAGES, mod.OI_OUTPUT_MESSAGES, mod.OI_DOCUMENTS, mod.OI_INPUT,
            mod.OI_OUTPUT) == (SpanAttributes.OPENINFERENCE_SPAN_KIND, SpanAttributes.LLM_INPUT_MESSAGES,
                               SpanAttributes.LLM_OUTPUT_MESSAGES, SpanAttributes.RETRIEVAL_DOCUMENTS,
                               SpanAttributes.INPUT_VALUE, SpanAttributes.OUTPUT_VALUE)
    assert (MessageAttributes.MESSAGE_CONTENT, DocumentAttributes.DOCUMENT_CONTENT) == \
        ("message.content", "document.content")


@pytest.mark.parametrize("convention", ["genai", "openinference"])
def test_sdk_written_traces_become_one_unlabeled_case_per_answer(tmp_path, convention):
    path = write_rag_traces(tmp_path / "traces.jsonl", convention)
    cases = cases_of(path, doc_type_attribute="app.doc_type")
    assert len(cases) == 3  # the query rewrite inside a retrieval is not an answer
    for case, (doc, question, docs, answer) in zip(cases, QA):
        assert case.label is None and case.doc_type == doc
        assert case.question == question and case.response == answer
        assert [s.text for s in case.sources] == docs
        trace_id, span_id = case.id.split(":")
        assert len(trace_id) == 32 and len(span_id) == 16
        assert case.meta["trace_id"] == trace_id and case.meta["span_id"] == span_id
        assert case.meta["model"] == "gpt-4o" and case.meta["service"] == "support-bot"
    if convention == "genai":
        assert cases[0].meta["response_id"].startswith("resp-")
        assert cases[0].sources[0].metadata["score"] == pytest.approx(0.9)
    assert len({c.meta["trace_id"] for c in cases}) == 3


def test_the_ids_are_the_sdks_own(tmp_path):
    path = tmp_path / "t.jsonl"
    tp = provider(path)
    tracer = tp.get_tracer("t")
    with tracer.start_as_current_span("chat", attributes={
            "gen_ai.operation.name": "chat", "gen_ai.output.messages": json.dumps([
                {"role": "assistant", "parts": [{"type": "text", "content": "hi"}]}])}) as span:
        ctx = span.get_span_context()
    tp.shutdown()
    [case] = cases_of(path)
    assert case.id == f"{ctx.trace_id:032x}:{ctx.span_id:016x}"
    assert case.question is None and case.sources == [] and case.doc_type == "default"


def test_a_malformed_span_is_a_bad_record_naming_the_file_and_the_span(tmp_path):
    path = tmp_path / "t.jsonl"
    tp = provider(path)
    tracer = tp.get_tracer("t")
    with tracer.start_as_current_span("chat broken", attributes={
            "gen_ai.operation.name": "chat", "gen_ai.output.messages": "[{not json"}) as broken:
        sid = f"{broken.get_span_context().span_id:016x}"
    with tracer.start_as_current_span("chat mute", attributes={"gen_ai.operation.name": "chat"}) as mute:
        mute_id = f"{mute.get_span_context().span_id:016x}"
    with tracer.start_as_current_span("chat tools", attributes={
            "gen_ai.operation.name": "chat", "gen_ai.output.messages": json.dumps([
                {"role": "assistant", "parts": [{"type": "tool_call", "name": "lookup", "id": "1"}]}])}):
        pass
    tp.shutdown()
    with open(path, "a") as f:  # a span without ids, as a hand-edited or truncated export would have
        f.write(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [{"name": "chat", "spanId": "zz"}]}]}]})
                + "\n")
    errors: list = []
    assert list(iter_cases(DatasetSpec(loader="otlp", path=str(path), on_error="skip"), errors)) == []
    msgs = [str(e) for e in errors]
    assert len(errors) == 3  # the tool-call answer is no answer: not an error, not a case
    assert any(f"t.jsonl:1: field 'gen_ai.output.messages': span {sid} ('chat broken') of trace" in m
               and "not valid JSON" in m for m in msgs)
    assert any(f"span {mute_id} ('chat mute')" in m and "an answer span without a response" in m for m in msgs)
    assert any("t.jsonl:4: field 'traceId': span zz ('chat'): traceId is missing" in m for m in msgs)
    with pytest.raises(DataError, match="3 bad records"):
        cases_of(path)


def test_base64_ids_and_a_pretty_printed_document_are_read(tmp_path):
    """protobuf's own JSON mapping writes ids in base64; a collector file may be one indented document."""
    import base64

    trace_id, span_id = bytes(range(1, 17)), bytes(range(1, 9))
    doc = {"resourceSpans": [{"resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "s"}}]},
                              "scopeSpans": [{"spans": [{
                                  "traceId": base64.b64encode(trace_id).decode(),
                                  "spanId": base64.b64encode(span_id).decode(), "name": "llm",
                                  "attributes": [{"key": "openinference.span.kind", "value": {"stringValue": "LLM"}},
                                                 {"key": "output.value", "value": {"stringValue": "an answer"}},
                                                 {"key": "input.value", "value": {"stringValue": "a question"}}]}]}]}]}
    path = write(tmp_path / "t.json", json.dumps(doc, indent=2))
    [case] = cases_of(path)
    assert case.id == f"{trace_id.hex()}:{span_id.hex()}"
    assert (case.question, case.response) == ("a question", "an answer")


def test_phoenix_span_exports(tmp_path):
    """Phoenix's spans API (nested context, flat attributes) and get_spans_dataframe() as JSON Lines
    (flattened columns, lists of message / document objects)."""
    tid = "a" * 32
    api_spans = {"data": [
        {"name": "retrieve", "context": {"trace_id": tid, "span_id": "1" * 16}, "parent_id": "3" * 16,
         "span_kind": "RETRIEVER", "start_time": "2025-01-01T00:00:00+00:00",
         "attributes": {"retrieval.documents.0.document.content": "Refunds are paid within 10 days."}},
        {"name": "llm", "context": {"trace_id": tid, "span_id": "2" * 16}, "parent_id": "3" * 16,
         "span_kind": "LLM", "start_time": "2025-01-01T00:00:01+00:00",
         "attributes": {"llm.input_messages.0.message.role": "user",
                        "llm.input_messages.0.message.content": "How long do refunds take?",
                        "llm.output_messages.0.message.role": "assistant",
                        "llm.output_messages.0.message.content": "About 30 days.", "app.doc_type": "refunds"}}]}
    path = write(tmp_path / "phoenix.json", json.dumps(api_spans))
    [case] = cases_of(path, doc_type_attribute="app.doc_type")
    assert (case.question, case.response, case.doc_type) == ("How long do refunds take?", "About 30 days.", "refunds")
    assert [s.text for s in case.sources] == ["Refunds are paid within 10 days."]
    assert case.meta["trace_format"] == "phoenix"

    rows = [{"name": "retrieve", "span_kind": "RETRIEVER", "context.trace_id": tid, "context.span_id": "1" * 16,
             "parent_id": None, "start_time": 1735689600000,
             "attributes.retrieval.documents": [{"document.content": "Bills are due on the 5th.",
                                                 "document.id": "kb-1"}]},
            {"name": "llm", "span_kind": "LLM", "context.trace_id": tid, "context.span_id": "2" * 16,
             "parent_id": None, "start_time": 1735689601000,
             "attributes.llm.input_messages": [{"message.role": "user", "message.content": "When is the bill due?"}],
             "attributes.llm.output_messages": [{"message.role": "assistant", "message.content": "The 5th."}],
             "attributes.input.value": "When is the bill due?"}]
    path = write(tmp_path / "spans.jsonl", "\n".join(json.dumps(r) for r in rows) + "\n")
    import pandas as pd

    pd.DataFrame(rows).to_parquet(tmp_path / "spans.parquet")  # the dataframe as Parquet: lists of structs
    for path in (tmp_path / "spans.jsonl", tmp_path / "spans.parquet"):
        [case] = cases_of(path)
        assert (case.question, case.response) == ("When is the bill due?", "The 5th.")
        assert [(s.id, s.text) for s in case.sources] == [("1111111111111111:kb-1", "Bills are due on the 5th.")]


def test_langfuse_trace_exports(tmp_path):
    trace = {"id": "t-1", "name": "support", "metadata": {"doc_type": "billing"}, "observations": [
        {"id": "o-1", "type": "RETRIEVER", "name": "kb", "startTime": "2025-01-01T00:00:00Z",
         "output": [{"pageContent": "We accept cards.", "metadata": {"source": "faq"}}]},
        {"id": "o-2", "type": "GENERATION", "name": "answer", "startTime": "2025-01-01T00:00:01Z", "model": "gpt-4o",
         "input": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Can I pay by card?"}],
         "output": {"role": "assistant", "content": "Yes."}},
        {"id": "o-3", "type": "GENERATION", "name": "no output"}]}
    path = write(tmp_path / "langfuse.json", json.dumps([trace]))
    errors: list = []
    [case] = list(iter_cases(DatasetSpec(loader="otlp", path=str(path), on_error="skip",
                                         doc_type_attribute="metadata.doc_type"), errors))
    assert case.id == "t-1:o-2" and case.doc_type == "billing" and case.meta["model"] == "gpt-4o"
    assert (case.question, case.response) == ("Can I pay by card?", "Yes.")
    assert [s.text for s in case.sources] == ["We accept cards."] and case.sources[0].metadata == {
        "metadata": {"source": "faq"}}
    assert len(errors) == 1 and "span o-3 ('no output') of trace t-1: an answer span without a response" in str(errors[0])


def test_not_a_trace_export_is_named(tmp_path):
    path = write(tmp_path / "x.jsonl", json.dumps({"id": 1, "response": "r"}) + "\n")
    with pytest.raises(DataError, match=r"x.jsonl:1: not a trace export: expected OTLP JSON"):
        cases_of(path)


def test_a_run_over_traces_is_a_window_and_its_hash_covers_the_files(tmp_path):
    path = write_rag_traces(tmp_path / "traces" / "a.jsonl")
    spec = DatasetSpec(loader="otlp", path=str(tmp_path / "traces"))
    before = dataset_hash(spec)
    suite = parse_suite({"name": "prod", "dataset": {"loader": "otlp", "path": str(tmp_path / "traces"),
                                                     "doc_type_attribute": "app.doc_type"},
                         "verifiers": ["rouge"]}, tmp_path, where=str(tmp_path / "prod.yaml"))
    run = api.run(suite, out=tmp_path / "run", progress=False)
    assert run.n_cases == 3 and run.metrics_json["unlabeled"] == 3
    assert set(run.cases["doc_type"]) == {"billing", "refunds"}
    queue = api.label_queue(tmp_path / "run", budget=2, out=tmp_path / "q.csv")
    assert queue["budget"] == 2
    write_rag_traces(path)  # more spans appended to the file
    assert dataset_hash(spec) != before
