"""A run's numbers from its files: the settings it is measured under (the suite's `metrics:` block, a
stored policy, overrides), its case and verdict tables checked for one verdict per pair, its metrics, and
the thresholds fitted on its calibration split (`verifybench thresholds`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from verifybench.evaluation.policy import policy_from_metrics, save_policy
from verifybench.formats.policy import Policy
from verifybench.metrics import Settings, compute_metrics, frame
from verifybench.metrics.summary import meta_fields
from verifybench.metrics.thresholds import parse_target
from verifybench.rundir import MANIFEST, read_case_frame, read_json, read_verdict_frame
from verifybench.rundir.checks import require_one_verdict_each

POLICY = "policy.yaml"  # a policy applied to a run is kept beside its results



def settings_for(run_dir: Path, manifest: dict[str, Any], **overrides: Any) -> Settings:
    """Metric settings of a run: the suite's `metrics:` block, a stored policy, then `overrides`."""
    s = Settings.from_suite(manifest["suite"]["raw"].get("metrics"), where=manifest["suite"].get("path") or "<suite>",
                            **overrides)
    s.probabilistic = {v["id"] for v in manifest["verifiers"] if v.get("probabilistic")}
    s.binary = {v["id"] for v in manifest["verifiers"] if v.get("binary")}
    if (run_dir / POLICY).exists() and "policy" not in overrides:
        policy = Policy.read(run_dir / POLICY)
        s.by, s.policy, s.policy_reasons = policy.by, policy.mapping(), policy.null_reasons()
    return s



def read_run(run_dir: Path, *settings: Settings) -> tuple[dict, pd.DataFrame, pd.DataFrame]:
    """A run's manifest, case table (with the meta fields the `settings` slice or break down by) and
    verdict table (see `verifybench.tables`), refused when a (verifier, case) pair has two verdicts."""
    manifest = read_json(run_dir / MANIFEST)
    cases = read_case_frame(run_dir, meta=meta_fields(*(f for s in settings for f in (s.by, *s.breakdown))))
    verdicts = read_verdict_frame(run_dir)
    require_one_verdict_each(run_dir, cases, verdicts)
    return manifest, cases, verdicts



def metrics_for(run_dir: str | Path, **overrides: Any) -> tuple[dict, dict, pd.DataFrame, pd.DataFrame]:
    """A run's manifest and metrics (the suite's settings, then `overrides`), with its case table and
    verdict table (`verifybench.tables`: columns, not a dict and a Verdict per case)."""
    run_dir = Path(run_dir)
    s = settings_for(run_dir, read_json(run_dir / MANIFEST), **overrides)
    manifest, cases, verdicts = read_run(run_dir, s)
    metrics = compute_metrics(cases, verdicts, s)
    return manifest, metrics, cases, verdicts



def scored_frame(cases: pd.DataFrame, verdicts: pd.DataFrame, s: Settings) -> pd.DataFrame:
    """The verdict frame under settings `s` (slices, split, breakdown fields): the one `evaluate` reads."""
    return frame(cases, verdicts, s.by, s.seed, s.test_fraction, s.breakdown)



def thresholds(run_dir: str | Path, by: str = "doc_type", target: str | None = None, min_per_class: int | None = None,
               out: str | Path | None = None) -> Policy:
    """Fit a threshold per verifier and slice on the calibration split; report the test split.

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
            whole set's threshold.
        out: write the policy as YAML here.
    """
    manifest, metrics, _, _ = metrics_for(run_dir, by=by, target=parse_target(target) if target is not None else None,
                                          min_per_class=min_per_class, policy=None)
    policy = policy_from_metrics(metrics, manifest, run_dir)
    if out is not None:
        save_policy(policy, out)
    return policy

