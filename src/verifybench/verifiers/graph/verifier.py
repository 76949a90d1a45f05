"""The `graph` verifier: a case's structured claims through gate 1 and gate 2 against the refund
knowledge graph.

- Reads `Case.claims` (a list of `{claim_type, subject_id, value, evidence}`); the response text is not
  read. A case without claims gets an error verdict saying so.
- Gate 1 (claims.py) rejects malformed claims with the reason; gate 2 (entailment.py) checks all the
  accepted claims of a batch in one query and gives each a status with its expected value and proof.
- Score (higher = more likely hallucinated): each claim weighs 1.0 when rejected or contradicted,
  `unsupported_score` (0.7) when unsupported, `conflict_score` (0.5) when the graph is inconsistent
  about it, 0 when entailed. Case score = 0.9 x the heaviest claim + 0.1 x the share of claims not
  entailed, so one wrong claim out of five scores below two out of five; all entailed = 0.
- Each claim becomes a `Unit` (status, expected value, reason, proof trace in `detail`).
- The knowledge graph is built once per verifier object on first use, never in `__init__`, and is
  dropped on pickling, so the object travels to other processes. The facts files' content hash is part
  of `config`, so a run with changed facts files is never taken for a cached one (with `source_tables`,
  only the table names are).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from verifybench.cases import Case, Unit, Verdict
from verifybench.verifiers.base import Verifier
from verifybench.verifiers.graph.claims import Claim, Rejection, display, gate1
from verifybench.verifiers.graph.entailment import Checker, ClaimCheck

REPO_ROOT = Path(__file__).resolve().parents[4]
BUNDLED_FACTS = REPO_ROOT / "datasets" / "refunds" / "facts"
FACT_FILES = ("customers.csv", "orders.csv", "policies.csv")


class GraphOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    facts: str | None = Field(None, description="folder of customers.csv, orders.csv, policies.csv; default: "
                                                "datasets/refunds/facts. A relative path is taken from the current "
                                                "folder, else from the repository root")
    rai_config: dict[str, Any] | None = Field(None, description="relationalai create_config(**rai_config); "
                                                               "default: local DuckDB in memory")
    source_tables: dict[str, str] | None = Field(None, description="customers/orders/policies -> table path, for "
                                                                  "a non-local rai_config")
    mode: Literal["materialised", "live"] = "materialised"
    check_snowflake_portability: bool = Field(False, description="also compile the rules for Snowflake at deploy "
                                                                 "and fail if they would not run there")
    unsupported_score: float = Field(0.7, ge=0, le=1)
    conflict_score: float = Field(0.5, ge=0, le=1)


def resolve_facts(path: str | None) -> Path:
    """The facts folder an option names: None = bundled; relative = from cwd, else from the repo root."""
    if path is None:
        return BUNDLED_FACTS
    p = Path(path).expanduser()
    if p.is_absolute() or p.exists():
        return p
    return REPO_ROOT / p


class GraphVerifier(Verifier):
    name = "graph"
    description = "structured claims checked by two gates against an executable refund knowledge graph (RelationalAI)"
    Options = GraphOptions
    lazy = ("_checker",)

    @property
    def config(self) -> dict:
        cfg = super().config
        folder = resolve_facts(self.options.facts)
        if self.options.source_tables is None and folder.is_dir():
            digest = hashlib.sha256()
            for name in FACT_FILES:
                f = folder / name
                digest.update(f.read_bytes() if f.is_file() else b"<missing>")
            cfg["facts_sha256"] = digest.hexdigest()[:16]
        return cfg

    def checker(self) -> Checker:
        """The gate-2 checker over a freshly built knowledge graph (built on first use)."""
        return self._build_once("_checker", self._make_checker)

    def _make_checker(self) -> Checker:
        from verifybench.verifiers.graph.facts import load_facts
        from verifybench.verifiers.graph.kg import KnowledgeGraph

        o = self.options
        if o.source_tables is not None:
            # Facts live in the user's own tables: only their column types are needed here.
            facts = load_facts(resolve_facts(o.facts)) if o.facts else _empty_facts()
        else:
            facts = load_facts(resolve_facts(o.facts))
        checker = Checker(KnowledgeGraph(facts, o.rai_config, o.source_tables, o.check_snowflake_portability), o.mode)
        checker.prepare()
        return checker

    def weight(self, status: str) -> float:
        return {"entailed": 0.0, "unsupported": self.options.unsupported_score,
                "conflict": self.options.conflict_score}.get(status, 1.0)

    def verify(self, batch: list[Case]) -> list[Verdict]:
        verdicts: list[Verdict | None] = [None] * len(batch)
        gated: list[tuple[int, list[tuple[int, Claim]], list[Rejection]]] = []
        for i, case in enumerate(batch):
            if not case.claims:
                verdicts[i] = Verdict(case_id=case.id, verifier=self.id, error=(
                    "case has no structured claims: the graph verifier checks Case.claims "
                    "(map them with the loader's `fields: {claims: <field>}`)"))
                continue
            accepted, rejected = gate1(case.claims)
            gated.append((i, accepted, rejected))
        accepted_all = [(pos, c) for _, acc, _ in gated for pos, c in acc]
        try:
            # Gate 1 comes first: a batch whose claims were all rejected never touches the graph.
            checks = self.checker().check(accepted_all) if accepted_all else []
        except Exception as e:  # noqa: BLE001 - a broken graph fails the cases that needed it, with the reason
            for i, accepted, rejected in gated:
                # A case whose claims gate 1 rejected entirely never needed the graph: its verdict stands.
                verdicts[i] = (self.error_verdict(batch[i], e) if accepted else self._verdict(batch[i], [], rejected))
            return verdicts  # type: ignore[return-value]
        at = 0
        for i, accepted, rejected in gated:
            mine, at = checks[at: at + len(accepted)], at + len(accepted)
            verdicts[i] = self._verdict(batch[i], mine, rejected)
        return verdicts  # type: ignore[return-value]

    def _verdict(self, case: Case, checks: list[ClaimCheck], rejected: list[Rejection]) -> Verdict:
        units = [Unit(text=_claim_text(r.raw), score=1.0, status="rejected", evidence=r.reason,
                      detail={"index": r.index, "gate": 1, "reason": r.reason}) for r in rejected]
        for c in checks:
            units.append(Unit(
                text=f"{c.claim.claim_type} of {c.claim.subject_id} = {display(c.claim.claim_type, c.claim.normalised)}",
                score=self.weight(c.status), status=c.status, evidence=c.reason,
                detail={"index": c.index, "gate": 2, "expected": c.expected[0] if len(c.expected) == 1 else c.expected,
                        "reason": c.reason, "claim_evidence": c.claim.evidence, "proof": c.proof}))
        units.sort(key=lambda u: u.detail["index"])
        weights = [u.score for u in units]
        score = 0.9 * max(weights) + 0.1 * sum(w > 0 for w in weights) / len(weights)
        counts = {s: sum(u.status == s for u in units) for s in ("entailed", "contradicted", "unsupported", "conflict", "rejected")}
        return Verdict(case_id=case.id, verifier=self.id, score=score, units=units, detail={"statuses": counts})


def _claim_text(raw: Any) -> str:
    if isinstance(raw, dict):
        return f"{raw.get('claim_type', '?')} of {raw.get('subject_id', '?')} = {raw.get('value', '?')!r}"
    return repr(raw)[:200]


def _empty_facts():
    """Fact tables with no rows, for their column types only (the facts live in the user's tables)."""
    import pandas as pd

    from verifybench.verifiers.graph.facts import SCHEMAS, Facts

    kinds = {"_cents": "int64", "_int": "int64", "_percent": "int64", "_bool": "bool"}
    frames = {name: pd.DataFrame({col: pd.Series(dtype=kinds.get(parse.__name__, "object"))
                                  for parse, col in schema.values()}) for name, schema in SCHEMAS.items()}
    return Facts(**frames)
