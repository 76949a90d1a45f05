"""The `graph` verifier on the real relationalai package and its local DuckDB backend (no mocks).

Hand-checked orders (values worked out by hand from the policy below):

    policy   tier    window  fee   method            shipping back
    P-GOLD   GOLD    30      5%    ORIGINAL_PAYMENT  yes
    P-SILVER SILVER  21      10%   STORE_CREDIT      no
    P-DUAL-A DUAL    10      0%    STORE_CREDIT      no     } two policies for one tier:
    P-DUAL-B DUAL    20      0%    ORIGINAL_PAYMENT  no     } a conflict inside the graph
    (no policy for tier STAFF)

    order  customer tier   amount  ship  final  defect  days   eligible  fee    refund
    A-91   GOLD            129.99  5.99  no     no      10     yes       6.50   129.48 (129.99 - 6.50 + 5.99)
    A-92   SILVER          50.00   4.99  yes    no      3      no        5.00   0
    A-93   SILVER          80.00   0.00  yes    yes     5      yes       0      80.00
    A-94   GOLD            20.00   5.00  no     no      31     no        1.00   0
    A-95   GOLD            40.00   2.00  no     no      30     yes       2.00   40.00 (40.00 - 2.00 + 2.00)
    A-96   STAFF           10.00   0.00  no     no      1      (nothing: no policy)
    A-97   DUAL            10.00   0.00  no     no      15     conflict (window 10: no, window 20: yes)
"""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import pytest

from verifybench.cases import Case
from verifybench.verifiers.graph.agent import TwoGateAgent, parse_action
from verifybench.verifiers.graph.claims import gate1, normalise
from verifybench.verifiers.graph.entailment import Checker
from verifybench.verifiers.graph.facts import FactsError, load_facts
from verifybench.verifiers.graph.kg import KnowledgeGraph
from verifybench.verifiers.graph.pack import load_pack
from verifybench.verifiers.graph.verifier import GraphVerifier
from verifybench.verifiers.llm import Backend, Completion

CUSTOMERS = """customer_id,name,tier
C-184,Dana Ortiz,gold
C-185,Rahul Mehta,SILVER
C-186,Mei Chen,STAFF
C-187,Olga Petrova,DUAL
"""
ORDERS = """order_id,customer_id,amount,shipping,final_sale,defective,days_since_delivery
A-91,C-184,129.99,5.99,false,false,10
A-92,C-185,50.00,4.99,true,false,3
A-93,C-185,80.00,0.00,true,true,5
A-94,C-184,20.00,5.00,false,false,31
A-95,C-184,40.00,2.00,false,false,30
A-96,C-186,10.00,0.00,false,false,1
A-97,C-187,10.00,0.00,false,false,15
"""
POLICIES = """policy_id,tier,return_window_days,restocking_fee_pct,refund_method,shipping_refundable,retroactive_bereavement
P-GOLD,GOLD,30,5,ORIGINAL_PAYMENT,true,false
P-SILVER,SILVER,21,10,store credit,false,false
P-DUAL-A,DUAL,10,0,STORE_CREDIT,false,false
P-DUAL-B,DUAL,20,0,ORIGINAL_PAYMENT,false,false
"""


PACK = load_pack("refunds")


