"""Two-stage compliance verifier: each stage on documents written here, the seed's beta-carotene false
positive of the one-stage baseline, and the shipped dataset through both pipelines."""

from __future__ import annotations

import json
import pickle

import pytest

from helpers.fake_llm import FakeLLM
from verifybench.cases import Case, Source
from verifybench.errors import RecordError
from verifybench.verifiers import build
from verifybench.verifiers.compliance import (
    Document,
    HybridIndex,
    LLMExtractor,
    RuleExtractor,
    TwoStagePipeline,
    VerificationCriterion,
    claims_compliance,
    load_corpus,
    match_criteria,
)
from verifybench.verifiers.llm import OpenAICompatible

STANDARD = Document(id="STD-BC", doc_type="standard", metadata={"ingredient_code": "BC-204"}, text=(
    "V-Label criteria. Requirements for beta-carotene (ingredient code BC-204).\n"
    "Prohibited processing aids: pork gelatin, fish gelatin, bone char.\n"
    "Permitted carriers: plant glycerol, sunflower lecithin.\n"
    "Required laboratory tests (reported on the certificate of analysis, CoA): animal DNA (PCR), milk protein (ELISA).\n"
    "Maximum animal DNA: 0.1 mg/kg."))
OTHER_STANDARD = Document(id="STD-SU", doc_type="standard", text=(
    "V-Label criteria. Requirements for refined cane sugar (ingredient code SU-001).\n"
    "Prohibited processing aids: bone char.\nMaximum animal DNA: 0.05 mg/kg."))
INTRO = Document(id="STD-INTRO", doc_type="standard", text=(
    "ISO 23662:2021 introduction. Terms for foods suitable for vegetarians or vegans, including beta-carotene."))


def coa(lot: str, carrier: str = "sunflower lecithin", dna: str = "0.02 mg/kg", tests: bool = True,
        note: str = "") -> Document:
    lines = [f"- animal DNA (PCR): {dna} (limit 0.1 mg/kg)"] + (["- milk protein (ELISA): not detected"] if tests else [])
    return Document(id=f"COA-{lot}", doc_type="CoA", metadata={"lot_id": lot, "ingredient_code": "BC-204"},
                    text=f"Certificate of analysis (CoA). beta-carotene, lot {lot}.\nCarrier: {carrier}.\n"
                         "Processing aids: none.\nResults:\n" + "\n".join(lines) + note)


def tds(lot: str, carrier: str) -> Document:
    return Document(id=f"TDS-{lot}", doc_type="TDS", metadata={"lot_id": lot, "ingredient_code": "BC-204"},
                    text=f"Technical data sheet (TDS specification). beta-carotene emulsion, lot {lot}.\n"
                         f"Carrier: {carrier}.\nProcessing aids: none.")


def criteria() -> VerificationCriterion:
    return RuleExtractor().extract("beta-carotene", [INTRO, OTHER_STANDARD, STANDARD])


# -- stage 1 ------------------------------------------------------------------------------------------------

def test_rule_extractor_builds_the_checklist_from_the_matching_excerpt_only():
    c = criteria()
    assert c.ingredient_name == "beta-carotene" and c.source_ids == ["STD-BC"]
    assert c.prohibited_processing_aids == ["pork gelatin", "fish gelatin", "bone char"]
    assert c.carrier_restrictions == ["plant glycerol", "sunflower lecithin"]
    assert c.required_lab_tests == ["animal DNA (PCR)", "milk protein (ELISA)"]
    assert c.max_threshold_ppm == pytest.approx(0.1) and c.threshold_analyte == "animal DNA"
    # The sugar excerpt and the introduction say nothing about beta-carotene.
    assert RuleExtractor().extract("beta-carotene", [INTRO, OTHER_STANDARD]) is None


