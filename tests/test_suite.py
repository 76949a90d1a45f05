from pathlib import Path

import pytest
from conftest import write

from verifybench.errors import SuiteError
from verifybench.suite import load_suite


def test_data_dir_found_beside_the_repository(root, data_dir):
    suite = load_suite(root / "evals/halueval-qa.yaml")
    assert Path(suite.dataset.options["path"]).resolve() == (data_dir / "halueval/qa_data.json").resolve()


def test_environment_beats_the_search(tmp_path, monkeypatch, root):
    monkeypatch.setenv("VERIFYBENCH_DATA", str(tmp_path))
    suite = load_suite(root / "evals/summedits.yaml")
    assert suite.dataset.options["path"] == str(tmp_path / "summedits")


def test_missing_data_dir_is_explained(tmp_path, monkeypatch):
    monkeypatch.delenv("VERIFYBENCH_DATA", raising=False)
    f = write(tmp_path / "s.yaml", "dataset:\n  loader: halueval\n  path: ${VERIFYBENCH_DATA}/x.json\nverifiers: [rouge]\n")
    with pytest.raises(SuiteError, match=r"VERIFYBENCH_DATA\} is not set.*--data-dir"):
        load_suite(f)


def test_relative_paths_resolve_against_the_suite(tmp_path):
    f = write(tmp_path / "evals/s.yaml", "dataset: {loader: jsonl, path: ../data/c.jsonl}\nverifiers: [rouge]\n")
    assert load_suite(f).dataset.options["path"] == str((tmp_path / "data/c.jsonl").resolve())


def test_yaml_error_names_line(tmp_path):
    f = write(tmp_path / "s.yaml", "name: x\ndataset: {loader: jsonl\nverifiers: [rouge]\n")
    with pytest.raises(SuiteError, match=r"s.yaml:3:\d+: invalid YAML"):
        load_suite(f)


def test_verifier_ids(tmp_path):
    f = write(tmp_path / "s.yaml", "dataset: {loader: jsonl, path: c.jsonl}\n"
                                   "verifiers: [rouge, {rouge: {type: rouge2, id: rouge2}}]\n")
    suite = load_suite(f)
    assert [(e.id, e.name, e.options) for e in suite.verifiers] == [
        ("rouge", "rouge", {}), ("rouge2", "rouge", {"type": "rouge2"})]
    dup = write(tmp_path / "d.yaml", "dataset: {loader: jsonl, path: c.jsonl}\nverifiers: [rouge, {rouge: {type: rouge2}}]\n")
    with pytest.raises(SuiteError, match="id 'rouge' is used twice"):
        load_suite(dup)


def test_unknown_top_level_key(tmp_path):
    f = write(tmp_path / "s.yaml", "dataset: {loader: jsonl, path: c.jsonl}\nverifiers: [rouge]\nverifers: []\n")
    with pytest.raises(SuiteError, match="verifers"):
        load_suite(f)


def test_limit_override_changes_the_hash(root):
    assert load_suite(root / "evals/demo.yaml").hash != load_suite(root / "evals/demo.yaml", limit=10).hash


def test_an_unknown_key_in_fields_names_the_file_and_the_key(tmp_path):
    f = write(tmp_path / "s.yaml", "dataset:\n  loader: csv\n  path: c.csv\n  fields: {respnse: answer, label: verdict}\n"
                                   "verifiers: [rouge]\n")
    with pytest.raises(SuiteError, match=rf"{f}: dataset.fields: unknown key 'respnse'; the keys are: id, response"):
        load_suite(f)


def test_a_bad_fields_value_names_the_key(tmp_path):
    f = write(tmp_path / "s.yaml", "dataset: {loader: jsonl, path: c.jsonl, fields: {label: [a, b]}}\nverifiers: [rouge]\n")
    with pytest.raises(SuiteError, match=rf"{f}: dataset.fields.label: "):
        load_suite(f)


def test_a_label_column_pointing_the_other_way_is_a_suite_error(tmp_path):
    f = write(tmp_path / "s.yaml", "dataset: {loader: csv, path: c.csv, fields: {label: is_correct}}\nverifiers: [rouge]\n")
    with pytest.raises(SuiteError, match=rf"{f}: dataset.fields: the label column 'is_correct' sounds like true/1"):
        load_suite(f)
    ok = write(tmp_path / "ok.yaml", "dataset: {loader: csv, path: c.csv, fields: {label: is_correct, positive: faithful}}\n"
                                     "verifiers: [rouge]\n")
    assert load_suite(ok).dataset.options["fields"]["positive"] == "faithful"


def test_loader_and_its_options_are_checked_when_the_suite_is_read(tmp_path):
    f = write(tmp_path / "s.yaml", "dataset: {loader: jsonl, path: c.jsonl, delimiter: ';'}\nverifiers: [rouge]\n")
    with pytest.raises(SuiteError, match=rf"{f}: dataset: loader 'jsonl' takes no option 'delimiter'"):
        load_suite(f)
    f = write(tmp_path / "u.yaml", "dataset: {loader: jsonlines, path: c.jsonl}\nverifiers: [rouge]\n")
    with pytest.raises(SuiteError, match=rf"{f}: unknown loader 'jsonlines'"):
        load_suite(f)


def test_a_plugin_loader_by_import_path_and_its_relative_options(tmp_path):
    """A plugin's options written as "./x" or "../x" are relative to the suite, as verifier options are."""
    f = write(tmp_path / "evals/s.yaml", "dataset: {loader: 'helpers.loaders:tickets', folder: ../data/tickets}\n"
                                         "verifiers: [rouge]\n")
    assert load_suite(f).dataset.options["folder"] == str((tmp_path / "data/tickets").resolve())
    f = write(tmp_path / "evals/t.yaml", "dataset: {loader: 'helpers.loaders:tickets', folder: tickets, teams: [a]}\n"
                                         "verifiers: [rouge]\n")
    assert load_suite(f).dataset.options == {"folder": "tickets", "teams": ["a"]}


def test_missing_shared_data_skips_with_a_reason(tmp_path, monkeypatch):
    import conftest

    monkeypatch.setenv("VERIFYBENCH_DATA", str(tmp_path / "nowhere"))
    assert conftest.shared_data() is None
    with pytest.raises(pytest.skip.Exception, match=r"missing from the shared datasets .*: halueval/qa_data.json"):
        conftest.need_shared(tmp_path, "halueval/qa_data.json")
    (tmp_path / "halueval").mkdir()
    (tmp_path / "halueval/qa_data.json").write_text("[]")
    assert conftest.need_shared(tmp_path, "halueval/qa_data.json") == [tmp_path / "halueval/qa_data.json"]
