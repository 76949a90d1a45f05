"""`RunDir`, the one owner of a run directory's reads: the manifest parsed once, the tables read once and
kept, the settings a stored policy and overrides make; and the gate, which reads a run once (one manifest
read, one case and one verdict table, one evaluation; the refit column is only the refit's thresholds).

One small run (the demo cases, rouge and bleu: a few seconds) is made per module and only read."""

import json
from pathlib import Path

import pytest
import yaml
from conftest import write

from verifybench import api
from verifybench.evaluation import run_dir as run_dir_module
from verifybench.evaluation.run_dir import RunDir
from verifybench.feedback.runs import RunTable
from verifybench.formats import FormatError
from verifybench.metrics import evaluate
from verifybench.metrics.summary import fitted_thresholds
from verifybench.rundir import RunDirError

SUITE = """
name: owned
dataset:
  loader: jsonl
  path: {data}
  fields: {{doc_type: doc_type, split: split}}
verifiers: [rouge, bleu]
metrics: {{breakdown: [meta.error_type], min_per_class: 20}}
"""


@pytest.fixture(scope="module")
def small_run(tmp_path_factory, root):
    folder = tmp_path_factory.mktemp("owned")
    suite = write(folder / "owned.yaml", SUITE.format(data=root / "datasets/demo/cases.jsonl"))
    api.run(suite, out=folder / "run", progress=False)
    return folder / "run"


class Counter:
    """Wraps callables in place (a spy): how often each was called."""

    def __init__(self, monkeypatch):
        self.mp, self.calls = monkeypatch, {}

    def spy(self, owner, name, key=None):
        real, key = getattr(owner, name), key or name
        self.calls.setdefault(key, 0)

        def counted(*a, **kw):
            self.calls[key] += 1
            return real(*a, **kw)
        self.mp.setattr(owner, name, counted)


@pytest.fixture
def manifest_reads(monkeypatch):
    """How many times manifest.json is read, by any reader (`Path.read_text` on it)."""
    seen = {"n": 0}
    real = Path.read_text

    def read_text(self, *a, **kw):
        if self.name == "manifest.json":
            seen["n"] += 1
        return real(self, *a, **kw)
    monkeypatch.setattr(Path, "read_text", read_text)
    return seen


def test_a_folder_without_a_manifest_is_named(tmp_path):
    with pytest.raises(RunDirError, match=r"manifest.json: not found; is .* a verifybench run directory\?"):
        RunDir.open(tmp_path)


def test_a_manifest_of_a_newer_format_is_refused_by_name(small_run, tmp_path):
    doc = json.loads((small_run / "manifest.json").read_text())
    doc.update(kind="verifybench.manifest", format=99, written_by="verifybench 9.0")
    write(tmp_path / "manifest.json", json.dumps(doc))
    with pytest.raises(FormatError, match=r"manifest.json: verifybench.manifest format 99, written by verifybench 9.0"):
        RunDir.open(tmp_path)


def test_the_manifest_is_read_once_and_the_tables_are_kept(small_run, monkeypatch, manifest_reads):
    count = Counter(monkeypatch)
    count.spy(run_dir_module, "read_case_frame")
    count.spy(run_dir_module, "read_verdict_frame")
    run = RunDir.open(small_run)
    s = run.settings()
    first = run.tables(s)
    again = run.tables(run.settings(by="doc_type"))
    assert again[0] is first[0] and again[1] is first[1]
    assert count.calls == {"read_case_frame": 1, "read_verdict_frame": 1}
    assert "meta.error_type" in first[0]  # the breakdown field the settings need
    by_meta = run.settings(by="meta.error_type", policy=None)
    cases, _ = run.tables(by_meta)  # a field already read: not read again
    assert cases is first[0] and count.calls["read_case_frame"] == 1
    run.drop_verdicts()
    run.tables(s)
    assert count.calls == {"read_case_frame": 1, "read_verdict_frame": 2}
    assert manifest_reads["n"] == 1
    assert run.manifest.suite.name == "owned" and run.doc["suite"]["name"] == "owned"


def test_case_rows_are_read_back_by_position(small_run):
    run = RunDir.open(small_run)
    cases, _ = run.tables(run.settings())
    rows = run.cases_at([5, 0, 17])
    assert [r["id"] for r in rows] == [cases["id"].iloc[i] for i in (5, 0, 17)]
    assert all("response" in r for r in rows)


def test_a_stored_policy_sets_the_settings_unless_one_is_given(small_run, tmp_path):
    import shutil

    copy = tmp_path / "run"
    shutil.copytree(small_run, copy)
    write(copy / "policy.yaml", yaml.safe_dump({"by": "dataset", "thresholds": {"rouge": {"all": 0.25}}}))
    run = RunDir.open(copy)
    stored = run.settings()
    assert stored.by == "dataset" and stored.policy == {"rouge": {"all": 0.25}}
    fitted = run.settings(policy=None)
    assert fitted.by == "doc_type" and fitted.policy is None
    assert run.settings(min_per_class=7).min_per_class == 7 and stored.min_per_class == 20


def test_the_refit_thresholds_are_the_ones_evaluate_fits(small_run):
    """The gate's refit column no longer comes from a second evaluation: `fitted_thresholds` must give
    exactly what `evaluate` would, a slice that falls back to the whole set's included."""
    run = RunDir.open(small_run)
    for min_per_class in (20, 60):  # 60: the doc-type slices are too small and fall back
        s = run.settings(min_per_class=min_per_class)
        s.n_boot = 1
        f = run.scored_frame(s)
        full = evaluate(f, s)["verifiers"]
        expected = {vid: {"all": m["overall"]["threshold"]["value"],
                          **{k: sm["threshold"]["value"] for k, sm in m["slices"].items()}} for vid, m in full.items()}
        assert fitted_thresholds(f, s) == expected
    kinds = {sm["threshold"]["kind"] for m in full.values() for sm in m["slices"].values()}
    assert "fallback" in kinds


def test_the_gate_reads_the_run_once(small_run, tmp_path, monkeypatch, manifest_reads):
    """Before: manifest.json parsed three times and the run evaluated twice (held thresholds, then a whole
    refit only for its thresholds)."""
    from verifybench.gating import gate as gate_module
    from verifybench.metrics import summary

    baseline = api.baseline(small_run, out=tmp_path / "baseline.json")
    count = Counter(monkeypatch)
    for owner in (gate_module, summary):
        if hasattr(owner, "evaluate"):
            count.spy(owner, "evaluate")
    count.spy(run_dir_module, "read_case_frame")
    count.spy(run_dir_module, "read_verdict_frame")
    manifest_reads["n"] = 0
    result = api.gate(small_run, baseline)
    assert result.exit_code == 0
    assert manifest_reads["n"] == 1
    assert count.calls == {"evaluate": 1, "read_case_frame": 1, "read_verdict_frame": 1}
    refit = [c for c in result.gated if c.metric == "f1"]
    assert refit and all(c.refit_threshold is not None for c in refit)


def test_the_run_table_and_run_are_views_over_one_run_dir(small_run, manifest_reads):
    t = RunTable.open(small_run)
    assert t.run.manifest is t.manifest and t.run_dir == small_run
    assert set(t.checks) == {"rouge", "bleu"} and manifest_reads["n"] == 1
    r = api.load_run(small_run)
    assert isinstance(r.files, RunDir) and r.manifest["suite"]["name"] == r.suite == "owned"
    assert len(r.verdicts) == 2 * r.n_cases and manifest_reads["n"] == 2
