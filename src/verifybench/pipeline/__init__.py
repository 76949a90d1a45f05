"""From cases to a finished run directory: the runner that scores every (verifier, case) pair (`runner`),
cases given in Python (`inline`), counting a suite's cases without running (`describe`), turning stored
results into metrics.json and report.html (`finish`), and what this installation can run (`components`).
Starting a run and getting a `Run` back is `verifybench.runs.start`."""
