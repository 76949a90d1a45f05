"""Anchors verifier speed against the raw encoder, in one run.

    python benchmarks/bench_anchors.py [--cases 1000] [--batch 64]

On the first N HaluEval QA cases: (1) the exact texts the verifier embeds (each case's claims and its
source chunks, deduplicated as the verifier does) are encoded with a bare `model.encode` call;
(2) a fresh verifier (no disk cache) scores the same cases in batches. Reports the verifier's
throughput as a share of the raw encoder's, and the median and p95 milliseconds per case (each verdict's
own latency: its own stages timed alone plus its share of the batched parse and embedding calls).
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import time
from pathlib import Path

import numpy as np

from verifybench.loaders import halueval
from verifybench.pipeline.runner import batched
from verifybench.suite import find_data_dir
from verifybench.verifiers import build
from verifybench.verifiers.anchors.text import chunks, claims_from_doc, english_pipeline

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=1000)
    ap.add_argument("--batch", type=int, default=64)
    args = ap.parse_args()
    data = find_data_dir(ROOT)
    cases = list(itertools.islice(halueval(data / "halueval/qa_data.json"), args.cases))

    v = build("anchors", cache_dir=None)
    model = v.encoder.encoder.model  # load before timing anything
    nlp = english_pipeline()
    v.verify(cases[:4])  # warm spaCy, pysbd and torch
    v = build("anchors", cache_dir=None)
    v.encoder.encoder._model = model

    # The texts the verifier will embed, batch by batch, deduplicated within a batch as it does.
    raw_batches = []
    for batch in batched(cases, args.batch):
        cl = [c.text for doc in nlp.pipe([c.response for c in batch]) for c in claims_from_doc(doc)]
        ch = [k.text for c in batch for s in c.sources for k in chunks(s.text, s.id, 1, 0)]
        raw_batches.append((list(dict.fromkeys(cl)), list(dict.fromkeys(ch))))
    n_texts = sum(len(a) + len(b) for a, b in raw_batches)

    t0 = time.perf_counter()
    for cl, ch in raw_batches:
        model.encode(cl, batch_size=64, normalize_embeddings=True)
        model.encode(ch, batch_size=64, normalize_embeddings=True)
    raw = time.perf_counter() - t0

    per_case = []
    t0 = time.perf_counter()
    for batch in batched(cases, args.batch):
        per_case += [verdict.latency_ms for verdict in v.verify(batch)]
    full = time.perf_counter() - t0

    print(f"| {len(cases)} HaluEval QA cases, batch {args.batch} | texts embedded: {n_texts} "
          f"| raw model.encode: {raw:.1f} s ({n_texts / raw:.0f} texts/s) | anchors verifier: {full:.1f} s "
          f"| share of raw throughput: {raw / full:.0%} | median {statistics.median(per_case):.1f} ms/case, "
          f"p95 {np.percentile(per_case, 95):.1f} ms/case |")


if __name__ == "__main__":
    main()
