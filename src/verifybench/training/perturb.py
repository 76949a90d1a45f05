"""FactCC-style training claims from a source window: faithful rewrites and one-fact perturbations.

A faithful claim is never a plain copy of a source sentence (a model could then win by detecting
copying): it is a clause of it, a compression (modifiers, appositions, relative and adverbial clauses
dropped), two sentences of the window fused into one, or the sentence with words swapped for
synonyms. An unfaithful claim is one of those same rewrites with a single fact changed: an entity, a
number or a date swapped for another (from the same window where one exists, so the wrong value is
still "in the source"), a pronoun's gender swapped, a negation added or removed, a word swapped for
its antonym, an unsupported detail or clause added, or a sentence from outside the window.

The spaCy parse is the anchors splitter's (`english_pipeline`); every choice is drawn from a seeded
`random.Random`, so the same inputs give the same claims.
"""

from __future__ import annotations

import random
import re

# Small curated lexicons (a WordNet corpus cannot be downloaded here): word -> replacements.
SYNONYMS = {
    "said": ["stated", "noted"], "says": ["states", "notes"], "told": ["informed"], "big": ["large"],
    "large": ["big", "sizeable"], "small": ["little"], "begin": ["start"], "began": ["started"],
    "start": ["begin"], "started": ["began"], "buy": ["purchase"], "bought": ["purchased"],
    "help": ["assist"], "helped": ["assisted"], "show": ["reveal"], "showed": ["revealed"],
    "shows": ["reveals"], "need": ["require"], "needs": ["requires"], "needed": ["required"],
    "try": ["attempt"], "tried": ["attempted"], "quickly": ["rapidly"], "about": ["around"],
    "children": ["kids"], "people": ["individuals"], "car": ["vehicle"], "home": ["house"],
    "job": ["position"], "company": ["firm"], "firm": ["company"], "important": ["significant"],
    "also": ["additionally"], "however": ["but"], "very": ["extremely"], "many": ["numerous"],
    "end": ["finish"], "ended": ["finished"], "got": ["received"], "get": ["receive"],
    "make": ["create"], "made": ["created"], "hard": ["difficult"], "difficult": ["hard"],
    "allow": ["permit"], "allowed": ["permitted"], "rules": ["regulations"], "area": ["region"],
    "talk": ["speak"], "talked": ["spoke"], "discuss": ["talk about"], "discussed": ["talked about"],
    "explained": ["described"], "asked": ["inquired"], "wants": ["wishes"], "want": ["wish"],
    "wanted": ["wished"], "offer": ["provide"], "offers": ["provides"], "offered": ["provided"],
    "customer": ["client"], "customers": ["clients"], "client": ["customer"], "meeting": ["discussion"],
    "price": ["cost"], "prices": ["costs"], "cost": ["price"], "plan": ["scheme"], "plans": ["schemes"],
    "found": ["discovered"], "killed": ["slain"], "died": ["passed away"], "arrested": ["detained"],
    "police": ["officers"], "officials": ["authorities"], "attack": ["assault"], "near": ["close to"],
    "almost": ["nearly"], "nearly": ["almost"], "around": ["about"], "enough": ["sufficient"],
    "fast": ["quick"], "rich": ["wealthy"], "angry": ["furious"], "happy": ["glad"], "sad": ["unhappy"],
}
ANTONYMS_ONE_WAY = {
    "increase": "decrease", "increased": "decreased", "increases": "decreases", "rise": "fall",
    "rose": "fell", "rises": "falls", "win": "lose", "won": "lost", "wins": "loses", "gain": "loss",
    "higher": "lower", "more": "less", "most": "least", "before": "after", "first": "last",
    "early": "late", "earlier": "later", "open": "closed", "opened": "closed", "accept": "reject",
    "accepted": "rejected", "agree": "disagree", "agreed": "disagreed", "allow": "forbid",
    "allowed": "banned", "strong": "weak", "stronger": "weaker", "large": "small", "larger": "smaller",
    "big": "small", "bigger": "smaller", "long": "short", "longer": "shorter", "old": "young",
    "older": "younger", "new": "old", "good": "bad", "better": "worse", "best": "worst",
    "positive": "negative", "success": "failure", "successful": "unsuccessful", "easy": "difficult",
    "cheap": "expensive", "cheaper": "more expensive", "high": "low", "full": "empty", "male": "female",
    "true": "false", "legal": "illegal", "public": "private", "inside": "outside", "above": "below",
    "buy": "sell", "bought": "sold", "buys": "sells", "arrive": "leave", "arrived": "left",
    "start": "end", "started": "ended", "begin": "finish", "began": "finished", "support": "oppose",
    "supported": "opposed", "supports": "opposes", "up": "down", "north": "south", "east": "west",
    "maximum": "minimum", "majority": "minority", "include": "exclude", "included": "excluded",
    "includes": "excludes", "remember": "forget", "remembered": "forgot", "love": "hate",
    "loved": "hated", "happy": "unhappy", "interested": "uninterested", "available": "unavailable",
    "likely": "unlikely", "possible": "impossible", "always": "never", "everyone": "no one",
    "all": "none", "same": "different", "similar": "different", "guilty": "innocent", "alive": "dead",
    "fast": "slow", "rich": "poor", "wide": "narrow", "heavy": "light", "hot": "cold", "safe": "dangerous",
    "lead": "trail", "led": "trailed", "add": "remove", "added": "removed", "raise": "lower",
    "raised": "lowered", "give": "take", "gave": "took", "send": "receive", "sent": "received",
    "confirmed": "denied", "confirm": "deny", "approved": "rejected", "approve": "reject",
}
ANTONYMS = {**ANTONYMS_ONE_WAY, **{v: k for k, v in ANTONYMS_ONE_WAY.items() if " " not in v}}
PRONOUNS = {"he": "she", "she": "he", "him": "her", "his": "her", "her": "his", "himself": "herself",
            "herself": "himself", "He": "She", "She": "He", "His": "Her", "Her": "His"}
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September",
          "October", "November", "December"]
WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
NEGATABLE_AUX = {"is", "are", "was", "were", "has", "have", "had", "will", "would", "can", "could",
                 "should", "did", "does", "do", "may", "might", "must"}
ENTITY_LABELS = ("PERSON", "ORG", "GPE", "LOC", "NORP", "FAC", "EVENT", "PRODUCT", "WORK_OF_ART")
NUMBER_LABELS = ("CARDINAL", "MONEY", "PERCENT", "QUANTITY", "ORDINAL")
NUM = re.compile(r"\d[\d,]*(?:\.\d+)?")
WORD = re.compile(r"[A-Za-z]+")

POSITIVE_KINDS = ("clause", "compression", "fusion", "synonyms")
NEGATIVE_KINDS = ("entity", "number", "date", "pronoun", "negation", "antonym", "insertion", "outside")


def _join(tokens) -> str:
    return "".join(t.text_with_ws for t in tokens).strip()


def _sentence_text(text: str) -> str:
    text = text.strip().strip(",;:- ")
    if not text:
        return text
    text = text[0].upper() + text[1:]
    return text if text[-1] in ".!?\"'" else text + "."


def clause(sent, rng: random.Random) -> str | None:
    from verifybench.verifiers.anchors.text import _split_sentence

    pieces = _split_sentence(sent.doc, sent)
    if len(pieces) < 2:
        return None
    return _sentence_text(rng.choice(pieces)[0])


DROPPABLE = {"appos", "relcl", "advcl", "amod", "advmod", "npadvmod", "parataxis", "acl", "prep"}


