"""Small finished runs for the tracking and history tests: the demo set, through rouge, a verifier
that reports a cost, and one that fails on every 7th case (so errors are counted)."""

from __future__ import annotations

import json
from pathlib import Path

from verifybench import api

SUITE = """
name: tracked
description: rouge, a priced verifier and a flaky one over the demo set
dataset:
  loader: jsonl
  path: {data}
  name: demo
  fields: {{doc_type: doc_type, split: split}}
verifiers:
  - rouge
  - "helpers.priced:Priced": {{id: priced}}
  - "helpers.verifiers:FailEvery": {{id: flaky, every: 7}}
metrics:
  by: doc_type
"""


def suite_file(folder: Path, root: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "tracked.yaml"
    path.write_text(SUITE.format(data=root / "datasets/demo/cases.jsonl"), encoding="utf-8")
    return path


def make_run(out: Path, suite: Path, limit: int | None = None, policy: Path | None = None) -> Path:
    api.run(suite, out=out, limit=limit, progress=False, policy=policy)
    return out


def with_created(src: Path, dst: Path, created: str) -> Path:
    """A copy of a run directory that says it was created at another time (a later run of the same
    suite over the same data, without spending the time to score it again)."""
    import shutil

    shutil.copytree(src, dst)
    manifest = json.loads((dst / "manifest.json").read_text())
    manifest["created"] = manifest["updated"] = created
    (dst / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    return dst
