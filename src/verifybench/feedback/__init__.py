"""Closing the loop after a check is rolled out: which combination of checks to deploy (cascades,
any / all, a stacked combination, measured offline from a run), which production cases to label next
(label queues), and whether production has drifted from the data the thresholds were fitted on.

Everything here reads what verifybench already wrote (run directories, baselines, guard decision logs);
no verifier runs. A layer above the run directory and the metrics: it uses both, and neither knows it.
"""