def compression(sent, rng: random.Random) -> str | None:
    """The sentence without some optional subtrees (never a negation, never the last object left)."""
    negated = any(t.dep_ == "neg" for t in sent)
    cands = []
    for t in sent:
        if t.dep_ not in DROPPABLE or t.head == t:
            continue
        if negated and t.dep_ in ("amod", "advmod", "prep"):
            continue  # under a negation, dropping a modifier can change what is denied
        if t.dep_ == "prep" and t.head.pos_ not in ("VERB", "NOUN", "PROPN"):
            continue
        if any(c.dep_ == "neg" or c.like_num for c in t.subtree):
            continue
        cands.append(t)
    if not cands:
        return None
    rng.shuffle(cands)
    drop: set[int] = set()
    for t in cands[: rng.randint(1, min(3, len(cands)))]:
        drop.update(c.i for c in t.subtree)
    kept = [t for t in sent if t.i not in drop]
    # Leave a dangling comma pair out and keep at least a verb and 4 tokens.
    if len(kept) < 4 or not any(t.pos_ in ("VERB", "AUX") for t in kept):
        return None
    text = re.sub(r"\s+([,.;:])", r"\1", _join(kept))
    text = re.sub(r"(,\s*)+", ", ", text).replace(" ,", ",").replace(",.", ".")
    text = _sentence_text(text)
    return None if text.rstrip(".") == sent.text.strip().rstrip(".") else text


def fusion(sent, other, rng: random.Random) -> str | None:
    a, b = sent.text.strip().rstrip(".!?"), other.text.strip()
    if not a or not b or len(a) + len(b) > 400:
        return None
    first = b.split()[0]
    if not (first == "I" or (len(first) > 1 and first.isupper()) or other[0].pos_ == "PROPN"):
        b = b[0].lower() + b[1:]
    return _sentence_text(a + rng.choice([", and ", "; ", ", while "]) + b)


def synonyms(text: str, rng: random.Random) -> str | None:
    words = [m for m in WORD.finditer(text) if m.group(0).lower() in SYNONYMS]
    if not words:
        return None
    out, last = [], 0
    chosen = sorted(rng.sample(words, min(len(words), rng.randint(1, 2))), key=lambda m: m.start())
    for m in chosen:
        w = m.group(0)
        rep = rng.choice(SYNONYMS[w.lower()])
        rep = rep[0].upper() + rep[1:] if w[0].isupper() else rep
        out.append(text[last:m.start()] + rep)
        last = m.end()
    out.append(text[last:])
    return "".join(out)


def positive(sent, window_sents, rng: random.Random) -> tuple[str, str] | None:
    """(kind, faithful claim) from one parsed sentence of the window, or None."""
    kinds = list(POSITIVE_KINDS)
    rng.shuffle(kinds)
    for kind in kinds:
        if kind == "clause":
            text = clause(sent, rng)
        elif kind == "compression":
            text = compression(sent, rng)
        elif kind == "fusion":
            others = [s for s in window_sents if s.start != sent.start and len(s) >= 4]
            text = fusion(sent, rng.choice(others), rng) if others else None
        else:
            text = synonyms(sent.text.strip(), rng)
        if text and len(text.split()) >= 4:
            # A light second rewrite half the time, so no kind is recognisable by its surface alone.
            if kind != "synonyms" and rng.random() < 0.5:
                text = synonyms(text, rng) or text
            return kind, text
    return None


def _replace(text: str, old: str, new: str) -> str | None:
    i = text.find(old)
    if i < 0 or old == new:
        return None
    return text[:i] + new + text[i + len(old):]


def _ents(doc_or_span, labels) -> list:
    return [e for e in doc_or_span.ents if e.label_ in labels and any(c.isalnum() for c in e.text)]


def swap_entity(text: str, window, pool: dict[str, list[str]], rng: random.Random) -> str | None:
    here = [e for e in _ents(window, ENTITY_LABELS) if e.text in text]
    if not here:
        return None
    e = rng.choice(here)
    words = set(e.text.lower().split())
    same = [x.text for x in _ents(window, (e.label_,))
            if x.text not in text and not words & set(x.text.lower().split())]
    if not same or rng.random() < 0.3:
        same = [x for x in pool.get(e.label_, []) if x not in window.text and not words & set(x.lower().split())]
    if not same:
        return None
    return _replace(text, e.text, rng.choice(same))


