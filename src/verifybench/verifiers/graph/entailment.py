"""Gate 2: every accepted claim of a batch checked against the knowledge graph in one query.

Each claim gets a status:

- `entailed`: the graph derives exactly one value and it equals the claim's (after normalisation);
- `contradicted`: the graph derives exactly one value and it differs;
- `unsupported`: no such order in the graph, or no rule derives that claim type for it (for example no
  refund policy covers the customer's tier);
- `conflict`: the graph itself derives two or more different values (e.g. two policies for one tier):
  the knowledge graph is inconsistent, and no value is picked silently.

Each result carries the expected value(s) and a proof trace: the rule(s) that produced each value, in
words, and the facts they read, as the graph holds them.

Two ways to run the one query per batch (`mode`):

- `materialised` (default): the graph derives every value of every order once (one RelationalAI query,
  plus one for the order facts), kept in an in-process DuckDB table; each batch is then one join of the
  claims with it on (subject, claim type), packed into one integer key. RelationalAI's DuckDB backend publishes derived relations as
  views, so without this every query re-runs every rule over every order (about 3 s per batch at 100k
  orders, against milliseconds). Works with any RelationalAI connection: only the results come back.
- `live`: each batch is written to the graph's claims table and joined with `Order.derives` in one
  RelationalAI query. Local DuckDB only (the claims table lives there); slower, always current.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from verifybench.verifiers.graph.claims import Claim, display
from verifybench.verifiers.graph.kg import KnowledgeGraph
from verifybench.verifiers.graph.rules import CLAIM_TYPES, NO_POLICY, RULES

STATUSES = ("entailed", "contradicted", "unsupported", "conflict", "rejected")
MODES = ("materialised", "live")

# Order facts returned with each derived value (column -> fact name in rules.RULES).
FACT_COLUMNS = {"customer_id": "order.customer_id", "tier": "customer.tier", "amount_cents": "order.amount",
                "shipping_cents": "order.shipping", "final_sale": "order.final_sale", "defective": "order.defective",
                "days_since_delivery": "order.days_since_delivery"}
_MONEY_FACTS = {"order.amount", "order.shipping"}
# How the materialised store writes each fact as text (as fact_text does in Python).
_SQL_TEXT = {"customer_id": "{col}", "tier": "{col}",
             "amount_cents": "printf('%d.%02d', {col} // 100, {col} % 100)",
             "shipping_cents": "printf('%d.%02d', {col} // 100, {col} % 100)",
             "final_sale": "case when {col} then 'true' else 'false' end",
             "defective": "case when {col} then 'true' else 'false' end",
             "days_since_delivery": "cast({col} as varchar)"}
_TYPE_CODE = {t: i for i, t in enumerate(CLAIM_TYPES)}
assert len(_TYPE_CODE) < 16, "the join key packs the claim type into 4 bits"


@dataclass
class ClaimCheck:
    """Gate 2's answer for one claim.

    Attributes:
        index: the claim's position in the list the model emitted.
        expected: the graph's value(s) in display form; two or more only on `conflict`.
        proof: {"order_id", "steps": [{rule, statement, value, policy_id, facts}]}.
    """

    index: int
    claim: Claim
    status: str
    expected: list[str] = field(default_factory=list)
    reason: str = ""
    proof: dict[str, Any] = field(default_factory=dict)


class Checker:
    """Checks batches of claims against one knowledge graph.

    Args:
        kg: the knowledge graph; its model deploys on the first check (or `prepare`).
        mode: `materialised` or `live` (see the module docstring).
    """

    def __init__(self, kg: KnowledgeGraph, mode: str = "materialised"):
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
        if mode == "live" and not kg.local:
            raise ValueError("mode 'live' needs the local DuckDB backend (its claims table); use 'materialised'")
        self.kg, self.mode = kg, mode
        self._orders: set[str] | None = None
        self._order_key: dict[str, int] = {}
        self._policies: dict[str, dict] = {}
        self._store = None  # in-process DuckDB holding the derived values (materialised mode)
        self._store_lock = threading.Lock()
        self._live_query = self._build_live_query() if mode == "live" else None

    def _build_live_query(self):
        from relationalai.semantics import String

        g, claims = self.kg.graph, self.kg.claims
        O, c = g.Order, g.Customer.ref()
        ct, val, rule, pid = String.ref(), String.ref(), String.ref(), String.ref()
        return self.kg.model.where(
            O.derives(ct, val, rule, pid), O.order_id == claims.subject_id, ct == claims.claim_type, O.customer(c),
        ).select(
            claims.idx.alias("idx"), val.alias("expected"), rule.alias("rule"), pid.alias("policy_id"),
            c.customer_id.alias("customer_id"), c.tier.alias("tier"), O.amount_cents.alias("amount_cents"),
            O.shipping_cents.alias("shipping_cents"), O.final_sale.alias("final_sale"),
            O.defective.alias("defective"), O.days_since_delivery.alias("days_since_delivery"),
        )

    def prepare(self) -> None:
        """Deploy the graph and read what every batch needs: the order ids, the policies, and (materialised
        mode) every derived value with its order's facts. Idempotent."""
        if self._orders is not None:
            return
        policies = self.kg.policies()
        if self.mode == "materialised":
            import duckdb

            derived = self.kg.derived()
            facts = self.kg.order_facts().sort_values("order_id", ignore_index=True)
            self._order_key = {oid: i for i, oid in enumerate(facts["order_id"])}
            # Integer keys (order number x 16 + claim type) make the batch join about 3x faster than on
            # text, and categoricals (DuckDB enums) load about 10x faster than pandas strings.
            okey = pd.Categorical(derived["order_id"], categories=facts["order_id"]).codes.astype(np.int64)
            code = pd.Categorical(derived["claim_type"], categories=list(CLAIM_TYPES)).codes.astype(np.int64)
            table = pd.DataFrame({"key": okey * 16 + code, **{col: pd.Categorical(derived[col])
                                                               for col in ("value", "rule", "policy_id")}})
            facts = facts.assign(okey=np.arange(len(facts)), customer_id=pd.Categorical(facts["customer_id"]),
                                 tier=pd.Categorical(facts["tier"])).drop(columns="order_id")
            store = duckdb.connect(":memory:")
            store.register("_derived", table)
            store.register("_facts", facts)
            store.execute("create table derived as select * from _derived order by key")
            # The facts are kept as the text a proof shows, so a batch formats nothing.
            store.execute("create table order_facts as select okey, " + ", ".join(
                f'{_SQL_TEXT[col].format(col=col)} as "{name}"' for col, name in FACT_COLUMNS.items())
                + " from _facts order by okey")
            for name in ("_derived", "_facts"):
                store.unregister(name)
            orders = set(self._order_key)
            self._store = store
        else:
            orders = self.kg.order_ids()
        self._policies = {pid: {f"policy.{k}": fact_text(f"policy.{k}", v) for k, v in row.items()}
                          for pid, row in policies.items()}
        self._orders = orders

    def rows(self, claims: list[Claim]) -> list[dict]:
        """The one query's result for `claims`: a row per derived value matching a claim's (subject, type),
        with keys idx (position in `claims`), expected, rule, policy_id and the order facts as text (keyed
        by fact name, e.g. `order.amount`)."""
        self.prepare()
        if self.mode == "materialised":
            okey = np.array([self._order_key.get(c.subject_id, -1) for c in claims], dtype=np.int64)
            code = np.array([_TYPE_CODE[c.claim_type] for c in claims], dtype=np.int64)
            batch = pd.DataFrame({"idx": np.arange(len(claims)), "okey": okey,
                                  "key": np.where(okey >= 0, okey * 16 + code, -1)})
            with self._store_lock:
                cur = self._store.cursor()
                cur.register("claims", batch)
                cur.execute('select c.idx, d.value, d.rule, d.policy_id, '
                            + ", ".join(f'f."{name}"' for name in FACT_COLUMNS.values())
                            + " from claims c join derived d on d.key = c.key join order_facts f on f.okey = c.okey")
                names = [col[0] for col in cur.description]
                return [dict(zip(names, r)) for r in cur.fetchall()]
        batch = pd.DataFrame({"idx": range(len(claims)), "subject_id": [c.subject_id for c in claims],
                              "claim_type": [c.claim_type for c in claims],
                              "value": [c.normalised for c in claims]})
        with self.kg.lock:
            s = self.kg.session
            s.register("_claims_batch", batch)
            try:
                s.execute("delete from src.claims")
                s.execute("insert into src.claims select idx, subject_id, claim_type, value from _claims_batch")
            finally:
                s.unregister("_claims_batch")
            df = self._live_query.to_df()
        out = []
        for r in df.to_dict("records"):
            row = {"idx": r["idx"], "value": r["expected"], "rule": r["rule"], "policy_id": r["policy_id"]}
            row.update({name: fact_text(name, r[col]) for col, name in FACT_COLUMNS.items()})
            out.append(row)
        return out

    def check(self, claims: list[tuple[int, Claim]]) -> list[ClaimCheck]:
        """Gate 2 for accepted claims.

        Args:
            claims: (index in the original claim list, claim) pairs, as gate 1 returns them.
        """
        if not claims:
            return []
        by_idx: dict[int, list[dict]] = defaultdict(list)
        for r in self.rows([c for _, c in claims]):
            by_idx[int(r["idx"])].append(r)
        return [self._judge(index, claim, by_idx.get(pos, [])) for pos, (index, claim) in enumerate(claims)]

    def _judge(self, index: int, claim: Claim, rows: list[dict]) -> ClaimCheck:
        what = f"{claim.claim_type} of order {claim.subject_id}"
        if not rows:
            if claim.subject_id not in self._orders:
                return ClaimCheck(index, claim, "unsupported", reason=f"no order {claim.subject_id!r} in the knowledge graph")
            return ClaimCheck(index, claim, "unsupported",
                              reason=f"no rule derives the {what} (e.g. no refund policy covers the customer's tier)")
        values = sorted({r["value"] for r in rows})
        expected = [display(claim.claim_type, v) for v in values]
        proof = self._proof(claim.claim_type, claim.subject_id, rows)
        if len(values) > 1:
            return ClaimCheck(index, claim, "conflict", expected, proof=proof,
                              reason=f"the knowledge graph derives {len(values)} different values for the {what}: "
                                     f"{', '.join(expected)}")
        if values[0] == claim.normalised:
            return ClaimCheck(index, claim, "entailed", expected, proof=proof, reason=f"the {what} is {expected[0]}")
        return ClaimCheck(index, claim, "contradicted", expected, proof=proof,
                          reason=f"the {what} is {expected[0]}, not {display(claim.claim_type, claim.normalised)}")

    def _proof(self, claim_type: str, order_id: str, rows: list[dict]) -> dict[str, Any]:
        steps = []
        for r in sorted(rows, key=lambda r: (r["rule"], r["policy_id"])):
            rule, pid = RULES[r["rule"]], r["policy_id"]
            policy = self._policies.get(pid, {})
            facts = {(f"{name}[{pid}]" if name.startswith("policy.") else name):
                     (policy.get(name) if name.startswith("policy.") else r[name]) for name in rule.facts}
            steps.append({"rule": r["rule"], "statement": rule.text, "value": display(claim_type, r["value"]),
                          "policy_id": None if pid == NO_POLICY else pid, "facts": facts})
        return {"order_id": order_id, "steps": steps}

    def __getstate__(self):
        raise TypeError("a Checker holds live connections; build one per process")


def fact_text(name: str, value: Any) -> str:
    """A fact's value as text: money from cents, booleans as true/false."""
    if name in _MONEY_FACTS:
        v = int(value)
        return f"{v // 100}.{v % 100:02d}"
    if isinstance(value, bool) or type(value).__name__ in ("bool_", "bool"):
        return "true" if bool(value) else "false"
    return str(value)
