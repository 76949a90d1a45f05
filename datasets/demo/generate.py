"""Write datasets/demo/cases.jsonl: verifybench's own labeled demo set, seeded and reproducible.

Three document types (support answers, contract summaries, technical docs). Each scenario is a
template filled with seeded values: a source text, and four responses to it, two faithful (different
paraphrases and subsets of the facts) and two hallucinated, each with one realistic error:
wrong number or date, swapped entity, dropped negation, or an unsupported addition. The error type is
in `meta.error_type` ("none" for faithful responses). All four responses of a scenario share a split,
so a threshold fitted on the calibration split never sees the test split's sources.

    python datasets/demo/generate.py            # rewrites cases.jsonl next to this file
"""

from __future__ import annotations

import json
import random
from pathlib import Path

SEED = 20261130
INSTANCES = 8  # each scenario template is filled this many times with different values
# (8 gives 32 cases of each class per doc type and split: enough to fit a threshold per doc type)
ERROR_TYPES = ("wrong_number", "swapped_entity", "dropped_negation", "unsupported_addition")

PLANS = ["Starter", "Team", "Business", "Growth", "Pro", "Scale"]
PRODUCTS = ["Northwind CRM", "Lumen Analytics", "Quillbox", "Harbor Backup", "Tessera Mail", "Polaris Desk"]
REGIONS = ["Frankfurt", "Dublin", "Oregon", "Singapore", "Montreal", "Sydney"]
COMPANIES = ["Acme Logistics GmbH", "Brightwater Foods Ltd", "Cobalt Health Inc.", "Delta Freight LLC",
             "Evergreen Retail SA", "Fjord Energy AS", "Granite Legal LLP", "Helios Media BV"]
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December"]
LIBS = ["tidepool", "quarkdb", "ferrite", "lanternfs", "mosaic-rpc", "pebblequeue"]
FORMATS = ["CSV", "Parquet", "JSON", "Excel"]
EXTRAS = {
    "support": ["Phone support is available around the clock on this plan.",
                "The plan also includes a dedicated account manager.",
                "You also get unlimited storage at no extra charge.",
                "A free onboarding workshop is included for new customers."],
    "contract": ["The agreement also grants the customer exclusive rights in the territory.",
                 "Either party may assign the contract without consent.",
                 "The supplier also guarantees a 99.99% uptime.",
                 "Late payments are charged no interest under this agreement."],
    "technical": ["It also runs natively on Windows without any extra setup.",
                  "The feature is enabled by default in every deployment.",
                  "Performance improves tenfold compared with the previous release.",
                  "No restart is needed after changing this setting."],
}


def _other(rng: random.Random, pool: list, value):
    return rng.choice([x for x in pool if x != value])


def _bump(rng: random.Random, n: int) -> int:
    return n + rng.choice([-1, 1]) * rng.choice([1, 2, 5, 10]) if n > 10 else n + rng.choice([1, 2, 3])


def _date(rng: random.Random) -> tuple[int, str]:
    day = rng.randint(1, 28)
    return day, rng.choice(MONTHS)


# Each scenario returns (source, faithful responses, {error_type: hallucinated response}, short supported
# sentences). A hallucinated response sometimes carries one of those supported sentences too, as real ones
# do, so that response length alone does not give the label away.

def support_plan(rng):
    plan, other = rng.sample(PLANS, 2)
    product = rng.choice(PRODUCTS)
    price, seats, days = rng.choice([12, 19, 29, 49, 79]), rng.choice([3, 5, 10, 25]), rng.choice([14, 30, 45])
    fmt = rng.choice(FORMATS)
    source = (f"{product} pricing. The {plan} plan costs ${price} per user per month and includes up to {seats} "
              f"user seats. The {other} plan adds single sign-on. Data export to {fmt} is supported on the {plan} "
              f"plan, but API access is not included. Customers can request a full refund within {days} days of "
              f"purchase.")
    faithful = [f"The {plan} plan is ${price} per user each month and covers up to {seats} seats. You can export "
                f"your data to {fmt}.",
                f"On {plan}, API access is not included, though {fmt} export is. Refunds can be requested within "
                f"{days} days of buying."]
    base = f"The {plan} plan costs ${price} per user per month with up to {seats} seats."
    errors = {
        "wrong_number": f"The {plan} plan costs ${price} per user per month with up to {seats} seats. Refunds can be "
                        f"requested within {_bump(rng, days)} days of purchase.",
        "swapped_entity": f"The {other} plan costs ${price} per user per month with up to {seats} seats, and it "
                          f"supports export to {fmt}.",
        "dropped_negation": f"{base} API access is included, and you can export to {fmt}.",
        "unsupported_addition": f"{base} {rng.choice(EXTRAS['support'])}",
    }
    also = [f"The {other} plan adds single sign-on.", f"Refunds are possible within {days} days."]
    return source, faithful, errors, also


