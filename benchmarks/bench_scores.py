"""Reading a million precomputed scores with the `scores` verifier, per file format, in one run.

    python benchmarks/bench_scores.py [--rows N] [--repeats R]

For each format (CSV, JSONL, Parquet), a file of N (case id, score) rows is written to a temporary
folder; then timed: building the verifier (reading the file, hashing it for the config, indexing the
ids), and scoring N cases from it (one verdict per case, in batches of 1,000). The fastest of `repeats`
runs is kept. Target: reading 1M predictions in under 10 s.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from verifybench.cases import Case
from verifybench.verifiers import build


def write_files(folder: Path, n: int) -> dict[str, Path]:
    rng = np.random.default_rng(0)
    ids = [f"case-{i:07d}" for i in range(n)]
    scores = rng.random(n)
    table = pa.table({"case_id": ids, "score": scores})
    out = {"csv": folder / "preds.csv", "jsonl": folder / "preds.jsonl", "parquet": folder / "preds.parquet"}
    pacsv.write_csv(table, out["csv"])
    pq.write_table(table, out["parquet"])
    with open(out["jsonl"], "w") as f:
        f.writelines(json.dumps({"case_id": i, "score": float(s)}) + "\n" for i, s in zip(ids, scores))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        files = write_files(Path(tmp), args.rows)
        cases = [Case(id=f"case-{i:07d}", dataset="b", response="r", label=bool(i % 2)) for i in range(args.rows)]
        print(f"| format | rows | file MB | read s | score {args.rows:,} cases s |")
        print("|---|---|---|---|---|")
        for fmt, path in files.items():
            reads, scores = [], []
            for _ in range(args.repeats):
                start = time.perf_counter()
                v = build("scores", file=str(path), key="case_id")
                reads.append(time.perf_counter() - start)
                start = time.perf_counter()
                done = sum(len(v.verify(cases[i:i + 1000])) for i in range(0, len(cases), 1000))
                scores.append(time.perf_counter() - start)
                assert done == args.rows
            print(f"| {fmt} | {args.rows:,} | {path.stat().st_size / 1e6:.0f} | {min(reads):.2f} | {min(scores):.2f} |",
                  flush=True)


if __name__ == "__main__":
    main()
