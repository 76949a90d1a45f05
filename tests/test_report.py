import json
import re

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
    assert 0 <= ce["ece"] <= 1 and 0 <= ce["brier"] <= 1 and sum(ce["reliability"]["count"]) == 384
    html = (tmp_path / "run/report.html").read_text()
    assert html.count('<img alt="curves of lp"') == 2  # PR/ROC and the reliability diagram
    assert "supported" in html and "↳" in html  # per-claim evidence in the per-case view
    # The sources of the shown cases are read back from the dataset.
    assert "pricing." in html or "agreement" in html or "configuration" in html