def write_facts(folder: Path, customers=CUSTOMERS, orders=ORDERS, policies=POLICIES) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in (("customers", customers), ("orders", orders), ("policies", policies)):
        (folder / f"{name}.csv").write_text(text, encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def facts_dir(tmp_path_factory) -> Path:
    return write_facts(tmp_path_factory.mktemp("facts"))


@pytest.fixture(scope="module")
def kg(facts_dir) -> KnowledgeGraph:
    return KnowledgeGraph(load_facts(facts_dir))


@pytest.fixture(scope="module")
def derived(kg) -> dict:
    """(order, claim type) -> {(value, rule, policy)} as the graph derives them."""
    out: dict = {}
    for r in kg.derived().to_dict("records"):
        out.setdefault((r["subject_id"], r["claim_type"]), set()).add((r["value"], r["rule"], r["basis"]))
    return out


@pytest.fixture(scope="module")
def checker(kg) -> Checker:
    c = Checker(kg)
    c.prepare()
    return c


def claim(claim_type, subject, value, evidence="because"):
    return {"claim_type": claim_type, "subject_id": subject, "value": value, "evidence": evidence}


def check(checker, *raw):
    accepted, rejected = gate1(list(raw), PACK)
    assert not rejected, rejected
    return checker.check(accepted)


# --- each rule's derived value on hand-checked orders -------------------------------------------------

RULE_CASES = [
    ("A-91", "customer_tier", "GOLD", "tier_from_customer"),
    ("A-91", "return_window_days", "30", "window_from_policy"),
    ("A-91", "refund_method", "ORIGINAL_PAYMENT", "method_from_policy"),
    ("A-91", "refund_eligible", "true", "eligible_in_window"),
    ("A-91", "restocking_fee", "650", "fee_from_policy"),
    ("A-91", "shipping_refundable", "true", "shipping_from_policy"),
    ("A-91", "refund_amount", "12948", "amount_with_shipping"),
    ("A-91", "defective", "false", "defective_from_order"),
    ("A-91", "bereavement_refund", "false", "bereavement_from_policy"),
    ("A-92", "refund_method", "STORE_CREDIT", "method_from_policy"),
    ("A-92", "refund_eligible", "false", "final_sale_not_eligible"),
    ("A-92", "restocking_fee", "500", "fee_from_policy"),
    ("A-92", "shipping_refundable", "false", "shipping_from_policy"),
    ("A-92", "refund_amount", "0", "amount_not_eligible"),
    ("A-93", "refund_eligible", "true", "eligible_defective_in_window"),
    ("A-93", "restocking_fee", "0", "fee_waived_defective"),
    ("A-93", "shipping_refundable", "true", "shipping_defective"),
    ("A-93", "refund_amount", "8000", "amount_with_shipping"),
    ("A-93", "defective", "true", "defective_from_order"),
    ("A-94", "refund_eligible", "false", "window_expired_not_eligible"),
    ("A-94", "refund_amount", "0", "amount_not_eligible"),
    ("A-95", "refund_eligible", "true", "eligible_in_window"),
    ("A-95", "refund_amount", "4000", "amount_with_shipping"),
    ("A-96", "customer_tier", "STAFF", "tier_from_customer"),
]


@pytest.mark.parametrize("order,claim_type,value,rule", RULE_CASES)
def test_each_rule_derives_the_hand_checked_value(derived, order, claim_type, value, rule):
    assert {(v, r) for v, r, _ in derived[(order, claim_type)]} == {(value, rule)}


def test_a_silver_order_without_shipping_back_is_refunded_without_it(kg, tmp_path):
    # amount_without_shipping: an eligible SILVER order (shipping not refundable).
    facts = write_facts(tmp_path, orders=ORDERS.replace("A-92,C-185,50.00,4.99,true,", "A-92,C-185,50.00,4.99,false,"))
    rows = KnowledgeGraph(load_facts(facts)).derived()
    got = rows[(rows.subject_id == "A-92") & (rows.claim_type == "refund_amount")][["value", "rule"]].values.tolist()
    assert got == [["4500", "amount_without_shipping"]]  # 50.00 - 5.00 fee, shipping 4.99 kept


def test_no_policy_derives_nothing_policy_based_and_two_policies_derive_both(derived):
    assert ("A-96", "refund_method") not in derived and ("A-96", "refund_eligible") not in derived
    assert {v for v, _, _ in derived[("A-97", "refund_method")]} == {"STORE_CREDIT", "ORIGINAL_PAYMENT"}
    assert {(v, p) for v, _, p in derived[("A-97", "refund_eligible")]} == {("false", "P-DUAL-A"), ("true", "P-DUAL-B")}


# --- gate 2 statuses, proofs, normalisation -------------------------------------------------------------

def test_statuses_expected_values_and_proof(checker):
    ok, wrong, no_order, no_rule, conflict = check(
        checker,
        claim("refund_amount", "A-91", "$129.48"),
        claim("refund_method", "A-91", "STORE_CREDIT"),
        claim("refund_method", "A-404", "STORE_CREDIT"),
        claim("refund_method", "A-96", "STORE_CREDIT"),
        claim("refund_method", "A-97", "STORE_CREDIT"),
    )
    assert (ok.status, ok.expected) == ("entailed", ["129.48"])
    step = ok.proof["steps"][0]
    assert step["rule"] == "amount_with_shipping" and step["basis"] == "P-GOLD"
    assert step["facts"]["order.amount"] == "129.99" and step["facts"]["order.shipping"] == "5.99"
    assert step["facts"]["policy.restocking_fee_pct[P-GOLD]"] == "5"
    assert (wrong.status, wrong.expected) == ("contradicted", ["ORIGINAL_PAYMENT"])
    assert "not STORE_CREDIT" in wrong.reason and wrong.proof["steps"][0]["rule"] == "method_from_policy"
    assert no_order.status == "unsupported" and "no order 'A-404'" in no_order.reason
    assert no_rule.status == "unsupported" and "no rule derives" in no_rule.reason
    assert conflict.status == "conflict" and conflict.expected == ["ORIGINAL_PAYMENT", "STORE_CREDIT"]
    assert {s["basis"] for s in conflict.proof["steps"]} == {"P-DUAL-A", "P-DUAL-B"}


@pytest.mark.parametrize("claim_type,value", [
    ("refund_amount", 129.48), ("refund_amount", "129,48 EUR"), ("refund_amount", " $129.48 "),
    ("customer_tier", " gold "), ("refund_method", "original payment"), ("refund_method", "Original-Payment"),
    ("refund_eligible", "Yes"), ("refund_eligible", True), ("return_window_days", "30 days"),
    ("return_window_days", 30.0), ("shipping_refundable", "TRUE"),
])
def test_values_are_normalised_before_comparison(checker, claim_type, value):
    assert check(checker, claim(claim_type, "A-91", value))[0].status == "entailed"


def test_live_mode_agrees_with_materialised(kg, checker):
    raw = [claim(t, o, v) for o, t, v, _ in RULE_CASES] + [
        claim("refund_method", "A-91", "STORE_CREDIT"), claim("refund_method", "A-97", "STORE_CREDIT"),
        claim("refund_method", "A-96", "X"), claim("customer_tier", "A-0", "GOLD")]
    accepted, _ = gate1(raw, PACK)
    live = Checker(kg, mode="live").check(accepted)
    mat = checker.check(accepted)
    assert [(c.status, c.expected, c.proof) for c in live] == [(c.status, c.expected, c.proof) for c in mat]
    assert [c.status for c in mat[-4:]] == ["contradicted", "conflict", "unsupported", "unsupported"]


# --- gate 1 ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("raw,reason", [
    (claim("refund_speed", "A-91", "fast"), "unknown claim type 'refund_speed'"),
    ({"claim_type": "refund_method", "value": "X", "evidence": "e"}, "subject_id: missing required field"),
    ({"claim_type": "refund_method", "subject_id": "A-91", "value": "X"}, "evidence: missing required field"),
    (claim("refund_amount", "A-91", "lots"), "value for refund_amount: expected an amount of money"),
    (claim("refund_amount", "A-91", True), "expected an amount of money"),
    (claim("refund_eligible", "A-91", 1), "value for refund_eligible: expected true or false"),
    (claim("return_window_days", "A-91", 30.5), "expected a whole number of days"),
    (claim("customer_tier", "A-91", 3), "expected a name"),
    (claim("refund_method", "A-91", ["X"]), "value: expected text, a number or true/false, got list"),
    ("refund_method=X", "a claim must be an object"),
])
def test_gate1_rejects_with_the_reason(raw, reason):
    accepted, rejected = gate1([claim("customer_tier", "A-91", "GOLD"), raw], PACK)
    assert len(accepted) == 1 and len(rejected) == 1
    assert rejected[0].index == 1 and reason in rejected[0].reason


