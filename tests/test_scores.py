"""The `scores` verifier: precomputed scores from a case field or a predictions file, measured like any
other verifier. The round trip runs two built-in verifiers on real HaluEval data, exports their verdicts
to CSV, re-imports them, and gets the same metrics and the same paired comparison."""

import csv
import json
import pickle
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import write

from verifybench import api
from verifybench.cases import Case, Source
from verifybench.errors import Location, SuiteError
from verifybench.rundir import iter_jsonl
from verifybench.suite import parse_suite
from verifybench.verifiers import available, build


def case(cid, label=False, **meta):
    return Case(id=cid, dataset="t", response="r", label=label, sources=[Source(id="s", text="s")], meta=meta)


def write_csv(path: Path, rows, header=("case_id", "score")) -> Path:
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)
    return path


def test_listed_with_the_builtin_verifiers():
    from typer.testing import CliRunner

    from verifybench.cli import app

    assert available()["scores"] == "verifybench.verifiers.scores:ScoresVerifier"
    assert available()["nli"] == "verifybench.verifiers.nli:NLIVerifier"
    out = CliRunner().invoke(app, ["components"], env={"COLUMNS": "200"}).output
    assert "│ nli " in out and "any NLI / consistency model" in out
    assert "│ scores " in out and "precomputed scores from a case field" in out


def test_field_scores_are_scaled_inverted_and_missing_ones_are_error_verdicts():
    v = build("scores", id="vendor", field="meta.vendor_score", higher_means="faithful", scale=100)
    bad = case("bad", vendor_score="high").at(Location("cases.jsonl", 2, 3))
    out = v.verify([case("a", vendor_score=80), case("b", vendor_score="25.5"), case("none"), bad,
                    case("over", vendor_score=140)])
    assert [o.case_id for o in out] == ["a", "b", "none", "bad", "over"]
    assert out[0].score == pytest.approx(0.2) and out[1].score == pytest.approx(0.745)
    assert out[2].score is None and out[2].error == "no score: the case has no field 'meta.vendor_score'"
    assert out[3].error == "field 'meta.vendor_score' of the case at cases.jsonl:3: 'high' is not a number"
    assert "140 is outside 0..100 (scale)" in out[4].error


def test_a_field_that_no_case_can_have_is_a_suite_error():
    with pytest.raises(SuiteError, match="a case has no field 'metadata'; case fields: id, dataset"):
        build("scores", field="metadata.score")
    with pytest.raises(SuiteError, match="exactly one of `field`"):
        build("scores", field="meta.x", file="p.csv")
    with pytest.raises(SuiteError, match="option 'file': no such file"):
        build("scores", file="/nonexistent/preds.csv")


PREDS = [("a", 0.9), ("b", 0.1), ("c", 0.55), ("d", 1)]


@pytest.mark.parametrize("fmt", ["csv", "tsv", "jsonl", "parquet"])
def test_every_file_format_gives_the_same_scores(tmp_path, fmt):
    path = tmp_path / f"preds.{fmt}"
    if fmt == "csv":
        write_csv(path, PREDS)
    elif fmt == "tsv":
        write(path, "case_id\tscore\n" + "".join(f"{i}\t{s}\n" for i, s in PREDS))
    elif fmt == "jsonl":
        write(path, "".join(json.dumps({"case_id": i, "score": s}) + "\n\n" for i, s in PREDS))
    else:
        pq.write_table(pa.table({"case_id": [i for i, _ in PREDS], "score": [float(s) for _, s in PREDS]}), path)
    v = build("scores", file=str(path), key="case_id")
    out = v.verify([case(i) for i, _ in PREDS] + [case("zzz")])
    assert [o.score for o in out[:4]] == [0.9, 0.1, 0.55, 1.0]
    assert out[4].error == f"no score: preds.{fmt} has no row with case_id = 'zzz'"
    # A worker reads the file itself: the table does not travel through pickle.
    clone = pickle.loads(pickle.dumps(v))
    assert clone._table is None and [o.score for o in clone.verify([case("c")])] == [0.55]


def test_bad_values_name_file_and_line_and_spare_the_other_cases(tmp_path):
    # A quoted newline in a comment column moves every later record one line down.
    path = write(tmp_path / "preds.csv", 'case_id,score,comment\n'
                                         'a,0.2,fine\n'
                                         'b,0.7,"two\nlines"\n'
                                         'c,abc,typo\n'
                                         'd,,empty\n'
                                         'e,0.3,once\n'
                                         'e,0.8,twice\n'
                                         'f,0.4,\n'
                                         'f,0.4,same value twice is fine\n')
    v = build("scores", file=str(path), key="case_id")
    out = {o.case_id: o for o in v.verify([case(x) for x in "abcdef"])}
    assert out["a"].score == 0.2 and out["b"].score == 0.7 and out["f"].score == 0.4
    assert out["c"].error == "preds.csv:5: column 'score': 'abc' is not a number"
    assert out["d"].error == "no score: preds.csv:6: column 'score' is empty"
    assert out["e"].error == "case id 'e' has 2 rows with different values (preds.csv:7 and preds.csv:8)"
    j = write(tmp_path / "preds.jsonl", '{"id": "a", "score": 0.5}\n\n{"id": "b", "score": "n/a?"}\n')
    assert build("scores", file=str(j)).verify([case("b")])[0].error == \
        "preds.jsonl:3: column 'score': 'n/a?' is not a number"


