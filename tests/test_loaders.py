import json
import tracemalloc
from collections import Counter
from itertools import islice

import pandas as pd
import pytest
from conftest import write
from pydantic import ValidationError

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


@pytest.mark.slow  # writes a 50 MB file
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


def test_parse_label_compares_by_meaning():
    assert parse_label(" Yes ", ["yes"], ["no"]) is True
    assert parse_label(0, [1], [0]) is False
    with pytest.raises(ValueError):
        parse_label(2, [1], [0])


def test_fieldspec_rejects_unknown_keys():
    with pytest.raises(ValidationError, match="respnse"):
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


# --- reading traps (issues 15 and 17) ----------------------------------------------------------------------

BOM = b"\xef\xbb\xbf"


def test_a_byte_order_mark_is_read_as_such_in_jsonl_json_and_csv(tmp_path):
    recs = [{"id": "a", "response": "r1", "sources": ["s"], "label": 1},
            {"id": "b", "response": "r2", "sources": ["s"], "label": 0}]
    files = {
        "jsonl": write(tmp_path / "c.jsonl", BOM + "".join(json.dumps(r) + "\n" for r in recs).encode()),
        "json": write(tmp_path / "c.json", BOM + json.dumps(recs).encode()),
        "csv": write(tmp_path / "c.csv", BOM + b"id,response,sources,label\na,r1,s,1\nb,r2,s,0\n"),
    }
    for loader, f in files.items():
        cases = list(iter_cases(spec(loader=loader, path=str(f))))
        assert [(c.id, c.response, c.label) for c in cases] == [("a", "r1", True), ("b", "r2", False)], loader
        assert "\ufeff" not in cases[0].id and not any("\ufeff" in k for k in cases[0].meta)
    # A BOM anywhere but at the start is still an error with its place.
    f = write(tmp_path / "mid.jsonl", (json.dumps(recs[0]) + "\n").encode() + BOM + json.dumps(recs[1]).encode() + b"\n")
    with pytest.raises(DataError, match=r"mid.jsonl:2: malformed JSON"):
        list(iter_cases(spec(loader="jsonl", path=str(f))))


@pytest.mark.parametrize("value", [1, 1.0, "1", "1.0", True, "true", " TRUE "])
def test_label_spellings_of_one_mean_the_same(value):
    assert parse_label(value, FieldSpec().hallucinated, FieldSpec().faithful) is True
    assert parse_label(value, [1], [0]) is True
    assert parse_label(value, ["1"], ["0"]) is True
    assert parse_label(value, [True], [False]) is True
    assert parse_label(value, ["true"], ["false"]) is True


@pytest.mark.parametrize("value", [0, 0.0, "0", "0.0", False, "false", "no"])
def test_label_spellings_of_zero_mean_faithful(value):
    assert parse_label(value, FieldSpec().hallucinated, FieldSpec().faithful) is False


def test_a_nan_label_is_missing_not_a_value():
    with pytest.raises(ValueError, match="missing"):
        parse_label(float("nan"), [1], [0])
    with pytest.raises(ValueError, match="is in neither"):
        parse_label(2, [1], [0])


def _frame(n=8, **cols):
    df = pd.DataFrame({"id": [f"c{i}" for i in range(n)], "response": [f"answer {i}" for i in range(n)],
                       "sources": [f"doc {i}" for i in range(n)], "label": [i % 2 for i in range(n)]})
    for k, v in cols.items():
        df[k] = v
    return df


@pytest.mark.parametrize("fields", [None, {"hallucinated": [1], "faithful": [0]}, {"hallucinated": ["1"], "faithful": ["0"]}])
def test_int_and_float_label_columns_in_csv_and_parquet(tmp_path, fields):
    want = [bool(i % 2) for i in range(8)]
    for dtype in ("int64", "float64"):
        df = _frame()
        df["label"] = df["label"].astype(dtype)
        df.to_csv(tmp_path / "c.csv", index=False)
        df.to_parquet(tmp_path / "c.parquet")
        for loader in ("csv", "parquet"):
            opts = {"fields": fields} if fields else {}
            cases = list(iter_cases(spec(loader=loader, path=str(tmp_path / f"c.{loader}"), **opts)))
            assert [c.label for c in cases] == want, (dtype, loader)