def test_gate1_runs_before_any_graph_query(tmp_path):
    # The facts folder does not exist: building the graph would fail, so a verdict proves it was never built.
    v = GraphVerifier(facts=str(tmp_path / "missing"))
    case = Case(id="c", dataset="d", response="r", label=True,
                claims=[claim("refund_speed", "A-91", 1), {"claim_type": "refund_method"}])
    (verdict,) = v.verify([case])
    assert verdict.error is None and verdict.score == 1.0
    assert [u.status for u in verdict.units] == ["rejected", "rejected"]
    assert v._checker is None
    # With an acceptable claim the graph is needed, and the missing folder is named in that case's error.
    (verdict,) = v.verify([case.model_copy(update={"claims": [claim("customer_tier", "A-91", "GOLD")]})])
    assert "no such facts folder" in verdict.error and "missing" in verdict.error


def test_normalise_rejects_negative_values():
    with pytest.raises(ValueError, match="negative"):
        normalise("money", -5)
    with pytest.raises(ValueError, match="negative"):
        normalise("days", -1)


# --- facts files -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("file,old,new,message", [
    ("orders", "A-93,C-185,80.00", "A-93,C-185,80.0x", "orders.csv:4: field 'amount': '80.0x' is not a decimal amount"),
    ("orders", "A-92,C-185,50.00,4.99,true", "A-92,C-185,50.00,4.99,maybe", "orders.csv:3: field 'final_sale'"),
    ("orders", "A-94,C-184", "A-94,C-999", "orders.csv:5: field 'customer_id': 'C-999' is not in customers.csv"),
    ("orders", "A-95,", "A-91,", "orders.csv:6: field 'order_id': 'A-91' repeats line 2"),
    ("policies", "P-GOLD,GOLD,30,5", "P-GOLD,GOLD,30,500", "policies.csv:2: field 'restocking_fee_pct'"),
    ("customers", "customer_id,name,tier", "customer_id,name,level", "customers.csv:1: missing column(s) tier"),
])
def test_bad_facts_name_file_line_and_field(tmp_path, file, old, new, message):
    texts = {"customers": CUSTOMERS, "orders": ORDERS, "policies": POLICIES}
    assert old in texts[file]
    texts[file] = texts[file].replace(old, new, 1)
    folder = write_facts(tmp_path, **texts)
    with pytest.raises(FactsError, match=message.replace("(", r"\(").replace(")", r"\)")):
        load_facts(folder)


