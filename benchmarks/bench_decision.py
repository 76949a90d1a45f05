"""Decision time per unit for the local decision model (target: median under 5 ms a unit).

    python benchmarks/bench_decision.py [--units 400] [--batch 32]

On BIPIA test contexts (clean and attacked, one attack per context: the units of evals/injection.yaml),
a verifier scores batches of cases with every question asked (relevance, contradiction, instructions),
the policy applied and the audit log written. Time per unit = a batch's wall time / its units, like the
runner attributes batch time. Three conditions, all in one run:

- cold: no embedding cache (MiniLM encodes every window; what a first run pays);
- warm: the same units again with the in-memory embedding cache filled (the heads, features, policy
  and audit only: the decision model's own cost once text is embedded);
- encoder only: MiniLM on the same windows, to show where cold time goes.
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import tempfile
import time
from pathlib import Path

from verifybench.loaders.bipia import bipia
from verifybench.pipeline.runner import batched
from verifybench.suite import find_data_dir
from verifybench.verifiers import build
from verifybench.verifiers.decision.features import windows

ROOT = Path(__file__).resolve().parents[1]


def per_unit_ms(v, batches) -> list[float]:
    out = []
    for batch in batches:
        t0 = time.perf_counter()
        v.verify(batch)
        ms = (time.perf_counter() - t0) * 1000.0
        n_units = sum(len(c.sources) for c in batch)
        out += [ms / n_units] * n_units
    return out


def stats(xs: list[float]) -> str:
    xs = sorted(xs)
    return f"median {statistics.median(xs):.2f} ms, p95 {xs[int(0.95 * (len(xs) - 1))]:.2f} ms"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--units", type=int, default=400)
    ap.add_argument("--batch", type=int, default=32)
    args = ap.parse_args()
    data = find_data_dir(ROOT)
    cases = list(itertools.islice(bipia(data / "bipia", split="test", attacks_per_context=1), args.units))
    batches = list(batched(cases, args.batch))
    audit = tempfile.mkdtemp(prefix="bench-decision-")

    v = build("decision", question="policy", cache_dir=None, audit_dir=audit)
    v.verify(cases[:2])  # load MiniLM and the heads before timing
    encoder = v.backend.model.featurizer.encoder
    encoder._mem.clear()
    cold = per_unit_ms(v, batches)
    warm = per_unit_ms(v, batches)

    texts = [w.text for c in cases for s in c.sources for w in windows(s.text)]
    t0 = time.perf_counter()
    encoder.encoder.encode(texts)
    enc = (time.perf_counter() - t0) * 1000.0 / len(cases)

    print(f"{len(cases)} units ({len(texts)} windows), batches of {args.batch}, 3 questions each + policy + audit")
    print(f"cold (no embedding cache): {stats(cold)}")
    print(f"warm (embeddings cached):  {stats(warm)}")
    print(f"MiniLM alone on the same windows: {enc:.2f} ms a unit")


if __name__ == "__main__":
    main()
