"""The second domain of the `graph` verifier: leave entitlement, a pack written only against the public pack
interface (datasets/leave/pack), on the real relationalai package and its local DuckDB backend.

Hand-checked requests (values worked out by hand from the plans below):

    plan            contract   type      days/yr  notice  service  pay
    LP-FT-ANNUAL    FULL_TIME  ANNUAL    25       14      0        100%
    LP-FT-SICK      FULL_TIME  SICK      20       0       0        80%
    LP-PT-PARENTAL  PART_TIME  PARENTAL  60       30      180      60%
    LP-D1 / LP-D2   DUAL       ANNUAL    10 / 20  0       0        100% / 50%   (two plans: a conflict)
    (no plan for INTERN)

    req  employee (rate)         submitted   start       days used  outcome
    L-1  E-1 FT (199.99)  ANNUAL 2026-03-01  2026-03-15  5    3     approved (notice 14 = 14); back 2026-03-20;
                                                                    pay 5 x 199.99 = 999.95; 22 days left
    L-2  E-1          ANNUAL     2026-03-02  2026-03-15  5    0     refused: 13 days' notice < 14; pay 0
    L-3  E-1          SICK       2026-05-04  2026-05-04  3    18    refused: 3 + 18 > 20; 2 days left
    L-4  E-1          SICK       2026-05-04  2026-05-04  3    0     approved; pay 3 x 199.99 x 80% = 479.976 -> 479.98
    L-5  E-2 PT (hired 2026-01-01) PARENTAL 2026-04-01 2026-06-01 30 0  refused: 151 days of service < 180
    L-6  E-3 INTERN       ANNUAL     ...                            no plan: unsupported (contract still derived)
    L-7  E-4 DUAL         ANNUAL     2026-02-01  2026-02-10  15   0     conflict: LP-D1 refuses (15 > 10), LP-D2 approves
    L-8  E-1          ANNUAL     2026-12-01  2026-12-25  10   0     approved; back 2027-01-04 (across the year end)
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from verifybench.cases import Case
from verifybench.verifiers.graph.claims import gate1
from verifybench.verifiers.graph.entailment import Checker
from verifybench.verifiers.graph.facts import load_facts
from verifybench.verifiers.graph.kg import KnowledgeGraph
from verifybench.verifiers.graph.pack import load_pack
from verifybench.verifiers.graph.verifier import GraphVerifier

ROOT = Path(__file__).resolve().parents[1]
PACK_DIR = ROOT / "datasets/leave/pack"

EMPLOYEES = """employee_id,name,contract,hire_date,daily_rate
E-1,Ana Silva,full-time,2024-01-01,199.99
E-2,Ben Okafor,PART_TIME,2026-01-01,150.00
E-3,Cy Berg,INTERN,2020-01-01,100.00
E-4,Di Nair,DUAL,2020-01-01,100.00
"""
PLANS = """plan_id,contract,leave_type,entitlement_days,notice_days,min_service_days,pay_pct
LP-FT-ANNUAL,FULL_TIME,ANNUAL,25,14,0,100
LP-FT-SICK,FULL_TIME,SICK,20,0,0,80
LP-PT-PARENTAL,PART_TIME,PARENTAL,60,30,180,60
LP-D1,DUAL,ANNUAL,10,0,0,100
LP-D2,DUAL,ANNUAL,20,0,0,50
"""
REQUESTS = """request_id,employee_id,leave_type,submitted,start_date,days,days_used
L-1,E-1,annual,2026-03-01,2026-03-15,5,3
L-2,E-1,ANNUAL,2026-03-02,2026-03-15,5,0
L-3,E-1,SICK,2026-05-04,2026-05-04,3,18
L-4,E-1,SICK,2026-05-04,2026-05-04,3,0
L-5,E-2,PARENTAL,2026-04-01,2026-06-01,30,0
L-6,E-3,ANNUAL,2026-04-01,2026-06-01,3,0
L-7,E-4,ANNUAL,2026-02-01,2026-02-10,15,0
L-8,E-1,ANNUAL,2026-12-01,2026-12-25,10,0
"""


def write_facts(folder: Path, employees=EMPLOYEES, plans=PLANS, requests=REQUESTS) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in (("employees", employees), ("plans", plans), ("requests", requests)):
        (folder / f"{name}.csv").write_text(text, encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def pack():
    return load_pack(PACK_DIR)


@pytest.fixture(scope="module")
def checker(pack, tmp_path_factory) -> Checker:
    c = Checker(KnowledgeGraph(load_facts(write_facts(tmp_path_factory.mktemp("leave")), pack)))
    c.prepare()
    return c


def claim(claim_type, subject, value, evidence="because"):
    return {"claim_type": claim_type, "subject_id": subject, "value": value, "evidence": evidence}


def check(checker, *raw):
    accepted, rejected = gate1(list(raw), checker.pack)
    assert not rejected, rejected
    return checker.check(accepted)


HAND = [  # (request, claim type, value the graph must entail, rule)
    ("L-1", "leave_approved", True, "approved_all_conditions"),
    ("L-1", "return_date", "2026-03-20", "return_after_leave"),
    ("L-1", "leave_pay", "999.95", "pay_from_plan"),
    ("L-1", "remaining_days", 22, "balance_from_plan"),
    ("L-1", "notice_days", 14, "notice_from_plan"),
    ("L-1", "paid_leave", True, "paid_from_plan"),
    ("L-1", "contract_type", "FULL_TIME", "contract_from_employee"),
    ("L-2", "leave_approved", False, "refused_short_notice"),
    ("L-2", "leave_pay", 0, "pay_refused"),
    ("L-3", "leave_approved", False, "refused_over_balance"),
    ("L-3", "remaining_days", 2, "balance_from_plan"),
    ("L-4", "leave_pay", "479.98", "pay_from_plan"),
    ("L-5", "leave_approved", False, "refused_in_probation"),
    ("L-6", "contract_type", "INTERN", "contract_from_employee"),
    ("L-8", "return_date", "4 January 2027", "return_after_leave"),
]


@pytest.mark.parametrize("request_id,claim_type,value,rule", HAND)
def test_each_rule_derives_the_hand_checked_value(checker, request_id, claim_type, value, rule):
    (result,) = check(checker, claim(claim_type, request_id, value))
    assert result.status == "entailed", result.reason
    assert [s["rule"] for s in result.proof["steps"]] == [rule]


def test_proofs_show_the_facts_with_dates_and_money_as_written(checker):
    (approved,) = check(checker, claim("leave_approved", "L-1", "yes"))
    facts = approved.proof["steps"][0]["facts"]
    assert facts["request.start_date"] == "2026-03-15" and facts["request.submitted"] == "2026-03-01"
    assert facts["employee.hire_date"] == "2024-01-01" and facts["plan.notice_days[LP-FT-ANNUAL]"] == "14"
    assert approved.proof["steps"][0]["basis"] == "LP-FT-ANNUAL" and approved.proof["entity"] == "request"
    (pay,) = check(checker, claim("leave_pay", "L-4", 480))
    assert pay.status == "contradicted" and pay.expected == ["479.98"]
    assert pay.proof["steps"][0]["facts"]["employee.daily_rate"] == "199.99"


def test_statuses_on_the_leave_graph(checker):
    wrong, no_request, no_plan, conflict, also_conflict, refused_date = check(
        checker,
        claim("return_date", "L-1", "2026-03-19"),  # the last day of leave, not the first day back
        claim("leave_approved", "L-404", True),
        claim("leave_approved", "L-6", True),
        claim("leave_approved", "L-7", True),
        claim("remaining_days", "L-7", 20),
        claim("return_date", "L-2", "2026-03-20"),  # a refused request has no return date
    )
    assert (wrong.status, wrong.expected) == ("contradicted", ["2026-03-20"])
    assert no_request.status == "unsupported" and "no request 'L-404'" in no_request.reason
    assert no_plan.status == "unsupported" and "no rule derives" in no_plan.reason
    assert conflict.status == "conflict" and conflict.expected == ["false", "true"]
    assert {(s["basis"], s["rule"]) for s in conflict.proof["steps"]} == {
        ("LP-D1", "refused_over_balance"), ("LP-D2", "approved_all_conditions")}
    assert also_conflict.status == "conflict" and also_conflict.expected == ["10 days", "20 days"]
    assert refused_date.status == "unsupported"


def test_aliases_and_written_dates(checker, pack):
    results = check(checker, claim("eligible_for_leave", "L-1", True), claim("leave_balance", "L-1", "22 days"),
                    claim("return_date", "L-1", "March 20, 2026"), claim("return_date", "L-1", "20 Mar 2026"))
    assert [r.status for r in results] == ["entailed"] * 4
    assert results[0].claim.claim_type == "leave_approved" and results[0].claim.written_type == "eligible_for_leave"
    _, rejected = gate1([claim("return_date", "L-1", "03/20/2026"), claim("return_date", "L-1", 20260320)], pack)
    assert [r.index for r in rejected] == [0, 1] and all("expected a date" in r.reason for r in rejected)


def test_live_mode_agrees_with_materialised(checker):
    raw = [claim(t, r, v) for r, t, v, _ in HAND] + [claim("leave_approved", "L-7", True),
                                                      claim("leave_approved", "L-404", True)]
    accepted, _ = gate1(raw, checker.pack)
    live = Checker(checker.kg, mode="live").check(accepted)
    assert [(c.status, c.expected, c.proof) for c in live] == [(c.status, c.expected, c.proof)
                                                               for c in checker.check(accepted)]


# --- the shipped leave dataset ----------------------------------------------------------------------------

def _gen():
    spec = importlib.util.spec_from_file_location("leave_generate", ROOT / "datasets/leave/generate.py")
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    return gen


def test_the_generator_rewrites_the_shipped_files_byte_for_byte():
    gen = _gen()
    facts, policy, cases = gen.generate()
    assert gen.generate()[2] == cases
    for name, text in facts.items():
        assert (PACK_DIR / "facts" / name).read_text(encoding="utf-8") == text
    assert (ROOT / "datasets/leave/policy.md").read_text(encoding="utf-8") == policy
    lines = [json.dumps(c, ensure_ascii=False, sort_keys=True) for c in cases]
    assert (ROOT / "datasets/leave/cases.jsonl").read_text(encoding="utf-8").splitlines() == lines


@pytest.fixture(scope="module")
def leave_cases() -> list[Case]:
    return [Case(dataset="leave", **json.loads(line))
            for line in (ROOT / "datasets/leave/cases.jsonl").read_text(encoding="utf-8").splitlines()]


@pytest.fixture(scope="module")
def runs(leave_cases):
    given = GraphVerifier(domain=str(PACK_DIR))
    prose = GraphVerifier(domain=str(PACK_DIR), claims="from_response")
    return given.verify(leave_cases), prose.verify(leave_cases)


EXPECTED_STATUS = {"wrong_contract": "contradicted", "approval_flipped": "contradicted",
                   "notice_ignored": "contradicted", "balance_miscounted": "contradicted",
                   "return_date_off_by_one": "contradicted", "pay_at_full_rate": "contradicted",
                   "unknown_request": "unsupported", "probation_ignored": "contradicted"}
PERTURBED_CLAIM = {"wrong_contract": "contract_type", "approval_flipped": "leave_approved",
                   "notice_ignored": "leave_approved", "balance_miscounted": "remaining_days",
                   "return_date_off_by_one": "return_date", "pay_at_full_rate": "leave_pay",
                   "probation_ignored": "leave_approved"}


@pytest.mark.parametrize("source", ["given", "prose"])
@pytest.mark.parametrize("error_type", sorted(EXPECTED_STATUS))
def test_each_perturbation_is_caught_with_the_right_status(leave_cases, runs, source, error_type):
    verdicts = runs[0] if source == "given" else runs[1]
    mine = [(c, v) for c, v in zip(leave_cases, verdicts) if c.meta["error_type"] == error_type]
    assert len(mine) == 24
    for case, verdict in mine:
        assert verdict.error is None and case.label is True
        flagged = [u for u in verdict.units if u.status == EXPECTED_STATUS[error_type]]
        assert flagged, (case.id, [u.status for u in verdict.units])
        if error_type in PERTURBED_CLAIM:
            assert any(u.text.startswith(PERTURBED_CLAIM[error_type]) for u in flagged)
        assert verdict.score >= 0.6


def test_faithful_answers_are_entailed_from_claims_and_from_prose(leave_cases, runs):
    for verdicts in runs:
        faithful = [v for c, v in zip(leave_cases, verdicts) if c.meta["error_type"] == "none"]
        assert len(faithful) == 192
        assert all(v.score == 0.0 and {u.status for u in v.units} == {"entailed"} for v in faithful)
    # From prose, each claim unit points at its sentence in the response.
    case, verdict = leave_cases[0], runs[1][0]
    for u in verdict.units:
        assert case.response[u.start:u.end] == u.detail["claim_evidence"]


def test_the_suite_runs_both_graph_entries(root):
    from verifybench.loaders import iter_cases
    from verifybench.suite import load_suite

    suite = load_suite(root / "evals/leave.yaml")
    assert len(list(iter_cases(suite.dataset))) == 384
    entries = {e.id: e for e in suite.verifiers}
    assert entries["graph-prose"].options["claims"] == "from_response"
    assert Path(entries["graph"].options["domain"]) == PACK_DIR
