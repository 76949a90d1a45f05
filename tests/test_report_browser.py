"""The report in a real headless Chromium (Debian's package, driven by Playwright; no browser download)."""

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from conftest import write

from verifybench import api
from verifybench.rundir import iter_jsonl
from verifybench.suite import parse_suite

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.browser

XSS = '<img src=x onerror="window.__xss=1"><script>window.__xss=2</script>'
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync"]


@pytest.fixture(scope="module")
def report(tmp_path_factory, root):
    assert CHROMIUM, "Debian's chromium is needed for the browser tests (apt-get install chromium)"
    tmp = tmp_path_factory.mktemp("browser")
    rows = [json.loads(line) for line in (root / "datasets/demo/cases.jsonl").read_text().splitlines()]
    for r in rows:
        r["response"] = XSS + " " + r["response"]
        r["sources"][0]["text"] = XSS + " " + r["sources"][0]["text"]
    data = write(tmp / "cases.jsonl", "\n".join(json.dumps(r) for r in rows) + "\n")
    suite = parse_suite({"name": "browser", "dataset": {"loader": "jsonl", "path": str(data),
                                                       "fields": {"doc_type": "doc_type", "split": "split"}},
                         "verifiers": ["rouge", "bleu"],
                         "metrics": {"target": "f1", "breakdown": ["meta.error_type"]}}, tmp)  # max F1: degenerate
    api.run(suite, out=tmp / "run", progress=False)
    return tmp / "run"


@pytest.fixture(scope="module")
def page(report):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        page = browser.new_page(viewport={"width": 1300, "height": 1000})
        page.problems = []
        page.on("console", lambda m: m.type == "error" and page.problems.append(m.text))
        page.on("pageerror", lambda e: page.problems.append(str(e)))
        page.on("request", lambda r: not r.url.startswith(("file:", "data:")) and page.problems.append(r.url))
        page.goto((report / "report.html").as_uri())
        page.wait_for_load_state("load")
        yield page
        browser.close()


def expected_at(run: Path, verifier: str, slice_: str, threshold: float) -> dict:
    cases = {c["id"]: c for c in iter_jsonl(run / "cases.jsonl")}
    y, s = [], []
    for v in iter_jsonl(run / "results.jsonl"):
        c = cases[v["case_id"]]
        # The slider counts the test split, as the table beside it does.
        if v["verifier"] == verifier and "score" in v and c["split"] == "test" and (slice_ == "all" or c["doc_type"] == slice_):
            y.append(c["label"])
            s.append(v["score"])
    y, pred = np.array(y), np.array(s) >= threshold
    tp, fp, fn = int((pred & y).sum()), int((pred & ~y).sum()), int((~pred & y).sum())
    return {"tp": tp, "fp": fp, "fn": fn, "tn": int((~pred & ~y).sum()),
            "precision": f"{tp / (tp + fp):.4f}" if tp + fp else "–", "recall": f"{tp / (tp + fn):.4f}",
            "f1": f"{2 * tp / (2 * tp + fp + fn):.4f}"}


def test_no_script_from_the_data_runs_and_nothing_is_fetched(page):
    page.click("details.cases summary >> nth=0")
    assert page.evaluate("window.__xss") is None
    assert "<script>window.__xss=2</script>" in page.inner_text("details.cases >> nth=0")
    assert page.problems == []


