"""Write datasets/compliance/: verifybench's own vegan-certification audit set, seeded and reproducible.

The scenario of the two-stage compliance seed: a manufacturer asks whether an ingredient lot meets a
vegan standard (V-Label / ISO 23662-style rules). The corpus mixes what a company document store holds:

- `standard`: one excerpt per ingredient: prohibited processing aids, permitted carriers, the
  laboratory tests a certificate of analysis must report, and the contamination threshold; plus
  general introductions that define terms but set no requirement.
- per lot: a TDS specification and a CoA (certificate of analysis) carrying the lot id, an invoice.
- per ingredient: a supplier marketing slide, an encyclopedia-style entry and an allergen notice.

Each lot is planted with one state: `ok`, `forbidden_carrier` (the TDS/CoA carrier is a prohibited
aid, e.g. pork gelatin in a beta-carotene emulsion), `missing_certificate` (no CoA for the lot, or a
CoA without a required test), `above_threshold` (the CoA's measured value is over the limit, sometimes
stated in another unit), `wrong_lot` (no CoA for this lot, while a sibling lot of the same ingredient
has a clean one).

Standards come in editions: every excerpt carries `standard_id`, `edition` and `effective_date` in its
metadata and numbers its requirement lines with clause ids ("4.3.1 Prohibited processing aids: ...").
Ingredients under the V-Label criteria also have the superseded 2021 edition (effective 2021-03-01: a
contamination limit five times looser, one prohibited aid fewer) beside the 2024 one (effective
2024-07-01), and one more lot each whose reading sits between the two limits (`between_limits`): a
compliance claim about it is faithful at an audit on 2023-05-01 and hallucinated (`superseded_edition`)
at one on 2025-06-01. Every case has its `meta.audit_date` (2025-06-01 unless it says otherwise).

Cases (`cases.jsonl`): a question about one lot and an answer. A compliance claim about an `ok` lot and
a correct rejection of a bad lot are faithful; a compliance claim about a bad lot is hallucinated
(`meta.error_type` = the lot's state), and so is a rejection of an `ok` lot (`false_rejection`). Each
case's sources are what the answering model was shown: the ingredient's marketing slide, its standard
excerpt and the lot's documents. All cases of one ingredient share a split.

    python datasets/compliance/generate.py                    # rewrites corpus.jsonl and cases.jsonl here
    python datasets/compliance/generate.py --docs 50000 --out /tmp/c50k   # a scaled corpus for benchmarks
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

SEED = 20261130
HERE = Path(__file__).resolve().parent
LOT_STATES = ("ok", "forbidden_carrier", "missing_certificate", "above_threshold", "wrong_lot")

# Requirement families: prohibited processing aids, permitted carriers ("none": supplied without one),
# required tests, the threshold's analyte and limit in mg/kg, where the risk sits ("carrier" or "aid"),
# the prohibited material planted in a bad lot and the permitted ones used in good lots.
FAMILIES = {
    "emulsion_colour": (["pork gelatin", "fish gelatin", "bone char"],
                        ["plant glycerol", "synthetic glycerol", "sunflower lecithin", "gum arabic"],
                        ["animal DNA (PCR)", "milk protein (ELISA)"], "animal DNA", 0.1, "carrier", "pork gelatin",
                        ["plant glycerol", "sunflower lecithin", "gum arabic"]),
    "beadlet_vitamin": (["pork gelatin", "bovine gelatin", "fish gelatin"],
                        ["modified starch", "gum arabic", "plant glycerol"],
                        ["animal DNA (PCR)"], "animal DNA", 0.1, "carrier", "bovine gelatin",
                        ["modified starch", "gum arabic"]),
    "refined_sugar": (["bone char"], ["none"], ["animal DNA (PCR)"], "animal DNA", 0.05, "aid", "bone char",
                      ["activated carbon", "ion-exchange resin"]),
    "fined_liquid": (["isinglass", "fish gelatin", "casein"], ["none"],
                     ["milk protein (ELISA)", "fish protein (ELISA)"], "milk protein", 2.5, "aid", "casein",
                     ["bentonite", "pea protein"]),
    "fat_derived": (["tallow", "animal glycerol"], ["palm oil", "sunflower oil", "rapeseed oil"],
                    ["animal DNA (PCR)", "fatty acid profile (GC)"], "animal DNA", 0.2, "carrier", "tallow",
                    ["palm oil", "sunflower oil", "rapeseed oil"]),
    "powder_carrier": (["sodium caseinate", "lactose", "pork gelatin"], ["maltodextrin", "gum arabic", "pea protein"],
                       ["milk protein (ELISA)"], "milk protein", 1.0, "carrier", "sodium caseinate",
                       ["maltodextrin", "gum arabic"]),
    "softgel": (["bovine gelatin", "pork gelatin", "fish gelatin"], ["pullulan", "modified starch", "carrageenan"],
                ["animal DNA (PCR)", "peroxide value"], "animal DNA", 0.1, "carrier", "bovine gelatin",
                ["pullulan", "carrageenan"]),
}

# (name, ingredient code, form, family). Beta-carotene BC-204 is the seed's case.
INGREDIENTS = [
    ("beta-carotene", "BC-204", "30% emulsion colorant", "emulsion_colour"),
    ("paprika extract", "PX-118", "oleoresin emulsion", "emulsion_colour"),
    ("lutein", "LU-310", "10% emulsion", "emulsion_colour"),
    ("curcumin", "CU-152", "water-dispersible colorant", "emulsion_colour"),
    ("apocarotenal", "AP-160", "emulsion colorant", "emulsion_colour"),
    ("lycopene", "LY-161", "10% dispersion", "emulsion_colour"),
    ("vitamin A palmitate", "VA-250", "250 CWS beadlets", "beadlet_vitamin"),
    ("vitamin D3", "VD-100", "100 CWS beadlets", "beadlet_vitamin"),
    ("vitamin E acetate", "VE-500", "50% powder", "beadlet_vitamin"),
    ("vitamin K2", "VK-020", "beadlets", "beadlet_vitamin"),
    ("coenzyme Q10", "CQ-010", "water-soluble beadlets", "beadlet_vitamin"),
    ("refined cane sugar", "SU-001", "granulated sugar", "refined_sugar"),
    ("icing sugar", "SU-004", "powdered sugar", "refined_sugar"),
    ("brown sugar", "SU-007", "soft brown sugar", "refined_sugar"),
    ("apple juice concentrate", "AJ-070", "70 Brix concentrate", "fined_liquid"),
    ("white wine vinegar", "WV-006", "6% acidity vinegar", "fined_liquid"),
    ("grape juice concentrate", "GJ-065", "65 Brix concentrate", "fined_liquid"),
    ("pear juice concentrate", "PJ-070", "70 Brix concentrate", "fined_liquid"),
    ("mono- and diglycerides", "MD-471", "E471 emulsifier", "fat_derived"),
    ("stearic acid", "SA-570", "E570 flakes", "fat_derived"),
    ("glycerol", "GL-422", "E422 liquid", "fat_derived"),
    ("magnesium stearate", "MS-470", "E470b powder", "fat_derived"),
    ("polysorbate 80", "PS-433", "E433 emulsifier", "fat_derived"),
    ("coconut milk powder", "CM-060", "60% fat powder", "powder_carrier"),
    ("vanilla flavouring", "VN-002", "natural flavour powder", "powder_carrier"),
    ("cheese-style flavouring", "CF-014", "savoury flavour powder", "powder_carrier"),
    ("sunflower oil powder", "SO-050", "50% fat powder", "powder_carrier"),
    ("cocoa flavour", "CO-021", "spray-dried flavour", "powder_carrier"),
    ("algal omega-3 oil", "AO-340", "softgel fill", "softgel"),
    ("vitamin D2 softgel", "VS-002", "softgel", "softgel"),
    ("iron bisglycinate", "IB-025", "softgel premix", "softgel"),
    ("zinc gluconate", "ZG-014", "softgel premix", "softgel"),
]

LABS = ["Eurofins Hamburg", "SGS Fresenius", "Intertek Food Services", "ALS Czech Republic", "Bureau Veritas Lab"]
SUPPLIERS = ["Carotech Ingredients", "NovaColor BV", "Verdant Nutrition", "Sweetfield Refining", "Orchard Juices SA",
             "Lipid Solutions GmbH", "PowderTech Ltd", "CapsuLab Inc."]
STANDARDS = ["V-Label criteria v2024", "ISO 23662:2021 section 5", "Vegan Society trademark standard"]
# standard name -> (standard id, edition, effective date, clause section the ingredient excerpts sit in)
EDITIONS = {"V-Label criteria v2024": ("V-LABEL", "2024", "2024-07-01", 4),
            "ISO 23662:2021 section 5": ("ISO-23662", "2021", "2021-06-01", 5),
            "Vegan Society trademark standard": ("VEGAN-SOCIETY-TM", "2023", "2023-01-01", 3)}
OLD_VLABEL = ("V-Label criteria v2021", "2021", "2021-03-01", 2)  # superseded by V-Label 2024
AUDIT_DATE, EARLY_AUDIT = "2025-06-01", "2023-05-01"  # the usual audit date, and one before V-Label 2024


def _lot(rng: random.Random, used: set[str]) -> str:
    while (lot := f"LOT-{rng.randint(1000, 999999 if len(used) > 5000 else 99999)}") in used or lot == "LOT-9921":
        pass
    used.add(lot)
    return lot


def standard_doc(name: str, code: str, family: str, rng: random.Random, k: int = 0) -> dict:
    std = rng.choice(STANDARDS)
    return _standard_text(name, code, family, std, *EDITIONS[std], k)


def _standard_text(name: str, code: str, family: str, std: str, standard_id: str, edition: str, effective: str,
                   section: int, k: int, old: bool = False) -> dict:
    aids, carriers, tests, analyte, limit, *_ = FAMILIES[family]
    if old:  # the superseded edition: one prohibited aid fewer, a limit five times looser
        aids, limit = aids[:-1] or aids, limit * 5
    carrier_line = ("Permitted carriers: none (the ingredient is supplied without a carrier)." if carriers == ["none"]
                    else f"Permitted carriers: {', '.join(carriers)}.")
    c = f"{section}.{k + 1}"
    text = (f"{std}. {c} Requirements for {name} (ingredient code {code}).\n"
            f"{c}.1 Prohibited processing aids: {', '.join(aids)}.\n"
            f"{c}.2 {carrier_line}\n"
            f"{c}.3 Required laboratory tests (reported on the certificate of analysis, CoA): {', '.join(tests)}.\n"
            f"{c}.4 Maximum {analyte}: {limit:g} mg/kg.")
    return {"id": f"STD-{code}-{edition}" if old else f"STD-{code}", "doc_type": "standard", "text": text,
            "metadata": {"ingredient": name, "ingredient_code": code, "standard": std, "standard_id": standard_id,
                         "edition": edition, "effective_date": effective}}


INTROS = [
    "ISO 23662:2021 introduction. This document specifies terms and technical criteria for foods and food "
    "ingredients suitable for vegetarians or vegans and for labelling and claims. Plant-based products are "
    "products derived from plants, fungi, algae or microorganisms.",
    "V-Label general terms. A vegan product contains no ingredients of animal origin. Vegetarian products may "
    "contain milk, eggs and honey. Certification applies to the finished product and to every ingredient.",
    "Vegan Society trademark overview. The trademark certifies that a product and its ingredients are free "
    "from animal involvement and have not been tested on animals by the manufacturer.",
]


def material_of(family: str, state: str, rng: random.Random) -> str:
    """The carrier (or processing aid) a lot was made with: the prohibited one for `forbidden_carrier`."""
    *_, bad, good = FAMILIES[family]
    return bad if state == "forbidden_carrier" else rng.choice(good)


def _declared(family: str, material: str) -> tuple[str, str]:
    """(carrier, processing aids) as a supplier document states them."""
    return ("none", material) if FAMILIES[family][5] == "aid" else (material, "none")


def _material_phrase(family: str, material: str) -> str:
    return f"it is processed with {material}" if FAMILIES[family][5] == "aid" else f"the carrier is {material}"


def tds_doc(name: str, code: str, form: str, lot: str, material: str, family: str, supplier: str) -> dict:
    carrier, aids = _declared(family, material)
    text = (f"Technical data sheet (TDS specification). {name}, {form}. Supplier {supplier}. "
            f"Ingredient code {code}, lot {lot}.\nCarrier: {carrier}.\nProcessing aids: {aids}.\n"
            f"Storage: cool and dry, below 25 C, protected from light. Shelf life 24 months.")
    return {"id": f"TDS-{lot}", "doc_type": "TDS", "text": text,
            "metadata": {"ingredient": name, "ingredient_code": code, "lot_id": lot}}


def coa_doc(name: str, code: str, lot: str, material: str, family: str, state: str, rng: random.Random,
            drop_test: bool = False) -> dict:
    _, _, tests, analyte, limit, *_ = FAMILIES[family]
    lines = []
    for i, test in enumerate(tests):
        if drop_test and i == len(tests) - 1:
            continue
        if test.lower().startswith(analyte.lower()):
            hi = state == "above_threshold"
            value = round(limit * (rng.uniform(1.6, 5.0) if hi else rng.uniform(0.05, 0.6)), 4)
            shown = rng.choice([f"{value:g} mg/kg", f"{value:g} ppm", f"{round(value * 1000, 1):g} µg/kg"])
            lines.append(f"- {test}: {shown} (limit {limit:g} mg/kg)")
        elif "ELISA" in test:
            lines.append(f"- {test}: not detected (< 0.5 mg/kg)")
        else:
            lines.append(f"- {test}: conforms to specification")
    lines.append(f"- Assay (HPLC): {rng.uniform(95, 101):.1f} % of declared content")
    carrier, aids = _declared(family, material)
    text = (f"Certificate of analysis (CoA). {name}, ingredient code {code}, lot {lot}. "
            f"Issued by {rng.choice(LABS)}.\nCarrier: {carrier}.\nProcessing aids: {aids}.\nResults:\n"
            + "\n".join(lines) + "\nThe lot was released by quality assurance.")
    return {"id": f"COA-{lot}", "doc_type": "CoA", "text": text,
            "metadata": {"ingredient": name, "ingredient_code": code, "lot_id": lot}}


def distractors(name: str, code: str, form: str, supplier: str, lots: list[str], rng: random.Random) -> list[dict]:
    meta = {"ingredient": name, "ingredient_code": code}
    out = [
        {"id": f"MKT-{code}", "doc_type": "marketing", "metadata": meta,
         "text": f"{supplier} presents {name} ({form}): nature-identical, 100% plant-derived colour and nutrition, "
                 f"suitable for vegetarians and ideal for vegan plant-based drinks. Certified quality you can trust."},
        {"id": f"ENC-{code}", "doc_type": "encyclopedia", "metadata": meta,
         "text": f"{name.capitalize()} is a food additive used in beverages, dairy alternatives and supplements. "
                 f"It is typically produced by synthesis or extraction from plants, algae or fermentation."},
        {"id": f"ALG-{code}", "doc_type": "allergen_notice", "metadata": meta,
         "text": f"Allergen notice for {name}: produced on a line that also processes milk products. "
                 f"May contain traces of milk. Suitable for vegetarians."},
    ]
    for lot in lots:
        kg = rng.choice([25, 50, 100, 250])
        out.append({"id": f"INV-{lot}", "doc_type": "invoice", "metadata": {**meta, "lot_id": lot},
                    "text": f"Invoice {rng.randint(10000, 99999)}: delivery of {kg} kg {name} ({form}), ingredient code "
                            f"{code}, lot {lot}, from {supplier} to the central warehouse. Goods received in good order."})
    return out


SEED_QUESTION = "Does our beta-carotene colorant meet vegan certification requirements?"
# Users ask about an ingredient, sometimes naming the lot; the lot under audit is always in meta.lot_id.
QUESTIONS = [
    "Does our {name} meet vegan certification requirements?",
    "Does our {name} ({code}, lot {lot}) meet vegan certification requirements?",
    "Is {name} lot {lot} compliant with the vegan standard?",
    "Can we use {name} from lot {lot} in a V-Label certified plant drink?",
]
YES = [
    "Yes. {Name} lot {lot} is compliant with the vegan certification: {material} and the certificate "
    "of analysis reports {analyte} below {limit:g} mg/kg.",
    "{Name} is of plant origin and suitable for vegetarians; lot {lot} is compliant, with a note about the shared "
    "production line.",
    "Lot {lot} of {name} meets the vegan standard. The documentation confirms a plant-based formulation.",
]
NO = {
    "forbidden_carrier": "No. {Name} lot {lot} is not compliant: its carrier is {bad}, which the standard prohibits.",
    "missing_certificate": "No. Lot {lot} of {name} cannot be certified yet: the certificate of analysis with the "
                           "required laboratory tests is missing.",
    "above_threshold": "No. {Name} lot {lot} is not compliant: the certificate of analysis reports {analyte} above "
                       "the {limit:g} mg/kg limit.",
    "wrong_lot": "No. There is no certificate of analysis for {name} lot {lot}; the available CoA is for another "
                 "lot, so compliance is not demonstrated.",
    "ok": "No. {Name} lot {lot} is not compliant: the carrier may be of animal origin.",
}


def build(rng: random.Random, lots_per_ingredient: int = 3, ingredients=INGREDIENTS, cases: bool = True,
          ) -> tuple[list[dict], list[dict]]:
    docs = [{"id": f"STD-INTRO-{i}", "doc_type": "standard", "text": t, "metadata": {"ingredient": None}}
            for i, t in enumerate(INTROS)]
    out_cases, used = [], set()
    for k, (name, code, form, family) in enumerate(ingredients):
        _, _, tests, analyte, limit, _, bad, _ = FAMILIES[family]
        supplier = rng.choice(SUPPLIERS)
        docs.append(standard_doc(name, code, family, rng, k))
        lots = [_lot(rng, used) for _ in range(lots_per_ingredient)]
        # The first lot of every ingredient is clean (so `wrong_lot` has a sibling CoA); the seed's case is
        # beta-carotene with a pork-gelatin carrier.
        states = ["ok"] + [LOT_STATES[(k + j) % (len(LOT_STATES) - 1) + 1] for j in range(lots_per_ingredient - 1)]
        if code == "BC-204":
            lots[1], states[1] = "LOT-9921", "forbidden_carrier"
        docs.extend(distractors(name, code, form, supplier, lots, rng))
        for lot, state in zip(lots, states):
            material = material_of(family, state, rng)
            docs.append(tds_doc(name, code, form, lot, material, family, supplier))
            if state not in ("missing_certificate", "wrong_lot") or (state == "missing_certificate" and rng.random() < 0.5):
                docs.append(coa_doc(name, code, lot, material, family, state, rng,
                                    drop_test=state == "missing_certificate"))
            if not cases:
                continue
            split = "calibration" if k % 2 == 0 else "test"
            fill = {"name": name, "Name": name[0].upper() + name[1:], "code": code, "lot": lot,
                    "material": _material_phrase(family, material if state != "forbidden_carrier"
                                                         else rng.choice(FAMILIES[family][7])),
                    "analyte": analyte, "limit": limit,
                    "bad": bad}
            sources_ids = [f"MKT-{code}", f"STD-{code}", f"TDS-{lot}", f"COA-{lot}"]
            # Two different compliance claims; the seed's own answer is among LOT-9921's.
            yes = [YES[1], YES[0]] if lot == "LOT-9921" else rng.sample(YES, 2)
            variants = [(yes[0], state != "ok", state if state != "ok" else "none"),
                        (yes[1], state != "ok", state if state != "ok" else "none"),
                        (NO[state], state == "ok", "false_rejection" if state == "ok" else "none")]
            for j, (template, label, error_type) in enumerate(variants):
                out_cases.append({
                    "id": f"{code}-{lot}-{j}", "doc_type": "vegan_audit", "split": split,
                    "question": SEED_QUESTION if lot == "LOT-9921" else rng.choice(QUESTIONS).format(**fill),
                    "response": template.format(**fill), "label": label,
                    "source_ids": sources_ids,
                    "meta": {"ingredient": name, "ingredient_code": code, "lot_id": lot, "lot_state": state,
                             "error_type": error_type, "claims_compliant": template in YES,
                             "audit_date": AUDIT_DATE},
                })
    editions(docs, out_cases, used, ingredients, cases)
    by_id = {d["id"]: d for d in docs}
    for case in out_cases:
        case["sources"] = [{"id": i, "text": by_id[i]["text"], "metadata": {"doc_type": by_id[i]["doc_type"]}}
                           for i in case.pop("source_ids") if i in by_id]
    return docs, out_cases


def editions(docs: list[dict], out_cases: list[dict], used: set[str], ingredients, cases: bool) -> None:
    """The superseded V-Label 2021 excerpts, and per V-Label ingredient one lot between the two editions'
    limits with its cases at two audit dates. A generator of its own, so the rest of the set is unchanged."""
    rng = random.Random(SEED + 2021)
    for k, (name, code, form, family) in enumerate(ingredients):
        current = next(d for d in docs if d["id"] == f"STD-{code}")
        if current["metadata"]["standard_id"] != "V-LABEL":
            continue
        std, edition, effective, section = OLD_VLABEL
        docs.append(_standard_text(name, code, family, std, "V-LABEL", edition, effective, section, k, old=True))
        _, _, tests, analyte, limit, _, _, good = FAMILIES[family]
        lot, material = _lot(rng, used), rng.choice(good)
        carrier, aids = _declared(family, material)
        reading = round(limit * rng.uniform(1.5, 4.0), 4)  # over the 2024 limit, under the 2021 one (5x)
        lines = [f"- {t}: {reading:g} mg/kg (limit {limit * 5:g} mg/kg)" if t.lower().startswith(analyte.lower())
                 else f"- {t}: not detected (< 0.5 mg/kg)" if "ELISA" in t else f"- {t}: conforms to specification"
                 for t in tests]
        supplier = rng.choice(SUPPLIERS)
        docs.append(tds_doc(name, code, form, lot, material, family, supplier))
        docs.append({"id": f"COA-{lot}", "doc_type": "CoA", "metadata": {"ingredient": name, "ingredient_code": code,
                                                                        "lot_id": lot},
                     "text": (f"Certificate of analysis (CoA). {name}, ingredient code {code}, lot {lot}. Issued by "
                              f"{rng.choice(LABS)}.\nCarrier: {carrier}.\nProcessing aids: {aids}.\nResults:\n"
                              + "\n".join(lines) + "\nThe lot was released by quality assurance.")})
        if not cases:
            continue
        fill = {"name": name, "Name": name[0].upper() + name[1:], "code": code, "lot": lot, "analyte": analyte,
                "limit": limit, "material": _material_phrase(family, material), "bad": ""}
        split = "calibration" if k % 2 == 0 else "test"
        for j, (template, date, label, error_type) in enumerate((
                (YES[0], EARLY_AUDIT, False, "none"), (YES[0], AUDIT_DATE, True, "superseded_edition"),
                (NO["above_threshold"], AUDIT_DATE, False, "none"))):
            out_cases.append({
                "id": f"{code}-{lot}-{j}", "doc_type": "vegan_audit", "split": split,
                "question": rng.choice(QUESTIONS).format(**fill), "response": template.format(**fill), "label": label,
                "source_ids": [f"MKT-{code}", f"STD-{code}", f"TDS-{lot}", f"COA-{lot}"],
                "meta": {"ingredient": name, "ingredient_code": code, "lot_id": lot, "lot_state": "between_limits",
                         "error_type": error_type, "claims_compliant": template in YES, "audit_date": date},
            })


def scaled_corpus(n_docs: int, rng: random.Random) -> list[dict]:
    """A corpus of about `n_docs` documents: the bundled ingredients with many more lots each, so that
    metadata filters have real work to do."""
    per_lot = 2.6  # TDS, invoice and (mostly) CoA, plus the per-ingredient documents
    lots = max(3, int(n_docs / (len(INGREDIENTS) * per_lot)))
    docs, _ = build(rng, lots_per_ingredient=lots, cases=False)
    return docs


def write_jsonl(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=HERE)
    ap.add_argument("--docs", type=int, default=0, help="write only a scaled corpus of about this many documents")
    args = ap.parse_args(argv)
    rng = random.Random(SEED)
    if args.docs:
        docs = scaled_corpus(args.docs, rng)
        write_jsonl(args.out / "corpus.jsonl", docs)
        print(f"{len(docs)} documents -> {args.out / 'corpus.jsonl'}")
        return
    docs, cases = build(rng)
    write_jsonl(args.out / "corpus.jsonl", docs)
    write_jsonl(args.out / "cases.jsonl", cases)
    print(f"{len(docs)} documents, {len(cases)} cases -> {args.out}")


if __name__ == "__main__":
    main()
