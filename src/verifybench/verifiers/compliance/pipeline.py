"""The two pipelines, as the seed draws them.

Two-stage: (1) search the standards in force at the audit date (standards.py: of every standard, the
edition in force then) for the ingredient's requirements and extract a checklist;
(2) search supplier evidence restricted by metadata to this lot (and ingredient code) and to the
document types that can prove a requirement (CoA, TDS), with a query built from the checklist's own
terms; (3) match deterministically. One-stage: one top-k search of the whole corpus with the user's
question, and the same extractor and matcher over whatever came back.
"""

from __future__ import annotations

import datetime as dt
import threading
import time

from verifybench.verifiers.compliance.matching import Audit, match_criteria
from verifybench.verifiers.compliance.standards import edition_of, in_force
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
        self._in_force: dict[dt.date | None, list[str] | None] = {}
        self._lock = threading.Lock()

    def standards_filter(self, audit_date: dt.date | None) -> dict | None:
        """The metadata filter that keeps the standard excerpts in force at `audit_date` (None: no filter
        needed, every excerpt is in force)."""
        with self._lock:
            if audit_date not in self._in_force:
                docs = self.standards.docs
                rows = in_force(docs, audit_date)
                self._in_force[audit_date] = None if len(rows) == len(docs) else [docs[i].id for i in rows]
            ids = self._in_force[audit_date]
        return None if ids is None else {"id": ids}

    def evidence_query(self, ingredient: str, criteria) -> str:
        terms = [ingredient, "carrier", "processing aids"]
        if criteria is not None:
            terms += criteria.prohibited_processing_aids + criteria.carrier_restrictions + criteria.required_lab_tests
            terms += [criteria.threshold_analyte] if criteria.threshold_analyte else []
        return " ".join(t for t in terms if t and t.lower() != "none")

    def audit(self, ingredient: str, lot_id: str | None, code: str | None = None,
              audit_date: dt.date | None = None) -> tuple[Audit, dict]:
        """The audit of one lot at `audit_date` (None: the latest edition of every standard), and the time
        each stage took (ms)."""
        t0 = time.perf_counter()
        where = self.standards_filter(audit_date)
        # The ingredient code, when known, is in the query too: excerpts name it ("ingredient code GL-422"), so an
        # excerpt about this ingredient outranks others that merely list it as a permitted carrier.
        query = f"requirements and restrictions for {ingredient}" + (f" (ingredient code {code})" if code else "")
        chunks = ([h.doc for h in self.standards.search(query, self.standards_k, where)]
                  if where is None or where["id"] else [])
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
                      evidence_ids=[d.id for d in evidence], audit_date=audit_date.isoformat() if audit_date else None,
                      editions=_editions(criteria, chunks))
        t3 = time.perf_counter()
        return audit, {"criteria_ms": (t1 - t0) * 1e3, "evidence_ms": (t2 - t1) * 1e3, "match_ms": (t3 - t2) * 1e3}


class OneStagePipeline:
    def __init__(self, index: HybridIndex, extractor, k: int = 5, standard_type: str = "standard"):
        self.index = index
        self.extractor = extractor
        self.k = k
        self.standard_type = standard_type

    def audit(self, question: str, ingredient: str, lot_id: str | None = None, code: str | None = None,
              audit_date: dt.date | None = None) -> tuple[Audit, dict]:
        """The baseline's audit: whatever the question retrieves, every edition of every standard alike
        (`audit_date` is recorded, not used to filter: that is the two-stage pipeline's metadata step)."""
        t0 = time.perf_counter()
        hits = [h.doc for h in self.index.search(question, self.k)]
        t1 = time.perf_counter()
        chunks = [d for d in hits if d.doc_type == self.standard_type]
        evidence = [d for d in hits if d.doc_type != self.standard_type]
        criteria = self.extractor.extract(ingredient, chunks, code=code)
        audit = Audit(ingredient=ingredient, lot_id=lot_id, criteria=criteria, checks=match_criteria(criteria, evidence),
                      standard_ids=[d.id for d in chunks], evidence_ids=[d.id for d in evidence],
                      editions=_editions(criteria, chunks), audit_date=audit_date.isoformat() if audit_date else None)
        t2 = time.perf_counter()
        return audit, {"retrieval_ms": (t1 - t0) * 1e3, "match_ms": (t2 - t1) * 1e3}


def _editions(criteria, chunks) -> list[str]:
    """The editions the checklist was read from ("V-LABEL 2024"), in the order first used."""
    if criteria is None:
        return []
    used = set(criteria.source_ids)
    names = [str(e) for c in chunks if c.id in used and (e := edition_of(c)) is not None]
    return list(dict.fromkeys(names))
