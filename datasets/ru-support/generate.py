"""Write datasets/ru-support/cases.jsonl: verifybench's own labeled set of Russian support answers.

Each scenario is a Russian knowledge-base chunk (prices, limits, deadlines, working hours, conditions)
filled with seeded values, with three faithful answers (two paraphrases that inflect names and numbers,
write amounts and counts as words, "1 500 ₽" as "полторы тысячи рублей", and put several facts in one
sentence; one that quotes a sentence or two of the source) and two hallucinated ones, each with one planted error:

- wrong_amount: a price or a threshold in money changed;
- wrong_number: a limit, a count or a duration changed;
- wrong_date: a day or a month changed;
- wrong_time: an hour changed;
- dropped_negation: a negation particle dropped ("не входит" -> "входит"), the rest of the words kept;
- swapped_entity: another plan, city, carrier, person, company or weekday from the same source or pool;
- unsupported_addition: a plausible fact the source does not state.

The error type is in `meta.error_type` ("none" for faithful answers). Any answer may open with a
greeting or close with a pleasantry (`meta.greeting`), faithful and hallucinated alike, so that a
greeting gives no label away; `meta.multi_fact` marks an answer whose error sits in a sentence that
holds more than one fact. All answers of a scenario instance share a split, so a threshold fitted on
the calibration split never sees the test split's sources.

    python datasets/ru-support/generate.py            # rewrites cases.jsonl next to this file
"""

from __future__ import annotations

import json
import random
from pathlib import Path

SEED = 20261201
INSTANCES = 8  # each scenario is filled this many times with different values
ERROR_TYPES = ("wrong_amount", "wrong_number", "wrong_date", "wrong_time", "dropped_negation",
               "swapped_entity", "unsupported_addition")

PRODUCTS = ["Облако Плюс", "ТаскТрекер", "Север CRM", "Кассир Онлайн", "ДокиМастер", "Вектор Аналитика"]
PLANS = ["Старт", "Команда", "Бизнес", "Профи", "Эксперт", "Базовый"]
# city: (nominative, genitive, prepositional)
CITIES = [("Москва", "Москвы", "Москве"), ("Казань", "Казани", "Казани"), ("Самара", "Самары", "Самаре"),
          ("Новосибирск", "Новосибирска", "Новосибирске"), ("Екатеринбург", "Екатеринбурга", "Екатеринбурге"),
          ("Тверь", "Твери", "Твери")]
CARRIERS = ["СДЭК", "Boxberry", "DPD", "Почта России"]
# person: (nominative, dative, instrumental)
PEOPLE = [("Анна Смирнова", "Анне Смирновой", "Анной Смирновой"), ("Игорь Петров", "Игорю Петрову", "Игорем Петровым"),
          ("Мария Кузнецова", "Марии Кузнецовой", "Марией Кузнецовой"),
          ("Олег Васильев", "Олегу Васильеву", "Олегом Васильевым"),
          ("Елена Соколова", "Елене Соколовой", "Еленой Соколовой")]
COMPANIES = ["Ромашка", "Вектор", "Горизонт", "Северный ветер", "Альфа Софт", "Технопарк"]
# month: (genitive, prepositional)
MONTHS = [("января", "январе"), ("февраля", "феврале"), ("марта", "марте"), ("апреля", "апреле"),
          ("мая", "мае"), ("июня", "июне"), ("июля", "июле"), ("августа", "августе"),
          ("сентября", "сентябре"), ("октября", "октябре"), ("ноября", "ноябре"), ("декабря", "декабре")]
# number: (nominative/accusative, genitive) written as words
WORDS = {2: ("два", "двух"), 3: ("три", "трёх"), 4: ("четыре", "четырёх"), 5: ("пять", "пяти"),
         7: ("семь", "семи"), 10: ("десять", "десяти"), 14: ("четырнадцать", "четырнадцати"),
         15: ("пятнадцать", "пятнадцати"), 20: ("двадцать", "двадцати"), 30: ("тридцать", "тридцати"),
         1500: ("полторы тысячи", "полутора тысяч"), 2000: ("две тысячи", "двух тысяч"),
         3000: ("три тысячи", "трёх тысяч"), 5000: ("пять тысяч", "пяти тысяч")}
