import json
import re

import pytest
from conftest import write

from verifybench import api
from verifybench.suite import parse_suite

PAYLOAD = '<script>document.title="pwned"</script><img src=x onerror="alert(1)">'


def test_dataset_text_renders_inert(tmp_path):
    rows = [{"id": f"c{i}", "response": f"{PAYLOAD} answer {i}", "sources": [f"{PAYLOAD} source {i % 2}"],
             "label": i % 2, "doc_type": "</td><script>x</script>"} for i in range(12)]
    data = write(tmp_path / "c.jsonl", "\n".join(json.dumps(r) for r in rows) + "\n")
    suite = parse_suite({"name": "xss", "dataset": {"loader": "jsonl", "path": str(data),
                                                   "fields": {"doc_type": "doc_type"}},
                         "verifiers": ["rouge", "bleu"]}, tmp_path)
    api.run(suite, out=tmp_path / "run", progress=False)
    html = (tmp_path / "run/report.html").read_text()
    assert "&lt;script&gt;document.title" in html  # the text is there, shown as text
    # The only script elements are the report's own: its JSON data block and its slider code.
    assert html.lower().count("<script") == 2
    assert '<script type="application/json" id="vb-curves">' in html
    assert "pwned" not in html.split('id="vb-curves">')[1]
    assert not re.search(r"<img[^>]*onerror", html, re.I)
    # Self-contained: nothing is fetched from anywhere.
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", html)
    assert "<link" not in html


def test_probabilistic_verifier_gets_calibration_and_claims_are_shown(tmp_path, root):
    suite = parse_suite({"name": "prob", "dataset": {"loader": "jsonl", "path": str(root / "datasets/demo/cases.jsonl"),
                                                    "fields": {"doc_type": "doc_type", "split": "split"}},
                         "verifiers": [{"helpers.verifiers:LengthProbability": {"id": "lp"}}]}, tmp_path)
    api.run(suite, out=tmp_path / "run", progress=False)
    metrics = json.loads((tmp_path / "run/metrics.json").read_text())
    ce = metrics["verifiers"]["lp"]["overall"]["calibration_error"]
    # The Brier score recomputed from the stored verdicts and the cases' labels (it is mean((p - y)^2)).
    labels = {r["id"]: r["label"] for r in map(json.loads, (tmp_path / "run/cases.jsonl").read_text().splitlines())}
    verdicts = [json.loads(line) for line in (tmp_path / "run/results.jsonl").read_text().splitlines()]
    brier = sum((v["score"] - float(labels[v["case_id"]])) ** 2 for v in verdicts) / len(verdicts)
    assert ce["brier"] == pytest.approx(brier, abs=1e-6) and 0 < ce["ece"] < 1
    assert sum(ce["reliability"]["count"]) == len(verdicts) == 384
    html = (tmp_path / "run/report.html").read_text()
    assert html.count('<img alt="curves of lp"') == 2  # PR/ROC and the reliability diagram
    assert "supported" in html and "↳" in html  # per-claim evidence in the per-case view
    # The sources of the shown cases are read back from the dataset: each rendered source starts with its
    # id in brackets, which no response or question holds.
    assert re.search(r'<td class="text">\[(support|contract|tech)_\w+-\d+-source\] ', html)


def test_report_labels_thresholds_slices_and_latency(tmp_path, root):
    """Fallback and degenerate thresholds, what flagging everything scores, labeled cases per slice and how
    many more a threshold and a gate need, and batch-average latency with its warm-up, as a reader sees them."""
    rows = [json.loads(line) for line in (root / "datasets/demo/cases.jsonl").read_text().splitlines()]
    # A small fourth doc type: too few cases for a threshold of its own.
    for r in rows[:16]:
        r["doc_type"] = "faq"
    data = write(tmp_path / "cases.jsonl", "\n".join(json.dumps(r) for r in rows) + "\n")
    suite = parse_suite({"name": "labels", "dataset": {"loader": "jsonl", "path": str(data),
                                                      "fields": {"doc_type": "doc_type", "split": "split"}},
                         "verifiers": ["rouge", {"helpers.verifiers:BatchFails": {"id": "batchy"}}],
                         "metrics": {"target": "f1"}}, tmp_path)  # max F1: rouge's threshold is degenerate
    api.run(suite, out=tmp_path / "run", progress=False)
    metrics = json.loads((tmp_path / "run/metrics.json").read_text())
    html = (tmp_path / "run/report.html").read_text()
    faq = metrics["verifiers"]["rouge"]["slices"]["faq"]
    assert faq["threshold"]["kind"] == "fallback" and faq["labels"]["calibration"]["hallucinated"] < 30
    more = faq["needs"]["threshold"]["more_hallucinated"]
    assert more == 30 - faq["labels"]["calibration"]["hallucinated"]  # the data's own split: all land in calibration
    assert "fallback: all" in html and f"~{more} more hallucinated" in html
    assert html.count('<span class="tag degenerate"') >= 2  # rouge ranks the demo set weakly (threshold 0)
    assert "flags every calibration case: it separates nothing" in html
    batchy = metrics["verifiers"]["batchy"]["overall"]["latency_ms"]
    assert batchy["basis"] == "batch_average"
    row = html.split('<tr data-verifier="batchy">')[1].split("</tr>")[0]
    assert row.count("batch avg") == 3  # p50, p95 and p99
    assert f"took {batchy['warmup']['total_ms']:.0f} ms over 64 case(s) and is left out of the percentiles" in html
