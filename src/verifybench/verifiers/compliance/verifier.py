"""The `compliance` (two-stage) and `compliance-onestage` verifiers.

A case asks whether one ingredient lot meets a standard; its response claims it does or does not. The
verifier audits the lot itself (see pipeline.py) and scores the response against the audit:

| response claims | audit: violated | missing evidence | no criteria found | compliant |
|---|---|---|---|---|
| compliant       | 1.0             | 0.9              | 0.6               | 0.0       |
| not compliant   | 0.0             | 0.1              | 0.4               | 0.8       |

Higher = more likely hallucinated. A compliance claim over a violated criterion, or over a mandatory
document nobody could find, is what the seed calls a false positive; a rejection of a lot whose evidence
satisfies every criterion is the opposite error. Each criterion becomes a `Unit` with its status and
the quoted evidence (or the document type that was missing).

Which lot a case is about is read from the case (`ingredient_field`, `lot_field`, `code_field`:
`meta.<key>` or a Case attribute); the response's claim from its wording ("not compliant", "cannot be
certified", "does not meet" vs "compliant", "meets"), or from `claim_field` when the data states it.

Standards may come in editions (standards.py): the two-stage audit reads the edition of each standard in
force at the audit date: the case's `audit_date_field` (default `meta.audit_date`), else the
`audit_date` option, else the latest edition. Each criterion unit names its standard, edition and clause.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from verifybench.cases import Case, Unit, Verdict
from verifybench.verifiers.base import CaseVerifier, Requirement, default_cache, operational
from verifybench.verifiers.compliance.criteria import LLMExtractor, RuleExtractor
from verifybench.verifiers.compliance.matching import Audit
from verifybench.verifiers.compliance.pipeline import OneStagePipeline, TwoStagePipeline
from verifybench.verifiers.compliance.standards import parse_date
from verifybench.verifiers.compliance.store import HybridIndex, load_corpus
from verifybench.verifiers.llm import LLMOptions, track_usage

SCORES = {
    True: {"violated": 1.0, "missing_evidence": 0.9, "no_criteria": 0.6, "compliant": 0.0},
    False: {"violated": 0.0, "missing_evidence": 0.1, "no_criteria": 0.4, "compliant": 0.8},
}
# A denial: "not compliant", "isn't (vegan) compliant", "non-compliant", "does not meet", "cannot be
# certified", "fails to meet", or an answer that opens with a bare "No." / "No:" / "No,".
_DENY = re.compile(r"(?:\bnot|n't|\bnon)[- ]?(?:\w+[- ])?(?:compliant|conform(?:ing|s)?)\b"
                   r"|\b(?:does|do|did)(?:n't| not) (?:meet|comply|conform|satisfy)"
                   r"|\bcannot be (?:certified|approved|accepted)|\bfails? to (?:meet|comply|conform)"
                   r"|\bnot (?:suitable|demonstrated|certifiable)|^\s*no\s*[.,:;!]", re.I)
_AFFIRM = re.compile(r"\b(compliant|complies|conforms?|meets|satisfies|suitable for vegans?|is approved)\b", re.I)
_TRUE = {"true", "yes", "1", "compliant"}
_FALSE = {"false", "no", "0", "not compliant", "non-compliant"}


def claims_compliance(text: str) -> bool | None:
    """True when `text` claims compliance, False when it denies it, None when it says neither."""
    if _DENY.search(text):
        return False
    if _AFFIRM.search(text):
        return True
    return None


def _as_claim(value, field: str) -> bool:
    """A stated claim: a boolean, or yes/no text. Anything else is the case's error, not a guess."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in _TRUE or text in _FALSE:
        return text in _TRUE
    raise ValueError(f"field {field!r} must be true/false (or yes/no), not {value!r}")


class ComplianceOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    corpus: str = Field(description="JSONL corpus: {id, doc_type, text, metadata} per line; standards have doc_type 'standard'")
    extractor: Literal["rules", "llm"] = "rules"
    llm: LLMOptions | None = Field(None, description="the model of the `llm` extractor (the LLM layer's options)")
    dense: bool = Field(True, description="fuse embeddings with BM25 (False: BM25 only)")
    model: str = Field("minilm", description="sentence-transformers model for the dense half")
    standards_k: int = Field(5, ge=1)
    evidence_k: int = Field(5, ge=1)
    k: int = Field(5, ge=1, description="one-stage: documents retrieved for the question")
    evidence_types: list[str] = Field(default_factory=lambda: ["CoA", "TDS"])
    standard_type: str = "standard"
    ingredient_field: str = "meta.ingredient"
    lot_field: str = "meta.lot_id"
    code_field: str | None = "meta.ingredient_code"
    claim_field: str | None = Field(None, description="a boolean field stating the response's claim, instead of its wording")
    audit_date: dt.date | None = Field(None, description="audit at this date: each standard's edition in force then "
                                                         "(a case's own `audit_date_field` wins); none = the latest")
    audit_date_field: str | None = Field("meta.audit_date", description="the case field holding its audit date")
    cache_dir: str | None = operational(default_factory=lambda: default_cache("embeddings"))


