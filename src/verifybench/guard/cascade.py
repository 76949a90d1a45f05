"""A cascade's confident regions, read from the calibration split of the run a policy was fitted on.

The cheap check decides alone where its score is confidently on one side: at or above `high`, the
lowest threshold at which at least `confidence` of the calibration cases it flags are hallucinated
(the most recall at that precision, as `precision=P` picks a threshold); at or below `low`, the same
read from the other side (at least `confidence` of the cases at or below it are faithful). In between,
the expensive check decides. No bound is a hand-set number; a side with no such region has no bound.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from verifybench.formats.policy import Policy
from verifybench.guard.spec import GuardError, policy_run_dir
from verifybench.metrics import Settings, frame
from verifybench.metrics.curves import sorted_curve
from verifybench.metrics.thresholds import Target, select_threshold
from verifybench.rundir import MANIFEST, read_case_frame, read_json, read_verdict_frame


def _bound(labels: np.ndarray, scores: np.ndarray, confidence: float) -> float | None:
    order = np.argsort(-scores, kind="stable")
    curve = sorted_curve(labels[order], scores[order])
    i = select_threshold(curve, Target("precision", confidence))
    return None if i is None else float(curve.thresholds[i])


def cascade_bounds(policy: Policy, policy_path: Path, cheap: str, confidence: float
                   ) -> tuple[float | None, float | None]:
    """(low, high) for the cheap check `cheap`: allow at or below low, flag at or above high."""
    run = policy_run_dir(policy, policy_path)
    if not run or not (run / MANIFEST).exists():
        raise GuardError(
            f"{policy_path}: a cascade's confident regions come from the calibration split of the run the policy "
            f"was fitted on, and {'the policy names no run' if not run else f'its run {run} is not here'}; "
            "write the policy again with `verifybench thresholds RUN_DIR --out` on this machine, or use "
            "combination any / all")
    run_dir = Path(run)
    manifest = read_json(run_dir / MANIFEST)
    s = Settings.from_suite(manifest["suite"]["raw"].get("metrics"))
    by = policy.by or s.by
    cases = read_case_frame(run_dir, meta=[by[5:]] if by.startswith("meta.") else [])
    f = frame(cases, read_verdict_frame(run_dir), by, s.seed, s.test_fraction)
    cal = f[(f["verifier"] == cheap) & (f["role"] == "calibration") & f["ok"].to_numpy(bool)]
    if not len(cal):
        raise GuardError(f"{run_dir}: no scored calibration case of {cheap!r}: a cascade needs its scores")
    y = cal["label"].to_numpy(bool)
    sc = cal["score"].to_numpy(float)
    high = _bound(y, sc, confidence)
    neg = _bound(~y, -sc, confidence)
    low = None if neg is None else -neg
    if low is not None and high is not None and low >= high:
        low = None  # the regions would overlap: the flagging side wins, the other is left out
    return low, high
