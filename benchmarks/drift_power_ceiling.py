"""The most a drift test can catch at 200 cases a side: the power of one two-sided two-proportion z-test
at level 0.05 (no correction for `drift`'s other rows) against a 10-point rise of a flag rate, by seeded
simulation, at several base rates. Issue 44's goal (80% at 200 a side) is read against it.

    python benchmarks/drift_power_ceiling.py [--n 200] [--draws 20000]
"""

from __future__ import annotations

import argparse

import numpy as np
from scipy.stats import norm


def power(base: float, n: int, rise: float = 0.10, draws: int = 20_000, seed: int = 0) -> float:
    rng = np.random.default_rng(seed)
    a, b = rng.binomial(n, base, draws) / n, rng.binomial(n, base + rise, draws) / n
    pooled = (a + b) / 2
    z = np.abs(b - a) / np.sqrt(pooled * (1 - pooled) * 2 / n)
    return float((z > norm.ppf(0.975)).mean())


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--draws", type=int, default=20_000)
    args = ap.parse_args()
    print(f"| base flag rate | power, +0.10 at {args.n} a side |\n|---|---|")
    for base in (0.1, 0.2, 0.3, 0.5):
        print(f"| {base} | {power(base, args.n, draws=args.draws):.3f} |")


if __name__ == "__main__":
    main()