def _other_number(num: str, window_nums: list[str], rng: random.Random) -> str:
    cands = [n for n in window_nums if n != num]
    if cands and rng.random() < 0.5:
        return rng.choice(cands)
    value = float(num.replace(",", ""))
    if value.is_integer():
        v = int(value)
        new = rng.choice([v + rng.randint(1, 9), max(0, v - rng.randint(1, 9)), v * 2, v * 10, v // 2 or v + 3])
        new = new if new != v else v + 1
        return f"{new:,}" if "," in num else str(new)
    return f"{value * rng.choice([0.5, 1.5, 2, 0.8]):.{len(num.split('.')[1])}f}"


def swap_number(text: str, window, rng: random.Random) -> str | None:
    nums = NUM.findall(text)
    nums = [n for n in nums if not (len(n) == 4 and n.startswith(("19", "20")))]  # years: a date swap
    if not nums:
        return None
    num = rng.choice(nums)
    new = _other_number(num, NUM.findall(window.text), rng)
    return _replace(text, num, new)


def swap_date(text: str, rng: random.Random) -> str | None:
    months = [m for m in MONTHS if m in text]
    days = [d for d in WEEKDAYS if d in text]
    years = [y for y in re.findall(r"\b(?:19|20)\d\d\b", text)]
    options = []
    if months:
        m = rng.choice(months)
        options.append((m, rng.choice([x for x in MONTHS if x != m])))
    if days:
        d = rng.choice(days)
        options.append((d, rng.choice([x for x in WEEKDAYS if x != d])))
    if years:
        y = rng.choice(years)
        options.append((y, str(int(y) + rng.choice([-3, -2, -1, 1, 2, 3]))))
    if not options:
        return None
    return _replace(text, *rng.choice(options))


def swap_pronoun(text: str, rng: random.Random) -> str | None:
    hits = [m for m in re.finditer(r"\b(" + "|".join(PRONOUNS) + r")\b", text)]
    if not hits:
        return None
    m = rng.choice(hits)
    return text[:m.start()] + PRONOUNS[m.group(0)] + text[m.end():]


def negate(text: str, rng: random.Random) -> str | None:
    """Remove a negation if there is one, else negate the first auxiliary or past/present verb."""
    m = re.search(r"(\w+)n't\b", text)
    if m:
        stem = {"ca": "can", "wo": "will", "sha": "shall"}.get(m.group(1), m.group(1))
        return text[:m.start()] + stem + text[m.end():]
    m = re.search(r"\b(not|never) ", text)
    if m:
        return text[:m.start()] + text[m.end():]
    from verifybench.verifiers.anchors.text import english_pipeline

    doc = english_pipeline()(text)
    for t in doc:
        if t.lower_ in NEGATABLE_AUX and t.pos_ == "AUX":
            return text[:t.idx + len(t.text)] + " not" + text[t.idx + len(t.text):]
        if t.pos_ == "VERB" and t.dep_ == "ROOT" and t.tag_ in ("VBD", "VBZ", "VBP"):
            aux = {"VBD": "did not", "VBZ": "does not", "VBP": "do not"}[t.tag_]
            return text[:t.idx] + aux + " " + t.lemma_ + text[t.idx + len(t.text):]
    return None


def swap_antonym(text: str, rng: random.Random) -> str | None:
    hits = [m for m in WORD.finditer(text) if m.group(0).lower() in ANTONYMS]
    if not hits:
        return None
    m = rng.choice(hits)
    rep = ANTONYMS[m.group(0).lower()]
    rep = rep[0].upper() + rep[1:] if m.group(0)[0].isupper() else rep
    return text[:m.start()] + rep + text[m.end():]


def insert_detail(text: str, window, pool: dict[str, list[str]], foreign: list[str], rng: random.Random) -> str | None:
    """An unsupported detail: a place or date the window never mentions, or a clause from elsewhere."""
    body = text.rstrip().rstrip(".!?")
    choice = rng.random()
    if choice < 0.35 and pool.get("GPE"):
        place = rng.choice(pool["GPE"])
        if place not in window.text:
            return body + f" in {place}."
    dates = [d for d in pool.get("DATE", []) if re.search(r"\d{4}|" + "|".join(MONTHS + WEEKDAYS), d)]
    if choice < 0.6 and dates:
        date = rng.choice(dates)
        if date not in window.text:
            return body + f" {'on' if any(d in date for d in WEEKDAYS) else 'in'} {date}."
    if foreign:
        other = rng.choice(foreign).strip()
        if other and len(other) < 300:
            return _sentence_text(body + ", and " + other[0].lower() + other[1:])
    return None


def first_change(text: str, kinds: tuple[str, ...], changes: dict, rng: random.Random) -> tuple[str, str] | None:
    """(kind, claim) from the first of `kinds`, in a shuffled order, whose change (`changes[kind]()`)
    alters `text`; None when none does."""
    order = list(kinds)
    rng.shuffle(order)
    for kind in order:
        out = changes[kind]()
        if out and out.strip() != text.strip():
            return kind, out
    return None


def negative(text: str, window, pool: dict[str, list[str]], foreign: list[str], rng: random.Random,
             kinds: tuple[str, ...] = NEGATIVE_KINDS) -> tuple[str, str] | None:
    """(kind, claim) with one fact of `text` changed, or None when no perturbation applies."""
    return first_change(text, kinds, {
        "entity": lambda: swap_entity(text, window, pool, rng),
        "number": lambda: swap_number(text, window, rng),
        "date": lambda: swap_date(text, rng),
        "pronoun": lambda: swap_pronoun(text, rng),
        "negation": lambda: negate(text, rng),
        "antonym": lambda: swap_antonym(text, rng),
        "insertion": lambda: insert_detail(text, window, pool, foreign, rng),
        "outside": lambda: _sentence_text(rng.choice(foreign)) if foreign else None,
    }, rng)


# ---------- answer style (stage 3): how a short answer says a fact, and the facts answers get wrong ----------

CONTRACTIONS = {"is not": "isn't", "are not": "aren't", "was not": "wasn't", "were not": "weren't",
                "cannot": "can't", "can not": "can't", "do not": "don't", "does not": "doesn't",
                "did not": "didn't", "will not": "won't", "would not": "wouldn't", "has not": "hasn't",
                "have not": "haven't", "had not": "hadn't", "should not": "shouldn't", "could not": "couldn't",
                "it is": "it's", "you are": "you're", "they are": "they're", "there is": "there's"}
SMALL_NUMBERS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
                 "eleven", "twelve"]
# A duration said in another unit: the same length of time.
SAME_DURATION = {"7 days": "a week", "14 days": "two weeks", "21 days": "three weeks", "24 hours": "a day",
                 "48 hours": "two days", "72 hours": "three days", "60 minutes": "an hour",
                 "30 minutes": "half an hour", "12 months": "a year", "24 months": "two years",
                 "one week": "7 days", "two weeks": "14 days", "one year": "12 months", "a week": "7 days"}
UNITS = ["minutes", "hours", "days", "business days", "weeks", "months", "years"]
DURATION = re.compile(r"\b(\d+|" + "|".join(SMALL_NUMBERS[1:]) + r"|a|an)\s+(" + "|".join(UNITS)
                      + r"|week|day|hour|month|year|minute)\b", re.I)
TIME = re.compile(r"\b(1[0-2]|0?[1-9])(?::([0-5]\d))?\s*([ap])\.?\s?m\b\.?", re.I)
ZONES = ["ET", "PT", "CT", "MT", "UTC", "GMT", "CET", "EST", "PST"]
# Plans, tiers, periods and roles: words a customer-facing answer swaps for a sibling.
TIERS = [("monthly", "annual"), ("annual", "monthly"), ("yearly", "monthly"), ("daily", "weekly"),
         ("weekly", "monthly"), ("free", "paid"), ("paid", "free"), ("basic", "premium"), ("premium", "basic"),
         ("standard", "premium"), ("professional", "amateur"), ("amateur", "professional"),
         ("public", "private"), ("private", "public"), ("owner", "member"), ("owners", "members"),
         ("members", "guests"), ("admin", "user"), ("administrator", "user"), ("manager", "employee"),
         ("employees", "managers"), ("students", "teachers"), ("teacher", "student"), ("domestic", "international"),
         ("international", "domestic"), ("national", "regional"), ("senior", "junior"), ("junior", "senior"),
         ("full-time", "part-time"), ("part-time", "full-time"), ("online", "in-store"), ("men's", "women's"),
         ("women's", "men's")]
ANSWER_POSITIVE_STYLES = ("contract", "number_words", "duration")
ANSWER_NEGATIVE_KINDS = ("entity", "number", "date", "time", "duration", "negation", "tier", "noun", "insertion")
# Unsupported qualifiers an answer adds (a condition, a cost, a scope or a deadline the source never states).
QUALIFIERS = ["within 24 hours", "at no extra cost", "for every user", "on weekends too", "before 5 pm ET",
              "automatically", "for up to 30 days", "without any fee", "in all countries", "with a full refund"]


def contract(text: str) -> str | None:
    hits = [(m, CONTRACTIONS[m.group(0).lower()]) for m in
            re.finditer(r"\b(" + "|".join(CONTRACTIONS) + r")\b", text, re.I)]
    if not hits:
        return None
    m, rep = hits[0]
    rep = rep[0].upper() + rep[1:] if m.group(0)[0].isupper() else rep
    return text[:m.start()] + rep + text[m.end():]


def number_words(text: str) -> str | None:
    """A small count written as a word ("3 days" -> "three days"); never a decimal, a time, a date or an ordinal."""
    # A count is followed by the word it counts ("3 days"), not by a month, a letter or another number.
    hits = [m for m in re.finditer(r"(?<![\d.,:$])\b([0-9]|1[0-2])(?= [a-z]{2,})", text)]
    hits = [m for m in hits if not TIME.match(text, m.start())]
    if not hits:
        return None
    m = hits[0]
    return text[:m.start()] + SMALL_NUMBERS[int(m.group(1))] + text[m.end():]


def same_duration(text: str) -> str | None:
    for old, new in SAME_DURATION.items():
        m = re.search(r"\b" + re.escape(old) + r"\b", text, re.I)
        if m:
            return text[:m.start()] + new + text[m.end():]
    return None


def answer_style(text: str, rng: random.Random) -> str:
    """The same claim said as a support answer might say it (each change keeps the meaning)."""
    styles = list(ANSWER_POSITIVE_STYLES)
    rng.shuffle(styles)
    for style in styles:
        out = {"contract": contract, "number_words": number_words, "duration": same_duration}[style](text)
        if out:
            text = out
    return text


def swap_time(text: str, rng: random.Random) -> str | None:
    """Another hour of the day, the other half of the day, or another time zone."""
    times = list(TIME.finditer(text))
    zones = [m for m in re.finditer(r"\b(" + "|".join(ZONES) + r")\b", text)]
    options = []
    if times:
        m = rng.choice(times)
        hour = int(m.group(1))
        new_hour = rng.choice([h for h in range(1, 13) if h != hour])
        mins = f":{m.group(2)}" if m.group(2) else ""
        options.append((m, f"{new_hour}{mins} {m.group(3).lower()}m"))
        options.append((m, f"{hour}{mins} {'pm' if m.group(3).lower() == 'a' else 'am'}"))
    if zones:
        z = rng.choice(zones)
        options.append((z, rng.choice([x for x in ZONES if x != z.group(0)])))
    if not options:
        return None
    m, rep = rng.choice(options)
    return text[:m.start()] + rep + text[m.end():]


def swap_duration(text: str, rng: random.Random) -> str | None:
    """A duration's unit changed ("5 business days" -> "5 weeks") or a same-duration phrase made wrong."""
    hits = list(DURATION.finditer(text))
    if not hits:
        return None
    m = rng.choice(hits)
    unit = m.group(2).lower()
    plural = unit.endswith("s")
    units = [u for u in UNITS if u.rstrip("s") != unit.rstrip("s") and u != "business days"]
    new = rng.choice(units)
    new = new if plural else new.rstrip("s")
    return text[:m.start(2)] + new + text[m.end(2):]


def swap_tier(text: str, rng: random.Random) -> str | None:
    hits = [(m, new) for old, new in TIERS for m in re.finditer(r"\b" + re.escape(old) + r"\b", text, re.I)]
    if not hits:
        return None
    m, new = rng.choice(hits)
    new = new[0].upper() + new[1:] if m.group(0)[0].isupper() else new
    return text[:m.start()] + new + text[m.end():]


def swap_noun(text: str, window, rng: random.Random) -> str | None:
    """A common noun of the claim swapped for another noun of the same number from the window (a role,
    a product or a thing the source names elsewhere: every word is still "in the source")."""
    lower = text.lower()
    cands: dict[str, set[str]] = {}
    for t in window:
        if t.pos_ == "NOUN" and t.is_alpha and len(t.text) > 3:
            cands.setdefault(t.tag_, set()).add(t.lower_)
    here = [w for tag, ws in cands.items() for w in ws if re.search(r"\b" + re.escape(w) + r"\b", lower)]
    if not here:
        return None
    old = rng.choice(sorted(here))
    tag = next(tag for tag, ws in cands.items() if old in ws)
    others = sorted(w for w in cands[tag] if w != old and not re.search(r"\b" + re.escape(w) + r"\b", lower))
    if not others:
        return None
    m = re.search(r"\b" + re.escape(old) + r"\b", text, re.I)
    if m is None:
        return None
    new = rng.choice(others)
    new = new[0].upper() + new[1:] if m.group(0)[0].isupper() else new
    return text[:m.start()] + new + text[m.end():]


def negate_answer(text: str, rng: random.Random) -> str | None:
    """A negation added or removed, written contracted half the time ("is" -> "isn't", "can't" -> "can")."""
    out = negate(text, rng)
    if out and rng.random() < 0.5:
        out = contract(out) or out
    return out


def add_qualifier(text: str, window, pool: dict[str, list[str]], foreign: list[str], rng: random.Random) -> str | None:
    if rng.random() < 0.5:
        q = rng.choice(QUALIFIERS)
        if q.split()[-1] not in window.text:
            return text.rstrip().rstrip(".!?") + f" {q}."
    return insert_detail(text, window, pool, foreign, rng)


def answer_negative(text: str, window, pool: dict[str, list[str]], foreign: list[str], rng: random.Random,
                    kinds: tuple[str, ...] = ANSWER_NEGATIVE_KINDS) -> tuple[str, str] | None:
    """(kind, claim) with one fact of an answer-style claim changed, or None when nothing applies."""
    return first_change(text, kinds, {
        "entity": lambda: swap_entity(text, window, pool, rng),
        "number": lambda: swap_number(text, window, rng),
        "date": lambda: swap_date(text, rng),
        "time": lambda: swap_time(text, rng),
        "duration": lambda: swap_duration(text, rng),
        "negation": lambda: negate_answer(text, rng),
        "tier": lambda: swap_tier(text, rng),
        "noun": lambda: swap_noun(text, window, rng),
        "insertion": lambda: add_qualifier(text, window, pool, foreign, rng),
    }, rng)
