"""The metrics layer: pure functions from labels and scores to numbers. It knows nothing of verifiers."""

from verifybench.metrics.curves import ThresholdCurve, auprc, auroc, best_fbeta_index, threshold_curve
from verifybench.metrics.summary import compute_metrics, slice_metrics

__all__ = ["ThresholdCurve", "auprc", "auroc", "best_fbeta_index", "compute_metrics", "slice_metrics",
           "threshold_curve"]
