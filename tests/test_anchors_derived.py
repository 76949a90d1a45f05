"""Issue 46: what the fact checks accept and refuse on answers other teams write: arithmetic on stated
numbers, the user's own facts, exact identifiers, values said of the right subject, "and" against "or",
abstentions, and names that are common words."""

import pytest

from verifybench.verifiers.anchors.binding import unbound
from verifybench.verifiers.anchors.checkworthy import assess
from verifybench.verifiers.anchors.derived import Quantity, derivation
from verifybench.verifiers.anchors.facts import (
    coordination_mismatches,
    fact_findings,
    fact_mismatches,
    polarity_mismatch,
)

WIRES = ("Outgoing domestic wires cost $25, or $15 when sent in the app; incoming wires are free. The limit for "
         "wires sent in the app is $50,000 per day.")


def test_a_number_one_operation_on_stated_numbers_gives_is_supported_and_shown():
    answer = "Domestic wires sent in the app are $15 each, so three would be $45."
    found = fact_findings(answer, WIRES, question="How much would 3 domestic wires cost?", response=answer)
    assert found.problems == [] and found.derived == ["15 x 3 = 45"]
    fee = "The fee is 3% of each purchase, so on a $200 purchase the fee would be six dollars."
    assert fact_findings(fee, "A foreign transaction fee of 3% of each purchase.", response=fee).derived == [
        "3% of 200 = 6"]


def test_a_wrong_sum_is_still_flagged():
    answer = "Domestic wires sent in the app are $15 each, so three would be $40."
    assert fact_mismatches(answer, WIRES, question="How much would 3 domestic wires cost?",
                           response=answer) == ["number 40 is not in the sources"]


def test_units_and_trivial_operands_do_not_derive_anything():
    # $20 is no count of days times a count (a count is not money); 1 or a year derives nothing.
    assert derivation(20, "money", [Quantity(2, "count"), Quantity(10, "count")]) is None
    assert derivation(20, "money", [Quantity(2, "count"), Quantity(10, "money")]) == "10 x 2 = 20"
    assert derivation(20, "money", [Quantity(25, "money"), Quantity(5, "percent")]) is None
    assert derivation(2, "bare", [Quantity(1, "bare"), Quantity(1, "bare")]) is None
    assert derivation(2, "bare", [Quantity(2021, "bare"), Quantity(2019, "bare")]) is None
    assert derivation(13, "bare", [Quantity(4, "bare")]) is None  # 52 / 4: a factor is never the dividend


def test_a_date_a_stated_duration_after_a_stated_date_is_supported():
    src = "Report an unauthorized debit card transaction within 60 days of the date of the statement."
    ok = "You have 60 days from the statement date, so counting from March 3, the deadline would be May 2."
    found = fact_findings(ok, src, entities=(("March 3", "DATE"), ("May 2", "DATE")),
                          question="My statement was dated March 3.", response=ok)
    assert found.problems == [] and found.derived == ["March 3 + 60 days = May 2"]
    wrong = "You have 60 days from the statement date, so your deadline would be June 19."
    assert fact_mismatches(wrong, src, entities=(("June 19", "DATE"),),
                           question="My statement is dated April 10.", response=wrong) == [
        "date 'June 19' is not in the sources"]


def test_what_the_user_states_backs_what_the_answer_repeats():
    src = "We do not charge an overdraft fee if your account is overdrawn by $50 or less."
    claim = "$42 is under that threshold, so there is no fee."
    assert fact_mismatches(claim, src) == ["number 42 is not in the sources"]
    assert fact_mismatches(claim, src, question="I'm overdrawn by $42. Will I be charged?") == []
    # A name the question only asks about is not the user's fact (HaluEval: "A or B?").
    assert fact_mismatches("Arthur's Magazine came first.", "First for Women started in 1989.",
                           entities=(("Arthur's Magazine", "ORG"),),
                           question="Which came first, Arthur's Magazine or First for Women?") == [
        "org \"Arthur's Magazine\" is not in the sources"]


def test_a_changed_identifier_is_flagged_as_an_exact_token():
    src = "`max_retries` (default 2) controls automatic retries. Pin `Parrotlane-Version: v2024-06` to stay."
    assert fact_mismatches("Set `max_retries` to 3 to retry more.", src) == ["number 3 is not in the sources"]
    assert fact_mismatches("Set `maxRetries` to 2.", src) == ["identifier 'maxRetries' is not in the sources"]
    assert fact_mismatches("Pin v2024-09 with the Parrotlane-Version header.", src) == [
        "identifier 'v2024-09' is not in the sources"]
    # A caller's own variable in front of a documented attribute, and "e.g.", are no identifiers to check.
    assert fact_mismatches("Read it from e.max_retries, e.g. in a handler.", src) == []


def test_a_common_word_read_as_a_place_name_is_no_unknown_name():
    src = "Refund requests are handled within 5 business days."
    assert fact_mismatches("Refunds are handled within 5 business days.", src, entities=(("Refunds", "GPE"),)) == []
    assert fact_mismatches("Toronto handles them.", src, entities=(("Toronto", "GPE"),)) == [
        "gpe 'Toronto' is not in the sources"]
    # Zones and currency codes tagged as organisations are the time and number checks' business.
    assert fact_mismatches("Tokens last until 10:40 UTC.", "Access tokens expire at 10:40 UTC.",
                           entities=(("UTC", "ORG"),)) == []


def test_a_value_said_of_another_version_is_flagged():
    src = "Accepts up to 500 messages per request on v2024-06 and up to 100 on v2023-09."
    assert unbound("On v2023-09 you can put up to 500 messages in one request.", [src]) == [
        "500 is said of 'v2024-06' in the sources, not of 'v2023-09'"]
    assert unbound("On v2023-09 you can put up to 100 messages in one request.", [src]) == []


def test_a_value_from_the_distractor_chunk_is_flagged():
    debit = "Report a debit card charge within 60 days. We investigate within 10 business days."
    credit = "Report a credit card charge within 60 days. We complete investigations within two billing cycles."
    assert unbound("For credit card disputes we investigate within 10 business days.", [debit, credit])
    assert unbound("For debit card disputes we investigate within 10 business days.", [debit, credit]) == []


def test_and_for_or_between_two_conditions_is_flagged_but_not_in_a_list():
    src = "The fee is waived with at least $500 in direct deposits or a minimum daily balance of $1,500."
    assert coordination_mismatches("It is waived with $500 in direct deposits and a minimum daily balance of "
                                   "$1,500.", src) == ["'and' where the sources say 'or' (deposit ... minimum)"]
    assert coordination_mismatches("Fences, gates and hedges are not covered.", "fences, gates or hedges") == []


def test_saying_the_sources_do_not_answer_is_not_checked():
    units = ["I don't have any information about metal cards.", "The docs here don't say which version that was.",
             "The docs only say that invoices are issued in USD.", "В моих материалах этого нет."]
    reasons = [w.reason for w in assess(units[:3])] + [assess(units[3:], "ru")[0].reason]
    assert reasons == ["says the sources do not answer", "says the sources do not answer", None,
                       "says the sources do not answer"]


@pytest.mark.parametrize("claim, flagged", [
    ("No - pushes are free on all plans.", False),  # an answer particle negates nothing
    ("Storm damage to fences isn't covered.", False),  # the evidence's second clause says so
    ("Push notifications are not free.", True),
])
def test_polarity_reads_the_clause_the_claim_restates(claim, flagged):
    evidence = ["Push notifications are free on all plans. Storm damage to your home is covered, but damage to "
                "fences, gates and hedges isn't."]
    assert polarity_mismatch(claim, evidence) is flagged