def support_outage(rng):
    product = rng.choice(PRODUCTS)
    region, other = rng.sample(REGIONS, 2)
    minutes = rng.choice([25, 40, 55, 90])
    day, month = _date(rng)
    credit = rng.choice([5, 10, 15])
    source = (f"Incident report for {product}. On {month} {day}, customers hosted in the {region} region could not "
              f"sign in for {minutes} minutes. Data was not lost and no other region was affected. Affected "
              f"customers receive a {credit}% service credit on their next invoice; they do not need to open a "
              f"ticket.")
    faithful = [f"On {month} {day}, sign-in failed for {minutes} minutes for customers in {region}. No data was lost.",
                f"Customers in the {region} region get a {credit}% credit on the next invoice automatically, without "
                f"opening a ticket."]
    errors = {
        "wrong_number": f"Customers in {region} could not sign in for {minutes} minutes and get a "
                        f"{credit + 10}% service credit.",
        "swapped_entity": f"On {month} {day}, customers in the {other} region could not sign in for {minutes} minutes.",
        "dropped_negation": f"Sign-in failed in {region} for {minutes} minutes, and affected customers need to open "
                            f"a ticket to receive the {credit}% credit.",
        "unsupported_addition": f"Sign-in failed in {region} for {minutes} minutes. "
                                f"The cause was a failed database upgrade.",
    }
    also = ["No other region was affected.", "Data was not lost."]
    return source, faithful, errors, also


def support_shipping(rng):
    product = rng.choice(["standing desk", "espresso machine", "e-bike battery", "robot vacuum", "monitor arm"])
    carrier, other = rng.sample(["DHL", "UPS", "FedEx", "GLS", "DPD"], 2)
    days, free_over = rng.choice([2, 3, 5]), rng.choice([50, 75, 100, 150])
    source = (f"Shipping for the {product}: orders ship with {carrier} and arrive within {days} business days. "
              f"Shipping is free on orders over ${free_over}. We do not ship to P.O. boxes. Returns are accepted "
              f"for 30 days if the item is unused.")
    faithful = [f"Your {product} ships with {carrier} and should arrive within {days} business days; shipping is "
                f"free above ${free_over}.",
                f"We can't deliver the {product} to a P.O. box. Unused items can be returned for 30 days."]
    errors = {
        "wrong_number": f"The {product} ships with {carrier}, and shipping is free on orders over "
                        f"${free_over // 2}.",
        "swapped_entity": f"The {product} ships with {other} and arrives within {days} business days.",
        "dropped_negation": f"The {product} ships with {carrier} within {days} business days, and we can ship to "
                            f"P.O. boxes.",
        "unsupported_addition": f"The {product} ships with {carrier} within {days} business days. "
                                f"Express delivery is available for an extra $9.",
    }
    also = ["Unused items can be returned for 30 days.", f"Delivery is with {carrier}."]
    return source, faithful, errors, also


def support_account(rng):
    product = rng.choice(PRODUCTS)
    hours, attempts = rng.choice([24, 48, 72]), rng.choice([3, 5, 10])
    source = (f"Account security in {product}. After {attempts} failed sign-in attempts the account is locked for "
              f"{hours} hours. Administrators can unlock it earlier from the admin console. Two-factor "
              f"authentication is required for administrators but is optional for other users. Support staff never "
              f"ask for your password.")
    faithful = [f"The account locks for {hours} hours after {attempts} failed attempts, but an administrator can "
                f"unlock it sooner in the admin console.",
                f"In {product}, two-factor authentication is mandatory for administrators and optional for "
                f"everyone else."]
    errors = {
        "wrong_number": f"After {attempts} failed attempts the account is locked for {hours * 2} hours.",
        "swapped_entity": f"After {attempts} failed attempts the account is locked, and only support staff can "
                          f"unlock it early.",
        "dropped_negation": f"Two-factor authentication is required for every user of {product}, administrators "
                            f"included.",
        "unsupported_addition": f"The account locks for {hours} hours after {attempts} failed attempts. "
                                f"Locked accounts are deleted after 90 days.",
    }
    also = ["Support staff never ask for your password.", "Administrators can unlock accounts early."]
    return source, faithful, errors, also


