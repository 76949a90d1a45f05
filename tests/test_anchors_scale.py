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
