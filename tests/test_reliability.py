"""Reliability defects found by probing the run machinery as an attacker would (issue 27): one record must
not take down a run, no secret reaches an artifact, every recovery path ends where the docs say, untrusted
input gets a message instead of a traceback. Real processes for kills and races, a real HTTP server on
127.0.0.1 for the key, a real MLflow store."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from conftest import write

from verifybench import api
from verifybench.errors import DataError
from verifybench.loaders import DatasetSpec, iter_cases
from verifybench.rundir import iter_jsonl, read_case_frame


def rows(n: int = 12, **extra) -> list[dict]:
    return [{"id": f"c{i}", "response": f"the answer is {i}", "sources": [f"the answer is {i % 3}"],
             "label": i % 2, **extra} for i in range(n)]


def jsonl_text(records: list[dict | str]) -> str:
    return "\n".join(r if isinstance(r, str) else json.dumps(r) for r in records) + "\n"


def suite_file(tmp_path: Path, data: Path, loader: str = "jsonl", verifiers=("rouge",), **dataset) -> Path:
    block = json.dumps({"loader": loader, "path": str(data), **dataset})
    return write(tmp_path / "s.yaml", f"name: s\ndataset: {block}\nverifiers: {json.dumps(list(verifiers))}\nbatch_size: 4\n")


# --- one record must not take down a run ----------------------------------------------------------------

LONE = '"lone \\ud800 surrogate"'  # as a JSON file holds it: an escape of half a UTF-16 pair


@pytest.mark.parametrize("where", ["response", "id"])
def test_a_lone_surrogate_in_jsonl_is_a_bad_record_named_by_line(tmp_path, where):
    good = [json.dumps(r) for r in rows()]
    bad = good[4].replace('"the answer is 4"', LONE) if where == "response" else good[4].replace('"c4"', LONE)
    data = write(tmp_path / "d.jsonl", "\n".join([*good[:4], bad, *good[5:]]) + "\n")
    run = api.run(suite_file(tmp_path, data, on_error="skip"), out=tmp_path / "run", progress=False)
    assert run.n_cases == 11 and run.load_errors == 1
    (err,) = [e for e in iter_jsonl(tmp_path / "run/errors.jsonl") if e["kind"] == "input"]
    assert err["line"] == 5 and err["file"].endswith("d.jsonl") and "surrogate" in err["message"]
    assert err["field"] == where
    # on_error: raise stops with the record named, not a serialisation traceback.
    with pytest.raises(DataError, match=r"d\.jsonl:5: field '(response|id)': text with a lone UTF-16 surrogate"):
        api.run(suite_file(tmp_path, data), out=tmp_path / "run2", progress=False)


def test_a_lone_surrogate_in_a_dataframe_is_a_bad_record_named_by_row(tmp_path):
    import pandas as pd

    records = rows()
    records[3]["response"] = "lone \ud800 surrogate"
    records[7]["id"] = "c\udfff"
    df = pd.DataFrame(records, dtype=object)  # object columns: pandas' arrow strings refuse such text
    run = api.run(cases=df, verifiers=["rouge"], out=tmp_path / "run", on_error="skip", progress=False)
    assert run.n_cases == 10
    errs = [e for e in iter_jsonl(tmp_path / "run/errors.jsonl") if e["kind"] == "input"]
    assert [(e["file"], e["index"], e["field"]) for e in errs] == [("DataFrame", 3, "response"), ("DataFrame", 7, "id")]


def test_a_lone_surrogate_in_a_csv_list_cell_is_a_bad_record(tmp_path):
    data = write(tmp_path / "d.csv", 'id,response,sources,label\na,"x","[""fine""]",1\nb,"y","[""\\ud800""]",0\n'
                                     'c,"z","[""ok""]",0\n')
    errors: list = []
    got = [c.id for c in iter_cases(DatasetSpec(loader="csv", path=str(data), on_error="skip"), errors)]
    assert got == ["a", "c"]
    assert len(errors) == 1 and errors[0].loc.line == 3 and errors[0].field == "sources"
    assert "surrogate" in errors[0].message


def test_null_id_and_null_group_are_not_given(tmp_path):
    records = [{"id": None, "response": "a", "label": 1, "group": None},
               {"id": 0, "response": "b", "label": 0, "group": None},
               {"response": "c", "label": 0, "group": None}]
    data = write(tmp_path / "d.jsonl", jsonl_text(records))
    errors: list = []
    cases = list(iter_cases(DatasetSpec(loader="jsonl", path=str(data), on_error="skip"), errors))
    # The real id 0 is kept; the records without one get a marked id that cannot equal a given one.
    assert [c.id for c in cases] == ["#0", "0", "#2"] and errors == []
    assert all("group" not in c.meta for c in cases)
    run = api.run(suite_file(tmp_path, data), out=tmp_path / "run", progress=False)
    assert run.n_cases == 3
    f = read_case_frame(tmp_path / "run")
    assert f["group"].nunique() == 3  # each case a group of its own, not one group of all
    # A case index written before (meta.group null) reads the same way.
    old = tmp_path / "old"
    old.mkdir()
    write(old / "cases.jsonl", jsonl_text([{"id": str(i), "dataset": "d", "doc_type": "default", "split": None,
                                            "label": bool(i % 2), "meta": {"group": None}} for i in range(4)]))
    assert read_case_frame(old)["group"].nunique() == 4


def test_a_non_finite_score_is_an_error_verdict_counted_everywhere(tmp_path):
    data = write(tmp_path / "d.jsonl", jsonl_text(rows(12)))
    suite = suite_file(tmp_path, data, verifiers=({"helpers.reliability:NonFinite": {"id": "nf", "every": 3}},))
    run = api.run(suite, out=tmp_path / "run", progress=False)
    failed = [v for v in iter_jsonl(tmp_path / "run/results.jsonl") if "error" in v]
    assert sorted(v["case_id"] for v in failed) == ["c0", "c3", "c6", "c9"]
    assert all("not a finite number" in v["error"] and "score" not in v for v in failed)
    assert {"nan", "inf", "-inf"} == {v["error"].rsplit("(", 1)[1].rstrip(")") for v in failed}
    assert run.errors == 4  # what the CLI prints as "N failed"
    logged = [e for e in iter_jsonl(tmp_path / "run/errors.jsonl") if e["kind"] == "verdict"]
    assert len(logged) == 4
    m = json.loads((tmp_path / "run/metrics.json").read_text())["verifiers"]["nf"]["overall"]
    assert (m["n"], m["errors"]) == (12, 4)
    assert "not a finite number" in (tmp_path / "run/report.html").read_text()
    assert all(v.get("score") is None or math.isfinite(v["score"]) for v in iter_jsonl(tmp_path / "run/results.jsonl"))


# --- no secret in any artifact ----------------------------------------------------------------------------

KEY = "sk-test-ECHOED-IN-A-200-0123456789"
PASSWORD = "hunter2-PASSWORD-must-not-leak"


def _files(*folders: Path) -> list[Path]:
    return [f for folder in folders for f in folder.rglob("*") if f.is_file()]


def _leaks(text_forms: list[str], *folders: Path) -> list[tuple[str, str]]:
    return [(f.name, form) for f in _files(*folders) for form in text_forms
            if form in f.read_text(encoding="utf-8", errors="ignore")]


def test_a_key_inside_a_200_completion_reaches_no_file(fake, tmp_path, monkeypatch):
    import base64
    from urllib.parse import quote

    forms = [KEY, base64.b64encode(f"user:{KEY}".encode()).decode()[8:-4], quote(KEY + "/x", safe="")[:-5]]
    # A server that puts the key (as it is, inside a base64 Basic header, URL-encoded) in its reply.
    reason = f"the key is {KEY}; Basic {base64.b64encode(f'user:{KEY}'.encode()).decode()}; q={quote(KEY, safe='')}"
    server = fake([], default=json.dumps({"hallucinated": True, "probability": 0.7, "claim": "", "reason": reason}))
    monkeypatch.setenv("ECHO_KEY", KEY)
    data = write(tmp_path / "d.jsonl", jsonl_text(rows(6)))
    suite = suite_file(tmp_path, data, verifiers=[{"judge": {"backend": "openai", "model": "m", "base_url": server.base_url,
                                                             "api_key_env": "ECHO_KEY", "cache_dir": str(tmp_path / "cache"),
                                                             "backoff_s": 0.01}}])
    api.run(suite, out=tmp_path / "run", progress=False)
    assert server.headers[0]["authorization"] == f"Bearer {KEY}"  # the key was used...
    assert len(_files(tmp_path / "cache")) == 6
    assert _leaks(forms, tmp_path / "run", tmp_path / "cache") == []  # ...and stored nowhere, in no form
    judged = list(iter_jsonl(tmp_path / "run/results.jsonl"))
    assert all("error" not in v and "[redacted]" in v["detail"]["reason"] for v in judged)
    # A replay from the cache is as clean (and an entry written before replies were scrubbed is cleaned).
    entry = _files(tmp_path / "cache")[0]
    doc = json.loads(entry.read_text())
    entry.write_text(json.dumps({**doc, "text": doc["text"].replace("[redacted]", KEY)}))
    api.run(suite, out=tmp_path / "replay", progress=False)
    assert _leaks(forms, tmp_path / "replay") == []


def test_credentials_in_options_are_stored_as_written(fake, tmp_path, monkeypatch):
    mlflow = pytest.importorskip("mlflow")
    server = fake([], default=(True, 0.7))
    monkeypatch.setenv("PASSWORD", PASSWORD)
    port = server.base_url.split(":")[-1].split("/")[0]
    data = write(tmp_path / "d.jsonl", jsonl_text(rows(6)))
    judge = {"backend": "openai", "model": "m", "base_url": f"http://user:${{PASSWORD}}@127.0.0.1:{port}/v1",
             "cache_dir": str(tmp_path / "cache")}
    literal = {**judge, "id": "literal", "base_url": f"http://user:{PASSWORD}-2@127.0.0.1:{port}/v1"}
    suite = suite_file(tmp_path, data, verifiers=[{"judge": judge}, {"judge": literal}])
    run = api.run(suite, out=tmp_path / "run", progress=False)
    assert run.errors == 0  # the expanded URL was the one used
    manifest = json.loads((tmp_path / "run/manifest.json").read_text())
    configs = {v["id"]: v["config"] for v in manifest["verifiers"]}
    assert configs["judge"]["base_url"] == judge["base_url"]  # `${PASSWORD}`, as written
    assert configs["literal"]["base_url"] == f"http://user:***@127.0.0.1:{port}/v1"
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    monkeypatch.chdir(tmp_path)  # MLflow's artifacts go beside the store
    api.log_to_mlflow(tmp_path / "run", uri, "secrets")
    assert list((tmp_path / "mlruns").rglob("manifest.json"))
    assert mlflow is not None
    # The run directory, the MLflow store and its artifacts hold no expanded password (the literal one is
    # in the suite's own text, which the manifest keeps to resume the run; only the expanded one is checked).
    for f in _files(tmp_path / "run", tmp_path / "mlruns"):
        if f.name not in ("dataset.jsonl",):
            assert PASSWORD not in f.read_text(errors="ignore").replace(f"{PASSWORD}-2", ""), f
    assert PASSWORD not in (tmp_path / "mlflow.db").read_bytes().decode(errors="ignore").replace(f"{PASSWORD}-2", "")
