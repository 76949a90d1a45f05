"""MLflow assessments against a real MLflow SQLite store: a run's labels as Expectations and its verdicts
as CODE Feedback (`log --assessments`), on the app's own trace where the store holds it; reviewers'
labels logged in MLflow read back as a labeled set (`loader: mlflow`)."""

from __future__ import annotations

import json
import os
import shutil

import pytest
from conftest import write
from typer.testing import CliRunner

from verifybench import api
from verifybench.cli import app
from verifybench.errors import DataError
from verifybench.loaders import DatasetSpec, iter_cases
from verifybench.suite import parse_suite

mlflow = pytest.importorskip("mlflow", reason="needs the mlflow extra (part of the test extra)")
pytestmark = pytest.mark.slow  # MLflow's tracing and its SQLite store (seconds)


@pytest.fixture
def store(tmp_path, monkeypatch, mlflow_empty_store):
    monkeypatch.chdir(tmp_path)  # MLflow puts artifacts under the working directory
    for var in ("MLFLOW_TRACKING_URI", "MLFLOW_EXPERIMENT_NAME", "MLFLOW_EXPERIMENT_ID"):
        monkeypatch.delenv(var, raising=False)
    shutil.copyfile(mlflow_empty_store, tmp_path / "store.db")  # migrated once a session, not per test
    uri = f"sqlite:///{tmp_path / 'store.db'}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    mlflow.set_tracking_uri(uri)
    yield uri
    # MLflow keeps both in globals: unset again, so a later test's $MLFLOW_TRACKING_URI and experiment count
    mlflow.set_tracking_uri(None)
    from mlflow.tracking import fluent

    fluent._active_experiment_id = None
    os.environ.pop("MLFLOW_EXPERIMENT_ID", None)  # set_experiment exports it for subprocesses


def _run(tmp_path, rows, name="support"):
    data = write(tmp_path / f"{name}.jsonl", "\n".join(json.dumps(r) for r in rows) + "\n")
    suite = parse_suite({"name": name, "dataset": {"loader": "jsonl", "path": str(data)},
                         "verifiers": ["rouge"], "metrics": {"min_per_class": 2, "estimate": "split"}}, tmp_path,
                        where=str(tmp_path / f"{name}.yaml"))
    return api.run(suite, out=tmp_path / f"run-{name}", progress=False)


def _app_trace(question: str, answer: str) -> tuple[str, str]:
    """A trace of the app, recorded by MLflow's own tracing: (hex trace id, hex span id of the LLM call)."""
    with mlflow.start_span("rag") as root:
        root.set_inputs({"question": question})
        with mlflow.start_span("kb", span_type="RETRIEVER") as kb:
            kb.set_outputs([{"page_content": "Refunds are paid within 10 days.", "id": "kb-1"}])
        with mlflow.start_span("chat", span_type="LLM") as llm:
            llm.set_inputs({"messages": [{"role": "user", "content": question}]})
            llm.set_outputs({"choices": [{"message": {"role": "assistant", "content": answer}}]})
            span = llm.span_id
        root.set_outputs(answer)
        trace = root.trace_id
    mlflow.flush_trace_async_logging()
    return trace.removeprefix("tr-"), span


