"""The shipped suites, run whole on the shared data."""

import json
import re

import pytest

from verifybench import api

pytestmark = pytest.mark.slow


def test_halueval_qa_suite_scores_every_case_and_flags_the_shortcut(tmp_path, root):
    result = api.run(root / "evals/halueval-qa.yaml", out=tmp_path / "run", progress=False)
    assert result.n_cases == 20000 and result.result.new_verdicts == 40000 and result.n_error_verdicts == 0
    metrics = json.loads((tmp_path / "run/metrics.json").read_text())
    html = (tmp_path / "run/report.html").read_text()
    for vid in ("rouge", "bleu"):
        auroc = metrics["verifiers"][vid]["overall"]["auroc"]
        assert 0.5 < auroc < 1.0
        row = re.search(rf'<tr data-verifier="{vid}">.*?<td class="auroc">([0-9.]+)', html, re.S)
        assert row and float(row.group(1)) == pytest.approx(auroc, abs=5e-4)
    # HaluEval QA's hallucinated answers use words the knowledge lacks: the check must say so.
    novelty = metrics["shortcuts"]["halueval-qa / qa"]["cues"]["novelty"]["auroc"]
    assert novelty >= 0.75
    assert "Shortcut in halueval-qa / qa" in html and "response novelty" in html
    # Pairs share a split (meta.group), so no knowledge text is on both sides.
    assert metrics["split"] == {"calibration": 10000, "test": 10000}


def test_demo_suite_runs_offline(tmp_path, root):
    result = api.run(root / "evals/demo.yaml", out=tmp_path / "run", progress=False)
    assert result.n_cases >= 120 and result.n_error_verdicts == 0
    metrics = json.loads((tmp_path / "run/metrics.json").read_text())
    assert set(metrics["verifiers"]["rouge"]["slices"]) == {"support_answer", "contract_summary", "technical_doc"}
    # 32 calibration cases of each class per doc type: every slice gets a threshold.
    assert all(m["threshold"]["value"] is not None for m in metrics["verifiers"]["rouge"]["slices"].values())