GREETINGS = ["Здравствуйте!", "Добрый день!", "Здравствуйте, спасибо за обращение.", "Спасибо за вопрос!"]
CLOSINGS = ["Хорошего дня!", "Если остались вопросы, пишите, будем рады помочь.", "Обращайтесь, если понадобится помощь."]


def plural(n: int, one: str, few: str, many: str) -> str:
    """The Russian noun form that agrees with n (1 день, 2 дня, 5 дней)."""
    if n % 10 == 1 and n % 100 != 11:
        return one
    if n % 10 in (2, 3, 4) and n % 100 not in (12, 13, 14):
        return few
    return many


def rub(n: int) -> str:
    """An amount as a Russian price list writes it: thousands grouped by a space."""
    return f"{n:,}".replace(",", " ")


def _other(rng: random.Random, pool: list, value):
    return rng.choice([x for x in pool if x != value])


def _bump(rng: random.Random, n: int, pool: list[int] | None = None) -> int:
    if pool and len(pool) > 1:
        return _other(rng, pool, n)
    return n + rng.choice([1, 2, 5, 10]) if n > 10 else n + rng.choice([1, 2, 3])


# Each scenario returns (source, faithful answers, {error_type: (hallucinated answer, multi_fact)}).

def tariff(rng):
    product = rng.choice(PRODUCTS)
    plan, other = rng.sample(PLANS, 2)
    price = rng.choice([1500, 2000, 3000, 5000])
    seats = rng.choice([5, 10, 15, 20])
    trial = rng.choice([7, 14, 30])
    source = (f"Тариф «{plan}» сервиса «{product}» стоит {rub(price)} ₽ в месяц и включает до {seats} "
              f"пользовательских мест. Пробный период длится {trial} {plural(trial, 'день', 'дня', 'дней')}. "
              f"Доступ к API в тариф «{plan}» не входит. Тариф «{other}» дополнительно включает единый вход (SSO). "
              f"Оплата принимается банковской картой или по счёту.")
    faithful = [f"Тариф «{plan}» обойдётся в {WORDS[price][0]} рублей в месяц, а лимит составляет {seats} "
                f"{plural(seats, 'место', 'места', 'мест')}.",
                f"На тарифе «{plan}» доступа к API нет. Попробовать сервис бесплатно можно в течение "
                f"{WORDS[trial][1]} дней."]
    base = f"Тариф «{plan}» стоит {rub(price)} ₽ в месяц"
    errors = {
        "wrong_amount": (f"Тариф «{plan}» стоит {rub(_bump(rng, price, [1500, 2000, 3000, 5000, 2500]))} ₽ в месяц, "
                         f"а лимит составляет {seats} мест.", True),
        "wrong_number": (f"{base}, а лимит составляет {_bump(rng, seats, [5, 10, 15, 20, 25])} мест.", True),
        "dropped_negation": (f"{base}. Доступ к API в тариф «{plan}» входит.", False),
        "swapped_entity": (f"Тариф «{other}» стоит {rub(price)} ₽ в месяц и включает до {seats} мест.", False),
        "unsupported_addition": (f"{base}. В тариф также входит круглосуточная поддержка по телефону.", False),
    }
    return source, faithful, errors


