"""Stage 4 (v4): contrast pairs from a seeded grammar of everyday rule sentences, against the lexical shortcut.

v3's reading (CONSISTENCY_DEV.md, probe 16): every faithful training claim was nearly a copy of a
source sentence, so "worded like the source" was learned as "supported", and short answers that
paraphrase their chunk sorted below planted errors that copy it. Here the label is made independent
of the wording, and the contrast that the shortcut gets wrong is weighted up:

- a faithful claim is said in another form of the same fact (another clause order or voice, an answer
  frame such as "Yes, ..." or "You'll need to ...", a duration in another unit, a number in words, a
  time said another way, a contraction) most of the time, and a near-copy of the source otherwise;
- an unfaithful claim copies the source's wording with one fact changed (a time, a duration's value or
  unit, a tier or group, a count, a weekday, a negation, or an unsupported condition added) most of the
  time, and is a paraphrase with one fact changed otherwise.

The premise is a short chunk of rule sentences of one domain (the fact's sentence among others with
their own times and numbers, so a wrong value can still be "in the chunk"). The domains (a library, a
swimming pool, a railway, a clinic, a museum, a campus, a ferry, a community garden), their vocabulary
and these sentence forms were written for this module; the support set's generator and its templates
were not opened while writing it (they are evaluation data, see CONSISTENCY_DEV.md stage 4).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from verifybench.training.pairs import Pair

WORDS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
         "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen", "twenty"]
# unit -> (singular, plural, the same length in the next unit: (factor, unit)) for unit-changing rephrasings
UNITS = {"minute": 60, "hour": 24, "day": 7, "week": 0, "month": 12, "year": 0}
NEXT = {"minute": "hour", "hour": "day", "day": "week", "month": "year"}
WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]

# Each domain: who the rules are for (sibling groups: a swap is a tier error), the things counted and
# the places, a rule sentence is built from these.
DOMAINS = {
    "library": {"groups": [["adult cardholders", "junior cardholders", "visiting readers"],
                           ["Platinum readers", "Silver readers", "Bronze readers"]],
                "items": ["books", "DVDs", "magazines", "laptops"], "place": "the reading room",
                "act": ("borrow", "borrowed"), "keep": ("renew", "renewed"), "thing": "a loan"},
    "pool": {"groups": [["season pass holders", "day visitors", "swim club members"],
                        ["seniors", "students", "children under twelve"]],
             "items": ["guests", "lanes", "lockers", "towels"], "place": "the main pool",
             "act": ("book", "booked"), "keep": ("extend", "extended"), "thing": "a lane booking"},
    "railway": {"groups": [["first-class passengers", "standard-class passengers", "commuter card holders"],
                           ["railcard holders", "off-peak travellers", "group travellers"]],
                "items": ["bags", "bicycles", "seats", "pets"], "place": "the station lounge",
                "act": ("reserve", "reserved"), "keep": ("change", "changed"), "thing": "a ticket"},
    "clinic": {"groups": [["registered patients", "new patients", "walk-in patients"],
                          ["level one members", "level two members", "level three members"]],
               "items": ["appointments", "prescriptions", "visitors", "forms"], "place": "the front desk",
               "act": ("schedule", "scheduled"), "keep": ("move", "moved"), "thing": "an appointment"},
    "museum": {"groups": [["patron members", "family members", "individual members"],
                          ["school groups", "tour groups", "solo visitors"]],
               "items": ["tickets", "guests", "audio guides", "tours"], "place": "the east wing",
               "act": ("reserve", "reserved"), "keep": ("exchange", "exchanged"), "thing": "a timed ticket"},
    "campus": {"groups": [["full-time students", "part-time students", "exchange students"],
                          ["graduate students", "undergraduates", "alumni"]],
               "items": ["courses", "printing credits", "study rooms", "guests"], "place": "the registry office",
               "act": ("register", "registered"), "keep": ("drop", "dropped"), "thing": "a course"},
    "ferry": {"groups": [["foot passengers", "vehicle passengers", "island residents"],
                         ["frequent sailors", "occasional sailors", "crew families"]],
              "items": ["vehicles", "cabins", "bags", "pets"], "place": "the upper deck",
              "act": ("book", "booked"), "keep": ("amend", "amended"), "thing": "a crossing"},
    "garden": {"groups": [["plot holders", "volunteers", "visitors"],
                          ["gold sponsors", "silver sponsors", "bronze sponsors"]],
               "items": ["plots", "tools", "hoses", "wheelbarrows"], "place": "the tool shed",
               "act": ("reserve", "reserved"), "keep": ("transfer", "transferred"), "thing": "a plot"},
}
ADDED = ["even on public holidays", "without showing any ID", "at no charge", "for the whole family",
         "as many times as they like", "with a free drink", "on any day of the year", "after a short phone call"]


@dataclass
class Fact:
    """The slots of one rule sentence; `say` renders them in the source's words or said another way."""
    group: str
    n: int
    item: str
    dur: tuple[int, str]
    hour: tuple[int, int, str]  # (hour 1-12, minutes, "am" / "pm")
    day: str
    neg: bool


