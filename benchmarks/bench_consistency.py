"""The default `nli` verifier (the project's consistency model, its declared windows) on SummEdits: latency
a case, and the int8 ONNX Runtime against torch (throughput and AUROC), in one run.

    python benchmarks/bench_consistency.py [--cap N] [--batch B] [--threads T] [--single M] [--no-onnx]

Cases: the SummEdits development domains (news, sales_call), whole documents in the training command's
fixed order, up to `--cap` cases a domain (design-time data: the held-out domains are for the final
evaluation only). Each side is a fresh verifier with cold caches (its own temporary pair and embedding
cache folders), the model already loaded (loading is not per-case work).

- latency, batched: the cases verified in batches of `--batch` (as a suite run hands them over); the
  wall time of a batch over its cases is one sample; median and total. Everything a case costs is in
  it: sentence splitting, token counting, windows, the embedding ranking of windows (top-k), pair
  scoring, aggregation.
- latency, one case at a time: the first `--single` cases verified one by one (an online check).
- raw throughput: the pairs the torch verifier sent to its model, scored again by the torch model and by
  the ONNX session in the same batches (sorted by length), alternating chunk by chunk so both meet the
  same load from other work on the machine; pairs a second and the ratio.
- AUROC of each runtime on the same cases (1 - consistency, as the verifier scores).
One torch / ONNX Runtime thread by default. Goals (issue #21): median <= 30 ms a case; ONNX >= 2x torch
throughput at an AUROC within 0.01.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from verifybench.metrics.curves import auroc
from verifybench.suite import find_data_dir
from verifybench.training.consistency import dev_selection
from verifybench.verifiers import build

ROOT = Path(__file__).resolve().parents[1]


def cases(cap: int):
    sets = dev_selection(find_data_dir(ROOT), summedits_cap=cap, halueval_rows_cap=1)
    return [c for name, cs in sets.items() if name.startswith("summedits") for c in cs]


def verifier(runtime: str, tmp: Path):
    v = build("nli", runtime=runtime, cache_dir=str(tmp / f"pairs-{runtime}"),
              embedding_cache_dir=str(tmp / f"emb-{runtime}"), onnx_dir=str(tmp / "onnx"), device="cpu")
    v.model.load()
    v.model.load_weights()
    v.selector.encode(["warm up the selector"], "query")  # loading the embedding model is not per-case work
    return v


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cap", type=int, default=300, help="SummEdits cases per development domain")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--single", type=int, default=60, help="cases verified one at a time")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--no-onnx", action="store_true")
    ap.add_argument("--out", default=None, help="also write the figures to this JSON file")
    args = ap.parse_args()
    import torch

    torch.set_num_threads(args.threads)
    data = cases(args.cap)
    runtimes = ["torch"] if args.no_onnx else ["torch", "onnx"]
    with tempfile.TemporaryDirectory() as tmp:
        vs = {rt: verifier(rt, Path(tmp)) for rt in runtimes}
        sent: list = []
        inner = vs["torch"].model.logits
        vs["torch"].model.logits = lambda pairs: (sent.extend(pairs), inner(pairs))[1]
        per_case = {rt: [] for rt in runtimes}
        total = {rt: 0.0 for rt in runtimes}
        scores = {rt: [] for rt in runtimes}
        for lo in range(0, len(data), args.batch):
            batch = data[lo:lo + args.batch]
            for rt in runtimes:  # alternating batch by batch: both meet the same load
                t = time.perf_counter()
                out = vs[rt].verify(batch)
                wall = time.perf_counter() - t
                per_case[rt].append(1000 * wall / len(batch))
                total[rt] += wall
                scores[rt] += [v.score for v in out]
                assert not any(v.error for v in out), [v.error for v in out if v.error][:1]
        single = {rt: [] for rt in runtimes}
        fresh = {rt: verifier(rt, Path(tmp) / "single") for rt in runtimes}
        for c in data[:args.single]:
            for rt in runtimes:
                t = time.perf_counter()
                fresh[rt].verify([c])
                single[rt].append(1000 * (time.perf_counter() - t))
        y = np.array([bool(c.label) for c in data])
        result = {"cases": len(data), "domains": sorted({c.doc_type for c in data}), "threads": args.threads,
                  "batch": args.batch, "options": {k: vs["torch"].options.model_dump()[k] for k in
                                                   ("model", "window_tokens", "top_k_windows", "claim_reduce")}}
        for rt in runtimes:
            result[rt] = {"median_ms_per_case": round(statistics.median(per_case[rt]), 1),
                          "mean_ms_per_case": round(1000 * total[rt] / len(data), 1),
                          "single_case_median_ms": round(statistics.median(single[rt]), 1),
                          "auroc": round(float(auroc(y, np.array(scores[rt]))), 4)}
        if "onnx" in runtimes:
            result["raw"] = raw_throughput(vs["torch"], vs["onnx"], sent)
            result["onnx_vs_torch"] = {
                "throughput_ratio": round(result["raw"]["onnx_pairs_per_s"] / result["raw"]["torch_pairs_per_s"], 2),
                "case_latency_ratio": round(result["torch"]["median_ms_per_case"] / result["onnx"]["median_ms_per_case"], 2),
                "auroc_difference": round(result["onnx"]["auroc"] - result["torch"]["auroc"], 4)}
    print(json.dumps(result, indent=2))
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")


def raw_throughput(tv, ov, pairs: list, chunk: int = 256) -> dict:
    """The same pairs through both runtimes' forward passes (features made once), chunk by chunk."""
    pairs = list(dict.fromkeys(pairs))
    features, _, _ = tv.model._fit(pairs)
    secs = {"torch": 0.0, "onnx": 0.0}
    for lo in range(0, len(features), chunk):
        part = features[lo:lo + chunk]
        order = np.argsort([len(f["input_ids"]) for f in part], kind="stable")
        for rt, fwd in (("torch", tv.model._forward), ("onnx", ov.model._forward_onnx)):
            t = time.perf_counter()
            fwd(part, order)
            secs[rt] += time.perf_counter() - t
    return {"pairs": len(features), "torch_pairs_per_s": round(len(features) / secs["torch"], 1),
            "onnx_pairs_per_s": round(len(features) / secs["onnx"], 1)}


if __name__ == "__main__":
    main()