def delivery(rng):
    city, other_city = rng.sample(CITIES, 2)
    carrier, other_carrier = rng.sample(CARRIERS, 2)
    d1, d2 = rng.choice([(2, 4), (3, 5), (2, 5), (3, 7)])
    free = rng.choice([1500, 2000, 3000, 5000])
    hour = rng.choice([12, 14, 15, 16, 18])
    source = (f"Заказы отправляются со склада в {city[2]} службой {carrier}. Доставка занимает от {d1} до {d2} "
              f"рабочих дней. Доставка бесплатная при заказе от {rub(free)} ₽. Заказ, оформленный до {hour}:00 по "
              f"московскому времени, отправляется в тот же день. На абонентские ящики доставка не осуществляется.")
    faithful = [f"Мы отправим заказ из {city[1]} через {carrier}, в пути он будет от {WORDS[d1][1]} до "
                f"{WORDS[d2][1]} рабочих дней.",
                f"Если оформить заказ до {hour} часов по Москве, он уйдёт в тот же день, а при сумме от "
                f"{WORDS[free][1]} рублей доставка ничего не стоит."]
    errors = {
        "wrong_time": (f"Заказ, оформленный до {_bump(rng, hour, [12, 14, 15, 16, 18, 20])}:00 по московскому "
                       f"времени, отправляется в тот же день.", False),
        "wrong_number": (f"Заказы отправляются службой {carrier}, доставка занимает от {d1} до {d2 + 3} рабочих "
                         f"дней.", True),
        "wrong_amount": (f"Доставка бесплатная при заказе от {rub(_bump(rng, free, [1500, 2000, 3000, 5000, 1000]))} "
                         f"₽, а отправляем мы службой {carrier}.", True),
        "swapped_entity": (rng.choice([f"Заказы отправляются со склада в {other_city[2]} службой {carrier}.",
                                       f"Заказы отправляются со склада в {city[2]} службой {other_carrier}."]), False),
        "dropped_negation": (f"На абонентские ящики доставка осуществляется, срок от {d1} до {d2} рабочих дней.",
                             True),
        "unsupported_addition": (f"Доставка занимает от {d1} до {d2} рабочих дней. Курьер перед приездом "
                                 f"обязательно позвонит за час.", False),
    }
    return source, faithful, errors


def returns(rng):
    days = rng.choice([7, 14, 30])
    refund = rng.choice([3, 5, 10])
    pct = rng.choice([30, 40, 50])
    source = (f"Товар надлежащего качества можно вернуть в течение {days} дней с момента получения, если он не был "
              f"в употреблении. Деньги возвращаются на карту в течение {refund} рабочих дней после проверки товара. "
              f"Товары, купленные со скидкой более {pct}%, возврату не подлежат. Стоимость обратной доставки "
              f"оплачивает покупатель.")
    faithful = [f"Неиспользованный товар можно вернуть за {WORDS[days][0]} "
                f"{plural(days, 'день', 'дня', 'дней')} после получения, а деньги придут на карту за {WORDS[refund][0]} "
                f"{plural(refund, 'рабочий день', 'рабочих дня', 'рабочих дней')}.",
                f"Вещи со скидкой больше {pct}% вернуть нельзя. Обратную доставку оплачиваете вы."]
    errors = {
        "wrong_number": (f"Товар можно вернуть в течение {_bump(rng, days, [7, 14, 30, 60])} дней с момента "
                         f"получения, если он не был в употреблении.", False),
        "dropped_negation": (f"Товары, купленные со скидкой более {pct}%, возврату подлежат.", False),
        "wrong_amount": (f"Деньги возвращаются на карту в течение {refund} рабочих дней, а товары со скидкой более "
                         f"{_bump(rng, pct, [20, 30, 40, 50, 70])}% не возвращаются.", True),
        "unsupported_addition": (f"Товар можно вернуть в течение {days} дней. Обратную доставку мы оплачиваем сами.",
                                 False),
        "swapped_entity": (f"Деньги возвращаются на карту в течение {refund} рабочих дней, а обратную доставку "
                           f"оплачивает продавец.", True),
    }
    return source, faithful, errors


def support_hours(rng):
    h1, h2 = rng.choice([(8, 20), (9, 18), (9, 21), (10, 19)])
    plan = rng.choice(PLANS)
    days = [("понедельника", "пятницу", "пятницам"), ("понедельника", "субботу", "субботам")]
    first, last, _ = rng.choice(days)
    alt_last = "субботу" if last == "пятницу" else "воскресенье"
    source = (f"Служба поддержки работает с {h1}:00 до {h2}:00 по московскому времени, с {first} по {last}. "
              f"В выходные поддержка не работает, но заявку можно оставить в чате. Срочные обращения клиентов "
              f"тарифа «{plan}» принимаются круглосуточно по телефону.")
    faithful = [f"Поддержка отвечает с {h1} до {h2} часов по Москве, с {first} по {last}.",
                f"Клиенты тарифа «{plan}» могут звонить по срочным вопросам в любое время суток, а в выходные "
                f"заявку можно оставить в чате."]
    errors = {
        "wrong_time": (f"Служба поддержки работает с {h1}:00 до {h2 + 2}:00 по московскому времени, с {first} по "
                       f"{last}.", True),
        "swapped_entity": (f"Служба поддержки работает с {h1}:00 до {h2}:00 по московскому времени, с {first} по "
                           f"{alt_last}.", True),
        "dropped_negation": ("В выходные поддержка работает, а заявку можно оставить в чате.", True),
        "unsupported_addition": (f"Служба поддержки работает с {h1}:00 до {h2}:00. Среднее время ответа в чате — "
                                 f"пять минут.", False),
        "wrong_number": (f"Срочные обращения клиентов тарифа «{plan}» принимаются по телефону в течение 12 часов.",
                         False),
    }
    return source, faithful, errors


