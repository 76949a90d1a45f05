"""Paired comparison of two verifiers (or one verifier in two runs) on the same cases: the paired
bootstrap the gate uses, over the same cases the gate uses (the test split, error verdicts counted as
wrong), plus McNemar's test at the thresholds compared.

Which thresholds: two verifiers of one run are each compared at their own fitted threshold; one verifier
across two runs is compared, by default, at run A's threshold on both sides ("held", what the gate
does with a baseline), or at each run's own fitted threshold with `refit`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path
from typing import Any, TypedDict, cast

import numpy as np
import pandas as pd

from verifybench._util.identity import same_cases
from verifybench.errors import VerifybenchError
from verifybench.evaluation.run_dir import RunDir
from verifybench.metrics import compute_metrics
from verifybench.metrics.bootstrap import errors_as_wrong, mcnemar, paired_bootstrap
from verifybench.metrics.summary import jsonable

METRICS = ("auroc", "auprc", "f1")
OWN = "each at its own fitted threshold"
HELD = "run A's threshold held for both (as the gate holds the baseline's)"
REFIT = "each run at its own fitted threshold (refit)"


class PairedDiff(TypedDict):
    a: float | None
    b: float | None
    diff: float | None  # a - b
    ci: list[float | None]  # 95% paired bootstrap interval of the difference
    p_value: float | None


class McNemar(TypedDict):
    a_only_right: int
    b_only_right: int
    p_value: float


class _ComparedKeys(TypedDict):
    a: str
    b: str
    threshold_mode: str
    cases: int
    errors_a: int
    errors_b: int
    thresholds: list[float | None]
    degenerate: list[str | None]  # each side's threshold, when it flags every calibration case or none


class Compared(_ComparedKeys, total=False):
    """One pair compared on the shared test-split cases, errors counted as wrong."""

    metrics: dict[str, PairedDiff]
    mcnemar: McNemar
    warning: str


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


# --- the flow behind `verifybench compare` ---------------------------------------------------------------

@dataclass
class Comparison:
    """What `compare` returns: one entry per pair compared (`rows`, as the CLI prints them: a, b,
    threshold_mode, cases, errors_a, errors_b, thresholds, metrics {name: {a, b, diff, ci, p_value}},
    mcnemar, degenerate, warning), and the same as a DataFrame (`frame`: one row per pair and metric).
    It iterates and indexes like the list of rows it holds."""

    rows: list[Compared] = field(default_factory=list)

    def __iter__(self) -> Iterator[Compared]:
        return iter(self.rows)

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, i: int) -> Compared:
        return self.rows[i]

    @property
    def frame(self) -> pd.DataFrame:
        """One row per pair and metric: a, b, threshold_mode, cases, metric, a_value, b_value, diff,
        ci_low, ci_high, p_value."""
        out = []
        for r in self.rows:
            for name, m in (r.get("metrics") or {}).items():
                ci = m.get("ci") or [None, None]
                out.append({"a": r["a"], "b": r["b"], "threshold_mode": r["threshold_mode"], "cases": r["cases"],
                            "metric": name, "a_value": m.get("a"), "b_value": m.get("b"), "diff": m.get("diff"),
                            "ci_low": ci[0], "ci_high": ci[1], "p_value": m.get("p_value")})
        return pd.DataFrame(out, columns=["a", "b", "threshold_mode", "cases", "metric", "a_value", "b_value",
                                          "diff", "ci_low", "ci_high", "p_value"])


def compare(run_a: str | Path, run_b: str | Path | None = None, verifiers: list[str] | None = None,
            refit: bool = False) -> Comparison:
    """Paired comparisons on the test split, error verdicts counted as wrong: pairs of verifiers within
    one run (each at its own fitted threshold), or each verifier of run A against the verifier of the
    same id in run B (same cases required), at run A's threshold on both sides as the gate does, or at
    each run's own with `refit`. Each result says which (`threshold_mode`)."""
    ra = RunDir.open(run_a)
    s = ra.settings()
    fa = ra.scored_frame(s)
    cases_a = ra.cases(s)
    metrics_a = compute_metrics(cases_a, None, s, scored=fa)

    def thr(metrics: dict, vid: str) -> float | None:
        return metrics["verifiers"][vid]["overall"]["threshold"]["value"]

    def degenerate(metrics: dict, vid: str) -> str | None:
        return metrics["verifiers"][vid]["overall"]["threshold"].get("degenerate")

    results: list[Compared] = []
    if run_b is None:
        for a, b in pairs(list(metrics_a["verifiers"]), verifiers):
            r = compare_pair(fa[fa["verifier"] == a], fa[fa["verifier"] == b], thr(metrics_a, a), thr(metrics_a, b),
                             n_boot=s.n_boot, seed=s.seed)
            results.append(cast(Compared, {"a": a, "b": b, "threshold_mode": OWN, **r,
                                           "degenerate": [degenerate(metrics_a, a), degenerate(metrics_a, b)]}))
        return Comparison(results)

    rb = RunDir.open(run_b)
    metrics_b = rb.metrics()
    ma, mb = ra.doc, rb.doc
    same = same_cases(ma["dataset"], mb["dataset"])  # the cases' content (verifybench._util.identity), else the files
    if same is False or (same is None and ma["dataset"]["hash"] != mb["dataset"]["hash"]):
        key = "content_hash" if same is not None else "hash"
        raise VerifybenchError(
            f"the runs scored different data ({'content' if same is not None else 'dataset'} "
            f"{ma['dataset'][key][:12]} vs {mb['dataset'][key][:12]}); a paired comparison needs the same cases")
    from verifybench.gating.gate import cases_hash

    if cases_hash(cases_a) != cases_hash(rb.cases()):
        raise VerifybenchError("the runs scored different selections of the same data (limit or sample?); "
                               "a paired comparison needs the same cases")
    fb = rb.scored_frame(s)  # sliced as run A is
    shared = [v for v in metrics_a["verifiers"] if v in metrics_b["verifiers"] and (not verifiers or v in verifiers)]
    if not shared:
        raise VerifybenchError("the two runs share no verifier id to compare")
    for vid in shared:
        t_a = thr(metrics_a, vid)
        t_b = thr(metrics_b, vid) if refit else t_a
        r = compare_pair(fa[fa["verifier"] == vid], fb[fb["verifier"] == vid], t_a, t_b, n_boot=s.n_boot, seed=s.seed)
        results.append(cast(Compared, {"a": f"{vid} ({Path(run_a).name})", "b": f"{vid} ({Path(run_b).name})",
                                       "threshold_mode": REFIT if refit else HELD, **r,
                                       "degenerate": [degenerate(metrics_a, vid),
                                                      degenerate(metrics_b if refit else metrics_a, vid)]}))
    return Comparison(results)

