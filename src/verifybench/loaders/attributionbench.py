"""AttributionBench (OSU-NLP-Group/AttributionBench): is a claim attributable to the evidence it cites?

Files: `dev` = dev_all_subset_balanced.jsonl, `test` = test_all_subset_balanced_sampled500.jsonl,
`test_ood` = test_ood_all_subset_balanced.jsonl (out-of-distribution sources). `references` is a list
of evidence passages written as a Python list literal (quotes of either kind), parsed with
`ast.literal_eval`; 75 of the test/test_ood records cite nothing (`[]`) and get one empty citation
source, so their check is still asked. Each record becomes one case: the claim is the response and the one structured
claim; the references are its sources, marked `kind: citation` with the claim they are cited for.
Label True = "not attributable" (the claim is not supported by what it cites).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from verifybench.cases import Case, Source
from verifybench.errors import DataError, RecordError
from verifybench.loaders.fields import note_label
from verifybench.loaders.generic import CaseStream
from verifybench.loaders.readers import Record, read_jsonl

FILES = {
    "dev": "dev_all_subset_balanced.jsonl",
    "test": "test_all_subset_balanced_sampled500.jsonl",
    "test_ood": "test_ood_all_subset_balanced.jsonl",
}
LABELS = {"attributable": False, "not attributable": True}


def parse_references(value: object) -> list[str]:
    """The evidence passages of a record: a list, or the list's Python/JSON literal as a string."""
    if isinstance(value, str):
        try:
            value = ast.literal_eval(value)
        except (ValueError, SyntaxError) as e:
            raise ValueError(f"not a list literal: {e}") from None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError("expected a list of strings")
    return value


def attributionbench(path: str | Path, splits: list[str] | None = None) -> CaseStream:
    """Claim/evidence cases from AttributionBench.

    Args:
        path: the folder holding the three files, or one of them.
        splits: which of "dev", "test", "test_ood" to read from a folder (default: test and test_ood).
    """
    root = Path(path)
    if root.is_file():
        split = next((s for s, name in FILES.items() if name == root.name), root.stem)
        return _cases([(split, root)])
    if not root.is_dir():
        raise DataError(f"{root}: no such file or folder")
    chosen = list(splits or ("test", "test_ood"))
    for s in chosen:
        if s not in FILES:
            raise DataError(f"unknown AttributionBench split {s!r}; expected some of {tuple(FILES)}")
    return _cases([(s, root / FILES[s]) for s in chosen])


def _case(rec: Record, split: str) -> Case | RecordError:
    d = rec.data
    for field in ("id", "claim", "attribution_label", "references"):
        if d.get(field) is None:
            return RecordError(rec.loc, "missing required field", field)
    if not isinstance(d["claim"], str):
        return RecordError(rec.loc, "must be a string", "claim")
    label = LABELS.get(str(d["attribution_label"]).strip().lower())
    if label is None:
        return RecordError(rec.loc, f"expected one of {tuple(LABELS)}, got {d['attribution_label']!r}", "attribution_label")
    note_label("attribution_label", d["attribution_label"], label)
    try:
        refs = parse_references(d["references"])
    except ValueError as e:
        return RecordError(rec.loc, str(e), "references")
    claim = d["claim"]
    if not refs:
        refs = [""]  # the claim cites nothing: one empty citation, so the check is asked (and fails), not skipped
    return Case(
        id=str(d["id"]),
        dataset="attributionbench",
        doc_type="citation",
        split=split,
        question=d.get("question") if isinstance(d.get("question"), str) else None,
        sources=[Source(id=f"ref{i}", text=t, metadata={"kind": "citation", "claim": claim}) for i, t in enumerate(refs)],
        response=claim,
        claims=[{"text": claim, "sources": [f"ref{i}" for i in range(len(refs))]}],
        label=label,
        meta={"src_dataset": d.get("src_dataset")},
    ).at(rec.loc)


def _cases(files: list[tuple[str, Path]]) -> Iterator[Case | RecordError]:
    for split, file in files:
        for rec in read_jsonl(file):
            yield rec if isinstance(rec, RecordError) else _case(rec, split)
