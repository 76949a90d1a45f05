"""Drift in the history page: `verifybench drift --out` records a result (a planted shift, an unchanged
sample, a refusal) and `verifybench history` shows them in time order beside the runs, each figure as
the record has it. Real HaluEval QA cases scored by rouge and bleu; the page is parsed, not eyeballed."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from xml.etree import ElementTree as ET

import numpy as np
import pytest
from test_history import SVG, Page
from typer.testing import CliRunner

import verifybench as vb
from helpers.loop_runs import make_qa_run, write_guard_log
from verifybench import api
from verifybench.cli import app
from verifybench.errors import VerifybenchError
from verifybench.feedback.runs import RunTable
from verifybench.tracking.drift_record import KIND, read_record


@pytest.fixture(scope="module")
def qa_run(tmp_path_factory, data_dir) -> Path:
    return make_qa_run(tmp_path_factory, data_dir)


@pytest.fixture(scope="module")
def recorded(qa_run, tmp_path_factory):
    """Three drift results written into one folder by the command: a planted shift (rouge +0.3, 40 cases
    of a doc type the policy has no slice for), an unchanged sample (the calibration half) and a refusal
    (an empty folder as production); then dated a day apart, the unchanged sample the newest."""
    work = tmp_path_factory.mktemp("drifthist")
    base = vb.baseline(qa_run, out=work / "baseline.json")
    cal = np.flatnonzero(RunTable.open(qa_run).cal)
    shifted = write_guard_log(qa_run, work / "shifted", rows=cal, shift={"rouge": 0.3},
                              doc_types={int(i): "contract" for i in cal[:40]}, torn=False)
    same = write_guard_log(qa_run, work / "same", rows=cal, torn=False)
    empty = work / "empty"
    empty.mkdir()
    folder = work / "drift"
    codes = {}
    for name, src, day in (("shifted", shifted, 1), ("refused", empty, 2), ("same", same, 3)):
        before = set(folder.glob("*.json")) if folder.exists() else set()
        r = CliRunner().invoke(app, ["drift", str(base), str(src), "--out", f"{folder}/"])
        (path,) = set(folder.glob("drift-*.json")) - before
        doc = json.loads(path.read_text())
        doc["created"] = f"2030-01-0{day}T09:00:00+00:00"
        path.write_text(json.dumps(doc))
        codes[name] = (r.exit_code, path, r.output)
    return {"base": base, "folder": folder, "codes": codes, "shifted": shifted, "same": same}


def test_drift_writes_a_record_of_each_outcome(recorded):
    c = recorded["codes"]
    assert c["shifted"][0] == 1 and c["same"][0] == 0 and c["refused"][0] == 2, {k: v[2] for k, v in c.items()}
    assert "drift record written to" in c["same"][2] and "drift record written to" in c["refused"][2]
    shifted, same, refused = (read_record(c[k][1]) for k in ("shifted", "same", "refused"))
    assert (shifted.status, same.status, refused.status) == ("fail", "pass", "refused")
    assert "neither a run directory" in refused.reason and refused.rows == []
    assert shifted.unseen_doc_types.doc_types == ["contract"] and shifted.limits.max_psi == 0.2
    # The record holds what the drift result says, figure for figure.
    live = api.drift(recorded["base"], recorded["shifted"])
    assert [r.model_dump(exclude_none=True) for r in shifted.rows] == \
        [{k: v for k, v in r.items() if v is not None} for r in json.loads(json.dumps(live.as_dict()))["rows"]]


def test_history_shows_drift_in_time_order_with_the_recorded_figures(recorded, qa_run, tmp_path):
    c = recorded["codes"]
    out = api.history([qa_run, recorded["folder"]], out=tmp_path / "h.html")
    page = Page(out.read_text(encoding="utf-8"))
    assert [cells[2][1] for cells in page.rows["runs"] if cells] == [qa_run.name]  # the run is still there

    summary = [cells for cells in page.rows["drift"] if cells]
    assert [cells[2][1] for cells in summary] == ["fail", "refused", "pass"]  # by `created`, not by name
    assert summary[0][5][1].startswith("13.3%") and "contract" in summary[0][5][1]
    assert "neither a run directory" in summary[1][5][1]
    assert summary[2][5][1].startswith("0.0%") and summary[2][8][1] == ""
    assert "rouge / all" in summary[0][8][1] and "bleu / all" not in summary[0][8][1]
    assert "unseen doc types" in summary[0][8][1]

    rows = {}
    for cells in page.rows["drift-checks"]:
        if cells:
            key = (cells[0][1], cells[1][1], int(cells[2][1]))
            rows[key] = cells
    shifted, same = read_record(c["shifted"][1]), read_record(c["same"][1])
    for idx, rec in ((1, shifted), (3, same)):
        for want in (r.model_dump() for r in rec.rows):
            cells = rows.pop((want["check"], want["slice"], idx))
            got = {k: cells[i][0]["data-value"] for i, k in
                   ((6, "reference_flag_rate"), (7, "production_flag_rate"), (8, "flag_rate_change"), (9, "psi"),
                    (10, "ks_statistic"), (11, "ks_p_value"))}
            for k, v in got.items():
                assert (v == "" and want[k] is None) or float(v) == pytest.approx(want[k], rel=1e-12), (k, want)
            assert cells[12][1].startswith(want["status"])
    assert not rows  # nothing shown that no record holds (the refusal has no rows)
    rouge = [r.model_dump() for r in shifted.rows if r.check == "rouge" and r.slice == "all"][0]
    assert rouge["status"] == "drift" and rouge["psi"] > 0.2
    assert all(r.status == "ok" for r in same.rows if r.slice == "all")
    # Grouped by check and slice, all cases first, in time order within a group.
    order = [(cells[0][1], cells[1][1], cells[2][1]) for cells in page.rows["drift-checks"] if cells]
    assert order[:2] == [("rouge", "all", "1"), ("rouge", "all", "3")]

    # The chart: one line per check over the two results that have figures, markers at #1 and #3.
    (src,) = [a["src"] for t, a in page.tags if t == "img" and a.get("id") == "drift-chart"]
    svg = ET.fromstring(base64.b64decode(src.split(",", 1)[1]))
    groups = [g for g in svg.iter(f"{SVG}g") if (g.get("id") or "").startswith("drift-series-")]
    assert len(groups) == 2
    for g in groups:
        xs = sorted(float(u.get("x")) for u in g.iter(f"{SVG}use"))
        assert len(xs) == 2 and xs[0] < xs[1]


def test_a_page_of_drift_records_alone_and_bad_records(recorded, tmp_path):
    c = recorded["codes"]
    page = Page(api.history([c["same"][1], c["shifted"][1]], out=tmp_path / "d.html").read_text())
    assert "runs" not in page.rows and [cells[2][1] for cells in page.rows["drift"] if cells] == ["fail", "pass"]
    with pytest.raises(VerifybenchError, match="PNG draws the runs' metric"):
        api.history([recorded["folder"]], out=tmp_path / "d.png")
    not_one = tmp_path / "x.json"
    not_one.write_text(json.dumps({"kind": "something else"}))
    with pytest.raises(VerifybenchError, match=rf"x.json: a 'something else' file, not a '{KIND}' file"):
        api.history([not_one], out=tmp_path / "e.html")
    bad = json.loads(c["shifted"][1].read_text())
    bad["rows"][0]["psi"] = "high"
    (tmp_path / "bad.json").write_text(json.dumps(bad))
    with pytest.raises(VerifybenchError, match=r"bad.json: rows\[0\].psi: Input should be a valid number"):
        api.history([tmp_path / "bad.json"], out=tmp_path / "e.html")
    nothing = tmp_path / "nothing"
    nothing.mkdir()
    r = CliRunner().invoke(app, ["history", str(nothing), "--out", str(tmp_path / "e.html")])
    assert r.exit_code == 2 and "neither a run directory" in r.output and "drift-*.json" in r.output
    assert not (tmp_path / "e.html").exists()
