"""Write datasets/support/cases.jsonl: verifybench's own labeled support-bot set, seeded and reproducible.

Short answers a support bot gives over retrieved help-center chunks, in three product areas (the case's
`doc_type`): `billing`, `account` and `orders`. Each scenario is a help-center article filled with seeded
values (prices, seat counts, durations, times of day with their zone, plan names), cut into chunks the
way a retriever returns them, plus one chunk of another article of the same area (retrieval is never
clean). A case's answer is written the way support bots write: a greeting or a "let me check" line
before, a closing offer or a question back to the customer after (or neither), contractions ("can't",
"isn't"), number words ("three", "once it's shipped", "each one"), durations said another way ("two
weeks" for 14 days, "an hour" for 60 minutes, "48 hours" for 2 days), times with zones ("2 pm ET"), and
several facts in one sentence.

Every answer of a scenario instance is built from the same fact sentences: a faithful answer states
1-3 of them (each in one of several paraphrases); a hallucinated answer states the same kind of mix
with exactly one fact replaced by a corrupted version, so greeting, length and style do not give the
label away. The error type is in `meta.error_type` ("none" for faithful answers):

    wrong_number          a price, count or amount that the chunks do not state
    wrong_time            a time of day or a time zone that the chunks do not state
    wrong_duration        a period that the chunks do not state (also said another way: "a month")
    swapped_entity        a plan, tier or role swapped for another one the chunks name
    dropped_negation      a "not" / "can't" lost or added: the opposite of what the chunks say
    unsupported_addition  a plausible extra fact that no chunk states

Three faithful and three hallucinated answers per scenario instance; all six share a split
(`calibration` or `test`, alternating by instance), so a threshold fitted on the calibration
split never sees the test split's articles.

    python datasets/support/generate.py            # rewrites cases.jsonl next to this file
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from pathlib import Path

SEED = 20261201
INSTANCES = 6  # each scenario is filled this many times with different values
FAITHFUL, HALLUCINATED = 3, 3  # answers per scenario instance
ERROR_TYPES = ("wrong_number", "wrong_time", "wrong_duration", "swapped_entity", "dropped_negation",
               "unsupported_addition")

WORDS = {1: "one", 2: "two", 3: "three", 4: "four", 5: "five", 6: "six", 7: "seven", 8: "eight", 9: "nine",
         10: "ten", 12: "twelve", 14: "fourteen", 15: "fifteen", 20: "twenty", 30: "thirty"}
PLANS = ["Starter", "Team", "Business", "Growth", "Pro", "Plus"]
PRODUCTS = ["Northwind", "Lumen", "Quillbox", "Harbor", "Tessera", "Polaris"]
NAMES = ["Maria", "Sam", "Priya", "Tom", "Aiko", "Lucas", "Fatima", "Jonas"]
ZONES = ["ET", "PT", "CET", "GMT"]

OPENERS = ["Hi there!", "Hi {name},", "Hello, and thanks for reaching out.", "Thanks for reaching out!",
           "Good question.", "Happy to help with that.", "Let me check that for you.",
           "Thanks for your patience, {name}.", "Hey {name}! Thanks for getting in touch.", "Sure thing!"]
CLOSERS = ["Let me know if there's anything else I can help with.", "Is there anything else I can help you with?",
           "Does that answer your question?", "Hope this helps!", "Don't hesitate to reach out if you need more help.",
           "Feel free to reply if you have more questions.", "Have a great day!",
           "Would you like me to walk you through it?", "I'm happy to help if you need anything else."]


def word(n: int, rng: random.Random) -> str:
    """`n` as digits or, sometimes, as a word."""
    return WORDS[n] if n in WORDS and rng.random() < 0.5 else str(n)


# A period in the unit the article uses -> ways an answer says the same period.
SAME_PERIOD = {
    (1, "hour"): ["an hour", "one hour", "60 minutes"], (2, "hours"): ["two hours", "2 hours", "120 minutes"],
    (24, "hours"): ["24 hours", "a day", "one day"], (48, "hours"): ["48 hours", "two days", "2 days"],
    (30, "minutes"): ["30 minutes", "half an hour", "thirty minutes"], (15, "minutes"): ["15 minutes", "a quarter of an hour"],
    (60, "minutes"): ["an hour", "60 minutes"], (7, "days"): ["a week", "seven days", "7 days", "one week"],
    (14, "days"): ["two weeks", "14 days", "fourteen days"], (30, "days"): ["30 days", "thirty days"],
    (2, "days"): ["two days", "48 hours", "2 days"], (3, "days"): ["three days", "72 hours", "3 days"],
    (21, "days"): ["three weeks", "21 days"], (10, "days"): ["10 days", "ten days"],
    (90, "days"): ["90 days", "ninety days"], (5, "days"): ["five days", "5 days"],
}
# A different period for each, the way a wrong answer would say it.
OTHER_PERIOD = {
    (1, "hour"): ["24 hours", "two hours", "30 minutes"], (2, "hours"): ["30 minutes", "a day", "four hours"],
    (24, "hours"): ["48 hours", "a week", "12 hours"], (48, "hours"): ["a week", "24 hours", "five days"],
    (30, "minutes"): ["an hour", "two hours", "15 minutes"], (15, "minutes"): ["an hour", "5 minutes"],
    (60, "minutes"): ["two hours", "30 minutes"], (7, "days"): ["two weeks", "3 days", "a month"],
    (14, "days"): ["a week", "30 days", "a month"], (30, "days"): ["two weeks", "90 days", "60 days"],
    (2, "days"): ["a week", "24 hours", "five days"], (3, "days"): ["a week", "24 hours"],
    (21, "days"): ["a week", "two months"], (10, "days"): ["a week", "30 days"],
    (90, "days"): ["30 days", "a year"], (5, "days"): ["two weeks", "two days"],
}


def period(n: int, unit: str) -> str:
    return f"{n} {unit}"


def same(n: int, unit: str, rng: random.Random) -> str:
    return rng.choice(SAME_PERIOD[(n, unit)])


def other(n: int, unit: str, rng: random.Random) -> str:
    return rng.choice(OTHER_PERIOD[(n, unit)])


def clock(hour24: int, rng: random.Random, style: int | None = None) -> str:
    """A time of day in one of the ways answers write it: "2 pm", "2:00 pm", "14:00"."""
    h12, ampm = (hour24 - 1) % 12 + 1, "am" if hour24 < 12 else "pm"
    style = rng.randrange(3) if style is None else style
    return [f"{h12} {ampm}", f"{h12}:00 {ampm}", f"{hour24:02d}:00"][style]


def wrong_clock(hour24: int, zone: str, rng: random.Random, avoid: set[int] = frozenset()) -> tuple[str, str]:
    """Another hour, or the same hour in another zone."""
    if rng.random() < 0.35:
        return clock(hour24, rng), rng.choice([z for z in ZONES if z != zone])
    h = rng.choice([x for x in range(7, 21) if x != hour24 and x not in avoid and abs(x - hour24) <= 4])
    return clock(h, rng), zone


def bump(n: int, rng: random.Random) -> int:
    return n + rng.choice([-1, 1]) * rng.choice([1, 2, 5, 10]) if n > 10 else n + rng.choice([1, 2, 3])


# A scenario returns: question, the article's chunks, the fact sentences (each a list of paraphrases),
# and {error_type: (index of the fact it replaces, corrupted sentence)}. Each fact's paraphrases are made
# by a function so every answer draws its own wording.
Fact = Callable[[], str]


# --- billing ----------------------------------------------------------------------------------------------

def billing_refunds(rng):
    window = rng.choice([14, 30, 7])
    payout = rng.choice([5, 7, 10])
    fee = rng.choice([15, 25, 40])
    q = rng.choice(["Can I get a refund on my subscription?", "How do refunds work for my plan?",
                    "I was charged for a year, can I get my money back?"])
    chunks = [f"Refund policy. Annual plans can be refunded within {period(window, 'days')} of purchase. Monthly "
              f"plans are not refundable, but you can cancel them at any time.",
              f"Refunds are returned to the original payment method within {payout} business days. A ${fee} "
              f"processing fee applies to refunds of add-ons."]
    facts: list[Fact] = [
        lambda: rng.choice([f"Annual plans can be refunded within {same(window, 'days', rng)} of purchase.",
                            f"If you're on an annual plan, you can get a refund within {same(window, 'days', rng)} "
                            f"of buying it.",
                            f"An annual plan is refundable for {same(window, 'days', rng)} after purchase."]),
        lambda: rng.choice(["Monthly plans can't be refunded, but you can cancel anytime.",
                            "Monthly plans aren't refundable, though you're free to cancel at any time.",
                            "We can't refund monthly plans; you can cancel them whenever you like, though."]),
        lambda: rng.choice([f"The money goes back to your original payment method within {word(payout, rng)} "
                            f"business days.",
                            f"Once it's approved, the refund lands on the card you paid with within "
                            f"{word(payout, rng)} business days."]),
        lambda: f"Refunds of add-ons carry a ${fee} processing fee.",
    ]
    errors = {
        "wrong_duration": (0, f"Annual plans can be refunded within {other(window, 'days', rng)} of purchase."),
        "dropped_negation": (1, rng.choice(["Monthly plans can be refunded too, and you can cancel anytime.",
                                            "Monthly plans are refundable as well."])),
        "wrong_number": (2, f"The money goes back to your original payment method within "
                            f"{word(bump(payout, rng), rng)} business days."),
        "swapped_entity": (0, f"Monthly plans can be refunded within {same(window, 'days', rng)} of purchase."),
        "unsupported_addition": (3, "We'll also add a $10 credit to your account for the trouble."),
    }
    return q, chunks, facts, errors


def billing_pricing(rng):
    plan, upper = rng.sample(PLANS, 2)
    price, seats = rng.choice([12, 19, 29, 49]), rng.choice([3, 5, 10])
    q = rng.choice([f"How much is the {plan} plan?", f"What do I get on {plan}?", "Which plan should I pick?"])
    chunks = [f"Plans and pricing. The {plan} plan costs ${price} per user per month and includes {seats} seats. "
              f"The {upper} plan adds single sign-on and audit logs.",
              "Prices do not include VAT, which is added at checkout based on your billing address."]
    facts: list[Fact] = [
        lambda: rng.choice([f"The {plan} plan is ${price} per user a month, with {word(seats, rng)} seats included.",
                            f"{plan} costs ${price} per user per month and comes with {word(seats, rng)} seats."]),
        lambda: rng.choice([f"If you need single sign-on or audit logs, you'd want the {upper} plan.",
                            f"Single sign-on and audit logs come with {upper}."]),
        lambda: rng.choice(["Prices don't include VAT; it's added at checkout based on your billing address.",
                            "Just so you know, VAT isn't included in the price and gets added at checkout."]),
    ]
    errors = {
        "wrong_number": (0, f"The {plan} plan is ${bump(price, rng)} per user a month, with {word(seats, rng)} seats "
                            f"included."),
        "swapped_entity": (1, f"Single sign-on and audit logs are included in the {plan} plan."),
        "dropped_negation": (2, "Prices already include VAT, so nothing is added at checkout."),
        "unsupported_addition": (1, "There's also a 20% discount if you pay yearly."),
    }
    return q, chunks, facts, errors


def billing_failed_payment(rng):
    retries, days = rng.choice([3, 4]), rng.choice([7, 14])
    fallback = rng.choice(["Free", "Starter"])
    reissue = rng.choice([30, 90])
    q = rng.choice(["My card payment failed, what happens now?", "Can you reissue my invoice to my new company name?",
                    "What happens if my payment doesn't go through?"])
    chunks = [f"Failed payments. If a payment fails, we retry the card {retries} times over {period(days, 'days')}. "
              f"After the last failed attempt, the workspace is downgraded to the {fallback} plan.",
              f"Invoices. Invoices are emailed on the 1st of each month. Invoices cannot be reissued to a different "
              f"company name after {reissue} days."]
    facts: list[Fact] = [
        lambda: rng.choice([f"We'll retry your card {word(retries, rng)} times over {same(days, 'days', rng)}.",
                            f"We try the card again {word(retries, rng)} times across {same(days, 'days', rng)}."]),
        lambda: f"If the last attempt fails too, your workspace moves to the {fallback} plan.",
        lambda: rng.choice([f"Invoices can't be reissued to a different company name once they're older than "
                            f"{same(reissue, 'days', rng)}.",
                            f"After {reissue} days, an invoice can't be reissued under another company name."]),
        lambda: "Invoices are emailed on the 1st of every month.",
    ]
    errors = {
        "wrong_number": (0, f"We'll retry your card {word(retries + 2, rng)} times over {same(days, 'days', rng)}."),
        "wrong_duration": (0, f"We'll retry your card {word(retries, rng)} times over {other(days, 'days', rng)}."),
        "swapped_entity": (1, f"If the last attempt fails too, your workspace moves to the "
                              f"{'Starter' if fallback == 'Free' else 'Free'} plan."),
        "dropped_negation": (2, "Invoices can be reissued to a different company name at any time."),
        "unsupported_addition": (3, "A 2% late fee is added to the next invoice."),
    }
    return q, chunks, facts, errors


def billing_hours(rng):
    start, end = rng.choice([8, 9, 10]), rng.choice([17, 18])
    zone = rng.choice(ZONES)
    reply = rng.choice([(2, "hours"), (30, "minutes"), (24, "hours")])
    q = rng.choice(["When can I talk to someone about billing?", "Can I call you about my bill?",
                    "What are your billing support hours?"])
    style = rng.randrange(3)
    chunks = [f"Billing support is available Monday to Friday, {clock(start, rng, style)} to {clock(end, rng, style)} "
              f"{zone}. Chat replies usually arrive within {period(*reply)} during these hours.",
              "Billing questions are not handled by phone; use chat or email instead."]
    facts: list[Fact] = [
        lambda: rng.choice([f"Our billing team is around Monday through Friday, {clock(start, rng)} to "
                            f"{clock(end, rng)} {zone}.",
                            f"You can reach billing on weekdays from {clock(start, rng)} to {clock(end, rng)} {zone}."]),
        lambda: f"On chat you'll usually hear back within {same(*reply, rng)} during those hours.",
        lambda: rng.choice(["We don't take billing questions by phone, so chat or email is best.",
                            "Billing isn't handled over the phone; please use chat or email."]),
    ]
    wrong_end, wrong_zone = wrong_clock(end, zone, rng, avoid={start})
    errors = {
        "wrong_time": (0, f"Our billing team is around Monday through Friday, {clock(start, rng)} to {wrong_end} "
                          f"{wrong_zone}."),
        "wrong_duration": (1, f"On chat you'll usually hear back within {other(*reply, rng)} during those hours."),
        "dropped_negation": (2, "You can also call us about billing during those hours."),
        "unsupported_addition": (1, "Weekend support is available for Enterprise customers."),
    }
    return q, chunks, facts, errors


# --- account ----------------------------------------------------------------------------------------------

def account_reset(rng):
    valid = rng.choice([(1, "hour"), (30, "minutes"), (24, "hours")])
    per_day = rng.choice([3, 5, 10])
    q = rng.choice(["My password reset link doesn't work.", "How do I reset my password?",
                    "I didn't get a reset email, can you send another?"])
    chunks = [f"Resetting your password. Password reset links expire after {period(*valid)}. You can request at most "
              f"{per_day} reset emails per day.",
              "If your company uses single sign-on, you cannot reset your password here; contact your administrator."]
    facts: list[Fact] = [
        lambda: rng.choice([f"The reset link is good for {same(*valid, rng)}, so please use it soon.",
                            f"Reset links expire after {same(*valid, rng)}."]),
        lambda: rng.choice([f"You can ask for up to {word(per_day, rng)} reset emails a day.",
                            f"There's a limit of {word(per_day, rng)} reset emails per day."]),
        lambda: rng.choice(["If your company uses single sign-on, you won't be able to reset it here, so please "
                            "reach out to your admin.",
                            "With single sign-on you can't reset it from our side; your administrator can help."]),
    ]
    errors = {
        "wrong_duration": (0, f"Reset links expire after {other(*valid, rng)}."),
        "wrong_number": (1, f"You can ask for up to {word(bump(per_day, rng), rng)} reset emails a day."),
        "dropped_negation": (2, "Single sign-on users can reset their password here too."),
        "unsupported_addition": (1, "We'll also text you a backup code to your phone."),
    }
    return q, chunks, facts, errors


def account_lockout(rng):
    attempts = rng.choice([3, 5, 10])
    lock = rng.choice([(30, "minutes"), (1, "hour"), (24, "hours")])
    role, wrong_role = rng.choice([("Administrators", "Members"), ("Owners", "Billing managers")])
    q = rng.choice(["I'm locked out of my account.", "Why can't I sign in anymore?", "How long am I locked out for?"])
    chunks = [f"Account lockout. After {attempts} failed sign-in attempts, the account is locked for {period(*lock)}. "
              f"{role} can unlock accounts from the Members page.",
              "Security. Our support staff will never ask for your password."]
    facts: list[Fact] = [
        lambda: rng.choice([f"After {word(attempts, rng)} failed attempts your account is locked for "
                            f"{same(*lock, rng)}.",
                            f"The account locks for {same(*lock, rng)} once there have been {word(attempts, rng)} "
                            f"failed sign-ins."]),
        lambda: f"{role} can unlock it sooner from the Members page.",
        lambda: rng.choice(["We'll never ask for your password.", "Our team won't ever ask you for your password."]),
    ]
    errors = {
        "wrong_number": (0, f"After {word(bump(attempts, rng), rng)} failed attempts your account is locked for "
                            f"{same(*lock, rng)}."),
        "wrong_duration": (0, f"After {word(attempts, rng)} failed attempts your account is locked for "
                              f"{other(*lock, rng)}."),
        "swapped_entity": (1, f"{wrong_role} can unlock it sooner from the Members page."),
        "dropped_negation": (2, "Support may ask you for your password to verify the account."),
        "unsupported_addition": (1, "Locked accounts are also reported to your manager."),
    }
    return q, chunks, facts, errors


def account_2fa(rng):
    codes = rng.choice([8, 10, 12])
    required, optional = rng.choice([("Admins and Owners", "Members"), ("Owners", "Admins and Members")])
    q = rng.choice(["Do I have to turn on two-factor authentication?", "How do backup codes work?",
                    "Is 2FA mandatory for my team?"])
    chunks = [f"Two-factor authentication. Two-factor authentication is required for {required}. {optional} can "
              f"turn it on from Security settings, but it is not mandatory for them.",
              f"Backup codes. {codes} backup codes are generated when you turn on two-factor authentication, and "
              f"each code can be used once."]
    facts: list[Fact] = [
        lambda: rng.choice([f"Two-factor authentication is mandatory for {required}.",
                            f"2FA is required for {required}."]),
        lambda: rng.choice([f"For {optional} it isn't required, though they can enable it under Security settings.",
                            f"{optional} don't have to use it, but they can switch it on in Security settings."]),
        lambda: rng.choice([f"You get {word(codes, rng)} backup codes, and each one works once.",
                            f"We generate {word(codes, rng)} backup codes for you; every code can be used once."]),
    ]
    errors = {
        "swapped_entity": (0, f"Two-factor authentication is mandatory for {optional}."),
        "dropped_negation": (1, f"{optional} are required to enable it as well."),
        "wrong_number": (2, f"You get {word(codes - 2, rng)} backup codes, and each one works once."),
        "unsupported_addition": (2, "You can also use SMS as a second factor."),
    }
    return q, chunks, facts, errors


def account_closure(rng):
    keep = rng.choice([30, 90, 14])
    restorer, wrong = rng.choice([("an Owner", "any Member"), ("the account Owner", "an Admin")])
    q = rng.choice(["What happens to my data if I close my account?", "Can I undo closing my account?",
                    "I closed my account by mistake."])
    chunks = [f"Closing your account. When you close your account, your data is kept for {period(keep, 'days')} "
              f"and then permanently deleted. During that time {restorer} can restore the account.",
              "Deleted data cannot be recovered after that period, by you or by our support team."]
    facts: list[Fact] = [
        lambda: rng.choice([f"Once you close the account, we keep your data for {same(keep, 'days', rng)} before "
                            f"it's permanently deleted.",
                            f"Your data stays with us for {same(keep, 'days', rng)} after closing, then it's "
                            f"deleted for good."]),
        lambda: f"During that time, {restorer} can restore the account.",
        lambda: rng.choice(["After that, deleted data can't be recovered, not even by our support team.",
                            "Once it's deleted, we can't recover it."]),
    ]
    errors = {
        "wrong_duration": (0, f"Once you close the account, we keep your data for {other(keep, 'days', rng)} before "
                              f"it's permanently deleted."),
        "swapped_entity": (1, f"During that time, {wrong} can restore the account."),
        "dropped_negation": (2, "Even after that, our support team can still recover deleted data."),
        "unsupported_addition": (1, "We'll email you a full export of your data automatically."),
    }
    return q, chunks, facts, errors


# --- orders -----------------------------------------------------------------------------------------------

def orders_shipping(rng):
    cutoff, zone = rng.choice([12, 13, 14, 15]), rng.choice(ZONES)
    lo, hi = rng.choice([(2, 4), (3, 5), (5, 7)])
    express = rng.choice([12, 15, 20])
    q = rng.choice(["When will my order ship?", "How fast is delivery?", "Can you ship to my P.O. box?"])
    chunks = [f"Shipping times. Orders placed before {clock(cutoff, rng)} {zone} ship the same business day. "
              f"Standard delivery takes {lo} to {hi} business days.",
              f"Express delivery arrives in 1 to 2 business days and costs ${express}. We do not ship to P.O. boxes."]
    facts: list[Fact] = [
        lambda: rng.choice([f"If you order before {clock(cutoff, rng)} {zone}, it ships the same business day.",
                            f"Orders in by {clock(cutoff, rng)} {zone} go out the same business day."]),
        lambda: rng.choice([f"Standard delivery takes {word(lo, rng)} to {word(hi, rng)} business days.",
                            f"With standard shipping it's {lo} to {hi} business days."]),
        lambda: f"Express gets there in one to two business days for ${express}.",
        lambda: rng.choice(["We can't ship to P.O. boxes, unfortunately.", "We don't deliver to P.O. boxes."]),
    ]
    wrong_cut, wrong_zone = wrong_clock(cutoff, zone, rng)
    errors = {
        "wrong_time": (0, f"If you order before {wrong_cut} {wrong_zone}, it ships the same business day."),
        "wrong_number": (2, f"Express gets there in one to two business days for ${express + 10}."),
        "dropped_negation": (3, "We can ship to P.O. boxes as well."),
        "unsupported_addition": (2, "Shipping is free on every order over $50."),
    }
    return q, chunks, facts, errors


def orders_returns(rng):
    window, fee, refund_days = rng.choice([14, 30]), rng.choice([5, 6, 8]), rng.choice([5, 10])
    q = rng.choice(["How do I return something?", "Do I have to pay for return shipping?",
                    "How long do I have to send it back?"])
    chunks = [f"Returns. Unused items can be returned within {period(window, 'days')} of delivery. Return shipping "
              f"is free for defective items; otherwise a ${fee} return fee is deducted from the refund.",
              f"Refunds are issued within {refund_days} business days after we receive the return."]
    facts: list[Fact] = [
        lambda: rng.choice([f"You can send back unused items within {same(window, 'days', rng)} of delivery.",
                            f"Unused items can come back to us within {same(window, 'days', rng)} of delivery."]),
        lambda: rng.choice([f"Return shipping's free for defective items; otherwise we deduct a ${fee} fee from "
                            f"the refund.",
                            f"If the item isn't defective, a ${fee} return fee comes off the refund."]),
        lambda: f"Your refund is issued within {word(refund_days, rng)} business days of us receiving the return.",
    ]
    errors = {
        "wrong_duration": (0, f"You can send back unused items within {other(window, 'days', rng)} of delivery."),
        "wrong_number": (1, f"If the item isn't defective, a ${fee + 4} return fee comes off the refund."),
        "swapped_entity": (1, "Return shipping is free for unused items; defective items carry a return fee."),
        "unsupported_addition": (2, "You can also exchange it in any of our stores."),
    }
    return q, chunks, facts, errors


def orders_changes(rng):
    window = rng.choice([(1, "hour"), (30, "minutes"), (2, "hours")])
    q = rng.choice(["Can I cancel my order?", "I need to change my shipping address.", "Can I still edit my order?"])
    chunks = [f"Changing an order. Orders can be changed or cancelled within {period(*window)} of purchase. After an "
              f"order has shipped it cannot be cancelled, but it can be returned.",
              "Address changes are not possible once the shipping label is printed."]
    facts: list[Fact] = [
        lambda: rng.choice([f"You can change or cancel an order within {same(*window, rng)} of placing it.",
                            f"Orders can be edited or cancelled for {same(*window, rng)} after purchase."]),
        lambda: rng.choice(["Once it's shipped it can't be cancelled, but you can return it.",
                            "After it ships, cancelling isn't possible, though a return is."]),
        lambda: rng.choice(["We can't change the address once the label's printed.",
                            "Once the shipping label is printed, the address can't be changed."]),
    ]
    errors = {
        "wrong_duration": (0, f"You can change or cancel an order within {other(*window, rng)} of placing it."),
        "dropped_negation": (1, "You can still cancel it after it has shipped."),
        "unsupported_addition": (2, "We'll refund the shipping cost if you cancel."),
        "swapped_entity": (2, "We can change the address until the order is delivered."),
    }
    return q, chunks, facts, errors


def orders_missing(rng):
    wait = rng.choice([(48, "hours"), (24, "hours"), (2, "days")])
    report = rng.choice([14, 30, 7])
    start, end, zone = rng.choice([8, 9]), rng.choice([17, 18]), rng.choice(ZONES)
    q = rng.choice(["My package says delivered but it's not here.", "My parcel is missing.",
                    "Who do I talk to about a lost delivery?"])
    style = rng.randrange(3)
    chunks = [f"Missing packages. If tracking shows delivered but the package is missing, wait {period(*wait)} before "
              f"reporting it, as carriers sometimes mark packages early. Missing packages reported within "
              f"{period(report, 'days')} are reshipped at no cost.",
              f"Our delivery team answers claims between {clock(start, rng, style)} and {clock(end, rng, style)} "
              f"{zone}, Monday to Saturday."]
    facts: list[Fact] = [
        lambda: rng.choice([f"Please give it {same(*wait, rng)} before reporting it, since carriers sometimes mark "
                            f"packages delivered early.",
                            f"Carriers sometimes scan packages early, so wait {same(*wait, rng)} first."]),
        lambda: rng.choice([f"If you report it within {same(report, 'days', rng)}, we'll reship it for free.",
                            f"Reported within {same(report, 'days', rng)}, a missing package is reshipped at no "
                            f"cost."]),
        lambda: f"Our delivery team handles claims from {clock(start, rng)} to {clock(end, rng)} {zone}, Monday to "
                f"Saturday.",
    ]
    wrong_end, wrong_zone = wrong_clock(end, zone, rng, avoid={start})
    errors = {
        "swapped_entity": (2, f"Our delivery team handles claims from {clock(start, rng)} to {clock(end, rng)} "
                              f"{zone}, Monday to Friday."),
        "wrong_duration": (0, f"Please give it {other(*wait, rng)} before reporting it, since carriers sometimes "
                              f"mark packages delivered early."),
        "wrong_time": (2, f"Our delivery team handles claims from {clock(start, rng)} to {wrong_end} {wrong_zone}, "
                          f"Monday to Saturday."),
        "unsupported_addition": (1, "We'll also refund your shipping fee right away."),
    }
    return q, chunks, facts, errors


SCENARIOS = {
    "billing": [billing_refunds, billing_pricing, billing_failed_payment, billing_hours],
    "account": [account_reset, account_lockout, account_2fa, account_closure],
    "orders": [orders_shipping, orders_returns, orders_changes, orders_missing],
}


def _wrap(rng: random.Random, body: list[str]) -> str:
    """A support answer: an optional opener, the fact sentences (two facts sometimes joined in one
    sentence), an optional closer."""
    name = rng.choice(NAMES)
    parts = []
    if rng.random() < 0.7:
        parts.append(rng.choice(OPENERS).format(name=name))
    body = list(body)
    if len(body) >= 2 and rng.random() < 0.4:  # a multi-fact sentence
        a, b = body[0].rstrip("."), body[1]
        first = b.split()[0]
        keep = first in PLANS or first.startswith(("I", "2FA"))
        body[:2] = [f"{a}, and {b if keep else b[0].lower() + b[1:]}"]
    parts += body
    if rng.random() < 0.6:
        parts.append(rng.choice(CLOSERS).format(name=name))
    return " ".join(parts)


def generate(seed: int = SEED) -> list[dict]:
    rng = random.Random(seed)
    rows = []
    group = 0
    all_chunks: dict[str, list[list[str]]] = {area: [] for area in SCENARIOS}
    made = []
    for area, makers in SCENARIOS.items():
        for maker in makers:
            for instance in range(INSTANCES):
                q, chunks, facts, errors = maker(rng)
                made.append((area, maker, instance, q, chunks, facts, errors))
                all_chunks[area].append(chunks)
    for area, maker, instance, q, chunks, facts, errors in made:
        # One chunk of another article of the same area rides along, as retrieval returns it.
        others = [c for c in all_chunks[area] if c is not chunks]
        distractor = rng.choice(rng.choice(others))
        sources = [{"id": f"{maker.__name__}-{instance}#{k}", "text": t} for k, t in enumerate(chunks)]
        sources.insert(rng.randrange(len(sources) + 1), {"id": f"{area}-related", "text": distractor})
        available = [e for e in ERROR_TYPES if e in errors]
        chosen = [available[(instance * HALLUCINATED + k) % len(available)] for k in range(HALLUCINATED)]
        split = "calibration" if instance % 2 == 0 else "test"
        scenario = f"{maker.__name__}-{instance}"
        items = []
        for _ in range(FAITHFUL):
            k = rng.randint(1, min(3, len(facts)))
            picked = sorted(rng.sample(range(len(facts)), k))
            items.append((_wrap(rng, [facts[i]() for i in picked]), "none"))
        for error_type in chosen:
            at, wrong = errors[error_type]
            k = rng.randint(0, min(2, len(facts) - 1))
            picked = sorted(set(rng.sample([i for i in range(len(facts)) if i != at], k)) | {at})
            if error_type == "unsupported_addition":  # added after fact `at`, which is stated as it is
                body = [s for i in picked for s in ([facts[i](), wrong] if i == at else [facts[i]()])]
            else:  # fact `at` replaced by its corrupted version
                body = [wrong if i == at else facts[i]() for i in picked]
            items.append((_wrap(rng, body), error_type))
        for k, (response, error_type) in enumerate(items):
            rows.append({
                "id": f"{scenario}-{k}",
                "doc_type": area,
                "split": split,
                "question": q,
                "sources": sources,
                "response": response,
                "label": "faithful" if error_type == "none" else "hallucinated",
                "meta": {"error_type": error_type, "scenario": maker.__name__, "group": group},
            })
        group += 1
    return rows


def main() -> None:
    out = Path(__file__).with_name("cases.jsonl")
    rows = generate()
    with open(out, "w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    print(f"wrote {len(rows)} cases to {out}")


if __name__ == "__main__":
    main()
