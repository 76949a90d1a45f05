"""`cascade` and `drift` on a synthetic run of a million verdicts, and `label-merge` on a million-row
labeled queue: wall time and peak RSS, each in its own process.

    python benchmarks/bench_feedback.py [--cases 500000] [--work reports/bench-feedback] [--stack] [--src DIR]
                                        [--merge-rows 1000000] [--no-runs]

Writes two seeded run directories in the files' real formats (not committed): `reference` and
`production`, each of `--cases` cases (four doc types, both labels, a seeded calibration / test split
field) scored by two checks, `cheap` (overlap-like: AUROC about 0.8, about 0.1 ms a case) and
`expensive` (AUROC about 0.9, about 15 ms a case), so 2 x 500,000 = a million verdicts a run; the
production run's `cheap` scores are shifted by 0.05. Then, in a fresh process each:

- cascade: `verifybench cascade reference --checks cheap,expensive --json` (read the run, fit the
  thresholds and the cascade's region on the calibration split, measure every candidate on the test
  split with 1,000-resample intervals);
- drift (baseline vs run): `verifybench drift baseline.json production --json`, the usual use: a
  baseline recorded once (`verifybench baseline reference`, not timed) against a million-verdict window;
- drift (run vs run): `verifybench drift reference production --json` (both runs read: two million
  verdicts).

With `--merge-rows N`: a labeled queue of N rows in label-queue's columns (about 600 bytes a row: a
question, a response, sources and evidence as JSON; a third of the labels empty), and its queue record,
written once; then `verifybench label-merge queue.csv --out merged.csv` (the file merged with itself:
one row per id, a filled label kept). `--no-runs` skips the cascade and drift phases.

`--src` measures another version's code (say `git archive <commit> src | tar -x -C /tmp/before`, then
`--src /tmp/before/src`); the runs and the baseline are written by this checkout's code.

Peak RSS is the child's `ru_maxrss` and CPU time its user + system time, from `os.wait4`; wall time is
measured around the child (so it includes starting Python and importing). On a shared machine the CPU
time is the steadier figure.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DOC_TYPES = ("qa", "summary", "dialogue", "support")


def write_run(path: Path, n: int, seed: int, shift: float = 0.0) -> None:
    rng = np.random.default_rng(seed)
    path.mkdir(parents=True, exist_ok=True)
    label = rng.random(n) < 0.4
    doc = rng.integers(0, len(DOC_TYPES), n)
    split = np.where(rng.random(n) < 0.5, "calibration", "test")
    cheap = np.clip(rng.normal(0.45 + 0.17 * label, 0.2), 0, 1) + shift
    expensive = 1 / (1 + np.exp(-rng.normal(-1 + 2.6 * label, 1.0)))
    lat_c = rng.gamma(4, 0.025, n)
    lat_e = rng.gamma(9, 1.7, n)
    with open(path / "cases.jsonl", "w", encoding="utf-8") as f:
        for i in range(n):
            f.write(f'{{"id":"c{i}","dataset":"bench","doc_type":"{DOC_TYPES[doc[i]]}","split":"{split[i]}",'
                    f'"label":{"true" if label[i] else "false"},"meta":{{}},"question":null,"response":"r"}}\n')
    with open(path / "results.jsonl", "w", encoding="utf-8") as f:
        for vid, s, lat in (("cheap", cheap, lat_c), ("expensive", expensive, lat_e)):
            for i in range(n):
                f.write(f'{{"case_id":"c{i}","verifier":"{vid}","score":{float(s[i])!r},"latency_ms":{float(lat[i])!r},'
                        f'"latency_kind":"case","detail":{{}}}}\n')
    manifest = {
        "format": 1, "status": "complete",
        "suite": {"name": "bench-feedback", "path": str(path / "suite.yaml"), "hash": "0" * 64, "base_dir": str(path),
                  "data_dir": None, "raw": {"name": "bench-feedback", "metrics": {"by": "doc_type"}}},
        "dataset": {"hash": f"{seed:064d}", "total": n},
        "verifiers": [{"id": v, "name": v, "config": {"name": v}, "config_hash": v, "probabilistic": False,
                       "binary": False} for v in ("cheap", "expensive")],
    }
    (path / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")


def write_queue(path: Path, n: int) -> None:
    """A labeled queue of n rows as label-queue writes it (plain text cells, so any version reads it), and
    its queue record beside it."""
    import csv

    sys.path.insert(0, str(ROOT / "src"))
    from verifybench.loaders.labelqueue import record_path, write_record

    rng = np.random.default_rng(2)
    score = rng.random(n)
    header = ["id", "label", "reviewer", "reviewed_at", "review_note", "doc_type", "question", "response", "sources",
              "evidence", "action", "score:cheap", "flagged:cheap", "part", "stratum", "inclusion_prob", "weight",
              "split", "case_meta", "window"]
    words = "the refund was issued within fourteen days of the order and the customer confirmed it".split()
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(header)
        for i in range(n):
            text = " ".join(words[(i + k) % len(words)] for k in range(24))
            w.writerow([f"case-{i:07d}", ("", "faithful", "hallucinated")[i % 3], "reviewer-1", "2026-12-01", "",
                        DOC_TYPES[i % 4], f"What happened to order {i}?", f"Order {i}: {text}.",
                        json.dumps([{"id": "s0", "text": f"Order {i} record: {text}."}]),
                        json.dumps({"cheap": {"score": float(score[i]), "threshold": 0.5, "flagged": bool(score[i] >= 0.5)}}),
                        "flag" if score[i] >= 0.5 else "allow", repr(float(score[i])), int(score[i] >= 0.5), "random",
                        "random", "0.01", "100.0", "calibration" if i % 2 else "test", "{}", "guard-log"])
    write_record(record_path(path), (f"case-{i:07d}" for i in range(n)), csv=path.name)


def run_child(cmd: list[str], work: Path, src: Path = ROOT / "src") -> tuple[float, float, float, int, str]:
    """Wall time, CPU time (user + system), peak RSS (MB, from wait4), exit code and output of a child."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    out_path = work / "child.out"
    t0 = time.perf_counter()
    with open(out_path, "wb") as out:
        p = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env)
        _, status, usage = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    cpu = usage.ru_utime + usage.ru_stime
    return wall, cpu, usage.ru_maxrss / 1024, p.returncode, out_path.read_text(encoding="utf-8")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=500_000)
    ap.add_argument("--work", type=Path, default=ROOT / "reports" / "bench-feedback")
    ap.add_argument("--stack", action="store_true", help="also fit the stacked combination in the cascade phase")
    ap.add_argument("--src", type=Path, default=ROOT / "src", help="the code to measure (default: this checkout's)")
    ap.add_argument("--merge-rows", type=int, default=0, help="also measure label-merge on a queue of this many rows")
    ap.add_argument("--no-runs", action="store_true", help="skip the cascade and drift phases")
    args = ap.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    if args.merge_rows:
        measure_merge(args)
    if not args.no_runs:
        measure_runs(args)


