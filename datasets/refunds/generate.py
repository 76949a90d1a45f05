"""Write the refund dataset: the facts of the refund knowledge graph, the written policy, and labeled
answers with structured claims. Seeded: every run writes the same bytes.

    python datasets/refunds/generate.py        # rewrites policy.md and cases.jsonl here, and the facts of
                                               # the bundled refund pack (src/verifybench/verifiers/graph/packs/refunds/facts)

Each case is one customer question about one order, a natural-language answer, and the structured
claims behind that answer (`claims`: {claim_type, subject_id, value, evidence}). Its sources are the
written refund policy and the order record, so text verifiers (BLEU/ROUGE, anchors, the judge) and the
`graph` verifier judge the same cases. Faithful answers (label false, `meta.error_type` "none") state
correct values; each hallucinated answer carries one planted error (`meta.error_type`):

    wrong_tier               the customer's tier is wrong
    wrong_method             the refund method is wrong
    eligibility_flipped      eligible <-> not eligible
    amount_digits_swapped    two adjacent digits of the refund amount swapped
    unknown_order            the answer is about an order id that does not exist
    final_sale_ignored       a final-sale (not defective) order called refundable
    window_off_by_one        the return window taken as one day longer, at exactly that day
    retroactive_bereavement  a bereavement refund promised after the fact, which the policy forbids
                             (the Moffatt v. Air Canada, 2024 BCCRT 149 pattern)

The correct values are computed here by a plain-Python reading of the policy (`expected`), independent
of the RelationalAI rules, so a test that the graph agrees with them checks one against the other.
Every order belongs to one case; the cases of a type are split alternately into calibration and test.
"""

from __future__ import annotations

import csv
import io
import json
import random
from pathlib import Path

SEED = 20261130
PER_TYPE = 24  # hallucinated cases per error type; as many faithful cases as hallucinated ones in all
HERE = Path(__file__).resolve().parent
# The refund pack ships with the package (so a wheel install has its facts): its facts are written there.
PACK_FACTS = HERE.parents[1] / "src" / "verifybench" / "verifiers" / "graph" / "packs" / "refunds" / "facts"
ERROR_TYPES = ("wrong_tier", "wrong_method", "eligibility_flipped", "amount_digits_swapped", "unknown_order",
               "final_sale_ignored", "window_off_by_one", "retroactive_bereavement")

# tier: (return window days, restocking fee %, refund method, shipping refundable)
POLICIES = {
    "BRONZE": (14, 15, "STORE_CREDIT", False),
    "SILVER": (21, 10, "STORE_CREDIT", False),
    "GOLD": (30, 5, "ORIGINAL_PAYMENT", False),  # the seed: "the policy does not make shipping refundable"
    "PLATINUM": (45, 0, "ORIGINAL_PAYMENT", True),
}
TIERS = list(POLICIES)
# The graph-entailment seed's worked example, written into the facts as the seed states it: order A-91 of
# customer C-184, tier GOLD (30-day window), not final sale, not defective; eligible, refunded 129.99
# (136.83 - the 5% restocking fee of 6.84; shipping not refunded) to the original payment method. It has no
# case (the cases stay balanced); tests/test_graph_packs.py and docs/graph.md check it on the bundled pack.
EXAMPLE_CUSTOMER = {"customer_id": "C-184", "name": "Ingrid Mehta", "tier": "GOLD"}
EXAMPLE_ORDER = {"order_id": "A-91", "customer_id": "C-184", "tier": "GOLD", "item": "wireless headphones",
                 "amount": 13683, "shipping": 599, "final_sale": False, "defective": False, "days": 12}
FIRST = ["Dana", "Rahul", "Mei", "Olga", "Tomás", "Amara", "Jonas", "Priya", "Kenji", "Lucia", "Samir", "Ingrid"]
LAST = ["Ortiz", "Mehta", "Chen", "Petrova", "Silva", "Okafor", "Berg", "Nair", "Sato", "Romano", "Haddad", "Lund"]
ITEMS = ["wireless headphones", "a standing desk", "a coffee grinder", "running shoes", "a winter jacket",
         "a tablet case", "a blender", "a camping tent", "a desk lamp", "a backpack"]


def money(cents: int) -> str:
    return f"{cents // 100}.{cents % 100:02d}"


