"""Span metrics at scale: 100,000 cases x 3 verifiers with 1,000 bootstrap resamples.

    python benchmarks/bench_spans.py [--cases 100000] [--verifiers 3] [--boot 1000] [--read]

Builds span data directly: 30% hallucinated cases with one or two gold spans in a 600-character
response, 6 units per case per verifier (each an interval with a score that is higher, on average, when
it overlaps gold), four doc types as slices. Then times, for all verifiers together, the steps of
`localization.span_section` at full size: fitting each verifier's unit threshold on every case's units
(max F1), the per-case counts of its flagged units against gold, and `span_metrics` with intervals over
all cases and the four slices (one shared set of resamples). The pipeline fits on the calibration half
and reports on the test half; timing both on all cases is the conservative figure.

Also timed, as ratios in the same run: the Poisson(1) table against numpy's own Poisson sampler (the
resample weights above 20,000 cases), and the bootstrap with one BLAS thread against OpenBLAS's default
pool (which spins on a busy machine). With `--read`, also writes a run directory of these cases and
verdicts and times `localization.add_metrics` on it: reading cases.jsonl and results.jsonl included.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

import numpy as np

from verifybench.metrics.bootstrap import poisson_weights
from verifybench.metrics.spans import SpanSet, case_counts, fit_unit_threshold, overlap_labels, span_metrics
from verifybench.metrics.thresholds import Target

LENGTH = 600
UNITS = 6


def build(n: int, k: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    label = rng.random(n) < 0.3
    doc = rng.integers(0, 4, n)
    n_gold = np.where(label, rng.integers(1, 3, n), 0)
    g_case = np.repeat(np.arange(n), n_gold)
    g_start = rng.integers(0, LENGTH - 80, len(g_case))
    gold = SpanSet.of(g_case, g_start, g_start + rng.integers(10, 80, len(g_case)))
    verifiers = {}
    for j in range(k):
        u_case = np.repeat(np.arange(n), UNITS)
        u_start = np.tile(np.arange(UNITS) * (LENGTH // UNITS), n) + rng.integers(0, 20, len(u_case))
        units = SpanSet.of(u_case, u_start, u_start + rng.integers(40, LENGTH // UNITS, len(u_case)))
        hit = overlap_labels(units, gold)
        score = np.round(rng.normal(size=len(u_case)) + (0.5 + 0.5 * j) * hit, 3)
        verifiers[f"v{j}"] = (units, score)
    return label, doc, gold, verifiers


def spans_step(label, doc, gold, verifiers, boot: int):
    n = len(label)
    counts = {}
    for vid, (units, score) in verifiers.items():
        fit = fit_unit_threshold(score, overlap_labels(units, gold), Target("fbeta", 1.0))
        flag = score >= fit["value"]
        counts[vid] = case_counts(n, gold, SpanSet(units.case[flag], units.start[flag], units.end[flag]))
    return span_metrics(counts, label, {f"d{d}": doc == d for d in range(4)}, n_boot=boot)


def write_run(path: Path, label, gold, verifiers) -> None:
    """A run directory with these cases and verdicts, in the files' real formats."""
    n = len(label)
    spans = [[] for _ in range(n)]
    for c, s, e in zip(gold.case.tolist(), gold.start.tolist(), gold.end.tolist()):
        spans[c].append([s, e])
    with open(path / "cases.jsonl", "w") as f:
        for i in range(n):
            row = {"id": str(i), "dataset": "bench", "doc_type": f"d{i % 4}", "split": None, "label": bool(label[i]),
                   "meta": {}, "question": None, "response": "x" * LENGTH}
            if label[i]:
                row["spans"] = spans[i]
            f.write(json.dumps(row) + "\n")
    with open(path / "results.jsonl", "w") as f:
        for vid, (units, score) in verifiers.items():
            per = np.split(np.arange(len(units)), np.arange(UNITS, len(units), UNITS))
            for i, idx in enumerate(per):
                us = [{"text": "x", "score": float(score[j]), "start": int(units.start[j]), "end": int(units.end[j])}
                      for j in idx]
                f.write(json.dumps({"case_id": str(i), "verifier": vid, "score": max(u["score"] for u in us),
                                    "units": us}) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=100_000)
    ap.add_argument("--verifiers", type=int, default=3)
    ap.add_argument("--boot", type=int, default=1000)
    ap.add_argument("--read", action="store_true", help="also time add_metrics on a run directory (reads included)")
    args = ap.parse_args()
    print(f"load average before: {os.getloadavg()[0]:.1f} (2 cores)")
    t0 = time.perf_counter()
    data = build(args.cases, args.verifiers)
    t1 = time.perf_counter()
    out = spans_step(*data, boot=args.boot)
    t2 = time.perf_counter()
    v0 = out["v0"]["all"]["hallucinated"]["char"]
    print(f"| {args.cases:,} cases x {args.verifiers} verifiers, {args.boot} resamples, 4 slices | data built in "
          f"{t1 - t0:.1f} s | unit thresholds + counts + intervals: {t2 - t1:.2f} s | v0 char F1 {v0['f1']:.4f} "
          f"{[round(x, 4) for x in v0['ci']['f1']]} |")

    rng = np.random.default_rng(0)
    shape = (100, args.cases)
    a = time.perf_counter()
    rng.poisson(1.0, shape)
    b = time.perf_counter()
    poisson_weights(*shape, rng)
    c = time.perf_counter()
    print(f"| resample weights, {shape[0]} x {shape[1]:,} | numpy poisson {b - a:.3f} s | table {c - b:.3f} s | "
          f"ratio {(b - a) / (c - b):.1f}x |")

    from threadpoolctl import threadpool_limits

    w = poisson_weights(40, args.cases, rng)
    C = np.random.default_rng(2).random((args.cases, 54)).astype(np.float32)
    a = time.perf_counter()
    for _ in range(5):
        w @ C
    b = time.perf_counter()
    with threadpool_limits(1, user_api="blas"):
        for _ in range(5):
            w @ C
    c = time.perf_counter()
    print(f"| 5 products (40 x {args.cases:,}) @ ({args.cases:,} x 54) | BLAS default pool {b - a:.3f} s | "
          f"one thread {c - b:.3f} s | ratio {(b - a) / (c - b):.1f}x |")

    if args.read:
        from verifybench.evaluation import spans_pairs as localization
        from verifybench.metrics import Settings

        with tempfile.TemporaryDirectory() as tmp:
            write_run(Path(tmp), data[0], data[2], data[3])
            a = time.perf_counter()
            m = localization.add_metrics({"verifiers": {v: {} for v in data[3]}}, tmp, Settings(n_boot=args.boot))
            b = time.perf_counter()
        ev = m["spans"]["evaluated"]
        print(f"| add_metrics on a run directory ({ev['calibration']:,} calibration + {ev['test']:,} test cases) | "
              f"{b - a:.2f} s, reads included |")
    print(f"load average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
