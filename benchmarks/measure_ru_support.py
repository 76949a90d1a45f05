"""AUROC per verifier and per planted error type, and anchors' per-case latency, from a run of
evals/ru-support.yaml.

    verifybench run evals/ru-support.yaml --out reports/ru-support
    python benchmarks/measure_ru_support.py reports/ru-support

For each verifier: AUROC over all cases, then for each error type the AUROC of that type's answers
against every faithful answer (threshold-free: how well the score ranks that kind of error above the
faithful answers). Error verdicts are counted and left out of the AUROC. Latency: the runner's per-case
milliseconds (a batch's time divided by its size; warm-up batches left out), p50 and p95.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path

import numpy as np
from sklearn.metrics import roc_auc_score


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run", type=Path, help="a run directory of evals/ru-support.yaml")
    args = ap.parse_args()
    cases = {c["id"]: c for c in map(json.loads, (args.run / "cases.jsonl").read_text("utf-8").splitlines())}
    verdicts: dict[str, dict[str, dict]] = defaultdict(dict)
    for line in (args.run / "results.jsonl").read_text("utf-8").splitlines():
        r = json.loads(line)
        verdicts[r["verifier"]][r["case_id"]] = r  # a resumed run's later verdict wins
    types = sorted({c["meta"]["error_type"] for c in cases.values()} - {"none"})
    print("| verifier | errors | all | " + " | ".join(types) + " | p50 / p95 ms |")
    print("|---" * (len(types) + 4) + "|")
    for name, by_case in verdicts.items():
        ok = {k: v for k, v in by_case.items() if v.get("score") is not None and k in cases}
        cells = []
        y = [cases[k]["label"] for k in ok]
        s = [ok[k]["score"] for k in ok]
        cells.append(f"{roc_auc_score(y, s):.3f}" if len(set(y)) == 2 else "n/a")
        faithful = [ok[k]["score"] for k in ok if cases[k]["meta"]["error_type"] == "none"]
        for t in types:
            wrong = [ok[k]["score"] for k in ok if cases[k]["meta"]["error_type"] == t]
            cells.append(f"{roc_auc_score([0] * len(faithful) + [1] * len(wrong), faithful + wrong):.3f}"
                         if faithful and wrong else "n/a")
        lat = [v["latency_ms"] for v in by_case.values() if v.get("latency_ms") is not None
               and v.get("latency_kind") != "warmup"]
        timing = f"{np.percentile(lat, 50):.3g} / {np.percentile(lat, 95):.3g}" if lat else "n/a"
        print(f"| {name} | {len(by_case) - len(ok)} | " + " | ".join(cells) + f" | {timing} |")


if __name__ == "__main__":
    main()