def test_rule_extractor_converts_units_and_keeps_the_stricter_limit():
    strict = Document(id="S2", doc_type="standard", text="Requirements for beta-carotene (ingredient code BC-204).\n"
                                                         "Maximum animal DNA: 50 µg/kg.")
    c = RuleExtractor().extract("beta-carotene", [STANDARD, strict])
    assert c.max_threshold_ppm == pytest.approx(0.05) and c.source_ids == ["STD-BC", "S2"]


def test_llm_extractor_reads_the_schema_json_from_an_openai_compatible_server():
    reply = json.dumps({"ingredient_name": "beta-carotene", "prohibited_processing_aids": ["pork gelatin"],
                        "carrier_restrictions": ["plant glycerol"], "required_lab_tests": ["animal DNA (PCR)"],
                        "max_threshold_ppm": 0.1, "threshold_analyte": "animal DNA"})
    server = FakeLLM([reply, "not json at all", json.dumps({"ingredient_name": "x", "max_threshold_ppm": "high"})])
    try:
        extractor = LLMExtractor(OpenAICompatible("tiny", server.base_url, api_key_env="VERIFYBENCH_TEST_KEY"))
        c = extractor.extract("beta-carotene", [STANDARD])
        assert c.prohibited_processing_aids == ["pork gelatin"] and c.source_ids == ["STD-BC"]
        sent = server.requests[0]["messages"][0]["content"]
        assert "beta-carotene" in sent and "Prohibited processing aids: pork gelatin" in sent
        with pytest.raises(ValueError, match="not JSON"):
            extractor.extract("beta-carotene", [STANDARD])
        with pytest.raises(ValueError, match="max_threshold_ppm"):
            extractor.extract("beta-carotene", [STANDARD])
    finally:
        server.close()


# -- stage 2 ------------------------------------------------------------------------------------------------

def test_metadata_filter_narrows_candidates_before_scoring():
    docs = [coa("LOT-1"), coa("LOT-2"), tds("LOT-1", "sunflower lecithin"),
            Document(id="INV-LOT-1", doc_type="invoice", metadata={"lot_id": "LOT-1"}, text="Invoice for lot LOT-1, 50 kg.")]
    index = HybridIndex(docs)  # lexical only: no model needed to check the filter
    rows = index.candidates({"lot_id": "LOT-1", "doc_type": ["CoA", "TDS"]})
    assert [docs[i].id for i in rows] == ["COA-LOT-1", "TDS-LOT-1"]
    hits = index.search("carrier gelatin animal DNA", k=5, where={"lot_id": "LOT-1", "doc_type": ["CoA", "TDS"]})
    assert {h.doc.id for h in hits} == {"COA-LOT-1", "TDS-LOT-1"}
    # The CoA names the test the query asks for: BM25 ranks it first.
    assert hits[0].doc.id == "COA-LOT-1" and hits[0].bm25 > hits[1].bm25
    assert index.search("anything", where={"lot_id": "LOT-404"}) == []


def test_hybrid_search_fuses_bm25_and_embeddings(tmp_path):
    from verifybench.verifiers.anchors.encoders import CachedEncoder, make_encoder

    docs = [STANDARD, OTHER_STANDARD, INTRO]
    index = HybridIndex(docs, CachedEncoder(make_encoder("minilm"), tmp_path))
    hits = index.search("requirements and restrictions for beta-carotene", k=2)
    assert "STD-SU" not in [h.doc.id for h in hits] and all(h.cosine is not None for h in hits)
    # Reciprocal-rank fusion: each document's score is 1/(60 + its BM25 rank) + 1/(60 + its cosine rank).
    for h in hits:
        lex_rank = 1 + sum(o.bm25 > h.bm25 for o in hits)
        cos_rank = 1 + sum(o.cosine > h.cosine for o in hits)
        assert h.score == pytest.approx(1 / (60 + lex_rank) + 1 / (60 + cos_rank))
    assert pickle.loads(pickle.dumps(index)).search("sugar bone char", k=1)[0].doc.id == "STD-SU"
    # Three candidates, three places: nothing to rank, so no embeddings are computed.
    assert all(h.cosine is None for h in index.search("beta-carotene", k=3))


