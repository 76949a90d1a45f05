"""Per-case latency of anchors and nli before and after a change, as a ratio in one run (issue 46).

    python benchmarks/bench_teams_latency.py --before /path/to/old/src --after src --set en-banking

Each side runs in its own Python process (its source tree first on the path), alternating before / after
`--repeats` times: every case of a team set (`../shared/datasets/teams/<set>/cases.csv`) through the
verifier in batches of 32, with no embedding or pair cache, the model loaded before timing. Per side the
p50 and p95 of the verdicts' own per-case milliseconds (`Verdict.latency_ms`), the lower of the repeats;
the ratio after / before is the figure. On a machine shared with other jobs, alternating keeps load
changes from landing on one side only.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

SNIPPET = r"""
import csv, json, sys, time
import numpy as np
from verifybench.cases import Case, Source
from verifybench.verifiers import build
path, name = sys.argv[1], sys.argv[2]
rows = list(csv.DictReader(open(path, encoding="utf-8")))
cases = [Case(id=r["id"], dataset="t", question=r["question"], response=r["answer"], label=r["label"] != "ok",
              sources=[Source(id=str(i), text=t) for i, t in enumerate(json.loads(r["sources"]))]) for r in rows]
opts = {"cache_dir": None} if name == "anchors" else {"cache_dir": None, "embedding_cache_dir": None}
v = build(name, **opts)
v.verify(cases[:2])  # models loaded and warm before timing
lat = []
for i in range(0, len(cases), 32):
    lat += [x.latency_ms for x in v.verify(cases[i:i + 32]) if x.latency_ms is not None and x.error is None]
print(json.dumps({"p50": float(np.percentile(lat, 50)), "p95": float(np.percentile(lat, 95)), "n": len(lat)}))
"""


def run(src: Path, csv_path: Path, name: str) -> dict:
    env = {**os.environ, "PYTHONPATH": str(src), "HF_HUB_OFFLINE": "1"}
    out = subprocess.run([sys.executable, "-c", SNIPPET, str(csv_path), name], env=env, capture_output=True,
                         text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", type=Path, required=True, help="the old source tree (its src folder)")
    ap.add_argument("--after", type=Path, required=True, help="the new source tree (its src folder)")
    ap.add_argument("--set", default="en-banking", help="a folder of ../shared/datasets/teams")
    ap.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[1] / "../shared/datasets/teams")
    ap.add_argument("--verifiers", nargs="+", default=["anchors", "nli"])
    ap.add_argument("--repeats", type=int, default=2)
    args = ap.parse_args()
    csv_path = args.data / args.set / "cases.csv"
    print("| set | verifier | before p50 / p95 ms | after p50 / p95 ms | ratio p50 / p95 |\n|---|---|---|---|---|")
    for name in args.verifiers:
        best: dict[str, dict] = {}
        for _ in range(args.repeats):
            for side, src in (("before", args.before), ("after", args.after)):
                r = run(src.resolve(), csv_path, name)
                if side not in best or r["p50"] < best[side]["p50"]:
                    best[side] = r
        b, a = best["before"], best["after"]
        print(f"| {args.set} | {name} | {b['p50']:.1f} / {b['p95']:.1f} | {a['p50']:.1f} / {a['p95']:.1f} | "
              f"{a['p50'] / b['p50']:.2f}x / {a['p95'] / b['p95']:.2f}x |", flush=True)


if __name__ == "__main__":
    main()
