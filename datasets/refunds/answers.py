"""Write the refund comparison set: prose answers in three kinds of document, each with its sources and
the structured claims behind it, for every verification method on the same cases (evals/refunds-compare.yaml).
Seeded: every run writes the same bytes.

    python datasets/refunds/answers.py       # rewrites answers.jsonl here from the refund pack's facts

The facts are the bundled refund pack's (src/verifybench/verifiers/graph/packs/refunds/facts, written by
generate.py), read here as the graph reads them, so the answers and the graph always describe the same
orders; run this again whenever generate.py rewrites them (generate.py does). Orders of customer C-184
and order A-91 are left out: they are the graph article's worked example, which the pack may pin.

Each case is one customer question about one order, answered in one of three kinds of document
(`doc_type`), all in the wording the pack's prose patterns read:

    refund_chat    a short chat reply (second person, two to four sentences)
    refund_email   an e-mail: greeting, the order restated from its record, the decision, a sign-off
    refund_note    an agent's internal note about the case (third person, terse)

Every answer also states one general rule of the written policy, true for every order; a hallucinated
answer carries one planted error (`meta.error_type`): the eight of generate.py, and

    invented_perk  a promise the policy does not make (a voucher, a free label, a 24-hour refund,
                   keeping the item), in place of the true rule: outside the pack's claim schema, so
                   the graph cannot see it, while a text check can

Per doc type, PER_TYPE cases of each error type and as many faithful ones; the cases of a (doc type,
label) are split alternately into calibration and test, in the order of the error types, so every
error type has cases on both sides.
"""

from __future__ import annotations

import csv
import importlib.util
import json
import random
from pathlib import Path

HERE = Path(__file__).resolve().parent
SEED = 20261207
PER_TYPE = 3
DOC_TYPES = ("refund_chat", "refund_email", "refund_note")
PINNED_CUSTOMERS = {"C-184"}  # the graph article's worked example (order A-91): left to the pack
PINNED_ORDERS = {"A-91"}


