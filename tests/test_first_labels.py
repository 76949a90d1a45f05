"""Issue 44: a team's first hundred labels. With 100 labeled cases the default split (half for
calibration, 30 of each class needed there) fits no threshold: the run's summary and the report say so,
name the test split with its true labeled count, and call no case a false alarm or a miss."""

import json
import re
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from conftest import write
from typer.testing import CliRunner

from helpers.answers import swapped_answers
from verifybench.cli import app

N = 100


def cases() -> list[dict]:
    """100 support answers (seeded), half hallucinated: rouge ranks them imperfectly, but no threshold can
    be fitted on 50 calibration cases."""
    return swapped_answers(N)


def cli(*args):
    result = CliRunner().invoke(app, [str(a) for a in args])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return SimpleNamespace(code=result.exit_code, out=result.stdout, err=result.stderr)


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    return run(tmp_path_factory.mktemp("first"), {"bootstrap": 50, "estimate": "split"})


def run(tmp, metrics):
    data = write(tmp / "cases.jsonl", "".join(json.dumps(c) + "\n" for c in cases()))
    suite = write(tmp / "s.yaml", yaml.safe_dump({"name": "first", "dataset": {"loader": "jsonl", "path": str(data)},
                                                  "verifiers": ["rouge"], "metrics": metrics}))
    out = cli("run", suite, "--out", tmp / "run", "-q")
    assert out.code == 0, out.err
    metrics = json.loads((tmp / "run" / "metrics.json").read_text())
    return SimpleNamespace(run=tmp / "run", out=out.out, metrics=metrics)


def test_the_summary_names_the_test_split_with_its_true_count_and_says_there_is_no_threshold(small):
    n_test = small.metrics["split"]["test"]
    assert n_test > 30  # the premise: a test split exists, and no threshold does
    assert small.metrics["verifiers"]["rouge"]["overall"]["threshold"]["value"] is None
    text = " ".join(small.out.split())  # the table's title wraps
    assert "test split (0 cases)" not in text
    assert f"test split ({n_test} labeled cases)" in text
    assert "no threshold" in text
    assert "no threshold (30 scored cases of each class needed in the calibration split" in text


def test_the_report_calls_no_case_a_false_alarm_without_a_threshold(small):
    html = (small.run / "report.html").read_text()
    shown = re.findall(r'<span class="tag (?:missed|alarm)">([^<]*)</span>', html)
    assert shown, "the per-case view shows cases"
    assert not {"false alarm", "missed hallucination"} & set(shown)
    assert set(shown) <= {"lowest-scored hallucinated", "highest-scored faithful"}
    assert "missed hallucinations first, then false alarms" not in html
    n_test = small.metrics["split"]["test"]
    said = " ".join(re.sub(r"<[^>]+>", " ", html).split())
    assert f"no precision, recall or F1 is measured on the test split's {n_test} labeled cases" in said
    assert f"test split ({n_test} labeled cases)" in said


def test_at_a_threshold_the_same_cases_are_misses_and_false_alarms(tmp_path):
    lowered = run(tmp_path, {"bootstrap": 50, "min_per_class": 20, "estimate": "split"})
    assert lowered.metrics["verifiers"]["rouge"]["overall"]["threshold"]["value"] is not None
    text = " ".join(lowered.out.split())
    assert f"on the test split ({lowered.metrics['split']['test']} labeled cases) at the threshold" in text
    html = (lowered.run / "report.html").read_text()
    shown = set(re.findall(r'<span class="tag (?:missed|alarm)">([^<]*)</span>', html))
    assert shown == {"missed hallucination", "false alarm"}
    assert 'id="no-threshold"' not in html


