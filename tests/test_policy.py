"""Threshold policy files: what `verifybench thresholds --out` writes is what `--policy` reads back, and a
bad file is refused naming the file and the entry."""

import pytest

from verifybench.errors import VerifybenchError
from verifybench.evaluation.policy import load_policy, save_policy
from verifybench.formats.policy import Policy


def _policy(**thresholds):
    return Policy.new(suite="s", by="doc_type", thresholds=thresholds)


def test_a_saved_policy_loads_back_with_its_slices_and_its_null_entries(tmp_path):
    path = save_policy(_policy(rouge={"all": {"threshold": 0.42, "source": "fitted"},
                                      "billing": {"threshold": 0.5}, "legal": {"threshold": None}},
                               bleu={"all": 0.7}), tmp_path / "sub" / "policy.yaml")
    by, mapping = load_policy(path)
    assert by == "doc_type"
    assert mapping == {"rouge": {"all": 0.42, "billing": 0.5, "legal": None}, "bleu": {"all": 0.7}}  # null: not gated


@pytest.mark.parametrize("text,message", [
    ("thresholds: {}\n", "not a verifybench policy"),
    ("by: doc_type\nthresholds: {rouge: [1, 2]}\n", "thresholds.rouge: Input should be a valid dictionary"),
    ("by: doc_type\nthresholds: {rouge: {all: {threshold: high}}}\n",
     r"thresholds.rouge.all.threshold: a threshold must be a finite number or null, got 'high'"),
    # NaN and +inf would never flag (a silent fail-open), -inf would flag everything
    ("by: doc_type\nthresholds: {rouge: {all: {threshold: .nan}}}\n", r"thresholds.rouge.all.threshold: .* got nan"),
    ("by: doc_type\nthresholds: {rouge: {all: {threshold: .inf}}}\n", r"thresholds.rouge.all.threshold: .* got inf"),
    ("by: doc_type\nthresholds: {rouge: {billing: -.inf}}\n", r"thresholds.rouge.billing: .* got -inf"),
    ("by: [unclosed\n", "invalid YAML"),
])
def test_a_bad_policy_names_the_file_and_the_entry(tmp_path, text, message):
    path = tmp_path / "policy.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(VerifybenchError, match=message) as e:
        load_policy(path)
    assert str(path) in str(e.value)


def test_a_missing_policy_file_is_named(tmp_path):
    with pytest.raises(VerifybenchError, match="nope.yaml: no such policy file"):
        load_policy(tmp_path / "nope.yaml")
