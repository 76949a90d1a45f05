"""Claims from prose, measured: claim-level precision/recall of the claim extractors against each dataset's
structured claims, and the `graph` verifier's AUROC and test F1 from prose against from the given claims.

    python benchmarks/measure_extraction.py                       # the pattern extractor, both domains, all cases
    python benchmarks/measure_extraction.py --llm --sample 64     # also the LLM extractor (the local model by
                                                                  # default: SmolLM2-135M on llama.cpp's server)
    python benchmarks/measure_extraction.py --llm --llm-backend openai --llm-model gpt-4o-mini

A claim counts as found when the extractor gives one with the same claim type, subject and normalised
value (gate 1's normal form, so "$129.48" = "129.48"); an extracted claim that gate 1 rejects counts as a
wrong one. "type + subject" counts a claim found when its type and subject match, whatever its value.
AUROC is over all scored cases; F1 is on the test split at the threshold the metrics layer fits on the
calibration split (F1-optimal), as in every suite. The LLM extractor runs on a seeded sample (`--sample`,
the same cases for the given-claims and pattern rows of that sample) because a CPU model is slow; its
fitted threshold needs `--min-per-class` cases of each class on the calibration side of the sample.
"""

from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path

from verifybench.cases import Case
from verifybench.metrics.summary import Settings, compute_metrics
from verifybench.verifiers.graph.claims import gate1
from verifybench.verifiers.graph.pack import load_pack
from verifybench.verifiers.graph.verifier import GraphVerifier

ROOT = Path(__file__).resolve().parents[1]
DOMAINS = {"refunds": ("refunds", ROOT / "datasets/refunds/cases.jsonl"),
           "leave": (str(ROOT / "datasets/leave/pack"), ROOT / "datasets/leave/cases.jsonl")}


def load(path: Path) -> list[Case]:
    return [Case(dataset=path.parent.name, **json.loads(line)) for line in path.read_text(encoding="utf-8").splitlines()]


def triples(raw: list, pack) -> tuple[set, int]:
    """Normalised (type, subject, value) of the claims gate 1 accepts, and how many it rejected."""
    accepted, rejected = gate1(raw, pack) if raw else ([], [])
    return {(c.claim_type, c.subject_id, c.normalised) for _, c in accepted}, len([r for r in rejected if r.index >= 0])


def extraction(cases: list[Case], verdicts: list, pack) -> dict:
    tp = fp = fn = tp_ts = fp_ts = fn_ts = problems = 0
    for case, v in zip(cases, verdicts):
        gold, _ = triples(case.claims, pack)
        got, bad = triples(v.detail.get("extracted") or [], pack) if v.ok else (set(), 0)
        problems += bool(v.ok and any(u.evidence and u.evidence.startswith("claim extraction:") for u in v.units))
        tp, fp, fn = tp + len(gold & got), fp + len(got - gold) + bad, fn + len(gold - got)
        g2, e2 = {t[:2] for t in gold}, {t[:2] for t in got}
        tp_ts, fp_ts, fn_ts = tp_ts + len(g2 & e2), fp_ts + len(e2 - g2) + bad, fn_ts + len(g2 - e2)

    def pr(t, f, n):
        return {"precision": t / (t + f) if t + f else 0.0, "recall": t / (t + n) if t + n else 0.0}

    return {"claims": pr(tp, fp, fn), "type_subject": pr(tp_ts, fp_ts, fn_ts), "gold": tp + fn,
            "extracted": tp + fp, "unreadable_replies": problems, "errors": sum(not v.ok for v in verdicts)}


def quality(cases: list[Case], verdicts: list, min_per_class: int) -> dict:
    m = compute_metrics([c.model_dump() for c in cases], verdicts, Settings(by="doc_type", min_per_class=min_per_class))
    overall = next(iter(m["verifiers"].values()))["overall"]
    test = overall.get("test") or {}
    return {"auroc": overall["auroc"], "test_f1": test.get("f1"), "test_precision": test.get("precision"),
            "test_recall": test.get("recall"), "threshold": overall["threshold"]["value"]}


