"""Issue 30: check-worthiness shared by anchors and nli, anchors' false alarms and misses on support
answers, the graded score, and per-case latency of batch verifiers. Real parts: spaCy, MiniLM, the
project's consistency model."""

import pickle

import pytest

from verifybench.cases import Case, Source
from verifybench.errors import SuiteError
from verifybench.executors.scoring import verify_batch
from verifybench.verifiers import build
from verifybench.verifiers.anchors.checkworthy import assess
from verifybench.verifiers.anchors.facts import fact_mismatches, negation_count, polarity_mismatch
from verifybench.verifiers.anchors.quantities import durations, times_of_day
from verifybench.verifiers.anchors.verifier import claim_score

HELP = ("Refund policy. Annual plans can be refunded within 14 days of purchase. Invoices cannot be reissued to "
        "a different company name after 30 days. Orders placed before 2 pm ET ship the same business day. "
        "Standard delivery takes 3 to 5 business days. Billing support is available Monday to Friday, 9 am to "
        "5 pm ET. The Starter plan costs $12 per user per month and includes 10 seats.")


def case(response, source=HELP, cid="c", label=False):
    return Case(id=cid, dataset="t", response=response, label=label, sources=[Source(id="kb", text=source)])


@pytest.fixture(scope="module")
def anchors(tmp_path_factory):
    return build("anchors", cache_dir=str(tmp_path_factory.mktemp("cache")))


def test_support_set_is_generated_never_edited(root):
    """datasets/support/cases.jsonl is what its generator writes: regenerating changes nothing."""
    import importlib.util
    import json

    # by file, under its own name: the demo set's generator is also a module called "generate"
    spec = importlib.util.spec_from_file_location("support_generate", root / "datasets/support/generate.py")
    generate = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generate)
    on_disk = [json.loads(line) for line in (root / "datasets/support/cases.jsonl").read_text().splitlines()]
    assert generate.generate() == on_disk
    assert {r["doc_type"] for r in on_disk} == {"billing", "account", "orders"}
    kinds = {r["meta"]["error_type"] for r in on_disk}
    assert kinds == {"none", "wrong_number", "wrong_time", "wrong_duration", "swapped_entity", "dropped_negation",
                     "unsupported_addition"}


# -- check-worthiness --------------------------------------------------------------------------------------

@pytest.mark.parametrize("text,reason", [
    ("Hi!", "greeting"), ("Hi Maria,", "greeting"), ("Thanks for reaching out.", "thanks"),
    ("Hello, and thanks for reaching out.", "greeting"), ("Good question.", "acknowledgement"),
    ("Let me check that for you.", "let me check"), ("Happy to help with that.", "offer of help"),
    ("Is there anything else I can help you with?", "question to the customer"),
    ("Let me know if there's anything else I can help with.", "closing"),
    ("Don't hesitate to reach out if you need more help.", "closing"),
    ("We can walk you through the setup.", "offer of help"),  # the parser's rule
])
def test_conversation_is_not_check_worthy(text, reason):
    [w] = assess([text])
    assert w.reason == reason


@pytest.mark.parametrize("text,kept", [
    ("Hi Maria, the Starter plan costs $12.", "the Starter plan costs $12."),
    ("Sure, you can cancel anytime.", "you can cancel anytime."),
    ("Of course you can cancel anytime.", "Of course you can cancel anytime."),
    ("Thanks to the new API, exports are faster.", "Thanks to the new API, exports are faster."),
    ("Great Britain is an island.", "Great Britain is an island."),
    ("Delhi", "Delhi"),
    ("Did you know that Nolan directed Inception?", "Did you know that Nolan directed Inception?"),
    ("We'll retry your card three times over a week.", "We'll retry your card three times over a week."),
])
def test_claims_stay_check_worthy_with_their_openers_stripped(text, kept):
    [w] = assess([text])
    assert w.reason is None and text[w.offset:] == kept


def test_other_languages_are_left_as_they_are():
    assert [w.reason for w in assess(["Здравствуйте!", "Спасибо за обращение."], "ru")] == [None, None]


