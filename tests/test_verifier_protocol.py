"""The verifier protocol the base class enforces once for every verifier: abstract methods fail when the
suite is built, operational options stay out of the config hash (at any depth), lazy parts are built
once and never pickled; and the renames that gave each name one meaning."""

from __future__ import annotations

import json
import pickle
import threading

import pytest

from helpers.protocol_verifiers import LazyPart, Part
from verifybench import api
from verifybench.cases import Case
from verifybench.errors import SuiteError
from verifybench.suite import parse_suite
from verifybench.verifiers import build
from verifybench.verifiers.base import AFFECTS_SCORES, scored_options


def case(cid="c", response="An answer of some length.") -> Case:
    return Case(id=cid, dataset="t", response=response, label=False)


# --- abstract methods: fail when built -------------------------------------------------------------------

@pytest.mark.parametrize("cls, message", [
    ("NoVerify", "does not implement verify"),
    ("NoScoreCase", "does not implement score_case"),
    ("NoName", "sets no `name`"),
])
def test_an_incomplete_plugin_fails_when_built(cls, message):
    with pytest.raises(SuiteError, match=message) as raised:
        build(f"helpers.protocol_verifiers:{cls}")
    assert f"helpers.protocol_verifiers.{cls}" in str(raised.value)  # names the class to fix


def test_an_incomplete_plugin_stops_the_run_before_any_verdict(tmp_path, root):
    suite = parse_suite({"name": "broken", "dataset": {"loader": "jsonl", "path": str(root / "datasets/demo/cases.jsonl"),
                                                      "limit": 5},
                         "verifiers": ["rouge", "helpers.protocol_verifiers:NoScoreCase"]}, tmp_path)
    with pytest.raises(SuiteError, match="does not implement score_case"):
        api.run(suite, out=tmp_path / "run", progress=False)
    assert not (tmp_path / "run/results.jsonl").exists()


# --- operational options: out of the config hash ---------------------------------------------------------

def test_operational_options_do_not_change_the_hash_and_are_marked_in_the_schema():
    a, b = build("helpers.protocol_verifiers:LazyPart"), build("helpers.protocol_verifiers:LazyPart", workers=8)
    assert a.config == {"name": "lazy-part", "weight": 1.0} and a.config_hash == b.config_hash
    assert build("helpers.protocol_verifiers:LazyPart", weight=2.0).config_hash != a.config_hash
    schema = build("judge").Options.model_json_schema()["properties"]
    assert schema["cache_dir"][AFFECTS_SCORES] is False and AFFECTS_SCORES not in schema["model"]


@pytest.mark.parametrize("name, same, different", [
    ("judge", {"cache_dir": "/elsewhere", "timeout_s": 5, "retries": 0, "backoff_s": 0, "max_backoff_s": 0,
               "concurrency": 1, "replay_only": True}, {"temperature": 0.5}),
    ("anchors", {"cache_dir": None, "batch_size": 8}, {"chunk_sentences": 2}),
    ("decision", {"cache_dir": None, "audit_dir": "/x", "timeout_s": 1, "retries": 0}, {"policy": {"min_relevance": 0.2}}),
    ("compliance", {"cache_dir": "/other"}, {"evidence_k": 3}),
])
def test_what_each_verifier_leaves_out_of_its_hash(name, same, different):
    base = {"corpus": "c.jsonl"} if name == "compliance" else {}
    h = build(name, **base).config_hash
    assert build(name, **base, **same).config_hash == h
    assert build(name, **base, **different).config_hash != h


def test_the_committed_demo_baseline_hashes_still_match(root):
    """metrics/demo.json records the config hashes of rouge, bleu and anchors: unchanged options must
    still hash the same, or a gate against that baseline would call every verifier changed."""
    baseline = json.loads((root / "metrics/demo.json").read_text())["verifiers"]
    assert baseline
    for vid, entry in baseline.items():
        options = {k: v for k, v in entry["config"].items() if k != "name"}
        assert build(entry["config"]["name"], id=vid, **options).config_hash == entry["config_hash"], vid


def test_compliance_resumes_when_the_cache_location_changes(tmp_path, root, monkeypatch):
    """cache_dir defaults to $VERIFYBENCH_CACHE/embeddings: it used to be in the hash, so a resume on a
    machine (or a shell) with another VERIFYBENCH_CACHE was refused as a changed configuration."""
    monkeypatch.setenv("VERIFYBENCH_CACHE", str(tmp_path / "cache-a"))
    suite = parse_suite({"name": "comp", "dataset": {"loader": "jsonl", "path": str(root / "datasets/compliance/cases.jsonl"),
                                                    "limit": 4, "fields": {"id": "id", "response": "response",
                                                                           "question": "question", "label": "label"}},
                         "verifiers": [{"compliance": {"corpus": str(root / "datasets/compliance/corpus.jsonl"),
                                                       "dense": False}}]}, tmp_path)
    api.run(suite, out=tmp_path / "run", progress=False)
    lines = (tmp_path / "run/results.jsonl").read_text().splitlines()
    assert len(lines) == 4
    # Kill-like state: the last verdict lost; then resume from a shell with another cache location.
    (tmp_path / "run/results.jsonl").write_text("\n".join(lines[:3]) + "\n")
    monkeypatch.setenv("VERIFYBENCH_CACHE", str(tmp_path / "cache-b"))
    api.resume(tmp_path / "run", progress=False)
    resumed = [json.loads(line) for line in (tmp_path / "run/results.jsonl").read_text().splitlines()]
    assert sorted(v["case_id"] for v in resumed) == sorted(json.loads(line)["case_id"] for line in lines)