def contract_services(rng):
    supplier, customer, other = rng.sample(COMPANIES, 3)
    months, fee, notice = rng.choice([12, 24, 36]), rng.choice([4800, 12500, 18000, 26400]), rng.choice([30, 60, 90])
    day, month = _date(rng)
    year = rng.choice([2025, 2026])
    source = (f"Master services agreement between {supplier} (the Supplier) and {customer} (the Customer), "
              f"effective {month} {day}, {year}. The term is {months} months. The Customer pays a monthly fee of "
              f"${fee:,}. Either party may terminate for convenience with {notice} days' written notice. The "
              f"agreement does not renew automatically. Liability is capped at the fees paid in the preceding 12 "
              f"months.")
    faithful = [f"{supplier} and {customer} signed a {months}-month services agreement starting {month} {day}, "
                f"{year}, at ${fee:,} per month.",
                f"Either side can end the agreement with {notice} days' written notice; it does not auto-renew, "
                f"and liability is capped at 12 months of fees."]
    errors = {
        "wrong_number": f"The agreement between {supplier} and {customer} runs for {months} months at "
                        f"${fee + 1500:,} per month.",
        "swapped_entity": f"{other} is the Supplier under a {months}-month agreement with {customer} at ${fee:,} "
                          f"per month.",
        "dropped_negation": f"The {months}-month agreement renews automatically, and either party may terminate "
                            f"with {notice} days' notice.",
        "unsupported_addition": f"The agreement runs {months} months at ${fee:,} per month. "
                                f"{rng.choice(EXTRAS['contract'])}",
    }
    also = ["Liability is capped at 12 months of fees.", "The agreement does not auto-renew."]
    return source, faithful, errors, also


def contract_lease(rng):
    landlord, tenant, other = rng.sample(COMPANIES, 3)
    rent, deposit = rng.choice([3200, 5400, 8750]), rng.choice([2, 3])
    day, month = _date(rng)
    source = (f"Commercial lease. {landlord} leases the premises at 14 Harbour Street to {tenant}. Rent is "
              f"${rent:,} per month, due on the first day of each month. The deposit equals {deposit} months' rent. "
              f"The lease starts on {month} {day}, 2026 and runs for five years. Subletting is not permitted "
              f"without the landlord's written consent.")
    faithful = [f"{tenant} rents 14 Harbour Street from {landlord} for ${rent:,} a month, paid on the first of "
                f"each month, over five years.",
                f"The deposit is {deposit} months' rent, and {tenant} may not sublet without {landlord}'s written "
                f"consent."]
    errors = {
        "wrong_number": f"{tenant} leases 14 Harbour Street for five years; the deposit is {deposit + 2} months' "
                        f"rent.",
        "swapped_entity": f"{other} leases 14 Harbour Street to {tenant} for ${rent:,} per month.",
        "dropped_negation": f"{tenant} pays ${rent:,} per month and is permitted to sublet the premises freely.",
        "unsupported_addition": f"{tenant} pays ${rent:,} per month for five years. "
                                f"The landlord covers all utility costs.",
    }
    also = ["Rent is due on the first of each month.", "The lease runs for five years."]
    return source, faithful, errors, also


def contract_nda(rng):
    a, b, other = rng.sample(COMPANIES, 3)
    years = rng.choice([2, 3, 5])
    law = rng.choice(["England and Wales", "New York", "Delaware", "Ontario"])
    source = (f"Mutual non-disclosure agreement between {a} and {b}. Confidential information must be kept "
              f"confidential for {years} years after disclosure. The obligations do not apply to information that "
              f"is already public. The agreement is governed by the laws of {law}. No licence to any intellectual "
              f"property is granted.")
    faithful = [f"{a} and {b} must keep each other's confidential information secret for {years} years after it "
                f"is disclosed.",
                f"The NDA is governed by the laws of {law}, excludes information that is already public, and "
                f"grants no IP licence."]
    errors = {
        "wrong_number": f"Under the NDA, {a} and {b} must keep information confidential for {years + 3} years.",
        "swapped_entity": f"The NDA between {a} and {other} lasts {years} years and is governed by the laws of "
                          f"{law}.",
        "dropped_negation": f"The NDA lasts {years} years and grants each party a licence to the other's "
                            f"intellectual property.",
        "unsupported_addition": f"The NDA lasts {years} years under the laws of {law}. "
                                f"Breaches carry a fixed penalty of $50,000.",
    }
    also = ["Public information is excluded.", "No IP licence is granted."]
    return source, faithful, errors, also