def expected(order: dict) -> dict:
    """The policy's values for an order, in plain Python (the reference the graph is checked against)."""
    window, pct, method, ships = POLICIES[order["tier"]]
    eligible = (not order["final_sale"] or order["defective"]) and order["days"] <= window
    fee = 0 if order["defective"] else (order["amount"] * pct + 50) // 100
    shipping_back = order["defective"] or ships
    refund = order["amount"] - fee + (order["shipping"] if shipping_back else 0) if eligible else 0
    as_if_eligible = order["amount"] - fee + (order["shipping"] if shipping_back else 0)
    return {"customer_tier": order["tier"], "refund_method": method, "return_window_days": window,
            "refund_eligible": eligible, "restocking_fee": fee, "shipping_refundable": shipping_back,
            "refund_amount": refund, "bereavement_refund": False, "defective": order["defective"],
            "_as_if_eligible": as_if_eligible}


def make_order(rng: random.Random, n: int, customer: dict, kind: str) -> dict:
    """An order of `kind`: normal, final_sale, defective, expired, off_by_one."""
    window = POLICIES[customer["tier"]][0]
    days = {"normal": rng.randint(0, window), "final_sale": rng.randint(0, window),
            "defective": rng.randint(0, window), "expired": rng.randint(window + 2, window + 30),
            "off_by_one": window + 1}[kind]
    return {"order_id": f"A-{n}", "customer_id": customer["customer_id"], "tier": customer["tier"],
            "item": rng.choice(ITEMS), "amount": rng.randint(1500, 45000) // 100 * 100 + rng.choice([0, 49, 95, 99]),
            "shipping": rng.choice([0, 499, 599, 899, 1299]), "final_sale": kind == "final_sale" or
            (kind == "defective" and rng.random() < 0.4), "defective": kind == "defective", "days": days}


def policy_text() -> str:
    lines = ["Refund policy.", ""]
    for tier, (window, pct, method, ships) in POLICIES.items():
        how = "to the original payment method" if method == "ORIGINAL_PAYMENT" else "as store credit"
        fee = f"a {pct}% restocking fee is deducted" if pct else "no restocking fee is charged"
        ship = "shipping costs are refunded" if ships else "shipping costs are not refunded"
        lines.append(f"{tier} customers may request a refund within {window} days of delivery; refunds are "
                     f"issued {how}; {fee}; {ship}.")
    lines += ["", "Final-sale items are not refundable unless they arrived defective.",
              ("Defective items are refundable within the customer's return window, with no restocking fee, "
               "and shipping costs are refunded."),
              ("Bereavement refunds must be requested before purchase. They are never granted retroactively "
               "after the purchase or after delivery.")]
    return "\n".join(lines) + "\n"


def order_record(o: dict, name: str) -> str:
    return (f"Order {o['order_id']}: {o['item']}, bought by customer {o['customer_id']} ({name}), {o['tier']} tier. "
            f"Item price ${money(o['amount'])}, shipping ${money(o['shipping'])}. "
            f"Final sale: {'yes' if o['final_sale'] else 'no'}. Defective on arrival: {'yes' if o['defective'] else 'no'}. "
            f"Refund requested {o['days']} days after delivery.")


# One sentence per claim type and value, two wordings each; the generator picks one.
def sentence(rng: random.Random, claim_type: str, value, oid: str) -> str:
    method_words = {"ORIGINAL_PAYMENT": ["to your original payment method", "back to the card you paid with"],
                    "STORE_CREDIT": ["as store credit", "in the form of store credit"]}
    options = {  # lambdas: only the asked claim type is formatted
        "customer_tier": lambda: [f"Your account is on the {value} tier.",
                                  f"As a {value} customer, the {value} terms apply to you."],
        "refund_eligible": lambda: ([f"Order {oid} is eligible for a refund.", f"Yes, you can get a refund for order {oid}."]
                            if value else
                            [f"Order {oid} is not eligible for a refund.", f"Unfortunately order {oid} cannot be refunded."]),
        "refund_amount": lambda: [f"The refund comes to ${money(value)}.", f"You will receive ${money(value)}."],
        "refund_method": lambda: [f"The money is returned {w}." for w in method_words.get(value, [value])][:2],
        "return_window_days": lambda: [f"Your tier allows returns within {value} days of delivery.",
                               f"You have a {value}-day return window."],
        "restocking_fee": lambda: ([f"A restocking fee of ${money(value)} is deducted.",
                                    f"We deduct ${money(value)} as a restocking fee."]
                           if value else ["No restocking fee is charged.", "There is no restocking fee."]),
        "shipping_refundable": lambda: (["Shipping costs are refunded as well.", "You also get the shipping costs back."]
                                if value else ["Shipping costs are not refunded.", "The shipping costs stay non-refundable."]),
        "bereavement_refund": lambda: ([("Given your bereavement, you can still claim a bereavement refund for this order "
                                 "retroactively."), "You can apply for the bereavement refund now, after the purchase."]
                               if value else
                               ["Bereavement refunds cannot be granted retroactively for this order.",
                                "A bereavement refund is not possible after the purchase."]),
    }
    return rng.choice(options[claim_type]())


