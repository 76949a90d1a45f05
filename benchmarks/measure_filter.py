"""What the decision filter lets through, on units written to fool it (datasets/decision-adversarial).

Two ways of running the same requests, so a change is compared with the code before it:

    # the decision verifier's triage (`question: policy`, as evals/decision-adversarial.yaml sets it); runs on
    # any checkout that has the decision verifier, e.g. main before the context filter existed:
    PYTHONPATH=<checkout>/src python benchmarks/measure_filter.py --mode verifier
    # the context filter (guard.context_filter) at a filter policy (default: its defaults):
    python benchmarks/measure_filter.py --mode filter [--policy filter.yaml] [--allow-code helpers.guard_verifiers]

Requests: filter.jsonl (persuasive injections, chunks contradicting another chunk, citations that
contradict or support their claim, honest controls) and cases.jsonl's authority / safety / control probes.
Printed per family: what happened to the probe unit (kept, flagged = kept and marked, dropped, trimmed,
escalated), whether it was ranked first, and what happened to the honest units beside it; then the
summary: the share of injections that reached the context unmarked, of contradictions flagged, of
contradicting citations flagged (not escalated, not kept), and the honest units dropped or flagged.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "datasets" / "decision-adversarial"
ACTIONS = ("keep", "flag", "drop", "trim", "escalate")


def requests() -> list[dict]:
    """filter.jsonl as it is, and cases.jsonl's cases as requests (its probes: authority and safety should
    stay out, controls should be kept)."""
    out = [json.loads(line) for line in (DATA / "filter.jsonl").read_text(encoding="utf-8").splitlines()]
    for line in (DATA / "cases.jsonl").read_text(encoding="utf-8").splitlines():
        c = json.loads(line)
        units = [{"id": s["id"], "kind": s.get("kind", "chunk"), "text": s["text"]} for s in c["sources"]]
        out.append({"id": c["id"], "question": c["question"], "units": units, "probe": "probe",
                    "family": c["doc_type"], "expect": "out" if c["label"] else "keep", "topic": c["meta"]["topic"]})
    return out


def by_verifier(reqs: list[dict]) -> tuple[list[dict[str, dict]], list[float]]:
    """Each request through the decision verifier (`question: policy`, min_relevance 0.5): unit id ->
    {action, rank}."""
    from verifybench.cases import Case, Source
    from verifybench.verifiers import build

    v = build("decision", question="policy", policy={"min_relevance": 0.5}, audit_dir=str(ROOT / "reports" / "measure-filter"))
    cases = []
    for r in reqs:
        sources = [Source(id=u["id"], text=u["text"],
                          metadata={"kind": u["kind"], **({"claim": u["claim"]} if u.get("claim") else {}),
                                    "probe": u["id"] == r["probe"]}) for u in r["units"]]
        cases.append(Case(id=r["id"], dataset="adv", question=r["question"], response="", label=False, sources=sources))
    v.verify(cases[:1])  # warm-up
    out, times = [], []
    for c in cases:
        t0 = time.perf_counter()
        verdict = v.verify([c])[0]
        times.append((time.perf_counter() - t0) * 1000.0)
        got = {}
        for u in verdict.units or []:
            for sid in u.detail["sources"]:
                got[sid] = {"action": u.status, "rank": u.detail.get("rank")}
        out.append(got)
    return out, times


def by_filter(reqs: list[dict], policy: str | None, allow_code: list[str]) -> tuple[list[dict[str, dict]], list[float]]:
    from verifybench.guard.context_filter import ContextFilter

    out, times = [], []
    with ContextFilter(policy, log_dir=False, allow_code=allow_code) as f:
        for r in reqs:
            units = [{k: v for k, v in u.items() if k in ("id", "kind", "text", "claim")} for u in r["units"]]
            t0 = time.perf_counter()
            res = f.filter(units, question=r["question"])
            times.append((time.perf_counter() - t0) * 1000.0)
            out.append({o.id: {"action": o.action, "rank": o.rank} for o in res.units})
    return out, times


def summarise(reqs: list[dict], got: list[dict[str, dict]]) -> dict:
    probes: dict[str, Counter] = defaultdict(Counter)
    honest: dict[str, Counter] = defaultdict(Counter)
    first: Counter = Counter()
    for r, g in zip(reqs, got):
        p = g[r["probe"]]
        probes[r["family"]][p["action"]] += 1
        first[r["family"]] += p["rank"] == 1
        for uid, h in g.items():
            if uid != r["probe"]:
                honest[r["family"]][h["action"]] += 1

    def share(families: tuple[str, ...], actions: tuple[str, ...], where=probes) -> tuple[int, int]:
        n = sum(sum(where[f].values()) for f in families)
        return sum(where[f][a] for f in families for a in actions), n

    summary = {
        "injections in the context unmarked (persuasive + safety)": share(("persuasive", "safety"), ("keep",)),
        "injections in the context at all (kept or marked)": share(("persuasive", "safety"), ("keep", "flag")),
        "injections ranked first": (first["persuasive"] + first["safety"],
                                    sum(probes["persuasive"].values()) + sum(probes["safety"].values())),
        "off-topic authority probes in the context": share(("authority",), ("keep", "flag")),
        "contradicting chunks flagged": share(("contradiction",), ("flag",)),
        "contradicting citations flagged (or dropped)": share(("citation-contradicts",), ("flag", "drop")),
        "contradicting citations escalated": share(("citation-contradicts",), ("escalate",)),
        "contradicting citations kept unmarked": share(("citation-contradicts",), ("keep",)),
        "supporting citations kept": share(("citation-supports",), ("keep",)),
        "supporting citations flagged or dropped": share(("citation-supports",), ("flag", "drop")),
        "supporting citations escalated": share(("citation-supports",), ("escalate",)),
        "honest control probes dropped or trimmed": share(("control",), ("drop", "trim")),
        "honest control probes flagged": share(("control",), ("flag",)),
        "honest units beside the probes dropped": share(tuple(honest), ("drop",), honest),
        "honest units beside the probes flagged": share(tuple(honest), ("flag",), honest),
    }
    return {"probes": {f: dict(c) for f, c in probes.items()}, "ranked_first": dict(first),
            "honest": {f: dict(c) for f, c in honest.items()}, "summary": summary}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mode", choices=("verifier", "filter"), default="filter")
    ap.add_argument("--policy", help="a filter policy file (--mode filter)")
    ap.add_argument("--allow-code", action="append", default=[])
    ap.add_argument("--json", help="write the figures here too")
    args = ap.parse_args(argv)
    reqs = requests()
    t0 = time.perf_counter()
    got, times = by_verifier(reqs) if args.mode == "verifier" else by_filter(reqs, args.policy, args.allow_code)
    result = summarise(reqs, got)
    result["latency_ms"] = {"p50": statistics.median(times), "p95": sorted(times)[int(0.95 * (len(times) - 1))],
                            "requests": len(times), "wall_s": time.perf_counter() - t0}
    print(f"| family | probes | {' | '.join(ACTIONS)} | ranked first | honest beside: dropped / flagged |")
    print("|---|---|" + "---|" * (len(ACTIONS) + 2))
    for fam, c in result["probes"].items():
        h = result["honest"].get(fam, {})
        print(f"| {fam} | {sum(c.values())} | " + " | ".join(str(c.get(a, 0)) for a in ACTIONS)
              + f" | {result['ranked_first'].get(fam, 0)} | {h.get('drop', 0)} / {h.get('flag', 0)} |")
    print()
    for k, (x, n) in result["summary"].items():
        print(f"- {k}: {x}/{n} ({x / n:.3f})" if n else f"- {k}: none")
    lat = result["latency_ms"]
    print(f"- latency per request: p50 {lat['p50']:.1f} ms, p95 {lat['p95']:.1f} ms ({lat['requests']} requests)")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
