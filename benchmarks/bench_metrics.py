"""Metrics at scale: curves, thresholds and 1,000-sample bootstrap intervals for 1M cases x 5 verifiers.

    python benchmarks/bench_metrics.py [--cases 1000000] [--verifiers 5] [--boot 1000]

Builds the metrics frame directly (one row per verifier x case, four doc types, a seeded
calibration/test split, continuous scores with ties, 1% error verdicts) and times `evaluate`: for every
verifier, over all cases and per doc type, the threshold curve, AUROC/AUPRC with bootstrap intervals,
the threshold fitted on the calibration split and the test-split operating point with its intervals,
and latency percentiles.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

from verifybench.metrics import Settings, evaluate, split_roles


def build(n: int, k: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    label = rng.random(n) < 0.4
    doc = rng.choice(["qa", "summary", "dialogue", "policy"], n)
    role = split_roles([None] * n, seed=seed, labels=label)
    frames = []
    for j in range(k):
        score = np.round(rng.normal(size=n) + (0.3 + 0.3 * j) * label, 3)
        failed = rng.random(n) < 0.01
        frames.append(pd.DataFrame({
            "case_id": np.arange(n), "verifier": f"v{j}", "label": label, "slice": doc, "doc_type": doc,
            "role": role, "score": np.where(failed, np.nan, score), "error": np.where(failed, "boom", None),
            "latency_ms": rng.gamma(2.0, 0.5, n), "cost_usd": None, "units": None,
        }))
    return pd.concat(frames, ignore_index=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=1_000_000)
    ap.add_argument("--verifiers", type=int, default=5)
    ap.add_argument("--boot", type=int, default=1000)
    args = ap.parse_args()
    t0 = time.perf_counter()
    df = build(args.cases, args.verifiers)
    t1 = time.perf_counter()
    out = evaluate(df, Settings(n_boot=args.boot))
    t2 = time.perf_counter()
    v0 = out["verifiers"]["v0"]["overall"]
    print(f"| {args.cases:,} cases x {args.verifiers} verifiers, {args.boot} resamples | frame built in {t1 - t0:.1f} s "
          f"| evaluate: {t2 - t1:.2f} s | v0 AUROC {v0['auroc']:.4f} {v0['ci']['auroc']} |")


if __name__ == "__main__":
    main()