def _generator():
    """generate.py beside this file (the policy, the reference reading of it, the chat wording)."""
    spec = importlib.util.spec_from_file_location("refunds_generate", HERE / "generate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


G = _generator()
ERROR_TYPES = (*G.ERROR_TYPES, "invented_perk")
money = G.money


def cents(text: str) -> int:
    whole, _, frac = text.partition(".")
    return int(whole) * 100 + int((frac + "00")[:2])


def read_facts(folder: Path = G.PACK_FACTS) -> list[dict]:
    """The pack's orders joined with their customers, as generate.py's `expected` reads an order."""
    with (folder / "customers.csv").open(encoding="utf-8") as f:
        customers = {r["customer_id"]: r for r in csv.DictReader(f)}
    orders = []
    with (folder / "orders.csv").open(encoding="utf-8") as f:
        for r in csv.DictReader(f):
            c = customers[r["customer_id"]]
            orders.append({"order_id": r["order_id"], "customer_id": r["customer_id"], "name": c["name"],
                           "tier": c["tier"], "amount": cents(r["amount"]), "shipping": cents(r["shipping"]),
                           "final_sale": r["final_sale"] == "true", "defective": r["defective"] == "true",
                           "days": int(r["days_since_delivery"])})
    return [o for o in orders if o["customer_id"] not in PINNED_CUSTOMERS and o["order_id"] not in PINNED_ORDERS]


def fits(error: str, o: dict) -> bool:
    """Whether order `o` can carry `error` (the same conditions generate.py builds its orders for)."""
    window = G.POLICIES[o["tier"]][0]
    exp = G.expected(o)
    if error in ("wrong_method", "amount_digits_swapped"):
        digits = money(exp["refund_amount"]).replace(".", "")
        return exp["refund_eligible"] and len(set(digits)) > 1
    if error == "final_sale_ignored":
        return o["final_sale"] and not o["defective"] and o["days"] <= window
    if error == "window_off_by_one":
        return o["days"] == window + 1 and not o["final_sale"] and not o["defective"]
    return True


# Sentences by document voice: two wordings per claim type and value, every one read by the pack's
# prose patterns (tests/test_refunds_compare.py checks that a faithful answer's claims come back).
def email_sentence(rng: random.Random, claim_type: str, value, oid: str) -> str:
    options = {
        "customer_tier": lambda: [f"Your account is on the {value} tier, so the {value} refund terms apply.",
                                  f"As a {value} member, you are covered by the {value} terms."],
        "refund_eligible": lambda: ([f"I am glad to confirm that order {oid} is eligible for a refund.",
                                     f"Good news: you can get a refund for order {oid}."] if value else
                                    [f"I am sorry, but order {oid} is not eligible for a refund.",
                                     f"Unfortunately, order {oid} cannot be refunded."]),
        "refund_amount": lambda: [f"The refund amounts to ${money(value)}.", f"You will receive ${money(value)} in total."],
        "refund_method": lambda: (["It will be paid back to your original payment method.",
                                   "It goes back to the card you paid with."] if value == "ORIGINAL_PAYMENT" else
                                  ["It will be issued as store credit on your account.",
                                   "You will get it in the form of store credit."]),
        "return_window_days": lambda: [f"Your tier allows returns within {value} days of delivery.",
                                       f"Your account has a {value}-day return window."],
        "restocking_fee": lambda: ([f"A restocking fee of ${money(value)} is deducted.",
                                    f"We deduct ${money(value)} as a restocking fee."] if value else
                                   ["There is no restocking fee.", "No restocking fee is charged."]),
        "shipping_refundable": lambda: (["Shipping costs are refunded as well.", "You also get the shipping costs back."]
                                        if value else ["Shipping costs are not refunded.",
                                                       "The shipping costs stay non-refundable."]),
        "bereavement_refund": lambda: (["Given the circumstances, you can apply for the bereavement refund now, "
                                        "after the purchase.",
                                        "You can still claim a bereavement refund for this order retroactively."]
                                       if value else
                                       ["I am sorry, but a bereavement refund is not possible after the purchase.",
                                        "Bereavement refunds cannot be granted retroactively for this order."]),
    }
    return rng.choice(options[claim_type]())


def note_sentence(rng: random.Random, claim_type: str, value, oid: str) -> str:
    options = {
        "customer_tier": lambda: [f"The customer is a {value}-tier member.", f"The customer is on the {value} tier."],
        "refund_eligible": lambda: ([f"Decision: order {oid} is eligible for a refund.", f"Order {oid} qualifies for a refund."]
                                    if value else
                                    [f"Decision: order {oid} is not eligible for a refund.", f"Order {oid} is not refundable."]),
        "refund_amount": lambda: [f"Refund of ${money(value)} approved.", f"The refund comes to ${money(value)}."],
        "refund_method": lambda: (["Pay it back to the original payment method.", "Refund to the original card."]
                                  if value == "ORIGINAL_PAYMENT" else
                                  ["Issue it as store credit.", "Refund goes out as store credit."]),
        "return_window_days": lambda: [f"The tier allows returns within {value} days of delivery.",
                                       f"The {value}-day return window applies."],
        "restocking_fee": lambda: ([f"Restocking fee of ${money(value)} deducted.", f"Restocking fee is ${money(value)}."]
                                   if value else ["No restocking fee applies.", "No restocking fee for this one."]),
        "shipping_refundable": lambda: (["Shipping is refunded too.", "Shipping costs are refunded."] if value else
                                        ["Shipping costs are not refunded.", "Shipping is non-refundable here."]),
        "bereavement_refund": lambda: (["Told the customer they can claim a bereavement refund retroactively.",
                                        "Bereavement refund is granted after the fact."] if value else
                                       ["Bereavement refunds cannot be granted after the purchase; told the customer so.",
                                        "No bereavement refund after the purchase."]),
    }
    return rng.choice(options[claim_type]())


# One general rule of the written policy, true for every order (every answer states one) ...
RULES = [
    "Final-sale items can only be returned when they were faulty on arrival.",
    "Faulty items can come back within the return window without any restocking charge.",
    "Bereavement refunds have to be requested before the purchase.",
    "{tier} customers may ask for a refund up to {window} days after delivery.",
]
# ... or, in an invented_perk answer, a promise the policy never makes.
PERKS = [
    "We will also add a $10 goodwill voucher to your account.",
    "A prepaid return label is included at no cost to you.",
    "The money will reach you within 24 hours.",
    "You may keep the item; there is no need to send it back.",
]
NOTE_PERKS = ["Added a $10 goodwill voucher for the customer.", "Sent a prepaid return label at no cost.",
              "Promised the money within 24 hours.", "Customer may keep the item, no return needed."]


def compose(rng: random.Random, doc_type: str, o: dict, item: str, subject: str, claims: list[tuple[str, object]],
            extra: str) -> str:
    """The answer's text: its claim sentences (and the extra sentence) in the document's frame."""
    first = o["name"].split()[0]
    if doc_type == "refund_chat":
        body = [G.sentence(rng, t, v, subject) for t, v in claims]
        body.insert(rng.randint(1, len(body)), extra)
        opener = rng.choice(["", f"Hi {first}! ", "Thanks for your patience. "])
        return opener + " ".join(body)
    if doc_type == "refund_email":
        body = [email_sentence(rng, t, v, subject) for t, v in claims]
        record = rng.choice([f"Our records show the refund was requested {o['days']} days after delivery.",
                             f"You asked for the refund {o['days']} days after it was delivered."])
        closing = rng.choice(["If you have any other questions, just reply to this e-mail.",
                              "We are happy to help with anything else."])
        return (f"Dear {o['name']},\n\nThank you for contacting us about order {subject}, {item}. {record}\n\n"
                + " ".join(body) + f" {extra}\n\n{closing}\n\nKind regards,\nCustomer Care")
    body = [note_sentence(rng, t, v, subject) for t, v in claims]
    head = f"Case note, order {subject} ({item}), customer {o['customer_id']}."
    return f"{head} " + " ".join(body) + f" {extra}"


def build(rng: random.Random, doc_type: str, o: dict, error: str, policy: str, known: set[str]) -> dict:
    exp = G.expected(o)
    values = {k: v for k, v in exp.items() if not k.startswith("_")}
    subject = o["order_id"]
    which = (rng.choices(["status", "terms", "short", "bereavement"], [4, 3, 2, 2])[0]
             if error in ("none", "invented_perk") else
             {"wrong_tier": "status", "wrong_method": "status", "eligibility_flipped": "short",
              "amount_digits_swapped": "status", "unknown_order": "status", "final_sale_ignored": "short",
              "window_off_by_one": "terms", "retroactive_bereavement": "bereavement"}[error])
    if error == "wrong_tier":
        values["customer_tier"] = rng.choice([t for t in G.TIERS if t != o["tier"]])
    elif error == "wrong_method":
        values["refund_method"] = "STORE_CREDIT" if values["refund_method"] == "ORIGINAL_PAYMENT" else "ORIGINAL_PAYMENT"
    elif error == "eligibility_flipped":
        values["refund_eligible"] = not values["refund_eligible"]
        values["refund_amount"] = exp["_as_if_eligible"] if values["refund_eligible"] else 0
    elif error == "amount_digits_swapped":
        values["refund_amount"] = G.swap_digits(rng, values["refund_amount"])
    elif error == "unknown_order":
        n = int(subject.split("-")[1])
        while f"A-{n}" in known:
            n += 7919
        subject = f"A-{n}"
    elif error == "final_sale_ignored":
        values["refund_eligible"], values["refund_amount"] = True, exp["_as_if_eligible"]
    elif error == "window_off_by_one":
        values["return_window_days"] += 1
        values["refund_eligible"] = True
    elif error == "retroactive_bereavement":
        values["bereavement_refund"] = True
    claim_types = list(G.SETS[which])
    item = rng.choice(G.ITEMS)
    window = G.POLICIES[o["tier"]][0]
    if error == "invented_perk":
        extra = rng.choice(NOTE_PERKS if doc_type == "refund_note" else PERKS)
    else:
        extra = rng.choice(RULES).format(tier=o["tier"], window=window)
    claims = [(t, values[t]) for t in claim_types]
    question = rng.choice(G.QUESTIONS["bereavement" if which == "bereavement" else "terms" if which == "terms"
                                      else "status"]).format(oid=o["order_id"])
    record = G.order_record({**o, "item": item}, o["name"])
    return {"question": question, "response": compose(rng, doc_type, o, item, subject, claims, extra),
            "sources": [{"id": "refund_policy", "text": policy}, {"id": f"order_{o['order_id']}", "text": record}],
            "claims": [{"claim_type": t, "subject_id": subject, "value": G.claim_value(t, v),
                        "evidence": G.evidence(t, v, o)} for t, v in claims],
            "label": error != "none", "doc_type": doc_type,
            "meta": {"error_type": error, "order_id": o["order_id"], "tier": o["tier"]}}


def generate() -> list[dict]:
    rng = random.Random(SEED)
    orders = read_facts()
    known = {o["order_id"] for o in orders} | PINNED_ORDERS
    policy = G.policy_text()
    free = list(orders)
    rng.shuffle(free)
    cases = []
    for doc_type in DOC_TYPES:
        plan = [e for e in ERROR_TYPES for _ in range(PER_TYPE)] + ["none"] * (PER_TYPE * len(ERROR_TYPES))
        seen = {True: 0, False: 0}
        for error in plan:
            o = next(x for x in free if fits(error, x))  # every order is used once
            free.remove(o)
            case = build(rng, doc_type, o, error, policy, known)
            seen[case["label"]] += 1  # alternately, in plan order: each error type lands on both sides
            cases.append({"id": f"refund-answer-{len(cases):04d}",
                          "split": "calibration" if seen[case["label"]] % 2 else "test", **case})
    order = rng.sample(range(len(cases)), len(cases))  # mix doc types and errors in the file
    return [cases[i] for i in order]


def main() -> None:
    cases = generate()
    with (HERE / "answers.jsonl").open("w", encoding="utf-8") as f:
        for case in cases:
            f.write(json.dumps(case, ensure_ascii=False, sort_keys=True) + "\n")
    print(f"wrote {len(cases)} answers to {HERE / 'answers.jsonl'}")


if __name__ == "__main__":
    main()
