"""The defaults a new user meets on day one (issue 44): a guard in Python logs only where it is told to
while `verifybench serve` keeps ./guard-log; a bare policy of several checks runs its best held-out check
(or refuses, naming the choice); strip never sends an answer with no checkable claim left; one threshold
decides a unit's status and its flag."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import yaml

import verifybench
from verifybench.guard import Guard
from verifybench.guard.spec import served_log_dir
from verifybench.loaders.guardlog import read_log

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "datasets" / "demo" / "cases.jsonl"
SENTENCES = "helpers.guard_verifiers:Sentences"
TEST_CODE = ["helpers.guard_verifiers"]
SOURCES = ["Northwind CRM pricing. The Team plan costs $29 per user per month and includes up to 10 user seats."]


@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    """A run of rouge and the sentence verifier over the demo set, and the policy fitted on it."""
    base = tmp_path_factory.mktemp("defaults")
    suite = base / "suite.yaml"
    suite.write_text(yaml.safe_dump({
        "name": "guard-defaults",
        "dataset": {"loader": "jsonl", "path": str(DEMO),
                    "fields": {"id": "id", "response": "response", "sources": "sources", "question": "question",
                               "label": "label", "doc_type": "doc_type", "split": "split"}},
        "verifiers": ["rouge", {SENTENCES: {"id": "sentences"}}], "metrics": {"by": "doc_type", "bootstrap": 20},
    }), encoding="utf-8")
    run = verifybench.run(suite, out=base / "run", progress=False)
    policy = base / "policy.yaml"
    verifybench.thresholds(run.run_dir, by="doc_type", target="youden", out=policy)
    return {"base": base, "policy": policy}


def _guard_file(path: Path, policy: Path, **keys) -> Path:
    path.write_text(yaml.safe_dump({"policy": str(policy), **keys}), encoding="utf-8")
    return path


# -- 1. where decisions are logged ----------------------------------------------------------------------


def test_a_guard_in_python_logs_only_where_it_is_told_to(fitted, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with Guard(fitted["policy"], allow_code=TEST_CODE, checks=["sentences"]) as g:
        g.check("The Team plan costs $29.", SOURCES)
        assert g.log is None
    assert list(tmp_path.iterdir()) == []  # no ./guard-log: a notebook never writes into the service's log
    told = _guard_file(tmp_path / "guard.yaml", fitted["policy"], checks=["sentences"], log={"dir": "mine"})
    with Guard(told, allow_code=TEST_CODE) as g:
        d = g.check("The Team plan costs $29.", SOURCES)
    assert [r.id for r in read_log(tmp_path / "mine")[0]] == [d.id]
    with Guard(fitted["policy"], allow_code=TEST_CODE, checks=["sentences"], log_dir=tmp_path / "given") as g:
        d = g.check("The Team plan costs $29.", SOURCES)
    assert [r.id for r in read_log(tmp_path / "given")[0]] == [d.id]


def test_a_served_guard_keeps_guard_log_unless_the_file_or_the_command_says_otherwise(fitted, tmp_path):
    policy = fitted["policy"]
    assert served_log_dir(policy, None) == "guard-log"
    assert served_log_dir(_guard_file(tmp_path / "a.yaml", policy), None) == "guard-log"
    assert served_log_dir(_guard_file(tmp_path / "b.yaml", policy, log={"dir": "prod-log"}), None) == "prod-log"
    assert served_log_dir(_guard_file(tmp_path / "c.yaml", policy, log={"dir": None}), None) is False
    assert served_log_dir(tmp_path / "c.yaml", tmp_path / "x") == tmp_path / "x"


def test_the_served_app_logs_to_guard_log_by_default(fitted, tmp_path, monkeypatch):
    from fastapi.testclient import TestClient

    from verifybench.guard.service import create_app

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("VERIFYBENCH_GUARD_TOKEN", raising=False)
    target = _guard_file(tmp_path / "guard.yaml", fitted["policy"], checks=["sentences"])
    with TestClient(create_app(target, allow_code=TEST_CODE)) as client:
        deadline = time.time() + 60
        while client.get("/readyz").status_code != 200 and time.time() < deadline:
            time.sleep(0.05)
        r = client.post("/v1/check", json={"response": "The Team plan costs $29.", "sources": SOURCES})
        assert r.status_code == 200, r.text
    assert [x.id for x in read_log(tmp_path / "guard-log")[0]] == [r.json()["id"]]
