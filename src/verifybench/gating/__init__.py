"""Comparing runs: the baseline a gate holds and the gate's rules (`gate`), and paired comparisons of
verifiers or runs on the same cases (`compare`)."""