def test_a_missing_facts_file_is_named(tmp_path):
    folder = write_facts(tmp_path)
    (folder / "policies.csv").unlink()
    with pytest.raises(FactsError, match="policies.csv: no such facts file"):
        load_facts(folder)


# --- the agent loop --------------------------------------------------------------------------------------

class ScriptedBackend(Backend):
    """A test double for the LLM: replies from a script, records every conversation it was sent."""

    kind = "scripted"

    def __init__(self, replies: list[str]):
        self.replies, self.seen = list(replies), []

    def complete(self, messages, *, temperature, max_tokens, seed, logprobs, json_mode, timeout, schema=None):
        self.seen.append([dict(m) for m in messages])
        return Completion(text=self.replies.pop(0) if self.replies else '{"tool": "nothing"}')


def tool_call(*claims) -> str:
    return json.dumps({"tool": "check_refund_claims", "claims": list(claims)})


def test_agent_rejects_a_wrong_claim_and_the_model_corrects_itself(checker):
    backend = ScriptedBackend([
        tool_call(claim("refund_method", "A-91", "STORE_CREDIT", "Platinum customers get store credit")),
        "```json\n" + tool_call({"claim_type": "refund_method", "subject_id": "A-91", "value": "ORIGINAL_PAYMENT"}) + "\n```",
        tool_call(claim("refund_method", "A-91", "ORIGINAL_PAYMENT", "policy for GOLD"),
                  claim("refund_amount", "A-91", "129.48", "policy for GOLD")),
        json.dumps({"final": "Order A-91 is refunded $129.48 to your original payment method."}),
    ])
    result = TwoGateAgent(backend, checker, max_steps=6).run("Can I get store credit for order A-91?")
    assert result.stopped == "final" and "129.48" in result.answer
    assert [s.kind for s in result.steps] == ["tool_call", "tool_call", "tool_call", "final"]
    first, second, third = result.steps[:3]
    assert first.checks[0].status == "contradicted" and not first.rejections
    assert second.rejections and not second.checks  # gate 1 stopped it: no graph query
    assert {c.status for c in third.checks} == {"entailed"}
    # What the model read after each step: the rejection with the expected value, then gate 1's reason.
    after_first = json.loads(backend.seen[1][-1]["content"])
    assert after_first["tool_result"] == "rejected" and "expected: ORIGINAL_PAYMENT" in after_first["details"][0]
    assert "evidence: missing required field" in json.loads(backend.seen[2][-1]["content"])["details"][0]
    assert json.loads(backend.seen[3][-1]["content"])["tool_result"] == "grounded"
    assert {(c.claim.claim_type, c.expected[0]) for c in result.grounded} == {
        ("refund_method", "ORIGINAL_PAYMENT"), ("refund_amount", "129.48")}


