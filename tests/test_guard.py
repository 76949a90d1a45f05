"""The guard in Python: built from a policy, refusing another configuration, deciding as `run --policy`
does, and following its actions, mode and failure settings; the decision log and its loader."""

from __future__ import annotations

import asyncio
import json
import shutil
import time
from pathlib import Path

import pytest
import yaml

import verifybench
from verifybench.evaluation.policy import native_threshold
from verifybench.guard import Guard, GuardError, strip_spans
from verifybench.loaders import DatasetSpec, iter_cases
from verifybench.loaders.guardlog import read_log

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "datasets" / "demo" / "cases.jsonl"
SENTENCES = "helpers.guard_verifiers:Sentences"
TEST_CODE = ["helpers.guard_verifiers"]  # the policies name test verifiers by import path: allowed here


def _suite(path: Path, verifiers: list) -> Path:
    path.write_text(yaml.safe_dump({
        "name": "guard-demo",
        "dataset": {"loader": "jsonl", "path": str(DEMO),
                    "fields": {"id": "id", "response": "response", "sources": "sources", "question": "question",
                               "label": "label", "doc_type": "doc_type", "split": "split"}},
        "verifiers": verifiers, "metrics": {"by": "doc_type", "bootstrap": 50},
    }), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    """A run of rouge and the sentence verifier over the demo set, and the policy fitted on it."""
    base = tmp_path_factory.mktemp("guard")
    suite = _suite(base / "suite.yaml", ["rouge", {SENTENCES: {"id": "sentences"}}])
    run = verifybench.run(suite, out=base / "run", progress=False)
    policy = base / "policy.yaml"
    verifybench.thresholds(run.run_dir, by="doc_type", target="youden", out=policy)
    return {"base": base, "suite": suite, "run": run, "policy": policy}


def _demo_cases() -> list[dict]:
    return [json.loads(line) for line in DEMO.read_text(encoding="utf-8").splitlines() if line.strip()]


def _item(c: dict) -> dict:
    return {"response": c["response"], "sources": c["sources"], "question": c.get("question"),
            "doc_type": c.get("doc_type"), "request_id": c["id"]}


def test_decisions_equal_run_with_policy(fitted, tmp_path):
    applied = verifybench.run(fitted["suite"], out=tmp_path / "applied", progress=False, policy=fitted["policy"])
    v = applied.verdicts
    cases = _demo_cases()
    with Guard(fitted["policy"], allow_code=TEST_CODE, log_dir=False, checks=["rouge", "sentences"]) as g:
        many = g.check_many([_item(c) for c in cases])
        one = [g.check(**_item(c)) for c in cases[:40]]
    for vid in ("rouge", "sentences"):
        want = v[v["verifier"] == vid].set_index("case_id")
        for c, d in zip(cases, many):
            r = next(r for r in d.checks if r.verifier == vid)
            assert r.score == pytest.approx(float(want.loc[c["id"], "score"]), abs=1e-12)
            assert r.flagged == bool(want.loc[c["id"], "slice_flagged"]), (vid, c["id"])
            assert r.threshold == pytest.approx(float(want.loc[c["id"], "slice_threshold"]))
        for c, d in zip(cases[:40], one):
            r = next(r for r in d.checks if r.verifier == vid)
            assert r.flagged == bool(want.loc[c["id"], "slice_flagged"])
    assert {d.action for d in many} == {"allowed", "flagged"}  # the test is not vacuous


def test_the_policy_records_each_verifiers_options_hash_and_native_thresholds(fitted):
    doc = yaml.safe_load(fitted["policy"].read_text())
    manifest = json.loads((fitted["run"].run_dir / "manifest.json").read_text())
    hashes = {v["id"]: v["config_hash"] for v in manifest["verifiers"]}
    assert {k: v["config_hash"] for k, v in doc["verifiers"].items()} == hashes
    assert doc["verifiers"]["sentences"]["name"] == SENTENCES
    # the run, relative to the policy's folder: no absolute path of this machine in the file
    assert doc["run"] == "run" and (fitted["policy"].parent / doc["run"]).resolve() == fitted["run"].run_dir.resolve()
    t = doc["thresholds"]["rouge"]["all"]["threshold"]
    assert doc["thresholds"]["rouge"]["all"]["native"] == f"rouge1 precision <= {1 - t:.4g}"


def test_a_scores_detector_reads_its_threshold_on_its_own_scale(tmp_path):
    assert native_threshold({"name": "scores", "file": "v.csv", "column": "consistency", "higher_means": "faithful",
                             "scale": 100}, 0.46) == "consistency <= 54"
    rows = []
    for i in range(160):
        bad = i % 2 == 0
        rows.append({"id": f"c{i}", "response": "r", "sources": ["s"], "label": bad,
                     "consistency": (i * 7) % 60 if bad else 40 + (i * 11) % 60})
    run = verifybench.run(cases=rows, fields={"meta": ["consistency"]}, out=tmp_path / "run", progress=False,
                          verifiers=[{"scores": {"field": "meta.consistency", "higher_means": "faithful", "scale": 100,
                                                 "id": "vendor"}}], metrics={"bootstrap": 20})
    policy = tmp_path / "policy.yaml"
    doc = verifybench.thresholds(run.run_dir, out=policy)
    t = doc.thresholds["vendor"]["all"].threshold
    native = doc.thresholds["vendor"]["all"].native
    assert native == f"consistency <= {(1 - t) * 100:.4g}"
    bound = float(native.split("<=")[1])
    with Guard(policy, allow_code=TEST_CODE, log_dir=False) as g:
        for value in (bound - 1, bound, bound + 1):
            d = g.check("r", ["s"], meta={"consistency": value})
            assert d.checks[0].native == native
            assert d.checks[0].flagged == (value <= bound)


def test_a_verifier_config_hash_other_than_the_policys_refuses_to_start(fitted, tmp_path):
    other = _suite(tmp_path / "other.yaml", [{"rouge": {"type": "rouge2"}}, {SENTENCES: {"id": "sentences"}}])
    guard_file = tmp_path / "guard.yaml"
    guard_file.write_text(yaml.safe_dump({"policy": str(fitted["policy"]), "suite": str(other),
                                          "checks": ["rouge", "sentences"]}))
    want = yaml.safe_load(fitted["policy"].read_text())["verifiers"]["rouge"]["config_hash"]
    with pytest.raises(GuardError) as e:
        Guard(guard_file, allow_code=TEST_CODE, log_dir=False)
    assert want in str(e.value) and "rouge2" in str(e.value)
    from verifybench.verifiers import build

    assert build("rouge", type="rouge2").config_hash in str(e.value)
    # the options edited in the policy itself, its hash left as fitted
    doc = yaml.safe_load(fitted["policy"].read_text())
    doc["verifiers"]["rouge"]["options"]["type"] = "rougeL"
    edited = tmp_path / "edited.yaml"
    edited.write_text(yaml.safe_dump(doc, sort_keys=False))
    with pytest.raises(GuardError, match="differs from the policy's"):
        Guard(edited, allow_code=TEST_CODE, log_dir=False, checks=["rouge", "sentences"])
    # the same suite as the run: accepted
    guard_file.write_text(yaml.safe_dump({"policy": str(fitted["policy"]), "suite": str(fitted["suite"]),
                                          "checks": ["rouge", "sentences"]}))
    Guard(guard_file, allow_code=TEST_CODE, log_dir=False).close()


def test_an_old_policy_without_verifier_configs_is_refused_with_the_command_to_refit(fitted, tmp_path):
    doc = yaml.safe_load(fitted["policy"].read_text())
    del doc["verifiers"]
    old = tmp_path / "old.yaml"
    old.write_text(yaml.safe_dump(doc, sort_keys=False))
    with pytest.raises(GuardError, match="verifybench thresholds RUN_DIR --by doc_type --out old.yaml"):
        Guard(old, allow_code=TEST_CODE, log_dir=False)


def test_a_doc_type_without_a_slice_uses_the_whole_set_threshold_and_says_so(fitted):
    doc = yaml.safe_load(fitted["policy"].read_text())
    with Guard(fitted["policy"], allow_code=TEST_CODE, log_dir=False, checks=["rouge"]) as g:
        d = g.check("Anything at all.", ["Something else."], doc_type="a-new-product")
        known = g.check("Anything at all.", ["Something else."], doc_type="contract_summary")
    r = d.checks[0]
    assert r.slice == "all" and r.threshold_source == "fallback" and "a-new-product" in r.note
    assert r.threshold == doc["thresholds"]["rouge"]["all"]["threshold"]
    row = doc["thresholds"]["rouge"]["contract_summary"]
    assert known.checks[0].threshold == row["threshold"]
    assert known.checks[0].threshold_source == {"fitted": "slice", "fallback": "fallback", "given": "fixed"}[row["source"]]


ANSWER = ("The Team plan costs $29 per user per month. Purple dragons deliver every invoice by carrier pigeon. "
          "Data export to CSV is supported on the Team plan.")
SOURCES = ["Northwind CRM pricing. The Team plan costs $29 per user per month and includes up to 10 user seats. "
           "Data export to CSV is supported on the Team plan, but API access is not included."]


def test_shadow_decides_and_logs_but_never_changes_the_response(fitted, tmp_path):
    out = {}
    for mode in ("enforce", "shadow"):
        with Guard(fitted["policy"], allow_code=TEST_CODE, log_dir=tmp_path / mode, checks=["sentences"],
                   action="block", mode=mode) as g:
            out[mode] = g.check(ANSWER, SOURCES, request_id=f"req-{mode}")
    assert out["enforce"].action == out["shadow"].action == "blocked"
    assert out["enforce"].response is None and out["enforce"].applied
    assert out["shadow"].response == ANSWER and not out["shadow"].applied
    for mode in ("enforce", "shadow"):
        (rec,), torn = read_log(tmp_path / mode)
        assert not torn
        assert rec.decision.mode == mode and rec.decision.action == "blocked"
        assert rec.decision.request_id == f"req-{mode}" and rec.response == ANSWER


def test_strip_removes_exactly_the_flagged_units(fitted):
    with Guard(fitted["policy"], allow_code=TEST_CODE, log_dir=False, checks=["sentences"], action="strip") as g:
        d = g.check(ANSWER, SOURCES)
    assert d.action == "rewritten" and d.applied
    units = d.checks[0].units
    flagged = [u for u in units if u.flagged]
    assert flagged and len(flagged) < len(units)
    for u in units:
        assert (u.text in d.response) != u.flagged, u
    assert [(r.start, r.end, r.text) for r in d.removed] == [(u.start, u.end, u.text) for u in flagged]
    assert d.response == strip_spans(ANSWER, [(u.start, u.end) for u in flagged])
    assert "Purple dragons" not in d.response and d.response.startswith("The Team plan costs $29")


def test_strip_cannot_cut_a_check_without_offsets_so_it_blocks(fitted):
    with Guard(fitted["policy"], allow_code=TEST_CODE, log_dir=False, checks=["rouge"], action="strip") as g:
        d = g.check("Completely unrelated words here.", SOURCES, doc_type="support_answer")
    assert d.action == "blocked" and "no flagged unit with offsets" in d.reason and d.response is None


@pytest.mark.parametrize("on_error,want", [("allow", "allowed"), ("flag", "flagged"), ("block", "blocked")])
def test_timeouts_and_verifier_errors_follow_on_error(fitted, on_error, want):
    with Guard(fitted["policy"], allow_code=TEST_CODE, log_dir=False, checks=["sentences"], timeout_ms=100, on_error=on_error,
               action="flag") as g:
        t0 = time.perf_counter()
        slow = g.check("The Team plan costs $29 per user per month.", SOURCES, meta={"sleep_ms": 700})
        took = time.perf_counter() - t0
        time.sleep(0.7)  # the verifier's one worker is still busy with the slow case: let it finish
        broken = g.check("The Team plan costs $29 per user per month.", SOURCES, meta={"fail": True})
        fine = g.check("The Team plan costs $29 per user per month.", SOURCES)
        assert g.counts["timeouts"] == 1 and g.counts["errors"] == 2
    assert took < 0.5  # the budget, not the verifier, decided when the caller got an answer
    assert slow.checks[0].timed_out and slow.action == want and slow.timeouts == 1
    assert broken.checks[0].error and "planted failure" in broken.checks[0].error and broken.action == want
    assert fine.action == "allowed" and fine.errors == 0


def test_raise_errors_raises_into_the_caller_when_asked(fitted):
    with Guard(fitted["policy"], allow_code=TEST_CODE, log_dir=False, checks=["sentences"], raise_errors=True) as g:
        with pytest.raises(GuardError, match="planted failure"):
            g.check("x.", SOURCES, meta={"fail": True})


def test_acheck_equals_check_and_concurrent_requests_are_batched(fitted, tmp_path):
    from helpers.guard_verifiers import SentencesBatched

    suite = _suite(tmp_path / "b.yaml", [{"helpers.guard_verifiers:SentencesBatched": {"id": "nb"}}])
    run = verifybench.run(suite, out=tmp_path / "run", progress=False)
    policy = tmp_path / "policy.yaml"
    verifybench.thresholds(run.run_dir, out=policy)
    cases = _demo_cases()[:48]
    with Guard(policy, allow_code=TEST_CODE, log_dir=tmp_path / "log", batch_wait_ms=5) as g:
        SentencesBatched.sizes.clear()
        alone = g.check(**_item(cases[0]))
        assert SentencesBatched.sizes == [1]  # alone: scored at once, not held for company
        sync = [g.check(**_item(c)) for c in cases]

        async def many():
            return await asyncio.gather(*(g.acheck(**{**_item(c), "meta": {"sleep_ms": 5}}) for c in cases))

        SentencesBatched.sizes.clear()
        concurrent = asyncio.run(many())
    assert max(SentencesBatched.sizes) > 1 and sum(SentencesBatched.sizes) == len(cases)
    assert [d.checks[0].score for d in sync] == [d.checks[0].score for d in concurrent]
    assert [d.action for d in sync] == [d.action for d in concurrent]
    assert alone.checks[0].score == sync[0].checks[0].score
    recs, _ = read_log(tmp_path / "log")
    assert len(recs) == 1 + 2 * len(cases) and len({r.id for r in recs}) == len(recs)


def test_cascade_takes_its_bounds_from_the_calibration_split(fitted, tmp_path):
    cases = _demo_cases()
    with Guard(fitted["policy"], allow_code=TEST_CODE, log_dir=False, checks=["rouge", "sentences"], combination="cascade") as g:
        low, high = g.bounds
        decisions = g.check_many([_item(c) for c in cases])
    assert low is not None or high is not None
    skipped = [d for d in decisions if d.checks[1].skipped]
    ran = [d for d in decisions if not d.checks[1].skipped]
    assert skipped and ran
    for d in skipped:
        s = d.checks[0].score
        assert (high is not None and s >= high) or (low is not None and s <= low)
        assert d.flagged == (high is not None and s >= high)
    for d in ran:
        s = d.checks[0].score
        assert not ((high is not None and s >= high) or (low is not None and s <= low))
        assert d.flagged == d.checks[1].flagged
    # the bounds are the calibration split's: on it, the cheap check's confident decisions are right
    v = fitted["run"].verdicts
    cal = v[(v["verifier"] == "rouge") & (v["split"] == "calibration")]
    if high is not None:
        assert cal[cal["score"] >= high]["label"].mean() >= 0.95
    if low is not None:
        assert (~cal[cal["score"] <= low]["label"].astype(bool)).mean() >= 0.95


def test_a_policy_moved_with_its_run_keeps_its_cascade(fitted, tmp_path):
    """The policy names its run relative to itself: the two copied elsewhere together (a deploy, a commit)
    give the same cascade bounds; the policy copied alone is refused with the path it looked for."""
    with Guard(fitted["policy"], allow_code=TEST_CODE, log_dir=False, checks=["rouge", "sentences"], combination="cascade") as g:
        want = g.bounds
    moved = tmp_path / "moved"
    shutil.copytree(fitted["run"].run_dir, moved / "run")
    shutil.copy(fitted["policy"], moved / "policy.yaml")
    with Guard(moved / "policy.yaml", allow_code=TEST_CODE, log_dir=False, checks=["rouge", "sentences"],
               combination="cascade") as g:
        assert g.bounds == want
    alone = tmp_path / "alone"
    alone.mkdir()
    shutil.copy(fitted["policy"], alone / "policy.yaml")
    with pytest.raises(GuardError, match=f"its run {alone / 'run'} is not here"):
        Guard(alone / "policy.yaml", allow_code=TEST_CODE, log_dir=False, checks=["rouge", "sentences"], combination="cascade")


def test_a_cascade_without_its_run_is_refused(fitted, tmp_path):
    doc = yaml.safe_load(fitted["policy"].read_text())
    doc.pop("run")
    p = tmp_path / "p.yaml"
    p.write_text(yaml.safe_dump(doc, sort_keys=False))
    with pytest.raises(GuardError, match="calibration split of the run"):
        Guard(p, allow_code=TEST_CODE, log_dir=False, checks=["rouge", "sentences"], combination="cascade")
    Guard(p, allow_code=TEST_CODE, log_dir=False, checks=["rouge", "sentences"], combination="any").close()


def test_the_log_rotates_skips_a_torn_last_line_and_reads_as_a_dataset(fitted, tmp_path):
    guard_file = tmp_path / "guard.yaml"
    guard_file.write_text(yaml.safe_dump({"policy": str(fitted["policy"]), "checks": ["rouge"],
                                          "log": {"dir": str(tmp_path / "log"), "max_bytes": 4096}}))
    cases = _demo_cases()[:30]
    with Guard(guard_file, allow_code=TEST_CODE) as g:
        decisions = [g.check(**_item(c), meta={"ticket": c["id"]}) for c in cases]
    files = sorted((tmp_path / "log").glob("decisions-*.jsonl"))
    assert len(files) > 1 and all(f.stat().st_size < 4096 + 4000 for f in files)
    with open(files[-1], "ab") as f:
        f.write(b'{"id": "cut-sh')
    recs, torn = read_log(tmp_path / "log")
    assert [r.id for r in recs] == [d.id for d in decisions]
    assert len(torn.where) == 1 and torn.where[0].startswith(str(files[-1]))
    assert recs[0].meta == {"ticket": cases[0]["id"]} and recs[0].decision.request_id == cases[0]["id"]
    first = json.loads(files[0].read_text().splitlines()[0])  # each line names its kind and format
    assert (first["kind"], first["format"], first["written_by"][:12]) == ("verifybench.decision", 2, "verifybench ")
    assert set(first["decision"]["checks"][0]) >= {"verifier", "score", "threshold", "threshold_source", "flagged",
                                                   "error", "latency_ms"}
    spec = DatasetSpec(loader="guardlog", path=str(tmp_path / "log"), unlabeled="decision")
    with pytest.warns(UserWarning, match="torn last line"):
        got = list(iter_cases(spec))
    assert [c.response for c in got] == [c["response"] for c in cases]
    assert [c.label for c in got] == [d.action != "allowed" for d in decisions]
    assert got[0].meta["ticket"] == cases[0]["id"] and got[0].meta["label_source"] == "guard decision"
    assert got[0].doc_type == cases[0]["doc_type"] and got[0].sources[0].text == cases[0]["sources"][0]["text"]
    with pytest.warns(UserWarning):
        assert list(iter_cases(DatasetSpec(loader="guardlog", path=str(tmp_path / "log")))) == []  # unlabeled: skip


@pytest.mark.slow
def test_anchors_guard_equals_run_with_policy_and_strips_its_flagged_claims(tmp_path):
    """The one model verifier here: the embedding model loads at the guard's start, a served decision
    equals run --policy's, and strip cuts exactly the claims anchors flags, by their offsets."""
    cases = _demo_cases()[::5]  # 77 cases, both labels of every doc type on both splits
    suite = tmp_path / "suite.yaml"
    rows = tmp_path / "cases.jsonl"
    rows.write_text("".join(json.dumps(c) + "\n" for c in cases), encoding="utf-8")
    suite.write_text(yaml.safe_dump({
        "name": "anchors-guard", "dataset": {"loader": "jsonl", "path": str(rows), "fields": {
            "id": "id", "response": "response", "sources": "sources", "question": "question", "label": "label",
            "doc_type": "doc_type", "split": "split"}},
        "verifiers": [{"anchors": {"cache_dir": None}}], "metrics": {"by": "doc_type", "bootstrap": 20}}))
    run = verifybench.run(suite, out=tmp_path / "run", progress=False)
    policy = tmp_path / "policy.yaml"
    verifybench.thresholds(run.run_dir, target="youden", min_per_class=10, out=policy)
    applied = verifybench.run(suite, out=tmp_path / "applied", progress=False, policy=policy)
    want = applied.verdicts.set_index("case_id")
    with Guard(policy, allow_code=TEST_CODE, log_dir=False, action="strip") as g:
        assert g.warmup == {"anchors": None} and g.checks[0].verifier._encoder is not None  # loaded at start
        decisions = [g.check(**_item(c)) for c in cases]
    for c, d in zip(cases, decisions):
        r = d.checks[0]
        assert r.score == pytest.approx(float(want.loc[c["id"], "score"]), abs=1e-5)
        assert r.flagged == bool(want.loc[c["id"], "slice_flagged"])
        if d.action == "rewritten":
            flagged = [u for u in r.units if u.flagged]
            assert d.response == strip_spans(c["response"], [(u.start, u.end) for u in flagged])
            assert [(x.start, x.end) for x in d.removed] == [(u.start, u.end) for u in flagged]
            for u in r.units:
                if not u.flagged:
                    assert u.text in d.response
    assert {d.action for d in decisions} >= {"allowed", "rewritten"}


def test_escalate_flags_and_queues_the_decision_for_the_caller(fitted):
    with Guard(fitted["policy"], allow_code=TEST_CODE, log_dir=False, checks=["sentences"], action="escalate") as g:
        d = g.check(ANSWER, SOURCES, request_id="T-9")
        ok = g.check("The Team plan costs $29 per user per month.", SOURCES)
        assert d.action == "flagged" and d.escalated and d.response == ANSWER
        assert not ok.escalated and g.escalations.get_nowait() is d and g.escalations.empty()
        described = g.describe()
    assert described["checks"]["sentences"]["thresholds"]["all"]["native"].startswith("score >= ")