def contract_sla(rng):
    supplier, customer = rng.sample(COMPANIES, 2)
    uptime = rng.choice(["99.5", "99.9", "99.95"])
    credit, hours = rng.choice([10, 15, 25]), rng.choice([4, 8, 24])
    source = (f"Service level schedule. {supplier} commits to {uptime}% monthly availability for {customer}. If "
              f"availability falls below that level, {customer} receives a credit of {credit}% of the monthly "
              f"fee. Critical incidents get a response within {hours} hours. Scheduled maintenance does not count "
              f"as downtime.")
    faithful = [f"{supplier} promises {uptime}% monthly availability; below that, {customer} gets a {credit}% "
                f"credit on the monthly fee.",
                f"Critical incidents are answered within {hours} hours, and scheduled maintenance isn't counted as "
                f"downtime."]
    errors = {
        "wrong_number": f"{supplier} commits to {uptime}% availability and answers critical incidents within "
                        f"{hours + 12} hours.",
        "swapped_entity": f"{customer} commits to {uptime}% monthly availability for {supplier}.",
        "dropped_negation": f"{supplier} commits to {uptime}% availability, and scheduled maintenance counts as "
                            f"downtime.",
        "unsupported_addition": f"{supplier} commits to {uptime}% availability. "
                                f"{rng.choice(EXTRAS['contract'])}",
    }
    also = ["Scheduled maintenance is not downtime.", f"The credit is {credit}% of the monthly fee."]
    return source, faithful, errors, also


def tech_config(rng):
    lib = rng.choice(LIBS)
    major, minor = rng.randint(1, 4), rng.randint(0, 12)
    timeout, pool = rng.choice([15, 30, 60]), rng.choice([8, 16, 32])
    source = (f"{lib} {major}.{minor} configuration. The request timeout defaults to {timeout} seconds and can be "
              f"changed with the REQUEST_TIMEOUT variable. The connection pool holds {pool} connections. TLS is "
              f"enabled by default; plain HTTP is not supported in production mode. Changing the pool size "
              f"requires a restart.")
    faithful = [f"In {lib} {major}.{minor} the request timeout is {timeout} seconds by default, adjustable via "
                f"REQUEST_TIMEOUT.",
                f"{lib} keeps a pool of {pool} connections; resizing it needs a restart, and production mode does "
                f"not support plain HTTP."]
    errors = {
        "wrong_number": f"In {lib} {major}.{minor} the request timeout defaults to {timeout * 4} seconds.",
        "swapped_entity": f"In {lib} {major}.{minor} the request timeout is {timeout} seconds, set with the "
                          f"POOL_SIZE variable.",
        "dropped_negation": f"{lib} {major}.{minor} uses TLS by default, and plain HTTP is supported in "
                            f"production mode.",
        "unsupported_addition": f"In {lib} {major}.{minor} the request timeout is {timeout} seconds. "
                                f"{rng.choice(EXTRAS['technical'])}",
    }
    also = ["Changing the pool size needs a restart.", "TLS is on by default."]
    return source, faithful, errors, also


def tech_release(rng):
    lib = rng.choice(LIBS)
    major = rng.randint(2, 6)
    py = rng.choice(["3.10", "3.11", "3.12"])
    day, month = _date(rng)
    source = (f"{lib} {major}.0 release notes, published {month} {day}, 2026. Python {py} is now the minimum "
              f"supported version. The legacy sync client was removed. Streaming uploads are now supported. The "
              f"default retry count changed from 3 to 5. Windows is not supported in this release.")
    faithful = [f"{lib} {major}.0 came out on {month} {day}, 2026 and needs at least Python {py}.",
                f"In {lib} {major}.0 the legacy sync client is gone, streaming uploads are supported, and the "
                f"default retry count is now 5."]
    errors = {
        "wrong_number": f"{lib} {major}.0 changed the default retry count from 3 to 8.",
        "swapped_entity": f"{lib} {major}.0 removed the streaming upload client and requires Python {py}.",
        "dropped_negation": f"{lib} {major}.0 requires Python {py} and supports Windows.",
        "unsupported_addition": f"{lib} {major}.0 requires Python {py}. "
                                f"It also adds a built-in web dashboard.",
    }
    also = ["Streaming uploads are now supported.", "The legacy sync client was removed."]
    return source, faithful, errors, also


