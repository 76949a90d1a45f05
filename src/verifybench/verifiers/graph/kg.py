"""Build and deploy a domain pack's knowledge graph: a RelationalAI model over its fact tables.

Offline by default on RelationalAI's own local DuckDB backend (an in-memory database, no account): the
fact DataFrames become tables `src.<table>` of that database and the model reads them with
`model.Table("memory.src.<table>")` (about 30x faster at 10k rows than inline `model.data`). With a
RelationalAI account, give `rai_config` (the keyword arguments of `relationalai.config.create_config`,
e.g. a Snowflake connection) and `source_tables` (where the pack's tables live there); the pack's rules
do not change.

After the pack's `define(model, tables)` has added its rules, the graph adds one relationship of its
own to the subject concept, `vb_derives(claim_type, value, rule, basis)`: the union of the derived
relationship of every claim type of the pack's claim schema, each value as normalised text (claims.py),
so that gate 2 reads every checkable value of every subject in one query.

On the DuckDB backend derived relations are materialised when the model deploys (its first query), so
a model sees the facts it was deployed with: when facts change, build a new `KnowledgeGraph`.
"""

from __future__ import annotations

import copy
import itertools
import os
import threading
from typing import Any

import pandas as pd

from verifybench.verifiers.base import default_cache
from verifybench.verifiers.graph.facts import Facts
from verifybench.verifiers.graph.pack import Pack, PackError

LOCAL_DUCKDB: dict[str, Any] = {"connections": {"local": {"type": "duckdb", "path": ":memory:"}},
                "deployment": {"schema": "verifybench_kg", "auto_deploy": True},
                # Debug mode (on by default) pretty-prints every compiled SQL statement for tracing: about
                # half the time of a small query.
                "debug": {"enabled": False}}
CLAIMS_TABLE = "memory.src.vb_claims"
DERIVES = "vb_derives"

_model_ids = itertools.count()


def _rai_type(column_type: str):
    from relationalai.semantics import Bool, Date, Integer, String

    return {"int": Integer, "percent": Integer, "money": Integer, "bool": Bool, "date": Date}.get(column_type, String)


