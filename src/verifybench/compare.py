"""Paired comparison of two verifiers (or one verifier in two runs) on the same cases: the paired
bootstrap the gate uses, over the same cases the gate uses (the test split, error verdicts counted as
wrong), plus McNemar's test at the thresholds compared.

Which thresholds: two verifiers of one run are each compared at their own fitted threshold; one verifier
across two runs is compared, by default, at run A's threshold on both sides ("held", what the gate
does with a baseline), or at each run's own fitted threshold with `refit`.
"""

from __future__ import annotations

from itertools import combinations
from typing import Any

import numpy as np
import pandas as pd

from verifybench.errors import VerifybenchError
from verifybench.metrics.bootstrap import errors_as_wrong, mcnemar, paired_bootstrap
from verifybench.metrics.summary import jsonable

METRICS = ("auroc", "auprc", "f1")
OWN = "each at its own fitted threshold"
HELD = "run A's threshold held for both (as the gate holds the baseline's)"
REFIT = "each run at its own fitted threshold (refit)"


def compare_pair(df_a: pd.DataFrame, df_b: pd.DataFrame, t_a: float | None, t_b: float | None,
                 n_boot: int = 1000, seed: int = 0, metrics: tuple[str, ...] = METRICS) -> dict[str, Any]:
    """Compare two verdict frames (columns case_id, label, score, ok, role) on their shared test-split
    cases. Returns `cases`, the error counts of each side, `thresholds`, per metric {a, b, diff, ci,
    p_value} under `metrics`, and `mcnemar` when both thresholds exist."""
    joined = df_a.merge(df_b, on="case_id", suffixes=("_a", "_b"))
    # Sorted by case id, as the gate orders them: the same cases in the same order draw the same resamples.
    both = joined[joined["role_a"] == "test"].sort_values("case_id", kind="mergesort")
    out: dict[str, Any] = {"cases": int(len(both)), "errors_a": int((~both["ok_a"]).sum()),
                           "errors_b": int((~both["ok_b"]).sum()), "thresholds": [t_a, t_b]}
    if len(both) < 2 or both["label_a"].nunique() < 2:
        out["warning"] = "too few shared test-split cases with both labels to compare"
        return jsonable(out)
    y = both["label_a"].to_numpy(bool)

    def scores(side: str) -> np.ndarray:
        s = np.where(both[f"ok_{side}"].to_numpy(bool), both[f"score_{side}"].to_numpy(float, na_value=np.nan), np.nan)
        return errors_as_wrong(y, s)

    a, b = scores("a"), scores("b")
    if t_a is None or t_b is None:
        out["warning"] = "a verifier has no fitted threshold; only AUROC and AUPRC are compared"
        metrics = tuple(m for m in metrics if m in ("auroc", "auprc"))
    else:
        out["mcnemar"] = mcnemar(y, a >= t_a, b >= t_b)
    out["metrics"] = paired_bootstrap(y, a, b, t_a, t_b, metrics=metrics, n_boot=n_boot, seed=seed)
    return jsonable(out)


def pairs(ids: list[str], wanted: list[str] | None) -> list[tuple[str, str]]:
    chosen = wanted or ids
    unknown = [v for v in chosen if v not in ids]
    if unknown:
        raise VerifybenchError(f"no verifier {unknown[0]!r} in this run; it has: {', '.join(ids)}")
    if len(chosen) < 2:
        raise VerifybenchError("compare needs two verifiers")
    return list(combinations(chosen, 2))
