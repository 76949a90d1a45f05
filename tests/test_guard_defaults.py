"""The defaults a new user meets on day one (issue 44): a guard in Python logs only where it is told to
while `verifybench serve` keeps ./guard-log; a bare policy of several checks runs its best held-out check
(or refuses, naming the choice); strip never sends an answer with no checkable claim left; one threshold
decides a unit's status and its flag."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import yaml

from helpers.guard_verifiers import fit_demo_policy
from verifybench.guard import Guard, GuardError
from verifybench.guard.spec import served_log_dir
from verifybench.loaders.guardlog import read_log

SENTENCES = "helpers.guard_verifiers:Sentences"
TEST_CODE = ["helpers.guard_verifiers"]
SOURCES = ["Northwind CRM pricing. The Team plan costs $29 per user per month and includes up to 10 user seats."]


@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    """A run of rouge and two sentence verifiers over the demo set, and the policy fitted on it."""
    base = tmp_path_factory.mktemp("defaults")
    _, _, policy = fit_demo_policy(base, ["rouge", {SENTENCES: {"id": "sentences"}},
                                          {"helpers.guard_verifiers:Claims": {"id": "claims"}}])
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


# -- 2. a bare policy of several checks -----------------------------------------------------------------


def _test_f1(doc: dict, vid: str) -> float:
    return doc["thresholds"][vid]["all"]["test_split"]["f1"]


def test_a_bare_policy_of_several_checks_runs_its_best_held_out_check_and_names_it(fitted):
    doc = yaml.safe_load(fitted["policy"].read_text())
    assert len(doc["verifiers"]) == 3
    usable = [vid for vid in doc["verifiers"]
              if not {"degenerate", "near_degenerate"} & set(doc["thresholds"][vid]["all"])]
    assert usable  # on the demo set rouge's threshold is near-degenerate: it is no candidate
    best = max(usable, key=lambda vid: _test_f1(doc, vid))
    with pytest.warns(UserWarning, match=f"this guard runs {best}, the best on the test split") as w:
        g = Guard(fitted["policy"], allow_code=TEST_CODE, log_dir=False)
    with g:
        assert [c.id for c in g.checks] == [best]
        assert "checks:" in str(w[0].message) and f"{_test_f1(doc, best):.3f}" in str(w[0].message)
        assert g.describe()["chosen"] == str(w[0].message) and list(g.describe()["checks"]) == [best]
        assert [r.verifier for r in g.check("The Team plan costs $29.", SOURCES).checks] == [best]
    # a choice made, by name or by asking for every check, is kept
    with Guard(fitted["policy"], allow_code=TEST_CODE, log_dir=False, combination="any") as g:
        assert [c.id for c in g.checks] == list(doc["verifiers"]) and g.describe()["chosen"] is None


def test_a_bare_policy_without_a_held_out_estimate_is_refused_naming_the_choice(fitted, tmp_path):
    doc = yaml.safe_load(fitted["policy"].read_text())
    for rows in doc["thresholds"].values():
        for row in rows.values():
            row.pop("test_split", None)
    doc.pop("run")  # its run would hold it to the file as written
    p = tmp_path / "policy.yaml"
    p.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    with pytest.raises(GuardError, match=r"records 3 checks \(rouge, sentences, claims\) and no held-out "
                                         r"estimate to choose one by .*sentences: no test-split F1.*"
                                         r"`checks: \[ID\]` in a guard file"):
        Guard(p, allow_code=TEST_CODE, log_dir=False)
    Guard(p, allow_code=TEST_CODE, log_dir=False, checks=["rouge"]).close()


# -- 3. strip never sends an answer with no claim left ----------------------------------------------------

PLEASANTRIES = "Hi!  Let me know if I can help with anything else."


def test_strip_blocks_an_answer_left_with_no_checkable_claim(fitted):
    with Guard(fitted["policy"], allow_code=TEST_CODE, log_dir=False, checks=["claims"], action="strip") as g:
        d = g.check("Purple dragons deliver 7 invoices daily. " + PLEASANTRIES, SOURCES)
        kept = g.check("The Team plan costs $29 per user per month. Purple dragons deliver 7 invoices daily. "
                       + PLEASANTRIES, SOURCES)
    assert [u.text for u in d.checks[0].units if u.flagged] == ["Purple dragons deliver 7 invoices daily."]
    assert d.action == "blocked" and d.response is None and not d.removed
    assert f"no checkable claim is left once the flagged units are removed (what remains: {PLEASANTRIES!r})" in d.reason
    # a claim the check let through is still worth sending
    assert kept.action == "rewritten" and kept.response == "The Team plan costs $29 per user per month. " + PLEASANTRIES


# -- 4. one threshold decides a unit ---------------------------------------------------------------------


def test_a_unit_s_status_is_what_the_check_s_threshold_says(fitted, tmp_path):
    """The sentence verifier calls a sentence supported up to 30% novel words; at a given threshold of 0.1
    a sentence 2/14 novel is flagged, and is shown unsupported, never supported and flagged at once."""
    doc = yaml.safe_load(fitted["policy"].read_text())
    doc["thresholds"]["sentences"] = {key: {"threshold": 0.1, "source": "given"}
                                      for key in doc["thresholds"]["sentences"]}
    p = tmp_path / "policy.yaml"
    p.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    answer = "Data export to CSV is supported on the Team plan. The Team plan costs $29 per user per month and " \
             "includes ten extra seats."
    with Guard(p, allow_code=TEST_CODE, log_dir=False, checks=["sentences"], action="strip") as g:
        d = g.check(answer, ["Data export to CSV is supported on the Team plan. " + SOURCES[0]])
    (first, second) = d.checks[0].units
    assert second.score == pytest.approx(2 / 14) and second.flagged and second.status == "unsupported"
    assert first.score == 0.0 and not first.flagged and first.status == "supported"
    assert d.action == "rewritten" and d.response == first.text