def test_nested_operational_fields_are_left_out_too():
    v = build("compliance", corpus="c.jsonl", extractor="llm", llm={"model": "m", "timeout_s": 3})
    assert scored_options(v.options)["llm"] == {**v.config["llm"]} and "timeout_s" not in v.config["llm"]
    assert "cache_dir" not in v.config and v.config["llm"]["model"] == "m"


# --- lazy parts: built once, never pickled ---------------------------------------------------------------

def test_a_lazy_part_is_built_once_under_concurrent_first_use():
    v = build("helpers.protocol_verifiers:LazyPart")
    before = Part.built
    threads = [threading.Thread(target=v.part) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert Part.built == before + 1


def test_lazy_parts_of_every_class_in_the_hierarchy_are_dropped_when_pickled():
    v = build("helpers.protocol_verifiers:Sub")
    first = v.verify([case()])[0]
    assert v._part is not None and v._other is not None  # both hold an unpicklable lock
    clone = pickle.loads(pickle.dumps(v))
    assert clone._part is None and clone._other is None
    assert clone.verify([case()])[0].score == first.score and clone._part is not None


@pytest.mark.parametrize("name, attr", [("rouge", "_scorer"), ("bleu", "_bleu"), ("judge", "_client")])
def test_builtin_verifiers_drop_their_parts_through_the_base(name, attr, tmp_path):
    v = build(name, **({"backend": "openai", "model": "m", "cache_dir": str(tmp_path)} if name == "judge" else {}))
    if name == "judge":
        v.client()
    else:
        v._metric()
    assert getattr(v, attr) is not None
    assert getattr(pickle.loads(pickle.dumps(v)), attr) is None
    assert "__getstate__" not in vars(type(v))  # one implementation: the base class's


def test_error_verdicts_are_scrubbed(monkeypatch):
    from verifybench.verifiers.llm import register_secret

    register_secret("sk-PROTOCOL-SECRET-123456")

    class Leaky(LazyPart):
        name = "leaky"

        def score_case(self, case):
            raise RuntimeError("upstream said: Authorization: Bearer sk-PROTOCOL-SECRET-123456")

    verdict = Leaky().verify([case()])[0]
    assert "sk-PROTOCOL-SECRET" not in verdict.error and verdict.error.startswith("RuntimeError: upstream said")


# --- one meaning per name --------------------------------------------------------------------------------

def test_one_meaning_per_name():
    import verifybench.evaluation.policy as threshold_policy
    from verifybench.verifiers.anchors import text
    from verifybench.verifiers.decision import cassettes, triage, units
    from verifybench.verifiers.llm import ReplayMiss

    assert cassettes.ReplayMiss is ReplayMiss  # one class: a request no recording answers
    assert not hasattr(text, "Claim") and not hasattr(text, "Span")  # AtomicClaim, Sentence
    assert not hasattr(units, "KINDS") and units.UNIT_KINDS[0] == "chunk"
    assert hasattr(triage, "TriageOptions") and hasattr(threshold_policy, "load_policy")
    with pytest.raises(ImportError):
        import verifybench.verifiers.decision.policy  # noqa: F401
    with pytest.raises(ImportError):
        import verifybench.verifiers.judge.backends  # noqa: F401


def test_a_path_option_hashes_by_name_and_content_not_by_where_it_lies(tmp_path):
    from verifybench.verifiers import build

    def judge_with_templates(folder, text):
        (folder / "templates").mkdir(parents=True)
        (folder / "templates" / "qa.j2").write_text(text, encoding="utf-8")
        return build("judge", templates_dir=str(folder / "templates"))

    here = judge_with_templates(tmp_path / "checkout-a", "Is {{ response }} supported?")
    there = judge_with_templates(tmp_path / "elsewhere" / "checkout-b", "Is {{ response }} supported?")
    assert here.config["templates_dir"] != there.config["templates_dir"]  # the manifest keeps the path
    assert here.config_hash == there.config_hash
    edited = judge_with_templates(tmp_path / "checkout-c", "Is {{ response }} faithful?")
    assert edited.config_hash != here.config_hash
