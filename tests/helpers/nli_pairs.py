"""Synthetic (premise, hypothesis) pairs for the `nli` tests, and the small consistency model trained on
them.

Documents are sentences filled from templates with random names, companies, cities, products, numbers
and years. A hypothesis copied from the premise is entailed; the same sentence with one number or entity
swapped for another of the same kind is not, and so is a sentence from another document. Everything is
drawn from a seeded `random.Random`, so a seed gives the same pairs on every machine.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

FIRST = ["Anna", "Boris", "Clara", "David", "Elena", "Felix", "Greta", "Hugo", "Irina", "Jonas", "Karla",
         "Liam", "Marta", "Nikolai", "Olga", "Pavel", "Rosa", "Stefan", "Tara", "Viktor"]
LAST = ["Novak", "Keller", "Ivanova", "Brandt", "Moreau", "Silva", "Lindqvist", "Horvat", "Petrov", "Weber",
        "Costa", "Nielsen", "Kowalski", "Fischer", "Romano", "Berg"]
COMPANY = ["Northwind", "Acme Logistics", "Bluepeak", "Contoso", "Globex", "Initech", "Umbrella Foods",
           "Vandelay Imports", "Stark Metals", "Wayne Freight", "Hooli", "Soylent Labs"]
CITY = ["Berlin", "Lisbon", "Oslo", "Prague", "Vienna", "Madrid", "Helsinki", "Warsaw", "Dublin", "Zagreb",
        "Riga", "Porto", "Lyon", "Tallinn"]
PRODUCT = ["router", "tablet", "sensor", "printer", "scanner", "drone", "heater", "camera", "monitor", "charger"]

# (template, slot kinds in order of appearance)
TEMPLATES = [
    ("{person} joined {company} in {year}.", ("person", "company", "year")),
    ("{company} employs {number} people in {city}.", ("company", "number", "city")),
    ("The {product} made by {company} costs {number} dollars.", ("product", "company", "number")),
    ("{person} moved from {city} to {city2} in {year}.", ("person", "city", "city2", "year")),
    ("{company} opened its office in {city} in {year}.", ("company", "city", "year")),
    ("{person} sold {number} units of the {product} last quarter.", ("person", "number", "product")),
    ("The warehouse in {city} stores {number} crates for {company}.", ("city", "number", "company")),
    ("{person} leads the {product} team at {company}.", ("person", "product", "company")),
    ("The contract between {company} and {company2} runs for {number} months.", ("company", "company2", "number")),
    ("{person} was born in {city} in {year}.", ("person", "city", "year")),
    ("{company} shipped {number} units of its {product} from {city}.", ("company", "number", "product", "city")),
    ("Revenue at {company} grew by {number} percent in {year}.", ("company", "number", "year")),
]
SWAPPABLE = ("person", "company", "company2", "city", "city2", "number", "year", "product")


def _value(rng: random.Random, kind: str) -> str:
    if kind == "person":
        return f"{rng.choice(FIRST)} {rng.choice(LAST)}"
    if kind in ("company", "company2"):
        return rng.choice(COMPANY)
    if kind in ("city", "city2"):
        return rng.choice(CITY)
    if kind == "product":
        return rng.choice(PRODUCT)
    if kind == "year":
        return str(rng.randint(1990, 2025))
    return str(rng.randint(2, 950))


@dataclass(frozen=True)
class Fact:
    template: str
    values: tuple[tuple[str, str], ...]

    @property
    def text(self) -> str:
        return self.template.format(**dict(self.values))

    def swapped(self, rng: random.Random, n: int = 1) -> str:
        """The same sentence with `n` of its numbers or entities (all, when there are fewer) replaced by
        different values of their kinds."""
        values = dict(self.values)
        kinds = [k for k in values if k in SWAPPABLE]
        for kind in rng.sample(kinds, min(n, len(kinds))):
            new = values[kind]
            while new == values[kind] or new in values.values():
                new = _value(rng, kind)
            values[kind] = new
        return self.template.format(**values)


def fact(rng: random.Random) -> Fact:
    template, kinds = rng.choice(TEMPLATES)
    values: dict[str, str] = {}
    for k in kinds:
        v = _value(rng, k)
        while k.endswith("2") and v == values.get(k[:-1]):
            v = _value(rng, k)
        values[k] = v
    return Fact(template, tuple(values.items()))


def document(rng: random.Random, n: int) -> list[Fact]:
    return [fact(rng) for _ in range(n)]


def pairs(seed: int, n: int, window: int | tuple[int, int] = 3, swaps: int = 1) -> list[tuple[str, str, int]]:
    """`n` (premise, hypothesis, label) triples, label 1 = entailed. Half are copies of a premise sentence;
    of the rest, most swap `swaps` numbers or entities, some are sentences of another document. `window`:
    sentences per premise, or a (low, high) range drawn from per pair."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        doc = document(rng, window if isinstance(window, int) else rng.randint(*window))
        premise = " ".join(f.text for f in doc)
        target = rng.choice(doc)
        if i % 2 == 0:
            out.append((premise, target.text, 1))
        elif rng.random() < 0.8:
            out.append((premise, target.swapped(rng, swaps), 0))
        else:
            out.append((premise, fact(rng).text, 0))
    return out