def _field(case: Case, path: str | None):
    if not path:
        return None
    if path.startswith("meta."):
        return case.meta.get(path[5:])
    return getattr(case, path, None)


class _ComplianceBase(CaseVerifier):
    Options = ComplianceOptions
    lazy = ("_pipeline",)

    @classmethod
    def requirements(cls, options: ComplianceOptions) -> list[Requirement]:
        return options.llm.requirements("llm.") if options.extractor == "llm" and options.llm is not None else []

    def _extractor(self):
        o = self.options
        if o.extractor == "rules":
            return RuleExtractor()
        if o.llm is None:
            raise ValueError("extractor 'llm' needs the `llm` option (backend, model, base_url)")
        return LLMExtractor(o.llm.client())

    def _encoder(self):
        if not self.options.dense:
            return None
        from verifybench.verifiers.anchors.encoders import CachedEncoder, make_encoder

        return CachedEncoder(make_encoder(self.options.model), self.options.cache_dir)

    def pipeline(self):
        return self._build_once("_pipeline", lambda: self._build(load_corpus(self.options.corpus)))

    def _build(self, docs):
        raise NotImplementedError

    def _audit(self, case: Case, ingredient: str, lot: str, code: str | None,
               audit_date: dt.date | None) -> tuple[Audit, dict]:
        raise NotImplementedError

    def audit_date(self, case: Case) -> dt.date | None:
        """The case's audit date (its field, else the option); a field that is not a date is the case's error."""
        value = _field(case, self.options.audit_date_field)
        if value is None or value == "":
            return self.options.audit_date
        return parse_date(value, f"field {self.options.audit_date_field!r}")

    def score_case(self, case: Case) -> Verdict:
        o = self.options
        ingredient, lot = _field(case, o.ingredient_field), _field(case, o.lot_field)
        if not ingredient:
            raise ValueError(f"case has no ingredient at {o.ingredient_field!r}")
        if lot is None or lot == "":
            raise ValueError(f"case has no lot at {o.lot_field!r}")
        if o.claim_field:
            stated = _field(case, o.claim_field)
            if stated is None:
                raise ValueError(f"field {o.claim_field!r} is empty")
            claim = _as_claim(stated, o.claim_field)
        else:
            found = claims_compliance(case.response)
            if found is None:
                raise ValueError("the response neither claims nor denies compliance")
            claim = found
        code = _field(case, o.code_field)
        # The LLM extractor's calls (tokens, retries) are counted for this case, wherever they are made.
        with track_usage() as usage:
            audit, timing = self._audit(case, str(ingredient), str(lot), None if code is None else str(code),
                                        self.audit_date(case))
        units = [Unit(text=c.criterion, status=c.status, evidence=c.evidence,
                      score={"violated": 1.0, "missing_evidence": 0.5, "satisfied": 0.0}[c.status],
                      detail={k: v for k, v in (("kind", c.kind), ("doc_id", c.doc_id),
                                                ("required_doc_type", c.required_doc_type),
                                                ("standard_id", c.standard_id), ("edition", c.edition),
                                                ("clause", c.clause), ("standard_doc", c.standard_doc)) if v})
                 for c in audit.checks]
        verdict = Verdict(case_id=case.id, verifier=self.id, score=SCORES[claim][audit.status], units=units,
                          detail={"claims_compliant": claim, "audit": audit.status, "audit_date": audit.audit_date,
                                  "editions": audit.editions,
                                  "standards": audit.standard_ids, "evidence": audit.evidence_ids,
                                  "criteria": (audit.criteria.model_dump(exclude={"source_ids", "refs"})
                                               if audit.criteria else None),
                                  "stage_ms": {k: round(v, 3) for k, v in timing.items()}})
        if o.extractor == "llm" and o.llm is not None:
            verdict.usage = usage.as_dict()
            verdict.cost_usd = usage.cost(o.llm.prices, local=o.llm.local)
        return verdict


class ComplianceVerifier(_ComplianceBase):
    name = "compliance"
    description = ("two-stage compliance audit: the standard's criteria first, then evidence filtered to the lot, "
                   "then deterministic matching; a compliance claim over a violated or unevidenced criterion scores high")

    def _build(self, docs):
        o = self.options
        encoder = self._encoder()
        standards = [d for d in docs if d.doc_type == o.standard_type]
        evidence = [d for d in docs if d.doc_type != o.standard_type]
        return TwoStagePipeline(HybridIndex(standards, encoder), HybridIndex(evidence, encoder), self._extractor(),
                                o.standards_k, o.evidence_k, tuple(o.evidence_types))

    def _audit(self, case, ingredient, lot, code, audit_date):
        return self.pipeline().audit(ingredient, lot, code, audit_date)


class OneStageVerifier(_ComplianceBase):
    name = "compliance-onestage"
    description = ("one-stage RAG baseline: top-k retrieval over the whole corpus with the question, then the same "
                   "extractor and matcher as `compliance`")

    def _build(self, docs):
        o = self.options
        return OneStagePipeline(HybridIndex(docs, self._encoder()), self._extractor(), o.k, o.standard_type)

    def _audit(self, case, ingredient, lot, code, audit_date):
        return self.pipeline().audit(case.question or case.response, ingredient, lot, code, audit_date)
