"""The compliance LLM extractor measured against the rules extractor on the bundled standards: criterion-level
precision and recall, per field, and what goes wrong.

    python benchmarks/measure_criteria.py                          # the local model (SmolLM2-135M, llama.cpp)
    python benchmarks/measure_criteria.py --backend openai --model gpt-4o-mini

Every standard excerpt of datasets/compliance/corpus.jsonl that sets requirements for one ingredient
(both editions where there are two) is given, alone, to each extractor. The rules extractor's checklist is
the reference (the excerpts are written in the labelled form it reads; tests/test_compliance.py checks it
by hand). A criterion is one prohibited aid, one permitted carrier, one required test (each compared as
its set of content words, synonyms folded: "pork gelatine" = "gelatin (pork)"), or the threshold (value in
mg/kg within 1e-9, and its analyte). Also counted: replies that are not the schema's JSON (an error
verdict in a run), replies saying the excerpt has no requirements for the ingredient, and criteria whose
words appear on no line of the excerpt (no clause can be found for them: made up, or reworded).
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter
from pathlib import Path

from verifybench.verifiers.compliance.criteria import (
    LLMExtractor,
    RuleExtractor,
    VerificationCriterion,
)
from verifybench.verifiers.compliance.store import load_corpus
from verifybench.verifiers.compliance.terms import tokens
from verifybench.verifiers.llm import LLMOptions, track_usage

ROOT = Path(__file__).resolve().parents[1]
FIELDS = {"prohibited_processing_aids": "aid", "carrier_restrictions": "carrier", "required_lab_tests": "test"}


def criteria_set(c: VerificationCriterion | None) -> set[tuple]:
    if c is None:
        return set()
    out = {(kind, frozenset(tokens(item))) for field, kind in FIELDS.items() for item in getattr(c, field)}
    if c.max_threshold_ppm is not None:
        out.add(("threshold", round(float(c.max_threshold_ppm), 9), frozenset(tokens(c.threshold_analyte or ""))))
    return out


def show(item: tuple) -> str:
    if item[0] == "threshold":
        return f"threshold {item[1]:g} mg/kg of {' '.join(sorted(item[2]))}"
    return f"{item[0]} {' '.join(sorted(item[1]))}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, default=ROOT / "datasets/compliance/corpus.jsonl")
    ap.add_argument("--backend", default="local", choices=["local", "openai", "anthropic", "llamacpp"])
    ap.add_argument("--model", default="smollm2")
    ap.add_argument("--base-url", default=None)
    ap.add_argument("--api-key-env", default=None, help="environment variable holding the key (never the key)")
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds per attempt (a loaded CPU is slow)")
    ap.add_argument("--cache-dir", default=None, help="the LLM layer's replay cache (a rerun replays it)")
    ap.add_argument("--limit", type=int, default=0, help="only the first N excerpts")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()

    # The client the compliance verifier's `llm:` option builds (the LLM layer: retries, cache, usage, scrubbing).
    options = LLMOptions(backend=args.backend, model=args.model, base_url=args.base_url, api_key_env=args.api_key_env,
                         timeout_s=args.timeout, cache_dir=args.cache_dir)
    llm, rules = LLMExtractor(options.client()), RuleExtractor()
    docs = [d for d in load_corpus(args.corpus) if d.doc_type == "standard" and d.metadata.get("ingredient")]
    if args.limit:
        docs = docs[:args.limit]
    tp, fp, fn = Counter(), Counter(), Counter()
    modes, examples = Counter(), []
    t0 = time.perf_counter()
    # Every call the extractor makes (requests, retries, tokens), whether or not its reply is usable.
    with track_usage() as usage:
        for doc in docs:
            ingredient, code = doc.metadata["ingredient"], doc.metadata.get("ingredient_code")
            ref = criteria_set(rules.extract(ingredient, [doc], code))
            try:
                found = llm.extract(ingredient, [doc], code)
            except Exception as e:  # noqa: BLE001 - counted: in a run this is the case's error verdict
                modes["reply not the schema's JSON (error verdict)"] += 1
                examples.append({"doc": doc.id, "error": str(e)[:300]})
                fn.update(kind for kind, *_ in ref)
                continue
            if found is None:
                modes["said the excerpt sets no requirement for the ingredient"] += 1
            else:
                unplaced = [item for field in ("prohibited_processing_aids", "required_lab_tests")
                            for item in getattr(found, field) if found.ref(field, item) is None]
                modes["criteria on no line of the excerpt (no clause found)"] += len(unplaced)
            got = criteria_set(found)
            for item in got & ref:
                tp[item[0]] += 1
            for item in got - ref:
                fp[item[0]] += 1
            for item in ref - got:
                fn[item[0]] += 1
            if got != ref and len(examples) < 12:
                examples.append({"doc": doc.id, "extra": sorted(map(show, got - ref)), "missed": sorted(map(show, ref - got))})
    seconds = time.perf_counter() - t0

    def pr(t, f, n):
        return {"precision": t / (t + f) if t + f else 0.0, "recall": t / (t + n) if t + n else 0.0, "tp": t, "fp": f,
                "fn": n}

    kinds = ["aid", "carrier", "test", "threshold"]
    result = {"excerpts": len(docs), "backend": args.backend, "model": args.model, "seconds": round(seconds, 1),
              "overall": pr(sum(tp.values()), sum(fp.values()), sum(fn.values())),
              "per_kind": {k: pr(tp[k], fp[k], fn[k]) for k in kinds}, "failure_modes": dict(modes),
              "usage": usage.as_dict(), "examples": examples}
    print(f"{len(docs)} standard excerpts, LLM extractor ({args.backend} {args.model}) against the rules extractor, "
          f"{seconds:.0f} s; {usage.requests} requests, {usage.retries} retries, {usage.cache_hits} cache hits, "
          f"{usage.input_tokens} + {usage.output_tokens} tokens")
    print(f"{'criteria':<10} {'precision':>9} {'recall':>7} {'tp':>4} {'fp':>4} {'fn':>4}")
    for k, r in [("all", result["overall"]), *result["per_kind"].items()]:
        print(f"{k:<10} {r['precision']:>9.3f} {r['recall']:>7.3f} {r['tp']:>4} {r['fp']:>4} {r['fn']:>4}")
    for mode, n in modes.items():
        print(f"  {mode}: {n}")
    for e in examples[:6]:
        print("  ", json.dumps(e)[:400])
    if args.out:
        args.out.write_text(json.dumps(result, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
