"""One owner of a run directory's reads: `RunDir.open(path)` parses manifest.json once (as the typed
`formats.Manifest`) and gives what every reader of a run needs from it: the metric settings (the suite's
`metrics:` block, a stored policy, overrides), the case and verdict tables (read once, checked for one
verdict per pair, kept), the metrics (computed, or the stored metrics.json) and case rows by offset.

`runs.Run`, the feedback loop's `RunTable`, the gate, `compare`, `report` and `thresholds` are views over
it, so a command that needs the run twice (the gate: under the baseline's thresholds, then a refit)
reads its files once.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from verifybench.formats import Manifest
from verifybench.formats.metrics import Metrics
from verifybench.formats.policy import Policy
from verifybench.metrics import Settings, compute_metrics, frame
from verifybench.metrics.summary import meta_fields
from verifybench.rundir import (
    MANIFEST,
    METRICS,
    RunDirError,
    read_case_frame,
    read_case_index,
    read_cases_at,
    read_metrics,
    read_verdict_frame,
    read_verdicts,
    read_verdicts_at,
)
from verifybench.rundir.requirements import require_one_verdict_each

POLICY = "policy.yaml"  # a policy applied to a run is kept beside its results


def require_run_dir(path: str | Path) -> Path:
    """`path` as a run directory's path, or a clear error when it holds no manifest (nothing is parsed:
    for a caller that takes the run's lock before it reads)."""
    path = Path(path)
    if not (path / MANIFEST).is_file():
        raise RunDirError(f"{path / MANIFEST}: not found; is {path} a verifybench run directory?")
    return path


