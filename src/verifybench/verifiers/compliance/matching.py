"""Stage 3: deterministic matching of a checklist against evidence documents.

Every criterion ends in one of three states, never a guess:
- `satisfied`, with the line of evidence that shows it;
- `violated`, with the line that breaks it (a prohibited aid as carrier, a value over the limit);
- `missing_evidence`, with the document type that would have been needed.

What the matcher reads in a supplier document: its "Carrier: ..." and "Processing aids: ..."
declarations, and result lines ("- animal DNA (PCR): 0.03 mg/kg ...") of certificates of analysis. Lab
results count only from a CoA, since a specification sheet states targets, not measurements.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, Field

from verifybench.verifiers.compliance.criteria import VerificationCriterion
from verifybench.verifiers.compliance.terms import QUANTITY, mentions, split_list, to_ppm

Status = Literal["satisfied", "violated", "missing_evidence"]
CARRIER = re.compile(r"^\s*carriers?\s*:\s*(.+?)\.?\s*$", re.I | re.M)
AIDS = re.compile(r"^\s*processing aids?\s*:\s*(.+?)\.?\s*$", re.I | re.M)
RESULT = re.compile(r"^\s*[-*•]\s*(.+?):\s*(.+?)\s*$", re.M)
NOT_DETECTED = re.compile(r"not detected|absent|negative|below (the )?(limit|LOD|LOQ)", re.I)


class CriterionCheck(BaseModel):
    criterion: str = Field(description="the requirement, in words")
    kind: Literal["prohibited_aid", "carrier", "lab_test", "threshold", "standard"]
    item: str | None = Field(None, description="the processing aid or laboratory test it is about")
    status: Status
    evidence: str | None = Field(None, description="the quoted line that decided it")
    doc_id: str | None = None
    required_doc_type: str | None = Field(None, description="for missing evidence: what would have shown it")
    standard_id: str | None = Field(None, description="the standard the requirement comes from")
    edition: str | None = None
    clause: str | None = Field(None, description="the clause of the standard that states the requirement")
    standard_doc: str | None = Field(None, description="the standard excerpt it was read from")


class Audit(BaseModel):
    """One ingredient lot's audit: the checklist, what was retrieved, and each criterion's state."""

    ingredient: str
    lot_id: str | None = None
    audit_date: str | None = Field(None, description="the date whose editions of the standards applied (ISO)")
    editions: list[str] = Field(default_factory=list, description="the editions the checklist was read from")
    criteria: VerificationCriterion | None = None
    checks: list[CriterionCheck] = Field(default_factory=list)
    standard_ids: list[str] = Field(default_factory=list)
    evidence_ids: list[str] = Field(default_factory=list)

    @property
    def status(self) -> Literal["compliant", "violated", "missing_evidence", "no_criteria"]:
        if not self.checks:
            return "no_criteria"
        states = {c.status for c in self.checks}
        return "violated" if "violated" in states else "missing_evidence" if "missing_evidence" in states else "compliant"


def _declarations(docs, rx) -> list[tuple[str, str, list[str]]]:
    """(doc id, quoted line, items) of every declaration line matching `rx`."""
    out = []
    for d in docs:
        for m in rx.finditer(d.text):
            items = [_affirmed(i) for i in split_list(m.group(1)) if not i.lower().startswith("none")]
            out.append((d.id, m.group(0).strip(), [i for i in items if i]))
    return out


_NEGATED = re.compile(r"\(\s*(?:not|no|free (?:of|from)|without)\b[^)]*\)|\b(?:not|no|free (?:of|from)|without)\b.*$",
                      re.I)


def _affirmed(item: str) -> str:
    """A declared item without what it denies: "activated carbon (not bone char)" -> "activated carbon",
    "free from gelatin" -> ""."""
    return _NEGATED.sub("", item).strip(" ,;.")


def _results(docs) -> list[tuple[str, str, str, str]]:
    """(doc id, quoted line, test name, result) of every result line of every certificate of analysis."""
    return [(d.id, m.group(0).strip(" -*•"), m.group(1), m.group(2))
            for d in docs if d.doc_type.lower() == "coa" for m in RESULT.finditer(d.text)]


def match_criteria(criteria: VerificationCriterion | None, docs: list) -> list[CriterionCheck]:
    """Check every criterion of `criteria` against `docs` (objects with `id`, `doc_type`, `text`). No
    criteria -> no checks: the caller decides what an unknown requirement means. Each check names the
    standard, edition and clause of its requirement where the checklist knows them."""
    if criteria is None:
        return []
    checks = _match(criteria, docs)
    keys = {"prohibited_aid": "prohibited_processing_aids", "carrier": "carrier_restrictions",
            "lab_test": "required_lab_tests", "threshold": "max_threshold_ppm"}
    for check in checks:
        ref = criteria.ref(keys[check.kind], check.item) if check.kind in keys else None
        if ref is not None:
            check.standard_id, check.edition, check.clause, check.standard_doc = (
                ref.standard_id, ref.edition, ref.clause, ref.doc_id)
    return checks


def _match(criteria: VerificationCriterion, docs: list) -> list[CriterionCheck]:
    checks: list[CriterionCheck] = []
    carriers = _declarations(docs, CARRIER)
    aids = _declarations(docs, AIDS)
    declared = carriers + aids

    for aid in criteria.prohibited_processing_aids:
        name = f"no {aid} (prohibited processing aid)"
        bad = next(((doc, line) for doc, line, items in declared if any(mentions(i, aid) for i in items)), None)
        if bad:
            checks.append(CriterionCheck(criterion=name, kind="prohibited_aid", item=aid, status="violated",
                                         evidence=bad[1], doc_id=bad[0]))
        elif declared:
            doc, line, _ = declared[0]
            checks.append(CriterionCheck(criterion=name, kind="prohibited_aid", item=aid, status="satisfied",
                                         evidence="; ".join(dict.fromkeys(d[1] for d in declared)), doc_id=doc))
        else:
            checks.append(CriterionCheck(criterion=name, kind="prohibited_aid", item=aid, status="missing_evidence",
                                         required_doc_type="TDS or CoA declaring carrier and processing aids"))

    if criteria.carrier_restrictions:
        permitted = [c for c in criteria.carrier_restrictions if c.lower() != "none"]
        name = ("no carrier" if not permitted else f"carrier is one of: {', '.join(permitted)}")
        if not carriers:
            checks.append(CriterionCheck(criterion=name, kind="carrier", status="missing_evidence",
                                         required_doc_type="TDS or CoA declaring the carrier"))
        else:
            # Every declaration counts (a TDS and a CoA may disagree): the first off-list one decides.
            off = next(((doc, line) for doc, line, items in carriers
                        if any(not any(mentions(i, p) for p in permitted) for i in items)), None)
            doc, line = off or carriers[0][:2]
            checks.append(CriterionCheck(criterion=name, kind="carrier",
                                         status="violated" if off else "satisfied", evidence=line, doc_id=doc))

    results = _results(docs)
    for test in criteria.required_lab_tests:
        found = next((r for r in results if mentions(r[2], test)), None)
        name = f"CoA reports {test}"
        if found:
            checks.append(CriterionCheck(criterion=name, kind="lab_test", item=test, status="satisfied", evidence=found[1],
                                         doc_id=found[0]))
        else:
            checks.append(CriterionCheck(criterion=name, kind="lab_test", item=test, status="missing_evidence",
                                         required_doc_type="CoA"))

    if criteria.max_threshold_ppm is not None:
        analyte = criteria.threshold_analyte or ""
        name = f"{analyte or 'contamination'} <= {criteria.max_threshold_ppm:g} mg/kg"
        lines = [r for r in results if analyte and mentions(r[2], analyte)]
        measured = [(m, r) for r in lines if (m := _measured(r[3])) is not None]
        if measured:
            # Several certificates for one lot: the highest reading decides.
            value, worst = max(measured, key=lambda x: x[0])
            checks.append(CriterionCheck(
                criterion=name, kind="threshold", evidence=worst[1], doc_id=worst[0],
                status="satisfied" if value <= criteria.max_threshold_ppm else "violated"))
        else:
            # No line, or lines that name the analyte without a readable value.
            checks.append(CriterionCheck(criterion=name, kind="threshold", status="missing_evidence",
                                         required_doc_type="CoA", evidence=lines[0][1] if lines else None,
                                         doc_id=lines[0][0] if lines else None))
    return checks


def _measured(result: str) -> float | None:
    """The measured level in mg/kg, 0 for "not detected"; the limit quoted after it is ignored."""
    if NOT_DETECTED.search(result):
        return 0.0
    m = QUANTITY.search(result)
    return to_ppm(*m.groups()) if m else None
