"""The two pipelines, as the seed draws them.

Two-stage: (1) search the standards for the ingredient's requirements and extract a checklist;
(2) search supplier evidence restricted by metadata to this lot (and ingredient code) and to the
document types that can prove a requirement (CoA, TDS), with a query built from the checklist's own
terms; (3) match deterministically. One-stage: one top-k search of the whole corpus with the user's
question, and the same extractor and matcher over whatever came back.
"""

from __future__ import annotations

import time

from verifybench.verifiers.compliance.matching import Audit, match_criteria
from verifybench.verifiers.compliance.store import HybridIndex


class TwoStagePipeline:
    def __init__(self, standards: HybridIndex, evidence: HybridIndex, extractor, standards_k: int = 5,
                 evidence_k: int = 5, evidence_types: tuple[str, ...] = ("CoA", "TDS")):
        self.standards = standards
        self.evidence = evidence
        self.extractor = extractor
        self.standards_k = standards_k
        self.evidence_k = evidence_k
        self.evidence_types = list(evidence_types)

    def evidence_query(self, ingredient: str, criteria) -> str:
        terms = [ingredient, "carrier", "processing aids"]
        if criteria is not None:
            terms += criteria.prohibited_processing_aids + criteria.carrier_restrictions + criteria.required_lab_tests
            terms += [criteria.threshold_analyte] if criteria.threshold_analyte else []
        return " ".join(t for t in terms if t and t.lower() != "none")

    def audit(self, ingredient: str, lot_id: str | None, code: str | None = None) -> tuple[Audit, dict]:
        """The audit of one lot, and the time each stage took (ms)."""
        t0 = time.perf_counter()
        chunks = [h.doc for h in self.standards.search(f"requirements and restrictions for {ingredient}",
                                                       self.standards_k)]
        criteria = self.extractor.extract(ingredient, chunks, code=code)
        t1 = time.perf_counter()
        where = {"doc_type": self.evidence_types}
        if lot_id:
            where["lot_id"] = lot_id
        if code:
            where["ingredient_code"] = code
        evidence = [h.doc for h in self.evidence.search(self.evidence_query(ingredient, criteria),
                                                        self.evidence_k, where)] if lot_id else []
        t2 = time.perf_counter()
        audit = Audit(ingredient=ingredient, lot_id=lot_id, criteria=criteria,
                      checks=match_criteria(criteria, evidence), standard_ids=[c.id for c in chunks],
                      evidence_ids=[d.id for d in evidence])
        t3 = time.perf_counter()
        return audit, {"criteria_ms": (t1 - t0) * 1e3, "evidence_ms": (t2 - t1) * 1e3, "match_ms": (t3 - t2) * 1e3}


class OneStagePipeline:
    def __init__(self, index: HybridIndex, extractor, k: int = 5, standard_type: str = "standard"):
        self.index = index
        self.extractor = extractor
        self.k = k
        self.standard_type = standard_type

    def audit(self, question: str, ingredient: str, lot_id: str | None = None, code: str | None = None,
              ) -> tuple[Audit, dict]:
        t0 = time.perf_counter()
        hits = [h.doc for h in self.index.search(question, self.k)]
        t1 = time.perf_counter()
        chunks = [d for d in hits if d.doc_type == self.standard_type]
        evidence = [d for d in hits if d.doc_type != self.standard_type]
        criteria = self.extractor.extract(ingredient, chunks, code=code)
        audit = Audit(ingredient=ingredient, lot_id=lot_id, criteria=criteria, checks=match_criteria(criteria, evidence),
                      standard_ids=[d.id for d in chunks], evidence_ids=[d.id for d in evidence])
        t2 = time.perf_counter()
        return audit, {"retrieval_ms": (t1 - t0) * 1e3, "match_ms": (t2 - t1) * 1e3}
