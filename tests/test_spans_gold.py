"""Gold spans (strings located exactly once, offsets, several annotators), groups, and the judge's
located claim."""

import json

import pytest
from conftest import write

from helpers.fake_llm import FakeLLM
from verifybench.cases import Case, Source
from verifybench.errors import VerifybenchError
from verifybench.loaders import DatasetSpec, iter_cases
from verifybench.loaders.fields import FieldSpec
from verifybench.rundir import case_index_row
from verifybench.text.locate import SpanError, gold_spans, locate_quote, majority, merge, occurrences
from verifybench.verifiers import build

RESPONSE = "Paris is the capital of France. It has 9 million people. Paris is big."


def spec(**kw):
    return DatasetSpec(**kw)


# --- locating strings --------------------------------------------------------------------------------

def test_occurrences_count_overlapping_ones():
    assert occurrences("aaa", "aa") == [0, 1]
    assert occurrences("abc", "d") == []


def test_a_string_found_once_is_located_nowhere_or_twice_is_counted_not_guessed():
    g = gold_spans(["9 million people", "Berlin", "Paris"], RESPONSE)
    assert g.intervals == [(RESPONSE.index("9 million"), RESPONSE.index("9 million") + 16)]
    assert (g.not_found, g.ambiguous, g.unlocated) == (1, 1, 2)


def test_offsets_as_objects_and_pairs_overlaps_merged():
    g = gold_spans([{"start": 0, "end": 5}, [3, 8], {"start": 20, "end": 25, "text": RESPONSE[20:25]}], RESPONSE)
    assert g.intervals == [(0, 8), (20, 25)] and g.unlocated == 0


@pytest.mark.parametrize("bad,message", [
    ([{"start": 5, "end": 500}], "is not a span of the"),
    ([{"start": 5, "end": 5}], "is not a span of the"),
    ([{"start": "0", "end": 4}], "must be integers"),
    ([{"start": True, "end": 4}], "must be integers"),
    ([{"start": 0, "end": 5, "text": "Lyon"}], "is not the response's text at [0, 5)"),
    ([""], "an empty span"),
    ([3.5], "expected a string"),
    ("Paris", "expected a list of spans"),
])
def test_malformed_spans_are_errors_naming_the_item(bad, message):
    with pytest.raises(SpanError, match=None) as e:
        gold_spans(bad, RESPONSE)
    assert message in str(e.value)


def test_several_annotators_need_a_merge_rule():
    annotators = [[[0, 10]], [[5, 15]], [[8, 12]]]
    with pytest.raises(SpanError, match="spans_merge: union"):
        gold_spans(annotators, RESPONSE)
    assert gold_spans(annotators, RESPONSE, "union").intervals == [(0, 15)]
    # chars 5..12 are marked by at least two of the three annotators
    assert gold_spans(annotators, RESPONSE, "majority").intervals == [(5, 12)]
    assert gold_spans([["Paris is the"], ["the capital"]], RESPONSE, "union").intervals == [(0, 20)]


def test_interval_helpers():
    assert merge([(5, 7), (0, 3), (3, 4), (6, 9), (10, 10)]) == [(0, 4), (5, 9)]
    assert majority([[(0, 4)], [(2, 6)]]) == [(2, 4)]  # two annotators: both must mark a character
    assert majority([[(0, 4), (1, 3)], [], []]) == []  # one annotator's own overlap counts once


def test_locate_quote_exact_then_fuzzy_else_why():
    assert locate_quote(RESPONSE, "“9 million people”").method == "exact"
    fuzzy = locate_quote(RESPONSE, "It has 9 milion people")
    assert fuzzy.method == "fuzzy" and fuzzy.similarity >= 90
    assert "million" in RESPONSE[fuzzy.start:fuzzy.end] and fuzzy.start >= RESPONSE.index("It has") - 1
    assert "similar" in locate_quote(RESPONSE, "The moon is made of cheese")
    assert "more than once" in locate_quote(RESPONSE, "Paris")
    assert locate_quote(RESPONSE, "   ") == "empty quote"
    whole = locate_quote("Short text.", "Short text. And then a great deal more that is not there at all.")
    assert isinstance(whole, str)  # a longer quote is not "perfectly contained" in the response


