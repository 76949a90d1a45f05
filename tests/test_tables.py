"""The columnar readers of a run directory (`rundir.read_case_frame`, `read_verdict_frame`) against the
row readers they replace in the metrics path (`read_case_index`, `read_verdicts`): the same cases and
verdicts, the same errors with the same file:line, the same metrics, run checks, hashes and report picks,
on real runs with error verdicts, units, usage, duplicates, blank and truncated lines, across blocks."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import write

from verifybench import api, rundir
from verifybench.gating.gate import cases_hash
from verifybench.metrics import Settings, compute_metrics, frame
from verifybench.reporting import worst_cases, worst_rows
from verifybench.rundir import (
    RunDirError,
    read_case_frame,
    read_case_index,
    read_cases_at,
    read_verdict_frame,
    read_verdicts,
    read_verdicts_at,
)
from verifybench.rundir.requirements import require_complete, require_one_verdict_each
from verifybench.suite import parse_suite
from verifybench.tables import case_table, verdict_table

VERIFIERS = ["rouge", {"helpers.verifiers:FailEvery": {"id": "flaky", "every": 4}},
             "helpers.verifiers:LengthProbability", "helpers.verifiers:Chatty"]
META = ["tier", "flag", "kind"]


def cases(n: int = 80) -> list[dict]:
    """Cases whose meta values take every shape a slice name is made from: ints, floats, strings, bools,
    None, a missing key, a nested value; groups as ints, strings, missing (and one None)."""
    rows = []
    for i in range(n):
        meta = {"tier": [1, 2.5, "gold", None, True][i % 5], "kind": ["a", "b"][i % 2]}
        if i % 7:
            meta["flag"] = i % 3 == 0
        if i % 11 == 3:
            meta["kind"] = {"nested": i % 2}
        if i % 9:
            meta["group"] = i // 2 if i < 50 else f"g{i // 4}"
        if i == 61:
            meta["group"] = None
        rows.append({"id": f"case-{i:03d}", "response": "the answer is " + "quite " * (i % 6) + str(i),
                     "sources": [f"the answer is {i % 4}"], "label": int(i % 3 == 1),
                     "doc_type": ["qa", "summary", "dialogue"][i % 3],
                     "split": [None, "test", "dev"][i % 3] if i < 70 else None, **meta})
    return rows


def make_run(tmp_path: Path, rows: list[dict] | None = None, verifiers=VERIFIERS) -> Path:
    data = write(tmp_path / "cases.jsonl", "".join(json.dumps(r) + "\n" for r in rows or cases()))
    suite = parse_suite({"name": "cols", "dataset": {"loader": "jsonl", "path": str(data),
                                                     "fields": {"doc_type": "doc_type", "split": "split"}},
                         "verifiers": verifiers, "batch_size": 8}, tmp_path, where=str(tmp_path / "cols.yaml"))
    run_dir = tmp_path / "run"
    api.run(suite, out=run_dir, progress=False)
    return run_dir


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    return make_run(tmp_path_factory.mktemp("cols"))


@pytest.fixture(params=[rundir.BLOCK, 300], ids=["one-block", "many-blocks"])
def blocks(request, monkeypatch):
    """Read whole files at once, and in blocks of 300 bytes (shorter than some lines)."""
    monkeypatch.setattr(rundir, "BLOCK", request.param)
    return request.param


def same(a: pd.DataFrame, b: pd.DataFrame) -> None:
    pd.testing.assert_frame_equal(a.drop(columns=["offset"], errors="ignore"),
                                  b.drop(columns=["offset"], errors="ignore"))
    assert a.attrs == b.attrs


def test_the_run_has_what_the_readers_must_handle(run):
    lines = [json.loads(x) for x in (run / "results.jsonl").read_text().splitlines()]
    assert any(v.get("error") for v in lines) and any(v.get("units") for v in lines)
    assert any(v.get("units") == [] for v in lines) and any(v.get("usage") for v in lines)
    assert any("flipped" in v.get("detail", {}) for v in lines) and any("injected_flip" in v.get("detail", {}) for v in lines)


def test_verdict_table_equals_the_verdicts(run, blocks):
    table = read_verdict_frame(run)
    same(table, verdict_table(read_verdicts(run)))
    assert len(table) == 4 * 80 and table["error"].notna().sum() == 20
    assert table["units"].isna().any() and (table["units"] > 0).any()
    assert table["usage"].notna().sum() == 80 and table["flipped"].notna().any()
    # Offsets read the full verdicts back, units and all.
    assert read_verdicts_at(run, table["offset"]) == read_verdicts(run)


def test_case_table_equals_the_case_index(run, blocks):
    table = read_case_frame(run, meta=META)
    same(table, case_table(read_case_index(run), meta=META))
    assert table.attrs["meta_keys"] == ["flag", "group", "kind", "tier"]
    assert sorted(table["meta.tier"].unique()) == ["1", "2.5", "None", "True", "gold"]
    assert "none" in set(table["meta.flag"]) and "{'nested': 1}" in set(table["meta.kind"])
    assert read_cases_at(run, table["offset"]) == read_case_index(run)


@pytest.mark.parametrize("by, breakdown", [("doc_type", ["meta.flag"]), ("meta.tier", ["meta.kind"]), ("split", [])])
def test_metrics_from_tables_equal_metrics_from_rows(run, blocks, by, breakdown):
    s = Settings(by=by, breakdown=breakdown, n_boot=50)
    rows, verdicts = read_case_index(run), read_verdicts(run)
    ct, vt = read_case_frame(run, meta=META), read_verdict_frame(run)
    same(frame(ct, vt, by, 0, 0.5, breakdown).drop(columns=["offset"]),
         frame(rows, verdicts, by, 0, 0.5, breakdown))
    assert compute_metrics(ct, vt, s) == compute_metrics(rows, verdicts, s)


def test_groups_of_mixed_types_across_blocks_keep_their_meaning(tmp_path, monkeypatch):
    # Ints in the first blocks, strings later, a case without a group, "1" and 1 apart, 1 and True together.
    rows = [{"id": f"c{i}", "dataset": "d", "doc_type": "qa", "split": None, "label": i % 2 == 0,
             "meta": {"group": [0, 0, 1, "1", "1", True, 2][i]} if i != 6 else {}} for i in range(7)]
    write(tmp_path / "cases.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    monkeypatch.setattr(rundir, "BLOCK", 200)
    codes = pd.factorize(read_case_frame(tmp_path)["group"])[0].tolist()
    assert codes == [0, 0, 1, 2, 2, 1, 3] == pd.factorize(case_table(rows)["group"])[0].tolist()


def append(path: Path, text: str | bytes) -> None:
    with open(path, "ab") as f:
        f.write(text.encode() if isinstance(text, str) else text)


def test_blank_lines_a_coerced_score_and_a_truncated_tail_read_alike(run, tmp_path, blocks):
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(run, copy)
    results = copy / "results.jsonl"
    lines = results.read_bytes().splitlines(keepends=True)
    # A numeric string (pydantic reads it as a number; Arrow refuses it: that block is read line by line),
    # flags that are numbers, blank lines, and a last line cut short by a killed writer.
    lines[5] = lines[5].replace(b'"score":', b'"score":"0.25","was":', 1)
    assert b'"detail":{}' in lines[9]
    lines[9] = b"\n   \n" + lines[9].replace(b'"detail":{}', b'"detail":{"flipped":1}', 1)
    results.write_bytes(b"".join(lines) + b'{"case_id": "case-001", "verifier": "rou')
    table = read_verdict_frame(copy)
    same(table, verdict_table(read_verdicts(copy)))
    assert table["score"].iloc[5] == 0.25 and bool(table["flipped"].iloc[9]) is True
    cases_file = copy / "cases.jsonl"
    append(cases_file, "\n" + cases_file.read_text().splitlines()[0][:30])
    same(read_case_frame(copy, meta=META), case_table(read_case_index(copy), meta=META))


@pytest.mark.parametrize("line, field", [
    ('{"case_id": "case-001", "verifier": "rouge", "score": "high"}\n', "score"),
    ('{"case_id": "case-001", "score": 0.5}\n', "verifier"),
    ('{"case_id": "case-001", "verifier": "rouge", "latency_kind": "someday"}\n', "latency_kind"),
    ('{"case_id": "case-001", "verifier": "rouge", "usage": {"tokens": "many"}}\n', "usage.tokens"),
    ('{"case_id": "case-001", "verifier": "rouge", "units": [{"score": 1}]}\n', "units.0.text"),
    ('{"case_id": "case-001", "verifier": \n', None),
])
def test_a_bad_verdict_line_is_named_as_the_row_reader_names_it(run, tmp_path, blocks, line, field):
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(run, copy)
    n = len((copy / "results.jsonl").read_bytes().splitlines())
    append(copy / "results.jsonl", line + '{"case_id": "case-002", "verifier": "rouge", "score": 0.5}\n')
    with pytest.raises(RunDirError) as rows:
        read_verdicts(copy)
    with pytest.raises(RunDirError) as table:
        read_verdict_frame(copy)
    assert str(table.value) == str(rows.value)
    assert f"results.jsonl:{n + 1}: not a verdict" in str(table.value)
    if field:
        assert f"field {field!r}" in str(table.value)


def test_a_bad_case_index_line_names_the_file_and_line(run, tmp_path, blocks):
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(run, copy)
    append(copy / "cases.jsonl", '{"id": "x", "label": tru}\n')
    with pytest.raises(RunDirError, match=r"cases.jsonl:81: not a case index row"):
        read_case_frame(copy)


def _message(fn, *args) -> str:
    with pytest.raises(RunDirError) as e:
        fn(*args)
    return str(e.value)


def test_run_checks_on_tables_say_what_they_said_on_rows(run, tmp_path, blocks):
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(run, copy)
    lines = (copy / "results.jsonl").read_text().splitlines(keepends=True)
    manifest = json.loads((copy / "manifest.json").read_text())
    ct, vt = read_case_frame(copy), read_verdict_frame(copy)
    require_one_verdict_each(copy, ct, vt)  # a good run passes
    require_complete(copy, manifest, ct, vt, "a gate")
    # Duplicates: pairs written twice and three times, for two verifiers, interleaved with new verdicts.
    append(copy / "results.jsonl", "".join([lines[7], lines[90], lines[7], lines[3], lines[200]]))
    msg = _message(require_one_verdict_each, copy, read_case_frame(copy), read_verdict_frame(copy))
    assert msg == _message(require_one_verdict_each, copy, read_case_index(copy), read_verdicts(copy))
    assert "5 duplicated verdict(s) for 4 (verifier, case) pair(s)" in msg and "x3" in msg
    # Verdicts for cases the index does not hold.
    (copy / "results.jsonl").write_text("".join(lines) + lines[1].replace("case-", "gone-") + lines[2].replace("case-", "gone-"))
    msg = _message(require_one_verdict_each, copy, read_case_frame(copy), read_verdict_frame(copy))
    assert msg == _message(require_one_verdict_each, copy, read_case_index(copy), read_verdicts(copy))
    assert "2 verdict(s) for cases that are not in the run's case index" in msg
    # A verifier missing verdicts.
    (copy / "results.jsonl").write_text("".join(lines[:-5]))
    msg = _message(require_complete, copy, manifest, read_case_frame(copy), read_verdict_frame(copy), "a gate")
    assert msg == _message(require_complete, copy, manifest, read_case_index(copy), read_verdicts(copy), "a gate")
    assert "has no verdict for 5 of 80 cases" in msg


def test_cases_hash_of_the_table_equals_the_hash_of_the_rows(run):
    table, rows = read_case_frame(run), read_case_index(run)
    assert cases_hash(table) == cases_hash(rows)
    flipped = table.copy()
    flipped.loc[3, "label"] = not flipped.loc[3, "label"]
    assert cases_hash(flipped) != cases_hash(rows)


@pytest.mark.parametrize("threshold", [None, 0.3])
def test_worst_rows_pick_the_cases_worst_cases_picks(run, threshold):
    rows, verdicts = read_case_index(run), read_verdicts(run)
    f = frame(read_case_frame(run), read_verdict_frame(run))
    for vid in f["verifier"].cat.categories:
        picks = worst_rows(f, vid, threshold)
        want = worst_cases(rows, verdicts, vid, threshold)
        assert [k for k, _ in picks] == [w["kind"] for w in want] and picks
        assert read_verdicts_at(run, f["offset"].to_numpy()[[i for _, i in picks]]) == [w["verdict"] for w in want]


def test_the_metrics_frame_holds_no_python_object_per_row(run):
    """What makes the tables small: no Python object per row in the columns the metrics read."""
    f = frame(read_case_frame(run, meta=META), read_verdict_frame(run), "meta.tier", breakdown=["meta.kind"])
    objects = [c for c in f.columns if f[c].dtype == object]
    assert objects == ["usage", "repeats"]  # None but for the few verdicts that report usage, or were repeated
    assert f["repeats"].isna().all()
    for c in ("verifier", "slice", "role", "doc_type", "dataset", "latency_kind", "bd:meta.kind"):
        assert isinstance(f[c].dtype, pd.CategoricalDtype), c
    assert np.issubdtype(f["case_row"].dtype, np.integer)


def test_the_committed_demo_baseline_is_reproduced(tmp_path, root):
    """metrics/demo.json was recorded by the row-based metrics path: a fresh run of the demo's rouge and
    bleu (deterministic, unlike a model's float noise) read through the tables gives the same thresholds,
    quality figures, counts and per-case test scores, to the last digit (timings aside)."""
    import yaml

    from verifybench.suite import parse_suite as parse

    raw = yaml.safe_load((root / "evals/demo.yaml").read_text())
    raw["verifiers"] = ["rouge", "bleu"]
    suite = parse(raw, root / "evals", where=str(root / "evals/demo.yaml"))
    api.run(suite, out=tmp_path / "run", progress=False)
    got = json.loads(api.baseline(tmp_path / "run", out=tmp_path / "demo.json").read_text())
    want = json.loads((root / "metrics/demo.json").read_text())
    timing = {"p50_ms", "p95_ms", "p99_ms", "warmup_ms"}
    assert got["cases_hash"] == want["cases_hash"] and got["test_slices"] == want["test_slices"]
    for vid in ("rouge", "bleu"):
        g, w = got["verifiers"][vid], want["verifiers"][vid]
        assert g["test_scores"] == w["test_scores"]
        assert list(g["slices"]) == list(w["slices"])
        for key, row in w["slices"].items():
            assert {k: v for k, v in g["slices"][key].items() if k not in timing} == \
                {k: v for k, v in row.items() if k not in timing}, (vid, key)
