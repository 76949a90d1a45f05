"""A policy or guard file is data (issue 42): a file that would import or run code the installation does
not ship is refused before anything is imported or built, naming the key, unless the operator allows it
by name; a threshold that is not a finite number, a run of another suite, a verifier its run never
fitted are refused. And the guard is held to what a run is held to: it scores through the runner's
checked path (a NaN or an infinity is an error verdict, verdicts are matched to cases by id, a failed
batch is retried case by case), so a served decision equals `run --policy`'s even for a verifier that
misbehaves."""

from __future__ import annotations

import asyncio
import json
import shutil
import sys
from pathlib import Path

import pytest
import yaml

import verifybench
from helpers.guard_verifiers import demo_cases, fit_demo_policy
from verifybench.errors import VerifybenchError
from verifybench.guard import Guard, GuardError

UNRULY = "helpers.guard_verifiers:Unruly"
TEST_CODE = ["helpers.guard_verifiers"]  # the policy names a test verifier by import path: allowed here


@pytest.fixture(scope="module")
def unruly(tmp_path_factory):
    """A policy fitted on a run of the demo set with `Unruly` (verdicts reversed in every batch: the run
    retries such a batch case by case), and a small suite of cases, two of which make it say NaN and inf."""
    base = tmp_path_factory.mktemp("unruly")
    suite, run, policy = fit_demo_policy(base, ["rouge", {UNRULY: {"id": "unruly"}}])
    cases = demo_cases()[:10]
    cases[3] = {**cases[3], "id": "says-nan", "response": cases[3]["response"] + " NaN."}
    cases[7] = {**cases[7], "id": "says-inf", "response": cases[7]["response"] + " Infinity."}
    data = base / "few.jsonl"
    data.write_text("".join(json.dumps(c) + "\n" for c in cases), encoding="utf-8")
    doc = yaml.safe_load(suite.read_text())
    doc["dataset"]["path"] = str(data)
    few = base / "few.yaml"
    few.write_text(yaml.safe_dump(doc), encoding="utf-8")
    return {"base": base, "policy": policy, "suite": few, "cases": cases}


def _item(c: dict) -> dict:
    return {"response": c["response"], "sources": c["sources"], "question": c.get("question"),
            "doc_type": c.get("doc_type"), "request_id": c["id"]}


def test_nan_inf_and_verdicts_out_of_order_are_judged_as_the_run_judges_them(unruly, tmp_path):
    applied = verifybench.run(unruly["suite"], out=tmp_path / "applied", progress=False, policy=unruly["policy"])
    v = applied.verdicts
    want = v[v["verifier"] == "unruly"].set_index("case_id")
    assert want.loc["says-nan", "error"] and "not a finite number (nan)" in want.loc["says-nan", "error"]
    assert want.loc["says-inf", "error"] and "not a finite number (inf)" in want.loc["says-inf", "error"]
    cases = unruly["cases"]
    items = [_item(c) for c in cases]
    with Guard(unruly["policy"], log_dir=False, on_error="block", batch_wait_ms=50, allow_code=TEST_CODE,
               checks=["rouge", "unruly"]) as g:
        many = g.check_many(items)  # one batch: the verifier hands its verdicts back reversed
        one = [g.check(**i) for i in items]

        async def together():
            return await asyncio.gather(*(g.acheck(**i) for i in items))

        concurrent = asyncio.run(together())  # micro-batched: reversed again within each batch
    for decisions in (many, one, concurrent):
        for c, d in zip(cases, decisions):
            r = next(r for r in d.checks if r.verifier == "unruly")
            if c["id"] in ("says-nan", "says-inf"):
                assert r.score is None and "not a finite number" in r.error, (c["id"], r)
                assert d.action == "blocked" and d.errors == 1  # on_error: block, never "no check flagged"
            else:
                assert r.error is None and not isinstance(want.loc[c["id"], "error"], str)
                assert r.score == pytest.approx(float(want.loc[c["id"], "score"]), abs=1e-12), c["id"]
                assert r.flagged == bool(want.loc[c["id"], "slice_flagged"]), c["id"]
    scores = {next(r for r in d.checks if r.verifier == "unruly").score for d in many}
    assert len(scores) > 3  # distinct scores per case: a mix-up of cases would show


# --- a policy or guard file is data, never code ---------------------------------------------------------------

def _planted(folder: Path, name: str, body: str = "") -> Path:
    """A Python file that leaves `<name>.ran` beside itself when it is imported: the proof it ran."""
    ran = folder / f"{name}.ran"
    (folder / f"{name}.py").write_text(f"from pathlib import Path\nPath({str(ran)!r}).write_text('ran')\n{body}",
                                       encoding="utf-8")
    return ran


