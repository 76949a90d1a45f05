"""`verifybench history`: one self-contained page of a metric per verifier over runs in time order.
The page has no script, so it is checked by parsing it: the HTML, and the SVG chart inside it."""

from __future__ import annotations

import base64
import json
import re
import shutil
from html.parser import HTMLParser
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest
from typer.testing import CliRunner

from helpers.tracked_runs import make_run, suite_file, with_created
from verifybench import api
from verifybench.cli import app
from verifybench.errors import VerifybenchError

SVG = "{http://www.w3.org/2000/svg}"


@pytest.fixture(scope="module")
def runs(tmp_path_factory, root):
    """Three runs a day apart, of one suite: over the whole demo set, over its first 100 cases (other
    data: another dataset hash and number of cases), and the whole set again after rouge's config changed."""
    folder = tmp_path_factory.mktemp("history")
    suite = suite_file(folder, root)
    full, short = make_run(folder / "full", suite), make_run(folder / "short", suite, limit=100)
    a = with_created(full, folder / "a", "2030-01-01T10:00:00+00:00")
    b = with_created(short, folder / "b", "2030-01-02T10:00:00+00:00")
    c = with_created(full, folder / "c", "2030-01-03T10:00:00+00:00")
    manifest = json.loads((c / "manifest.json").read_text())
    next(v for v in manifest["verifiers"] if v["id"] == "rouge")["config_hash"] = "0123456789abcdef"
    (c / "manifest.json").write_text(json.dumps(manifest))
    return {"a": a, "b": b, "c": c}


class Page(HTMLParser):
    """Every tag with its attributes, and the text of each table cell."""

    def __init__(self, text: str):
        super().__init__()
        self.tags: list[tuple[str, dict]] = []
        self.rows: dict[str, list[list[tuple[dict, str]]]] = {}
        self._table = self._cell = None
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.tags.append((tag, attrs))
        if tag == "table":
            self._table = self.rows.setdefault(attrs.get("id", ""), [])
        elif tag == "tr" and self._table is not None:
            self._table.append([])
        elif tag == "td" and self._table is not None:
            self._cell = [attrs, ""]

    def handle_data(self, data):
        if self._cell is not None:
            self._cell[1] += data

    def handle_endtag(self, tag):
        if tag == "td" and self._cell is not None:
            self._table[-1].append((self._cell[0], " ".join(self._cell[1].split())))
            self._cell = None
        elif tag == "table":
            self._table = None


def overall(run_dir: Path, vid: str) -> dict:
    return json.loads((run_dir / "metrics.json").read_text())["verifiers"][vid]["overall"]


def svg_of(page: Page) -> ET.Element:
    (src,) = [a["src"] for t, a in page.tags if t == "img"]
    assert src.startswith("data:image/svg+xml;base64,")
    return ET.fromstring(base64.b64decode(src.split(",", 1)[1]))


def test_page_is_self_contained_in_time_order_and_never_joins_two_datasets(runs, tmp_path):
    out = api.history([runs["c"], runs["a"], runs["b"]], metric="auroc", out=tmp_path / "trend.html")
    text = out.read_text(encoding="utf-8")
    page = Page(text)

    # Self-contained and inert: no script, no handlers, nothing fetched.
    assert all(t != "script" for t, _ in page.tags)
    assert not any(k.startswith("on") for _, a in page.tags for k in a)
    for _, a in page.tags:
        for key in ("src", "href"):
            assert not re.match(r"(https?:)?//", a.get(key) or ""), a

    # Runs in time order, whatever order they were named in; values as each run's metrics.json says.
    body = [r for r in page.rows["runs"] if r]
    assert [cells[2][1] for cells in body] == ["a", "b", "c"]
    for cells, name in zip(body, "abc"):
        for attrs, shown in cells:
            if "data-verifier" in attrs:
                assert float(attrs["data-value"]) == overall(runs[name], attrs["data-verifier"])["auroc"]
                assert shown.endswith("]")  # the 95% interval is shown under the value
    rouge_c = next(s for a, s in body[2] if a.get("data-verifier") == "rouge")
    assert "†" in rouge_c  # the config changed since rouge's previous run
    assert all("†" not in s for a, s in body[1] if a.get("data-verifier"))
    assert 'id="datasets-note"' in text

    # One line per (verifier, data): the full set's runs #1 and #3 on one line, the 100-case run alone.
    lines = {cells[0][1]: cells for cells in page.rows["lines"] if cells}
    assert len(lines) == 6  # 3 verifiers x 2 sets of cases
    pairs = [(c[1][1], c[2][1]) for c in lines.values()]
    assert len(set(pairs)) == len(pairs)
    for cells in lines.values():
        assert cells[4][1] == ("#2" if "100 cases" in cells[2][1] else "#1, #3")

    # The picture itself: each line's markers sit exactly at the runs the table lists, and its path
    # has one vertex per point (so no line reaches a run of other data).
    svg = svg_of(page)
    xs = {}
    for name, cells in lines.items():
        (group,) = [g for g in svg.iter(f"{SVG}g") if g.get("id") == name]
        xs[name] = [float(u.get("x")) for u in group.iter(f"{SVG}use")]
        vertices = len(re.findall(r"[ML] ", group.find(f"{SVG}path").get("d")))
        assert vertices == len(xs[name]) == int(cells[3][1])
    positions = sorted({round(x, 3) for v in xs.values() for x in v})
    assert len(positions) == 3
    for name, cells in lines.items():
        shown = [positions.index(round(x, 3)) + 1 for x in xs[name]]
        assert ", ".join(f"#{i}" for i in shown) == cells[4][1]


