"""Training commands for the models the project fits itself.

Training code lives outside the verifier package and is a client of it like any other: it reads data
through `verifybench.loaders` (their holdout splits, so an evaluation suite never sees a training row),
selects thresholds with `verifybench.metrics`, and writes parameters or weights that a verifier loads.

- `python -m verifybench.training.decision`: the decision filter's local model (logistic heads).
- `python -m verifybench.training.consistency`: the offline consistency cross-encoder.
"""