# -- stage 3 ------------------------------------------------------------------------------------------------

def statuses(checks):
    return {c.criterion: c.status for c in checks}


def test_matching_satisfied_with_quotes():
    checks = match_criteria(criteria(), [coa("LOT-1"), tds("LOT-1", "sunflower lecithin")])
    assert set(statuses(checks).values()) == {"satisfied"} and len(checks) == 3 + 1 + 2 + 1
    threshold = next(c for c in checks if c.kind == "threshold")
    assert threshold.evidence.startswith("animal DNA (PCR): 0.02 mg/kg") and threshold.doc_id == "COA-LOT-1"


def test_matching_forbidden_carrier_is_violated_with_the_evidence_line():
    checks = match_criteria(criteria(), [tds("LOT-9", "gelatine (porcine)"), coa("LOT-9", carrier="gelatine (porcine)")])
    s = statuses(checks)
    assert s["no pork gelatin (prohibited processing aid)"] == "violated"
    assert s["no fish gelatin (prohibited processing aid)"] == "satisfied"
    carrier = next(c for c in checks if c.kind == "carrier")
    assert carrier.status == "violated" and carrier.evidence == "Carrier: gelatine (porcine)."


def test_matching_threshold_in_other_units():
    over = match_criteria(criteria(), [coa("LOT-3", dna="350 µg/kg")])
    under = match_criteria(criteria(), [coa("LOT-3", dna="90 ppb")])
    assert next(c for c in over if c.kind == "threshold").status == "violated"
    assert next(c for c in under if c.kind == "threshold").status == "satisfied"


def test_missing_certificate_is_an_explicit_gap_naming_the_document_type():
    checks = match_criteria(criteria(), [tds("LOT-5", "sunflower lecithin")])
    gaps = [c for c in checks if c.status == "missing_evidence"]
    assert {c.kind for c in gaps} == {"lab_test", "threshold"}
    assert all(c.required_doc_type == "CoA" for c in gaps)
    # The TDS still settles the carrier questions.
    assert next(c for c in checks if c.kind == "carrier").status == "satisfied"
    # A CoA without the ELISA line: only that test is missing.
    partial = match_criteria(criteria(), [coa("LOT-6", tests=False)])
    assert [c.criterion for c in partial if c.status == "missing_evidence"] == ["CoA reports milk protein (ELISA)"]


# -- the pipelines and verifiers -----------------------------------------------------------------------------

SEED_QUESTION = "Does our beta-carotene colorant meet vegan certification requirements?"
SEED_ANSWER = ("Beta-carotene is of plant origin and suitable for vegetarians; the product is compliant, "
               "with a note about the shared production line.")


@pytest.fixture(scope="module")
def seed_corpus(tmp_path_factory):
    return write_seed_corpus(tmp_path_factory.mktemp("corpus") / "corpus.jsonl")


def write_seed_corpus(path):
    """The seed's corpus in miniature: the five plausible chunks a one-stage search finds, the standard, and the
    lot's own documents showing a pork-gelatin carrier."""
    docs = [
        STANDARD, OTHER_STANDARD, INTRO,
        Document(id="MKT", doc_type="marketing", metadata={"ingredient_code": "BC-204"},
                 text="Beta-carotene colorant: nature-identical, suitable for vegetarians, ideal for vegan certification "
                      "of plant drinks. Does our beta-carotene meet your needs? Yes!"),
        Document(id="ENC", doc_type="encyclopedia", text="Beta-carotene is a provitamin A colorant of plant origin."),
        Document(id="INV", doc_type="invoice", metadata={"lot_id": "LOT-9921"},
                 text="Invoice: 50 kg beta-carotene colorant, lot LOT-9921, delivered to the warehouse."),
        Document(id="ALG", doc_type="allergen_notice",
                 text="Allergen notice: beta-carotene colorant produced on a line that processes milk. "
                      "Vegan certification pending."),
        # Last year's lot: clean, and its certificate says so in the words of the question.
        coa("LOT-1000", note="\nConclusion: our beta-carotene colorant meets vegan certification requirements."),
        tds("LOT-9921", "pork gelatin"), coa("LOT-9921", carrier="pork gelatin"),
        tds("LOT-5555", "sunflower lecithin"),  # a lot without its certificate of analysis
    ]
    path.write_text("".join(d.model_dump_json() + "\n" for d in docs), encoding="utf-8")
    return path