@pytest.mark.parametrize("verifier,slice_", [("rouge", "support_answer"), ("bleu", "all")])
def test_slider_shows_the_numbers_of_the_threshold_it_is_on(page, report, verifier, slice_):
    box = page.locator(f'.slider[data-verifier="{verifier}"][data-slice="{slice_}"]')
    slider = box.locator("input")
    top = int(slider.get_attribute("max"))
    for position in (0, top // 3, top // 2, top):
        slider.evaluate("(el, v) => { el.value = String(v); el.dispatchEvent(new Event('input')); }", position)
        shown = {f: box.locator(f'output[data-field="{f}"]').inner_text()
                 for f in ("threshold", "precision", "recall", "f1", "tp", "fp", "fn", "tn")}
        curves = json.loads(page.locator("#vb-curves").inner_text())
        key = box.get_attribute("data-slider")
        threshold = curves[key]["threshold"][position]
        want = expected_at(report, verifier, slice_, threshold)
        assert float(shown["threshold"]) == pytest.approx(threshold, abs=1e-4)
        for k in ("precision", "recall", "f1"):  # 3 decimals; JS and Python round exact halves differently
            assert (shown[k] == want[k] == "–") or float(shown[k]) == pytest.approx(float(want[k]), abs=1.01e-3), k
        assert [int(shown[k]) for k in ("tp", "fp", "fn", "tn")] == [want[k] for k in ("tp", "fp", "fn", "tn")]
    assert page.problems == []


def test_slider_starts_on_the_fitted_threshold(page, report):
    metrics = json.loads((report / "metrics.json").read_text())
    fitted = metrics["verifiers"]["bleu"]["overall"]["threshold"]["value"]
    box = page.locator('.slider[data-verifier="bleu"][data-slice="all"]')
    note = box.locator(".fitted-note").inner_text()
    assert note.startswith("fitted threshold ") and float(note.split()[-1]) == pytest.approx(fitted, abs=1e-4)
    page.reload()
    assert float(box.locator('output[data-field="threshold"]').inner_text()) == pytest.approx(fitted, abs=1e-4)


def test_screenshot_is_not_blank(page, tmp_path):
    from PIL import Image

    shot = tmp_path / "report.png"
    page.screenshot(path=str(shot), full_page=True)
    img = np.asarray(Image.open(shot).convert("L"), dtype=float)
    assert img.shape[0] > 2000  # the whole report, not an empty viewport
    assert img.std() > 20 and (img < 100).mean() > 0.005  # text and charts, not a blank page


def test_degenerate_thresholds_and_the_flag_all_floor_are_visible(page, report):
    """bleu's fitted threshold flags every calibration case of the demo set: the summary row shows the tag
    and, beside the test F1, what flagging everything scores; the slice table shows labeled counts."""
    metrics = json.loads((report / "metrics.json").read_text())
    bleu = metrics["verifiers"]["bleu"]["overall"]
    assert bleu["threshold"]["degenerate"]
    row = page.locator('#summary tr[data-verifier="bleu"]')
    tag = row.locator(".tag.degenerate")
    assert tag.is_visible() and tag.inner_text() == "degenerate"
    assert row.locator("td.flag-all").inner_text() == f"{bleu['flag_all']['f1']:.3f}"
    slices = page.locator("table.slices >> nth=0")
    assert "32 / 32" in slices.inner_text()  # calibration: hallucinated / faithful, per doc type
    assert page.problems == []


def test_the_comparison_table_puts_every_verifier_side_by_side_for_each_doc_type(page, report):
    """The comparison page: per doc type (and over all cases) one row per verifier with its AUROC, its
    threshold and the test split's precision and recall there, p50/p95 latency and cost, as metrics.json
    has them; the highest AUROC of each slice is marked; the error types are compared across verifiers."""
    metrics = json.loads((report / "metrics.json").read_text())
    table = page.locator("#comparison-table")
    assert table.is_visible()
    slices = ["all", *metrics["verifiers"]["rouge"]["slices"]]
    assert len(slices) > 2
    for key in slices:
        aurocs = {}
        for vid, m in metrics["verifiers"].items():
            sm = m["overall"] if key == "all" else m["slices"][key]
            row = table.locator(f'tr[data-slice="{key}"][data-verifier="{vid}"]')
            assert row.count() == 1
            assert row.locator("td.auroc").inner_text().startswith(f"{sm['auroc']:.3f}")
            assert row.locator("td.precision").inner_text().startswith(f"{sm['test']['precision']:.3f}")
            assert row.locator("td.recall").inner_text().startswith(f"{sm['test']['recall']:.3f}")
            latency = row.locator("td.latency")
            assert latency.nth(0).inner_text().startswith(f"{sm['latency_ms']['p50']:.3f}")
            assert latency.nth(1).inner_text().startswith(f"{sm['latency_ms']['p95']:.3f}")
            assert row.locator("td.threshold").inner_text().startswith(f"{sm['threshold']['value']:.4f}")
            aurocs[vid] = (sm["auroc"], row.locator(".tag.best").count())
        best = max(a for a, _ in aurocs.values())
        assert {vid for vid, (a, tag) in aurocs.items() if tag} == {vid for vid, (a, _) in aurocs.items() if a == best}
    caught = page.locator("table.caught")
    assert caught.is_visible()
    for value, r in metrics["verifiers"]["bleu"]["breakdown"]["meta.error_type"].items():
        cell = caught.locator(f'tr[data-value="{value}"] td[data-verifier="bleu"]')
        assert cell.inner_text().startswith(f"{r['flagged']} / {r['n']}")
    assert page.problems == []


def test_a_1280_px_window_shows_the_finding_first_and_scrolls_no_table_sideways(page, report):
    """Issue 44: at 1280x800 the page itself never scrolls sideways (a wide table scrolls inside its own
    box), and the sentence saying what the run found is on the first screen, above every table."""
    small = page.context.browser.new_page(viewport={"width": 1280, "height": 800})
    try:
        small.goto((report / "report.html").as_uri())
        small.wait_for_load_state("load")
        assert small.evaluate("document.documentElement.scrollWidth") <= 1280
        lead = small.locator("#findings .finding.lead")
        assert lead.is_visible() and lead.inner_text().strip()
        box = lead.bounding_box()
        assert box is not None and box["y"] >= 0 and box["y"] + box["height"] <= 800
        assert box["y"] < small.locator("table >> nth=0").bounding_box()["y"]
        # Not by dropping columns: the widest table (a verifier's slices) is wider than the page, in its own box.
        assert small.evaluate("Math.max(...[...document.querySelectorAll('table')].map(t => t.scrollWidth))") > 1280
    finally:
        small.close()