def promo(rng):
    m = rng.randrange(0, 10)
    d1, d2 = rng.randint(1, 10), rng.randint(15, 28)
    pct = rng.choice([10, 15, 20, 25])
    year = rng.choice([2026, 2027])
    product = rng.choice(PRODUCTS)
    source = (f"Акция на годовую подписку «{product}» действует с {d1} {MONTHS[m][0]} по {d2} {MONTHS[m + 1][0]} "
              f"{year} года. Скидка составляет {pct}% и не суммируется с другими скидками. Промокод нужно ввести "
              f"до оплаты, после оплаты пересчёт невозможен.")
    faithful = [f"Годовую подписку «{product}» можно купить со скидкой {pct}% до {d2} {MONTHS[m + 1][0]} "
                f"{year} года.",
                "Скидку по акции нельзя сложить с другими скидками, и промокод вводится до оплаты."]
    errors = {
        "wrong_date": (f"Акция на годовую подписку действует до {d2} {MONTHS[m + 2][0]} {year} года, скидка — "
                       f"{pct}%.", True),
        "wrong_amount": (f"Скидка на годовую подписку «{product}» составляет {pct + 10}%.", False),
        "dropped_negation": (f"Скидка составляет {pct}% и суммируется с другими скидками.", True),
        "unsupported_addition": (f"Скидка составляет {pct}%. Промокод можно передать другу.", False),
        "wrong_number": ("Промокод нужно ввести до оплаты, а пересчёт возможен в течение 3 дней после оплаты.",
                         True),
    }
    return source, faithful, errors


def security(rng):
    n = rng.choice([3, 5, 10])
    hours = rng.choice([2, 4, 24])
    product = rng.choice(PRODUCTS)
    source = (f"Учётная запись в «{product}» блокируется на {hours} {plural(hours, 'час', 'часа', 'часов')} после "
              f"{n} неудачных попыток входа. Администратор может разблокировать её раньше. Двухфакторная "
              f"аутентификация обязательна для администраторов. Сотрудники поддержки никогда не запрашивают "
              f"пароль.")
    faithful = [f"После {WORDS[n][1]} неудачных попыток входа учётную запись заблокируют на {hours} "
                f"{plural(hours, 'час', 'часа', 'часов')}, но администратор может снять блокировку раньше.",
                "Пароль у вас сотрудники поддержки не спросят. Для администраторов двухфакторная аутентификация "
                "обязательна."]
    errors = {
        "wrong_number": (f"Учётная запись блокируется на {hours} {plural(hours, 'час', 'часа', 'часов')} после "
                         f"{_bump(rng, n, [3, 5, 10, 7])} неудачных попыток входа.", True),
        "dropped_negation": ("Сотрудники поддержки запрашивают пароль, а двухфакторная аутентификация обязательна "
                             "для администраторов.", True),
        "swapped_entity": (f"Учётную запись в «{product}» может разблокировать раньше только сотрудник поддержки.",
                           False),
        "unsupported_addition": (f"Учётная запись блокируется после {n} неудачных попыток. Заблокированные записи "
                                 f"удаляются через 90 дней.", False),
    }
    return source, faithful, errors


