"""The guard is held to what a run is held to (issue 42): it scores through the runner's checked path
(a NaN or an infinity is an error verdict, verdicts are matched to cases by id, a failed batch is
retried case by case), so a served decision equals `run --policy`'s even for a verifier that misbehaves."""

from __future__ import annotations

import asyncio
import json

import pytest
import yaml

import verifybench
from helpers.guard_verifiers import demo_cases, fit_demo_policy
from verifybench.guard import Guard

UNRULY = "helpers.guard_verifiers:Unruly"


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
    with Guard(unruly["policy"], log_dir=False, on_error="block", batch_wait_ms=50) as g:
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
