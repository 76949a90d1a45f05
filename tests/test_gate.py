"""The gate's four outcomes on runs the tests produce, JUnit output, and the CLI exit codes."""

import json
import os
import subprocess
import sys
from xml.etree import ElementTree as ET

import pytest
from conftest import write

from verifybench import api
from verifybench.gate import GateRefused

SUITE = """
name: gated
dataset:
  loader: jsonl
  path: {data}
  fields: {{doc_type: doc_type, split: split}}
  {extra}
verifiers:
  - rouge
  - "helpers.verifiers:Weakenable": {{id: model}}
"""


@pytest.fixture
def suite(tmp_path, root):
    def make(name="gated", extra=""):
        text = SUITE.format(data=root / "datasets/demo/cases.jsonl", extra=extra).replace("name: gated", f"name: {name}")
        return write(tmp_path / f"{name}-{abs(hash(extra))}.yaml", text)
    return make


def run(suite_file, out, weaken=None):
    os.environ.pop("VB_WEAKEN", None)
    if weaken:
        os.environ["VB_WEAKEN"] = weaken
    try:
        api.run(suite_file, out=out, progress=False)
    finally:
        os.environ.pop("VB_WEAKEN", None)
    return out


@pytest.fixture
def baseline(tmp_path, suite):
    base_run = run(suite(), tmp_path / "base")
    return api.baseline(base_run, out=tmp_path / "metrics/gated.json")


def test_pass_when_nothing_changed(tmp_path, suite, baseline):
    result = api.gate(run(suite(), tmp_path / "again"), baseline, junit=tmp_path / "j.xml", summary=tmp_path / "s.md")
    assert result.exit_code == 0 and not result.failed
    assert {(c.verifier, c.metric) for c in result.checks} == {("rouge", "f1"), ("rouge", "auroc"), ("model", "f1"), ("model", "auroc")}
    assert all(c.drop == 0 for c in result.checks)
    assert "passed" in (tmp_path / "s.md").read_text()


def test_real_regression_fails_naming_verifier_slice_and_metric(tmp_path, suite, baseline, root):
    weak = run(suite(), tmp_path / "weak", weaken="strong")
    result = api.gate(weak, baseline, junit=tmp_path / "j.xml")
    assert result.exit_code == 1
    failed = {(c.verifier, c.slice, c.metric) for c in result.failed}
    assert ("model", "all", "auroc") in failed and all(v == "model" for v, _, _ in failed)
    c = next(c for c in result.failed if c.metric == "auroc")
    assert c.drop > 0.02 and c.ci[0] > 0 and "excludes 0" in c.message
    # The CLI says the same, with exit code 1.
    env = {**os.environ, "PYTHONPATH": str(root / "tests")}
    out = subprocess.run([sys.executable, "-m", "verifybench.cli", "gate", str(weak), "--baseline", str(baseline)],
                         capture_output=True, text=True, env=env)
    assert out.returncode == 1
    assert "regression: model / all / auroc: auroc dropped by" in " ".join(out.stderr.split())


def test_noise_level_drop_passes(tmp_path, suite, baseline):
    nudged = run(suite(), tmp_path / "nudged", weaken="tiny")
    result = api.gate(nudged, baseline, max_drop=["auroc=0", "f1=0"])
    drops = [c for c in result.checks if c.verifier == "model" and c.drop and c.drop > 0]
    assert drops, "the nudge should lower something a little"
    assert result.exit_code == 0  # a drop above the allowance, but inside the noise
    assert all(c.ci[0] <= 0 for c in drops) and any("within noise" in c.message for c in drops)


def test_refuses_other_data_or_suite(tmp_path, suite, baseline):
    with pytest.raises(GateRefused, match="different cases"):
        api.gate(run(suite(extra="limit: 300"), tmp_path / "fewer"), baseline)
    with pytest.raises(GateRefused, match="different suite"):
        api.gate(run(suite(name="other"), tmp_path / "other"), baseline)
    with pytest.raises(GateRefused, match="fewer than the minimum 100"):
        api.gate(run(suite(), tmp_path / "same"), baseline, slices="each", min_cases=100)


def test_refusal_is_exit_code_2(tmp_path, suite, baseline, root):
    other = run(suite(extra="limit: 300"), tmp_path / "fewer")
    env = {**os.environ, "PYTHONPATH": str(root / "tests")}
    out = subprocess.run([sys.executable, "-m", "verifybench.cli", "gate", str(other), "--baseline", str(baseline)],
                         capture_output=True, text=True, env=env)
    assert out.returncode == 2 and "refusing to compare" in out.stderr


def test_junit_is_valid_and_has_one_case_per_check(tmp_path, suite, baseline):
    result = api.gate(run(suite(), tmp_path / "weak", weaken="strong"), baseline, slices="each",
                      junit=tmp_path / "j.xml")
    tree = ET.parse(tmp_path / "j.xml")
    suite_el = tree.getroot().find("testsuite")
    cases = suite_el.findall("testcase")
    assert len(cases) == len(result.checks) == int(suite_el.get("tests"))
    assert int(suite_el.get("failures")) == len(result.failed) == len([c for c in cases if c.find("failure") is not None])
    assert all(c.get("classname") and c.get("name") for c in cases)
    slices = {c.get("name").split(".")[0] for c in cases}
    assert {"all", "support_answer", "contract_summary", "technical_doc"} <= slices


def test_latency_is_gated_only_when_named(tmp_path, suite, baseline):
    doc = json.loads(baseline.read_text())
    for v in doc["verifiers"].values():
        v["slices"]["all"]["p95_ms"] = 1e-6  # pretend the baseline was far faster
    write(tmp_path / "fast.json", json.dumps(doc))
    again = run(suite(), tmp_path / "again")
    assert api.gate(again, tmp_path / "fast.json").exit_code == 0
    slow = api.gate(again, tmp_path / "fast.json", max_rise=["p95_ms=50%"])
    assert slow.exit_code == 1 and all(c.metric == "p95_ms" for c in slow.failed)