def duration(d: tuple[int, str], other: bool, rng: random.Random) -> str:
    """'14 days' in the source; said another way: 'two weeks', 'fourteen days', '14-day' forms."""
    n, unit = d
    if other:
        up = NEXT.get(unit)
        if up and UNITS[unit] and n % UNITS[unit] == 0 and rng.random() < 0.7:
            n, unit = n // UNITS[unit], up
            if n == 1:
                return f"a {unit}" if unit != "hour" else "an hour"
        if n <= 20 and rng.random() < 0.8:
            return f"{WORDS[n]} {unit}{'s' if n != 1 else ''}"
    return f"{n} {unit}{'s' if n != 1 else ''}"


def clock(h: tuple[int, int, str], other: bool, rng: random.Random) -> str:
    hour, mins, half = h
    if not other:
        return f"{hour}:{mins:02d} {half}" if mins else f"{hour} {half}"
    r = rng.random()
    if r < 0.35:
        h24 = hour % 12 + (12 if half == "pm" else 0)
        return f"{h24:02d}:{mins:02d}"
    if r < 0.6 and not mins:
        part = "in the morning" if half == "am" else ("in the afternoon" if hour < 5 or hour == 12 else "in the evening")
        return f"{hour} {part}" if hour != 12 else ("noon" if half == "pm" else "midnight")
    return f"{hour}:{mins:02d} {half.upper()}" if mins else f"{hour}{half}"


def count(n: int, other: bool) -> str:
    return WORDS[n] if other and n <= 20 else str(n)


