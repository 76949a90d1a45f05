"""What the decision filter's triage did in finished runs (issue 30): escalations, flags, and the final
decision's precision and recall, per verifier and split, read back from the run directories.

    python benchmarks/measure_decision.py RUN_DIR [RUN_DIR ...]

Per decision verifier and case split (the dataset's own `split`, e.g. AttributionBench test / test_ood,
none of which the local model was fitted on), over the units the policy placed:

- citation units: share escalated; of the decided ones, precision and recall of "flag" (does not
  support) against the case label (true = not attributable), and the share of unsupported citations
  kept unflagged (neither flagged nor escalated: the errors that reach an answer);
- context units (chunks, tool results): share kept but flagged, on label-true and label-false cases,
  and on probe / honest units where the dataset marks probes.

Nothing is rescored: the verdicts' unit statuses are read back, so a run made with another checkout
(`PYTHONPATH=<checkout>/src verifybench run ...`) is measured the same way.
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path


def ratio(a: int, b: int) -> str:
    return f"{a / b:.3f} ({a}/{b})" if b else "-"


def measure(run_dir: Path) -> list[str]:
    cases = {c["id"]: c for c in map(json.loads, open(run_dir / "cases.jsonl")) if c}
    counts: dict[tuple[str, str], dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for v in map(json.loads, open(run_dir / "results.jsonl")):
        if not v.get("units") or v["case_id"] not in cases:
            continue
        case = cases[v["case_id"]]
        c = counts[v["verifier"], case.get("split") or "all"]
        bad = bool(case["label"])
        for u in v["units"]:
            kind, status = u["detail"].get("kind"), u["status"]
            if kind == "citation":
                c["cite"] += 1
                c["cite_escalate"] += status == "escalate"
                if status in ("keep", "flag"):
                    c["decided"] += 1
                    c["decided_bad"] += bad
                    c["flag"] += status == "flag"
                    c["tp"] += status == "flag" and bad
                c["bad"] += bad
                c["kept_bad"] += status == "keep" and bad
            elif kind in ("chunk", "tool_result"):
                probe = "probe" if u["detail"].get("probe") else "honest"
                for group in (f"context_{'bad' if bad else 'good'}", f"context_{probe}"):
                    c[group] += 1
                    c[group + "_flag"] += status == "flag"
    rows = []
    for (vid, split), c in sorted(counts.items()):
        parts = []
        if c["cite"]:
            parts += [f"escalated {ratio(c['cite_escalate'], c['cite'])}",
                      f"flag precision {ratio(c['tp'], c['flag'])}", f"flag recall (decided) {ratio(c['tp'], c['decided_bad'])}",
                      f"unsupported kept unflagged {ratio(c['kept_bad'], c['bad'])}"]
        for group in ("context_bad", "context_good", "context_probe", "context_honest"):
            if c[group]:
                parts.append(f"{group} flagged {ratio(c[group + '_flag'], c[group])}")
        rows.append(f"| {run_dir.name} | {vid} | {split} | " + "; ".join(parts) + " |")
    return rows


def main() -> None:
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    print("| run | verifier | split | figures |\n|---|---|---|---|")
    for arg in sys.argv[1:]:
        print("\n".join(measure(Path(arg))))


if __name__ == "__main__":
    main()
