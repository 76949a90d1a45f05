"""The `graph` verifier: a case's claims through gate 1 and gate 2 against a domain pack's knowledge graph.

- `domain:` names the pack (a bundled name such as `refunds`, a name registered by an entry point, or a
  folder; see pack.py). Its claim schema, facts and rules are the pack's; `facts:` points at another
  folder of the same tables.
- `claims: given` (default) reads `Case.claims` (a list of `{claim_type, subject_id, value, evidence}`);
  a case without claims gets an error verdict saying so. `claims: from_response` extracts them from the
  response (prose.py): with the pack's patterns (`extractor: rules`, offline) or an LLM (`extractor:
  llm`, through the LLM layer: retries, replay cache, scrubbed errors; the verdict carries the calls'
  `usage` and `cost_usd`); a reply the LLM extractor cannot give as claims (after one repair request)
  is a gate-1 rejection with the reason.
- Gate 1 (claims.py) rejects malformed claims with the reason; gate 2 (entailment.py) checks all the
  accepted claims of a batch in one query and gives each a status with its expected value and proof.
- Score (higher = more likely hallucinated): each claim weighs 1.0 when rejected or contradicted,
  `unsupported_score` (0.7) when unsupported, `conflict_score` (0.5) when the graph is inconsistent
  about it, 0 when entailed. Case score = 0.9 x the heaviest claim + 0.1 x the share of claims not
  entailed, so one wrong claim out of five scores below two out of five; all entailed = 0.
- Each claim becomes a `Unit` (status, expected value, reason, proof trace in `detail`; with prose, the
  sentence's offsets in the response).
- The knowledge graph and the extractor are built once per verifier object on first use, never in
  `__init__`, and are dropped on pickling (`lazy`), so the object travels to other processes. The content hashes of the pack
  (pack.yaml, rules) and of the facts files are part of `config`, so a run with a changed pack or
  changed facts is never taken for a cached one (with `source_tables`, only the table names are).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from verifybench.cases import Case, Unit, Verdict
from verifybench.verifiers.base import ChosenCode, Requirement, Verifier
from verifybench.verifiers.graph.claims import Claim, Rejection, display, gate1
from verifybench.verifiers.graph.entailment import Checker, ClaimCheck
from verifybench.verifiers.graph.pack import Pack, load_pack, shipped
from verifybench.verifiers.llm import LLMOptions, Usage, track_usage

REPO_ROOT = Path(__file__).resolve().parents[4]


class ExtractorLLM(LLMOptions):
    """The model of the `llm` claim extractor: the LLM layer's options (docs/llm.md: backend, model,
    base_url, api_key_env, prices; timeout_s, retries, backoff_s, max_backoff_s, cache_dir, replay_only
    out of the config hash), defaulting to the bundled SmolLM2 on llama.cpp's local server, plus the
    reply's token budget and the repairs of a reply that is not the claims JSON."""

    backend: Literal["openai", "anthropic", "local", "llamacpp"] = "local"
    model: str = Field("smollm2", description="model name at the endpoint, a GGUF path (llamacpp, local), or "
                                              "smollm2 (the bundled GGUF)")
    max_tokens: int = Field(512, ge=32)
    repairs: int = Field(1, ge=0, description="repair requests after a reply that is not the claims JSON")


class GraphOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    domain: str = Field("refunds", description="the domain pack: a bundled or registered name, or a pack folder")
    facts: str | None = Field(None, description="folder with one file per table of the pack (<table>.csv or "
                                                ".parquet) instead of the pack's own; a relative path is taken "
                                                "from the current folder, else from the repository root")
    rai_config: dict[str, Any] | None = Field(None, description="relationalai create_config(**rai_config); "
                                                               "default: local DuckDB in memory")
    source_tables: dict[str, str] | None = Field(None, description="pack table -> table path, for a non-local "
                                                                  "rai_config")
    mode: Literal["materialised", "live"] = "materialised"
    check_snowflake_portability: bool = Field(False, description="also compile the rules for Snowflake at deploy "
                                                                 "and fail if they would not run there")
    claims: Literal["given", "from_response"] = Field("given", description="the case's structured claims, or "
                                                                          "claims extracted from its response")
    extractor: Literal["rules", "llm"] = Field("rules", description="from_response: the pack's patterns or an LLM")
    llm: ExtractorLLM | None = Field(None, description="the LLM extractor's model (default: the local SmolLM2)")
    unsupported_score: float = Field(0.7, ge=0, le=1)
    conflict_score: float = Field(0.5, ge=0, le=1)