def _policy_with(unruly, tmp_path: Path, vid: str, entry: dict, run: bool = True) -> Path:
    """The fitted policy with one more verifier `vid` (an entry of `verifiers:`), at a whole-set threshold;
    without its `run` (a policy deployed alone) when `run` is False."""
    doc = yaml.safe_load(unruly["policy"].read_text())
    doc["verifiers"][vid] = {"options": {}, "config_hash": "0" * 16, **entry}
    doc["thresholds"][vid] = {"all": {"threshold": 0.5, "source": "fitted"}}
    doc["run"] = str((unruly["policy"].parent / doc["run"]).resolve())
    if not run:
        doc.pop("run")
    path = tmp_path / "policy.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return path


def test_a_model_s_own_python_is_refused_before_it_runs(unruly, tmp_path):
    """`trust_remote_code: true` on a local model folder whose config names its own Python class: refused
    naming the key, in Python and in `verifybench serve`, and the folder's Python never ran."""
    from typer.testing import CliRunner

    from verifybench.cli import app

    model = tmp_path / "model"
    model.mkdir()
    ran = _planted(model, "configuration_evil", "class EvilConfig: pass\n")
    (model / "config.json").write_text(json.dumps({"model_type": "evil", "num_labels": 2,
                                                   "auto_map": {"AutoConfig": "configuration_evil.EvilConfig"}}))
    policy = _policy_with(unruly, tmp_path, "nli", {"name": "nli", "options": {"model": str(model),
                                                                              "trust_remote_code": True}})
    said = rf"{policy}: verifiers\.nli\.options\.trust_remote_code: runs the Python code of model"
    with pytest.raises(GuardError, match=said):
        Guard(policy, log_dir=False, checks=["nli"])
    guard_file = tmp_path / "guard.yaml"
    guard_file.write_text(yaml.safe_dump({"policy": str(policy), "checks": ["nli"]}), encoding="utf-8")
    r = CliRunner().invoke(app, ["serve", str(guard_file), "--port", "1", "--allow-code", "helpers.guard_verifiers"])
    assert r.exit_code == 2 and "verifiers.nli.options.trust_remote_code" in r.output
    assert "--allow-code" in r.output  # says how the operator allows it
    assert not ran.exists()


def test_a_verifier_named_by_import_path_is_imported_only_when_allowed(unruly, tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    ran = _planted(tmp_path, "evil_checks", "class Checker: pass\n")
    policy = _policy_with(unruly, tmp_path, "x", {"name": "evil_checks:Checker"}, run=False)
    with pytest.raises(GuardError, match=rf"{policy}: verifiers\.x\.name: imports module 'evil_checks'"):
        Guard(policy, log_dir=False, allow_code=TEST_CODE, checks=["x"])
    assert not ran.exists() and "evil_checks" not in sys.modules
    # Allowed by name (the module, or a package above it): imported, then held to the policy as any other.
    with pytest.raises(VerifybenchError, match="not a verifybench Verifier subclass"):
        Guard(policy, log_dir=False, allow_code=[*TEST_CODE, "evil_checks"], checks=["x"])
    assert ran.exists()
    sys.modules.pop("evil_checks", None)


def test_a_graph_pack_folder_that_is_not_bundled_is_refused_before_its_rules_run(unruly, tmp_path):
    from verifybench.verifiers import chosen_code
    from verifybench.verifiers.graph.pack import bundled_packs

    pack = tmp_path / "pack"
    shutil.copytree(bundled_packs()["refunds"], pack)
    rules = (pack / "rules.py").read_text(encoding="utf-8")
    ran = _planted(pack, "rules", rules)
    policy = _policy_with(unruly, tmp_path, "g", {"name": "graph", "options": {"domain": str(pack)}})
    with pytest.raises(GuardError, match=rf"verifiers\.g\.options\.domain: imports the rules module \(Python\) "
                                         rf"of the graph pack folder {pack}"):
        Guard(policy, log_dir=False, checks=["g"])
    assert not ran.exists()
    # The bundled pack, by name or by its folder, is the installation's own code.
    assert chosen_code("graph", {"domain": "refunds"}) == []
    assert chosen_code("graph", {"domain": str(bundled_packs()["refunds"])}) == []


def test_a_guard_file_s_suite_chooses_no_code_either(unruly, tmp_path, monkeypatch):
    """The suite a guard file names: its verifiers are held to the same rule (the key names the suite),
    and its dataset's loader, which a guard never uses, is not imported."""
    monkeypatch.syspath_prepend(str(tmp_path))
    loaded = _planted(tmp_path, "evil_loader", "def load(path): return []\n")
    doc = yaml.safe_load(unruly["suite"].read_text())
    doc["dataset"] = {"loader": "evil_loader:load", "path": "x.jsonl"}
    suite = tmp_path / "suite.yaml"
    suite.write_text(yaml.safe_dump(doc), encoding="utf-8")
    guard_file = tmp_path / "guard.yaml"
    guard_file.write_text(yaml.safe_dump({"policy": str(unruly["policy"]), "suite": str(suite),
                                          "checks": ["rouge", "unruly"]}))
    with pytest.raises(GuardError, match=rf"{suite}: verifiers\.unruly\.name: imports module 'helpers\.guard_verifiers'"):
        Guard(guard_file, log_dir=False)
    with Guard(guard_file, log_dir=False, allow_code=["helpers"]) as g:  # a package above the module
        assert [c.id for c in g.checks] == ["rouge", "unruly"]
    assert not loaded.exists() and "evil_loader" not in sys.modules


def test_serve_allow_code_reaches_the_guard(unruly, monkeypatch, tmp_path):
    """`verifybench serve --allow-code`: the guard it builds may import what it names (the server itself
    is not started here: tests/test_serve.py serves such a policy on uvicorn)."""
    import uvicorn
    from typer.testing import CliRunner

    from verifybench.cli import app

    served = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: served.append(app.app.state.guard_state["guard"]))
    both = tmp_path / "guard.yaml"  # every check the policy records, by name
    both.write_text(yaml.safe_dump({"policy": str(unruly["policy"]), "checks": ["rouge", "unruly"]}), encoding="utf-8")
    r = CliRunner().invoke(app, ["serve", str(both), "--log-dir", str(tmp_path), "--allow-code", "nothing.else",
                                 "--allow-code", "helpers.guard_verifiers"])
    assert r.exit_code == 0, r.output
    assert [c.id for c in served[0].checks] == ["rouge", "unruly"]
    r = CliRunner().invoke(app, ["serve", str(both), "--allow-code", "helpers.guard"])
    assert r.exit_code == 2 and "verifiers.unruly.name: imports module 'helpers.guard_verifiers'" in r.output


