"""The metrics layer: pure functions from labels and scores to numbers. It knows nothing of verifiers."""

from verifybench.metrics.bootstrap import counts_intervals, mcnemar, paired_bootstrap, rank_intervals
from verifybench.metrics.curves import ThresholdCurve, auprc, auroc, best_fbeta_index, rates, threshold_curve
from verifybench.metrics.summary import Settings, compute_metrics, evaluate, frame
from verifybench.metrics.thresholds import Target, parse_target, select_threshold, split_roles

__all__ = [
    "Settings", "Target", "ThresholdCurve", "auprc", "auroc", "best_fbeta_index", "compute_metrics",
    "counts_intervals", "evaluate", "frame", "mcnemar", "paired_bootstrap", "parse_target", "rank_intervals",
    "rates", "select_threshold", "split_roles", "threshold_curve",
]