def test_agent_stops_after_max_steps(checker):
    backend = ScriptedBackend([tool_call(claim("refund_method", "A-91", "STORE_CREDIT"))] * 10)
    result = TwoGateAgent(backend, checker, max_steps=3).run("q")
    assert result.answer is None and result.stopped == "max_steps" and len(backend.seen) == 3
    assert not result.grounded


def test_parse_action_reads_fenced_and_bare_json():
    assert parse_action('Sure: {"final": "x"}') == {"final": "x"}
    assert parse_action("no json here") is None


# --- the verifier on the project's refund dataset --------------------------------------------------------

@pytest.fixture(scope="module")
def dataset_run(root):
    cases = []
    for line in (root / "datasets/refunds/cases.jsonl").read_text(encoding="utf-8").splitlines():
        cases.append(Case(dataset="refunds", **json.loads(line)))
    verifier = GraphVerifier()
    return cases, verifier.verify(cases), verifier


EXPECTED_STATUS = {"wrong_tier": "contradicted", "wrong_method": "contradicted", "eligibility_flipped": "contradicted",
                   "amount_digits_swapped": "contradicted", "unknown_order": "unsupported",
                   "final_sale_ignored": "contradicted", "window_off_by_one": "contradicted",
                   "retroactive_bereavement": "contradicted"}
PERTURBED_CLAIM = {"wrong_tier": "customer_tier", "wrong_method": "refund_method",
                   "eligibility_flipped": "refund_eligible", "amount_digits_swapped": "refund_amount",
                   "final_sale_ignored": "refund_eligible", "window_off_by_one": "return_window_days",
                   "retroactive_bereavement": "bereavement_refund"}


@pytest.mark.parametrize("error_type", sorted(EXPECTED_STATUS))
def test_each_perturbation_is_caught_with_the_right_status(dataset_run, error_type):
    cases, verdicts, _ = dataset_run
    mine = [(c, v) for c, v in zip(cases, verdicts) if c.meta["error_type"] == error_type]
    assert len(mine) >= 10
    for case, verdict in mine:
        assert verdict.error is None and case.label is True
        flagged = {u.detail["index"] for u in verdict.units if u.status == EXPECTED_STATUS[error_type]}
        assert flagged, (case.id, [u.status for u in verdict.units])
        if error_type in PERTURBED_CLAIM:
            assert any(case.claims[i]["claim_type"] == PERTURBED_CLAIM[error_type] for i in flagged)
        assert verdict.score >= 0.6


def test_faithful_answers_are_entailed_and_score_zero(dataset_run):
    cases, verdicts, _ = dataset_run
    faithful = [(c, v) for c, v in zip(cases, verdicts) if c.meta["error_type"] == "none"]
    assert len(faithful) >= 100
    assert all(v.score == 0.0 and {u.status for u in v.units} == {"entailed"} for _, v in faithful)


def test_a_case_without_claims_is_an_error_verdict_and_the_verifier_pickles(dataset_run):
    cases, _, verifier = dataset_run
    bare = cases[0].model_copy(update={"claims": None})
    out = verifier.verify([bare, cases[1]])
    assert "no structured claims" in out[0].error and out[1].ok
    clone = pickle.loads(pickle.dumps(verifier))
    assert clone._checker is None and clone.verify([cases[1]])[0].score == out[1].score
    assert verifier.config["facts_sha256"] == clone.config["facts_sha256"]


def test_the_generator_rewrites_the_shipped_files_byte_for_byte(root):
    import importlib.util

    spec = importlib.util.spec_from_file_location("refunds_generate", root / "datasets/refunds/generate.py")
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    facts, _policy, cases = gen.generate()
    assert gen.generate()[2] == cases
    for name, text in facts.items():
        assert (root / "src/verifybench/verifiers/graph/packs/refunds/facts" / name).read_text(encoding="utf-8") == text
    lines = [json.dumps(c, ensure_ascii=False, sort_keys=True) for c in cases]
    assert (root / "datasets/refunds/cases.jsonl").read_text(encoding="utf-8").splitlines() == lines