def dollars(rng):
    product = rng.choice(PRODUCTS)
    usd = rng.choice([29, 49, 92, 120])
    gb = rng.choice([50, 100, 200])
    users = rng.choice([3, 5, 10])
    source = (f"Подписка {product} Pro стоит {usd} {plural(usd, 'доллар', 'доллара', 'долларов')} в месяц. "
              f"В неё входит {gb} ГБ хранилища и до {users} пользователей. Оплатить подписку можно только картой, "
              f"криптовалюту мы не принимаем. Отменить подписку можно в любой момент.")
    faithful = [f"Pro-подписка на {product} обходится в ${usd} ежемесячно, а хранилище составляет {gb} гигабайт.",
                f"Платить за подписку нужно картой, криптовалюта не принимается. До {WORDS[users][1]} человек могут "
                f"пользоваться ею одновременно."]
    errors = {
        "wrong_amount": (f"Подписка {product} Pro стоит {usd + 10} {plural(usd + 10, 'доллар', 'доллара', 'долларов')} "
                         f"в месяц, а в неё входит {gb} ГБ хранилища.", True),
        "wrong_number": (f"В подписку {product} Pro входит {gb * 2} ГБ хранилища и до {users} пользователей.", True),
        "dropped_negation": ("Оплатить подписку можно картой, криптовалюту мы принимаем.", True),
        "unsupported_addition": (f"Подписка {product} Pro стоит {usd} "
                                 f"{plural(usd, 'доллар', 'доллара', 'долларов')} в месяц. Первый месяц бесплатный.",
                                 False),
    }
    return source, faithful, errors


def manager(rng):
    person, other = rng.sample(PEOPLE, 2)
    company, other_company = rng.sample(COMPANIES, 2)
    days = rng.choice([3, 5, 10])
    d, m = rng.randint(1, 28), rng.randrange(12)
    source = (f"Ваш персональный менеджер — {person[0]}. Договор заключается с ООО «{company}». Счёт нужно "
              f"оплатить в течение {days} банковских дней, иначе заказ аннулируется. Договор действует до {d} "
              f"{MONTHS[m][0]} 2027 года.")
    faithful = [f"По всем вопросам обращайтесь к {person[1]}, вашему менеджеру. Договор вы подписываете с "
                f"ООО «{company}».",
                f"Счёт надо оплатить за {WORDS[days][0]} {plural(days, 'банковский день', 'банковских дня', 'банковских дней')}, "
                f"иначе заказ отменят; договор действует до {d} {MONTHS[m][0]} 2027 года."]
    errors = {
        "swapped_entity": (rng.choice([f"Ваш персональный менеджер — {other[0]}.",
                                       f"Договор заключается с ООО «{other_company}»."]), False),
        "wrong_number": (f"Счёт нужно оплатить в течение {_bump(rng, days, [3, 5, 10, 14])} банковских дней.", False),
        "wrong_date": (f"Договор с ООО «{company}» действует до {d} {MONTHS[(m + 3) % 12][0]} 2027 года.", True),
        "dropped_negation": (f"Если счёт не оплатить в течение {days} банковских дней, заказ сохраняется.", False),
        "unsupported_addition": (f"Ваш персональный менеджер — {person[0]}. Менеджер может оформить рассрочку на "
                                 f"полгода.", False),
    }
    return source, faithful, errors


def maintenance(rng):
    product = rng.choice(PRODUCTS)
    d, m = rng.randint(1, 28), rng.randrange(12)
    h1 = rng.choice([1, 2, 3, 22, 23])
    dur = rng.choice([2, 3, 4])
    h2 = (h1 + dur) % 24
    source = (f"Плановые технические работы в «{product}» пройдут {d} {MONTHS[m][0]} с {h1:02d}:00 до "
              f"{h2:02d}:00 по московскому времени. В это время сервис будет недоступен. Данные клиентов не "
              f"пострадают, повторно входить в систему после работ не нужно.")
    faithful = [f"{d} {MONTHS[m][0]} «{product}» не будет работать с {h1} до {h2} часов по Москве из-за "
                f"плановых работ.",
                "Ваши данные во время работ не пострадают, и входить в систему заново потом не придётся."]
    errors = {
        "wrong_date": (f"Плановые технические работы в «{product}» пройдут {(d % 28) + 1} {MONTHS[m][0]} с "
                       f"{h1:02d}:00 до {h2:02d}:00 по московскому времени.", True),
        "wrong_time": (f"Плановые работы пройдут {d} {MONTHS[m][0]} с {h1:02d}:00 до {(h2 + 2) % 24:02d}:00, "
                       f"сервис в это время будет недоступен.", True),
        "dropped_negation": ("Данные клиентов не пострадают, но повторно входить в систему после работ нужно.",
                             True),
        "unsupported_addition": (f"Плановые работы пройдут {d} {MONTHS[m][0]}. За время простоя всем клиентам "
                                 f"начислят компенсацию.", False),
    }
    return source, faithful, errors


