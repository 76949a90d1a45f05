"""Leave-one-set-out figures on the four teams' sets (issue 46): AUROC per verifier on each left-out set,
recall per error type at a threshold fitted on the other three sets, and per-case latency.

    for s in en-banking en-devdocs en-insurance ru-telecom; do
        verifybench run evals/teams-$s.yaml --out R/$s
    done
    python benchmarks/measure_teams.py R/en-banking R/en-devdocs R/en-insurance R/ru-telecom

Each run directory is one set (its cases' dataset name says which). For each set as the left-out one:
- AUROC over all its scored cases (error verdicts are counted and left out), with a 95% bootstrap
  interval (`metrics.bootstrap.rank_intervals`);
- the threshold that maximises balanced accuracy (the project's default target) on the other three sets'
  cases pooled, applied to the left-out set: the share of its faithful answers flagged and the recall of
  each error type (the threshold never sees the set it is applied to);
- p50 / p95 of the verifier's per-case milliseconds (warm-up verdicts left out).
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path

import numpy as np

from verifybench.metrics.bootstrap import rank_intervals
from verifybench.metrics.curves import auroc, threshold_curve
from verifybench.metrics.thresholds import default_target, select_threshold

CHECKS = ("rouge", "bleu", "anchors", "nli")
MEANING = ("anchors", "nli")


def load(run: Path) -> tuple[str, dict[str, dict], dict[str, dict[str, dict]]]:
    """(set name, cases by id, verdicts by verifier then case id) of one run directory."""
    cases = {c["id"]: c for c in map(json.loads, (run / "cases.jsonl").read_text("utf-8").splitlines())}
    verdicts: dict[str, dict[str, dict]] = defaultdict(dict)
    for line in (run / "results.jsonl").read_text("utf-8").splitlines():
        r = json.loads(line)
        verdicts[r["verifier"]][r["case_id"]] = r  # a resumed run's later verdict wins
    names = {c["dataset"] for c in cases.values()}
    return "/".join(sorted(names)).removeprefix("teams-"), cases, verdicts


def scored(cases: dict, by_case: dict) -> tuple[np.ndarray, np.ndarray, list[str]]:
    ids = [k for k, v in by_case.items() if v.get("score") is not None and k in cases]
    return (np.array([cases[k]["label"] for k in ids], bool), np.array([by_case[k]["score"] for k in ids], float),
            [cases[k]["meta"]["error_type"] for k in ids])


def fitted_threshold(y: np.ndarray, s: np.ndarray) -> float | None:
    if len(set(y.tolist())) < 2:
        return None
    curve = threshold_curve(y, s)
    i = select_threshold(curve, default_target())
    return None if i is None else float(curve.thresholds[i])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", type=Path, nargs="+", help="run directories of evals/teams-*.yaml, one per set")
    args = ap.parse_args()
    sets = {name: (cases, verdicts) for name, cases, verdicts in map(load, args.runs)}
    checks = [c for c in CHECKS if any(c in v for _, v in sets.values())]
    types = sorted({c["meta"]["error_type"] for cases, _ in sets.values() for c in cases.values()} - {"none"})

    print("AUROC on each left-out set, all cases [95% bootstrap interval]; errors = error verdicts\n")
    print("| left-out set | " + " | ".join(checks) + " | best meaning-based | >= bleu and >= 0.80 |")
    print("|---" * (len(checks) + 3) + "|")
    best_all = []
    for name, (cases, verdicts) in sets.items():
        cells, aucs = [], {}
        for v in checks:
            y, s, _ = scored(cases, verdicts.get(v, {}))
            errors = len(verdicts.get(v, {})) - len(y)
            if len(set(y.tolist())) < 2:
                cells.append(f"n/a ({errors} errors)")
                continue
            aucs[v] = auroc(y, s)
            ci = rank_intervals(y, s, seed=0)["auroc"]
            cells.append(f"{aucs[v]:.3f} [{ci.low:.2f}, {ci.high:.2f}]" + (f" ({errors} errors)" if errors else ""))
        best = max((aucs[v], v) for v in MEANING if v in aucs) if any(v in aucs for v in MEANING) else None
        if best:
            best_all.append(best[0])
        met = best is not None and best[0] >= max(0.80, aucs.get("bleu", 0.0))
        print(f"| {name} | " + " | ".join(cells) + f" | {best[1] + f' {best[0]:.3f}' if best else 'n/a'} | "
              f"{'yes' if met else 'no'} |")
    if best_all:
        print(f"\nmean of the best meaning-based check over {len(best_all)} sets: {np.mean(best_all):.3f}")

    print("\nAt the max-balanced-accuracy threshold fitted on the other three sets: share of the left-out set's "
          "faithful answers flagged, and recall per error type (caught / rows)\n")
    print("| left-out set | check | threshold | faithful flagged | " + " | ".join(types) + " |")
    print("|---" * (len(types) + 4) + "|")
    for name, (cases, verdicts) in sets.items():
        for v in checks:
            y, s, et = scored(cases, verdicts.get(v, {}))
            if not len(y):
                continue
            others = [scored(c, vd.get(v, {})) for n, (c, vd) in sets.items() if n != name]
            oy = np.concatenate([o[0] for o in others]) if others else np.zeros(0, bool)
            os_ = np.concatenate([o[1] for o in others]) if others else np.zeros(0)
            t = fitted_threshold(oy, os_)
            if t is None:
                continue
            flagged = s >= t
            et_a = np.array(et)
            fa = f"{flagged[~y].mean():.2f}" if (~y).any() else "n/a"
            cells = []
            for typ in types:
                m = et_a == typ
                cells.append(f"{flagged[m].mean():.2f} ({flagged[m].sum()}/{m.sum()})" if m.any() else "")
            print(f"| {name} | {v} | {t:.3f} | {fa} | " + " | ".join(cells) + " |")

    print("\nPer-case latency, ms (p50 / p95; warm-up verdicts left out)\n")
    print("| left-out set | " + " | ".join(checks) + " |")
    print("|---" * (len(checks) + 1) + "|")
    for name, (_, verdicts) in sets.items():
        cells = []
        for v in checks:
            lat = [r["latency_ms"] for r in verdicts.get(v, {}).values()
                   if r.get("latency_ms") is not None and r.get("latency_kind") != "warmup" and r.get("score") is not None]
            cells.append(f"{np.percentile(lat, 50):.1f} / {np.percentile(lat, 95):.1f}" if lat else "n/a")
        print(f"| {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
