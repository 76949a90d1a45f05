"""A run's numbers from its files: the one owner of a run directory's reads (`run_dir.RunDir`: the
manifest parsed once, the metric settings, the tables, the metrics), the thresholds a run is fitted at
(`reading`), threshold policy files (`policy`), and span localization and minimal-pair metrics
over a run directory (`spans_pairs`). Pure arithmetic lives in `verifybench.metrics`; this package reads a
run directory and hands arrays to it."""
