"""A small run on real shared data for the feedback tests: rouge and bleu over a seeded sample of 600
HaluEval QA cases (a few seconds; `sample`, `seed` and `min_per_class` for another draw)."""

from pathlib import Path

from conftest import need_shared

import verifybench as vb

SUITE = """\
name: halueval-qa-loop
dataset:
  loader: halueval
  path: {path}
  sample: {sample}
  seed: {seed}
verifiers:
  - rouge
  - bleu
batch_size: 64
metrics:
  bootstrap: 200
"""


def make_qa_run(tmp_path_factory, data_dir, sample: int = 600, seed: int = 0, min_per_class: int | None = None,
                estimate: str | None = None) -> Path:
    (qa,) = need_shared(data_dir, "halueval/qa_data.json")
    work = tmp_path_factory.mktemp("loop")
    suite = work / "qa.yaml"
    text = SUITE.format(path=qa, sample=sample, seed=seed)
    text += f"  min_per_class: {min_per_class}\n" if min_per_class else ""
    suite.write_text(text + (f"  estimate: {estimate}\n" if estimate else ""), encoding="utf-8")
    return vb.run(suite, out=work / "run", progress=False).run_dir


def write_guard_log(run_dir: Path, dest: Path, rows=None, shift: dict | None = None,
                    doc_types: dict | None = None, torn: bool = True) -> Path:
    """A decision log in the guard's schema (docs/rollout.md) from a run's cases: texts read back from the
    run's dataset, each check's score (plus `shift[check]`) and its slice threshold, the action from the
    flags; `doc_types` renames the doc type of the cases at the given rows. Two files, the second ending in
    a torn line (a writer killed mid-record) when `torn`."""
    import json

    import numpy as np

    from verifybench.feedback.window import from_run

    w = from_run(run_dir)
    rows = np.arange(len(w)) if rows is None else np.asarray(rows)
    texts = w.texts(rows)
    dest.mkdir(parents=True, exist_ok=True)
    lines = []
    for i, t in zip(rows.tolist(), texts):
        checks = []
        for v in w.scores:
            s = float(w.scores[v][i]) + (shift or {}).get(v, 0.0)
            thr = float(w.thresholds[v][i])
            checks.append({"verifier": v, "score": s, "threshold": thr, "threshold_source": "fitted (max F1)",
                           "flagged": s >= thr, "error": None, "latency_ms": 0.1})
        rec = {"id": t["id"], "response": t["response"], "sources": t["sources"], "question": t.get("question"),
               "doc_type": (doc_types or {}).get(i, t["doc_type"]), "meta": t.get("meta") or {},
               "decision": {"action": "flag" if any(c["flagged"] for c in checks) else "allow",
                            "request_id": f"req-{i}", "checks": checks, "guard_hash": "g1", "policy_hash": "p1",
                            "time": "2026-12-01T21:00:00Z"}}
        lines.append(json.dumps(rec))
    half = len(lines) // 2
    (dest / "decisions-100-0.jsonl").write_text("\n".join(lines[:half]) + "\n")
    (dest / "decisions-101-0.jsonl").write_text("\n".join(lines[half:]) + "\n" + (lines[0][:57] if torn else ""))
    return dest