def seed_case(lot: str, response: str = SEED_ANSWER, label: bool = True) -> Case:
    return Case(id=f"c-{lot}", dataset="t", question=SEED_QUESTION, response=response, label=label,
                sources=[Source(id="s", text="x")],
                meta={"ingredient": "beta-carotene", "ingredient_code": "BC-204", "lot_id": lot})


def test_seed_case_one_stage_false_positive_corrected_by_two_stage(seed_corpus, tmp_path):
    one = build("compliance-onestage", corpus=str(seed_corpus), cache_dir=str(tmp_path))
    two = build("compliance", corpus=str(seed_corpus), cache_dir=str(tmp_path))
    case = seed_case("LOT-9921")
    [v1], [v2] = one.verify([case]), two.verify([case])
    # One stage: the question pulls marketing text, an introduction and last year's clean certificate, not
    # the lot's own pork-gelatin CoA: nothing retrieved violates anything, and the claim passes unflagged.
    assert "COA-LOT-9921" not in v1.detail["evidence"] and "COA-LOT-1000" in v1.detail["evidence"]
    assert v1.detail["audit"] in ("compliant", "no_criteria") and not any(u.status == "violated" for u in v1.units or [])
    # Two stages: the checklist first, then the lot's CoA and TDS: the carrier violates it.
    assert v2.detail["audit"] == "violated" and v2.score == 1.0 > v1.score
    assert set(v2.detail["evidence"]) == {"COA-LOT-9921", "TDS-LOT-9921"}
    violated = [u for u in v2.units if u.status == "violated"]
    assert {u.detail["kind"] for u in violated} == {"prohibited_aid", "carrier"}
    assert all("pork gelatin" in u.evidence for u in violated)


def test_two_stage_gap_and_rejection_scores(seed_corpus, tmp_path):
    two = build("compliance", corpus=str(seed_corpus), cache_dir=str(tmp_path))
    gap, ok, wrong_no, right_no, unknown = two.verify([
        seed_case("LOT-5555"),
        seed_case("LOT-1000", "Yes, lot LOT-1000 is compliant.", label=False),
        seed_case("LOT-1000", "No, it is not compliant: the carrier may be animal.", label=True),
        seed_case("LOT-9921", "No. The lot is not compliant: its carrier is pork gelatin.", label=False),
        seed_case("LOT-1000", "Beta-carotene is orange."),
    ])
    assert gap.detail["audit"] == "missing_evidence" and gap.score == 0.9
    assert [u.detail["required_doc_type"] for u in gap.units if u.status == "missing_evidence"] == ["CoA"] * 3
    assert ok.detail["audit"] == "compliant" and ok.score == 0.0
    assert wrong_no.score == 0.8 and right_no.score == 0.0
    assert unknown.error and "neither claims nor denies" in unknown.error


@pytest.mark.parametrize("text, claim", [
    ("Lot 7 is compliant with V-Label.", True),
    ("No non-conformities were found; the lot is compliant.", True),
    ("No issues: lot 5 meets the vegan standard.", True),
    ("The lot is compliant; it does not fail the PCR test.", True),
    ("No. Lot 7 is not compliant: gelatin carrier.", False),
    ("Lot 5 isn't compliant.", False),
    ("The lot is not vegan compliant.", False),
    ("Lot 5 doesn't meet the standard.", False),
    ("The lot cannot be certified yet.", False),
    ("It is non-compliant.", False),
    ("Beta-carotene is orange.", None),
])
def test_claim_wording(text, claim):
    assert claims_compliance(text) is claim


