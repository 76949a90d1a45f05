"""A run's numbers from its files (through `RunDir`, the one owner of a run directory's reads): its
metrics, and the thresholds fitted on its calibration split (`verifybench thresholds`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from verifybench.errors import VerifybenchError
from verifybench.evaluation.policy import policy_from_metrics, save_policy
from verifybench.evaluation.run_dir import POLICY, RunDir
from verifybench.formats.policy import Policy
from verifybench.metrics.thresholds import parse_target

__all__ = ["POLICY", "RunDir", "metrics_for", "thresholds"]


def metrics_for(run_dir: str | Path, **overrides: Any) -> tuple[dict, dict, pd.DataFrame, pd.DataFrame]:
    """A run's manifest (as a mapping) and metrics (the suite's settings, then `overrides`), with its case
    table and verdict table (`verifybench.tables`): a view over `RunDir`."""
    run = RunDir.open(run_dir)
    s = run.settings(**overrides)
    cases, verdicts = run.tables(s)
    return run.doc, run.metrics(s), cases, verdicts


def thresholds(run_dir: str | Path, by: str = "doc_type", target: str | None = None, min_per_class: int | None = None,
               out: str | Path | None = None, estimate: str | None = None) -> Policy:
    """Fit a threshold per verifier and slice on the calibration split and report the test split, or,
    cross-fitted (below 300 labeled cases by default), fit on every labeled case and report out-of-fold
    numbers, each slice's threshold pooled toward the whole set's.

    A slice too small for its own threshold gets the whole set's (`fallback_from: all`); a threshold that
    flags every calibration case, or none, is marked `degenerate`; `flag_all` beside it is what flagging
    every test case would score.

    Args:
        run_dir: a finished run.
        by: the slice field (doc_type, dataset, split, or meta.<key>).
        target: "balanced_accuracy", "youden", "f1", "fbeta=B", "f1_min_specificity=S", "precision=P" or
            "recall=R"; default: the suite's `metrics.target`, else balanced_accuracy (a threshold that has
            to separate the classes; max F1 is `"f1"`).
        min_per_class: fewer calibration cases of either class than this: the slice falls back to the
            whole set's threshold (the split only: cross-fitting needs 10 of each class in all).
        estimate: "split", "crossfit" or "auto" (default: the suite's `metrics.estimate`, else auto).
        out: write the policy as YAML here.
    """
    run = RunDir.open(run_dir)
    s = run.settings(by=by, target=parse_target(target) if target is not None else None,
                     min_per_class=min_per_class, policy=None, estimate=estimate)
    metrics = run.metrics(s)
    policy = policy_from_metrics(metrics, run.doc, run_dir)
    if out is not None:
        if not any(row.threshold is not None for rows in policy.thresholds.values() for row in rows.values()):
            raise VerifybenchError(nothing_usable(metrics, run_dir, out))
        save_policy(policy, out)
    return policy


def nothing_usable(metrics: dict[str, Any], run_dir: str | Path, out: str | Path) -> str:
    """Why a policy whose every threshold is null is not written (a guard would refuse it, and a gate hold
    nothing): each check's labeled calibration cases of each class against the minimum, and what to do."""
    failing = [vid for vid, v in metrics["verifiers"].items() if v["overall"]["threshold"].get("refused")]
    if metrics.get("estimate") == "crossfit":
        per_check = [f"{vid}: {v['overall']['threshold'].get('warning')}" for vid, v in metrics["verifiers"].items()]
        todo = f"label more cases of the class that is short (at least {metrics['min_per_class']} of each)"
    else:
        per_check = []
        todo = "label more, or lower --min-per-class (a noisier threshold: see its interval)"
    for vid, v in metrics["verifiers"].items() if metrics.get("estimate") != "crossfit" else ():
        whole = v["overall"]
        have = whole["needs"]["threshold"]["calibration_scored"]
        per_check.append(f"{vid}: {have['hallucinated']} hallucinated and {have['faithful']} faithful"
                         + (f" ({whole['threshold']['warning']})" if whole["threshold"].get("warning") else ""))
    if failing:  # error verdicts, not a lack of labels: labeling more would not help those checks
        todo = (f"fix what makes {', '.join(failing)} fail (the run's errors.jsonl)"
                + ("" if len(failing) == len(metrics["verifiers"]) else f"; for the others, {todo}"))
    if metrics.get("estimate") == "crossfit":
        return (f"{run_dir}: every threshold in the policy is null, so nothing written to {out} (a guard would refuse "
                f"it). Cross-fitted ({metrics.get('estimate_why')}): {'; '.join(per_check)}. To get one: {todo}")
    return (f"{run_dir}: every threshold in the policy is null, so nothing written to {out} (a guard would refuse "
            f"it). The whole set's scored calibration cases (minimum {metrics['min_per_class']} of each class, "
            f"--min-per-class): {'; '.join(per_check)}. To get one: {todo}")