def test_float_labels_with_a_nan_in_parquet(tmp_path):
    """pandas writes a 0/1 column holding one NaN as floats: the floats work, the NaN is a missing label:
    an unlabeled case, and a bad record where the dataset requires labels."""
    df = _frame(label=[1.0, 0.0, float("nan"), 1.0, 0.0, 1.0, 0.0, 1.0])
    df.to_parquet(tmp_path / "c.parquet")
    every = list(iter_cases(spec(loader="parquet", path=str(tmp_path / "c.parquet"))))
    assert [c.label for c in every] == [True, False, None, True, False, True, False, True]
    errors = []
    cases = list(iter_cases(spec(loader="parquet", path=str(tmp_path / "c.parquet"), on_error="skip",
                                 require_labels=True), errors))
    assert [c.id for c in cases] == ["c0", "c1", "c3", "c4", "c5", "c6", "c7"]
    assert [c.label for c in cases] == [True, False, True, False, True, False, True]
    assert [(e.loc.index, e.field) for e in errors] == [(2, "label")]
    assert "c.parquet[record 2]: field 'label'" in str(errors[0]) and "missing" in str(errors[0])


def test_a_parquet_column_of_the_wrong_type_names_the_column_and_first_bad_row(tmp_path):
    _frame(n=40).assign(response=list(range(40))).to_parquet(tmp_path / "c.parquet")  # an int64 column
    with pytest.raises(DataError) as e:
        list(iter_cases(spec(loader="parquet", path=str(tmp_path / "c.parquet"))))
    msg = str(e.value)
    assert msg.startswith("40 bad records")
    assert "c.parquet[record 0]: field 'response': must be a string, got int (and 39 more records like it)" in msg
    assert len(msg.splitlines()) == 2  # one line for the column, not forty
    assert len(e.value.errors) == 40


def test_list_cells_in_csv_are_lists(tmp_path):
    """What DataFrame.to_csv writes for a list column (a Python repr), or a JSON list, is a list of sources."""
    df = pd.DataFrame({"id": ["a", "b", "c", "d"], "response": ["r"] * 4, "label": [1, 0, 1, 0],
                       "sources": [["It's one", "two"], ['say "hi"'], [], ["x, y"]]})
    df.to_csv(tmp_path / "py.csv", index=False)
    cases = list(iter_cases(spec(loader="csv", path=str(tmp_path / "py.csv"))))
    assert [[s.text for s in c.sources] for c in cases] == [["It's one", "two"], ['say "hi"'], [], ["x, y"]]
    write(tmp_path / "js.csv",
          'id,response,label,sources\na,r,1,"[""one"", ""two""]"\nb,r,0,"[{""id"": ""kb1"", ""text"": ""t""}]"\n')
    cases = list(iter_cases(spec(loader="csv", path=str(tmp_path / "js.csv"))))
    assert [[(s.id, s.text) for s in c.sources] for c in cases] == [[("0", "one"), ("1", "two")], [("kb1", "t")]]
    # Text that merely starts with a bracket is text.
    write(tmp_path / "t.csv", "id,response,label,sources\na,r,1,[citation needed] the plan costs 5\n")
    assert [s.text for s in next(iter_cases(spec(loader="csv", path=str(tmp_path / "t.csv")))).sources] == [
        "[citation needed] the plan costs 5"]


def test_a_list_cell_that_does_not_parse_names_file_line_and_field(tmp_path):
    f = write(tmp_path / "c.csv", "id,response,label,docs\na,r,1,\"['one', 'two']\"\nb,r,0,\"['cut short by a sprea\"\n")
    with pytest.raises(DataError, match=r"c\.csv:3: field 'docs': looks like a list \(\"\['cut short"):
        list(iter_cases(spec(loader="csv", path=str(f), fields={"sources": "docs"})))


def test_list_cells_in_parquet_strings_and_native_lists(tmp_path):
    df = pd.DataFrame({"id": ["a", "b"], "response": ["r", "r"], "label": [1, 0], "sources": ["['x', 'y']", "plain"]})
    df.to_parquet(tmp_path / "s.parquet")
    assert [[s.text for s in c.sources] for c in iter_cases(spec(loader="parquet", path=str(tmp_path / "s.parquet")))] == [
        ["x", "y"], ["plain"]]
    df["sources"] = [["x", "y"], ["z"]]
    df.to_parquet(tmp_path / "l.parquet")
    assert [[s.text for s in c.sources] for c in iter_cases(spec(loader="parquet", path=str(tmp_path / "l.parquet")))] == [
        ["x", "y"], ["z"]]


