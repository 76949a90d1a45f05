"""The anchors score's scale, owned here: a claim's score from its best cosine and failed checks, and the
way back (the rule a threshold on the score means in cosines and failed checks, and the score threshold a
stated minimum cosine gives).

A claim that passes every check scores 0.5 x (1 - cosine), in [0, 0.5]; one failing k >= 1 logic or fact
checks scores 1 - 0.5^k x (1 - cosine / 2), in [1 - 0.5^k, 1 - 0.5^(k+1)]; the cosine is clipped to
[0, 1]. A case scores its highest claim, so a case is flagged at threshold t when one of its claims is."""

from __future__ import annotations


def claim_score(cosine: float, failed_checks: int) -> float:
    """A claim's score in [0, 1]: [0, 0.5] when every check passes (weaker cosine support scores higher),
    [0.5, 1] when `failed_checks` logic or fact checks fail (more failed checks score higher; among as
    many, the closer match to the evidence: the check failed on a claim that restates that evidence)."""
    c = min(1.0, max(0.0, cosine))
    if failed_checks <= 0:
        return 0.5 * (1.0 - c)
    return 1.0 - 0.5 ** failed_checks * (1.0 - c / 2)


def threshold_for_cosine(min_cosine: float) -> float:
    """The score threshold that flags a case when one of its claims passes every check with a best cosine
    at or below `min_cosine` (and, as every threshold up to 0.5 does, when one fails a check)."""
    if not 0.0 <= min_cosine <= 1.0:
        raise ValueError(f"a cosine threshold lies in [0, 1], got {min_cosine}")
    return 0.5 * (1.0 - min_cosine)


def _num(x: float) -> str:
    return f"{x:.4g}"


def native_rule(t: float) -> str:
    """When a case is flagged at `score >= t`, said in cosines and failed checks (the inverse of
    `claim_score`). Up to 0.5 a threshold cuts the cosine of claims that pass every check, and every
    failed check flags; above 0.5 only failed checks flag: k failed checks flag at a cosine of at least
    2 - 2^(k+1) x (1 - t), which is at most 0 (any cosine) from some k on and above 1 (never) below the
    one k before it, so one cosine cut at most is left to print."""
    t = float(t)
    if t <= 0:
        return "every case (no score is below 0)"
    if t <= 0.5:
        return (f"a claim passing every check has best cosine <= {_num(1.0 - 2.0 * t)}, "
                "or a claim fails a negation or fact check")
    if t >= 1:
        return "no case (a claim's score stays below 1)"
    k = 1
    while 2.0 ** k * (1.0 - t) < 1.0:  # the fewest failed checks that flag at any cosine
        k += 1
    cut = 2.0 - 2.0 ** k * (1.0 - t)  # the cosine a claim failing k - 1 checks needs (in (0, 1])
    return (f"a claim fails {k} or more negation or fact checks, or exactly {k - 1} "
            f"with best cosine >= {_num(cut)}")