def test_a_judge_template_is_text_never_a_way_to_python(tmp_path):
    from jinja2.exceptions import SecurityError

    from verifybench.cases import Case
    from verifybench.verifiers import build

    (tmp_path / "qa.j2").write_text("{{ response.__class__.__mro__[1].__subclasses__() }}", encoding="utf-8")
    judge = build("judge", templates_dir=str(tmp_path), replay_only=True)
    case = Case(id="c", dataset="d", doc_type="qa", response="r", sources=[], label=False)
    with pytest.raises(SecurityError):
        judge.messages(case)


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf"), "abc"])
def test_a_threshold_that_is_not_a_finite_number_is_refused_naming_file_and_key(unruly, tmp_path, value):
    doc = yaml.safe_load(unruly["policy"].read_text())
    doc["thresholds"]["rouge"]["all"]["threshold"] = value
    doc.pop("run")
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    said = rf"{bad}: thresholds\.rouge\.all\.threshold: a threshold must be a finite number or null, got"
    with pytest.raises(GuardError, match=said):
        Guard(bad, log_dir=False, checks=["rouge"])
    with pytest.raises(VerifybenchError, match=said):  # verifybench run --policy
        verifybench.run(unruly["suite"], out=tmp_path / "run", policy=bad, progress=False)


@pytest.mark.parametrize("key, value", [("allow_at_or_below", ".nan"), ("flag_at_or_above", "-.inf"),
                                        ("allow_at_or_below", ".inf")])
def test_a_guard_file_s_cascade_bound_is_a_finite_number(unruly, tmp_path, key, value):
    guard_file = tmp_path / "guard.yaml"
    guard_file.write_text(f"policy: {unruly['policy']}\ncombination: cascade\nchecks: [rouge, unruly]\n"
                          f"cascade: {{{key}: {value}}}\n")
    with pytest.raises(GuardError, match=rf"{guard_file}: cascade\.{key}: Input should be a finite number"):
        Guard(guard_file, log_dir=False, allow_code=TEST_CODE)


def test_a_policy_is_held_to_its_run(unruly, tmp_path):
    """`run:` pointed at another suite's run, and a verifier added by hand with a right config hash but
    never fitted in the run: both refused, naming what differs."""
    from verifybench.verifiers import build

    other = verifybench.run(unruly["suite"], out=tmp_path / "other", progress=False)  # another dataset
    doc = yaml.safe_load(unruly["policy"].read_text())
    doc["run"] = str(other.run_dir)
    moved = tmp_path / "moved.yaml"
    moved.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    with pytest.raises(GuardError, match=rf"{moved}: suite_hash '[0-9a-f]+' differs from its run's '[0-9a-f]+'"):
        Guard(moved, log_dir=False, checks=["rouge"])
    added = _policy_with(unruly, tmp_path, "bleu", {"name": "bleu", "config_hash": build("bleu").config_hash})
    with pytest.raises(GuardError, match=r"verifiers\.bleu: its run .* has no verifier 'bleu' \(it has: rouge, "
                                         r"unruly\): no threshold of it was ever fitted there"):
        Guard(added, log_dir=False, checks=["rouge", "bleu"])
    Guard(added, log_dir=False, checks=["rouge"]).close()  # the checks the run fitted still start