class KnowledgeGraph:
    """A deployed pack model plus the connection its local tables live in.

    Args:
        facts: the fact tables (facts.load_facts), which carry their pack.
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

        self.pack: Pack = facts.pack
        self.facts = facts
        self.local = rai_config is None
        settings = copy.deepcopy(LOCAL_DUCKDB if rai_config is None else rai_config)  # {} = raiconfig.yaml
        if check_snowflake_portability:
            # RelationalAI emits the model a second time for Snowflake and checks that SQL too.
            settings.setdefault("deployment", {})["check_snowflake_portability"] = True
        self.config = create_config(**settings)
        self.session: Any = None  # a RelationalAI DuckDB session, opened on first use
        self.lock = threading.Lock()  # one DuckDB connection: queries of one graph run one at a time
        if source_tables is not None:
            missing = sorted(set(self.pack.tables) - set(source_tables))
            if missing:
                raise PackError(f"source_tables: no table path for {', '.join(missing)} (pack {self.pack.name!r} "
                                f"has tables {', '.join(self.pack.tables)})")
        tables = source_tables or {name: f"memory.src.{name}" for name in self.pack.tables}
        if self.local:
            from relationalai.config.connections import DuckDBConnection

            self.session = self.config.get_session(DuckDBConnection)
            self.session.execute("create schema if not exists src")
            for name, df in facts.tables().items():
                self.session.register(f"_facts_{name}", df)
                self.session.execute(f"create or replace table src.{name} as select * from _facts_{name}")
                self.session.unregister(f"_facts_{name}")
            self.session.execute(f"create or replace table {CLAIMS_TABLE.removeprefix('memory.')} "
                                 "(idx BIGINT, subject_id VARCHAR, claim_type VARCHAR, value VARCHAR)")
        # Model names must be unique in one process: each graph is its own deployment.
        model = Model(f"{_slug(self.pack.name)}_kg_{next(_model_ids)}", config=self.config)
        self.tables = {name: model.Table(tables[name], schema={c.name: _rai_type(c.type) for c in t.columns.values()})
                       for name, t in self.pack.tables.items()}
        self.claims = model.Table(CLAIMS_TABLE, schema={"idx": Integer, "subject_id": String,
                                                        "claim_type": String, "value": String})
        concepts = self.pack.rules().define(model, self.tables)
        rules_file = self.pack.rules_file
        if not isinstance(concepts, dict) or self.pack.subject_concept not in concepts:
            raise PackError(f"{rules_file}: define() must return the concepts by name, including the subject "
                            f"concept {self.pack.subject_concept!r} (pack.yaml: subject.concept)")
        self.concepts = concepts
        self.subject = concepts[self.pack.subject_concept]
        self.subject_key = self.pack.subject_table.key_column
        self.model = model
        self._claim_view()

    def _claim_view(self) -> None:
        """`Subject.vb_derives(claim_type, value text, rule, basis)` from every claim type's relationship."""
        from relationalai.semantics import Date, Integer, String
        from relationalai.semantics.std import datetime as rdt
        from relationalai.semantics.std import strings

        S, model = self.subject, self.model
        # getattr on a concept creates an empty relationship when the name is unknown: look first.
        declared = getattr(S, "_relationships", {})
        for ct in self.pack.claims.values():
            if ct.derived not in declared:
                raise PackError(f"{self.pack.rules_file}: the subject concept {self.pack.subject_concept} has no "
                                f"relationship {ct.derived!r} (pack.yaml: claims.{ct.name}.derived)")
        derives = model.Relationship(
            f"{S} derives {String:claim_type} = {String:value} by {String:rule} under {String:basis}")
        setattr(S, DERIVES, derives)
        rule, basis = String.ref(), String.ref()
        for ct in self.pack.claims.values():
            rel = getattr(S, ct.derived)
            if ct.kind == "bool":
                for flag, text in ((True, "true"), (False, "false")):
                    model.where(rel(flag, rule, basis)).define(derives(S, ct.name, text, rule, basis))
            elif ct.kind in ("name", "text"):
                v = String.ref()
                model.where(rel(v, rule, basis)).define(derives(S, ct.name, v, rule, basis))
            elif ct.kind == "date":
                v = Date.ref()
                model.where(rel(v, rule, basis)).define(derives(S, ct.name, rdt.date.format(v, rdt.ISO.DATE), rule, basis))
            else:  # money, days, int: integers
                v = Integer.ref()
                model.where(rel(v, rule, basis)).define(derives(S, ct.name, strings.string(v), rule, basis))
        self.derives = derives

    def _df(self, fragment) -> pd.DataFrame:
        with self.lock:
            return fragment.to_df()

    def derived(self) -> pd.DataFrame:
        """Every derived value of every subject (deploys the model on first use).

        Returns: columns subject_id, claim_type, value (normalised text), rule, basis.
        """
        from relationalai.semantics import String

        S = self.subject
        ct, val, rule, basis = String.ref(), String.ref(), String.ref(), String.ref()
        return self._df(self.model.where(self.derives(S, ct, val, rule, basis)).select(
            getattr(S, self.subject_key).alias("subject_id"), ct.alias("claim_type"), val.alias("value"),
            rule.alias("rule"), basis.alias("basis")))

    def table_frames(self) -> dict[str, pd.DataFrame]:
        """The fact tables as the graph reads them: the local DataFrames, or (with `source_tables`) the
        user's tables read through RelationalAI."""
        if self.local:
            return self.facts.tables()
        out = {}
        for name, table in self.pack.tables.items():
            cols = [c.name for c in table.columns.values()]
            df = self._df(self.model.select(*[getattr(self.tables[name], c).alias(c) for c in cols]))
            for c in table.columns.values():
                if c.type in ("int", "percent", "money"):
                    # RelationalAI's Integer comes back as a 128-bit integer, which DuckDB cannot take from pandas.
                    df[c.name] = df[c.name].astype("int64")
                elif c.type == "bool":
                    df[c.name] = df[c.name].astype(bool)
            out[name] = df
        return out

    def subject_ids(self) -> set[str]:
        """The id of every subject in the graph."""
        S = self.subject
        return set(self._df(self.model.select(getattr(S, self.subject_key).alias("subject_id")))["subject_id"])


def _slug(name: str) -> str:
    return "".join(ch if ch.isalnum() else "_" for ch in name.lower())
