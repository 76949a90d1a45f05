"""Swapped roles, plans and tiers: the claim fills a slot of the evidence's statement with another term.

"Billing managers can unlock it" against "Owners can unlock accounts", "Monthly plans can be refunded"
against "Annual plans can be refunded": every word is in the sources, the cosine is high, and no number,
date or name differs. What differs is who or which one the statement is about. Read with the parser the
project already loads (spaCy's small English pipeline), a claim and the evidence it matches fill the
same grammatical slot (the subject of the same verb, a modifier of the same noun, the object of the
same preposition) with different words; that is a swap when

- the two statements are about the same thing (they share two content words, `same_topic`),
- the two words are of one kind (the same part of speech), the evidence's word is nowhere in the
  claim (coordinated words share their slot: "for Owners" against "for Admins and Owners" is no swap),
  and the claim's word is not merely moved: the evidence holds it less often than the claim does
  ("Members can unlock it from the Members page" against "Owners can unlock accounts from the Members
  page" is a swap; "Billing is handled by chat" against "Billing questions are handled by chat" is not),
- the claim is short (at most `MAX_CLAIM_WORDS` content words),
- and the claim's word is one the case's sources use elsewhere: the sources name it as another role,
  plan or option, so the answer put one named thing where the sources put another. A word the sources
  never use is left alone (a paraphrase's synonym, "our team" for "our support staff"; an unknown name
  is the entity check's).

Nothing here lists roles or plans: the slots come from the parse, the alternatives from the sources.
English only. Units of time are left to the duration check ("two weeks" against "14 days").
"""

from __future__ import annotations

from collections import Counter
from functools import lru_cache

from verifybench.verifiers.anchors.facts import words
from verifybench.verifiers.anchors.quantities import UNITS, _stem, same_topic

# Dependency labels grouped into slots: a noun's modifier is one slot however the parser labels it
# ("Free plan" may come out amod or compound), a subject one slot, active or passive.
_SLOT = {"nsubj": "subject", "nsubjpass": "subject", "amod": "modifier", "compound": "modifier",
         "dobj": "object", "attr": "object", "pobj": "object"}
_FILLERS = {"NOUN", "PROPN", "ADJ"}
# A swap is read in a short statement only, the length of a support answer's sentence. In long free-form
# sentences a slot's other word is more often a paraphrase or an elaboration ("fees vary depending on
# experience" against "... depending on complexity"): on AttributionBench's dev split (1,198 cases) the
# rule cost 0.005 AUROC without this limit and 0.001 with it; on the support set's calibration half the
# limit loses no swap it caught. Chosen on those two development sets (docs/measured.md, third round).
MAX_CLAIM_WORDS = 10
# Words inside these entities are the time, number and amount checks' business (a weekday or "monthly"
# is not: "Monday to Friday" against "Monday to Saturday" is a swap).
_OTHER_CHECKS = {"TIME", "MONEY", "QUANTITY", "CARDINAL", "PERCENT", "ORDINAL"}


def _stems(ws) -> set[str]:
    return {_stem(w) for w in ws}


def word_stems(text: str) -> set[str]:
    """Stems of every word of `text` (the sources' vocabulary `role_swaps` asks about)."""
    return _stems(words(text))


@lru_cache(maxsize=8192)
def _slots(text: str) -> tuple[frozenset[tuple[str, str, str, str]], dict[str, int]]:
    """(slot, head stem, filler stem, part of speech) per content word of `text` that fills a slot, and
    how often each word stem occurs in it."""
    from verifybench.verifiers.anchors.text import english_pipeline

    doc = english_pipeline()(text)
    filled = set()
    for tok in doc:
        anchor = tok
        while anchor.dep_ == "conj" and anchor.head is not anchor:  # "Admins and Owners": one slot, two fillers
            anchor = anchor.head
        slot = _SLOT.get(anchor.dep_)
        word = tok.lower_
        if (slot is None or tok.pos_ not in _FILLERS or tok.is_stop or tok.like_num or not word.isalpha()
                or word.rstrip("s") in UNITS or anchor.head is anchor or tok.ent_type_ in _OTHER_CHECKS
                or anchor.head.lemma_ == "be"):  # "X is a Y": a copula's slots are two sides of one thing
            continue
        head = anchor.head
        if slot == "modifier" and head.pos_ == "PROPN":  # a part of a name: the entity check's business
            continue
        key = _stem(head.lemma_.lower())
        if anchor.dep_ == "pobj":  # the object of the same preposition of the same word ("refunded within")
            key = f"{key} {_stem(head.head.lemma_.lower())}" if head.head is not head else key
        filled.add((slot, key, _stem(word), tok.pos_))
    return frozenset(filled), dict(Counter(_stem(t.lower_) for t in doc if t.is_alpha))


def role_swaps(claim: str, evidence: str, source_words: set[str], claim_words: set[str],
               evidence_words: set[str]) -> list[str]:
    """What the claim says in a slot where the evidence says something else (see the module docstring).

    Args:
        claim: the claim's text.
        evidence: the source text the claim matched (one chunk).
        source_words: stems of every word of the case's sources (`word_stems`).
        claim_words, evidence_words: content words of the claim and of the evidence.
    """
    # The same statement with one thing put in another's place: the two share a topic and at least half
    # of the claim's content words (a long answer's sentence that merely touches the evidence is not one).
    c_stems, e_stems = _stems(claim_words), _stems(evidence_words)
    if len(claim_words) > MAX_CLAIM_WORDS:
        return []
    if not same_topic(claim_words, evidence_words) or 2 * len(c_stems & e_stems) < len(c_stems):
        return []
    if not (e_stems - c_stems):  # a cheap look before parsing: the evidence must say something the claim does not
        return []
    c_slots, c_count = _slots(claim)
    e_slots, e_count = _slots(evidence)
    out = []
    for slot, head, word, pos in sorted(c_slots):
        # The claim's word must be one the sources use, and not already where the evidence uses it: as
        # often in the evidence as in the claim, it is the same word in another place ("Billing is
        # handled by chat" against "Billing questions are handled by chat").
        if word not in source_words or e_count.get(word, 0) >= c_count.get(word, 0):
            continue
        theirs = sorted(w for s, h, w, p in e_slots if s == slot and h == head and p == pos and w != word
                        and w not in c_count)
        if theirs:
            out.append(f"{word!r} where the evidence says {theirs[0]!r} ({slot} of {head!r})")
    return out
