"""Build and deploy the refund knowledge graph: a RelationalAI model over the fact tables.

Offline by default on RelationalAI's own local DuckDB backend (an in-memory database, no account): the
fact DataFrames become tables `src.customers`, `src.orders`, `src.policies` of that database and the
model reads them with `model.Table("memory.src.<name>")` (about 30x faster at 10k rows than inline
`model.data`). With a RelationalAI account, give `rai_config` (the keyword arguments of
`relationalai.config.create_config`, e.g. a Snowflake connection) and `source_tables` (where the three
tables live there); rules.py does not change.

On the DuckDB backend derived relations are materialised when the model deploys (its first query), so
a model sees the facts it was deployed with: when facts change, build a new `KnowledgeGraph`.
"""

from __future__ import annotations

import copy
import itertools
import os
import threading

import pandas as pd

from verifybench.verifiers.base import default_cache
from verifybench.verifiers.graph.facts import Facts
from verifybench.verifiers.graph.rules import RefundGraph, define_refund_kg

LOCAL_DUCKDB = {"connections": {"local": {"type": "duckdb", "path": ":memory:"}},
                "deployment": {"schema": "refund_kg", "auto_deploy": True},
                # Debug mode (on by default) pretty-prints every compiled SQL statement for tracing: about
                # half the time of a small query.
                "debug": {"enabled": False}}
LOCAL_TABLES = {name: f"memory.src.{name}" for name in ("customers", "orders", "policies")}
CLAIMS_TABLE = "memory.src.claims"

_SQL_TYPES = {"int64": "BIGINT", "bool": "BOOLEAN", "object": "VARCHAR"}
_model_ids = itertools.count()


def _schema(df: pd.DataFrame) -> dict:
    from relationalai.semantics import Bool, Integer, String

    kinds = {"int64": Integer, "bool": Bool}
    return {col: kinds.get(str(dtype), String) for col, dtype in df.dtypes.items()}


class KnowledgeGraph:
    """A deployed refund model plus the connection its local tables live in.

    Args:
        facts: the fact tables (facts.load_facts).
        rai_config: keyword arguments of `relationalai.config.create_config`; None = local DuckDB in memory;
            {} = RelationalAI's own configuration lookup (raiconfig.yaml, environment).
        check_snowflake_portability: also compile the rules for Snowflake at deploy and fail if they
            would not run there (RelationalAI's own check; no account needed).
        source_tables: table path per fact table for a non-local config; None = load `facts` locally.
    """

    def __init__(self, facts: Facts, rai_config: dict | None = None, source_tables: dict[str, str] | None = None,
                 check_snowflake_portability: bool = False):
        # RelationalAI writes a trace folder per deploy under ./build/runs of the current folder (several
        # MB per run): keep it in verifybench's cache unless the user chose a place (RAI_BUILD_DIR).
        os.environ.setdefault("RAI_BUILD_DIR", default_cache("relationalai"))
        from relationalai.config import create_config
        from relationalai.semantics import Integer, Model, String

        self.local = rai_config is None
        settings = copy.deepcopy(LOCAL_DUCKDB if rai_config is None else rai_config)  # {} = raiconfig.yaml
        if check_snowflake_portability:
            # RelationalAI emits the model a second time for Snowflake and checks that SQL too.
            settings.setdefault("deployment", {})["check_snowflake_portability"] = True
        self.config = create_config(**settings)
        self.session = None
        self.lock = threading.Lock()  # one DuckDB connection: queries of one graph run one at a time
        tables = source_tables or LOCAL_TABLES
        if self.local:
            from relationalai.config.connections import DuckDBConnection

            self.session = self.config.get_session(DuckDBConnection)
            self.session.execute("create schema if not exists src")
            for name, df in facts.tables().items():
                self.session.register(f"_facts_{name}", df)
                self.session.execute(f"create or replace table src.{name} as select * from _facts_{name}")
                self.session.unregister(f"_facts_{name}")
            self.session.execute("create or replace table src.claims "
                                 "(idx BIGINT, subject_id VARCHAR, claim_type VARCHAR, value VARCHAR)")
        # Model names must be unique in one process: each graph is its own deployment.
        model = Model(f"refund_policy_kg_{next(_model_ids)}", config=self.config)
        fact_tables = {name: model.Table(tables[name], schema=_schema(df)) for name, df in facts.tables().items()}
        self.claims = model.Table(CLAIMS_TABLE, schema={"idx": Integer, "subject_id": String,
                                                        "claim_type": String, "value": String})
        self.graph: RefundGraph = define_refund_kg(model, **fact_tables)
        self.model = model

    def _df(self, fragment) -> pd.DataFrame:
        with self.lock:
            return fragment.to_df()

    def derived(self) -> pd.DataFrame:
        """Every derived value of every order (deploys the model on first use).

        Returns: columns order_id, claim_type, value (normalised text), rule, policy_id.
        """
        from relationalai.semantics import String

        O = self.graph.Order
        ct, val, rule, pid = String.ref(), String.ref(), String.ref(), String.ref()
        return self._df(self.model.where(O.derives(ct, val, rule, pid)).select(
            O.order_id.alias("order_id"), ct.alias("claim_type"), val.alias("value"), rule.alias("rule"),
            pid.alias("policy_id")))

    def order_facts(self) -> pd.DataFrame:
        """The facts of every order as the graph holds them, for proof traces.

        Returns: columns order_id, customer_id, tier, amount_cents, shipping_cents, final_sale, defective,
        days_since_delivery.
        """
        O, c = self.graph.Order, self.graph.Customer.ref()
        df = self._df(self.model.where(O.customer(c)).select(
            O.order_id.alias("order_id"), c.customer_id.alias("customer_id"), c.tier.alias("tier"),
            O.amount_cents.alias("amount_cents"), O.shipping_cents.alias("shipping_cents"),
            O.final_sale.alias("final_sale"), O.defective.alias("defective"),
            O.days_since_delivery.alias("days_since_delivery")))
        # RelationalAI's Integer comes back as a 128-bit integer, which DuckDB cannot take from pandas.
        ints = ["amount_cents", "shipping_cents", "days_since_delivery"]
        df[ints] = df[ints].astype("int64")
        return df

    def order_ids(self) -> set[str]:
        """The id of every order in the graph."""
        O = self.graph.Order
        return set(self._df(self.model.select(O.order_id.alias("order_id")))["order_id"])

    def policies(self) -> dict[str, dict]:
        """Every refund policy's facts, by policy id."""
        P = self.graph.RefundPolicy
        df = self._df(self.model.select(
            P.policy_id.alias("policy_id"), P.tier.alias("tier"), P.return_window_days.alias("return_window_days"),
            P.restocking_fee_pct.alias("restocking_fee_pct"), P.refund_method.alias("refund_method"),
            P.shipping_refundable.alias("shipping_refundable"),
            P.retroactive_bereavement.alias("retroactive_bereavement")))
        return {r["policy_id"]: r for r in df.to_dict("records")}
