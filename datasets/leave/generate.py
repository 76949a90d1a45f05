"""Write the leave dataset: the facts of the leave pack (pack/facts/*.csv), the written leave policy, and
labeled prose answers with the structured claims behind them. Seeded: every run writes the same bytes.

    python datasets/leave/generate.py        # rewrites pack/facts/*.csv, policy.md and cases.jsonl here

The pack itself (pack/pack.yaml, pack/rules.py) is written by hand against verifybench's public pack
interface (docs/graph.md); this script only writes its facts and the cases.

Each case is one employee's question about one leave request, a prose answer, and the structured claims
behind that answer (`claims`: {claim_type, subject_id, value, evidence}). Its sources are the written
leave policy and the request record, so text verifiers and the `graph` verifier judge the same cases.
Faithful answers (label false, `meta.error_type` "none") state correct values; each hallucinated answer
carries one planted error (`meta.error_type`):

    wrong_contract           the employee's contract type is wrong
    approval_flipped         approved <-> refused (the pay stated accordingly)
    notice_ignored           a request submitted with too little notice called approved
    balance_miscounted       the days left given as the full entitlement, ignoring the days already taken
    return_date_off_by_one   the return date given as the last day of leave instead of the first day back
    pay_at_full_rate         the leave pay at 100% of the daily rate where the plan pays less
    unknown_request          the answer is about a request id that does not exist
    probation_ignored        a request before the plan's minimum service called approved (and paid)

The correct values are computed here by a plain-Python reading of the policy (`expected`), independent
of the RelationalAI rules, so a test that the graph agrees with them checks one against the other. The
cases of a type are split alternately into calibration and test.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import random
from pathlib import Path

SEED = 20261201
PER_TYPE = 24  # hallucinated cases per error type; as many faithful cases as hallucinated ones in all
HERE = Path(__file__).resolve().parent
ERROR_TYPES = ("wrong_contract", "approval_flipped", "notice_ignored", "balance_miscounted", "return_date_off_by_one",
               "pay_at_full_rate", "unknown_request", "probation_ignored")
CONTRACTS = ("FULL_TIME", "PART_TIME", "FIXED_TERM")
# (contract, leave type): (entitlement days a year, notice days, minimum service days, pay %)
PLANS = {
    ("FULL_TIME", "ANNUAL"): (25, 14, 0, 100), ("FULL_TIME", "SICK"): (20, 0, 0, 80),
    ("FULL_TIME", "PARENTAL"): (90, 30, 180, 70),
    ("PART_TIME", "ANNUAL"): (15, 14, 0, 100), ("PART_TIME", "SICK"): (12, 0, 0, 80),
    ("PART_TIME", "PARENTAL"): (60, 30, 180, 60),
    ("FIXED_TERM", "ANNUAL"): (12, 7, 30, 100), ("FIXED_TERM", "SICK"): (10, 0, 0, 50),
    ("FIXED_TERM", "PARENTAL"): (30, 30, 365, 0),
}
FIRST = ["Dana", "Rahul", "Mei", "Olga", "Tomás", "Amara", "Jonas", "Priya", "Kenji", "Lucia", "Samir", "Ingrid"]
LAST = ["Ortiz", "Mehta", "Chen", "Petrova", "Silva", "Okafor", "Berg", "Nair", "Sato", "Romano", "Haddad", "Lund"]
YEAR_START = dt.date(2026, 1, 5)


def plan_id(contract: str, leave_type: str) -> str:
    return f"LP-{ {'FULL_TIME': 'FT', 'PART_TIME': 'PT', 'FIXED_TERM': 'FX'}[contract]}-{leave_type}"


def money(cents: int) -> str:
    return f"{cents // 100}.{cents % 100:02d}"


def expected(req: dict, emp: dict) -> dict:
    """The policy's values for a request, in plain Python (the reference the graph is checked against)."""
    entitlement, notice, min_service, pay_pct = PLANS[(emp["contract"], req["leave_type"])]
    approved = ((req["start"] - req["submitted"]).days >= notice and (req["start"] - emp["hire"]).days >= min_service
                and req["days"] + req["used"] <= entitlement)
    as_if = (req["days"] * emp["rate"] * pay_pct + 50) // 100
    return {"contract_type": emp["contract"], "notice_days": notice, "remaining_days": max(entitlement - req["used"], 0),
            "leave_approved": approved, "return_date": req["start"] + dt.timedelta(days=req["days"]) if approved else None,
            "leave_pay": as_if if approved else 0, "paid_leave": pay_pct > 0, "_as_if_pay": as_if,
            "_full_pay": req["days"] * emp["rate"], "_entitlement": entitlement}