@pytest.mark.parametrize("shown, ppm", [("1,500 µg/kg", 1.5), ("0,050 mg/kg", 0.05), (".05 mg/kg", 0.05),
                                        ("1 500 µg/kg", 1.5), ("0.5 μg/kg", 0.0005), ("350 ppb", 0.35)])
def test_quantities_in_any_common_notation(shown, ppm):
    from verifybench.verifiers.compliance.terms import QUANTITY, to_ppm

    assert to_ppm(*QUANTITY.search(shown).groups()) == pytest.approx(ppm)


def test_every_declaration_and_reading_counts_and_denied_aids_do_not():
    # Two certificates for one lot: the higher reading decides; a second, off-list carrier declaration too.
    second = Document(id="COA-LOT-7b", doc_type="CoA", metadata={"lot_id": "LOT-7"},
                      text="Certificate of analysis.\nCarrier: ethanol.\nResults:\n- animal DNA (PCR): 5 mg/kg")
    checks = {c.kind: c for c in match_criteria(criteria(), [coa("LOT-7"), second])}
    assert checks["threshold"].status == "violated" and checks["threshold"].doc_id == "COA-LOT-7b"
    assert checks["carrier"].status == "violated" and checks["carrier"].evidence == "Carrier: ethanol."
    # "(not bone char)" denies the aid; it does not declare it.
    denied = Document(id="TDS-8", doc_type="TDS", text="TDS.\nCarrier: sunflower lecithin.\n"
                                                         "Processing aids: activated carbon (not bone char).")
    s = statuses(match_criteria(criteria(), [denied]))
    assert s["no bone char (prohibited processing aid)"] == "satisfied"


def test_pipeline_restricts_evidence_to_the_lot_and_types(seed_corpus):
    docs = load_corpus(seed_corpus)
    std = [d for d in docs if d.doc_type == "standard"]
    pipe = TwoStagePipeline(HybridIndex(std), HybridIndex([d for d in docs if d.doc_type != "standard"]), RuleExtractor())
    audit, timing = pipe.audit("beta-carotene", "LOT-1000", "BC-204")
    # Only the lot's CoA: not the other lots' certificates, not its invoice. It declares the carrier itself.
    assert audit.evidence_ids == ["COA-LOT-1000"] and audit.status == "compliant"
    assert next(c for c in audit.checks if c.kind == "carrier").doc_id == "COA-LOT-1000"
    assert set(timing) == {"criteria_ms", "evidence_ms", "match_ms"}