def test_a_check_that_fails_on_every_case_is_said_to_fail_not_to_need_more_labels(tmp_path, monkeypatch):
    """Every verdict an error (nli on answers not in English): the note says how many failed and why; the
    advice to label more is left for the check that is short of labels only."""
    data = write(tmp_path / "cases.jsonl", "".join(json.dumps(c) + "\n" for c in cases()))
    suite = write(tmp_path / "s.yaml", yaml.safe_dump({
        "name": "refused", "dataset": {"loader": "jsonl", "path": str(data)},
        "verifiers": ["rouge", {"helpers.verifiers:Refuses": {"id": "english-only"}}],
        "metrics": {"bootstrap": 50, "estimate": "split"}}))
    out = cli("run", suite, "--out", tmp_path / "run", "-q")
    assert out.code == 0, out.err
    n_cal = json.loads((tmp_path / "run" / "metrics.json").read_text())["split"]["calibration"]
    refused = json.loads((tmp_path / "run" / "metrics.json").read_text())["verifiers"]["english-only"]["overall"]
    note = refused["threshold"]["warning"]
    assert (f"the verifier gave an error verdict on {n_cal} of the {n_cal} labeled calibration cases (most common, "
            f"on {n_cal}: ValueError: the model reads English only): labeling more cases will not give it a "
            "threshold") in note
    assert "label more" not in note and "--min-per-class" not in note
    text = " ".join(out.out.split())
    assert "english-only: no threshold: too few cases to fit a threshold: the calibration split has 0 hallucinated" \
           in text and f"error verdict on {n_cal} of the {n_cal}" in text
    rouge_note = next(line for line in out.out.splitlines() if line.startswith("* rouge: no threshold"))
    assert "label more" in rouge_note and "error verdict" not in rouge_note
    refused_policy = cli("thresholds", tmp_path / "run", "--out", tmp_path / "policy.yaml")
    said = " ".join(refused_policy.err.split())
    assert refused_policy.code == 2 and "To get one: fix what makes english-only fail (the run's errors.jsonl); " \
           "for the others, label more" in said


def test_cross_fitted_a_check_that_fails_on_every_case_is_said_to_fail(tmp_path):
    """The default for 100 labeled cases: rouge gets a threshold; the failing check's note says it failed
    on every labeled case, and `thresholds --out` of the failing check alone says to fix it."""
    data = write(tmp_path / "cases.jsonl", "".join(json.dumps(c) + "\n" for c in cases()))
    suite = write(tmp_path / "s.yaml", yaml.safe_dump({
        "name": "refused", "dataset": {"loader": "jsonl", "path": str(data)},
        "verifiers": [{"helpers.verifiers:Refuses": {"id": "english-only"}}], "metrics": {"bootstrap": 50}}))
    out = cli("run", suite, "--out", tmp_path / "run", "-q")
    assert out.code == 0, out.err
    m = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert m["estimate"] == "crossfit"
    note = m["verifiers"]["english-only"]["overall"]["threshold"]["warning"]
    assert (f"the verifier gave an error verdict on {N} of the {N} labeled cases (most common, on {N}: ValueError: "
            "the model reads English only)") in note
    said = " ".join(cli("thresholds", tmp_path / "run", "--out", tmp_path / "p.yaml").err.split())
    assert "To get one: fix what makes english-only fail (the run's errors.jsonl)" in said


ROOT = Path(__file__).resolve().parents[1]


def _section(text: str, heading: str) -> str:
    start = text.index(heading)
    end = text.find("\n## ", start + 1)
    return text[start:end if end > 0 else None]


@pytest.mark.parametrize("page", ["docs/thresholds.md", "docs/rollout.md"])
def test_the_first_screen_says_what_labeled_counts_give_with_measured_figures_only(page):
    first = " ".join(" ".join((ROOT / page).read_text(encoding="utf-8").splitlines()[:25]).split())
    measured = _section((ROOT / "benchmarks" / "README.md").read_text(encoding="utf-8"),
                        "## A team's first hundred labels (issue 44)")
    assert "300 labeled cases" in first and "cross-fitted" in first and "60 labeled cases" in first
    assert "`--min-per-class`" in first.replace(" N`", "`")
    assert "#watching-for-drift" in first
    # Every figure quoted there is one the benchmark measured (ranges quoted by their ends).
    figures = set(re.findall(r"\b\d\.\d+\b", first))
    assert figures and not {f for f in figures if f not in measured}, sorted(f for f in figures if f not in measured)