def make_request(rng: random.Random, n: int, emp: dict, leave_type: str, kind: str) -> dict:
    """A request of `kind`: ok, used (ok, with days already taken), short_notice, over_balance, probation.
    Also sets the employee's hire date so that the kind holds."""
    entitlement, notice, min_service, _ = PLANS[(emp["contract"], leave_type)]
    start = YEAR_START + dt.timedelta(days=rng.randint(0, 320))
    days = rng.randint(1, min(entitlement, 14 if leave_type != "PARENTAL" else entitlement))
    used = 0
    if kind == "used":
        used = rng.randint(1, max(1, entitlement - days))
        days = min(days, entitlement - used)
    elif kind == "over_balance":
        used = rng.randint(entitlement - days + 1, entitlement + 3)
    elif kind == "ok":
        used = rng.choice([0, 0, rng.randint(0, entitlement - days)])
    given = notice + rng.randint(0, 21)
    if kind == "short_notice":
        given = rng.randint(max(0, notice - 10), notice - 1)
    service = min_service + rng.randint(20, 2400)
    if kind == "probation":
        service = rng.randint(max(0, min_service - 120), min_service - 1)
    emp["hire"] = start - dt.timedelta(days=service)
    return {"request_id": f"L-{n}", "employee_id": emp["employee_id"], "leave_type": leave_type,
            "submitted": start - dt.timedelta(days=given), "start": start, "days": days, "used": used}


def policy_text() -> str:
    lines = ["Leave policy.", ""]
    for (contract, leave_type), (ent, notice, service, pay) in PLANS.items():
        who = contract.replace("_", "-").lower()
        lines.append(f"{leave_type.capitalize()} leave, {who} contracts (plan {plan_id(contract, leave_type)}): "
                     f"{ent} days a year; {notice} days' notice; {service} days of service before the leave starts; "
                     f"paid at {pay}% of the daily rate." if pay else
                     f"{leave_type.capitalize()} leave, {who} contracts (plan {plan_id(contract, leave_type)}): "
                     f"{ent} days a year; {notice} days' notice; {service} days of service before the leave starts; "
                     "unpaid.")
    lines += ["", "A request is approved when it was submitted at least the notice period before the leave starts, the "
              "employee has served the minimum service by the start date, and its days fit in the days left this year "
              "(the entitlement less the days of that leave type already taken).",
              "Leave days are calendar days. The first day back at work is the start date plus the days of leave.",
              "Leave pay = days x daily rate x the plan's pay percentage, rounded to the cent; a refused request pays "
              "nothing."]
    return "\n".join(lines) + "\n"


def request_record(r: dict, emp: dict) -> str:
    return (f"Leave request {r['request_id']}: {r['leave_type'].lower()} leave of {r['days']} days from "
            f"{r['start'].isoformat()}, submitted {r['submitted'].isoformat()}, by employee {emp['employee_id']} "
            f"({emp['name']}), {emp['contract'].replace('_', '-').lower()} contract, hired "
            f"{emp['hire'].isoformat()}, daily rate ${money(emp['rate'])}. Days of {r['leave_type'].lower()} leave "
            f"already taken this year: {r['used']}.")


def written_date(rng: random.Random, d: dt.date) -> str:
    return rng.choice([d.isoformat(), f"{d.day} {d.strftime('%B')} {d.year}", f"{d.strftime('%B')} {d.day}, {d.year}"])


def sentence(rng: random.Random, claim_type: str, value, rid: str, leave_type: str) -> str:
    lt = leave_type.lower()
    options = {  # lambdas: only the asked claim type is formatted
        "contract_type": lambda: [f"You are on a {value.replace('_', '-').lower()} contract.",
                                  f"As a {value.replace('_', '-').lower()} employee, the {lt} leave plan for your "
                                  "contract applies."],
        "leave_approved": lambda: ([f"Your leave request {rid} is approved.", f"Request {rid} has been approved.",
                                    f"Yes, you can take this leave: request {rid} is granted."] if value else
                                   [f"Your leave request {rid} cannot be approved.", f"Request {rid} is refused.",
                                    f"Unfortunately request {rid} has been declined."]),
        "return_date": lambda: [f"You are back at work on {written_date(rng, value)}.",
                                f"Your first day back is {written_date(rng, value)}."],
        "leave_pay": lambda: [f"You will be paid ${money(value)} for the leave.",
                              f"The leave pays ${value // 100:,}.{value % 100:02d}.",  # thousands with commas
                              f"Leave pay comes to ${money(value)}."],
        "paid_leave": lambda: (["This leave is paid.", "It is paid leave under your plan."] if value else
                               ["This leave is unpaid.", "No pay is due for this leave."]),
        "remaining_days": lambda: [f"You have {value} days of {lt} leave left.",
                                   f"Your remaining {lt} leave balance is {value} days."],
        "notice_days": lambda: [f"Your plan requires {value} days' notice.", f"You must give {value} days of notice."],
    }
    return rng.choice(options[claim_type]())