def test_bad_corpus_line_names_file_line_and_field(tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_text('{"id": "a", "doc_type": "CoA", "text": "x"}\n{"id": "b", "text": "y"}\n')
    with pytest.raises(RecordError, match=r"c\.jsonl:2: field .doc_type.: Field required"):
        load_corpus(path)
    path.write_text('{"id": "a", "doc_type": "CoA", "text": "x"}\n{"id": "a", "doc_type": "CoA", "text": "y"}\n')
    with pytest.raises(RecordError, match="already used on line 1"):
        load_corpus(path)


def test_missing_ingredient_or_lot_and_a_bad_stated_claim_are_that_cases_errors(seed_corpus, tmp_path):
    two = build("compliance", corpus=str(seed_corpus), cache_dir=str(tmp_path))
    no_ingredient, no_lot, fine = seed_case("LOT-1000"), seed_case("LOT-1000"), seed_case("LOT-9921")
    no_ingredient.meta.pop("ingredient")
    no_lot.meta.pop("lot_id")
    a, b, c = two.verify([no_ingredient, no_lot, fine])
    assert a.error and "meta.ingredient" in a.error
    assert b.error and "meta.lot_id" in b.error
    assert c.ok and c.score == 1.0  # the batch goes on
    stated = build("compliance", corpus=str(seed_corpus), cache_dir=str(tmp_path), claim_field="meta.said")
    said_no, said_maybe = seed_case("LOT-9921"), seed_case("LOT-9921")
    said_no.meta["said"], said_maybe.meta["said"] = "false", "maybe"
    v_no, v_maybe = stated.verify([said_no, said_maybe])
    assert v_no.score == 0.0 and v_no.detail["claims_compliant"] is False  # a correct denial
    assert v_maybe.error and "meta.said" in v_maybe.error


def test_lot_ids_match_whether_stored_as_numbers_or_text(tmp_path):
    docs = [STANDARD, Document(id="C", doc_type="CoA", metadata={"lot_id": 123456}, text=coa("x").text)]
    path = tmp_path / "c.jsonl"
    path.write_text("".join(d.model_dump_json() + "\n" for d in docs))
    case = seed_case("LOT-x", response="Lot 123456 is compliant.", label=False)
    case.meta.update(lot_id="123456", ingredient_code=None)
    [v] = build("compliance", corpus=str(path), dense=False).verify([case])
    assert v.detail["evidence"] == ["C"]


@pytest.mark.slow
def test_shipped_dataset_two_stage_beats_one_stage_on_every_error_type(root, tmp_path):
    """The project's own dataset: every planted error type is caught by the two-stage audit, and the
    one-stage baseline misses some wrong-lot and forbidden-carrier claims (the seed's false positives)."""
    from collections import defaultdict

    cases = [Case(dataset="compliance", **json.loads(line))
             for line in (root / "datasets/compliance/cases.jsonl").read_text().splitlines()]
    corpus = str(root / "datasets/compliance/corpus.jsonl")
    recall: dict[str, dict[str, list[bool]]] = {}
    for name in ("compliance", "compliance-onestage"):
        verdicts = build(name, corpus=corpus, dense=False).verify(cases)
        assert all(v.ok for v in verdicts)
        per = defaultdict(list)
        for c, v in zip(cases, verdicts):
            if c.label:
                per[c.meta["error_type"]].append(v.score >= 0.5)
        recall[name] = per
    for error_type, flags in recall["compliance"].items():
        assert all(flags), error_type
    assert sum(map(sum, recall["compliance-onestage"].values())) < sum(map(len, recall["compliance-onestage"].values()))


# -- standards with editions, clauses and audit dates -------------------------------------------------------

def vlabel(edition: str, effective: str, limit: str, aids: str, section: str) -> Document:
    return Document(id=f"VL-{edition}", doc_type="standard", text=(
        f"V-Label criteria {edition}. Requirements for beta-carotene (ingredient code BC-204).\n"
        f"{section}.1 Prohibited processing aids: {aids}.\n"
        f"{section}.2 Permitted carriers: plant glycerol, sunflower lecithin.\n"
        f"{section}.3 Required laboratory tests (reported on the certificate of analysis, CoA): animal DNA (PCR).\n"
        f"{section}.4 Maximum animal DNA: {limit} mg/kg."),
        metadata={"standard_id": "V-LABEL", "edition": edition, "effective_date": effective})


EDITIONS = [vlabel("2021", "2021-03-01", "0.5", "pork gelatin", "2.3"),
            vlabel("2024", "2024-07-01", "0.1", "pork gelatin, bone char", "4.3"),
            vlabel("2027", "2027-01-01", "0.05", "pork gelatin, bone char, shellac", "6.1")]


def test_the_edition_in_force_at_a_date():
    import datetime as dt

    from verifybench.verifiers.compliance.standards import in_force

    docs = [*EDITIONS, INTRO]  # the introduction has no edition: always in force
    def ids(date):
        return [docs[i].id for i in in_force(docs, date)]
    assert ids(dt.date(2023, 5, 1)) == ["VL-2021", "STD-INTRO"]
    assert ids(dt.date(2024, 7, 1)) == ["VL-2024", "STD-INTRO"]  # the day it takes effect
    assert ids(None) == ["VL-2027", "STD-INTRO"]  # no date: the latest edition
    assert ids(dt.date(2020, 1, 1)) == ["STD-INTRO"]  # before any edition: none of it applies


def test_rule_extractor_names_the_clause_of_every_requirement():
    c = RuleExtractor().extract("beta-carotene", [EDITIONS[1]])
    assert c.ref("prohibited_processing_aids", "bone char").clause == "4.3.1"
    assert c.ref("carrier_restrictions").clause == "4.3.2"
    assert c.ref("required_lab_tests", "animal DNA (PCR)").clause == "4.3.3"
    ref = c.ref("max_threshold_ppm")
    assert (ref.standard_id, ref.edition, ref.clause, ref.doc_id) == ("V-LABEL", "2024", "4.3.4", "VL-2024")


def edition_corpus(path):
    docs = [*EDITIONS, INTRO, coa("LOT-7", dna="0.3 mg/kg"), tds("LOT-7", "sunflower lecithin")]
    path.write_text("".join(d.model_dump_json() + "\n" for d in docs), encoding="utf-8")
    return path


def test_the_audit_uses_the_edition_in_force_at_the_audit_date(tmp_path):
    corpus = edition_corpus(tmp_path / "c.jsonl")
    verifier = build("compliance", corpus=str(corpus), dense=False)
    early, late, undated = seed_case("LOT-7", "Yes, lot LOT-7 is compliant.", label=False), seed_case(
        "LOT-7", "Yes, lot LOT-7 is compliant.", label=True), seed_case("LOT-7", "Yes, lot LOT-7 is compliant.", label=True)
    early.meta["audit_date"], late.meta["audit_date"] = "2023-05-01", "2025-06-01"
    v_early, v_late, v_undated = verifier.verify([early, late, undated])
    # 0.3 mg/kg: within V-Label 2021's 0.5, over V-Label 2024's 0.1 (and 2027's 0.05, the latest edition).
    assert (v_early.detail["audit"], v_early.score, v_early.detail["editions"]) == ("compliant", 0.0, ["V-LABEL 2021"])
    assert (v_late.detail["audit"], v_late.score, v_late.detail["editions"]) == ("violated", 1.0, ["V-LABEL 2024"])
    assert v_late.detail["standards"] == ["VL-2024", "STD-INTRO"] and v_late.detail["audit_date"] == "2025-06-01"
    assert v_undated.detail["editions"] == ["V-LABEL 2027"]
    # Every criterion unit names the standard, its edition and the clause.
    threshold = next(u for u in v_late.units if u.detail["kind"] == "threshold")
    assert (threshold.detail["standard_id"], threshold.detail["edition"], threshold.detail["clause"]) == (
        "V-LABEL", "2024", "4.3.4")
    assert all(u.detail.get("standard_id") == "V-LABEL" and u.detail.get("clause") for u in v_late.units)
    assert {u.detail["clause"] for u in v_late.units if u.detail["kind"] == "prohibited_aid"} == {"4.3.1"}
    # The option sets the date for cases that carry none; a case's own date wins; a bad one is its error.
    by_option = build("compliance", corpus=str(corpus), dense=False, audit_date="2023-05-01")
    bad = seed_case("LOT-7", "Yes, lot LOT-7 is compliant.")
    bad.meta["audit_date"] = "last spring"
    v_opt, v_case, v_bad = by_option.verify([undated, late, bad])
    assert v_opt.detail["editions"] == ["V-LABEL 2021"] and v_case.detail["editions"] == ["V-LABEL 2024"]
    assert "field 'meta.audit_date': 'last spring' is not a date" in v_bad.error


def test_a_bad_effective_date_names_file_line_and_field(tmp_path):
    path = tmp_path / "c.jsonl"
    bad = vlabel("2024", "July 2024", "0.1", "pork gelatin", "4.3")
    path.write_text(INTRO.model_dump_json() + "\n" + bad.model_dump_json() + "\n")
    with pytest.raises(RecordError, match=r"c\.jsonl:2: field .metadata.effective_date.: 'July 2024' is not a date"):
        load_corpus(path)


def test_llm_extractor_requirements_get_their_clause_from_the_excerpt_text():
    reply = json.dumps({"ingredient_name": "beta-carotene", "prohibited_processing_aids": ["pork gelatine", "shellac"],
                        "carrier_restrictions": ["plant glycerol"], "required_lab_tests": ["animal DNA (PCR)"],
                        "max_threshold_ppm": 0.1, "threshold_analyte": "animal DNA", "refs": "garbage"})
    server = FakeLLM([reply])
    try:
        extractor = LLMExtractor(OpenAICompatible("tiny", server.base_url, api_key_env="VERIFYBENCH_TEST_KEY"))
        c = extractor.extract("beta-carotene", [EDITIONS[0], EDITIONS[1]])
        # The schema sent asks for the checklist only, not for provenance.
        assert "refs" not in json.dumps(server.requests[0]["response_format"])
    finally:
        server.close()
    # "pork gelatine" is found (synonyms folded) on the first excerpt's clause line; "shellac" is in neither
    # excerpt, so it has no clause: an extraction the standards do not back.
    ref = c.ref("prohibited_processing_aids", "pork gelatine")
    assert (ref.doc_id, ref.clause, ref.edition) == ("VL-2021", "2.3.1", "2021")
    assert c.ref("prohibited_processing_aids", "shellac") is None
    assert c.ref("max_threshold_ppm").clause == "2.3.4" and c.ref("carrier_restrictions").clause == "2.3.2"


def test_the_llm_extractor_on_the_local_backend_audits_an_edition_and_counts_its_calls(tmp_path):
    # `backend: local` with a base_url talks to that server as llama.cpp's (the schema inside json_object);
    # a 429 is retried; the verdict carries the edition read, the clause found in the text, and the calls
    # (a local model costs nothing).
    reply = json.dumps({"ingredient_name": "beta-carotene", "prohibited_processing_aids": ["pork gelatin"],
                        "carrier_restrictions": ["plant glycerol", "sunflower lecithin"], "required_lab_tests": [],
                        "max_threshold_ppm": 0.1, "threshold_analyte": "animal DNA"})
    server = FakeLLM([429, reply])
    try:
        verifier = build("compliance", corpus=str(edition_corpus(tmp_path / "c.jsonl")), dense=False, extractor="llm",
                         llm={"backend": "local", "model": "smollm2", "base_url": server.base_url,
                              "backoff_s": 0.01, "max_backoff_s": 0.02})
        case = seed_case("LOT-7", "Yes, lot LOT-7 is compliant.")
        case.meta["audit_date"] = "2025-06-01"
        (verdict,) = verifier.verify([case])
        assert server.requests[-1]["response_format"]["type"] == "json_object"
        assert "schema" in server.requests[-1]["response_format"]
    finally:
        server.close()
    assert verdict.error is None, verdict.error
    assert (verdict.detail["audit"], verdict.detail["editions"]) == ("violated", ["V-LABEL 2024"])  # 0.3 > 0.1
    threshold = next(u for u in verdict.units if u.detail["kind"] == "threshold")
    assert (threshold.detail["edition"], threshold.detail["clause"]) == ("2024", "4.3.4")
    assert (verdict.usage["requests"], verdict.usage["retries"]) == (2, 1) and verdict.cost_usd == 0.0
    # The backend and model are in the config hash; how patient the client is is not.
    patient = build("compliance", corpus="c.jsonl", extractor="llm", llm={"backend": "local", "model": "smollm2",
                                                                          "retries": 9, "timeout_s": 5})
    assert patient.config_hash == build("compliance", corpus="c.jsonl", extractor="llm",
                                        llm={"backend": "local", "model": "smollm2"}).config_hash
    assert patient.config_hash != build("compliance", corpus="c.jsonl", extractor="llm",
                                        llm={"backend": "openai", "model": "smollm2"}).config_hash
