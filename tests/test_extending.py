"""docs/extending.md's worked example (docs/examples/reviewed_answers.py), run end to end through its
suite as a user would: a loader and a verifier of one's own, named by import path."""

from __future__ import annotations

import pickle
import shutil
from pathlib import Path

import pytest

from verifybench import api
from verifybench.errors import DataError, SuiteError
from verifybench.loaders import dataset_hash, get_loader
from verifybench.rundir import read_verdicts
from verifybench.suite import load_suite
from verifybench.verifiers import build

EXAMPLES = Path(__file__).resolve().parents[1] / "docs" / "examples"
VERIFIER = "reviewed_answers:UnsupportedNumbers"


@pytest.fixture
def example(tmp_path, monkeypatch):
    """The example's suite and glossary in a fresh folder, its data written by its own generator."""
    monkeypatch.syspath_prepend(str(EXAMPLES))
    import reviewed_answers

    for name in ("reviewed-answers.yaml", "glossary.txt"):
        shutil.copy(EXAMPLES / name, tmp_path / name)
    reviewed_answers.write_example_data(tmp_path / "data")
    return tmp_path


def test_the_example_suite_runs_end_to_end(example):
    run = api.run(example / "reviewed-answers.yaml", out=example / "run", progress=False)
    verdicts = run.verdicts
    assert sorted(verdicts.verifier.unique()) == ["no-glossary", "rouge", "unsupported-numbers"]
    assert len(verdicts) == 3 * 80 and verdicts.error.isna().all()
    assert set(run.cases.doc_type) == {"billing", "shipping"}  # the loader's slices reached the metrics

    scores = verdicts.pivot(index="case_id", columns="verifier", values="score")
    labels = run.cases.set_index("case_id").label
    faithful = scores[~labels.reindex(scores.index).astype(bool)]
    # the glossary's "30" needs no source: with it no faithful answer scores; without it some do
    assert (faithful["unsupported-numbers"] == 0).all() and (faithful["no-glossary"] > 0).any()
    summary = run.summary.set_index("verifier")
    assert summary.loc["unsupported-numbers", "auroc"] > summary.loc["no-glossary", "auroc"]
    # a changed number is caught; per-number units carry offsets into the response
    changed = next(v for v in read_verdicts(run.run_dir)
                   if v.verifier == "unsupported-numbers" and v.case_id == "billing-1")
    assert changed.score == 0.5  # "Plan 1 costs 22 dollars": 1 is in the source, 22 is not
    unit = next(u for u in changed.units if u.status == "unsupported")
    response = run.cases.set_index("case_id").response["billing-1"]
    assert response[unit.start:unit.end] == unit.text == "22"


def test_the_loader_names_a_bad_row_by_file_and_line(example):
    path = example / "data" / "billing.tsv"
    lines = path.read_text().splitlines()
    lines[3] = lines[3].rsplit("\t", 1)[0] + "\tmaybe"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(DataError, match=r"billing\.tsv:4: field 'verdict'.*neither 'ok' nor 'wrong'"):
        api.run(example / "reviewed-answers.yaml", out=example / "run", progress=False)


def test_the_dataset_hash_covers_the_declared_files(example):
    before = dataset_hash(load_suite(example / "reviewed-answers.yaml").dataset)
    assert dataset_hash(load_suite(example / "reviewed-answers.yaml").dataset) == before
    shipping = example / "data" / "shipping.tsv"
    shipping.write_text(shipping.read_text().replace("ok\n", "wrong\n", 1))
    assert dataset_hash(load_suite(example / "reviewed-answers.yaml").dataset) != before


def test_the_verifier_hashes_what_changes_scores_and_pickles_without_its_glossary(example, tmp_path):
    glossary = example / "glossary.txt"
    base = build(VERIFIER, glossary=str(glossary))
    assert build(VERIFIER, glossary=str(glossary), log_every=10).config_hash == base.config_hash
    moved = tmp_path / "elsewhere" / "glossary.txt"
    moved.parent.mkdir()
    shutil.copy(glossary, moved)
    assert build(VERIFIER, glossary=str(moved)).config_hash == base.config_hash  # by name and content
    moved.write_text("30\n45\n")
    assert build(VERIFIER, glossary=str(moved)).config_hash != base.config_hash

    assert base.known() == {"30"} and base._known is not None
    copy = pickle.loads(pickle.dumps(base))
    assert copy._known is None and copy.known() == {"30"}

    with pytest.raises(SuiteError, match="option 'glosary'"):
        build(VERIFIER, glosary="x")
    assert get_loader("reviewed_answers:reviewed_answers").files(folder="d", teams=["a"]) == ["d/a.tsv"]
