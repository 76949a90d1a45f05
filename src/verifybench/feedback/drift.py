"""Drift: has production moved away from the data the thresholds were fitted on? Unlabeled production
data is enough.

The reference is a baseline (`verifybench baseline`: its per-case test-split scores and its thresholds
per slice) or a run directory (its test split, at the thresholds of its metrics.json). The production
window is a guard decision log or a run directory. Per check, over all cases and per doc type:
- the flag rate at the policy's threshold (the slice's own, else the whole set's: held, as the gate
  holds it), on both sides, and the change;
- the population stability index of the score distribution, over ten bins at the reference's score
  deciles: sum (p - q) ln(p / q), shares clipped at 1e-4; the usual reading: < 0.1 stable, 0.1-0.25 a
  shift worth a look, > 0.25 a shift;
- the two-sample Kolmogorov-Smirnov test (`scipy.stats.ks_2samp`): its statistic and p-value (reported,
  not gated: over many thousand cases any difference is "significant");
- the share of production cases whose doc type the policy has no slice for (they get the whole-set
  threshold, fitted on other documents).
A figure (a PSI, a flag-rate change) drifts only when it is beyond its limit (`--max-psi`,
`--max-flag-rate-change`: the size of change that matters) AND beyond what sampling noise gives at the two
windows' sizes: its permutation p-value (`metrics.drift.drift_test`: the two windows' scores pooled and
dealt again), after Holm across all the figures compared (every check and slice judged), at most alpha
(0.05). On 50 cases a side a PSI of 0.4 is noise; on 10,000 a side a PSI of 0.21 is not. Above 10,000 cases a side
the test runs on a seeded random 10,000 of each (still a valid test; at that size sampling noise is far
below the default limits). Each row also
gives the smallest fall and rise of its flag rate this comparison detects 80% of the time
(`detectable_change`, at Holm's first-step level alpha / m): a change smaller than that passes unseen.
The unseen doc types' share is a count, not a sample statistic: judged against its limit alone.
Exit codes as the gate's: 0 within limits, 1 drift, 2 no comparison possible. A slice with fewer than
`min_cases` cases on either side is reported, not gated.

A score that is not a finite number (an error verdict, a null, a NaN, an infinity) is left out of every
figure and counted, per side, in each row and in a note. Both sides must be the same checks: a check
whose config hash differs between the reference and production (a run's manifest, or the policy a log
was served under, `policy`) is refused, and so is a policy fitted on another suite's data than the
reference's. A log records no configuration, but each decision's threshold: a check decided at a
threshold the reference does not hold means the log was served under a policy fitted elsewhere, and is
refused too (with `policy`, only the decisions made under that policy are compared, the rest counted).
"""

from __future__ import annotations

import hashlib
import math
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from verifybench.errors import VerifybenchError
from verifybench.feedback.runs import RunTable
from verifybench.feedback.window import Window, open_source
from verifybench.formats import Baseline, FormatError
from verifybench.metrics.drift import ALPHA, N_PERM, POWER, Threshold, detectable_change, drift_test, holm
from verifybench.metrics.settings import OVERALL
from verifybench.metrics.summary import jsonable
from verifybench.rundir import MANIFEST
from verifybench.tracking.drift_record import record, write_record

MAX_PSI = 0.2
MAX_FLAG_RATE_CHANGE = 0.05
MAX_UNSEEN_SHARE = 0.05
MIN_CASES = 30
PERMUTED_CASES = 10_000  # a side, at most, dealt again for a figure's permutation p-value
BINS = 10
EPS = 1e-4


class DriftRefused(VerifybenchError):
    """No comparison can be made (exit 2)."""

    record: Path | None = None  # the drift record written for the refusal (`out`)


@dataclass
class Reference:
    source: str
    scores: dict[str, np.ndarray]  # test split, NaN = error
    doc_type: np.ndarray  # object
    thresholds: dict[str, dict[str, float]]  # verifier -> slice -> threshold (OVERALL included)
    by: str
    suite: str | None = None
    dataset_hash: str | None = None
    configs: dict[str, str | None] = field(default_factory=dict)  # verifier -> config hash