def sentence(kind: str, dom: dict, f: Fact, other: bool, rng: random.Random) -> str:
    """One rule sentence of `kind` in the source's form (`other` False) or another form of the same fact."""
    act, keep, thing = dom["act"], dom["keep"], dom["thing"]
    g, G = f.group, f.group[0].upper() + f.group[1:]
    d, t, c = duration(f.dur, other, rng), clock(f.hour, other, rng), count(f.n, other)
    first = d.split(" ", 1)[1] if d.startswith(("a ", "an ")) else d  # "the first day", not "the first a day"
    P = dom["place"][0].upper() + dom["place"][1:]
    if kind == "limit":  # a count for a group (negated: the group may not at all)
        if not other:
            return (f"{G} cannot {act[0]} any {f.item}." if f.neg
                    else f"{G} can {act[0]} up to {f.n} {f.item} at a time.")
        return rng.choice([f"Up to {c} {f.item} at once can be {act[1]} by {g}.",
                           f"If you're one of the {g}, you can have {c} {f.item} at a time.",
                           f"The limit for {g} is {c} {f.item} at once."]) if not f.neg else rng.choice(
                          [f"Sorry, {g} aren't able to {act[0]} {f.item}.",
                           f"{f.item[0].upper() + f.item[1:]} can't be {act[1]} by {g} at all."])
    if kind == "window":  # a duration within which something can be done (negated: not even then)
        if not other:
            return (f"{G} cannot {keep[0]} {thing}, even within {d} of making it."
                    if f.neg else f"{G} can {keep[0]} {thing} within {d} of making it.")
        return rng.choice([f"Even in the first {first}, {g} can't {keep[0]} {thing}.",
                           f"If you're one of the {g}, you won't be able to {keep[0]} {thing}, not even within {d}."]
                          ) if f.neg else rng.choice(
                          [f"Yes, you can {keep[0]} {thing} for {d} after making it, if you're one of the {g}.",
                           f"For {g}, {thing} may be {keep[1]} during the first {first}.",
                           f"As one of the {g}, you've got {d} to {keep[0]} {thing}."])
    if kind == "hours":  # a closing time on a weekday (negated: closed that day)
        if not other:
            return f"{P} is closed all day on {f.day}s." if f.neg else f"{P} closes at {t} on {f.day}s."
        return rng.choice([f"On {f.day}s, {dom['place']} doesn't open at all.",
                           f"{P} isn't open on {f.day}s."]) if f.neg else rng.choice(
                          [f"On {f.day}s, {dom['place']} shuts at {t}.",
                           f"Just so you know, {dom['place']} stays open until {t} every {f.day}.",
                           f"Every {f.day} the doors of {dom['place']} close at {t}."])
    # "notice": a group must give notice a duration ahead, with a deadline time
    if not other:
        return (f"{G} do not need to give notice before cancelling {thing}." if f.neg
                else f"{G} must cancel {thing} at least {d} in advance, before {t}.")
    return rng.choice([f"Good news: there's no notice period for {g} who cancel {thing}.",
                       f"If you're among the {g}, you don't have to tell anyone ahead of cancelling {thing}."]
                      ) if f.neg else rng.choice(
                      [f"You'll need to cancel {thing} {d} ahead, by {t}, if you're one of the {g}.",
                       f"Cancelling {thing} takes {d} of notice for {g}, and the cut-off is {t}.",
                       f"To cancel {thing}, {g} have to let us know {d} before, no later than {t}."])


KINDS = ("limit", "window", "hours", "notice")
# which slots each kind states (a change to one of these is a change of fact)
STATES = {("limit", False): ("group", "n", "neg"), ("limit", True): ("group", "neg"),
          ("window", False): ("group", "dur", "neg"), ("window", True): ("group", "neg"),
          ("hours", False): ("hour", "day", "neg"), ("hours", True): ("day", "neg"),
          ("notice", False): ("group", "dur", "hour", "neg"), ("notice", True): ("group", "neg")}


def subject(kind: str, f: Fact) -> tuple:
    """What a rule of `kind` is about: two rules of one kind on one subject could contradict each other."""
    return {"limit": (f.group, f.item), "window": (f.group,), "hours": (f.day,), "notice": (f.group,)}[kind]


def random_fact(dom: dict, rng: random.Random) -> Fact:
    unit = rng.choice(["minute", "hour", "day", "day", "week", "month"])
    n = {"minute": rng.choice([15, 30, 45, 60, 90, 120]), "hour": rng.choice([2, 12, 24, 48, 72]),
         "day": rng.choice([3, 5, 7, 10, 14, 21, 28, 30]), "week": rng.choice([1, 2, 3, 4, 6]),
         "month": rng.choice([1, 3, 6, 12, 24])}[unit]
    return Fact(rng.choice(rng.choice(dom["groups"])), rng.choice([2, 3, 4, 5, 6, 8, 10, 12]), rng.choice(dom["items"]),
                (n, unit), (rng.randint(1, 12), rng.choice([0, 0, 0, 15, 30, 45]), rng.choice(["am", "pm"])),
                rng.choice(WEEKDAYS), rng.random() < 0.25)


