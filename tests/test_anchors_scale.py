"""The anchors score's threshold said on the verifier's own scale (cosines and failed checks): the rule
the policy prints (`native`) is parsed back and applied to each claim's cosine and flags, and must flag
exactly the cases `score >= t` flags, with the real embedding model."""

import re

import numpy as np
import pytest

from verifybench.cases import Case, Source
from verifybench.evaluation.policy import native_threshold
from verifybench.verifiers import build
from verifybench.verifiers.anchors.scale import claim_score, threshold_for_cosine

PLAN = ("Northwind CRM pricing. The Team plan costs $29 per user per month and includes up to 10 user seats. "
        "The Pro plan adds single sign-on. Data export to CSV is supported on the Team plan, but API access is "
        "not included. Customers can request a full refund within 30 days of purchase. The contract was signed "
        "by Acme Logistics GmbH on 3/3/2026.")
RESPONSES = [
    "On the Team plan you pay $29 a month for each user.",
    "The Team plan costs $29 per user per month.",
    "API access is included in the Team plan.",
    "The Team plan costs $92 per user per month.",
    "The Team plan costs $92 per user per month for up to 19 user seats, signed on 4/4/2025.",
    "Refunds are available within 30 days of purchase.",
    "Our office dog is called Biscuit and loves long walks.",
    "Single sign-on comes with the Pro plan.",
    "The contract was signed by Acme Logistics GmbH on 3/3/2026.",
    "Exports to CSV work on the Team plan and support is open on Sundays.",
]

PASSING = re.compile(r"^a claim passing every check has best cosine <= (\S+), or a claim fails a negation or "
                     r"fact check$")
FAILING = re.compile(r"^a claim fails (\d+) or more negation or fact checks, or exactly (\d+) with best cosine "
                     r">= (\S+)$")


def flags_by_text(native: str, claims: list[tuple[float, int]]) -> bool:
    """Whether the rule `native` says flags a case whose claims are (best cosine, failed checks)."""
    if native.startswith("every case"):
        return True
    if native.startswith("no case"):
        return False
    if m := PASSING.match(native):
        cut = float(m.group(1))
        return any(k > 0 or min(1.0, max(0.0, c)) <= cut for c, k in claims)
    m = FAILING.match(native)
    assert m, native
    many, exactly, cut = int(m.group(1)), int(m.group(2)), float(m.group(3))
    return any(k >= many or (k == exactly and min(1.0, max(0.0, c)) >= cut) for c, k in claims)


def test_the_rule_inverts_the_claim_score_at_its_cuts():
    # thresholds whose cuts print exactly; cosines just either side of each cut (0.025 apart)
    for t in (0.0, 0.1, 0.25, 0.4, 0.5, 0.6, 0.76, 0.8, 0.9, 0.99, 1.0):
        text = native_threshold({"name": "anchors"}, t)
        for k in range(5):
            for c in np.concatenate([np.linspace(-0.2, 1.2, 57) + d for d in (-1e-7, 1e-7)]):
                assert flags_by_text(text, [(c, k)]) == (claim_score(c, k) >= t), (t, c, k, text)


def test_the_old_cut_is_gone():
    # the example: at t = 0.237 the cut is cosine 0.526, not 1 - t = 0.763
    text = native_threshold({"name": "anchors"}, 0.237)
    assert "<= 0.526," in text and "0.763" not in text


@pytest.fixture(scope="module")
def verdicts(tmp_path_factory):
    v = build("anchors", cache_dir=str(tmp_path_factory.mktemp("cache")))
    cases = [Case(id=f"c{i}", dataset="t", response=r, label=False, sources=[Source(id="doc", text=PLAN)])
             for i, r in enumerate(RESPONSES)]
    return v.verify(cases)


def test_native_text_flags_what_the_score_flags(verdicts):
    claims = [[(u.detail["cosine"], len(u.detail["flags"])) for u in v.units if u.score is not None]
              for v in verdicts]
    scores = sorted({v.score for v in verdicts})
    assert scores[0] < 0.5 <= scores[-1]  # passing and failing claims both present
    assert max(k for c in claims for _, k in c) >= 2  # a claim failing two checks
    # thresholds between neighbouring scores (a printed cut's rounding cannot fall on a case) and fixed ones
    thresholds = [(a + b) / 2 for a, b in zip(scores, scores[1:])] + [0.05, 0.2, 0.5, 0.55, 0.7, 0.8, 0.95]
    for t in thresholds:
        text = native_threshold({"name": "anchors"}, t)
        by_score = [v.score >= t for v in verdicts]
        assert [flags_by_text(text, c) for c in claims] == by_score, (t, text)


def test_a_stated_cosine_flags_the_cases_with_a_claim_at_or_below_it(verdicts):
    for cosine in (0.5, 0.7, 0.8, 0.9):
        t = threshold_for_cosine(cosine)
        for v in verdicts:
            weak = any(len(u.detail["flags"]) or u.detail["cosine"] <= cosine for u in v.units if u.score is not None)
            assert (v.score >= t) == weak
    with pytest.raises(ValueError, match="in \\[0, 1\\], got 1.2"):
        threshold_for_cosine(1.2)


