"""Combinations of checks that `verifybench cascade --save` measured and kept in the run directory
(cascades.json), read back so the report's operating-point chart shows them beside the single checks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from verifybench.metrics.operating import pareto_front
from verifybench.metrics.summary import jsonable

SAVED = "cascades.json"  # `cascade --save`: the combinations, kept in the run for its report's chart


def with_saved(run_dir: str | Path, points: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[str]]:
    """The metrics' operating points plus the saved combinations (any, all, cascades, stack), the Pareto
    front recomputed over all of them; and a note when the saved file no longer matches the verdicts."""
    from verifybench.rundir import RESULTS, read_json

    run_dir = Path(run_dir)
    path = run_dir / SAVED
    if not path.exists():
        return points, []
    saved = read_json(path)
    if saved.get("results_bytes") != (run_dir / RESULTS).stat().st_size:
        return points, [f"{SAVED} was measured on other verdicts (the run was resumed since): its combinations are "
                        "left off the operating-point chart; run `verifybench cascade --save` again"]
    rows = [dict(p) for p in points]
    for c in saved.get("candidates") or []:
        if c.get("kind") == "single":
            continue
        t = c.get("test") or {}
        rows.append({"verifier": c["name"], "kind": c["kind"], "f1": t.get("f1"),
                     "p95_ms": (t.get("latency_ms") or {}).get("p95"), "cost_per_1k": t.get("cost_per_1k") or 0.0,
                     "errors_count_as_wrong": True})

    def num(x: Any) -> float:
        return float("nan") if x is None else float(x)

    front = pareto_front([num(r.get("f1")) for r in rows], [num(r.get("p95_ms")) for r in rows],
                         [num(r.get("cost_per_1k")) or 0.0 for r in rows])
    for r, f in zip(rows, front):
        r["pareto"] = bool(f)
    return jsonable(rows), []
