"""A finished run directory as one row per case and one score column per check: what the cascade, the
stacked combination, the label queue and drift read.

A view over `RunDir` (the one owner of a run directory's reads): its settings, its columnar tables and the
metrics layer's own split, so the calibration / test split and the slices are exactly the ones the
report and the gate used. Nothing is re-scored.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from verifybench.errors import VerifybenchError
from verifybench.evaluation.run_dir import RunDir
from verifybench.formats import Manifest
from verifybench.metrics.curves import sorted_curve
from verifybench.metrics.operating import WARMUP, latency_kind_codes
from verifybench.metrics.settings import OVERALL, Settings
from verifybench.metrics.summary import check_fields
from verifybench.metrics.thresholds import Target, labeled_roles, per_value, role_of, select_threshold
from verifybench.tables import positions, slice_value


@dataclass
class Check:
    """One verifier's verdicts, one entry per case of the run (NaN where it has no scored verdict)."""

    id: str
    score: np.ndarray  # NaN: an error verdict, or none
    latency: np.ndarray  # ms; NaN where not recorded
    warmup: np.ndarray  # the latency includes loading models (the first batch of a worker)
    cost: np.ndarray  # USD; NaN where not reported
    config: dict[str, Any] = field(default_factory=dict)
    config_hash: str | None = None

    @property
    def ok(self) -> np.ndarray:
        return ~np.isnan(self.score)


@dataclass
class RunTable:
    """A run as arrays over its cases: label, role, slice, and one `Check` per verifier."""

    run: RunDir
    settings: Settings
    case_id: pd.Series
    label: np.ndarray
    cal: np.ndarray
    test: np.ndarray
    slice: np.ndarray  # integer codes into `slices`
    slices: list[str]
    doc_type: np.ndarray  # integer codes into `doc_types`
    doc_types: list[str]
    checks: dict[str, Check]
    split_from: str

    @classmethod
    def open(cls, run: RunDir | str | Path, **overrides: Any) -> RunTable:
        """The run (a `RunDir`, or its path) as a `RunTable`, settings from the suite, then `overrides`."""
        return _table(run if isinstance(run, RunDir) else RunDir.open(run), **overrides)

    @property
    def run_dir(self) -> Path:
        return self.run.path

    @property
    def manifest(self) -> Manifest:
        return self.run.manifest

    def check(self, vid: str) -> Check:
        if vid not in self.checks:
            raise VerifybenchError(f"{self.run_dir}: no verifier {vid!r} in this run (its verifiers: "
                                   f"{', '.join(self.checks)})")
        return self.checks[vid]

    def threshold(self, vid: str, target: Target | None = None) -> dict[str, Any]:
        """The check's whole-set threshold: given (a policy, `metrics.fixed`, a binary decision) or fitted on
        the calibration split's scored cases, as `metrics.summary` fits it. The value is None when the
        calibration split is too small or no threshold reaches the target."""
        s, c = self.settings, self.check(vid)
        target = target or s.target
        given = (s.policy or {}).get(vid, {})
        if OVERALL in given:  # a null entry: no threshold, none refitted (the metrics layer's rule)
            value = given[OVERALL]
            return {"value": None if value is None else float(value), "kind": "given",
                    "source": s.policy_sources.get(vid, s.policy_source)}
        if vid in s.binary:
            return {"value": 1.0, "kind": "given", "source": "the verifier's own 0/1 decision (binary)"}
        sel = self.cal & c.ok
        y, sc = self.label[sel], c.score[sel]
        n_pos, n_neg = int(y.sum()), int((~y).sum())
        if min(n_pos, n_neg) < s.min_per_class:
            return {"value": None, "kind": None, "warning": f"the calibration split has {n_pos} hallucinated and "
                    f"{n_neg} faithful scored cases (minimum {s.min_per_class} of each)"}
        order = np.argsort(-sc, kind="mergesort")
        curve = sorted_curve(y[order], sc[order])
        i = select_threshold(curve, target)
        if i is None:
            return {"value": None, "kind": None, "warning": f"no threshold reaches {target} on the calibration split"}
        return {"value": float(curve.thresholds[i]), "kind": "fitted",
                "source": f"fitted on the calibration split ({target})"}