def test_anchors_shows_skipped_units_and_scores_only_the_claims(anchors):
    text = ("Hi there! Thanks for reaching out. Annual plans can be refunded within two weeks of purchase. "
            "Is there anything else I can help you with?")
    v = anchors.verify([case(text)])[0]
    skipped = [u for u in v.units if u.status.startswith("skipped")]
    scored = [u for u in v.units if u.score is not None]
    assert len(skipped) >= 2 and all(u.score is None and u.start is not None for u in skipped)
    assert any("question to the customer" in u.status for u in skipped)
    assert [u.text for u in scored] == ["Annual plans can be refunded within two weeks of purchase."]
    assert v.score == pytest.approx(scored[0].score) and v.score < 0.25
    assert v.detail["skipped"] == len(skipped)
    # every character of the answer is in some unit: nothing silently dropped
    covered = sorted((u.start, u.end) for u in v.units)
    assert covered[0][0] == 0 and covered[-1][1] == len(text)

    off = build("anchors", cache_dir=None, checkworthy=False).verify([case(text)])[0]
    assert all(u.score is not None for u in off.units) and off.score > v.score


def test_a_greeting_name_is_not_a_person_to_check(anchors):
    v = anchors.verify([case("Hi Fatima, the Starter plan costs $12 per user per month.")])[0]
    assert not any("person" in (u.status or "") for u in v.units) and v.score < 0.25


def test_answer_of_nothing_but_conversation_scores_zero(anchors):
    v = anchors.verify([case("Hi! Thanks for reaching out. Hope this helps!")])[0]
    assert v.score == 0.0 and v.detail["claims"] == 0 and len(v.units) >= 2


def test_options_forbid_unknown_keys():
    with pytest.raises(SuiteError, match="checkworthy_typo"):
        build("anchors", checkworthy_typo=True)
    with pytest.raises(SuiteError, match="checkworthy"):
        build("nli", checkworthy="sometimes")


@pytest.mark.slow
def test_nli_skips_conversation_and_keeps_it_in_the_verdict(tmp_path):
    nli = build("nli", cache_dir=str(tmp_path / "nli"), embedding_cache_dir=str(tmp_path / "emb"))
    text = "Hi Sam! Annual plans can be refunded within 14 days of purchase. Would you like me to walk you through it?"
    v = nli.verify([case(text)])[0]
    skipped = [u for u in v.units if u.score is None]
    assert [u.detail["skipped"] for u in skipped] == ["greeting", "question to the customer"]
    assert v.detail["claims"] == 1 and v.score == pytest.approx([u for u in v.units if u.score is not None][0].score)
    plain = build("nli", cache_dir=str(tmp_path / "nli"), embedding_cache_dir=str(tmp_path / "emb"),
                  checkworthy=False).verify([case(text)])[0]
    assert plain.detail["claims"] == 3 and all(u.score is not None for u in plain.units)
    assert nli.config_hash != build("nli", checkworthy=False).config_hash


# -- anchors: false alarms and misses ------------------------------------------------------------------------

def test_contraction_and_spelled_out_negation_are_one_negation():
    assert negation_count("can't") == negation_count("cannot") == negation_count("can not") == 1
    assert negation_count("isn\u2019t, won't, don't") == 3
    assert not polarity_mismatch("Invoices can't be reissued to a different company name.",
                                 ["Invoices cannot be reissued to a different company name after 30 days."])
    assert polarity_mismatch("Invoices can be reissued to a different company name.",
                             ["Invoices cannot be reissued to a different company name after 30 days."])


def test_number_words_that_are_not_quantities_are_not_numbers():
    assert fact_mismatches("Once it's approved, each one works.", HELP) == []
    assert fact_mismatches("The Starter plan is $12 per user a month.", HELP) == []  # a rate, not "1 month"


