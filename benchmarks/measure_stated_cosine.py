"""Stated cosine thresholds (anchors' `min_cosine`, the article's 0.78-0.82) against fitted ones, leave
one set out on the teams' English sets (issue 45):

    for s in en-banking en-devdocs en-insurance; do
        verifybench run evals/teams-$s.yaml --out R/$s      # anchors is all this script reads
    done
    python benchmarks/measure_stated_cosine.py R/en-banking R/en-devdocs R/en-insurance

For each set left out: the max-balanced-accuracy threshold fitted on the other sets' anchors scores
pooled (`measure_teams.fitted_threshold`), and each stated cosine c as the score threshold it gives
(0.5 x (1 - c), `verifiers/anchors/scale.py`), both applied to the left-out set: balanced accuracy, the
share of faithful answers flagged, recall. Nothing is fitted on the set a figure is reported on.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from measure_teams import fitted_threshold, load, scored  # noqa: E402

from verifybench.verifiers.anchors.scale import native_rule, threshold_for_cosine  # noqa: E402

COSINES = (0.78, 0.80, 0.82)


def at(y: np.ndarray, s: np.ndarray, t: float) -> str:
    flagged = s >= t
    recall, false_alarms = flagged[y].mean(), flagged[~y].mean()
    return f"{(recall + 1 - false_alarms) / 2:.3f} | {false_alarms:.2f} | {recall:.2f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", type=Path, nargs="+", help="run directories of evals/teams-*.yaml, one per set")
    args = ap.parse_args()
    sets = {name: scored(cases, verdicts.get("anchors", {})) for name, cases, verdicts in map(load, args.runs)}
    print("Left-out set: balanced accuracy | faithful flagged | recall, at each threshold\n")
    print("| left-out set | threshold | score threshold | balanced accuracy | faithful flagged | recall |")
    print("|---|---|---|---|---|---|")
    for name, (y, s, _) in sets.items():
        oy = np.concatenate([o[0] for n, o in sets.items() if n != name])
        os_ = np.concatenate([o[1] for n, o in sets.items() if n != name])
        t = fitted_threshold(oy, os_)
        rows = [("fitted on the others", t)] + [(f"stated cosine {c}", threshold_for_cosine(c)) for c in COSINES]
        for label, value in rows:
            if value is not None:
                print(f"| {name} | {label} | {value:.3f} ({native_rule(value)}) | {at(y, s, value)} |")


if __name__ == "__main__":
    main()
