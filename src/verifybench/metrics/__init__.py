"""The metrics layer: pure functions from labels and scores to numbers. It knows nothing of verifiers."""

from verifybench.metrics.bootstrap import (
    counts_intervals,
    errors_as_wrong,
    mcnemar,
    paired_bootstrap,
    rank_intervals,
    weighted_metrics,
)
from verifybench.metrics.curves import (
    ThresholdCurve,
    auprc,
    auroc,
    best_fbeta_index,
    confusion_at,
    rates,
    threshold_curve,
)
from verifybench.metrics.settings import MetricsBlock, Settings, validate_metrics_block
from verifybench.metrics.summary import compute_metrics, evaluate, frame
from verifybench.metrics.thresholds import Target, parse_target, select_threshold, split_roles

__all__ = [
    "MetricsBlock", "Settings", "Target", "ThresholdCurve", "auprc", "auroc", "best_fbeta_index", "compute_metrics",
    "confusion_at", "counts_intervals", "errors_as_wrong", "evaluate", "frame", "mcnemar", "paired_bootstrap",
    "parse_target", "rank_intervals", "rates", "select_threshold", "split_roles", "threshold_curve",
    "validate_metrics_block", "weighted_metrics",
]
