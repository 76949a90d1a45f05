"""BLEU/ROUGE latency per case, and the runner's overhead against a direct loop, in one run.

    python benchmarks/bench_overlap.py [--limit N] [--repeats R]

For each HaluEval file and each baseline verifier:
- median and p95 latency per case, as the verifier measures it (`CaseVerifier` times every case);
- wall time of a direct loop (`for batch in batched(iter_cases(...)): verifier.verify(batch)`) against
  `Runner.run()` over the same suite: loading, the case index, timing, error capture, appending results
  and the manifest, everything but metrics and the report. Progress bars off in both.
Each pair is run `repeats` times, alternating, and the fastest of each is compared.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from verifybench.loaders import iter_cases
from verifybench.pipeline.runner import Runner, batched
from verifybench.suite import find_data_dir, parse_suite
from verifybench.verifiers import build

ROOT = Path(__file__).resolve().parents[1]


def suite_for(path: Path, verifier: str, limit: int | None):
    raw = {"name": "bench", "dataset": {"loader": "halueval", "path": str(path), "limit": limit},
           "verifiers": [verifier], "batch_size": 64}
    return parse_suite(raw, ROOT)


def direct(suite) -> float:
    v = build(suite.verifiers[0].name)
    start = time.perf_counter()
    for batch in batched(iter_cases(suite.dataset), suite.batch_size):
        v.verify(batch)
    return time.perf_counter() - start


def via_runner(suite) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        Runner(suite, Path(tmp) / "run", progress=False).run()
        return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--limit", type=int, default=None, help="cases per file (default: all 20,000)")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    data = find_data_dir(ROOT)
    if data is None:
        sys.exit("no shared/datasets folder found beside the repository")

    print("| file | verifier | cases | median ms/case | p95 ms/case | direct loop s | runner s | runner overhead |")
    print("|---|---|---|---|---|---|---|---|")
    for task in ("qa", "summarization"):
        for name in ("bleu", "rouge"):
            suite = suite_for(data / f"halueval/{task}_data.json", name, args.limit)
            cases = list(iter_cases(suite.dataset))
            verdicts = build(name).verify(cases)
            lat = np.array([v.latency_ms for v in verdicts])
            d, r = [], []
            for _ in range(args.repeats):
                d.append(direct(suite))
                r.append(via_runner(suite))
            best_d, best_r = min(d), min(r)
            print(f"| {task} | {name} | {len(cases)} | {statistics.median(lat):.3f} | {np.percentile(lat, 95):.3f} "
                  f"| {best_d:.2f} | {best_r:.2f} | {100 * (best_r / best_d - 1):+.1f}% |", flush=True)


if __name__ == "__main__":
    main()