def pickup(rng):
    city, other_city = rng.sample(CITIES, 2)
    h1, h2 = rng.choice([(9, 21), (10, 20), (10, 22), (8, 20)])
    keep = rng.choice([3, 5, 7])
    source = (f"Пункт выдачи в {city[2]} работает ежедневно с {h1}:00 до {h2}:00. Заказ хранится в пункте "
              f"{keep} дней, после чего возвращается на склад. Оплатить заказ при получении наличными нельзя, "
              f"только картой.")
    faithful = [f"Забрать заказ в {city[2]} можно каждый день с {h1} до {h2} часов, хранить его будут "
                f"{WORDS[keep][0]} {plural(keep, 'день', 'дня', 'дней')}.",
                "При получении оплатить наличными не получится, только картой."]
    errors = {
        "wrong_time": (f"Пункт выдачи в {city[2]} работает ежедневно с {h1}:00 до {h2 - 2}:00.", False),
        "wrong_number": (f"Заказ хранится в пункте выдачи {keep + 7} дней, после чего возвращается на склад.", True),
        "dropped_negation": ("Оплатить заказ при получении наличными можно, как и картой.", True),
        "swapped_entity": (f"Пункт выдачи в {other_city[2]} работает ежедневно с {h1}:00 до {h2}:00.", False),
        "unsupported_addition": (f"Пункт выдачи работает ежедневно с {h1}:00 до {h2}:00. Там же можно примерить "
                                 f"одежду перед покупкой.", False),
    }
    return source, faithful, errors


SCENARIOS = [tariff, delivery, returns, support_hours, promo, security, dollars, manager, maintenance, pickup]


def generate(seed: int = SEED) -> list[dict]:
    rng = random.Random(seed)
    rows = []
    group = 0
    for maker in SCENARIOS:
        for instance in range(INSTANCES):
            source, faithful, errors = maker(rng)
            kinds = list(errors)
            # Two error types per instance, rotating so every type of the scenario appears evenly.
            chosen = [kinds[(instance * 2 + k) % len(kinds)] for k in (0, 1)]
            # Pairs of instances alternate between splits, so every error type lands in both.
            split = "calibration" if (instance // 2) % 2 == 0 else "test"
            scenario = f"{maker.__name__}-{instance}"
            # A third faithful answer quotes the knowledge base (one or two of its sentences), as bots often
            # do: without it, word overlap alone would tell paraphrased faithful answers from planted errors
            # that keep the source's words.
            sents = [x if x.endswith(".") else x + "." for x in source.split(". ")]
            i = rng.randrange(len(sents))
            quoted = " ".join(sents[i:i + rng.choice([1, 2])])
            items = ([(r, "none", False) for r in faithful] + [(quoted, "none", False)]
                     + [(errors[e][0], e, errors[e][1]) for e in chosen])
            for k, (response, error_type, multi) in enumerate(items):
                greeting = rng.random() < 0.4
                if greeting:
                    response = (rng.choice(GREETINGS) + " " + response if rng.random() < 0.6
                                else response + " " + rng.choice(CLOSINGS))
                rows.append({
                    "id": f"{scenario}-{k}",
                    "doc_type": "support_answer",
                    "split": split,
                    "question": None,
                    "sources": [{"id": f"{scenario}-source", "text": source}],
                    "response": response,
                    "label": "faithful" if error_type == "none" else "hallucinated",
                    "meta": {"error_type": error_type, "scenario": maker.__name__, "group": group, "language": "ru",
                             "greeting": greeting, "multi_fact": multi},
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
