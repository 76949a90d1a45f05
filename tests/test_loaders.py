import json
import tracemalloc
from collections import Counter
from itertools import islice

import pandas as pd
import pytest
from conftest import write

from verifybench.errors import DataError
from verifybench.loaders import DatasetSpec, iter_cases
from verifybench.loaders.fields import FieldSpec, parse_label


def spec(**kw) -> DatasetSpec:
    return DatasetSpec.model_validate(kw)


def row(i, **kw):
    return json.dumps({"id": f"c{i}", "response": f"answer {i}", "sources": [f"doc {i}"], "label": i % 2, **kw})


# --- the shared benchmarks, read whole ---------------------------------------------------------------

@pytest.mark.parametrize("task", ["qa", "dialogue", "summarization"])
def test_halueval_pairs_give_20000_cases(data_dir, task):
    cases = list(iter_cases(spec(loader="halueval", path=str(data_dir / f"halueval/{task}_data.json"))))
    assert len(cases) == 20000
    assert Counter(c.label for c in cases) == {True: 10000, False: 10000}
    assert {c.doc_type for c in cases} == {task}
    first, second = cases[0], cases[1]
    assert (first.id, second.id) == (f"{task}-0-right", f"{task}-0-hallucinated")
    assert first.sources == second.sources and first.sources[0].text
    assert first.meta["group"] == second.meta["group"] == 0


def test_halueval_general(data_dir):
    cases = list(iter_cases(spec(loader="halueval", path=str(data_dir / "halueval/general_data.json"))))
    assert len(cases) == 4507
    assert Counter(c.label for c in cases) == {True: 815, False: 3692}
    assert all(not c.sources for c in cases)
    with_spans = [c for c in cases if c.spans]
    assert with_spans and all(c.response[s.start:s.end] == s.text for c in with_spans for s in c.spans)


def test_summedits_all_domains(data_dir):
    cases = list(iter_cases(spec(loader="summedits", path=str(data_dir / "summedits"))))
    assert len(cases) == 4681
    by_domain = Counter(c.doc_type for c in cases)
    assert len(by_domain) == 8 and by_domain["news"] == 819 and by_domain["scitldr"] == 466
    assert {c.split for c in cases} == {"test", "evaluation"}
    # label 1 in the file means consistent: those must be faithful here.
    raw = json.loads((data_dir / "summedits/summedits_news.json").read_text())
    first = next(c for c in cases if c.id == raw[0]["id"])
    assert first.label == (str(raw[0]["label"]) == "0")
    assert Counter(c.label for c in cases)[False] == 1648


def test_summedits_labels_as_strings_or_ints(tmp_path):
    recs = [{"id": "a", "doc": "d", "summary": "s", "label": "1"}, {"id": "b", "doc": "d", "summary": "s", "label": 0}]
    write(tmp_path / "summedits_x.json", json.dumps(recs))
    cases = list(iter_cases(spec(loader="summedits", path=str(tmp_path))))
    assert [c.label for c in cases] == [False, True]
    assert cases[0].doc_type == "x"


# --- bad input -------------------------------------------------------------------------------------

def test_malformed_jsonl_names_file_and_line(tmp_path):
    f = write(tmp_path / "cases.jsonl", "\n".join([row(0), row(1), '{"id": "c2", "response": ', row(3)]) + "\n")
    with pytest.raises(DataError, match=rf"{f}:3: malformed JSON"):
        list(iter_cases(spec(loader="jsonl", path=str(f))))


def test_missing_field_is_named(tmp_path):
    f = write(tmp_path / "cases.jsonl", row(0) + "\n" + json.dumps({"id": "x", "label": 1}) + "\n")
    with pytest.raises(DataError, match=rf"{f}:2: field 'response': missing required field"):
        list(iter_cases(spec(loader="jsonl", path=str(f))))


def test_duplicate_ids_are_an_error(tmp_path):
    f = write(tmp_path / "cases.jsonl", "\n".join([row(0), row(1), row(0)]) + "\n")
    with pytest.raises(DataError, match=rf"{f}:3: field 'id': duplicate case id 'c0' \(first seen at {f}:1\)"):
        list(iter_cases(spec(loader="jsonl", path=str(f))))


def test_non_utf8_bytes_reported_with_position(tmp_path):
    f = write(tmp_path / "cases.jsonl", (row(0) + "\n").encode() + b'{"id": "c1", "response": "caf\xe9"}\n')
    with pytest.raises(DataError, match=r"cases.jsonl:2: invalid UTF-8 byte 0xe9 at column 30"):
        list(iter_cases(spec(loader="jsonl", path=str(f))))


def test_unknown_label_value_is_an_error(tmp_path):
    f = write(tmp_path / "cases.jsonl", json.dumps({"response": "r", "label": "maybe"}) + "\n")
    with pytest.raises(DataError, match="field 'label': label value 'maybe' is in neither"):
        list(iter_cases(spec(loader="jsonl", path=str(f))))


def test_skip_mode_counts_and_lists_bad_records(tmp_path):
    lines = [row(0), "not json", row(2), json.dumps({"id": "c3"}), row(4), row(2)]
    f = write(tmp_path / "cases.jsonl", "\n".join(lines) + "\n")
    errors = []
    cases = list(iter_cases(spec(loader="jsonl", path=str(f), on_error="skip"), errors))
    assert [c.id for c in cases] == ["c0", "c2", "c4"]
    assert [(e.loc.line, e.field) for e in errors] == [(2, None), (4, "response"), (6, "id")]