def _slice_codes(cases: pd.DataFrame, by: str) -> tuple[np.ndarray, list[str]]:
    """Each case's slice under `by` as codes into sorted names ("none" for a missing value), as the
    metrics layer names them."""
    col = cases[f"meta.{by[5:]}"] if by.startswith("meta.") else cases[by]
    if not isinstance(col.dtype, pd.CategoricalDtype):
        col = col.astype("category")
    codes = col.cat.codes.to_numpy().astype(np.int64)
    cats = [slice_value(c) for c in col.cat.categories]
    names = sorted(set(cats) | ({"none"} if (codes < 0).any() else set()))
    at = {n: i for i, n in enumerate(names)}
    remap = np.array([at[c] for c in cats] + [at.get("none", -1)], dtype=np.int64)
    return remap[codes], names


def _table(run: RunDir, **overrides: Any) -> RunTable:
    """`run` as a `RunTable` (settings from the suite, then `overrides`). The split is the metrics layer's
    (`split_roles`, as `metrics.summary.frame` draws it); a (verifier, case) pair with two verdicts, or a
    verdict for a case the index lacks, is refused (`RunDir.tables`)."""
    s = run.settings(**overrides)
    cases, verdicts = run.tables(s)
    if len(cases):
        check_fields(cases, {"metrics.by": s.by})
    n = len(cases)
    pos = positions(verdicts["case_id"], cases["id"]) if len(verdicts) else np.empty(0, np.int64)
    vcat = verdicts["verifier"].astype("category") if not isinstance(verdicts["verifier"].dtype, pd.CategoricalDtype) \
        else verdicts["verifier"]
    vcodes = vcat.cat.codes.to_numpy().astype(np.int64)
    nv = max(len(vcat.cat.categories), 1)
    label = cases["label"].to_numpy(bool)
    splits = cases["split"]
    labeled = cases["labeled"].to_numpy(bool)  # an unlabeled case is on neither side of the split
    role = labeled_roles(splits, labeled, seed=s.seed, test_fraction=s.test_fraction, labels=label,
                         groups=cases["group"].to_numpy(), strata=cases["doc_type"])
    from_field = bool(labeled.any()) and bool((role == per_value(splits, role_of))[labeled].all())
    codes, slices = _slice_codes(cases, s.by)
    dt = cases["doc_type"]
    doc_types = [str(c) for c in dt.cat.categories] + ["none"]
    dcodes = dt.cat.codes.to_numpy().astype(np.int64)
    dcodes[dcodes < 0] = len(doc_types) - 1
    configs = {v.id: v for v in run.manifest.verifiers}
    score_all = verdicts["score"].to_numpy(float, na_value=np.nan)
    score_all = np.where(verdicts["error"].isna().to_numpy(), score_all, np.nan)
    lat_all = verdicts["latency_ms"].to_numpy(float, na_value=np.nan)
    warm_all = latency_kind_codes(verdicts["latency_kind"]) == WARMUP
    cost_all = verdicts["cost_usd"].to_numpy(float, na_value=np.nan)
    del verdicts
    run.drop_verdicts()  # the arrays above hold what the table needs
    checks: dict[str, Check] = {}
    order = np.argsort(vcodes, kind="stable")
    bounds = np.searchsorted(vcodes[order], np.arange(nv + 1))
    for code, vid in enumerate(vcat.cat.categories):
        rows = order[bounds[code]:bounds[code + 1]]
        if not len(rows):
            continue
        at = pos[rows]

        def spread(values: np.ndarray, fill: Any = np.nan, dtype: Any = float) -> np.ndarray:
            out = np.full(n, fill, dtype=dtype)
            out[at] = values[rows]  # noqa: B023 - used inside this iteration only
            return out

        v = configs.get(str(vid))
        checks[str(vid)] = Check(id=str(vid), score=spread(score_all), latency=spread(lat_all),
                                 warmup=spread(warm_all, False, bool), cost=spread(cost_all),
                                 config=dict(v.config) if v else {}, config_hash=v.config_hash if v else None)
    return RunTable(run=run, settings=s, case_id=cases["id"], label=label,
                    cal=role == "calibration", test=role == "test", slice=codes, slices=slices, doc_type=dcodes,
                    doc_types=doc_types, checks=checks, split_from="field" if from_field else "seeded")
