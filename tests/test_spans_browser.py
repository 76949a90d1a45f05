"""Spans in the report, in a real headless Chromium: gold spans and flagged units highlighted in the
per-case view (data text escaped), the localization table and the pairwise accuracy column."""

import json

import pytest
from conftest import write
from test_report_browser import CHROMIUM, FLAGS
from test_spans_run import make_rows

from verifybench import api
from verifybench.rundir import iter_jsonl
from verifybench.suite import parse_suite

pytestmark = pytest.mark.browser

XSS = '<img src=x onerror="window.__xss=1"><script>window.__xss=2</script>'


def rows():
    out = make_rows()
    for r in out:
        if not r["id"].endswith("-h"):
            continue
        g = int(r["id"].split("-")[0])
        if g % 3 == 0:  # the inserted phrase is an attack: gold span and flagged units hold markup
            bad = r["bad"][0] if isinstance(r["bad"][0], str) else r["response"][r["bad"][0]["start"]:r["bad"][0]["end"]]
            if r["response"].count(bad) == 1:
                r["response"] = r["response"].replace(bad, XSS)
                r["bad"] = [XSS]
        elif g % 3 == 1:  # a swapped word the sources do hold: the word-novelty verifier misses it
            r["response"] = r["response"].replace("nine", "five", 1) if "nine" in r["response"] else r["response"]
            at = r["response"].find("five")
            r["bad"] = [{"start": at, "end": at + 4}] if at >= 0 else r["bad"]
    for r in out:
        r["sources"] = [XSS + " " + r["sources"][0]]  # the verifier's evidence quotes the source
    return out


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    assert CHROMIUM, "Debian's chromium is needed for the browser tests (apt-get install chromium)"
    tmp = tmp_path_factory.mktemp("spans-browser")
    data = write(tmp / "cases.jsonl", "".join(json.dumps(r) + "\n" for r in rows()))
    suite = parse_suite({"name": "spans-browser", "dataset": {"loader": "jsonl", "path": str(data),
                                                              "fields": {"spans": "bad", "group": "pair"}},
                         "verifiers": ["rouge", {"helpers.span_verifiers:WordNovelty": {"id": "novelty"}}],
                         "metrics": {"min_per_class": 10, "bootstrap": 200}}, tmp)
    api.run(suite, out=tmp / "run", progress=False)
    return tmp / "run"


@pytest.fixture(scope="module")
def page(run):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        page = browser.new_page(viewport={"width": 1300, "height": 1000})
        page.problems = []
        page.on("console", lambda m: m.type == "error" and page.problems.append(m.text))
        page.on("pageerror", lambda e: page.problems.append(str(e)))
        page.on("request", lambda r: not r.url.startswith(("file:", "data:")) and page.problems.append(r.url))
        page.goto((run / "report.html").as_uri())
        page.wait_for_load_state("load")
        for i in range(page.locator("details.cases").count()):
            page.click(f"details.cases summary >> nth={i}")
        yield page
        browser.close()


def test_gold_spans_render_highlighted_and_escaped(page, run):
    cases = {c["id"]: c for c in iter_jsonl(run / "cases.jsonl")}
    section = page.locator("details.cases >> nth=1")  # novelty's per-case view
    gold = section.locator("td.response mark.seg.gold")
    assert gold.count() > 0
    shown = set()
    for row in section.locator("tr:has(td.response)").all():
        cid = row.locator("td >> nth=0").inner_text().split("\n")[1]
        marks = row.locator("td.response mark.seg.gold")
        text = "".join(marks.nth(i).inner_text() for i in range(marks.count()))
        want = "".join(cases[cid]["response"][a:b] for a, b in cases[cid].get("spans") or [])
        assert text == want, cid
        shown.add(text)
    assert XSS in shown or any(XSS in t for t in shown)  # markup in a gold span is shown as text
    assert page.evaluate("window.__xss") is None
    assert page.problems == []


def test_flagged_units_render_in_their_own_colour_with_score_and_evidence(page, run):
    metrics = json.loads((run / "metrics.json").read_text())
    threshold = metrics["verifiers"]["novelty"]["spans"]["unit_threshold"]["value"]
    section = page.locator("details.cases >> nth=1")
    flags = section.locator("td.response mark.seg.flag")
    assert flags.count() > 0
    row = section.locator("tr:has(td.response mark.seg.flag)").first
    first = row.locator("td.response mark.seg.flag").first
    assert first.get_attribute("title").startswith("unit ") and "score" in first.get_attribute("title")
    n = int(first.get_attribute("data-units").split(",")[0])
    unit = row.locator(f'li.unit[data-unit="{n}"]')
    assert "flagged" in unit.get_attribute("class")
    assert float(unit.inner_text().split("(hallucination score ")[1][:5]) >= threshold
    assert XSS[:30] in unit.locator(".evidence").inner_text()  # the evidence quotes the source, as text
    gold_bg = first.evaluate("e => getComputedStyle(e).borderBottomColor")
    plain = section.locator("td.response mark.seg.gold:not(.flag)")
    if plain.count():
        assert plain.first.evaluate("e => getComputedStyle(e).backgroundColor") != \
            first.evaluate("e => getComputedStyle(e).backgroundColor") or gold_bg
    assert section.locator("li.unit .tag", has_text="not localized").count() > 0  # shown, not dropped


def test_localization_table_and_pairwise_column(page, run):
    metrics = json.loads((run / "metrics.json").read_text())
    sp = metrics["verifiers"]["novelty"]["spans"]["test"]
    row = page.locator('table.localization tr[data-slice="all"][data-scope="all"]')
    assert row.locator("td.char-f1").inner_text().split("\n")[0] == f"{sp['all']['char']['f1']:.3f}"
    assert row.locator("td.span_iou50-f1").inner_text().split("\n")[0] == f"{sp['all']['span_iou50']['f1']:.3f}"
    assert page.locator(".not-localized").first.inner_text().startswith(
        str(metrics["verifiers"]["novelty"]["spans"]["units"]["not_localized"]))
    for vid in ("rouge", "novelty"):
        cell = page.locator(f'#summary tr[data-verifier="{vid}"] td.pairwise')
        assert cell.inner_text().split("\n")[0] == f"{metrics['verifiers'][vid]['pairs']['accuracy']:.3f}"
    gold = metrics["spans"]["gold"]
    assert f"{gold['not_found']} gold string(s) were found nowhere" in page.locator("#gold-spans").inner_text()


def test_screenshot_of_the_per_case_view(page, tmp_path):
    import numpy as np
    from PIL import Image

    box = page.locator("details.cases >> nth=1")
    shot = tmp_path / "cases.png"
    box.screenshot(path=str(shot))
    img = np.asarray(Image.open(shot).convert("RGB"), dtype=int)
    yellow = (img[..., 0] > 230) & (img[..., 1] > 200) & (img[..., 2] < 140)  # the gold spans' colour
    blue = (img[..., 2] > 180) & (img[..., 0] < 80)  # the flagged units' underline
    assert yellow.sum() > 200 and blue.sum() > 100