def test_jsonl_strings_are_never_parsed_as_lists(tmp_path):
    f = write(tmp_path / "c.jsonl", json.dumps({"response": "r", "label": 1, "sources": "['a', 'b']"}) + "\n")
    assert [s.text for s in next(iter_cases(spec(loader="jsonl", path=str(f)))).sources] == ["['a', 'b']"]


@pytest.mark.parametrize("column", ["is_correct", "faithful", "consistent", "supported", "isCorrect", "meta.grounded"])
def test_a_label_column_named_for_the_opposite_needs_an_explicit_choice(column):
    with pytest.raises(ValidationError, match=rf"label column '{column}' sounds like true/1 means the response is right"):
        FieldSpec.model_validate({"label": column})
    flipped = FieldSpec.model_validate({"label": column, "positive": "faithful"})
    assert parse_label(1, flipped.hallucinated, flipped.faithful) is False
    assert parse_label("true", flipped.hallucinated, flipped.faithful) is False
    assert parse_label(0, flipped.hallucinated, flipped.faithful) is True
    assert parse_label("hallucinated", flipped.hallucinated, flipped.faithful) is True  # words keep their meaning
    kept = FieldSpec.model_validate({"label": column, "positive": "hallucinated"})
    assert parse_label(1, kept.hallucinated, kept.faithful) is True
    listed = FieldSpec.model_validate({"label": column, "hallucinated": [0], "faithful": [1]})
    assert parse_label(1.0, listed.hallucinated, listed.faithful) is False


@pytest.mark.parametrize("column", ["label", "is_hallucinated", "not_supported", "inconsistent", "hallucination"])
def test_label_columns_that_point_the_default_way_need_nothing(column):
    FieldSpec.model_validate({"label": column})


def test_the_same_value_on_both_sides_is_refused():
    with pytest.raises(ValidationError, match="both hallucinated and faithful"):
        FieldSpec.model_validate({"hallucinated": [1, "bad"], "faithful": ["1"]})


def test_on_error_raise_reports_every_bad_record(tmp_path):
    lines = [row(i) if i % 3 else json.dumps({"id": f"c{i}", "response": "r", "label": f"x{i}"}) for i in range(90)]
    f = write(tmp_path / "c.jsonl", "\n".join(lines) + "\n")
    with pytest.raises(DataError) as e:
        list(iter_cases(spec(loader="jsonl", path=str(f))))
    msg = str(e.value).splitlines()
    assert msg[0].startswith("30 bad records (set on_error: skip")
    assert msg[1].startswith(f"  {f}:1: field 'label': label value 'x0'")
    assert msg[20].startswith(f"  {f}:58: field 'label': label value 'x57'")
    assert msg[21] == "  ... and 10 more" and len(msg) == 22
    assert [err.loc.line for err in e.value.errors] == list(range(1, 91, 3))


def test_on_error_raise_yields_nothing_after_the_first_bad_record(tmp_path):
    f = write(tmp_path / "c.jsonl", "\n".join([row(0), row(1), "{bad", row(3), "{bad"]) + "\n")
    got = []
    with pytest.raises(DataError, match="2 bad records"):
        for c in iter_cases(spec(loader="jsonl", path=str(f))):
            got.append(c.id)
    assert got == ["c0", "c1"]


# --- loader plugins ---------------------------------------------------------------------------------------

def test_a_loader_by_import_path_with_declared_files(tmp_path):
    from helpers.loaders import write_tickets
    from verifybench.loaders import dataset_files, dataset_hash

    write_tickets(tmp_path / "t", "support", 6)
    billing = write_tickets(tmp_path / "t", "billing", 4)
    s = spec(loader="helpers.loaders:tickets", folder=str(tmp_path / "t"))
    cases = list(iter_cases(s))
    assert len(cases) == 6 and {c.doc_type for c in cases} == {"support"}
    assert [p.name for p in dataset_files(s)] == ["support.jsonl"]
    before = dataset_hash(s)
    billing.write_text(billing.read_text().replace("plan 1", "plan one"))
    assert dataset_hash(s) == before  # a file the loader does not read is not its data
    both = spec(loader="helpers.loaders:tickets", folder=str(tmp_path / "t"), teams=["support", "billing"])
    h = dataset_hash(both)
    billing.write_text(billing.read_text().replace("plan 2", "plan two"))
    assert dataset_hash(both) != h