def test_unreadable_files_are_suite_errors_naming_the_file(tmp_path):
    write_csv(tmp_path / "p.csv", PREDS)
    with pytest.raises(SuiteError, match=r"p.csv: no column 'prob'; the file has: case_id, score"):
        build("scores", file=str(tmp_path / "p.csv"), key="case_id", column="prob")
    write(tmp_path / "p.jsonl", '{"id": "a", "score": 1}\n{"id": "b", "score": 2\n')
    with pytest.raises(SuiteError, match=r"p.jsonl:2: not a JSON object"):
        build("scores", file=str(tmp_path / "p.jsonl"))
    write(tmp_path / "p.txt", "id,score\n")
    with pytest.raises(SuiteError, match="p.txt: unknown format; set `format:`"):
        build("scores", file=str(tmp_path / "p.txt"))
    assert build("scores", file=str(tmp_path / "p.txt"), format="csv").verify([case("a")])[0].error


def test_config_hash_follows_the_file_content(tmp_path):
    path = write_csv(tmp_path / "p.csv", PREDS)
    before = build("scores", file=str(path), key="case_id").config_hash
    write_csv(path, [("a", 0.1)])
    assert build("scores", file=str(path), key="case_id").config_hash != before


def small_suite(tmp_path: Path, verifiers, n: int = 80):
    """n cases, half hallucinated, each with a known split so the metrics fit a threshold."""
    rows = [json.dumps({"id": f"c{i}", "response": f"the answer is {i}", "sources": [f"the answer is {i % 3}"],
                        "label": i % 2, "split": "test" if i % 4 >= 2 else "calibration",
                        "vendor": 100 - (i % 2) * 70 - (i % 5)}) for i in range(n)]
    data = write(tmp_path / "cases.jsonl", "\n".join(rows) + "\n")
    raw = {"name": "small", "dataset": {"loader": "jsonl", "path": str(data), "fields": {"split": "split"}},
           "verifiers": list(verifiers), "metrics": {"thresholds": {"min_per_class": 5}}}
    return parse_suite(raw, tmp_path, where=str(tmp_path / "small.yaml"))


def test_a_binary_decision_has_one_operating_point_and_the_report_says_so(tmp_path):
    # The vendor flags every other hallucinated case and one faithful case in ten.
    rows = [(f"c{i}", int((i % 2 == 1 and i % 4 == 1) or i % 20 == 0)) for i in range(80)]
    preds = write_csv(tmp_path / "decisions.csv", rows + [("other-1", 0), ("other-2", 1)])
    suite = small_suite(tmp_path, ["rouge", {"scores": {"id": "flagger", "file": str(preds), "key": "case_id",
                                                         "binary": True}}])
    api.run(suite, out=tmp_path / "run", progress=False)
    manifest = json.loads((tmp_path / "run/manifest.json").read_text())
    assert {v["id"]: v["binary"] for v in manifest["verifiers"]} == {"rouge": False, "flagger": True}
    m = json.loads((tmp_path / "run/metrics.json").read_text())["verifiers"]["flagger"]
    o = m["overall"]
    assert m["binary"] is True and o["threshold"]["value"] == 1.0
    assert o["threshold"]["source"] == "the verifier's own 0/1 decision (binary)"
    assert o["curve"]["threshold"] == [1.0] and len(o["curve"]["tp"]) == 1
    # One operating point: the AUROC is the balanced accuracy of the decision.
    tp, fp = o["curve"]["tp"][0], o["curve"]["fp"][0]
    assert o["auroc"] == pytest.approx((tp / o["curve"]["n_pos"] + 1 - fp / o["curve"]["n_neg"]) / 2)
    html = (tmp_path / "run/report.html").read_text()
    assert "Binary decision: this verifier" in html and "(0/1)" in html
    # Ids of another data set are reported, with how many and examples.
    assert m["notes"] == ["2 of 82 ids in decisions.csv match no case of this run (e.g. 'other-1', 'other-2'); "
                          "check `key` ('case_id') and that the file is for this data set"]
    assert "flagger: 2 of 82 ids in decisions.csv match no case" in html
    with pytest.raises(SuiteError):
        build("scores", file=str(preds), key="case_id", binary=True, scale=0)
    half = write_csv(tmp_path / "half.csv", [("c0", 0.5)])
    assert build("scores", file=str(half), key="case_id", binary=True).verify([case("c0")])[0].error == \
        "half.csv:2: 0.5 is not a 0/1 decision (binary: true)"