def evidence(claim_type: str, value, o: dict) -> str:
    tier = o["tier"]
    return {"customer_tier": f"Order record: customer {o['customer_id']} is {tier} tier.",
            "refund_method": f"Refund policy for {tier} uses {value}.",
            "return_window_days": f"Refund policy for {tier}: returns within {value} days.",
            "refund_eligible": f"Order record and refund policy for {tier}.",
            "refund_amount": f"Item price ${money(o['amount'])}, policy for {tier}.",
            "restocking_fee": f"Restocking fee of the {tier} policy.",
            "shipping_refundable": f"Shipping rule of the {tier} policy.",
            "bereavement_refund": "Bereavement clause of the refund policy.",
            "defective": "Order record."}[claim_type]


def claim_value(claim_type: str, value):
    return money(value) if claim_type in ("refund_amount", "restocking_fee") else value


QUESTIONS = {
    "status": ["Can I get a refund for order {oid}, and how much?", "What refund do I get for order {oid}?"],
    "terms": ["What are the refund terms for order {oid}?", "Which return rules apply to my order {oid}?"],
    "bereavement": ["My mother passed away; can I get a bereavement refund for order {oid}?",
                    "Is a bereavement refund possible for order {oid} after the fact?"],
}
SETS = {  # which claims a question is answered with
    "status": ["customer_tier", "refund_eligible", "refund_amount", "refund_method"],
    "terms": ["refund_eligible", "return_window_days", "restocking_fee", "shipping_refundable"],
    "short": ["refund_eligible", "refund_amount"],
    "bereavement": ["bereavement_refund", "refund_method"],
}


def swap_digits(rng: random.Random, cents: int) -> int:
    digits = list(money(cents).replace(".", ""))
    pairs = [i for i in range(len(digits) - 1) if digits[i] != digits[i + 1]]
    i = rng.choice(pairs)
    digits[i], digits[i + 1] = digits[i + 1], digits[i]
    return int("".join(digits))


def build_case(rng: random.Random, o: dict, name: str, error: str, policy: str, known_ids: set) -> dict:
    exp = expected(o)
    values = {k: v for k, v in exp.items() if not k.startswith("_")}
    subject = o["order_id"]
    if error == "none":
        which = rng.choices(["status", "terms", "short", "bereavement"], [4, 3, 2, 2])[0]
    else:
        which = {"wrong_tier": "status", "wrong_method": "status", "eligibility_flipped": "short",
                 "amount_digits_swapped": "status", "unknown_order": "status", "final_sale_ignored": "short",
                 "window_off_by_one": "terms", "retroactive_bereavement": "bereavement"}[error]
    claim_types = list(SETS[which])
    if error == "wrong_tier":
        values["customer_tier"] = rng.choice([t for t in TIERS if t != o["tier"]])
    elif error == "wrong_method":
        values["refund_method"] = "STORE_CREDIT" if values["refund_method"] == "ORIGINAL_PAYMENT" else "ORIGINAL_PAYMENT"
    elif error == "eligibility_flipped":
        values["refund_eligible"] = not values["refund_eligible"]
        values["refund_amount"] = exp["_as_if_eligible"] if values["refund_eligible"] else 0
    elif error == "amount_digits_swapped":
        values["refund_amount"] = swap_digits(rng, values["refund_amount"])
    elif error == "unknown_order":
        n = int(subject.split("-")[1])
        while f"A-{n}" in known_ids:
            n = int(str(n)[::-1]) if str(n)[::-1] != str(n) and int(str(n)[::-1]) != n else n + 7919
        subject = f"A-{n}"
    elif error == "final_sale_ignored":
        values["refund_eligible"], values["refund_amount"] = True, exp["_as_if_eligible"]
    elif error == "window_off_by_one":
        values["return_window_days"] += 1
        values["refund_eligible"] = True
    elif error == "retroactive_bereavement":
        values["bereavement_refund"] = True
    question = rng.choice(QUESTIONS["bereavement" if which == "bereavement" else "terms" if which == "terms" else "status"])
    response = " ".join(sentence(rng, t, values[t], subject) for t in claim_types)
    claims = [{"claim_type": t, "subject_id": subject, "value": claim_value(t, values[t]),
               "evidence": evidence(t, values[t], o)} for t in claim_types]
    return {"question": question.format(oid=o["order_id"]), "response": response,
            "sources": [{"id": "refund_policy", "text": policy}, {"id": f"order_{o['order_id']}", "text": order_record(o, name)}],
            "claims": claims, "label": error != "none", "doc_type": "refund_answer",
            "meta": {"error_type": error, "order_id": o["order_id"], "tier": o["tier"]}}


