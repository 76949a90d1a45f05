"""The metrics layer: pure functions from labels and scores to numbers. It knows nothing of verifiers."""

from verifybench.metrics.bootstrap import (
    counts_intervals,
    errors_as_wrong,
    mcnemar,
    paired_bootstrap,
    rank_intervals,
    weighted_metrics,
)
from verifybench.metrics.crossfit import crossfit
from verifybench.metrics.curves import (
    ThresholdCurve,
    auprc,
    auroc,
    best_fbeta_index,
    confusion_at,
    rates,
    threshold_curve,
)
from verifybench.metrics.drift import drift_test
from verifybench.metrics.pooling import pooled_thresholds
from verifybench.metrics.rounds import rounds_estimate
from verifybench.metrics.settings import MetricsBlock, Settings, validate_metrics_block
from verifybench.metrics.summary import compute_metrics, evaluate, frame
from verifybench.metrics.thresholds import Target, parse_target, select_threshold, split_roles

__all__ = [
    "MetricsBlock", "Settings", "Target", "ThresholdCurve", "auprc", "auroc", "best_fbeta_index", "compute_metrics",
    "confusion_at", "counts_intervals", "crossfit", "drift_test", "errors_as_wrong", "evaluate", "frame", "mcnemar",
    "paired_bootstrap", "parse_target", "pooled_thresholds", "rank_intervals", "rates", "rounds_estimate",
    "select_threshold", "split_roles", "threshold_curve", "validate_metrics_block", "weighted_metrics",
]
