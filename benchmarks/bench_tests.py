"""CPU and wall time of pytest runs, the tests and code of another commit against this checkout's.

    python benchmarks/bench_tests.py --before git:REV [--repeat 1] ARGS [ARGS ...]

Each ARGS is one pytest run's arguments as one string (`"tests/test_uncertainty.py"`,
`"--collect-only"`, `"tests/test_gate.py -k baseline"`). For each, `pytest -q -p no:randomly -p
no:cacheprovider ARGS` runs in an export of the commit (its whole tree, `git archive`, so its tests with
its code) and in this checkout, alternating, each in its own process with `PYTHONPATH` at that tree's
`src` and the shared datasets at `$VERIFYBENCH_DATA` (default: ../shared/datasets beside the repository).

CPU time is user + system of the pytest process and every process it waited for (`RUSAGE_CHILDREN`):
what a change saves on any machine. Wall time is printed beside it with the load average; on a shared
machine it says more about the other jobs than about the tests.
"""

from __future__ import annotations

import argparse
import os
import resource
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def export(rev: str, dest: Path) -> Path:
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    return dest


def run(tree: Path, args: str, data: str) -> tuple[float, float, str]:
    """CPU seconds, wall seconds and pytest's last line for one run in `tree`."""
    env = {**os.environ, "PYTHONPATH": str(tree / "src"), "HF_HUB_OFFLINE": "1", "VERIFYBENCH_DATA": data}
    before, t = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider",
                        *shlex.split(args)], cwd=tree, env=env, capture_output=True, text=True)
    wall, after = time.perf_counter() - t, resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    lines = [line for line in p.stdout.splitlines() if line.strip()]
    return cpu, wall, (lines[-1] if lines else p.stderr.strip()[-200:])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", required=True, help="git:REV, the commit to compare against")
    ap.add_argument("--repeat", type=int, default=1, help="runs of each side, alternating")
    ap.add_argument("runs", nargs="+", help="one pytest run's arguments, as one string")
    args = ap.parse_args()
    if not args.before.startswith("git:"):
        raise SystemExit("--before takes git:REV")
    data = os.environ.get("VERIFYBENCH_DATA") or str(ROOT.parent / "shared" / "datasets")
    print(f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        trees = {"before": export(args.before[4:], Path(tmp)), "after": ROOT}
        for spec in args.runs:
            for _ in range(args.repeat):
                for name, tree in trees.items():
                    cpu, wall, last = run(tree, spec, data)
                    print(f"{spec[:40]:<40} {name:<6} CPU {cpu:7.1f} s  wall {wall:7.1f} s  "
                          f"load {os.getloadavg()[0]:4.1f}  | {last[:80]}", flush=True)


if __name__ == "__main__":
    main()