def test_labels_and_verdicts_become_assessments_on_the_cases_traces(tmp_path, store):
    mlflow.set_experiment("support")
    hex_trace, span = _app_trace("How long do refunds take?", "About 30 days.")
    rows = [{"id": f"c{i}", "response": f"the answer is {i}", "sources": [f"the answer is {i % 3}"],
             "question": f"q{i}", "label": i % 2, "reviewer": "ana"} for i in range(8)]
    rows.append({"id": f"{hex_trace}:{span}", "response": "About 30 days.", "label": 1,
                 "sources": ["Refunds are paid within 10 days."]})  # a case of the app's trace, labeled in a queue
    run = _run(tmp_path, rows)
    out = CliRunner().invoke(app, ["log", str(run.run_dir), "--mlflow", store, "--assessments"])
    assert out.exit_code == 0, out.output
    assert "9 labels (Expectation), 9 verdicts (Feedback) on 1 traces of the app and 8 traces recorded" in out.output
    client = mlflow.MlflowClient(store)
    scores = run.verdicts.set_index("case_id")["score"]
    exp = client.get_experiment_by_name("support")
    traces = {t.info.tags.get("verifybench.case_id"): t for t in client.search_traces(locations=[exp.experiment_id])
              if t.info.tags.get("verifybench.case_id")}
    assert len(traces) == 8
    for r in rows[:8]:
        got = {a.name: a for a in traces[r["id"]].info.assessments}
        assert got["hallucinated"].value is bool(r["label"]) and got["hallucinated"].source.source_type == "HUMAN"
        assert type(got["hallucinated"]).__name__ == "Expectation"
        fb = got["verifybench.rouge"]
        assert fb.source.source_type == "CODE" and fb.value == pytest.approx(scores[r["id"]])
        assert fb.rationale.startswith("flags when score >= ") and "rouge1 precision <=" in fb.rationale
    on_app = client.get_trace(f"tr-{hex_trace}").info.assessments
    assert {(a.name, a.span_id) for a in on_app} == {("hallucinated", span), ("verifybench.rouge", span)}
    # logged again: nothing twice
    again = api.log_assessments(run.run_dir, store)
    assert again["skipped"] == 9 and again["feedback"] == 0 and again["traces_created"] == 0
    assert len(client.get_trace(f"tr-{hex_trace}").info.assessments) == 2


def test_reviewers_labels_in_mlflow_come_back_as_a_labeled_set(tmp_path, store):
    from mlflow.entities import AssessmentSource

    mlflow.set_experiment("prod")
    apps = [_app_trace(f"question {i}", f"answer {i}") for i in range(4)]
    human = [AssessmentSource(source_type="HUMAN", source_id=who) for who in ("ana", "bo")]
    mlflow.log_feedback(trace_id=f"tr-{apps[0][0]}", name="hallucinated", value=True, source=human[0],
                        span_id=apps[0][1])
    mlflow.log_expectation(trace_id=f"tr-{apps[1][0]}", name="hallucinated", value="faithful", source=human[1])
    # a judge's opinion is not a label
    mlflow.log_feedback(trace_id=f"tr-{apps[2][0]}", name="hallucinated", value=True,
                        source=AssessmentSource(source_type="LLM_JUDGE", source_id="gpt"))
    # two reviewers who disagree: a bad record naming them
    mlflow.log_feedback(trace_id=f"tr-{apps[3][0]}", name="hallucinated", value="yes", source=human[0])
    mlflow.log_feedback(trace_id=f"tr-{apps[3][0]}", name="hallucinated", value="no", source=human[1])
    errors: list = []
    cases = list(iter_cases(DatasetSpec(loader="mlflow", experiment="prod", tracking_uri=store, on_error="skip"),
                            errors))
    assert sorted((c.meta["mlflow_trace_id"], c.label) for c in cases) == sorted(
        [(f"tr-{apps[0][0]}", True), (f"tr-{apps[1][0]}", False)])
    first = next(c for c in cases if c.label)
    assert first.id == f"{apps[0][0]}:{apps[0][1]}" and first.response == "answer 0" and first.question == "question 0"
    assert [s.text for s in first.sources] == ["Refunds are paid within 10 days."] and first.meta["reviewers"] == ["ana"]
    assert len(errors) == 1 and "reviewers disagree" in str(errors[0]) and "ana: hallucinated, bo: faithful" in str(errors[0])
    with pytest.raises(DataError, match="reviewers disagree"):
        list(iter_cases(DatasetSpec(loader="mlflow", experiment="prod", tracking_uri=store)))