def test_an_undeclared_plugin_still_hashes_the_folder_it_is_given(tmp_path):
    from helpers.loaders import write_tickets
    from verifybench.loaders import dataset_hash

    f = write_tickets(tmp_path / "a", "support", 5)
    s = spec(loader="helpers.loaders:undeclared", folder=str(tmp_path / "a"))
    h = dataset_hash(s)
    f.write_text(f.read_text().replace("plan 1", "plan one"))
    assert dataset_hash(s) != h
    write_tickets(tmp_path / "b", "support", 5)
    f.write_text(f.read_text().replace("plan one", "plan 1"))
    assert dataset_hash(spec(loader="helpers.loaders:undeclared", folder=str(tmp_path / "b"))) == h  # not where


def test_globbed_data_files_are_hashed(tmp_path):
    from verifybench.loaders import dataset_hash

    for d in ("x", "y"):
        for part in ("p1", "p2"):
            write(tmp_path / d / f"{part}.jsonl", "\n".join(row(i) for i in range(4)) + "\n")
    a = dataset_hash(spec(loader="hf", path="json", data_files=str(tmp_path / "x/*.jsonl")))
    assert a == dataset_hash(spec(loader="hf", path="json", data_files=str(tmp_path / "y/*.jsonl")))
    with open(tmp_path / "x/p2.jsonl", "a") as f:
        f.write(row(9) + "\n")
    assert dataset_hash(spec(loader="hf", path="json", data_files=str(tmp_path / "x/*.jsonl"))) != a
    dict_form = dataset_hash(spec(loader="hf", path="json", data_files={"train": str(tmp_path / "y/*.jsonl")}))
    assert dict_form == dataset_hash(spec(loader="hf", path="json", data_files={"train": [str(tmp_path / "y/p1.jsonl"),
                                                                                          str(tmp_path / "y/p2.jsonl")]}))


def test_the_dataset_hash_covers_the_selection_of_cases(tmp_path, root):
    """A --limit run, or another sample, is not the same data as the whole file: compare, gate and resume
    must be able to tell. A dataset read whole hashes as it did before the selection was covered."""
    from verifybench.loaders import dataset_hash
    from verifybench.suite import load_suite

    f = write(tmp_path / "c.jsonl", "\n".join(row(i) for i in range(20)) + "\n")
    whole = dataset_hash(spec(loader="jsonl", path=str(f)))
    hashes = {whole, dataset_hash(spec(loader="jsonl", path=str(f), limit=10)),
              dataset_hash(spec(loader="jsonl", path=str(f), limit=11)),
              dataset_hash(spec(loader="jsonl", path=str(f), sample=10)),
              dataset_hash(spec(loader="jsonl", path=str(f), sample=10, seed=1))}
    assert len(hashes) == 5
    assert dataset_hash(spec(loader="jsonl", path=str(f), seed=7)) == whole  # a seed without a sample selects nothing
    # The committed demo baseline was recorded over the whole demo set: its hash is unchanged.
    recorded = json.loads((root / "metrics/demo.json").read_text())["dataset_hash"]
    assert dataset_hash(load_suite(root / "evals/demo.yaml").dataset) == recorded
    assert dataset_hash(load_suite(root / "evals/demo.yaml", limit=100).dataset) != recorded


def test_an_unknown_loader_path_is_a_suite_error():
    from verifybench.errors import SuiteError

    with pytest.raises(SuiteError, match="loader 'helpers.nowhere:tickets' cannot be imported"):
        list(iter_cases(spec(loader="helpers.nowhere:tickets")))
    with pytest.raises(SuiteError, match="unknown loader 'nope'.*jsonl"):
        list(iter_cases(spec(loader="nope")))


def test_the_injection_suite_hashes_the_two_benchmarks_it_reads_not_the_whole_shared_folder(data_dir):
    from verifybench.loaders import dataset_files

    files = dataset_files(spec(loader="injection-sets", path=str(data_dir)))
    assert files and {p.relative_to(data_dir).parts[0] for p in files} == {"bipia", "tensortrust"}
