"""The gate's paired bootstrap: the shared vectorised one against a per-resample loop (what gate.py and
compare.py each did before: one resample, one sort, one curve at a time).

    python benchmarks/bench_gate.py [--cases 192 20000 200000] [--boot 1000]

For each size: AUROC, AUPRC and F1 drop intervals of two correlated verifiers over the same cases, with
1% error verdicts counted as wrong; the time of each method (fastest of 3) and the largest difference
between their interval ends (different random draws: expect agreement to about 0.01 at 192 cases,
tighter with more).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from verifybench.metrics.bootstrap import errors_as_wrong, paired_bootstrap
from verifybench.metrics.curves import threshold_curve

METRICS = ("auroc", "auprc", "f1")


def loop_bootstrap(y, a, b, t, n_boot, seed):
    """The former gate's method: for each resample, a weight vector and a fresh sorted curve per side."""
    rng = np.random.default_rng(seed)
    pos, neg = np.flatnonzero(y), np.flatnonzero(~y)

    def stats(s, w):
        c = threshold_curve(y, s, sample_weight=w)
        pred = s >= t
        tp, fp, fn = (w * (pred & y)).sum(), (w * (pred & ~y)).sum(), (w * (~pred & y)).sum()
        return c.auroc(), c.average_precision(), 2 * tp / (2 * tp + fp + fn)

    draws = np.empty((n_boot, 3))
    for i in range(n_boot):
        w = (np.bincount(rng.choice(pos, len(pos)), minlength=len(y))
             + np.bincount(rng.choice(neg, len(neg)), minlength=len(y))).astype(float)
        draws[i] = np.subtract(stats(a, w), stats(b, w))
    return {m: np.quantile(draws[:, j], [0.025, 0.975]) for j, m in enumerate(METRICS)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, nargs="+", default=[192, 20_000, 200_000])
    ap.add_argument("--boot", type=int, default=1000)
    args = ap.parse_args()
    print("| cases | resamples | per-resample loop | vectorised | speed-up | largest CI-end difference |")
    print("|---|---|---|---|---|---|")
    for n in args.cases:
        rng = np.random.default_rng(0)
        y = rng.random(n) < 0.5
        base = y + rng.normal(scale=0.8, size=n)
        cur = base + rng.normal(scale=0.5, size=n)
        cur[rng.random(n) < 0.01] = np.nan
        a, b = errors_as_wrong(y, base), errors_as_wrong(y, cur)
        times = {"loop": [], "vec": []}
        for _ in range(3):
            t0 = time.perf_counter()
            old = loop_bootstrap(y, a, b, 0.5, args.boot, 0)
            times["loop"].append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            new = paired_bootstrap(y, a, b, 0.5, 0.5, metrics=METRICS, n_boot=args.boot, seed=0)
            times["vec"].append(time.perf_counter() - t0)
        diff = max(abs(new[m]["ci"][k] - old[m][k]) for m in METRICS for k in (0, 1))
        lo, hi = min(times["loop"]), min(times["vec"])
        print(f"| {n:,} | {args.boot} | {lo:.2f} s | {hi:.2f} s | {lo / hi:.1f}x | {diff:.4f} |")


if __name__ == "__main__":
    main()
