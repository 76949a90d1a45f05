"""The run directory's file primitives: what a killed writer leaves behind is read, repaired and replaced
as the run directory's guarantees say (docs/run-directory.md)."""

import json

import pytest

from verifybench.cases import Verdict
from verifybench.rundir import (
    JsonlAppender,
    RunDirError,
    iter_jsonl,
    iter_lines,
    read_json,
    repair_tail,
    write_json,
    write_jsonl,
)


def test_a_line_cut_short_is_not_read_and_repair_cuts_exactly_it(tmp_path):
    path = tmp_path / "results.jsonl"
    with JsonlAppender(path) as out:
        out.write([{"a": 1}, Verdict(case_id="c1", verifier="v", score=0.25)])
    whole = path.read_bytes()
    path.write_bytes(whole + b'{"a": 3, "cut')  # a writer killed mid-line
    rows = [json.loads(r) for r in iter_lines(path)]
    assert rows[0] == {"a": 1} and (rows[1]["case_id"], rows[1]["score"]) == ("c1", 0.25) and len(rows) == 2
    assert repair_tail(path) == len(b'{"a": 3, "cut')
    assert path.read_bytes() == whole and repair_tail(path) == 0


def test_repair_of_a_file_with_no_complete_line_empties_it(tmp_path):
    path = tmp_path / "x.jsonl"
    path.write_bytes(b'{"half')
    assert repair_tail(path) == 6 and path.read_bytes() == b""
    assert repair_tail(tmp_path / "missing.jsonl") == 0


def test_blank_lines_are_skipped_and_a_missing_file_reads_as_empty(tmp_path):
    path = tmp_path / "x.jsonl"
    path.write_text('{"a": 1}\n\n   \n{"a": 2}\n', encoding="utf-8")
    assert [r["a"] for r in iter_jsonl(path)] == [1, 2]
    assert list(iter_jsonl(tmp_path / "none.jsonl")) == []


def test_whole_files_are_replaced_not_left_half_written(tmp_path):
    write_json(tmp_path / "m.json", {"x": [1, 2], "text": "привет"})
    write_jsonl(tmp_path / "c.jsonl", [{"i": i} for i in range(3)])
    assert read_json(tmp_path / "m.json") == {"x": [1, 2], "text": "привет"}
    assert [r["i"] for r in iter_jsonl(tmp_path / "c.jsonl")] == [0, 1, 2]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.jsonl", "m.json"]  # no temporary file left


def test_reading_a_folder_that_is_not_a_run_names_it(tmp_path):
    with pytest.raises(RunDirError, match=rf"{tmp_path.name}/manifest.json: not found; is .* a verifybench run"):
        read_json(tmp_path / "manifest.json")


def test_case_meta_that_pyarrow_cannot_join_is_read_line_by_line(tmp_path):
    # Found by tests/test_reliability_property.py: a meta key holding a list of nulls in one case and
    # null in the next made pyarrow's combine_chunks raise ArrowIndexError, which ended the run.
    from verifybench.rundir.files import read_case_frame

    def line(case_id: str, label: str, meta: str, response: str) -> str:
        return (f'{{"id":"{case_id}","dataset":"cases","doc_type":"default","split":null,"label":{label},'
                f'"meta":{meta},"question":null,"response":"{response}"}}')

    lines = [line("#0", "false", '{"n":0,"extra":null,"question":[null,null]}', ""),
             line("ok0", "false", '{"n":null,"extra":null,"question":null}', "a fine answer"),
             line("ok1", "true", '{"n":null,"extra":null,"question":null}', "a fine answer")]
    (tmp_path / "cases.jsonl").write_text("\n".join(lines) + "\n")
    frame = read_case_frame(tmp_path, meta=["question"])
    assert list(frame["id"]) == ["#0", "ok0", "ok1"]
    assert list(frame["label"]) == [False, False, True]