def test_field_scores_in_a_run_with_logged_latency_and_probabilities(tmp_path):
    preds = write_csv(tmp_path / "p.csv", [(f"c{i}", (i % 2) * 0.8 + 0.1, 12.5 + i, 0.002) for i in range(80)],
                      header=("case_id", "p", "ms", "usd"))
    suite = small_suite(tmp_path, [{"scores": {"id": "vendor", "field": "meta.vendor", "higher_means": "faithful",
                                               "scale": 100}},
                                   {"scores": {"id": "logged", "file": str(preds), "key": "case_id", "column": "p",
                                               "probabilistic": True, "latency_column": "ms",
                                               "cost_column": "usd"}}])
    result = api.run(suite, out=tmp_path / "run", progress=False)
    assert result.n_error_verdicts == 0
    rows = {(r["verifier"], r["case_id"]): r for r in iter_jsonl(tmp_path / "run/results.jsonl")}
    assert rows[("vendor", "c1")]["score"] == pytest.approx(1 - 29 / 100)
    assert rows[("logged", "c3")]["latency_ms"] == 15.5 and rows[("logged", "c3")]["cost_usd"] == 0.002
    m = json.loads((tmp_path / "run/metrics.json").read_text())["verifiers"]
    assert m["vendor"]["overall"]["auroc"] == 1.0 and m["logged"]["probabilistic"] is True
    assert "calibration_error" in m["logged"]["overall"] and "calibration_error" not in m["vendor"]["overall"]
    # The logged latencies (12.5-91.5 ms), not the microseconds a file look-up takes.
    assert 12.5 <= m["logged"]["overall"]["latency_ms"]["p50"] <= 91.5
    assert m["logged"]["overall"]["cost_per_1k"] == pytest.approx(2.0)


def test_real_verdicts_exported_and_reimported_give_identical_metrics_and_comparisons(tmp_path, data_dir):
    """rouge and bleu on 600 real HaluEval QA cases; their scores exported to CSV (as a vendor would log
    them) and re-imported as two `scores` verifiers with the same ids: every number must be equal."""
    dataset = {"loader": "halueval", "path": str(data_dir / "halueval/qa_data.json"), "limit": 600}
    first = parse_suite({"name": "roundtrip", "dataset": dataset, "verifiers": ["rouge", "bleu"]}, tmp_path,
                        where=str(tmp_path / "a.yaml"))
    api.run(first, out=tmp_path / "a", progress=False)
    scores: dict[str, dict[str, float]] = {}
    for r in iter_jsonl(tmp_path / "a/results.jsonl"):
        scores.setdefault(r["case_id"], {})[r["verifier"]] = r["score"]
    with open(tmp_path / "preds.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["case_id", "rouge", "bleu"])
        w.writerows([cid, repr(s["rouge"]), repr(s["bleu"])] for cid, s in scores.items())
    second = parse_suite({"name": "roundtrip", "dataset": dataset, "verifiers": [
        {"scores": {"id": vid, "file": "./preds.csv", "key": "case_id", "column": vid}} for vid in ("rouge", "bleu")]},
        tmp_path, where=str(tmp_path / "b.yaml"))
    api.run(second, out=tmp_path / "b", progress=False)
    ma, mb = (json.loads((tmp_path / f"{r}/metrics.json").read_text())["verifiers"] for r in ("a", "b"))
    assert len(scores) == 600
    for vid in ("rouge", "bleu"):
        a, b = ma[vid]["overall"], mb[vid]["overall"]
        assert a["n_scored"] == b["n_scored"] == 600
        assert b["auroc"] == a["auroc"] and b["auprc"] == a["auprc"] and b["ci"] == a["ci"]
        assert b["threshold"] == a["threshold"] and a["threshold"]["value"] is not None
        assert b["test"] == a["test"] and b["calibration_split"] == a["calibration_split"]
        assert b["curve"] == a["curve"]
        assert {k: s["test"] for k, s in mb[vid]["slices"].items()} == {k: s["test"] for k, s in ma[vid]["slices"].items()}
    ca, cb = api.compare(tmp_path / "a"), api.compare(tmp_path / "b")
    assert ca == cb and ca[0]["cases"] > 0 and "mcnemar" in ca[0]
    # Across the two runs (same data, same ids), each verifier against its re-import: no difference at all.
    [same] = api.compare(tmp_path / "a", tmp_path / "b", ["rouge"])
    assert same["metrics"]["auroc"]["diff"] == 0 and same["mcnemar"]["a_only_right"] == same["mcnemar"]["b_only_right"] == 0