def kind_for(rng: random.Random, error: str) -> str:
    need = {"wrong_method": "normal", "amount_digits_swapped": "normal", "final_sale_ignored": "final_sale",
            "window_off_by_one": "off_by_one"}
    if error in need:
        return need[error]
    return rng.choices(["normal", "final_sale", "defective", "expired", "off_by_one"], [5, 2, 1, 1, 1])[0]


def generate() -> tuple[dict[str, str], str, list[dict]]:
    """Returns ({facts file: csv text}, policy text, cases)."""
    rng = random.Random(SEED)
    ids = [n for n in range(100, 197) if f"C-{n}" != EXAMPLE_CUSTOMER["customer_id"]]  # C-184 is the seed's
    customers = [{"customer_id": f"C-{n}", "name": f"{rng.choice(FIRST)} {rng.choice(LAST)}",
                  "tier": TIERS[i % len(TIERS)]} for i, n in enumerate(ids[:96])]
    plan = [e for e in ERROR_TYPES for _ in range(PER_TYPE)] + ["none"] * (PER_TYPE * len(ERROR_TYPES))
    orders, jobs = [], []
    order_numbers = rng.sample(range(1000, 9999), len(plan))
    for error, number in zip(plan, order_numbers):
        customer = rng.choice(customers)
        o = make_order(rng, number, customer, kind_for(rng, error))
        if error in ("wrong_method", "amount_digits_swapped"):
            o["shipping"] = max(o["shipping"], 499)  # a refund with at least two different digits
        orders.append(o)
        jobs.append((error, o, customer["name"]))
    known = {o["order_id"] for o in orders} | {EXAMPLE_ORDER["order_id"]}
    policy = policy_text()
    cases, seen = [], {}
    for error, o, name in jobs:
        case = build_case(rng, o, name, error, policy, known)
        seen[error] = seen.get(error, 0) + 1
        case = {"id": f"refunds-{len(cases):04d}", "split": "calibration" if seen[error] % 2 else "test", **case}
        cases.append(case)
    order = rng.sample(range(len(cases)), len(cases))  # mix the types in the file
    cases = [cases[i] for i in order]

    def table(header: list[str], rows: list[list]) -> str:
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(header)
        w.writerows(rows)
        return buf.getvalue()

    customers = sorted([*customers, EXAMPLE_CUSTOMER], key=lambda c: c["customer_id"])
    orders = [*orders, EXAMPLE_ORDER]
    facts = {
        "customers.csv": table(["customer_id", "name", "tier"], [[c["customer_id"], c["name"], c["tier"]] for c in customers]),
        "orders.csv": table(["order_id", "customer_id", "amount", "shipping", "final_sale", "defective", "days_since_delivery"],
                            [[o["order_id"], o["customer_id"], money(o["amount"]), money(o["shipping"]),
                              str(o["final_sale"]).lower(), str(o["defective"]).lower(), o["days"]]
                             for o in sorted(orders, key=lambda o: o["order_id"])]),
        "policies.csv": table(["policy_id", "tier", "return_window_days", "restocking_fee_pct", "refund_method",
                               "shipping_refundable", "retroactive_bereavement"],
                              [[f"P-{t}", t, w, p, m, str(s).lower(), "false"] for t, (w, p, m, s) in POLICIES.items()]),
    }
    return facts, policy, cases


def main() -> None:
    facts, policy, cases = generate()
    PACK_FACTS.mkdir(parents=True, exist_ok=True)
    for name, text in facts.items():
        (PACK_FACTS / name).write_text(text, encoding="utf-8")
    (HERE / "policy.md").write_text(policy, encoding="utf-8")
    with (HERE / "cases.jsonl").open("w", encoding="utf-8") as f:
        for case in cases:
            f.write(json.dumps(case, ensure_ascii=False, sort_keys=True) + "\n")
    print(f"wrote {len(cases)} cases to {HERE}, {facts['orders.csv'].count(chr(10)) - 1} orders to {PACK_FACTS}")
    # The comparison set (answers.py) is written from these facts: keep it in step with them.
    import runpy

    runpy.run_path(str(HERE / "answers.py"), run_name="__main__")


if __name__ == "__main__":
    main()