# --- field-mapped loaders --------------------------------------------------------------------------------

def _jsonl(tmp_path, rows):
    return write(tmp_path / "data.jsonl", "".join(json.dumps(r) + "\n" for r in rows))


def test_field_mapped_spans_and_groups_from_jsonl(tmp_path):
    rows = [
        {"id": "a", "response": RESPONSE, "label": 1, "bad": ["9 million people", "Berlin", "Paris"], "q": 7},
        {"id": "b", "response": RESPONSE, "label": 0, "q": 7},
        {"id": "c", "response": RESPONSE, "label": 1, "bad": [[[0, 5]], [[0, 12]], [[20, 30]]], "q": 8},
    ]
    path = _jsonl(tmp_path, rows)
    cases = list(iter_cases(spec(loader="jsonl", path=str(path),
                                 fields={"spans": "bad", "spans_merge": "majority", "group": "q"})))
    a, b, c = cases
    at = RESPONSE.index("9 million people")
    assert [(s.start, s.end, s.text) for s in a.spans] == [(at, at + 16, "9 million people")]
    assert a.meta["spans_not_found"] == 1 and a.meta["spans_ambiguous"] == 1
    assert b.spans is None and "spans_not_found" not in b.meta
    assert [(s.start, s.end) for s in c.spans] == [(0, 5)]
    assert (a.meta["group"], b.meta["group"], c.meta["group"]) == (7, 7, 8) and "q" not in a.meta
    row = case_index_row(a)
    assert row["spans"] == [[at, at + 16]] and "spans" not in case_index_row(b)


def test_spans_in_a_csv_cell(tmp_path):
    path = write(tmp_path / "d.csv", 'response,label,spans\n"Paris is big.",1,"[{""start"": 9, ""end"": 12}]"\n'
                                     '"Paris is big.",1,"[\'is big\']"\n')
    cases = list(iter_cases(spec(loader="csv", path=str(path), fields={"spans": "spans"})))
    assert [[(s.start, s.end) for s in c.spans] for c in cases] == [[(9, 12)], [(6, 12)]]


def test_a_bad_span_is_an_error_naming_file_line_and_field(tmp_path):
    path = _jsonl(tmp_path, [{"response": "short", "label": 1, "s": [{"start": 0, "end": 99}]}])
    with pytest.raises(VerifybenchError) as e:
        list(iter_cases(spec(loader="jsonl", path=str(path), fields={"spans": "s"})))
    assert "data.jsonl:1" in str(e.value) and "field 's'" in str(e.value) and "[0, 99)" in str(e.value)


def test_annotators_without_a_merge_rule_are_refused_for_that_record(tmp_path):
    path = _jsonl(tmp_path, [{"response": RESPONSE, "label": 1, "s": [["Paris is"], ["capital"]]}])
    with pytest.raises(VerifybenchError, match="spans_merge"):
        list(iter_cases(spec(loader="jsonl", path=str(path), fields={"spans": "s"})))


def test_unknown_merge_rule_is_refused_when_the_suite_is_read():
    with pytest.raises(ValueError, match="union"):
        FieldSpec(spans="s", spans_merge="intersection")