def test_the_suite_maps_claims_through_the_jsonl_loader(root):
    from verifybench.loaders import iter_cases
    from verifybench.suite import load_suite

    suite = load_suite(root / "evals/refunds.yaml")
    cases = list(iter_cases(suite.dataset))
    assert len(cases) == 384 and all(c.claims for c in cases)
    assert {c.split for c in cases} == {"calibration", "test"}
    assert [e.id for e in suite.verifiers] == ["rouge", "bleu", "anchors", "graph", "graph-prose"]


def test_switching_the_connection_is_configuration_only(tmp_path, facts_dir):
    # The user's own database holding the fact tables, reached through rai_config + source_tables: the same
    # rules, no facts files. (A Snowflake account is configured the same way.)
    import duckdb

    db = tmp_path / "shop.duckdb"
    con = duckdb.connect(str(db))
    con.execute("create schema refunds")
    for name, df in load_facts(facts_dir).tables().items():
        con.register("_facts", df)
        con.execute(f"create table refunds.{name} as select * from _facts")
        con.unregister("_facts")
    con.close()
    v = GraphVerifier(rai_config={"connections": {"shop": {"type": "duckdb", "path": str(db)}},
                                  "deployment": {"schema": "refund_kg", "auto_deploy": True},
                                  "debug": {"enabled": False}},
                      source_tables={n: f"shop.refunds.{n}" for n in ("customers", "orders", "policies")})
    case = Case(id="c", dataset="d", response="r", label=True, claims=[
        claim("refund_amount", "A-91", "129.48"), claim("refund_method", "A-91", "STORE_CREDIT"),
        claim("refund_method", "A-97", "STORE_CREDIT")])
    (verdict,) = v.verify([case])
    assert [u.status for u in verdict.units] == ["entailed", "contradicted", "conflict"]
    assert "facts_sha256" not in v.config  # the facts are the user's tables, not files
    with pytest.raises(ValueError, match="live"):
        Checker(v.checker().kg, mode="live")


def test_the_rules_pass_relationalai_s_snowflake_portability_check(facts_dir):
    # RelationalAI compiles the model a second time for Snowflake at deploy and fails on SQL that would not
    # run there: the rules move to a Snowflake account unchanged.
    v = GraphVerifier(facts=str(facts_dir), check_snowflake_portability=True)
    case = Case(id="c", dataset="d", response="r", label=False, claims=[claim("refund_amount", "A-91", "129.48")])
    (verdict,) = v.verify([case])
    assert verdict.error is None and verdict.units[0].status == "entailed"
    assert v.checker().kg.config.deployment.check_snowflake_portability is True


def test_bad_values_are_rejected_claims_and_never_fail_the_batch():
    """NaN or Infinity (valid JSON numbers) and ambiguous money text are gate-1 rejections; an empty claims
    list grounds nothing."""
    from verifybench.verifiers.graph.claims import normalise

    base = {"claim_type": "refund_amount", "subject_id": "A-1", "evidence": "x"}
    accepted, rejected = gate1([{**base, "value": float("nan")}, {**base, "value": float("inf")},
                                {**base, "value": "1.2.3"}, {**base, "value": "1.299,00 EUR"}], PACK)
    assert [r.index for r in rejected] == [0, 1, 2] and len(accepted) == 1
    assert accepted[0][1].normalised == "129900"
    assert normalise("money", "12,5 EUR") == "1250" and normalise("money", "1,299") == "129900"
    assert gate1([], PACK)[1][0].reason.startswith("no claims")


def test_a_broken_graph_fails_only_the_cases_that_needed_it(tmp_path):
    from verifybench.cases import Case

    verifier = GraphVerifier(facts=str(tmp_path / "nowhere"))
    only_rejected = Case(id="r", dataset="t", response="x", label=True,
                         claims=[{"claim_type": "refund_amount", "subject_id": "A-1", "value": "lots", "evidence": "x"}])
    needs_graph = Case(id="g", dataset="t", response="x", label=False,
                       claims=[{"claim_type": "refund_amount", "subject_id": "A-1", "value": 10, "evidence": "x"}])
    alone = verifier.verify([only_rejected])[0]
    r, g = verifier.verify([only_rejected, needs_graph])
    assert r.score == alone.score == 1.0 and r.error is None
    assert g.error is not None and g.score is None
