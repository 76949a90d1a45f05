"""A run as Python objects: starting or resuming one (`start`: `run`, `resume`), and a run directory opened
as a `Run` (`run`: its cases, verdicts and metrics as DataFrames, and the commands that take a run)."""