FILLER = ["The meeting notes were circulated on Friday.", "Several questions remained open after the review.",
          "The weather stayed mild for most of the week.", "Nobody objected to the revised agenda.",
          "The report was translated into three languages.", "Most attendees arrived by train.",
          "A summary will follow in the next newsletter.", "The committee thanked the volunteers.",
          "Coffee was served in the main hall.", "The slides are available on request.",
          "Questions should be sent to the office.", "The building closes early on holidays.",
          "Parking is limited near the entrance.", "The minutes were approved without changes.",
          "Further details are expected soon.", "The discussion ran longer than planned."]


def long_document(seed: int, n: int, facts: int = 10) -> list[Fact]:
    """A long source of `n` sentences: `facts` facts, each from a different template (so a swapped fact
    can only be checked against its own original), the first sentence always a fact, and filler
    sentences without any number or entity between them. Fillers are `Fact`s without values."""
    rng = random.Random(seed)
    chosen = []
    for template, kinds in rng.sample(TEMPLATES, min(facts, len(TEMPLATES), n)):
        values: dict[str, str] = {}
        for k in kinds:
            v = _value(rng, k)
            while v in values.values():
                v = _value(rng, k)
            values[k] = v
        chosen.append(Fact(template, tuple(values.items())))
    rest = chosen[1:] + [Fact(rng.choice(FILLER), ()) for _ in range(n - len(chosen))]
    return [chosen[0], *rng.sample(rest, len(rest))]


LABELS = {0: "CONTRADICTION", 1: "ENTAILMENT"}


def train_model(out_dir, base: str, steps: int = 100, batch: int = 16, layers: int = 3, lr: float = 1e-4,
                seed: int = 0, threads: int = 1) -> str:
    """Fine-tune a BERT-style sequence classifier (the first `layers` layers of `base`) on `pairs` and save
    it (weights, config with label names, tokenizer) to `out_dir`.

    Cheap on purpose, for a shared CPU: three layers, no dropout (few steps learn faster without it),
    premises of one to three sentences, negatives with every number and entity swapped (the strongest
    signal, learnt in about a hundred steps)."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()  # "classifier weights newly initialised" is the point here
    torch.manual_seed(seed)
    threads_before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        tok = AutoTokenizer.from_pretrained(base)
        model = AutoModelForSequenceClassification.from_pretrained(
            base, num_labels=2, id2label=LABELS, label2id={v: k for k, v in LABELS.items()},
            num_hidden_layers=layers, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
        data = pairs(seed=1000 + seed, n=steps * batch, window=(1, 3), swaps=9)
        opt = torch.optim.AdamW(model.parameters(), lr=lr)
        model.train()
        for step in range(steps):
            part = data[step * batch:(step + 1) * batch]
            enc = tok([p for p, _, _ in part], [h for _, h, _ in part], padding=True, return_tensors="pt")
            loss = model(**enc, labels=torch.tensor([y for _, _, y in part])).loss
            loss.backward()
            opt.step()
            opt.zero_grad()
        model.eval()
        model.save_pretrained(out_dir)
        tok.save_pretrained(out_dir)
    finally:
        torch.set_num_threads(threads_before)
    return str(out_dir)
