"""HaluEval (RUCAIBox/HaluEval): qa, dialogue and summarization pairs, and general ChatGPT responses.

The qa, dialogue and summarization files hold one right and one hallucinated output per row, for the
same knowledge or document: each row becomes two cases, `<task>-<row>-right` (label False) then
`<task>-<row>-hallucinated` (label True), sharing `meta.group = row` so a split can keep pairs together.
`general_data.json` has no source text; its own `ID` field repeats ("ID" appears twice), so case ids
come from the row number and the original ID is kept in `meta.source_id`. Its hallucination spans are
strings, located in the response where they occur exactly once; the others are counted in
`meta.spans_not_found` / `meta.spans_ambiguous` (and the case is left out of the span metrics).
"""

from __future__ import annotations

from pathlib import Path

from verifybench.cases import Case, Source, Span
from verifybench.errors import DataError, RecordError
from verifybench.loaders.fields import note_label, note_unlocated
from verifybench.loaders.generic import CaseStream
from verifybench.loaders.holdout import hash_split
from verifybench.loaders.readers import Record, read_jsonl
from verifybench.text.locate import SpanError, gold_spans

# task -> (source field, question field, right output field, hallucinated output field)
PAIR_TASKS = {
    "qa": ("knowledge", "question", "right_answer", "hallucinated_answer"),
    "dialogue": ("knowledge", "dialogue_history", "right_response", "hallucinated_response"),
    "summarization": ("document", None, "right_summary", "hallucinated_summary"),
}
TASKS = (*PAIR_TASKS, "general")


def _task_of(path: Path) -> str:
    stem = path.stem.removesuffix("_data")
    if stem not in TASKS:
        raise DataError(f"{path}: cannot tell the HaluEval task from the file name; set task: one of {TASKS}")
    return stem


def _missing(rec: Record, *fields: str | None) -> RecordError | None:
    for f in fields:
        if f and not isinstance(rec.data.get(f), str):
            why = "missing required field" if f not in rec.data else f"must be a string, got {type(rec.data[f]).__name__}"
            return RecordError(rec.loc, why, f)
    return None


def _general(rec: Record, query_as_source: bool = False) -> Case | RecordError:
    if err := _missing(rec, "user_query", "chatgpt_response", "hallucination"):
        return err
    flag = rec.data["hallucination"].strip().lower()
    if flag not in ("yes", "no"):
        return RecordError(rec.loc, f"expected 'yes' or 'no', got {rec.data['hallucination']!r}", "hallucination")
    note_label("hallucination", rec.data["hallucination"], flag == "yes")
    response = rec.data["chatgpt_response"]
    # Span strings are located exactly where they occur once; the others are counted, never guessed.
    try:
        gold = gold_spans(rec.data.get("hallucination_spans") or [], response)
    except SpanError as e:
        return RecordError(rec.loc, str(e), "hallucination_spans")
    meta = {"source_id": rec.data.get("ID"), "row": rec.loc.index}
    note_unlocated(meta, gold)
    query = rec.data["user_query"]
    return Case(
        id=f"general-{rec.loc.index}",
        dataset="halueval-general",
        doc_type="general",
        question=query,
        sources=[Source(id="user_query", text=query)] if query_as_source else [],
        response=response,
        label=flag == "yes",
        spans=[Span(start=a, end=b, text=response[a:b]) for a, b in gold.intervals] or None,
        meta=meta,
    ).at(rec.loc)


def halueval(path: str | Path, task: str | None = None, holdout: str | None = None,
             holdout_fraction: float = 0.3, holdout_seed: int = 0, query_as_source: bool = False) -> CaseStream:
    """Cases from one HaluEval file (the files are JSON Lines despite their .json name).

    Args:
        path: one of qa_data.json, dialogue_data.json, summarization_data.json, general_data.json.
        task: "qa", "dialogue", "summarization" or "general"; default: from the file name.
        holdout: "train" or "test": keep only the rows whose source text (knowledge, dialogue history,
            document) falls on that side of a stable hash split, `sha256(f"{holdout_seed}:{source}")`
            with `holdout_fraction` on the test side: the split the decision model trains on, so its
            evaluation never sees a knowledge text it was fitted on. Cases get that side as their split.
        holdout_fraction: share of source texts on the test side.
        holdout_seed: the hash's seed.
        query_as_source: general only: give each case its user query as its one source. The file has no
            source text, and grounded verifiers refuse a case without one; with this they compare the
            response with the query, which measures drift from the question, not factual accuracy.
    """
    path = Path(path)
    task = task or _task_of(path)
    if task not in TASKS:
        raise DataError(f"{path}: unknown HaluEval task {task!r}; expected one of {TASKS}")
    if holdout not in (None, "train", "test"):
        raise DataError(f"{path}: holdout must be 'train' or 'test', got {holdout!r}")
    if holdout and task == "general":
        raise DataError(f"{path}: HaluEval general has no source text to split by")
    for rec in read_jsonl(path):
        if isinstance(rec, RecordError):
            yield rec
            continue
        if task == "general":
            yield _general(rec, query_as_source)
            continue
        source_f, question_f, right_f, halluc_f = PAIR_TASKS[task]
        if err := _missing(rec, source_f, question_f, right_f, halluc_f):
            yield err
            continue
        row = rec.loc.index
        side = None
        if holdout:
            side = hash_split(rec.data[source_f], holdout_fraction, holdout_seed)
            if side != holdout:
                continue
        for kind, field, label in (("right", right_f, False), ("hallucinated", halluc_f, True)):
            note_label("(answer field)", field, label)
            yield Case(
                id=f"{task}-{row}-{kind}",
                dataset=f"halueval-{task}",
                doc_type=task,
                split=side,
                question=rec.data[question_f] if question_f else None,
                sources=[Source(id=source_f, text=rec.data[source_f])],
                response=rec.data[field],
                label=label,
                meta={"group": row},
            ).at(rec.loc)
