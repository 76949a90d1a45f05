"""Knowledge-graph speed, per domain pack: derive every value for 100k subjects, check 1,000 claims in one
batch, and read 1,000 prose answers (pattern extractor + gate 1 + gate 2) after the graph is derived.

    python benchmarks/bench_graph.py [--entities 100000] [--claims 1000] [--prose 1000] [--repeats 3]
                                     [--domains refunds leave] [--live]

Targets: derivation of all values for 100k orders <= 5 s and one batch of 1,000 claims <= 100 ms (issue
#5); 1,000 prose answers through the pattern extractor and the graph in under 2 s after derivation, and
the leave domain's derivation at 100k requests within 2x the refund domain's, both measured in the same
run (issue #20). On RelationalAI's local DuckDB backend (relationalai 1.37.0):

- build: the facts (seeded synthetic subjects over the pack's policies or plans) loaded as DuckDB tables
  and the pack's rules added to a fresh model (no query yet);
- derive: `Checker.prepare()` on that graph: the model deploys, one RelationalAI query derives every
  value of every subject, the facts proofs show are formatted, and both go into the in-process table
  gate 2 joins against. `derive query` is the first of those queries alone (deploy included);
- check: gate 1 (pydantic) and gate 2 (one join, statuses and proof traces) on a batch of claims (a mix of
  correct, wrong and unknown-subject claims), median of 20 batches after derivation;
- prose: the pack's pattern extractor on 1,000 prose answers (the datasets' own answers, each pointed at a
  random synthetic subject), then gate 1 and gate 2 on everything extracted, median of 5;
- `--live`: the same claim batch as one live RelationalAI query (mode `live`), which re-runs the rules
  each time because the DuckDB backend publishes derived relations as views.

A fresh graph is built for each repeat (derived tables are fixed at deploy); the fastest and the median
repeat are printed.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import random
import re
import statistics
import time
from pathlib import Path

import numpy as np
import pandas as pd

from verifybench.verifiers.graph.claims import gate1
from verifybench.verifiers.graph.entailment import Checker
from verifybench.verifiers.graph.facts import Facts
from verifybench.verifiers.graph.kg import KnowledgeGraph
from verifybench.verifiers.graph.pack import load_pack
from verifybench.verifiers.graph.prose import RulesExtractor

ROOT = Path(__file__).resolve().parents[1]

# --- refunds ----------------------------------------------------------------------------------------------
POLICIES = pd.DataFrame({
    "policy_id": ["P-BRONZE", "P-SILVER", "P-GOLD", "P-PLATINUM"], "tier": ["BRONZE", "SILVER", "GOLD", "PLATINUM"],
    "return_window_days": [14, 21, 30, 45], "restocking_fee_pct": [15, 10, 5, 0],
    "refund_method": ["STORE_CREDIT", "STORE_CREDIT", "ORIGINAL_PAYMENT", "ORIGINAL_PAYMENT"],
    "shipping_refundable": [False, False, True, True], "retroactive_bereavement": [False] * 4,
})
REFUND_VALUES = {"customer_tier": ["GOLD", "SILVER"], "refund_method": ["STORE_CREDIT", "ORIGINAL_PAYMENT"],
                 "refund_eligible": [True, False], "refund_amount": ["129.99", "12.50"],
                 "restocking_fee": ["0", "6.50"], "return_window_days": [14, 30], "shipping_refundable": [True, False],
                 "defective": [False, True], "bereavement_refund": [False, True]}


def refund_facts(n: int, seed: int = 0) -> Facts:
    rng = np.random.default_rng(seed)
    n_customers = max(1, n // 4)
    customers = pd.DataFrame({"customer_id": [f"C-{i}" for i in range(n_customers)], "name": "customer",
                              "tier": POLICIES["tier"].to_numpy()[rng.integers(0, 4, n_customers)]})
    orders = pd.DataFrame({
        "order_id": [f"A-{i}" for i in range(n)],
        "customer_id": [f"C-{i}" for i in rng.integers(0, n_customers, n)],
        "amount_cents": rng.integers(500, 50_000, n), "shipping_cents": rng.integers(0, 1_500, n),
        "final_sale": rng.random(n) < 0.2, "defective": rng.random(n) < 0.1,
        "days_since_delivery": rng.integers(0, 60, n),
    })
    return Facts(load_pack("refunds"), {"customers": customers, "orders": orders, "policies": POLICIES.copy()})


# --- leave ------------------------------------------------------------------------------------------------
LEAVE_PACK = ROOT / "datasets/leave/pack"
LEAVE_VALUES = {"contract_type": ["FULL_TIME", "PART_TIME"], "notice_days": [14, 30], "remaining_days": [5, 20],
                "leave_approved": [True, False], "return_date": ["2026-03-20", "2026-07-01"],
                "leave_pay": ["999.95", "0"], "paid_leave": [True, False]}


def leave_facts(n: int, seed: int = 0) -> Facts:
    rng = np.random.default_rng(seed)
    plans = pd.read_csv(LEAVE_PACK / "facts/plans.csv")
    contracts = ["FULL_TIME", "PART_TIME", "FIXED_TERM"]
    n_emp = max(1, n // 4)
    day0 = dt.date(2026, 1, 5)
    hire = [day0 - dt.timedelta(days=int(d)) for d in rng.integers(0, 3000, n_emp)]
    employees = pd.DataFrame({"employee_id": [f"E-{i}" for i in range(n_emp)], "name": "employee",
                              "contract": np.array(contracts)[rng.integers(0, 3, n_emp)],
                              "hire_date": pd.Series(hire, dtype=object), "daily_rate_cents": rng.integers(9000, 45000, n_emp)})
    start = [day0 + dt.timedelta(days=int(d)) for d in rng.integers(0, 320, n)]
    notice = rng.integers(0, 40, n)
    requests = pd.DataFrame({
        "request_id": [f"L-{i}" for i in range(n)],
        "employee_id": [f"E-{i}" for i in rng.integers(0, n_emp, n)],
        "leave_type": np.array(["ANNUAL", "SICK", "PARENTAL"])[rng.integers(0, 3, n)],
        "submitted": pd.Series([s - dt.timedelta(days=int(k)) for s, k in zip(start, notice)], dtype=object),
        "start_date": pd.Series(start, dtype=object), "days": rng.integers(1, 30, n), "days_used": rng.integers(0, 25, n),
    })
    return Facts(load_pack(LEAVE_PACK), {"employees": employees, "plans": plans, "requests": requests})


DOMAINS = {"refunds": (refund_facts, REFUND_VALUES, "A", ROOT / "datasets/refunds/cases.jsonl"),
           "leave": (leave_facts, LEAVE_VALUES, "L", ROOT / "datasets/leave/cases.jsonl")}


def claim_batch(values: dict, prefix: str, n_claims: int, n_subjects: int, seed: int) -> list[dict]:
    rng = random.Random(seed)
    types = list(values)
    out = []
    for _ in range(n_claims):
        t = rng.choice(types)
        subject = f"{prefix}-{rng.randrange(n_subjects)}" if rng.random() > 0.05 else f"{prefix}-missing-{rng.randrange(10**6)}"
        out.append({"claim_type": t, "subject_id": subject, "value": rng.choice(values[t]), "evidence": "bench"})
    return out


def prose_batch(path: Path, prefix: str, n_answers: int, n_subjects: int, seed: int) -> list[tuple[str, str]]:
    """(question, answer) pairs: the dataset's own answers, each about a random synthetic subject."""
    rng = random.Random(seed)
    cases = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    ids = re.compile(rf"\b{prefix}-\d+\b")
    out = []
    for _ in range(n_answers):
        c = rng.choice(cases)
        subject = f"{prefix}-{rng.randrange(n_subjects)}"
        out.append((ids.sub(subject, c["question"]), ids.sub(subject, c["response"])))
    return out


