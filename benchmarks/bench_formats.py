"""What reading and writing through the typed models (`verifybench.formats`) costs against the plain dicts
and `json` the files were read and written with before, as ratios within one run.

    python benchmarks/bench_formats.py [--cases 200000] [--records 20000] [--rounds 3]

1. A baseline of `--cases` test cases and two verifiers (the size that dominates: per-case test scores):
   written (`Baseline.write`: validated, serialised by pydantic-core) against `json.dump` of the dict
   (the former `rundir.write_json`), then read (`Baseline.read`: parsed, migrated, validated) against
   `json.loads`; time (fastest of `--rounds`, after one untimed run) and the peak of traced Python
   memory (one more run, traced: tracemalloc slows it, so it is not timed).
2. A guard's decision record, `--records` of them: built (`Guard.record`: the mapping validated into the
   model) and serialised (`pydantic_core.to_json`) against the former dict and `to_json` of it;
   microseconds a record.
3. A decision log of `--records` lines read back through `DecisionRecord` (the `guardlog` reader) against
   `json.loads` of each line; microseconds a line.
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
import tracemalloc
from datetime import UTC, datetime
from pathlib import Path
from typing import Any


def _best(fn, rounds: int) -> tuple[float, float]:
    """(fastest wall time in s over `rounds` untraced runs, peak traced Python memory in MB of one more)."""
    fn()  # once first: a model's schema is built on first use (defer_build), imports are done
    best = float("inf")
    for _ in range(rounds):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    tracemalloc.start()
    fn()
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    return best, peak


def baseline_doc(n: int) -> dict[str, Any]:
    rng = random.Random(0)
    ids = [f"case-{i:08d}" for i in range(n)]
    row = {"threshold": 0.5, "threshold_kind": "fitted", "threshold_source": "fitted", "threshold_degenerate": None,
           "threshold_near_degenerate": None, "fallback_from": None, "threshold_warning": None, "test_cases": n,
           "test_hallucinated": n // 2, "test_faithful": n - n // 2, "test_errors": 0, "f1": 0.7, "precision": 0.6,
           "recall": 0.8, "balanced_accuracy": 0.7, "auroc": 0.8, "auprc": 0.7, "flag_all": None, "cases": 2 * n,
           "errors": 0, "p50_ms": 1.0, "p95_ms": 2.0, "p99_ms": 3.0, "latency_basis": "case", "warmup_ms": 5.0,
           "cost_per_1k": None}
    verifiers = {v: {"config_hash": "0123456789abcdef", "config": {"name": v}, "slices": {"all": dict(row)},
                     "test_scores": {i: rng.random() for i in ids}} for v in ("rouge", "bleu")}
    return {"suite": "bench", "suite_hash": "a" * 64, "suite_scope_hash": "b" * 64, "dataset_hash": "c" * 64,
            "content_hash": "d" * 64, "cases_hash": "e" * 64, "by": "doc_type", "target": "max balanced accuracy",
            "settings": {"bootstrap": 1000, "seed": 0, "test_fraction": 0.5, "min_per_class": 30},
            "test_slices": {i: "qa" for i in ids}, "verifiers": verifiers, "notes": []}


def bench_baseline(n: int, rounds: int, work: Path) -> None:
    from verifybench.formats import Baseline
    from verifybench.rundir import write_json

    doc = baseline_doc(n)
    old, new = work / "old.json", work / "new.json"
    w_old = _best(lambda: write_json(old, doc), rounds)
    w_new = _best(lambda: Baseline.new(**doc).write(new), rounds)
    r_old = _best(lambda: json.loads(old.read_text(encoding="utf-8")), rounds)
    r_new = _best(lambda: Baseline.read(new), rounds)
    print(f"baseline, {n:,} test cases x 2 verifiers ({new.stat().st_size / 2**20:.1f} MB; the dict's json.dump: "
          f"{old.stat().st_size / 2**20:.1f} MB)")
    for what, (t_old, m_old), (t_new, m_new) in (("write", w_old, w_new), ("read", r_old, r_new)):
        print(f"  {what}: model {t_new:.3f} s, {m_new:.0f} MB peak traced; dict + json {t_old:.3f} s, {m_old:.0f} MB; "
              f"time ratio {t_new / t_old:.2f}, memory ratio {m_new / max(m_old, 1e-9):.2f}")


def _record_parts(i: int) -> dict[str, Any]:
    return {"id": f"r{i}", "response": "The refund takes 5 days.", "sources": [("s1", "Refunds take 5 business days.")],
            "question": "q?", "doc_type": "support_answer", "meta": {"ticket": i},
            "checks": [("rouge", 0.6, 0.0645), ("bleu", 0.82, 0.81)]}


def bench_records(n: int, rounds: int, work: Path) -> None:
    from pydantic_core import to_json

    from verifybench.formats.decision import DecisionRecord

    parts = [_record_parts(i) for i in range(n)]
    now = datetime.now(UTC).isoformat(timespec="milliseconds")

    def old() -> None:  # guard.core.record before the model: a dict, then to_json
        for p in parts:
            to_json({"id": p["id"], "response": p["response"], "sources": [{"id": a, "text": b} for a, b in p["sources"]],
                     "question": p["question"], "doc_type": p["doc_type"], "meta": p["meta"],
                     "decision": {"action": "blocked", "mode": "enforce", "applied": True, "escalated": False,
                                  "request_id": None, "reason": "flagged",
                                  "checks": [{"verifier": v, "score": s, "threshold": t, "threshold_source": "slice",
                                              "slice": "support_answer", "flagged": True, "error": None,
                                              "timed_out": False, "skipped": None, "latency_ms": 0.1}
                                             for v, s, t in p["checks"]],
                                  "removed": [], "guard_hash": "g", "policy_hash": "p", "latency_ms": 1.0,
                                  "time": now}}, fallback=str)

    def new() -> None:  # guard.core.Guard.record now: the same mapping, validated into the model
        for p in parts:
            to_json(DecisionRecord.model_validate({
                **DecisionRecord.header(), "id": p["id"], "response": p["response"],
                "sources": [{"id": a, "text": b} for a, b in p["sources"]], "question": p["question"],
                "doc_type": p["doc_type"], "meta": p["meta"],
                "decision": {"action": "blocked", "mode": "enforce", "applied": True, "escalated": False,
                             "request_id": None, "reason": "flagged",
                             "checks": [{"verifier": v, "score": s, "threshold": t, "threshold_source": "slice",
                                         "slice": "support_answer", "flagged": True, "error": None,
                                         "timed_out": False, "skipped": None, "latency_ms": 0.1}
                                        for v, s, t in p["checks"]],
                             "removed": [], "guard_hash": "g", "policy_hash": "p", "latency_ms": 1.0, "time": now}}),
                    fallback=str)

    t_old, _ = _best(old, rounds)
    t_new, _ = _best(new, rounds)
    print(f"decision record, built and serialised ({n:,}): model {t_new / n * 1e6:.1f} us a record, dict "
          f"{t_old / n * 1e6:.1f} us; ratio {t_new / t_old:.2f}")

    log = work / "decisions-1-1.jsonl"
    with open(log, "wb") as f:
        for p in parts:
            f.write(to_json(DecisionRecord.new(id=p["id"], response=p["response"], meta=p["meta"],
                                               decision={"checks": [{"verifier": v, "score": s, "threshold": t}
                                                                    for v, s, t in p["checks"]]})) + b"\n")
    lines = log.read_bytes().splitlines()
    t_old, _ = _best(lambda: [json.loads(x) for x in lines], rounds)
    t_new, _ = _best(lambda: [DecisionRecord.parse(json.loads(x), "x") for x in lines], rounds)
    print(f"decision log read ({n:,} lines): model {t_new / n * 1e6:.1f} us a line, json.loads {t_old / n * 1e6:.1f} us; "
          f"ratio {t_new / t_old:.2f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", type=int, default=200_000)
    ap.add_argument("--records", type=int, default=20_000)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-formats-") as tmp:
        bench_baseline(a.cases, a.rounds, Path(tmp))
        bench_records(a.records, a.rounds, Path(tmp))


if __name__ == "__main__":
    main()
