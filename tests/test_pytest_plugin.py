"""The pytest plugin as a user meets it: a fresh project whose tests use the fixture and the marker."""

import os
import shutil

import pytest

from verifybench import api

pytest_plugins = ["pytester"]


SUITE = """
name: plugin-demo
dataset:
  loader: jsonl
  path: cases.jsonl
  fields: {doc_type: doc_type, split: split}
verifiers:
  - rouge
  - "helpers.verifiers:Weakenable": {id: model}
"""


@pytest.fixture(scope="module")
def baseline(root, tmp_path_factory):
    """The project's committed baseline: its suite run once for the module (each test's project gets a copy)."""
    folder = tmp_path_factory.mktemp("plugin-baseline")
    shutil.copy(root / "datasets/demo/cases.jsonl", folder / "cases.jsonl")
    (folder / "suite.yaml").write_text(SUITE, encoding="utf-8")
    run = api.run(folder / "suite.yaml", out=folder / "base-run", progress=False)
    return api.baseline(run.run_dir, out=folder / "plugin-demo.json")


@pytest.fixture
def project(pytester, root, monkeypatch, baseline):
    shutil.copy(root / "datasets/demo/cases.jsonl", pytester.path / "cases.jsonl")
    pytester.makefile(".yaml", suite=SUITE)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(root / "tests"), os.environ.get("PYTHONPATH", "")]))
    (pytester.path / "metrics").mkdir()
    shutil.copy(baseline, pytester.path / "metrics/plugin-demo.json")
    pytester.makepyfile(test_detection="""
import pytest

def test_fixture(verifybench):
    result = verifybench.assert_no_regression("suite.yaml", baseline="metrics/plugin-demo.json")
    assert result.exit_code == 0

@pytest.mark.verifybench(suite="suite.yaml", baseline="metrics/plugin-demo.json", max_drop=["auroc=0.02"])
def test_marker(verifybench_gate):
    assert not verifybench_gate.failed, verifybench_gate.markdown
""")
    return pytester


@pytest.mark.slow
def test_plugin_passes_an_unchanged_project_with_one_run_per_session(project):
    """An unchanged project passes (both tests); both use suite.yaml: it runs once, into
    reports/pytest/suite, which the summary prints; the next session replaces that run instead of piling
    up folders. (Once a test of its own: the first session here is that test.)"""
    for _ in range(2):
        result = project.runpytest_subprocess("-p", "no:cacheprovider")
        result.assert_outcomes(passed=2)
        run_dir = project.path / "reports/pytest/suite"
        lines = (run_dir / "results.jsonl").read_text().splitlines()
        assert len(lines) == 2 * 384  # two verifiers x 384 cases: one run, not one per test
        result.stdout.fnmatch_lines(["*- verifybench -*", f"suite.yaml: {run_dir / 'report.html'}",
                                     "gate suite.yaml vs metrics/plugin-demo.json: passed"])
        assert (run_dir / "report.html").exists()
    assert sorted(p.name for p in (project.path / "reports/pytest").iterdir()) == ["suite"]


@pytest.mark.slow
def test_plugin_fails_a_regression_with_the_culprit_named(project, monkeypatch):
    monkeypatch.setenv("VB_WEAKEN", "strong")
    result = project.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(["*verifybench regression:*", "*model / all / auroc: auroc dropped by*"])
    result.stdout.fnmatch_lines(["*test_marker*", "*| model | all | auroc |*FAIL*"])
    result.stdout.fnmatch_lines(["*report: *reports/pytest/suite/report.html*"])


@pytest.mark.slow
def test_fixture_makes_llm_calls_replay_only(pytester, monkeypatch):
    pytester.makepyfile(test_env="""
import os

def test_inside(verifybench):
    assert os.environ.get("VERIFYBENCH_REPLAY_ONLY") == "1"

def test_outside():
    assert os.environ.get("VERIFYBENCH_REPLAY_ONLY") is None
""")
    monkeypatch.delenv("VERIFYBENCH_REPLAY_ONLY", raising=False)
    pytester.runpytest_subprocess("-p", "no:cacheprovider").assert_outcomes(passed=2)
    pytester.runpytest_subprocess("-p", "no:cacheprovider", "--verifybench-live").assert_outcomes(passed=1, failed=1)