def _rows():
    """Legal and technical answers over the pricing text, each slice with faithful and invented ones."""
    rows = []
    for i, r in enumerate(RESPONSES * 2):
        rows.append({"id": f"c{i}", "response": r, "sources": [PLAN], "label": i % len(RESPONSES) in (2, 3, 4, 6),
                     "doc_type": "legal" if i < len(RESPONSES) else "technical"})
    return rows


def test_a_cosine_stated_per_doc_type_reaches_the_policy_and_the_guard(tmp_path, verdicts):
    import verifybench
    from verifybench.guard import Guard

    # stricter for legal texts (the paraphrase at cosine 0.845 is flagged there only); the guard needs `all`
    stated = {"all": 0.8, "legal": 0.86, "technical": 0.78}
    run = verifybench.run(cases=_rows(), fields={"doc_type": "doc_type"}, out=tmp_path / "run", progress=False,
                          metrics={"bootstrap": 20},
                          verifiers=[{"anchors": {"min_cosine": stated, "cache_dir": str(tmp_path / "cache")}}])
    metrics = run.metrics_json["verifiers"]["anchors"]
    policy = verifybench.thresholds(run.run_dir, out=tmp_path / "policy.yaml")
    rows = policy.thresholds["anchors"]
    v = run.verdicts.query("verifier == 'anchors'").set_index("case_id")
    for doc_type, cosine in stated.items():
        t = (metrics["overall"] if doc_type == "all" else metrics["slices"][doc_type])["threshold"]
        assert t["value"] == pytest.approx(0.5 * (1 - cosine)) and t["kind"] == "given"
        assert t["source"] == "stated in the options of 'anchors' (anchors)"
        assert rows[doc_type].threshold == pytest.approx(0.5 * (1 - cosine)) and rows[doc_type].source == "given"
        assert rows[doc_type].native.startswith(f"a claim passing every check has best cosine <= {cosine:.4g},")
    with Guard(tmp_path / "policy.yaml", log_dir=False) as g:
        decisions = g.check_many([{"response": c["response"], "sources": c["sources"], "doc_type": c["doc_type"]}
                                  for c in _rows()])
    flagged = []
    for i, (d, c) in enumerate(zip(decisions, _rows())):
        [r] = d.checks
        assert r.threshold_source == "fixed" and r.threshold == pytest.approx(0.5 * (1 - stated[c["doc_type"]]))
        # the claims' cosines and flags, from the verdicts of the same answers over the same source
        weak = any(u.detail["flags"] or u.detail["cosine"] <= stated[c["doc_type"]]
                   for u in verdicts[i % len(RESPONSES)].units if u.score is not None)
        assert r.flagged == weak == bool(v.loc[c["id"], "slice_flagged"]), c["id"]
        flagged.append(r.flagged)
    assert 0 < sum(flagged) < len(flagged)
    # the same answers under two stated cosines: the stricter legal one flags what technical does, and more
    legal, technical = flagged[:len(RESPONSES)], flagged[len(RESPONSES):]
    assert all(a >= b for a, b in zip(legal, technical)) and sum(legal) > sum(technical)


@pytest.mark.parametrize("stated,message", [
    (1.2, r"option 'min_cosine': Value error, a cosine lies in \[0, 1\], got 1.2"),
    ({"legal": -0.1}, r"option 'min_cosine': Value error, 'legal': a cosine lies in \[0, 1\], got -0.1"),
])
def test_a_bad_stated_cosine_is_refused_naming_the_option(tmp_path, stated, message):
    import verifybench
    from verifybench.errors import SuiteError

    with pytest.raises(SuiteError, match=message):
        verifybench.run(cases=_rows(), out=tmp_path / "run", progress=False,
                        verifiers=[{"anchors": {"min_cosine": stated}}])


def test_a_stated_cosine_and_a_fixed_threshold_for_one_verifier_are_refused():
    from verifybench.errors import SuiteError
    from verifybench.evaluation.run_dir import stated_thresholds
    from verifybench.metrics import Settings

    stated = stated_thresholds([{"anchors": {"min_cosine": 0.8}}], "s.yaml")
    assert stated == {"anchors": ({"all": pytest.approx(0.1)}, "stated in the options of 'anchors' (anchors)")}
    with pytest.raises(SuiteError, match=r"s.yaml: metrics.fixed.anchors: 'anchors' also states its thresholds"):
        Settings.from_suite({"fixed": {"anchors": 0.3}}, "s.yaml", stated=stated)
    with pytest.raises(SuiteError, match=r"s.yaml: verifiers\[1\] \(a2\): option 'min_cosine': .*got 2"):
        stated_thresholds(["rouge", {"anchors": {"id": "a2", "min_cosine": 2}}], "s.yaml")
