"""Span and minimal-pair metrics of a run directory: reads what they need, hands arrays to the pure
functions of metrics/spans.py and metrics/pairs.py, and adds their results to metrics.json.

It reads the run itself, apart from the case-level metrics: the case index's gold spans, labels, splits
and groups, and from results.jsonl only scores (for pairs) and units (for spans, only of verifiers that
return units and only for the cases a span metric can use). A run whose cases carry neither gold spans
nor groups costs one scan of cases.jsonl for the two keys, and nothing else.

Which cases a span metric uses: faithful cases (their gold is "no span") and hallucinated cases with at
least one located gold span, each with no gold string that could not be located (a case whose gold is
incomplete would count a verifier right about the missing part as a false alarm). The rest are counted
under `spans.gold`.

metrics.json gains, when the cases have gold spans, `spans` (gold counts and the evaluated cases) and per
verifier that returns units `verifiers.<id>.spans`; when cases share groups, `pairs` and
`verifiers.<id>.pairs`.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from verifybench.metrics.pairs import pairwise_accuracy
from verifybench.metrics.settings import Settings
from verifybench.metrics.spans import SpanSet, case_counts, fit_unit_threshold, overlap_labels, span_metrics
from verifybench.metrics.summary import jsonable
from verifybench.metrics.thresholds import split_roles
from verifybench.rundir import CASES, RESULTS, iter_lines

if TYPE_CHECKING:
    import pandas as pd

NOT_FOUND, AMBIGUOUS = "spans_not_found", "spans_ambiguous"


def _slice_key(case: dict, by: str) -> str:
    if by.startswith("meta."):
        return str((case.get("meta") or {}).get(by[5:], "none"))
    value = case.get(by)
    return "none" if value is None else str(value)


class CaseTable:
    """The case index columns the span and pair metrics need, in case-index order."""

    def __init__(self, rows: list[dict], s: Settings):
        self.ids = [r["id"] for r in rows]
        self.pos = {cid: i for i, cid in enumerate(self.ids)}
        self.label = np.array([bool(r["label"]) for r in rows], dtype=bool)
        meta = [r.get("meta") or {} for r in rows]
        groups = [m.get("group") for m in meta]
        self.role = split_roles([r.get("split") for r in rows], seed=s.seed, test_fraction=s.test_fraction,
                                labels=self.label,
                                groups=[g if g is not None else f"#{i}" for i, g in enumerate(groups)],
                                strata=[r.get("doc_type") for r in rows])
        self.slice = np.array([_slice_key(r, s.by) for r in rows], dtype=object)
        self.group = groups
        self.spans = [r.get("spans") or [] for r in rows]
        self.unlocated = np.array([int(m.get(NOT_FOUND) or 0) + int(m.get(AMBIGUOUS) or 0) for m in meta])
        self.not_found = int(sum(int(m.get(NOT_FOUND) or 0) for m in meta))
        self.ambiguous = int(sum(int(m.get(AMBIGUOUS) or 0) for m in meta))
        # A dataset whose every gold string failed to be located still reports how many did.
        self.has_spans = any("spans" in r for r in rows) or bool(self.not_found + self.ambiguous)

    @classmethod
    def read(cls, run_dir: Path, s: Settings) -> CaseTable | None:
        """The table, or None when no case has gold spans or a group (then there is nothing to measure)."""
        # Streamed twice rather than held: a million cases without spans must not cost their bytes.
        if not any(b'"spans' in r or b'"group"' in r for r in iter_lines(run_dir / CASES)):  # "spans_not_found"...
            return None
        return cls([json.loads(r) for r in iter_lines(run_dir / CASES)], s)

    def evaluable(self) -> np.ndarray:
        """Cases a span metric can use: faithful ones, and hallucinated ones with complete located gold."""
        has_gold = np.array([bool(sp) for sp in self.spans])
        return (self.unlocated == 0) & (~self.label | has_gold)


def read_verdict_parts(run_dir: Path, want_units: np.ndarray | None, n: int, pos: dict[str, int]
                       ) -> tuple[dict[str, np.ndarray], dict[str, dict[int, list]], dict[str, np.ndarray]]:
    """Per verifier: scores (NaN for an error verdict or no verdict), the units of the cases marked in
    `want_units` (by case position), and whether each case has a verdict with an error."""
    scores: dict[str, np.ndarray] = {}
    errors: dict[str, np.ndarray] = {}
    units: dict[str, dict[int, list]] = defaultdict(dict)
    for raw in iter_lines(run_dir / RESULTS):
        v = json.loads(raw)
        i = pos.get(v.get("case_id"))
        if i is None:
            continue
        vid = v["verifier"]
        if vid not in scores:
            scores[vid] = np.full(n, np.nan)
            errors[vid] = np.zeros(n, bool)
        score = v.get("score")
        if v.get("error") is None and isinstance(score, (int, float)):
            scores[vid][i] = float(score)
        else:
            errors[vid][i] = True
        if want_units is not None and want_units[i] and v.get("units") is not None:  # [] too: it returns units
            units[vid][i] = v["units"]
    return scores, dict(units), errors


def _unit_arrays(units: dict[int, list]) -> dict[str, np.ndarray]:
    case, start, end, score, localized = [], [], [], [], []
    for i, us in units.items():
        for u in us:
            s, e = u.get("start"), u.get("end")
            ok = isinstance(s, int) and isinstance(e, int) and e > s
            case.append(i)
            start.append(s if ok else 0)
            end.append(e if ok else 0)
            score.append(u["score"] if isinstance(u.get("score"), (int, float)) else np.nan)
            localized.append(ok)
    return {"case": np.array(case, np.int64), "start": np.array(start, np.int64), "end": np.array(end, np.int64),
            "score": np.array(score, float), "localized": np.array(localized, bool)}


def _gold(t: CaseTable, mask: np.ndarray) -> SpanSet:
    case, start, end = [], [], []
    for i in np.flatnonzero(mask):
        for s, e in t.spans[i]:
            case.append(i)
            start.append(s)
            end.append(e)
    return SpanSet.of(case, start, end)


def span_section(t: CaseTable, units: dict[str, dict[int, list]], errors: dict[str, np.ndarray],
                 s: Settings) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """The run-level `spans` entry and, per verifier with units, its `spans` entry."""
    ev = t.evaluable()
    cal, test = ev & (t.role == "calibration"), ev & (t.role == "test")
    has_gold = np.array([bool(sp) for sp in t.spans])
    summary = {
        "gold": {"cases_with_spans": int(has_gold.sum()), "spans": int(sum(len(sp) for sp in t.spans)),
                 "not_found": t.not_found, "ambiguous": t.ambiguous,
                 "cases_with_unlocated": int((t.unlocated > 0).sum()),
                 "hallucinated_without_spans": int((t.label & ~has_gold & (t.unlocated == 0)).sum())},
        "evaluated": {"calibration": int(cal.sum()), "test": int(test.sum()),
                      "test_hallucinated": int((test & t.label).sum())},
    }
    gold = _gold(t, ev)
    per: dict[str, dict[str, Any]] = {}
    counts: dict[str, np.ndarray] = {}
    test_idx = np.flatnonzero(test)
    remap = np.full(len(t.label), -1)
    remap[test_idx] = np.arange(len(test_idx))
    gold_test = _gold(t, test)
    gold_test = SpanSet.of(remap[gold_test.case], gold_test.start, gold_test.end)
    for vid, us in units.items():
        u = _unit_arrays({i: x for i, x in us.items() if ev[i]})
        loc = u["localized"]
        scored = ~np.isnan(u["score"])
        entry: dict[str, Any] = {"units": {"total": int(len(loc)), "localized": int(loc.sum()),
                                           "not_localized": int((~loc).sum()), "unscored": int((~scored).sum())}}
        usable = loc & scored
        on_cal = usable & cal[u["case"]]
        labels = overlap_labels(SpanSet.of(u["case"][on_cal], u["start"][on_cal], u["end"][on_cal]), gold)
        fit = fit_unit_threshold(u["score"][on_cal], labels, s.target, s.min_per_class)
        entry["unit_threshold"] = {**fit, "target": str(s.target),
                                   "source": "fitted on the calibration split's units" if fit["value"] is not None
                                   else None}
        entry["test_errors"] = int((errors.get(vid, np.zeros(len(t.label), bool)) & test).sum())
        if fit["value"] is not None:
            flag = usable & test[u["case"]] & (np.nan_to_num(u["score"], nan=-np.inf) >= fit["value"])
            pred = SpanSet.of(remap[u["case"][flag]], u["start"][flag], u["end"][flag])
            counts[vid] = case_counts(len(test_idx), gold_test, pred)
        # Every localized unit taken as a predicted span, whatever its score: the recall ceiling of this
        # verifier's units, and the reading of a verifier (a judge) whose units are its claims. No intervals.
        every = usable & test[u["case"]]
        all_units = case_counts(len(test_idx), gold_test,
                                SpanSet.of(remap[u["case"][every]], u["start"][every], u["end"][every]))
        entry["flag_all_units"] = span_metrics({vid: all_units}, t.label[test_idx], n_boot=0)[vid]["all"]
        per[vid] = entry
    measured = span_metrics(counts, t.label[test_idx], t.slice[test_idx], n_boot=s.n_boot, seed=s.seed)
    for vid, m in measured.items():
        per[vid]["test"] = m.pop("all")
        per[vid]["slices"] = m
    return summary, per


def pair_section(group: np.ndarray, grouped: np.ndarray, label: np.ndarray, slices: np.ndarray,
                 scores: dict[str, np.ndarray], s: Settings) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """Pairwise accuracy per verifier over the cases in a group (`grouped`), all arrays per case."""
    per = {vid: pairwise_accuracy(group[grouped], label[grouped], sc[grouped], slices[grouped],
                                  n_boot=s.n_boot, seed=s.seed)
           for vid, sc in scores.items()}
    first = next(iter(per.values()), {})
    summary = {"groups": first.get("groups", 0), "pairs": first.get("pairs", 0),
               "groups_without_pair": first.get("groups_without_pair", 0), "cases_in_groups": int(grouped.sum())}
    return summary, per


def _row_pairs(t: CaseTable, scores: dict[str, np.ndarray], s: Settings
               ) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    grouped = np.array([g is not None for g in t.group], dtype=bool)
    codes: dict[str, int] = {}
    group = np.array([codes.setdefault(json.dumps(g, sort_keys=True, default=str), len(codes)) if g is not None
                      else -1 for g in t.group])
    return pair_section(group, grouped, t.label, t.slice, scores, s)


def _table_pairs(cases: pd.DataFrame, scored: pd.DataFrame, s: Settings
                 ) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """The pair section from the columnar case table and metrics frame (`tables`, `metrics.frame`): what
    `finish` already holds, so a million grouped cases cost no dict or JSON parse per case."""
    import pandas as pd  # at run time only here: the frames passed in have loaded it

    n = len(cases)
    group = cases["group"].to_numpy()
    grouped = group < cases.attrs["groups"]
    rows = scored["case_row"].to_numpy()
    # Slices and verifiers as integer codes: a string per row would be two million Python objects.
    slice_codes, slice_names = pd.factorize(scored["slice"], sort=False)
    names = np.array([*map(str, slice_names), "none"], dtype=object)  # a missing slice (code -1) is "none"
    at = np.full(n, -1, dtype=np.int64)
    at[rows] = slice_codes
    slices = names[at]  # one object per slice name, shared by its cases
    ok = scored["ok"].to_numpy(bool)
    score = scored["score"].to_numpy(float)
    verifier, vids = pd.factorize(scored["verifier"], sort=False)  # file order, as results.jsonl lists them
    scores: dict[str, np.ndarray] = {}
    for code, vid in enumerate(vids):
        mine = (verifier == code) & ok
        scores[str(vid)] = np.full(n, np.nan)
        scores[str(vid)][rows[mine]] = score[mine]
    return pair_section(group, grouped, cases["label"].to_numpy(bool), slices, scores, s)


def _scan(path: Path) -> tuple[bool, bool]:
    """(some case has gold spans or span notes, some case has a group), in one streamed pass."""
    spans = grouped = False
    for r in iter_lines(path):
        spans = spans or b'"spans' in r  # "spans", "spans_not_found", ...
        grouped = grouped or b'"group"' in r
        if spans and grouped:
            break
    return spans, grouped


def add_metrics(metrics: dict[str, Any], run_dir: str | Path, s: Settings, cases: pd.DataFrame | None = None,
                scored: pd.DataFrame | None = None) -> dict[str, Any]:
    """Add span and pair metrics to a run's metrics (in place; also returned). With the run's case table
    and metrics frame (`cases`, `scored`), pairs of a run without gold spans are measured from those
    columns; span metrics read the case index's rows and the units they need from the files."""
    run_dir = Path(run_dir)
    has_spans, grouped = _scan(run_dir / CASES)
    if not (has_spans or grouped):
        return metrics
    verifiers = metrics.setdefault("verifiers", {})

    def add_pairs(summary: dict[str, Any], per: dict[str, dict[str, Any]]) -> None:
        if summary["pairs"]:
            metrics["pairs"] = jsonable(summary)
            for vid, entry in per.items():
                if vid in verifiers:
                    verifiers[vid]["pairs"] = jsonable(entry)

    if not has_spans and cases is not None and scored is not None and "groups" in cases.attrs:
        add_pairs(*_table_pairs(cases, scored, s))
        return metrics
    t = CaseTable.read(run_dir, s)
    if t is None:
        return metrics
    grouped = any(g is not None for g in t.group)
    want = t.evaluable() if t.has_spans else None
    if not grouped and want is None:
        return metrics
    scores, units, errors = read_verdict_parts(run_dir, want, len(t.ids), t.pos)
    if t.has_spans:
        summary, per = span_section(t, units, errors, s)
        metrics["spans"] = jsonable(summary)
        for vid, entry in per.items():
            if vid in verifiers:
                verifiers[vid]["spans"] = jsonable(entry)
    if grouped:
        add_pairs(*_row_pairs(t, scores, s))
    return metrics
