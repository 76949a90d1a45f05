"""A run's numbers from its files: the metric settings a run is measured under and the thresholds it is
fitted at (`reading`), threshold policy files (`policy`), and span localization and minimal-pair metrics
over a run directory (`spans_pairs`). Pure arithmetic lives in `verifybench.metrics`; this package reads a
run directory and hands arrays to it."""