def test_a_metric_undefined_on_a_run_is_a_gap_not_a_zero(runs, tmp_path):
    # 100 cases leave 25 of each class for calibration (< 30): no threshold, so no test-split F1.
    assert overall(runs["b"], "rouge")["threshold"]["value"] is None
    page = Page(api.history([runs["a"], runs["b"], runs["c"]], metric="test_f1", out=tmp_path / "f1.html").read_text())
    body = [r for r in page.rows["runs"] if r]
    assert all(s == "n/a" and a["data-value"] == "" for a, s in body[1] if a.get("data-verifier"))
    assert all(float(a["data-value"]) == overall(runs["a"], a["data-verifier"])["test"]["f1"]
               for a, _ in body[0] if a.get("data-verifier"))
    assert {c[2][1] for c in page.rows["lines"] if c} == {next(c[2][1] for c in page.rows["lines"] if c)}  # one dataset drawn


def test_slices_png_and_bad_choices(runs, tmp_path):
    page = Page(api.history([runs["a"], runs["c"]], metric="auprc", slice_name="technical_doc",
                            out=tmp_path / "slice.html").read_text())
    body = [r for r in page.rows["runs"] if r]
    tech = json.loads((runs["a"] / "metrics.json").read_text())["verifiers"]["priced"]["slices"]["technical_doc"]
    assert float(next(a for a, _ in body[0] if a.get("data-verifier") == "priced")["data-value"]) == tech["auprc"]
    assert "datasets-note" not in str(page.tags)

    from PIL import Image

    png = api.history([runs["a"], runs["b"]], metric="p95_ms", out=tmp_path / "trend.png")
    with Image.open(png) as im:
        assert im.format == "PNG" and im.width > 400

    with pytest.raises(VerifybenchError, match=r"no run has the metric 'aucroc'.*choose one of: .*auroc"):
        api.history([runs["a"]], metric="aucroc", out=tmp_path / "x.html")
    with pytest.raises(VerifybenchError, match=r"no run has a slice 'legal'; the runs have: all, contract_summary"):
        api.history([runs["a"]], slice_name="legal", out=tmp_path / "x.html")
    assert not (tmp_path / "x.html").exists()


def test_history_command(runs, tmp_path):
    cli = CliRunner()
    out = cli.invoke(app, ["history", str(runs["b"]), str(runs["a"]), "--metric", "test_recall",
                           "--out", str(tmp_path / "h.html")])
    assert out.exit_code == 0, out.output
    assert out.stdout.strip().splitlines()[-1] == str(tmp_path / "h.html")
    broken = tmp_path / "broken"
    shutil.copytree(runs["a"], broken)
    (broken / "metrics.json").unlink()
    out = cli.invoke(app, ["history", str(runs["a"]), str(broken), "--out", str(tmp_path / "h2.html")])
    assert out.exit_code == 2 and "metrics.json: not found" in out.output and not (tmp_path / "h2.html").exists()
