"""Labels reviewers logged in MLflow, read back as a labeled set (`loader: mlflow`).

```yaml
dataset:
  loader: mlflow
  experiment: support-bot        # the MLflow experiment whose traces were reviewed
  tracking_uri: sqlite:///mlflow.db   # default: MLFLOW_TRACKING_URI, else MLflow's default
  label: hallucinated            # the assessment's name (default)
```

A case per trace (or per span, where the assessment names one) that carries a label: an `Expectation`
named `label`, or a `Feedback` of that name from a HUMAN source (a judge's or code's feedback is not a
label). Its value reads as any label does (true / 1 / yes / hallucinated against false / 0 / no /
faithful). Reviewers who disagree on one trace make a bad record naming them, never a silent pick; a
reviewer who changed their mind counts once, with their latest value.

The case's texts: a trace verifybench recorded (`log --assessments`) gives back its case (id, question,
sources, response); another trace (an app's, ingested by MLflow) gives the assessed span's, else the
root span's, inputs and outputs, and the documents of its retriever spans; its id is
`<trace id>:<span id>` in hex, the id `loader: otlp` gives the same span, so labels join production
runs.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from verifybench.cases import Case, Source
from verifybench.errors import Location, RecordError, SuiteError
from verifybench.loaders.fields import FieldSpec, MissingLabel

_LABELS = FieldSpec()  # the default label words
CASE_TAG = "verifybench.case_id"


def all_traces(client: Any, **search: Any) -> Iterator[Any]:
    """Every trace a search finds, page by page."""
    token = None
    while True:
        page = client.search_traces(max_results=200, page_token=token, **search)
        yield from page
        token = getattr(page, "token", None)
        if not token:
            return


def _text(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        for k in ("response", "output", "answer", "content", "text", "question", "query", "input"):
            if isinstance(value.get(k), str):
                return value[k]
        if isinstance(value.get("choices"), list) and value["choices"]:
            msg = value["choices"][0].get("message") if isinstance(value["choices"][0], dict) else None
            return _text(msg)
        if isinstance(value.get("messages"), list):
            users = [m.get("content") for m in value["messages"] if isinstance(m, dict) and m.get("role") == "user"]
            return users[-1] if users and isinstance(users[-1], str) else None
    return None


def _sources(value: Any, prefix: str) -> list[Source]:
    if isinstance(value, dict):
        value = value.get("documents") or value.get("sources") or []
    out = []
    for i, d in enumerate(value if isinstance(value, list) else []):
        if isinstance(d, str):
            out.append(Source(id=f"{prefix}{i}", text=d))
        elif isinstance(d, dict):
            text = next((d[k] for k in ("text", "page_content", "content") if isinstance(d.get(k), str)), None)
            if text is not None:
                out.append(Source(id=f"{prefix}{d.get('id', i)}", text=text))
    return out


def _labels(trace: Any, label: str) -> dict[str | None, list[Any]]:
    """The label assessments of a trace, by span (None: the whole trace)."""
    by_span: dict[str | None, list[Any]] = {}
    for a in trace.info.assessments or []:
        if a.name != label or getattr(a, "valid", True) is False:
            continue
        if type(a).__name__ != "Expectation" and a.source.source_type != "HUMAN":
            continue
        by_span.setdefault(a.span_id, []).append(a)
    return by_span


def _label(found: list[Any], where: str) -> tuple[bool, list[str]]:
    """One label from a span's label assessments (each reviewer's latest); raises ValueError when they
    disagree or a value is no label."""
    latest: dict[str, Any] = {}
    for a in sorted(found, key=lambda a: a.last_update_time_ms or a.create_time_ms or 0):
        latest[a.source.source_id or a.source.source_type] = a
    values = {}
    for who, a in latest.items():
        try:
            values[who] = _LABELS.label_of(a.value)
        except (MissingLabel, ValueError) as e:
            raise ValueError(f"{who}'s value {a.value!r} is no label ({e})") from None
    if len(set(values.values())) > 1:
        said = ", ".join(f"{w}: {'hallucinated' if v else 'faithful'}" for w, v in sorted(values.items()))
        raise ValueError(f"reviewers disagree on {where} ({said})")
    return next(iter(values.values())), sorted(values)


def mlflow(experiment: str, tracking_uri: str | None = None, label: str = "hallucinated", name: str | None = None,
           doc_type: str = "default") -> Iterator[Case | RecordError]:
    """Labeled cases from the traces of an MLflow experiment that reviewers assessed (see the module).

    Args:
        experiment: the experiment's name (or id).
        tracking_uri: the store; default: MLFLOW_TRACKING_URI, else MLflow's default.
        label: the name of the label assessment.
        name: the dataset name; default: the experiment's.
        doc_type: the doc type of a case whose trace has no `verifybench.doc_type` tag.
    """
    try:
        from mlflow import MlflowClient
        from mlflow.exceptions import MlflowException
    except ImportError:
        raise SuiteError("loader mlflow needs MLflow: pip install 'verifybench[mlflow]'") from None
    client = MlflowClient(tracking_uri)
    try:
        exp = client.get_experiment_by_name(experiment) or client.get_experiment(experiment)
    except MlflowException:
        exp = None
    if exp is None:
        raise SuiteError(f"loader mlflow: no experiment {experiment!r} in the MLflow store")
    where = f"mlflow experiment {exp.name!r}"
    for i, trace in enumerate(all_traces(client, locations=[exp.experiment_id])):
        for span_id, found in _labels(trace, label).items():
            loc = Location(where, i)
            at = f"trace {trace.info.trace_id}" + (f" span {span_id}" if span_id else "")
            try:
                value, reviewers = _label(found, at)
                yield _case(trace, span_id, value, reviewers, name or exp.name, doc_type).at(loc)
            except ValueError as e:
                yield RecordError(loc, f"{at}: {e}", f"assessments.{label}")


def _case(trace: Any, span_id: str | None, label: bool, reviewers: list[str], dataset: str, doc_type: str) -> Case:
    spans = trace.data.spans or []
    root = next((s for s in spans if s.parent_id is None), spans[0] if spans else None)
    span = next((s for s in spans if s.span_id == span_id), root)
    if span is None:
        raise ValueError("the trace holds no span")
    tags = trace.info.tags or {}
    hex_trace = trace.info.trace_id.removeprefix("tr-")
    inputs, outputs = span.inputs, span.outputs
    response = _text(outputs)
    if response is None:
        raise ValueError(f"span {span.span_id} has no response text in its outputs ({json.dumps(outputs)[:80]})")
    if CASE_TAG in tags and isinstance(inputs, dict):  # a case verifybench recorded: its own sources
        sources = _sources(inputs.get("sources"), "")
        question = inputs.get("question") if isinstance(inputs.get("question"), str) else None
        cid = tags[CASE_TAG]
    else:
        sources = [src for s in spans if str(s.span_type).upper() == "RETRIEVER" and s.start_time_ns <= span.start_time_ns
                   for src in _sources(s.outputs, f"{s.span_id}:")]
        question = _text(inputs)
        cid = f"{hex_trace}:{span.span_id}"
    return Case(id=cid, dataset=dataset, doc_type=tags.get("verifybench.doc_type") or doc_type, question=question,
                sources=sources, response=response, label=label,
                meta={"mlflow_trace_id": trace.info.trace_id, "span_id": span.span_id, "reviewers": reviewers})