def evidence(claim_type: str, emp: dict, req: dict) -> str:
    plan = plan_id(emp["contract"], req["leave_type"])
    return {"contract_type": f"Employee record: {emp['employee_id']} is on a {emp['contract']} contract.",
            "notice_days": f"Notice period of plan {plan}.",
            "remaining_days": f"Entitlement of plan {plan} less {req['used']} days taken.",
            "leave_approved": f"Request record and plan {plan}.",
            "return_date": f"Start {req['start'].isoformat()} plus {req['days']} days.",
            "leave_pay": f"{req['days']} days at ${money(emp['rate'])} a day under plan {plan}.",
            "paid_leave": f"Pay percentage of plan {plan}."}[claim_type]


def claim_value(claim_type: str, value):
    if claim_type == "leave_pay":
        return money(value)
    if claim_type == "return_date":
        return value.isoformat()
    return value


QUESTIONS = {
    "status": ["Is my leave request {rid} approved?", "What is the status of my leave request {rid}?"],
    "balance": ["Can I take the leave in request {rid}, and how many days do I have left?",
                "Do I have enough days for leave request {rid}?"],
    "pay": ["Will I be paid during the leave in request {rid}?", "How much leave pay do I get for request {rid}?"],
    "short": ["When am I back at work after leave request {rid}?", "Is request {rid} fine, and when do I return?"],
}
SETS = {  # which claims a question is answered with
    "status": ["contract_type", "leave_approved", "return_date", "leave_pay"],
    "balance": ["leave_approved", "remaining_days", "notice_days"],
    "pay": ["leave_approved", "leave_pay", "paid_leave"],
    "short": ["leave_approved", "return_date"],
}
ANSWER_SET = {"wrong_contract": "status", "notice_ignored": "balance", "balance_miscounted": "balance",
              "return_date_off_by_one": "short", "pay_at_full_rate": "pay", "unknown_request": "status",
              "probation_ignored": "pay"}


def build_case(rng: random.Random, req: dict, emp: dict, error: str, policy: str, known_ids: set) -> dict:
    exp = expected(req, emp)
    values = {k: v for k, v in exp.items() if not k.startswith("_")}
    subject = req["request_id"]
    if error == "none":
        which = rng.choices(list(SETS), [3, 3, 3, 2])[0]
    elif error == "approval_flipped":
        which = rng.choice(["short", "pay"])
    else:
        which = ANSWER_SET[error]
    if error == "wrong_contract":
        values["contract_type"] = rng.choice([c for c in CONTRACTS if c != emp["contract"]])
    elif error == "approval_flipped":
        values["leave_approved"] = not values["leave_approved"]
        values["leave_pay"] = exp["_as_if_pay"] if values["leave_approved"] else 0
    elif error in ("notice_ignored", "probation_ignored"):
        values["leave_approved"], values["leave_pay"] = True, exp["_as_if_pay"]
    elif error == "balance_miscounted":
        values["remaining_days"] = exp["_entitlement"]
    elif error == "return_date_off_by_one":
        values["return_date"] = exp["return_date"] - dt.timedelta(days=1)
    elif error == "pay_at_full_rate":
        values["leave_pay"] = exp["_full_pay"]
    elif error == "unknown_request":
        n = int(subject.split("-")[1])
        while f"L-{n}" in known_ids:
            n += 7919
        subject = f"L-{n}"
    # A return date exists only for a leave that is approved and said to be.
    claim_types = [t for t in SETS[which] if t != "return_date" or (exp["leave_approved"] and values["leave_approved"])]
    question = rng.choice(QUESTIONS[which])
    response = " ".join(sentence(rng, t, values[t], subject, req["leave_type"]) for t in claim_types)
    claims = [{"claim_type": t, "subject_id": subject, "value": claim_value(t, values[t]),
               "evidence": evidence(t, emp, req)} for t in claim_types]
    return {"question": question.format(rid=req["request_id"]), "response": response,
            "sources": [{"id": "leave_policy", "text": policy},
                        {"id": f"request_{req['request_id']}", "text": request_record(req, emp)}],
            "claims": claims, "label": error != "none", "doc_type": "leave_answer",
            "meta": {"error_type": error, "request_id": req["request_id"], "contract": emp["contract"],
                     "leave_type": req["leave_type"]}}