def resolve_facts(path: str | None) -> Path | None:
    """The facts folder an option names: None = the pack's own; relative = from cwd, else from the repo root."""
    if path is None:
        return None
    p = Path(path).expanduser()
    if p.is_absolute() or p.exists():
        return p
    return REPO_ROOT / p


class GraphVerifier(Verifier):
    name = "graph"
    description = ("claims (given, or extracted from the response) checked by two gates against a domain pack's "
                   "executable knowledge graph (RelationalAI)")
    Options = GraphOptions
    lazy = ("_checker", "_extractor")

    @classmethod
    def chosen_code(cls, options: GraphOptions) -> list[ChosenCode]:
        if shipped(options.domain):
            return []
        folder = str(Path(options.domain).expanduser().resolve())
        return [ChosenCode("domain", folder, f"imports the rules module (Python) of the graph pack folder {folder}, "
                           "which is neither bundled with verifybench nor registered by an installed package")]

    @classmethod
    def requirements(cls, options: GraphOptions) -> list[Requirement]:
        if options.claims == "from_response" and options.extractor == "llm":
            return (options.llm or ExtractorLLM()).requirements("llm.")
        return []

    @property
    def pack(self) -> Pack:
        return load_pack(self.options.domain)

    @property
    def config(self) -> dict:
        cfg = super().config
        try:
            pack = self.pack
        except ValueError:
            return cfg  # an unknown pack fails the cases, with the reason, when they are verified
        cfg["pack_sha256"] = pack.digest(pack.files())
        if self.options.source_tables is None:
            folder = resolve_facts(self.options.facts)
            files = pack.fact_files() if folder is None else [
                folder / f"{t}{ext}" for t in pack.tables for ext in (".csv", ".parquet") if (folder / f"{t}{ext}").is_file()]
            cfg["facts_sha256"] = pack.digest(files)
        return cfg

    def checker(self) -> Checker:
        """The gate-2 checker over a freshly built knowledge graph (built on first use)."""
        return self._build_once("_checker", self._make_checker)

    def _make_checker(self) -> Checker:
        from verifybench.verifiers.graph.facts import empty_facts, load_facts
        from verifybench.verifiers.graph.kg import KnowledgeGraph

        o, pack = self.options, self.pack
        if o.source_tables is not None and not o.facts:
            facts = empty_facts(pack)  # the facts live in the user's own tables
        else:
            facts = load_facts(resolve_facts(o.facts), pack)
        checker = Checker(KnowledgeGraph(facts, o.rai_config, o.source_tables, o.check_snowflake_portability), o.mode)
        checker.prepare()
        return checker

    @property
    def llm(self) -> ExtractorLLM:
        """The LLM extractor's options (the `llm` option, else the local SmolLM2)."""
        return self.options.llm or ExtractorLLM()

    def extractor(self):
        """The claim extractor of `claims: from_response` (built on first use; an LLM's client makes its
        backend at the first call that misses the replay cache)."""
        return self._build_once("_extractor", self._make_extractor)

    def _make_extractor(self):
        from verifybench.verifiers.graph.prose import LLMExtractor, RulesExtractor

        if self.options.extractor == "rules":
            return RulesExtractor(self.pack)
        o = self.llm
        return LLMExtractor(o.client(), self.pack, o.max_tokens, repairs=o.repairs)

    def _charge(self, verdict: Verdict, usage: Usage | None) -> Verdict:
        """The LLM extractor's calls for this case (requests, retries, repairs, tokens) and their cost."""
        if usage is not None:
            verdict.usage = usage.as_dict()
            verdict.cost_usd = usage.cost(self.llm.prices, local=self.llm.local)
        return verdict

    def weight(self, status: str) -> float:
        return {"entailed": 0.0, "unsupported": self.options.unsupported_score,
                "conflict": self.options.conflict_score}.get(status, 1.0)

    def _claims_of(self, case: Case, pack: Pack) -> tuple[list, list[Rejection], dict]:
        """(accepted, rejected, verdict detail) of one case's claims, given or extracted."""
        if self.options.claims == "given":
            if not case.claims:
                raise LookupError("case has no structured claims: the graph verifier checks Case.claims (map them "
                                  "with the loader's `fields: {claims: <field>}`), or use `claims: from_response`")
            accepted, rejected = gate1(case.claims, pack)
            return accepted, rejected, {"claims_from": "case"}
        found = self.extractor().extract(case.response, case.question)
        detail = {"claims_from": "response", "extractor": self.options.extractor, "extracted": found.claims}
        if found.problem:
            return [], [Rejection(-1, found.raw, f"claim extraction: {found.problem}")], detail
        accepted, rejected = gate1(found.claims, pack)
        return accepted, rejected, detail

    def verify(self, batch: list[Case]) -> list[Verdict]:
        verdicts: list[Verdict | None] = [None] * len(batch)
        gated: list[tuple[int, list[tuple[int, Claim]], list[Rejection], dict]] = []
        try:
            pack = self.pack
        except ValueError as e:  # a bad pack fails every case, with the reason
            return [self.error_verdict(c, e) for c in batch]
        by_llm = self.options.claims == "from_response" and self.options.extractor == "llm"
        usages: dict[int, Usage] = {}
        for i, case in enumerate(batch):
            # The LLM extractor's calls for this case (retries, repairs, tokens), counted even when they fail.
            with track_usage() as usage:
                if by_llm:
                    usages[i] = usage
                try:
                    accepted, rejected, detail = self._claims_of(case, pack)
                except Exception as e:  # noqa: BLE001 - an extractor failing (network, model) fails this case only
                    error = (Verdict(case_id=case.id, verifier=self.id, error=str(e)) if isinstance(e, LookupError)
                             else self.error_verdict(case, e))
                    verdicts[i] = self._charge(error, usages.get(i))
                    continue
            gated.append((i, accepted, rejected, detail))
        accepted_all = [(pos, c) for _, acc, _, _ in gated for pos, c in acc]
        try:
            # Gate 1 comes first: a batch whose claims were all rejected never touches the graph.
            checks = self.checker().check(accepted_all) if accepted_all else []
        except Exception as e:  # noqa: BLE001 - a broken graph fails the cases that needed it, with the reason
            for i, accepted, rejected, detail in gated:
                # A case whose claims gate 1 rejected entirely never needed the graph: its verdict stands.
                verdicts[i] = self._charge(self.error_verdict(batch[i], e) if accepted
                                           else self._verdict(batch[i], [], rejected, detail), usages.get(i))
            return verdicts  # type: ignore[return-value]
        at = 0
        for i, accepted, rejected, detail in gated:
            mine, at = checks[at: at + len(accepted)], at + len(accepted)
            verdicts[i] = self._charge(self._verdict(batch[i], mine, rejected, detail), usages.get(i))
        return verdicts  # type: ignore[return-value]

    def _verdict(self, case: Case, checks: list[ClaimCheck], rejected: list[Rejection], detail: dict) -> Verdict:
        raws = (case.claims or []) if detail.get("claims_from") == "case" else detail.get("extracted") or []
        units = [Unit(text=_claim_text(r.raw), score=1.0, status="rejected", evidence=r.reason,
                      detail={"index": r.index, "gate": 1, "reason": r.reason}, **_span(raws, r.index))
                 for r in rejected]
        for c in checks:
            d = {"index": c.index, "gate": 2, "expected": c.expected[0] if len(c.expected) == 1 else c.expected,
                 "reason": c.reason, "claim_evidence": c.claim.evidence, "proof": c.proof}
            if c.claim.written_type != c.claim.claim_type:
                d["written_type"] = c.claim.written_type
            units.append(Unit(text=f"{c.claim.claim_type} of {c.claim.subject_id} = {display(c.claim.kind, c.claim.normalised)}",
                              score=self.weight(c.status), status=c.status, evidence=c.reason, detail=d,
                              **_span(raws, c.index)))
        units.sort(key=lambda u: u.detail["index"])
        weights = [u.score for u in units if u.score is not None]  # every unit here has one
        score = 0.9 * max(weights) + 0.1 * sum(w > 0 for w in weights) / len(weights)
        counts = {s: sum(u.status == s for u in units)
                  for s in ("entailed", "contradicted", "unsupported", "conflict", "rejected")}
        return Verdict(case_id=case.id, verifier=self.id, score=score, units=units,
                       detail={"statuses": counts, **detail})


def _span(raws: list, index: int) -> dict:
    """The response offsets of an extracted claim (prose only), as Unit fields."""
    if 0 <= index < len(raws) and isinstance(raws[index], dict):
        start, end = raws[index].get("start"), raws[index].get("end")
        if isinstance(start, int) and isinstance(end, int):
            return {"start": start, "end": end}
    return {}


def _claim_text(raw: Any) -> str:
    if isinstance(raw, dict):
        return f"{raw.get('claim_type', '?')} of {raw.get('subject_id', '?')} = {raw.get('value', '?')!r}"
    return repr(raw)[:200]