def test_limit_counts_good_cases(tmp_path):
    f = write(tmp_path / "cases.jsonl", "\n".join(row(i) for i in range(10)) + "\n")
    assert len(list(iter_cases(spec(loader="jsonl", path=str(f), limit=4)))) == 4


# --- generic formats with a field mapping ---------------------------------------------------------------

FIELDS = {"id": "qid", "response": "answer", "sources": ["ctx_a", "ctx_b"], "question": "q",
          "label": "verdict", "hallucinated": ["bad"], "faithful": ["good"], "doc_type": "kind"}
RECORDS = [
    {"qid": 1, "answer": "Paris", "ctx_a": "France's capital is Paris.", "ctx_b": "More text.", "q": "Capital?",
     "verdict": "good", "kind": "qa", "extra": "x"},
    {"qid": 2, "answer": "Lyon", "ctx_a": "France's capital is Paris.", "ctx_b": "", "q": "Capital?",
     "verdict": "BAD", "kind": "qa", "extra": "y"},
]


def _check_mapped(cases):
    assert [c.id for c in cases] == ["1", "2"]
    assert [c.label for c in cases] == [False, True]
    assert cases[0].sources[0].text == "France's capital is Paris." and cases[0].sources[0].id == "ctx_a"
    assert cases[0].question == "Capital?" and cases[0].doc_type == "qa"
    assert cases[0].meta == {"extra": "x"}


def test_csv_with_field_mapping(tmp_path):
    f = tmp_path / "cases.csv"
    pd.DataFrame(RECORDS).to_csv(f, index=False)
    _check_mapped(list(iter_cases(spec(loader="csv", path=str(f), fields=FIELDS))))


def test_csv_ragged_row_named(tmp_path):
    f = write(tmp_path / "cases.csv", "response,label\nok,1\n\"a, b\",0,extra\n")
    with pytest.raises(DataError, match=r"cases.csv:3: 1 more values than the header's 2 columns"):
        list(iter_cases(spec(loader="csv", path=str(f))))


def test_parquet_with_field_mapping(tmp_path):
    f = tmp_path / "cases.parquet"
    pd.DataFrame(RECORDS).to_parquet(f)
    _check_mapped(list(iter_cases(spec(loader="parquet", path=str(f), fields=FIELDS))))


def test_json_array_with_field_mapping(tmp_path):
    f = write(tmp_path / "cases.json", json.dumps(RECORDS))
    _check_mapped(list(iter_cases(spec(loader="json", path=str(f), fields=FIELDS))))


def test_hf_local_json_builder(tmp_path):
    f = write(tmp_path / "cases.jsonl", "\n".join(json.dumps(r) for r in RECORDS) + "\n")
    cases = list(iter_cases(spec(loader="hf", path="json", data_files=str(f), fields=FIELDS)))
    _check_mapped(cases)


def test_jsonl_streams_without_holding_the_file(tmp_path):
    f = tmp_path / "big.jsonl"
    with open(f, "w") as out:
        for i in range(200_000):
            out.write(row(i, padding="x" * 200) + "\n")
    assert f.stat().st_size > 50_000_000
    tracemalloc.start()
    stream = iter_cases(spec(loader="jsonl", path=str(f)))
    first = [next(stream) for _ in range(100)]
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert first[-1].id == "c99"
    assert peak < 5_000_000, f"reading 100 cases peaked at {peak} bytes: the loader is not streaming"


def test_parse_label_is_type_strict():
    assert parse_label(" Yes ", ["yes"], ["no"]) is True
    assert parse_label(0, [1], [0]) is False
    with pytest.raises(ValueError):
        parse_label(2, [1], [0])


def test_fieldspec_rejects_unknown_keys():
    with pytest.raises(Exception, match="respnse"):
        FieldSpec.model_validate({"respnse": "x"})


def test_seeded_sample_is_uniform_reproducible_and_in_file_order(tmp_path):
    f = write(tmp_path / "cases.jsonl", "\n".join(row(i) for i in range(1000)) + "\n")
    a = [c.id for c in iter_cases(spec(loader="jsonl", path=str(f), sample=100, seed=3))]
    b = [c.id for c in iter_cases(spec(loader="jsonl", path=str(f), sample=100, seed=3))]
    c = [c.id for c in iter_cases(spec(loader="jsonl", path=str(f), sample=100, seed=4))]
    assert a == b and a != c and len(a) == 100 == len(set(a))
    positions = [int(x[1:]) for x in a]
    assert positions == sorted(positions)
    assert 300 < sum(positions) / len(positions) < 700  # spread over the file, not its head


def test_halueval_holdout_is_a_stable_split_by_source_text(data_dir):
    from verifybench.loaders.halueval import halueval

    path = data_dir / "halueval/qa_data.json"
    test = list(halueval(path, holdout="test"))
    train_sources = {c.sources[0].text for c in islice(halueval(path, holdout="train"), 4000)}
    assert {c.split for c in test} == {"test"} and 0.25 < len(test) / 20000 < 0.35
    assert not train_sources & {c.sources[0].text for c in test}
    assert [c.id for c in test[:6]] == [c.id for c in islice(halueval(path, holdout="test"), 6)]
    with pytest.raises(DataError, match="holdout must be"):
        list(halueval(path, holdout="dev"))