def kind_and_type(rng: random.Random, error: str, contract: str) -> tuple[str, str]:
    """The request kind and leave type a planted error needs (faithful cases: a mix)."""
    if error == "notice_ignored":
        return "short_notice", rng.choice(["ANNUAL", "PARENTAL"])
    if error == "probation_ignored":
        return "probation", _probation_type(rng, contract)
    if error == "balance_miscounted":
        return "used", rng.choice(["ANNUAL", "SICK"])
    if error == "pay_at_full_rate":
        return "ok", "SICK"  # every sick plan pays more than 0% and less than 100%
    if error in ("return_date_off_by_one", "wrong_contract"):
        return "ok", rng.choice(["ANNUAL", "SICK", "PARENTAL"])
    kind = rng.choices(["ok", "used", "short_notice", "over_balance", "probation"], [6, 2, 1, 1, 1])[0]
    if kind == "probation":
        return kind, _probation_type(rng, contract)
    return kind, rng.choice(["ANNUAL", "PARENTAL"] if kind == "short_notice" else ["ANNUAL", "SICK", "PARENTAL"])


def _probation_type(rng: random.Random, contract: str) -> str:
    """A leave type whose plan for `contract` asks for a minimum service."""
    return rng.choice(["PARENTAL", "ANNUAL"]) if contract == "FIXED_TERM" else "PARENTAL"


def generate() -> tuple[dict[str, str], str, list[dict]]:
    """Returns ({facts file: csv text}, policy text, cases)."""
    rng = random.Random(SEED)
    plan = [e for e in ERROR_TYPES for _ in range(PER_TYPE)] + ["none"] * (PER_TYPE * len(ERROR_TYPES))
    numbers = rng.sample(range(1000, 9999), len(plan))
    employees, jobs = [], []
    for i, (error, number) in enumerate(zip(plan, numbers)):
        contract = CONTRACTS[i % len(CONTRACTS)]
        emp = {"employee_id": f"E-{100 + i}", "name": f"{rng.choice(FIRST)} {rng.choice(LAST)}", "contract": contract,
               "rate": rng.randint(9000, 45000)}
        kind, leave_type = kind_and_type(rng, error, contract)
        req = make_request(rng, number, emp, leave_type, kind)
        employees.append(emp)
        jobs.append((error, req, emp))
    known = {req["request_id"] for _, req, _ in jobs}
    policy = policy_text()
    cases, seen = [], {}
    for error, req, emp in jobs:
        case = build_case(rng, req, emp, error, policy, known)
        seen[error] = seen.get(error, 0) + 1
        cases.append({"id": f"leave-{len(cases):04d}", "split": "calibration" if seen[error] % 2 else "test", **case})
    cases = [cases[i] for i in rng.sample(range(len(cases)), len(cases))]  # mix the types in the file

    def table(header: list[str], rows: list[list]) -> str:
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(header)
        w.writerows(rows)
        return buf.getvalue()

    requests = sorted((req for _, req, _ in jobs), key=lambda r: r["request_id"])
    facts = {
        "employees.csv": table(["employee_id", "name", "contract", "hire_date", "daily_rate"],
                               [[e["employee_id"], e["name"], e["contract"], e["hire"].isoformat(), money(e["rate"])]
                                for e in employees]),
        "plans.csv": table(["plan_id", "contract", "leave_type", "entitlement_days", "notice_days", "min_service_days",
                            "pay_pct"],
                           [[plan_id(c, t), c, t, *v] for (c, t), v in PLANS.items()]),
        "requests.csv": table(["request_id", "employee_id", "leave_type", "submitted", "start_date", "days", "days_used"],
                              [[r["request_id"], r["employee_id"], r["leave_type"], r["submitted"].isoformat(),
                                r["start"].isoformat(), r["days"], r["used"]] for r in requests]),
    }
    return facts, policy, cases


def main() -> None:
    facts, policy, cases = generate()
    (HERE / "pack" / "facts").mkdir(parents=True, exist_ok=True)
    for name, text in facts.items():
        (HERE / "pack" / "facts" / name).write_text(text, encoding="utf-8")
    (HERE / "policy.md").write_text(policy, encoding="utf-8")
    with (HERE / "cases.jsonl").open("w", encoding="utf-8") as f:
        for case in cases:
            f.write(json.dumps(case, ensure_ascii=False, sort_keys=True) + "\n")
    print(f"wrote {len(cases)} cases and {facts['requests.csv'].count(chr(10)) - 1} requests to {HERE}")


if __name__ == "__main__":
    main()