def tech_api(rng):
    product = rng.choice(PRODUCTS)
    limit, page = rng.choice([60, 100, 600, 1000]), rng.choice([50, 100, 200])
    source = (f"{product} REST API. Requests are limited to {limit} per minute per API key. List endpoints "
              f"return at most {page} items per page; use the cursor parameter for the next page. Deleting a "
              f"project is permanent and cannot be undone. API keys do not expire, but they can be revoked.")
    faithful = [f"The {product} API allows {limit} requests per minute per key, and list endpoints return up to "
                f"{page} items per page.",
                "Deleted projects cannot be restored. Keys never expire on their own but can be revoked."]
    errors = {
        "wrong_number": f"The {product} API allows {limit * 10} requests per minute per key.",
        "swapped_entity": f"List endpoints return up to {page} items per page; use the offset parameter to get "
                          f"the next page.",
        "dropped_negation": f"In the {product} API, a deleted project can be restored within 30 days, and keys "
                            f"can be revoked.",
        "unsupported_addition": f"The {product} API allows {limit} requests per minute per key. "
                                f"Webhooks are retried for up to 24 hours.",
    }
    also = ["API keys can be revoked.", "Use the cursor parameter to page."]
    return source, faithful, errors, also


def tech_backup(rng):
    product = rng.choice(["Harbor Backup", "Vaultline", "Snapkeeper"])
    hour, days = rng.choice([1, 2, 3, 4]), rng.choice([7, 14, 30, 35])
    region = rng.choice(REGIONS)
    source = (f"{product} schedule. Snapshots are taken daily at {hour:02d}:00 UTC and kept for {days} days. "
              f"Snapshots are stored in {region} and are encrypted at rest. Restores can be started from the "
              f"dashboard or the CLI. Snapshots are not copied to a second region.")
    faithful = [f"{product} takes a snapshot every day at {hour:02d}:00 UTC and keeps it for {days} days.",
                f"Snapshots live in {region}, are encrypted at rest, and are not replicated to another region."]
    errors = {
        "wrong_number": f"{product} takes daily snapshots at {hour:02d}:00 UTC and keeps them for {days + 60} days.",
        "swapped_entity": f"{product} snapshots are stored in {_other(rng, REGIONS, region)} and encrypted at rest.",
        "dropped_negation": f"{product} snapshots are kept for {days} days and copied to a second region.",
        "unsupported_addition": f"{product} keeps daily snapshots for {days} days. "
                                f"Restores finish within 15 minutes.",
    }
    also = ["Restores can start from the dashboard or CLI.", "Snapshots are encrypted at rest."]
    return source, faithful, errors, also


SCENARIOS = {
    "support_answer": [support_plan, support_outage, support_shipping, support_account],
    "contract_summary": [contract_services, contract_lease, contract_nda, contract_sla],
    "technical_doc": [tech_config, tech_release, tech_api, tech_backup],
}


def generate(seed: int = SEED) -> list[dict]:
    rng = random.Random(seed)
    rows = []
    group = 0
    for doc_type, makers in SCENARIOS.items():
        for maker in makers:
            for instance in range(INSTANCES):
                source, faithful, errors, also = maker(rng)
                # Two error types per scenario instance, rotating so every type appears evenly.
                chosen = [ERROR_TYPES[(instance * 2 + k) % 4] for k in (0, 1)]
                # Pairs of instances alternate between splits, so every error type lands in both.
                split = "calibration" if (instance // 2) % 2 == 0 else "test"
                question = None
                scenario = f"{maker.__name__}-{instance}"
                wrong = [errors[e] + (" " + rng.choice(also) if rng.random() < 0.5 else "") for e in chosen]
                items = [(r, False, "none") for r in faithful] + [(w, True, e) for w, e in zip(wrong, chosen)]
                for k, (response, label, error_type) in enumerate(items):
                    rows.append({
                        "id": f"{scenario}-{k}",
                        "doc_type": doc_type,
                        "split": split,
                        "question": question,
                        "sources": [{"id": f"{scenario}-source", "text": source}],
                        "response": response,
                        "label": "hallucinated" if label else "faithful",
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