def run(domain: str, cases: list[Case], **options) -> tuple[list, float]:
    verifier = GraphVerifier(id=options.pop("id"), domain=domain, **options)
    t0 = time.perf_counter()
    verdicts = verifier.verify(cases)
    return verdicts, time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--domains", nargs="+", default=list(DOMAINS), choices=list(DOMAINS))
    ap.add_argument("--llm", action="store_true", help="also measure the LLM extractor")
    ap.add_argument("--llm-backend", default="local", choices=["local", "openai", "anthropic", "llamacpp"])
    ap.add_argument("--llm-model", default="smollm2")
    ap.add_argument("--llm-base-url", default=None)
    ap.add_argument("--llm-api-key-env", default=None, help="environment variable holding the key (never the key)")
    ap.add_argument("--llm-timeout", type=float, default=300.0, help="seconds per attempt (a loaded CPU is slow)")
    ap.add_argument("--llm-max-tokens", type=int, default=256)
    ap.add_argument("--llm-repairs", type=int, default=1, help="repair requests after a reply that is not the JSON")
    ap.add_argument("--llm-cache-dir", default=None, help="the LLM layer's replay cache (a rerun replays it)")
    ap.add_argument("--sample", type=int, default=64, help="cases per domain for the LLM extractor (0 = all)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--min-per-class", type=int, default=5, help="for the threshold fitted on the LLM sample")
    ap.add_argument("--out", type=Path, default=None, help="write the results as JSON here")
    args = ap.parse_args()

    results = {}
    for name in args.domains:
        domain, path = DOMAINS[name]
        pack, cases = load_pack(domain), load(path)
        rows = {}
        given, t_given = run(domain, cases, id="graph")
        prose, t_prose = run(domain, cases, id="graph-prose", claims="from_response")
        rows["given claims"] = {"cases": len(cases), **quality(cases, given, 30), "seconds": t_given}
        rows["prose, patterns"] = {"cases": len(cases), **quality(cases, prose, 30), "seconds": t_prose,
                                   "extraction": extraction(cases, prose, pack)}
        if args.llm:
            sample = cases if not args.sample else random.Random(args.seed).sample(cases, min(args.sample, len(cases)))
            # The verifier's own `llm:` options: its client is the LLM layer's (retries, cache, usage, scrubbing).
            llm = {"backend": args.llm_backend, "model": args.llm_model, "base_url": args.llm_base_url,
                   "api_key_env": args.llm_api_key_env, "timeout_s": args.llm_timeout,
                   "max_tokens": args.llm_max_tokens, "repairs": args.llm_repairs, "cache_dir": args.llm_cache_dir}
            sub_given = [given[cases.index(c)] for c in sample]
            sub_prose = [prose[cases.index(c)] for c in sample]
            by_llm, t_llm = run(domain, sample, id="graph-prose-llm", claims="from_response", extractor="llm", llm=llm)
            k = args.min_per_class
            rows["sample: given claims"] = {"cases": len(sample), **quality(sample, sub_given, k)}
            rows["sample: prose, patterns"] = {"cases": len(sample), **quality(sample, sub_prose, k),
                                               "extraction": extraction(sample, sub_prose, pack)}
            rows[f"sample: prose, LLM ({args.llm_backend} {args.llm_model})"] = {
                "cases": len(sample), **quality(sample, by_llm, k), "seconds": t_llm,
                "extraction": extraction(sample, by_llm, pack),
                "usage": {key: sum((v.usage or {}).get(key, 0) for v in by_llm)
                          for key in ("requests", "retries", "repairs", "failures", "cache_hits", "input_tokens",
                                      "output_tokens")}}
            results[f"{name}/llm_examples"] = [
                {"case": c.id, "response": c.response, "extracted": v.detail.get("extracted"), "error": v.error,
                 "rejected": [u.evidence for u in (v.units or []) if u.status == "rejected"]}
                for c, v in zip(sample, by_llm)]
        results[name] = rows
        print(f"\n== {name} ({len(cases)} cases)")
        print(f"{'claims from':<42} {'cases':>5} {'AUROC':>6} {'test F1':>7} {'claim P':>7} {'claim R':>7} "
              f"{'type+subj P':>11} {'type+subj R':>11}")
        for label, r in rows.items():
            e = r.get("extraction")
            ext = (f"{e['claims']['precision']:>7.3f} {e['claims']['recall']:>7.3f} "
                   f"{e['type_subject']['precision']:>11.3f} {e['type_subject']['recall']:>11.3f}") if e else ""
            f1 = "-" if r["test_f1"] is None else f"{r['test_f1']:.3f}"
            print(f"{label:<42} {r['cases']:>5} {r['auroc']:>6.3f} {f1:>7} {ext}")
            if e and (e["unreadable_replies"] or e["errors"]):
                print(f"{'':<42} unreadable replies: {e['unreadable_replies']}, error verdicts: {e['errors']}")
            if r.get("usage"):
                print(f"{'':<42} LLM calls: " + ", ".join(f"{k} {v:g}" for k, v in r["usage"].items()))
    if args.out:
        args.out.write_text(json.dumps(results, indent=1, default=str), encoding="utf-8")


if __name__ == "__main__":
    main()
