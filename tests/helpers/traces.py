"""Trace files written by the real OpenTelemetry SDK: a RAG app's spans as its instrumentation would
record them, in the GenAI semantic conventions and in OpenInference's, through the SDK's OTLP JSON file
exporter (the format the collector's file exporter writes too)."""

from __future__ import annotations

import json
from pathlib import Path

from openinference.instrumentation import (
    get_llm_attributes,
    get_retriever_attributes,
    get_span_kind_attributes,
)
from opentelemetry.exporter.otlp.json.file import FileSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

QA = [  # (doc type, question, retrieved documents, answer)
    ("billing", "When is my bill due?", ["Bills are due on the 5th of each month."], "Your bill is due on the 5th."),
    ("refunds", "How long do refunds take?", ["Refunds are paid within 10 days.", "Refunds go to the card used."],
     "Refunds take about 30 days."),
    ("billing", "Can I pay by card?", ["We accept cards and bank transfers."], "Yes, you can pay by card."),
]


def provider(path: Path, service: str = "support-bot") -> TracerProvider:
    path.parent.mkdir(parents=True, exist_ok=True)
    tp = TracerProvider(resource=Resource.create({"service.name": service, "deployment.environment": "test"}))
    tp.add_span_processor(SimpleSpanProcessor(FileSpanExporter(str(path))))
    return tp


def genai_trace(tracer, doc_type: str, question: str, docs: list[str], answer: str, rewrite: bool = False) -> None:
    """One request of a RAG app in the GenAI conventions: retrieval, then the answering chat call."""
    with tracer.start_as_current_span("handle_request", attributes={"app.doc_type": doc_type}):
        with tracer.start_as_current_span("retrieval kb", attributes={
                "gen_ai.operation.name": "retrieval", "gen_ai.retrieval.query.text": question,
                "gen_ai.retrieval.documents": json.dumps([{"id": f"kb-{i}", "score": 0.9 - i / 10, "content": d}
                                                          for i, d in enumerate(docs)])}):
            if rewrite:  # a model call inside the retrieval: a query rewrite, not the answer
                with tracer.start_as_current_span("chat rewrite", attributes=_chat("rewrite: " + question, question)):
                    pass
        with tracer.start_as_current_span("chat gpt-4o", attributes={
                **_chat(question, answer), "gen_ai.response.id": f"resp-{abs(hash(question)) % 10**6}"}):
            pass


def _chat(question: str, answer: str) -> dict:
    return {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o",
            "gen_ai.input.messages": json.dumps([
                {"role": "system", "parts": [{"type": "text", "content": "Answer from the documents."}]},
                {"role": "user", "parts": [{"type": "text", "content": question}]}]),
            "gen_ai.output.messages": json.dumps([
                {"role": "assistant", "parts": [{"type": "text", "content": answer}], "finish_reason": "stop"}])}


def openinference_trace(tracer, doc_type: str, question: str, docs: list[str], answer: str) -> None:
    """The same request as OpenInference's instrumentations record it (Phoenix's conventions)."""
    with tracer.start_as_current_span("query", attributes={**get_span_kind_attributes("chain"),
                                                           "metadata": json.dumps({"doc_type": doc_type}),
                                                           "app.doc_type": doc_type}):
        with tracer.start_as_current_span("retrieve", attributes={
                **get_span_kind_attributes("retriever"),
                **get_retriever_attributes(documents=[{"content": d, "id": f"kb-{i}", "score": 0.5}
                                                      for i, d in enumerate(docs)])}):
            pass
        with tracer.start_as_current_span("ChatCompletion", attributes={
                **get_span_kind_attributes("llm"),
                **get_llm_attributes(model_name="gpt-4o", input_messages=[
                    {"role": "system", "content": "Answer from the documents."},
                    {"role": "user", "content": question}],
                    output_messages=[{"role": "assistant", "content": answer}])}):
            pass


def write_rag_traces(path: Path, convention: str = "genai") -> Path:
    """Three requests of a support bot (QA), in `convention` ("genai" or "openinference"), to `path`."""
    tp = provider(path)
    tracer = tp.get_tracer("support-bot")
    for i, (doc, q, docs, a) in enumerate(QA):
        if convention == "genai":
            genai_trace(tracer, doc, q, docs, a, rewrite=i == 1)
        else:
            openinference_trace(tracer, doc, q, docs, a)
    tp.shutdown()
    return path