def changed(f: Fact, kind: str, dom: dict, rng: random.Random) -> tuple[str, Fact] | None:
    """(slot, the fact with that one slot changed) for a slot the sentence states."""
    slot = rng.choice(STATES[kind, f.neg])
    if slot == "group":
        sibs = next(gs for gs in dom["groups"] if f.group in gs)
        return slot, Fact(**{**f.__dict__, "group": rng.choice([x for x in sibs if x != f.group])})
    if slot == "n":
        return slot, Fact(**{**f.__dict__, "n": rng.choice([x for x in range(1, 16) if x != f.n])})
    if slot == "dur":
        n, unit = f.dur
        if rng.random() < 0.5:
            new = (n, rng.choice([u for u in ("minute", "hour", "day", "week", "month") if u != unit]))
        else:
            new = (rng.choice([x for x in (n - 2, n + 1, n + 2, n * 2, max(1, n // 2)) if x != n and x > 0]), unit)
        return slot, Fact(**{**f.__dict__, "dur": new})
    if slot == "hour":
        h, m, half = f.hour
        new_h = (h, m, "pm" if half == "am" else "am") if rng.random() < 0.4 else (
            rng.choice([x for x in range(1, 13) if x != h]), m, half)
        return slot, Fact(**{**f.__dict__, "hour": new_h})
    if slot == "day":
        return slot, Fact(**{**f.__dict__, "day": rng.choice([d for d in WEEKDAYS if d != f.day])})
    return "negation", Fact(**{**f.__dict__, "neg": not f.neg})


def policy_pairs(n_facts: int, seed: int, copy_negative: float = 0.65, paraphrase_positive: float = 0.75) -> list[Pair]:
    """For each of `n_facts` rule facts: a chunk (3-5 rule sentences of one domain, the fact's sentence
    among them), one faithful claim and one unfaithful claim of that fact. `paraphrase_positive`: the
    share of faithful claims said another way (else the source's form with an answer frame);
    `copy_negative`: the share of unfaithful claims in the source's words with one fact changed (else
    said another way)."""
    rng = random.Random(seed)
    out: list[Pair] = []
    names = sorted(DOMAINS)
    for i in range(n_facts):
        name = rng.choice(names)
        dom = DOMAINS[name]
        kind = rng.choice(KINDS)
        fact = random_fact(dom, rng)
        src = sentence(kind, dom, fact, False, rng)
        chunk = [src]
        for _ in range(rng.randint(2, 4)):
            k, other = rng.choice(KINDS), random_fact(dom, rng)
            if k != kind or subject(k, other) != subject(kind, fact):  # no second rule on the same subject
                chunk.append(sentence(k, dom, other, False, rng))
        rng.shuffle(chunk)
        premise = " ".join(chunk)
        key, group = f"policy:{seed}:{i}", f"policy:{seed}:{i}"
        if rng.random() < paraphrase_positive:
            pos, pos_kind = sentence(kind, dom, fact, True, rng), "paraphrase"
        else:
            pos, pos_kind = frame(src, rng), "near-copy"
        ch = changed(fact, kind, dom, rng)
        if ch is None:
            continue
        slot, wrong = ch
        if slot != "negation" and rng.random() < 0.12:
            neg, slot = frame(src, rng).rstrip(".") + " " + rng.choice(ADDED) + ".", "addition"
            neg_form = "copy"
        elif rng.random() < copy_negative:
            neg, neg_form = sentence(kind, dom, wrong, False, rng), "copy"
        else:
            neg, neg_form = sentence(kind, dom, wrong, True, rng), "paraphrase"
        if neg_form == "copy" and rng.random() < 0.3:
            neg = frame(neg, rng)
        if neg == pos or neg in chunk:
            continue
        out.append(Pair(premise, pos, 1, f"policy/{pos_kind}", key, group))
        out.append(Pair(premise, neg, 0, f"policy/{neg_form}-{slot}", key, group))
    return out


FRAMES = ["Yes, ", "Sure, ", "Yes — ", "Good question: ", "To answer that, ", "Right, so ", "In short, "]


def frame(text: str, rng: random.Random) -> str:
    """The sentence as an answer would open it (both labels get frames, so a frame is no cue)."""
    if rng.random() < 0.5:
        return text
    return rng.choice(FRAMES) + continued(text)


def continued(text: str) -> str:
    """`text` as the rest of a sentence: lower-cased first letter, unless it starts with a name."""
    first = text.split()[0]
    keep = first in ("I", "Platinum", "Silver", "Bronze") or first in WEEKDAYS
    return text if keep else text[0].lower() + text[1:]


# Stage 5 (v5, CONSISTENCY_DEV.md): what v4's reading of the support calibration split found it could not
# see. An answer's sentence often states two facts of its chunk at once; a dropped negation leaves the
# rest of the sentence as it was (v4's grammar only flipped whole rules); an unsupported addition is a
# plausible second fact that no chunk states. Each is a contrast of one fact against the same frame.
JOINS = [", and ", "; ", ", and also ", " and "]
# (negated, affirmative) pairs a sentence's negation is toggled by, in place; the first that matches is used
NEGATIONS = [(" cannot ", " can "), (" can't ", " can "), (" do not need to ", " need to "),
             (" don't have to ", " have to "), (" isn't ", " is "), (" aren't able to ", " are able to "),
             (" won't be able to ", " will be able to "), (" doesn't ", " does "), (" is closed ", " is open "),
             (" not even within ", " even within ")]
AFFIRM = [(" can ", (" cannot ", " can't ")), (" must ", (" do not have to ", " don't have to ")),
          (" may be ", (" may not be ", " can't be ")), (" closes at ", (" does not close at ", " doesn't close at ")),
          (" stays open until ", (" does not stay open until ", " doesn't stay open until ")),
          (" have to ", (" don't have to ", " do not have to ")), (" 've got ", (" haven't got ", " don't have "))]


def toggle_negation(text: str, rng: random.Random) -> str | None:
    """The sentence with its negation removed or added in place, everything else as it was (None: no
    form this grammar knows)."""
    padded = f" {text} "
    for neg, aff in NEGATIONS:
        if neg in padded:
            return padded.replace(neg, aff, 1).strip()
    for aff, negs in AFFIRM:
        if aff in padded:
            return padded.replace(aff, rng.choice(negs), 1).strip()
    return None


def join_claims(a: str, b: str, rng: random.Random) -> str:
    """Two sentences said as one answer sentence."""
    return a.rstrip(".") + rng.choice(JOINS) + continued(b)


def compound_pairs(n_facts: int, seed: int) -> list[Pair]:
    """For each of `n_facts` chunks (3-5 rule sentences of one domain, no two on one subject): one
    faithful claim and one unfaithful claim, drawn from three kinds of contrast:

    - two facts of the chunk in one sentence (each in the source's words or said another way), against
      the same two with one fact changed or with the second replaced by a fact the chunk does not state;
    - one fact (either form), against the same words with the negation removed or added in place."""
    rng = random.Random(seed)
    out: list[Pair] = []
    names = sorted(DOMAINS)
    for i in range(n_facts):
        dom = DOMAINS[rng.choice(names)]
        facts: list[tuple[str, Fact]] = []
        for _ in range(rng.randint(3, 5)):
            k, f = rng.choice(KINDS), random_fact(dom, rng)
            if all(k != k2 or subject(k, f) != subject(k2, f2) for k2, f2 in facts):
                facts.append((k, f))
        if len(facts) < 2:
            continue
        chunk = [sentence(k, dom, f, False, rng) for k, f in facts]
        premise = " ".join(chunk)
        key = group = f"compound:{seed}:{i}"
        a, b = rng.sample(range(len(facts)), 2)
        forms = [rng.random() < 0.6, rng.random() < 0.6]  # said another way, per fact
        say = [sentence(facts[j][0], dom, facts[j][1], forms[x], rng) for x, j in enumerate((a, b))]
        r = rng.random()
        if r < 0.35:  # negation toggled in place, one fact
            pos = frame(say[0], rng)
            neg_text = toggle_negation(say[0], rng)
            if neg_text is None:
                continue
            neg, kind = frame(neg_text, rng), "negation-in-place"
        else:
            pos = frame(join_claims(say[0], say[1], rng), rng)
            if r < 0.6:  # the second fact is one no chunk sentence states
                k2, f2 = rng.choice(KINDS), random_fact(dom, rng)
                if any(k2 == k and subject(k2, f2) == subject(k, f) for k, f in facts):
                    continue
                kind, wrong = "foreign", sentence(k2, dom, f2, rng.random() < 0.6, rng)
                parts = [say[0], wrong]
            else:
                x = rng.randrange(2)
                ch = changed(facts[(a, b)[x]][1], facts[(a, b)[x]][0], dom, rng)
                if ch is None:
                    continue
                slot, wf = ch
                parts = list(say)
                if slot == "negation" and (t := toggle_negation(say[x], rng)) is not None:
                    parts[x] = t
                else:
                    parts[x] = sentence(facts[(a, b)[x]][0], dom, wf, forms[x], rng)
                kind = f"one-of-two-{slot}"
            neg = frame(join_claims(parts[0], parts[1], rng), rng)
        if neg == pos or neg in chunk:
            continue
        out.append(Pair(premise, pos, 1, "compound/faithful", key, group))
        out.append(Pair(premise, neg, 0, f"compound/{kind}", key, group))
    return out


# Stage 8 (v8, CONSISTENCY_DEV.md): the two error kinds no continuation and no inference option reached on
# the support calibration split, swapped entities and dropped negations, are both a binding error: every
# word of the wrong claim is in the chunk, but said of the other subject. Here a chunk holds two rules of
# one kind on sibling subjects (two groups, or two weekdays) that differ in what they state, and the
# unfaithful claim gives one subject the other's rule; in about 40% of chunks the two differ in polarity,
# so the crossed claim is also a negation dropped or added.
def _sibling(dom: dict, kind: str, a: Fact, rng: random.Random) -> Fact:
    """A second fact of `kind` on a sibling subject of `a` that states something else."""
    b = random_fact(dom, rng)
    if kind == "hours":
        b = Fact(**{**b.__dict__, "day": rng.choice([d for d in WEEKDAYS if d != a.day])})
    else:
        sibs = next(gs for gs in dom["groups"] if a.group in gs)
        b = Fact(**{**b.__dict__, "group": rng.choice([x for x in sibs if x != a.group]), "item": a.item})
    b = Fact(**{**b.__dict__, "neg": (not a.neg) if rng.random() < 0.4 else a.neg})
    if a.neg and b.neg:  # two "cannot at all" rules differ only by subject: nothing to cross
        b = Fact(**{**b.__dict__, "neg": False})
    return b


def crossed(kind: str, a: Fact, b: Fact) -> Fact:
    """`a`'s subject with `b`'s rule."""
    if kind == "hours":
        return Fact(**{**b.__dict__, "day": a.day})
    return Fact(**{**b.__dict__, "group": a.group, "item": a.item})


def binding_pairs(n_facts: int, seed: int) -> list[Pair]:
    """For each of `n_facts` chunks (two rules of one kind on sibling subjects, and one to three other
    rules): a faithful claim of one of the two, and the same subject given the sibling's rule, each in
    the source's words or said another way (60%), framed, and in 30% joined with a third fact of the chunk."""
    rng = random.Random(seed)
    out: list[Pair] = []
    names = sorted(DOMAINS)
    for i in range(n_facts):
        dom = DOMAINS[rng.choice(names)]
        kind = rng.choice(KINDS)
        a = random_fact(dom, rng)
        b = _sibling(dom, kind, a, rng)
        facts = [(kind, a), (kind, b)]
        for _ in range(rng.randint(1, 3)):
            k, f = rng.choice(KINDS), random_fact(dom, rng)
            if all(k != k2 or subject(k, f) != subject(k2, f2) for k2, f2 in facts):
                facts.append((k, f))
        chunk = [sentence(k, dom, f, False, rng) for k, f in facts]
        rng.shuffle(chunk)
        premise = " ".join(chunk)
        key = group = f"binding:{seed}:{i}"
        other = rng.random() < 0.6
        pos = sentence(kind, dom, a, other, rng)
        neg = sentence(kind, dom, crossed(kind, a, b), other, rng)
        if len(facts) > 2 and rng.random() < 0.3:
            k3, f3 = facts[rng.randrange(2, len(facts))]
            third = sentence(k3, dom, f3, rng.random() < 0.6, rng)
            pos, neg = join_claims(pos, third, rng), join_claims(neg, third, rng)
        pos, neg = frame(pos, rng), frame(neg, rng)
        if neg == pos or neg in chunk:
            continue
        polarity = "-polarity" if a.neg != b.neg else ""
        out.append(Pair(premise, pos, 1, "binding/faithful", key, group))
        out.append(Pair(premise, neg, 0, f"binding/crossed-{'day' if kind == 'hours' else 'group'}{polarity}", key, group))
    return out
