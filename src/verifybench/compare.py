"""Paired comparison of two verifiers on the same cases: McNemar's test at each one's fitted threshold
and paired bootstrap intervals for the AUROC and F1 differences, on the test split."""

from __future__ import annotations

from itertools import combinations
from typing import Any

import numpy as np
import pandas as pd

from verifybench.errors import VerifybenchError
from verifybench.metrics.bootstrap import mcnemar, paired_bootstrap
from verifybench.metrics.summary import jsonable


def compare_pair(df_a: pd.DataFrame, df_b: pd.DataFrame, t_a: float | None, t_b: float | None,
                 n_boot: int = 1000, seed: int = 0) -> dict[str, Any]:
    """Compare two verifiers' verdict frames (columns case_id, label, score, ok, role) on shared cases."""
    joined = df_a.merge(df_b, on="case_id", suffixes=("_a", "_b"))
    both = joined[joined["ok_a"] & joined["ok_b"] & (joined["role_a"] == "test")]
    out: dict[str, Any] = {"cases": int(len(both)),
                           "excluded_errors": int((~(joined["ok_a"] & joined["ok_b"])).sum())}
    if len(both) < 2 or both["label_a"].nunique() < 2:
        out["warning"] = "too few shared test-split cases with both labels to compare"
        return out
    y = both["label_a"].to_numpy(bool)
    a, b = both["score_a"].to_numpy(float), both["score_b"].to_numpy(float)
    if t_a is not None and t_b is not None:
        out["thresholds"] = [t_a, t_b]
        out["mcnemar"] = mcnemar(y, a >= t_a, b >= t_b)
        out.update(paired_bootstrap(y, a, b, t_a, t_b, n_boot=n_boot, seed=seed))
    else:
        out["warning"] = "a verifier has no fitted threshold; only AUROC is compared"
        pb = paired_bootstrap(y, a, b, np.inf, np.inf, n_boot=n_boot, seed=seed)
        out["auroc_diff"] = pb["auroc_diff"]
    return jsonable(out)


def pairs(ids: list[str], wanted: list[str] | None) -> list[tuple[str, str]]:
    chosen = wanted or ids
    unknown = [v for v in chosen if v not in ids]
    if unknown:
        raise VerifybenchError(f"no verifier {unknown[0]!r} in this run; it has: {', '.join(ids)}")
    if len(chosen) < 2:
        raise VerifybenchError("compare needs two verifiers")
    return list(combinations(chosen, 2))