def show(xs, unit="s"):
    scale, digits = (1000, 1) if unit == "ms" else (1, 2)
    return f"min {min(xs) * scale:.{digits}f} {unit}, median {statistics.median(xs) * scale:.{digits}f} {unit}"


def bench(name: str, args) -> dict:
    make, values, prefix, cases = DOMAINS[name]
    facts = make(args.entities)
    pack = facts.pack
    raw = claim_batch(values, prefix, args.claims, args.entities, seed=1)
    answers = prose_batch(cases, prefix, args.prose, args.entities, seed=2)
    extractor = RulesExtractor(pack)
    builds, derives, queries, checks, gates, proses, extracts = [], [], [], [], [], [], []
    for rep in range(args.repeats):
        t0 = time.perf_counter()
        kg = KnowledgeGraph(facts)
        t1 = time.perf_counter()
        checker = Checker(kg)
        checker.prepare()
        t2 = time.perf_counter()
        builds.append(t1 - t0)
        derives.append(t2 - t1)
        kg2 = KnowledgeGraph(facts)  # the derivation query alone, on a graph of its own (deploy included)
        t3 = time.perf_counter()
        n_values = len(kg2.derived())
        queries.append(time.perf_counter() - t3)
        del kg2
        for _ in range(20):
            g0 = time.perf_counter()
            accepted, _rejected = gate1(raw, pack)
            g1 = time.perf_counter()
            results = checker.check(accepted)
            checks.append(time.perf_counter() - g0)
            gates.append(g1 - g0)
        for _ in range(5):
            p0 = time.perf_counter()
            extracted = [extractor.extract(a, q).claims for q, a in answers]
            p1 = time.perf_counter()
            claims = [c for found in extracted for c in found]
            accepted, _ = gate1(claims, pack)
            prose_results = checker.check(accepted)
            proses.append(time.perf_counter() - p0)
            extracts.append(p1 - p0)
        print(f"{name} repeat {rep + 1}: build {t1 - t0:.2f} s, derive {t2 - t1:.2f} s ({n_values:,} values), derive "
              f"query alone {queries[-1]:.2f} s, check median {statistics.median(checks[-20:]) * 1000:.1f} ms, "
              f"prose median {statistics.median(proses[-5:]) * 1000:.0f} ms", flush=True)
    statuses = {s: sum(r.status == s for r in results) for s in ("entailed", "contradicted", "unsupported", "conflict")}
    print(f"\n{name}: {args.entities:,} subjects, {args.claims:,} claims per batch, {args.prose:,} prose answers "
          f"({len(claims):,} claims extracted), {args.repeats} repeats")
    print(f"  build (load facts, define rules): {show(builds)}")
    print(f"  derive all values (deploy + derivation + proof facts into the gate-2 table): {show(derives)}")
    print(f"    of which the derivation query alone: {show(queries)}")
    print(f"  check {args.claims:,} claims (gate 1 + gate 2, one query): {show(checks, 'ms')}")
    print(f"    of which gate 1: {show(gates, 'ms')}")
    print(f"  {args.prose:,} prose answers (extract + gate 1 + gate 2): {show(proses, 'ms')}  [target < 2 s]")
    print(f"    of which the pattern extractor: {show(extracts, 'ms')}")
    print(f"  statuses of the claim batch: {statuses}; of the prose claims: "
          f"{ {s: sum(r.status == s for r in prose_results) for s in statuses} }")
    if args.live:
        live = Checker(kg, mode="live")
        live.prepare()
        accepted, _ = gate1(raw, pack)
        live.check(accepted)  # compile once
        t0 = time.perf_counter()
        live.check(accepted)
        print(f"  live mode, one RelationalAI query per batch: {(time.perf_counter() - t0) * 1000:.0f} ms")
    return {"derive": derives, "query": queries, "check": checks, "prose": proses}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--entities", "--orders", type=int, default=100_000)
    ap.add_argument("--claims", type=int, default=1_000)
    ap.add_argument("--prose", type=int, default=1_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--domains", nargs="+", default=list(DOMAINS), choices=list(DOMAINS))
    ap.add_argument("--live", action="store_true", help="also time one batch as a live RelationalAI query")
    args = ap.parse_args()
    out = {name: bench(name, args) for name in args.domains}
    if {"refunds", "leave"} <= set(out):
        med = {n: statistics.median(out[n]["derive"]) for n in ("refunds", "leave")}
        q = {n: statistics.median(out[n]["query"]) for n in ("refunds", "leave")}
        print(f"\nleave / refunds derivation, medians in this run: {med['leave'] / med['refunds']:.2f}x "
              f"(derive {med['leave']:.2f} / {med['refunds']:.2f} s; derivation query alone "
              f"{q['leave'] / q['refunds']:.2f}x)  [target <= 2x]")


if __name__ == "__main__":
    main()
