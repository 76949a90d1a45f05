"""Refund knowledge graph speed: derive every value for 100k orders, then check 1,000 claims in one batch.

    python benchmarks/bench_graph.py [--orders 100000] [--claims 1000] [--repeats 3] [--live]

Targets (issue #5): derivation of all values for 100k orders <= 5 s; one batch of 1,000 claims checked
after derivation <= 100 ms. On RelationalAI's local DuckDB backend (relationalai 1.37.0), in one run:

- build: the facts (seeded synthetic orders over the four policies of datasets/refunds) loaded as DuckDB
  tables and the rules of rules.py added to a fresh model (no query yet);
- derive: `Checker.prepare()` on that graph: the model deploys, one RelationalAI query derives every
  value of every order (9 per order with a policy), one more reads the order facts for proof traces,
  and both go into the in-process table gate 2 joins against. `derive query` is the first of those
  queries alone (deploy included);
- check: gate 1 (pydantic) and gate 2 (one join, statuses and proof traces) on a batch of 1,000 claims
  (a mix of correct, wrong and unknown-order claims), median of 20 batches after derivation;
- `--live`: the same batch as one live RelationalAI query (mode `live`), which re-runs the rules each
  time because the DuckDB backend publishes derived relations as views.

A fresh graph is built for each repeat (derived tables are fixed at deploy); the fastest and the median
repeat are printed.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

import numpy as np
import pandas as pd

from verifybench.verifiers.graph.claims import gate1
from verifybench.verifiers.graph.entailment import Checker
from verifybench.verifiers.graph.facts import Facts
from verifybench.verifiers.graph.kg import KnowledgeGraph

POLICIES = pd.DataFrame({
    "policy_id": ["P-BRONZE", "P-SILVER", "P-GOLD", "P-PLATINUM"], "tier": ["BRONZE", "SILVER", "GOLD", "PLATINUM"],
    "return_window_days": [14, 21, 30, 45], "restocking_fee_pct": [15, 10, 5, 0],
    "refund_method": ["STORE_CREDIT", "STORE_CREDIT", "ORIGINAL_PAYMENT", "ORIGINAL_PAYMENT"],
    "shipping_refundable": [False, False, True, True], "retroactive_bereavement": [False] * 4,
})
CLAIM_VALUES = {"customer_tier": ["GOLD", "SILVER"], "refund_method": ["STORE_CREDIT", "ORIGINAL_PAYMENT"],
                "refund_eligible": [True, False], "refund_amount": ["129.99", "12.50"],
                "restocking_fee": ["0", "6.50"], "return_window_days": [14, 30], "shipping_refundable": [True, False],
                "defective": [False, True], "bereavement_refund": [False, True]}


def synthetic_facts(n_orders: int, seed: int = 0) -> Facts:
    rng = np.random.default_rng(seed)
    n_customers = max(1, n_orders // 4)
    customers = pd.DataFrame({"customer_id": [f"C-{i}" for i in range(n_customers)], "name": "customer",
                              "tier": POLICIES["tier"].to_numpy()[rng.integers(0, 4, n_customers)]})
    orders = pd.DataFrame({
        "order_id": [f"A-{i}" for i in range(n_orders)],
        "customer_id": [f"C-{i}" for i in rng.integers(0, n_customers, n_orders)],
        "amount_cents": rng.integers(500, 50_000, n_orders), "shipping_cents": rng.integers(0, 1_500, n_orders),
        "final_sale": rng.random(n_orders) < 0.2, "defective": rng.random(n_orders) < 0.1,
        "days_since_delivery": rng.integers(0, 60, n_orders),
    })
    return Facts(customers, orders, POLICIES.copy())


def claim_batch(n_claims: int, n_orders: int, seed: int) -> list[dict]:
    rng = random.Random(seed)
    types = list(CLAIM_VALUES)
    out = []
    for _ in range(n_claims):
        t = rng.choice(types)
        subject = f"A-{rng.randrange(n_orders)}" if rng.random() > 0.05 else f"A-missing-{rng.randrange(10**6)}"
        out.append({"claim_type": t, "subject_id": subject, "value": rng.choice(CLAIM_VALUES[t]), "evidence": "bench"})
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--orders", type=int, default=100_000)
    ap.add_argument("--claims", type=int, default=1_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--live", action="store_true", help="also time one batch as a live RelationalAI query")
    args = ap.parse_args()

    facts = synthetic_facts(args.orders)
    raw = claim_batch(args.claims, args.orders, seed=1)
    builds, derives, queries, checks, gates = [], [], [], [], []
    for rep in range(args.repeats):
        t0 = time.perf_counter()
        kg = KnowledgeGraph(facts)
        t1 = time.perf_counter()
        checker = Checker(kg)
        checker.prepare()
        t2 = time.perf_counter()
        builds.append(t1 - t0)
        derives.append(t2 - t1)
        # The derivation query alone, on a graph of its own (deploy included, as in `prepare`).
        kg2 = KnowledgeGraph(facts)
        t3 = time.perf_counter()
        n_values = len(kg2.derived())
        queries.append(time.perf_counter() - t3)
        del kg2
        for _ in range(20):
            g0 = time.perf_counter()
            accepted, _rejected = gate1(raw)
            g1 = time.perf_counter()
            results = checker.check(accepted)
            g2 = time.perf_counter()
            gates.append(g1 - g0)
            checks.append(g2 - g0)
        statuses = {s: sum(r.status == s for r in results) for s in ("entailed", "contradicted", "unsupported", "conflict")}
        print(f"repeat {rep + 1}: build {t1 - t0:.2f} s, derive {t2 - t1:.2f} s ({n_values:,} values), "
              f"derive query alone {queries[-1]:.2f} s, check median {statistics.median(checks[-20:]) * 1000:.1f} ms",
              flush=True)

    def show(xs, unit="s", scale=1.0):
        return f"min {min(xs) * scale:.{1 if unit == 'ms' else 2}f} {unit}, median {statistics.median(xs) * scale:.{1 if unit == 'ms' else 2}f} {unit}"

    print(f"\n{args.orders:,} orders, {args.claims:,} claims per batch, {args.repeats} repeats")
    print(f"build (load facts, define rules): {show(builds)}")
    print(f"derive all values (deploy + derivation + order facts into the gate-2 table): {show(derives)}  [target <= 5 s]")
    print(f"  of which the derivation query alone: {show(queries)}")
    print(f"check {args.claims:,} claims (gate 1 + gate 2, one query): {show(checks, 'ms', 1000)}  [target <= 100 ms]")
    print(f"  of which gate 1: {show(gates, 'ms', 1000)}")
    print(f"statuses of the batch: {statuses}")
    if args.live:
        live = Checker(kg, mode="live")
        live.prepare()
        accepted, _ = gate1(raw)
        live.check(accepted)  # compile once
        t0 = time.perf_counter()
        live.check(accepted)
        print(f"live mode, one RelationalAI query per batch: {(time.perf_counter() - t0) * 1000:.0f} ms")


if __name__ == "__main__":
    main()