def test_halueval_general_spans_are_located_once_or_counted(data_dir):
    cases = list(iter_cases(spec(loader="halueval", path=str(data_dir / "halueval/general_data.json"))))
    not_found = sum(c.meta.get("spans_not_found", 0) for c in cases)
    ambiguous = sum(c.meta.get("spans_ambiguous", 0) for c in cases)
    located = sum(len(c.spans or []) for c in cases)
    raw = [json.loads(line) for line in (data_dir / "halueval/general_data.json").read_text().splitlines()]
    given = [(r["chatgpt_response"], s) for r in raw for s in r.get("hallucination_spans") or []]
    # an independent count: str.count finds non-overlapping occurrences, enough to tell 0, 1 and more
    assert not_found == sum(resp.count(s) == 0 for resp, s in given) > 0
    assert ambiguous == sum(resp.count(s) > 1 for resp, s in given) > 0
    assert located <= sum(resp.count(s) == 1 for resp, s in given)
    assert all(c.response[s.start:s.end] == s.text for c in cases for s in c.spans or [])
    assert all(not c.sources for c in cases)
    with_query = next(iter_cases(spec(loader="halueval", path=str(data_dir / "halueval/general_data.json"),
                                      query_as_source=True, limit=1)))
    assert with_query.sources[0].id == "user_query" and with_query.sources[0].text == with_query.question


# --- the judge's claim -------------------------------------------------------------------------------------

def _judge_case():
    return Case(id="c", dataset="t", doc_type="support_answer", question="How much is it?",
                response="The plan costs $45.", label=True,
                sources=[Source(id="s", text="The plan costs $29 per month.")])


def _reply(claim):
    return json.dumps({"hallucinated": True, "probability": 0.9, "claim": claim, "reason": "<b>$29</b> in the source"})


@pytest.mark.parametrize("claim,method,start,end", [
    ("costs $45", "exact", 9, 18),
    ("the plan cost $45", "fuzzy", None, None),
    ("the plan is free forever and always", None, None, None),
    ("", "none", None, None),
])
def test_judge_returns_its_claim_as_a_located_unit(tmp_path, claim, method, start, end):
    server = FakeLLM([_reply(claim)])
    try:
        judge = build("judge", backend="openai", model="test-model", base_url=server.base_url,
                      cache_dir=str(tmp_path / "cache"), concurrency=1)
        v = judge.verify([_judge_case()])[0]
    finally:
        server.close()
    assert v.error is None and v.score == pytest.approx(0.9)
    if method == "none":
        assert v.units == []
        return
    (u,) = v.units
    assert u.score == v.score and u.evidence == "<b>$29</b> in the source"
    assert u.detail["located"] == method
    if method is None:
        assert u.start is None and u.end is None and u.status == "not localized" and "similar" in u.detail["why"]
    elif method == "exact":
        assert (u.start, u.end) == (start, end) and u.text == "costs $45"
    else:
        # windows as long as the quote: the best one starts at the response's start, one character short
        assert u.start == 0 and u.end in (17, 18) and u.detail["similarity"] >= 90 and u.detail["claim"] == claim


def test_judge_cache_key_is_unchanged_by_localization(tmp_path):
    """Localization happens after the reply: the request, and so the replay cache's key, is the one the
    judge used before it (the key below was computed with the code before this change)."""
    server = FakeLLM([_reply("costs $45")])
    try:
        build("judge", backend="openai", model="test-model", base_url=server.base_url,
              cache_dir=str(tmp_path / "cache"), concurrency=1).verify([_judge_case()])
    finally:
        server.close()
    assert [p.stem for p in (tmp_path / "cache").rglob("*.json")] == [
        "002ccd04e37f777a31bbc477405dfa4b361a8cbf24b5082c2ac396ec17ab1fc1"]


@pytest.mark.parametrize("name,cases,hallucinated", [("halueval-general-spans", 4507, 815),
                                                     ("judge-halueval-general-spans", 200, 37),
                                                     ("halueval-qa-pairs", 4000, 2000)])
def test_the_span_and_pair_suites_read_their_data(root, name, cases, hallucinated):
    from verifybench.suite import load_suite

    suite = load_suite(root / "evals" / f"{name}.yaml")
    read = list(iter_cases(suite.dataset))
    assert len(read) == cases
    if hallucinated is not None:
        assert sum(c.label for c in read) == hallucinated
    if "general" in name:
        assert all(c.sources and c.sources[0].text == c.question for c in read)
    else:  # both answers of every row: each group is a pair
        groups = {}
        for c in read:
            groups.setdefault(c.meta["group"], []).append(c.label)
        assert all(sorted(v) == [False, True] for v in groups.values())