class RunDir:
    """A run directory, read once. The manifest is parsed when the directory is opened; each table is read
    when first asked for and kept (`drop_verdicts` lets a long flow free the verdict table once it has
    built its frame)."""

    def __init__(self, path: Path, manifest: Manifest):
        self.path = path
        self.manifest = manifest
        self._doc: dict[str, Any] | None = None
        self._cases: pd.DataFrame | None = None
        self._meta: set[str] = set()
        self._verdicts: pd.DataFrame | None = None
        self._checked = False
        self._stored: dict[str, Any] | None = None
        self._metrics: Metrics | None = None

    @classmethod
    def open(cls, path: str | Path) -> RunDir:
        """The run directory at `path`; its manifest.json is read here, and only here."""
        path = require_run_dir(path)
        return cls(path, Manifest.read(path / MANIFEST))

    def __repr__(self) -> str:
        return f"RunDir({str(self.path)!r}: {self.manifest.suite.name!r}, {self.manifest.status})"

    @property
    def doc(self) -> dict[str, Any]:
        """The manifest as a mapping, as the file spells it (migrated to the current format): for the
        readers that take one (the report, the baseline)."""
        if self._doc is None:
            self._doc = self.manifest.model_dump(mode="json", by_alias=True, exclude_unset=True)
        return self._doc

    # --- settings ----------------------------------------------------------------------------------------

    def settings(self, **overrides: Any) -> Settings:
        """Metric settings of the run: the suite's `metrics:` block, a policy stored beside the results
        (unless `policy` is among the overrides, None included: then none), then `overrides`. A new
        object each call: callers adjust theirs."""
        suite = self.manifest.suite
        where = suite.path or "<suite>"
        s = Settings.from_suite(suite.raw.get("metrics"), where=where,
                                stated=stated_thresholds(suite.raw.get("verifiers"), where), **overrides)
        s.probabilistic = {v.id for v in self.manifest.verifiers if v.probabilistic}
        s.binary = {v.id for v in self.manifest.verifiers if v.binary}
        policy = self.path / POLICY
        if "policy" not in overrides and policy.exists():
            p = Policy.read(policy)
            s.by, s.policy, s.policy_reasons = p.by, p.mapping(), p.null_reasons()
            s.policy_source, s.policy_sources = "policy", {}
        return s

    # --- tables ------------------------------------------------------------------------------------------

    def cases(self, *settings: Settings) -> pd.DataFrame:
        """The case table (`verifybench.tables`), with a column for each meta field the `settings` slice
        or break down by. Read once; read again only when a later caller needs a meta field the kept
        table lacks."""
        need = set(meta_fields(*(f for s in settings for f in (s.by, *s.breakdown))))
        if self._cases is None or not need <= self._meta:
            self._meta |= need
            self._cases = read_case_frame(self.path, meta=sorted(self._meta))
            self._checked = False
        return self._cases

    def verdicts(self) -> pd.DataFrame:
        """The verdict table (`verifybench.tables`), read once."""
        if self._verdicts is None:
            self._verdicts = read_verdict_frame(self.path)
            self._checked = False
        return self._verdicts

    def tables(self, *settings: Settings) -> tuple[pd.DataFrame, pd.DataFrame]:
        """The case table (with the meta fields the `settings` need) and the verdict table, refused when a
        (verifier, case) pair has two verdicts or a verdict names a case the index lacks."""
        cases, verdicts = self.cases(*settings), self.verdicts()
        if not self._checked:
            require_one_verdict_each(self.path, cases, verdicts)
            self._checked = True
        return cases, verdicts

    def drop_verdicts(self) -> None:
        """Forget the verdict table (a flow that built its frame from it frees the memory); the next
        `tables()` reads it again."""
        self._verdicts = None
        self._checked = False

    def scored_frame(self, s: Settings) -> pd.DataFrame:
        """The verdict frame under settings `s` (slices, split, breakdown fields): what `evaluate` reads."""
        cases, verdicts = self.tables(s)
        return frame(cases, verdicts, s.by, s.seed, s.test_fraction, s.breakdown)

    # --- metrics -----------------------------------------------------------------------------------------

    def metrics(self, s: Settings | None = None) -> dict[str, Any]:
        """The run's metrics computed from its results under `s` (default: `settings()`)."""
        s = s or self.settings()
        cases, verdicts = self.tables(s)
        return compute_metrics(cases, verdicts, s)

    def stored_metrics(self) -> dict[str, Any]:
        """metrics.json as the run (or `verifybench report`) wrote it; a clear error when there is none."""
        if self._stored is None:
            path = self.path / METRICS
            if not path.exists():
                raise RunDirError(f"{path}: not found; the run has no metrics yet (status {self.manifest.status}). "
                                  f"Finish it with verifybench.report({str(self.path)!r}) or "
                                  f"`verifybench report {self.path}`")
            self._stored = self.metrics_model().document()
        return self._stored

    def metrics_model(self) -> Metrics:
        """metrics.json through its model (`formats.Metrics`): one of an older format is refused, naming
        the command that computes it again."""
        if self._metrics is None:
            if not (self.path / METRICS).exists():
                self.stored_metrics()  # the error that says how to finish the run
            self._metrics = read_metrics(self.path)
        return self._metrics

    def has_metrics(self) -> bool:
        return self._stored is not None or (self.path / METRICS).exists()

    # --- rows, whole ---------------------------------------------------------------------------------------

    def cases_at(self, rows: Any) -> list[dict[str, Any]]:
        """The case-index rows (texts clipped as indexed, meta) at these positions of the case table."""
        import numpy as np

        offsets = self.cases()["offset"].to_numpy()[np.asarray(rows, dtype=np.int64)]
        return read_cases_at(self.path, offsets)

    def verdicts_at(self, offsets: Any) -> list:
        """The full verdicts (units, detail) at these byte offsets of results.jsonl (the `offset` column)."""
        return read_verdicts_at(self.path, offsets)

    def case_rows(self) -> list[dict[str, Any]]:
        """Every case-index row as a dict (for a small run; a large one reads the case table)."""
        return read_case_index(self.path)

    def verdict_rows(self) -> list:
        """Every verdict as a `Verdict` (for a small run; a large one reads the verdict table)."""
        return read_verdicts(self.path)


def stated_thresholds(raw: Any, where: str = "<suite>") -> dict[str, tuple[dict[str, float], str]]:
    """verifier id -> (slice -> threshold, where it came from) for the suite entries (`verifiers:` as
    written) whose options state thresholds on the verifier's own scale (anchors' `min_cosine`). Only
    registered verifiers are asked: a class named by import path is not imported to read a run."""
    from verifybench.errors import SuiteError
    from verifybench.verifiers import available, get_verifier_class

    out: dict[str, tuple[dict[str, float], str]] = {}
    known = available()
    for i, item in enumerate(raw if isinstance(raw, list) else []):
        if not (isinstance(item, dict) and len(item) == 1):
            continue
        name, options = next(iter(item.items()))
        if str(name) not in known or not isinstance(options, dict):
            continue
        vid = str(options.get("id", name))
        try:
            rows = get_verifier_class(str(name)).stated_thresholds(options)
        except SuiteError as e:
            raise SuiteError(f"{where}: verifiers[{i}] ({vid}): {e}") from None
        if rows:
            out[vid] = (rows, f"stated in the options of {vid!r} ({name})")
    return out
