"""ROUGE with and without `stemmer: true`, per case, on HaluEval, in one run.

    python benchmarks/bench_rouge_stemmer.py [--limit N] [--repeats R]

For each HaluEval file: wall time of rouge1 over the same cases with and without the Porter stemmer
(fresh verifier each repeat, so the tokenizer's per-text and per-word caches start cold), the fastest
of `repeats` alternating runs each, and their ratio; plus how many scores the stemmer changes.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from verifybench.loaders import iter_cases
from verifybench.suite import find_data_dir, parse_suite
from verifybench.verifiers import build

ROOT = Path(__file__).resolve().parents[1]


def timed(cases, **options) -> tuple[float, list]:
    v = build("rouge", **options)
    start = time.perf_counter()
    verdicts = v.verify(cases)
    return time.perf_counter() - start, verdicts


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--limit", type=int, default=2000, help="cases per file")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    data = find_data_dir(ROOT)
    if data is None:
        sys.exit("no shared/datasets folder found beside the repository")
    print("| file | cases | plain ms/case | stemmed ms/case | ratio | scores changed |")
    print("|---|---|---|---|---|---|")
    for task in ("qa", "summarization"):
        suite = parse_suite({"name": "bench", "dataset": {"loader": "halueval", "path": str(data / f"halueval/{task}_data.json"),
                                                          "limit": args.limit}, "verifiers": ["rouge"]}, ROOT)
        cases = list(iter_cases(suite.dataset))
        plain, stemmed = [], []
        for _ in range(args.repeats):
            t, a = timed(cases)
            plain.append(t)
            t, b = timed(cases, stemmer=True)
            stemmed.append(t)
        changed = sum(x.score != y.score for x, y in zip(a, b))
        p, s = 1000 * min(plain) / len(cases), 1000 * min(stemmed) / len(cases)
        print(f"| {task} | {len(cases)} | {p:.3f} | {s:.3f} | {s / p:.2f}x | {changed} ({100 * changed / len(cases):.0f}%) |",
              flush=True)


if __name__ == "__main__":
    main()
