"""Term normalisation shared by the extractor and the matcher: one spelling per substance, so that
"gelatine (porcine)" in a supplier sheet matches the standard's "pork gelatin"."""

from __future__ import annotations

import re

_WORD = re.compile(r"[a-z0-9µ]+")
SYNONYMS = {
    "gelatine": "gelatin", "porcine": "pork", "pig": "pork", "swine": "pork", "beef": "bovine", "cattle": "bovine",
    "glycerine": "glycerol", "glycerin": "glycerol", "vegetable": "plant", "plants": "plant", "lecithine": "lecithin",
    "caseinate": "caseinate", "caseins": "casein", "coa": "coa", "certificate": "certificate",
}
STOP = {"of", "the", "a", "an", "and", "or", "origin", "derived", "based", "from", "only", "with"}


def tokens(text: str) -> set[str]:
    """Lower-cased word tokens with synonyms folded and filler words dropped."""
    return {SYNONYMS.get(w, w) for w in _WORD.findall(text.lower())} - STOP


def mentions(clause: str, term: str) -> bool:
    """True when every content word of `term` occurs in `clause` (order-free: "gelatin (pork)" mentions
    "pork gelatin"). An empty term mentions nothing."""
    want = tokens(term)
    return bool(want) and want <= tokens(clause)


def split_list(text: str) -> list[str]:
    """Split "a, b (x, y), c and d" at commas and a final "and", never inside parentheses."""
    parts: list[str] = []
    cur: list[str] = []
    depth = 0
    for ch in text:
        depth += ch == "("
        depth -= ch == ")"
        if ch in ",;" and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    out = []
    for p in parts:
        out.extend(re.split(r"\s+and\s+(?![^()]*\))", p))
    return [p.strip(" .") for p in out if p.strip(" .")]


# Units of a contamination measurement, as a factor to mg/kg (= ppm).
TO_PPM = {"mg/kg": 1.0, "ppm": 1.0, "µg/kg": 1e-3, "ug/kg": 1e-3, "ppb": 1e-3, "mg/g": 1e3, "g/kg": 1e3, "%": 1e4}
# A number ("0.05", ".05", "0,05", "1,500", "1 500") and its unit; µ may be the micro sign or Greek mu.
QUANTITY = re.compile(r"([1-9]\d{0,2}(?:[ ,]\d{3})+(?:\.\d+)?|\d*[.,]?\d+)\s*(mg/kg|ppm|[µμu]g/kg|ppb|mg/g|g/kg|%)", re.I)


def to_ppm(value: str, unit: str) -> float:
    """`value` in `unit` as mg/kg. A comma before exactly three digits, after a leading 1-9, groups
    thousands ("1,500"); any other comma is a decimal comma ("0,05", "0,050")."""
    v = value.replace(" ", "")
    v = v.replace(",", "") if re.fullmatch(r"[1-9]\d{0,2}(,\d{3})+(\.\d+)?", v) else v.replace(",", ".")
    return float(v) * TO_PPM[unit.lower().replace("μ", "µ").replace("ug", "µg")]
