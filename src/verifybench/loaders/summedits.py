"""SummEdits (salesforce/factualNLG): document/summary pairs in 8 domains, human-verified.

In the files `label` 1 means the summary is consistent with the document, 0 that an edit made it
inconsistent; the values come as integers or strings. verifybench's label is the opposite (True =
hallucinated). `doc_type` is the domain from the file name; the file's own `split` is kept.
"""

from __future__ import annotations

from pathlib import Path

from verifybench.cases import Case, Source
from verifybench.errors import DataError, RecordError
from verifybench.loaders.fields import note_label
from verifybench.loaders.generic import CaseStream
from verifybench.loaders.readers import read_json

PREFIX = "summedits_"


def summedits_files(path: str | Path) -> list[Path]:
    path = Path(path)
    if path.is_dir():
        files = sorted(path.glob(f"{PREFIX}*.json"))
        if not files:
            raise DataError(f"{path}: no {PREFIX}*.json files in this folder")
        return files
    if not path.exists():
        raise DataError(f"{path}: no such file or folder")
    return [path]


def summedits(path: str | Path, domains: list[str] | None = None) -> CaseStream:
    """Cases from SummEdits: a folder of summedits_<domain>.json files, or one such file.

    Args:
        path: the folder (all domains) or a single domain file.
        domains: keep only these domains (e.g. ["news", "podcast"]).
    """
    for file in summedits_files(path):
        domain = file.stem.removeprefix(PREFIX)
        if domains and domain not in domains:
            continue
        for rec in read_json(file):
            if isinstance(rec, RecordError):
                yield rec
                continue
            d = rec.data
            bad = next((f for f in ("id", "doc", "summary", "label") if d.get(f) is None), None)
            if bad:
                yield RecordError(rec.loc, "missing required field", bad)
                continue
            if str(d["label"]).strip() not in ("0", "1"):
                yield RecordError(rec.loc, f"expected 0 or 1, got {d['label']!r}", "label")
                continue
            note_label("label", d["label"], str(d["label"]).strip() == "0")
            yield Case(
                id=str(d["id"]),
                dataset="summedits",
                doc_type=domain,
                split=d.get("split"),
                sources=[Source(id="doc", text=d["doc"])],
                response=d["summary"],
                label=str(d["label"]).strip() == "0",
                meta={"edit_types": d.get("edit_types") or [], "original_summary": d.get("original_summary")},
            ).at(rec.loc)