@dataclass
class ServedPolicy:
    """What drift reads of the policy a guard served: its hash as the guard logs it (the sha256 of its
    bytes, first 16 hex digits), the suite and data it was fitted on, its checks' config hashes."""

    path: Path
    hash: str
    suite: str | None
    dataset_hash: str | None
    configs: dict[str, str | None]


def served_policy(path: str | Path) -> ServedPolicy:
    p = Path(path)
    try:
        data = p.read_bytes()
        doc = yaml.safe_load(data)
    except OSError as e:
        raise DriftRefused(f"{p}: cannot read the policy ({e.strerror or e})") from None
    except yaml.YAMLError as e:
        raise DriftRefused(f"{p}: not a verifybench policy (invalid YAML: {e})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("thresholds"), dict) or "by" not in doc:
        raise DriftRefused(f"{p}: not a verifybench policy (needs 'by' and 'thresholds')")
    verifiers = doc["verifiers"] if isinstance(doc.get("verifiers"), dict) else {}
    return ServedPolicy(path=p, hash=hashlib.sha256(data).hexdigest()[:16], suite=doc.get("suite"),
                        dataset_hash=doc.get("dataset_hash"),
                        configs={str(k): v.get("config_hash") if isinstance(v, dict) else None
                                 for k, v in verifiers.items()})


@dataclass
class DriftResult:
    rows: list[dict[str, Any]]
    unseen: dict[str, Any]
    notes: list[str] = field(default_factory=list)
    summary: str = ""
    record: Path | None = None  # the drift record written (`out`)

    @property
    def exit_code(self) -> int:
        return 1 if any(r["status"] == "drift" for r in self.rows) or self.unseen.get("status") == "drift" else 0

    def as_dict(self) -> dict[str, Any]:
        return jsonable({"exit_code": self.exit_code, "rows": self.rows, "unseen_doc_types": self.unseen,
                         "notes": self.notes})

    def table(self) -> DriftTable:
        """The rows as the CLI's table shows them: text cells, one row per check and slice."""
        def cell(x: Any, d: int = 3) -> str:
            return "-" if x is None else f"{x:.{d}f}"

        rows: list[tuple[str, ...]] = [
            (r["check"], r["slice"], f"{r['reference_cases']} / {r['production_cases']}",
             f"{left_out(r, 'reference')} / {left_out(r, 'production')}", cell(r["reference_flag_rate"]),
             cell(r["production_flag_rate"]), cell(r["flag_rate_change"]), cell(r["psi"]), cell(r["ks_statistic"]),
             cell(r["ks_p_value"], 4), detectable(r), r["status"] + (f": {r['why']}" if r.get("why") else ""))
            for r in self.rows]
        return DriftTable(rows=rows, alarms=[r["status"] == "drift" for r in self.rows])


@dataclass
class DriftTable:
    """A drift result as text: `COLUMNS`, one row per check and slice; `alarms[i]`: row i drifted."""

    TITLE = "drift: production against the reference's test split, at the policy's thresholds"
    COLUMNS = ("check", "slice", "cases ref / prod", "left out ref / prod", "flag rate ref", "prod", "change", "PSI",
               "KS", "KS p", "detectable fall / rise", "result")

    rows: list[tuple[str, ...]]
    alarms: list[bool]


def reference(path: str | Path) -> Reference:
    """A baseline file or a run directory, as the reference side."""
    p = Path(path)
    if p.is_dir():
        if not (p / MANIFEST).exists():
            raise DriftRefused(f"{p}: not a run directory (no {MANIFEST})")
        t = RunTable.open(p)
        sel = t.test
        if not sel.any():
            raise DriftRefused(f"{p}: the run has no test split to compare with")
        doc = np.asarray(t.doc_types, dtype=object)[t.doc_type[sel]]
        fitted = t.run.metrics_model().verifiers if t.run.has_metrics() else {}
        slices: dict[str, dict[str, float]] = {}
        for vid in t.checks:
            m = fitted.get(vid)
            if m is not None:
                whole = m.overall.threshold.value
                per = {k: sm.threshold.value for k, sm in m.slices.items() if sm.threshold.value is not None}
            else:
                whole, per = t.threshold(vid)["value"], {}
            if whole is not None:
                per[OVERALL] = whole
            slices[vid] = per
        return Reference(source=str(p), scores={v: c.score[sel] for v, c in t.checks.items()}, doc_type=doc,
                         thresholds=slices, by=t.settings.by, suite=t.manifest.suite.name,
                         dataset_hash=t.manifest.dataset.hash,
                         configs={v: c.config_hash for v, c in t.checks.items()})
    try:
        base = Baseline.read(p)
    except FormatError as e:
        raise DriftRefused(f"{e} (a reference is a baseline from `verifybench baseline`, or a run directory)") from None
    by = base.by
    ids = sorted(base.test_slices)
    at = {cid: i for i, cid in enumerate(ids)}
    slice_of = np.array([base.test_slices[c] for c in ids], dtype=object)
    scores, thresholds = {}, {}
    for vid, v in base.verifiers.items():
        keys = list(v.test_scores)
        vals = np.array(list(v.test_scores.values()), dtype=float)  # None (an error verdict) reads as NaN
        if keys == ids:  # the baseline writes both in case-id order: no lookup per case
            scores[vid] = vals
        else:
            s = np.full(len(ids), np.nan)
            known = np.array([c in at for c in keys], dtype=bool)
            s[np.array([at[c] for c in keys if c in at], dtype=np.int64)] = vals[known]
            scores[vid] = s
        thresholds[vid] = {k: r.threshold for k, r in v.slices.items() if r.threshold is not None}
    return Reference(source=str(p), scores=scores, doc_type=slice_of if by == "doc_type" else
                     np.full(len(ids), "none", dtype=object), thresholds=thresholds, by=by, suite=base.suite,
                     dataset_hash=base.dataset_hash, configs={vid: v.config_hash for vid, v in base.verifiers.items()})


def psi(ref: np.ndarray, cur: np.ndarray, bins: int = BINS) -> float:
    """Population stability index of `cur` against `ref`, over bins at the reference's quantiles."""
    edges = np.unique(np.quantile(ref, np.linspace(0, 1, bins + 1)[1:-1]))
    p = np.bincount(np.searchsorted(edges, ref, side="right"), minlength=len(edges) + 1) / len(ref)
    q = np.bincount(np.searchsorted(edges, cur, side="right"), minlength=len(edges) + 1) / len(cur)
    p, q = np.clip(p, EPS, None), np.clip(q, EPS, None)
    return float(np.sum((q - p) * np.log(q / p)))


def _codes(ref: np.ndarray, win: np.ndarray) -> tuple[list[str], np.ndarray, np.ndarray]:
    """The doc types of both sides as integer codes into their sorted names: one hashing pass, so each
    slice is an integer comparison instead of comparing every case's string."""
    import pandas as pd

    codes, names = pd.factorize(np.concatenate([ref, win]).astype(object), sort=True)
    return [str(n) for n in names], codes[:len(ref)], codes[len(ref):]


def _threshold_table(thr: dict[str, float], names: list[str]) -> np.ndarray:
    """Each doc type's threshold (its slice's own, else the whole set's; NaN when neither), by code."""
    whole = thr.get(OVERALL, np.nan)
    return np.array([whole if n == OVERALL else thr.get(n, whole) for n in names] + [whole], dtype=float)  # -1: none


def _short(h: Any) -> str:
    return str(h)[:12]


def _same_checks(ref: Reference, win: Window, shared: list[str], policy: ServedPolicy | None) -> tuple[Window, list[str]]:
    """Refuse (exit 2) two sides that are not the same checks on the same footing, naming what differs;
    return the window to compare (a log's decisions under `policy` only) and notes on what was left out
    or could not be checked."""
    notes: list[str] = []
    if policy is not None:
        if ref.dataset_hash and policy.dataset_hash and ref.dataset_hash != policy.dataset_hash:
            raise DriftRefused(f"another suite: the policy {policy.path} was fitted on {policy.suite!r} (dataset "
                               f"{_short(policy.dataset_hash)}), the reference {ref.source} is from {ref.suite!r} "
                               f"(dataset {_short(ref.dataset_hash)}); compare with the baseline of the run the "
                               "policy was fitted on")
        for vid in shared:
            a, b = ref.configs.get(vid), policy.configs.get(vid)
            if a and b and a != b:
                raise DriftRefused(f"check {vid!r}: config hash {a} in the reference ({ref.source}), {b} in the policy "
                                   f"{policy.path}: the same id, another configuration, so its scores do not compare")
        if win.policy_hash is not None:
            keep = win.policy_hash == policy.hash
            found = ", ".join(f"{h} ({n})" for h, n in Counter(win.policy_hash.tolist()).most_common(5))
            if not keep.any():
                raise DriftRefused(f"{win.source}: no decision was made under the policy {policy.path} (hash "
                                   f"{policy.hash}); the log's policy hashes (decisions): {found}")
            if not keep.all():
                notes.append(f"{int((~keep).sum())} decisions made under another policy left out (the log's policy "
                             f"hashes: {found}); only those under {policy.path} ({policy.hash}) are compared")
                win = win.subset(keep)
            win.configs = {v: policy.configs.get(v) for v in win.scores}
    for vid in shared:
        a, b = ref.configs.get(vid), win.configs.get(vid)
        if a and b and a != b:
            raise DriftRefused(f"check {vid!r}: config hash {a} in the reference ({ref.source}), {b} in production "
                               f"({win.source}): the same id, another configuration, so its scores do not compare")
    if win.kind == "log":
        for vid in shared:
            _refuse_other_thresholds(ref, win, vid)
        if policy is None:
            hashes = Counter(win.policy_hash.tolist()) if win.policy_hash is not None else Counter()
            notes.append("a log records no configuration: give --policy (the policy the guard served) to check its "
                         "checks' config hashes and suite against the reference's"
                         + (f"; its decisions were made under {len(hashes)} policies ("
                            + ", ".join(f"{h}: {n}" for h, n in hashes.most_common(5)) + ")" if len(hashes) > 1 else ""))
    return win, notes


def _refuse_other_thresholds(ref: Reference, win: Window, vid: str) -> None:
    """A log's decisions for `vid` were made at thresholds the reference holds (any of its slices'), else
    the log was served under a policy fitted on another run: refused."""
    logged = win.thresholds[vid]
    has = np.isfinite(logged)
    if not has.any():
        return
    held = np.array(sorted({float(x) for x in ref.thresholds.get(vid, {}).values() if x is not None}), dtype=float)
    values, inverse = np.unique(logged[has], return_inverse=True)
    known = (np.isclose(values[:, None], held[None, :], rtol=1e-9, atol=0.0).any(axis=1) if len(held)
             else np.zeros(len(values), bool))
    bad = ~known[inverse]
    if bad.any():
        seen = ", ".join(f"{x:.6g}" for x in values[~known][:5])
        raise DriftRefused(f"check {vid!r}: {int(bad.sum())} of {int(has.sum())} production decisions in {win.source} "
                           f"were made at a threshold the reference does not hold (logged {seen}; the reference's: "
                           f"{', '.join(f'{x:.6g}' for x in held) or 'none'}): the log was served under a policy fitted "
                           f"on another run than {ref.source}. Compare with the baseline of the run the served policy "
                           "was fitted on, or give --policy POLICY to compare only the decisions made under it")


def _left_out(vid: str, ra: np.ndarray, rb: np.ndarray) -> str | None:
    """A note on the scores of `vid` that are not finite numbers (left out of every figure), or None."""
    counts = [(int(np.isnan(x).sum()), int(np.isinf(x).sum())) for x in (ra, rb)]
    if not any(a or b for a, b in counts):
        return None
    (ea, ia), (eb, ib) = counts
    return (f"{vid}: left out of every figure: in the reference {ea} cases without a score (an error, a null or a "
            f"NaN) and {ia} infinite; in production {eb} and {ib}")


def compare(ref: Reference, win: Window, max_psi: float = MAX_PSI, max_flag_rate_change: float = MAX_FLAG_RATE_CHANGE,
            max_unseen_share: float = MAX_UNSEEN_SHARE, min_cases: int = MIN_CASES,
            policy: ServedPolicy | None = None) -> DriftResult:
    from scipy.stats import ks_2samp

    shared = [v for v in ref.scores if v in win.scores]
    if not shared:
        raise DriftRefused(f"no check in common: the reference has {', '.join(ref.scores) or 'none'}, "
                           f"{win.source} has {', '.join(win.scores) or 'none'}")
    if not len(win):
        raise DriftRefused(f"{win.source}: no production case to compare")
    win, checked = _same_checks(ref, win, shared, policy)
    notes = list(win.skipped) + checked
    notes += [n for n in (_left_out(v, ref.scores[v], win.scores[v]) for v in shared) if n]
    if ref.by != "doc_type":
        notes.append(f"the reference's slices are by {ref.by}, not doc type: only the whole set is compared per doc "
                     "type against the whole-set threshold")
    rows = []
    slices_known = {k for thr in ref.thresholds.values() for k in thr if k != OVERALL}
    docs, rc, wc = _codes(ref.doc_type, win.doc_type)
    every_a, every_b = np.ones(len(rc), bool), np.ones(len(wc), bool)
    samples: list[tuple[np.ndarray, np.ndarray, Threshold]] = []  # each row's scores and threshold(s)
    for vid in shared:
        thr = ref.thresholds.get(vid, {})
        table = _threshold_table(thr, docs)
        t_ref, t_win = table[rc], table[wc]
        own = any(k in thr for k in docs if k != OVERALL)  # some case is held to its slice's own threshold
        for code, key in [(-1, OVERALL), *enumerate(docs)]:
            a = every_a if code < 0 else rc == code
            b = every_b if code < 0 else wc == code
            ra, rb = ref.scores[vid][a], win.scores[vid][b]
            ta, tb = t_ref[a], t_win[b]
            oka, okb = np.isfinite(ra), np.isfinite(rb)  # no score (NaN) and an infinity: left out, counted
            row: dict[str, Any] = {"check": vid, "slice": key, "reference_cases": int(oka.sum()),
                                   "production_cases": int(okb.sum()),
                                   "reference_errors": int(np.isnan(ra).sum()), "reference_infinite": int(np.isinf(ra).sum()),
                                   "production_errors": int(np.isnan(rb).sum()),
                                   "production_infinite": int(np.isinf(rb).sum())}
            if code < 0:
                row["threshold"] = thr.get(OVERALL)
                if own:
                    row["threshold_from"] = "per slice"  # each case at its slice's threshold, the rest at this one
            else:
                value = table[code]
                row["threshold"] = None if np.isnan(value) else float(value)
                if key not in thr:
                    row["threshold_from"] = OVERALL
            fa = float(np.mean(ra[oka] >= ta[oka])) if oka.any() and not np.isnan(ta).all() else None
            fb = float(np.mean(rb[okb] >= tb[okb])) if okb.any() and not np.isnan(tb).all() else None
            row.update(reference_flag_rate=fa, production_flag_rate=fb,
                       flag_rate_change=None if fa is None or fb is None else fb - fa)
            if oka.sum() and okb.sum():
                row["psi"] = psi(ra[oka], rb[okb])
                ks = ks_2samp(ra[oka], rb[okb])
                row["ks_statistic"], row["ks_p_value"] = float(ks.statistic), float(ks.pvalue)
            else:
                row["psi"] = row["ks_statistic"] = row["ks_p_value"] = None
            if min(row["reference_cases"], row["production_cases"]) < min_cases:
                row["status"] = "too few"
                row["why"] = f"fewer than {min_cases} scored cases on a side"
            rows.append(row)
            held = not np.isnan(ta).all()  # a threshold to read flag rates at (a slice's is one value)
            samples.append((ra[oka], rb[okb], (ta[oka], tb[okb]) if held and code < 0 else
                            float(ta[0]) if held else None))
    notes.append(_judge(rows, samples, max_psi, max_flag_rate_change))
    present = np.zeros(len(docs), bool)
    present[np.unique(wc)] = True
    unseen_codes = [i for i, d in enumerate(docs) if present[i] and d not in slices_known] if slices_known else []
    unseen_docs = [docs[i] for i in unseen_codes]
    hit = np.isin(wc, unseen_codes) if unseen_codes else np.zeros(len(wc), bool)
    share = float(hit.mean()) if unseen_docs else 0.0
    unseen = {"doc_types": unseen_docs, "share": share, "limit": max_unseen_share,
              "status": "drift" if share > max_unseen_share else "ok",
              "cases": int(hit.sum())}
    if not slices_known:
        notes.append("the policy has no per-doc-type slice: every doc type uses the whole-set threshold")
    result = DriftResult(rows=rows, unseen=unseen, notes=notes)
    result.summary = markdown(result, ref.source, win.source, max_psi, max_flag_rate_change)
    return result


def _at_most(sample: tuple[np.ndarray, np.ndarray, Threshold], n: int, seed: int
             ) -> tuple[np.ndarray, np.ndarray, Threshold]:
    """A row's scores (and per-case thresholds), each side cut to a seeded random `n` cases: the
    permutations' cost grows with the cases, and beyond `n` a side the noise is far below any limit."""
    a, b, thr = sample
    rng = np.random.default_rng(seed)
    ka = np.sort(rng.choice(len(a), n, replace=False)) if len(a) > n else slice(None)
    kb = np.sort(rng.choice(len(b), n, replace=False)) if len(b) > n else slice(None)
    if isinstance(thr, tuple):
        thr = (np.asarray(thr[0])[ka], np.asarray(thr[1])[kb])
    return a[ka], b[kb], thr


LIMITED = (("psi", "psi_p_value"), ("flag_rate_change", "flag_rate_p_value"))  # the figures judged, their p-value


def _judge(rows: list[dict[str, Any]], samples: list[tuple[np.ndarray, np.ndarray, Threshold]], max_psi: float,
           max_change: float, alpha: float = ALPHA, power: float = POWER) -> str:
    """Set each judged row's status: a figure drifts when it is beyond its limit and its permutation
    p-value, after Holm across every figure compared, is at most `alpha`. Only a figure beyond its limit
    can drift, so only those are permuted; the others count in the family at p = 1 (Holm is monotone, so
    that never adds an alarm). Also each row's smallest detectable fall and rise of the flag rate, at
    Holm's first-step level alpha / m. Returns a note saying how the figures were judged."""
    judged = [i for i, r in enumerate(rows) if r.get("status") != "too few"]
    family = [(i, k) for i in judged for k, _ in LIMITED if rows[i][k] is not None]
    m = max(len(family), 1)
    n_perm = max(N_PERM, math.ceil(2 * m / alpha))  # the smallest p-value reachable is below alpha / m
    limit = {"psi": max_psi, "flag_rate_change": max_change}
    p = dict.fromkeys(family, 1.0)
    for i in judged:
        over = [k for k, _ in LIMITED if rows[i][k] is not None and abs(rows[i][k]) > limit[k]]
        a, b, thr = _at_most(samples[i], PERMUTED_CASES, seed=i)
        if over and len(a) >= 2:
            test = drift_test(a, b, thr, alpha, n_perm, seed=i)
            p.update({(i, k): test[k]["p_value"] for k in over})
    adjusted = dict(zip(family, holm([p[f] for f in family]))) if family else {}
    for i in judged:
        row, why, drifted = rows[i], [], False
        for k, p_key in LIMITED:
            row[p_key] = None
            if row[k] is None or abs(row[k]) <= limit[k]:
                continue
            q = row[p_key] = float(adjusted[(i, k)])
            drifted |= q <= alpha
            shown = f"PSI {row[k]:.3f} > {max_psi:g}" if k == "psi" else f"flag rate {row[k]:+.3f} beyond ±{max_change:g}"
            why.append(f"{shown}, p {q:.3g}" + ("" if q <= alpha else " (within sampling noise)"))
        row["status"], row["why"] = ("drift" if drifted else "ok"), "; ".join(why)
        if row["flag_rate_change"] is not None:
            fall, rise = detectable_change(row["reference_flag_rate"], min(row["reference_cases"], PERMUTED_CASES),
                                           min(row["production_cases"], PERMUTED_CASES), alpha / m, power)
            row["detectable_flag_rate_fall"] = None if math.isnan(fall) else fall
            row["detectable_flag_rate_rise"] = None if math.isnan(rise) else rise
    return (f"a figure drifts when it is beyond its limit and beyond sampling noise: its permutation p-value "
            f"({n_perm} re-deals of the two windows' scores), after Holm across the {len(family)} figures compared, "
            f"at most {alpha:g}; 'detectable' is the smallest fall / rise of the flag rate caught {power:.0%} of "
            f"the time at these sizes")


def left_out(row: dict[str, Any], side: str) -> int:
    """A row's cases on `side` left out for a score that is not a finite number."""
    return int(row.get(f"{side}_errors") or 0) + int(row.get(f"{side}_infinite") or 0)


def _f(x: Any, d: int = 3) -> str:
    return "–" if x is None else f"{x:.{d}f}"


def detectable(row: dict[str, Any]) -> str:
    """The smallest fall and rise of the flag rate the row's comparison detects (–: none possible, or the
    row was not judged)."""
    fall, rise = row.get("detectable_flag_rate_fall"), row.get("detectable_flag_rate_rise")
    if fall is None and rise is None:
        return "–"
    return f"{'–' if fall is None else f'-{fall:.3f}'} / {'–' if rise is None else f'+{rise:.3f}'}"


def markdown(r: DriftResult, ref: str, win: str, max_psi: float, max_change: float) -> str:
    verdict = {0: "no drift beyond the limits", 1: "**DRIFT**"}[r.exit_code]
    lines = [f"### verifybench drift: {verdict}", "",
             f"Production `{win}` against the test split of `{ref}`, at the policy's thresholds (held). Limits: "
             f"PSI {max_psi:g}, flag-rate change ±{max_change:g}, unseen doc types {r.unseen['limit']:.0%} of cases.",
             "", "| check | slice | cases ref / prod | left out ref / prod | flag rate ref | prod | change | PSI | KS | "
             "KS p | detectable fall / rise | result |", "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for row in r.rows:
        res = row["status"] + (f": {row['why']}" if row.get("why") else "")
        lines.append(f"| {row['check']} | {row['slice']} | {row['reference_cases']} / {row['production_cases']} | "
                     f"{left_out(row, 'reference')} / {left_out(row, 'production')} | "
                     f"{_f(row['reference_flag_rate'])} | {_f(row['production_flag_rate'])} | "
                     f"{_f(row['flag_rate_change'])} | {_f(row['psi'])} | {_f(row['ks_statistic'])} | "
                     f"{_f(row['ks_p_value'], 4)} | {detectable(row)} | {res} |")
    u = r.unseen
    lines += ["", f"Doc types the policy has no slice for: {', '.join(u['doc_types']) or 'none'} "
              f"({u['cases']} cases, {u['share']:.1%}): {u['status']}."]
    lines += [f"- {n}" for n in r.notes]
    return "\n".join(lines) + "\n"


def refusal_markdown(reason: str) -> str:
    return f"### verifybench drift: **REFUSED** (exit 2)\n\n{reason}\n"


def drift(reference_path: str | Path, source: str | Path, max_psi: float | None = None,
          max_flag_rate_change: float | None = None, max_unseen_share: float | None = None,
          min_cases: int | None = None, summary: str | Path | None = None, mlflow: str | None = None,
          out: str | Path | None = None, policy: str | Path | None = None) -> DriftResult:
    """A production window (`source`: a guard log directory or a run directory) against a baseline's (or a
    run's) test split, at the policy's thresholds: flag rate, PSI and Kolmogorov-Smirnov per check and doc
    type, and the share of doc types without a slice (`verifybench drift`). Limits left None take their
    defaults (MAX_PSI, ...). Writes the Markdown summary to `summary` when given (a refusal too); with
    `out` writes the drift record the history page reads (`tracking.drift_record`: a file, or a new
    `drift-<time>.json` in a folder; a refusal too, its path then in `DriftRefused.record`); with `mlflow`
    (a tracking URI) logs the figures as one MLflow run. `policy`: the policy file the guard that wrote the
    log served: only the decisions made under it are compared, and its suite and config hashes are checked
    against the reference's. Returns a `DriftResult` (exit code 0 or 1; the record's path in `record`);
    raises `DriftRefused` (exit 2)."""
    psi_, change, unseen = (MAX_PSI if max_psi is None else max_psi,
                            MAX_FLAG_RATE_CHANGE if max_flag_rate_change is None else max_flag_rate_change,
                            MAX_UNSEEN_SHARE if max_unseen_share is None else max_unseen_share)
    least = MIN_CASES if min_cases is None else min_cases
    limits = {"max_psi": psi_, "max_flag_rate_change": change, "max_unseen_share": unseen, "min_cases": least,
              "alpha": ALPHA}
    try:
        served = None if policy is None else served_policy(policy)
        result = compare(reference(reference_path), open_source(source), psi_, change, unseen, least, served)
    except VerifybenchError as e:
        if summary:
            Path(summary).parent.mkdir(parents=True, exist_ok=True)
            Path(summary).write_text(refusal_markdown(str(e)), encoding="utf-8")
        refused = e if isinstance(e, DriftRefused) else DriftRefused(f"refusing to compare: {e}")
        if out is not None:
            refused.record = write_record(out, record({}, str(reference_path), str(source), limits, reason=str(refused)))
        if refused is e:
            raise
        raise refused from None
    if summary:
        Path(summary).parent.mkdir(parents=True, exist_ok=True)
        Path(summary).write_text(result.summary, encoding="utf-8")
    if mlflow is not None:
        result.notes.append(f"logged to MLflow as run {log_to_mlflow(result, mlflow)}")
    if out is not None:
        result.record = write_record(out, record(result.as_dict(), str(reference_path), str(source), limits))
    return result


def log_to_mlflow(result: DriftResult, tracking_uri: str, experiment: str = "verifybench-drift",
                  run_name: str | None = None) -> str:
    """The drift figures as one MLflow run (metrics `<check>.<slice>.psi`, `.flag_rate_change`, ...,
    `exit_code`, `unseen_share`; the Markdown summary as an artifact); returns its run id. Through an
    `MlflowClient`, so no global MLflow state changes. Needs the `mlflow` extra."""
    import re
    import tempfile
    import time

    from mlflow import MlflowClient
    from mlflow.entities import Metric

    client = MlflowClient(tracking_uri)
    exp = client.get_experiment_by_name(experiment)
    exp_id = exp.experiment_id if exp is not None else client.create_experiment(experiment)
    run = client.create_run(exp_id, run_name=run_name, tags={"verifybench.kind": "drift"})
    now = int(time.time() * 1000)
    values: dict[str, float] = {"exit_code": float(result.exit_code), "unseen_share": float(result.unseen["share"])}
    for row in result.rows:
        base = re.sub(r"[^A-Za-z0-9_\-. /]", "_", f"{row['check']}.{row['slice']}")
        for k in ("psi", "ks_statistic", "ks_p_value", "reference_flag_rate", "production_flag_rate",
                  "flag_rate_change"):
            if row.get(k) is not None:
                values[f"{base}.{k}"] = float(row[k])
    items = [Metric(k, v, now, 0) for k, v in values.items()]
    for start in range(0, len(items), 1000):
        client.log_batch(run.info.run_id, metrics=items[start:start + 1000])
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "drift.md"
        path.write_text(result.summary, encoding="utf-8")
        client.log_artifact(run.info.run_id, str(path))
    client.set_terminated(run.info.run_id, "FAILED" if result.exit_code else "FINISHED")
    return str(run.info.run_id)
