"""Two-stage compliance audit latency on a 50,000-document corpus.

Writes a scaled corpus with datasets/compliance/generate.py (--docs), builds the two-stage pipeline over
it, and audits `--audits` random lots twice: cold (every query and candidate embedded on the spot) and
warm (embeddings cached). Filtering happens before scoring: per audit it reports how many documents
were scored, and times the same BM25 scoring over the whole corpus (what scoring-then-filtering would
cost) as a ratio in the same run.

    python benchmarks/bench_compliance.py                    # 50,000 documents, 200 audits
    python benchmarks/bench_compliance.py --docs 5000 --audits 50 --no-dense
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def pct(xs: list[float], q: float) -> float:
    return float(np.percentile(xs, q)) if xs else float("nan")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--docs", type=int, default=50_000)
    ap.add_argument("--audits", type=int, default=200)
    ap.add_argument("--no-dense", action="store_true", help="BM25 only")
    args = ap.parse_args()

    from verifybench.verifiers.anchors.encoders import CachedEncoder, make_encoder
    from verifybench.verifiers.compliance import HybridIndex, RuleExtractor, TwoStagePipeline, load_corpus

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        subprocess.run([sys.executable, str(ROOT / "datasets/compliance/generate.py"), "--docs", str(args.docs),
                        "--out", str(tmp)], check=True, capture_output=True)
        t = time.perf_counter()
        docs = load_corpus(tmp / "corpus.jsonl")
        load_s = time.perf_counter() - t
        encoder = None if args.no_dense else CachedEncoder(make_encoder("minilm"), tmp / "emb")
        standards = [d for d in docs if d.doc_type == "standard"]
        evidence = [d for d in docs if d.doc_type != "standard"]
        if encoder is not None:
            encoder.encode(["warm-up"], "query")  # load the model outside the timed parts
        t = time.perf_counter()
        std_index, ev_index = HybridIndex(standards, encoder).build(), HybridIndex(evidence, encoder)
        ev_index._index()  # BM25 over the evidence documents; their embeddings are computed per audit
        build_s = time.perf_counter() - t
        pipe = TwoStagePipeline(std_index, ev_index, RuleExtractor())

        rng = random.Random(0)
        lots = sorted({(d.metadata["ingredient"], d.metadata["lot_id"], d.metadata["ingredient_code"])
                       for d in evidence if d.doc_type == "TDS"})
        sample = rng.sample(lots, min(args.audits, len(lots)))
        runs: dict[str, list[float]] = {"cold": [], "warm": []}
        scored, stages = [], []
        for name in ("cold", "warm"):
            for ingredient, lot, code in sample:
                t = time.perf_counter()
                audit, timing = pipe.audit(ingredient, lot, code)
                runs[name].append((time.perf_counter() - t) * 1000)
                if name == "cold":
                    scored.append(len(ev_index.candidates({"doc_type": ["CoA", "TDS"], "lot_id": lot,
                                                          "ingredient_code": code})))
                    stages.append(timing)

        # Filter-then-score against score-everything-then-filter, BM25 only (same query, same run).
        import bm25s

        matrix = ev_index._index()
        query = pipe.evidence_query(sample[0][0], None)
        ids = sorted({ev_index._vocab[t] for t in bm25s.tokenize(query, stopwords="en", return_ids=False,
                                                                 show_progress=False)[0] if t in ev_index._vocab})
        rows = ev_index.candidates({"doc_type": ["CoA", "TDS"], "lot_id": sample[0][1]})
        reps = 200
        t = time.perf_counter()
        for _ in range(reps):
            rows = ev_index.candidates({"doc_type": ["CoA", "TDS"], "lot_id": sample[0][1]})
            np.asarray(matrix[rows][:, ids].sum(axis=1))
        before = (time.perf_counter() - t) / reps * 1000
        t = time.perf_counter()
        for _ in range(reps):
            np.asarray(matrix[:, ids].sum(axis=1))
        after = (time.perf_counter() - t) / reps * 1000

    out = {
        "documents": len(docs), "evidence_documents": len(evidence), "standards": len(standards),
        "dense": encoder is not None, "audits": len(sample),
        "load_s": round(load_s, 2), "index_build_s": round(build_s, 2),
        "audit_ms_cold": {"p50": round(pct(runs["cold"], 50), 2), "p95": round(pct(runs["cold"], 95), 2)},
        "audit_ms_warm": {"p50": round(pct(runs["warm"], 50), 2), "p95": round(pct(runs["warm"], 95), 2)},
        "stage_ms_cold_median": {k: round(statistics.median(s[k] for s in stages), 2) for k in stages[0]},
        "documents_scored_per_audit": {"mean": round(statistics.mean(scored), 2), "max": max(scored)},
        "bm25_ms_filter_then_score": round(before, 3), "bm25_ms_score_all": round(after, 3),
        "score_all_over_filtered": round(after / before, 1),
    }
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