def measure_merge(args: argparse.Namespace) -> None:
    queue = args.work / f"queue-{args.merge_rows}.csv"
    if not queue.exists():
        t0 = time.perf_counter()
        write_queue(queue, args.merge_rows)
        print(f"wrote a {args.merge_rows:,}-row queue ({queue.stat().st_size / 1e6:.0f} MB) in "
              f"{time.perf_counter() - t0:.0f} s")
    merged = args.work / "merged.csv"
    cmd = [sys.executable, "-m", "verifybench.cli", "label-merge", str(queue), str(queue), "--out", str(merged)]
    print(f"load average before: {os.getloadavg()[0]:.1f}")
    wall, cpu, rss, code, out = run_child(cmd, args.work, args.src)
    print("| phase | rows read | wall s | CPU s | peak RSS MB | exit |")
    print("|---|---|---|---|---|---|")
    print(f"| label-merge (the queue with itself) | {2 * args.merge_rows:,} | {wall:.1f} | {cpu:.1f} | {rss:.0f} | {code} |")
    if code:
        print(out[-2000:])
    with open(merged, "rb") as f:
        rows = sum(1 for _ in f) - 1
    print(f"merged rows: {rows:,}; load average after: {os.getloadavg()[0]:.1f}")


def measure_runs(args: argparse.Namespace) -> None:
    ref, prod = args.work / "reference", args.work / "production"
    if not (ref / "manifest.json").exists() or json.loads((ref / "manifest.json").read_text())["dataset"]["total"] != args.cases:
        t0 = time.perf_counter()
        write_run(ref, args.cases, seed=0)
        write_run(prod, args.cases, seed=1, shift=0.05)
        print(f"wrote two runs of {args.cases:,} cases x 2 checks in {time.perf_counter() - t0:.0f} s")
    base = args.work / "baseline.json"
    if not base.exists() or base.stat().st_mtime < (ref / "results.jsonl").stat().st_mtime:
        t0 = time.perf_counter()
        _, _, _, code, out = run_child([sys.executable, "-m", "verifybench.cli", "baseline", str(ref), "--out", str(base)],
                                       args.work)
        if code:
            raise SystemExit(out)
        print(f"recorded the reference's baseline in {time.perf_counter() - t0:.0f} s (not timed below)")
    exe = [sys.executable, "-m", "verifybench.cli"]
    phases = {
        "cascade": [*exe, "cascade", str(ref), "--checks", "cheap,expensive", "--json", *(["--stack"] if args.stack else [])],
        "drift (baseline vs run)": [*exe, "drift", str(base), str(prod), "--json"],
        "drift (run vs run)": [*exe, "drift", str(ref), str(prod), "--json"],
    }
    print(f"load average before: {os.getloadavg()[0]:.1f}")
    print("| phase | verdicts read | wall s | CPU s | peak RSS MB | exit |")
    print("|---|---|---|---|---|---|")
    for name, cmd in phases.items():
        wall, cpu, rss, code, out = run_child(cmd, args.work, args.src)
        n = 2 * args.cases * (2 if name == "drift (run vs run)" else 1)
        print(f"| {name} | {n:,} | {wall:.1f} | {cpu:.1f} | {rss:.0f} | {code} |")
        if name == "cascade" and code == 0:
            r = json.loads(next(line for line in out.splitlines() if line.startswith("{")))
            for c in r["candidates"]:
                t = c["test"]
                print(f"  {c['name']}: test F1 {t['f1']:.4f} {[round(x, 4) for x in t['ci']['f1']]}, mean "
                      f"{t['latency_ms']['mean']:.2f} ms, deferred {t.get('deferred_share')}")
        elif code not in (0, 1):
            print(out[-2000:])
    print(f"load average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