def test_durations_are_compared_as_durations():
    assert fact_mismatches("Annual plans can be refunded within two weeks.", HELP) == []
    assert fact_mismatches("Annual plans can be refunded within 336 hours.", HELP) == []
    assert fact_mismatches("Annual plans can be refunded within a week.", HELP) == [
        "duration 'a week' is not in the sources"]
    assert fact_mismatches("Invoices cannot be reissued after a month.", HELP) == []  # a month is 30 days
    # 5 appears in the sources, but not as a number of days
    assert fact_mismatches("Annual plans can be refunded within 5 days.", HELP) == [
        "duration '5 days' is not in the sources"]
    assert fact_mismatches("It arrives within five business days.", HELP) == []
    [d] = durations("a week ago")
    assert d.seconds == {7 * 86400}
    assert durations("a 30-year-old customer") == () and durations("twice a week") == ()


def test_times_of_day_and_zones_are_checked_like_dates():
    assert fact_mismatches("Order before 2 pm ET to ship today.", HELP) == []
    assert fact_mismatches("Order before 14:00 Eastern to ship today.", HELP) == []
    # 5 is in the sources ("5 pm ET", "3 to 5 business days"), yet 5 pm is not the cut-off
    assert fact_mismatches("Order before 5 pm ET to ship today.", HELP) == []  # 5 pm ET is a stated time
    assert fact_mismatches("Order before 4 pm ET to ship today.", HELP) == ["time '4 pm ET' is not in the sources"]
    assert fact_mismatches("Order before 2 pm PT to ship today.", HELP) == ["time '2 pm PT' is not in the sources"]
    src = "Orders placed before 2 pm ET ship the same business day. Standard delivery takes 3 to 5 business days."
    assert fact_mismatches("Orders placed before 5 pm ET ship the same day.", src) == [
        "time '5 pm ET' is not in the sources"]
    start, end = times_of_day("open 9 am to 5 pm ET")
    assert start.zone == end.zone == "ET" and start.minutes == {540}


def test_graded_score_stays_in_range_and_orders_failed_checks():
    assert claim_score(-0.2, 0) == 0.5 and claim_score(1.3, 0) == 0.0  # cosine clipped: never above 1
    # Among failed claims, more failed checks first, then the closer match to the evidence (issue 46).
    assert 0.5 <= claim_score(0.3, 1) < claim_score(0.9, 1) < claim_score(0.3, 2) <= 1.0
    assert claim_score(0.0, 0) <= claim_score(0.99, 1)  # a failed check outranks any passing claim
    assert claim_score(0.0, 5) <= 1.0


def test_failed_checks_do_not_all_tie_at_the_top(anchors):
    batch = [case("The Starter plan costs $15 per user per month.", cid="a"),
             case("Delivery is by drone and costs $15 on weekends.", cid="b")]
    a, b = anchors.verify(batch)
    assert 0.5 <= a.score < 1.0 and 0.5 <= b.score <= 1.0 and a.score != b.score


# -- per-case latency ----------------------------------------------------------------------------------------

def test_batch_latency_is_each_cases_own(anchors):
    short = case("The Starter plan costs $12.", cid="short")
    long = case(" ".join(f"The Starter plan includes {n} seats in region {n}." for n in range(40, 70)), cid="long")
    verdicts = verify_batch(pickle.loads(pickle.dumps(anchors)), [short, long])
    assert [v.latency_kind for v in verdicts] == ["warmup", "case"]  # first case of a fresh copy: loads
    verify_batch(anchors, [short])  # this object's warm-up batch
    verdicts = verify_batch(anchors, [short, long, case("The Starter plan costs $12.", cid="again")])
    kinds = {v.case_id: v for v in verdicts}
    assert all(v.latency_kind == "case" for v in verdicts)
    assert kinds["long"].latency_ms > kinds["short"].latency_ms  # not one batch mean for all
    split = kinds["long"].detail["latency_ms"]
    assert split["own"] >= 0 and split["batched_share"] >= 0
    assert kinds["long"].latency_ms == pytest.approx(split["own"] + split["batched_share"], abs=0.01)
