"""Combinations of checks measured offline from a run directory, without re-scoring: each check alone,
`any` / `all` of them at their fitted thresholds, and cascades ("the cheap check decides when it is
confident, the expensive check otherwise").

Everything that is chosen is chosen on the calibration split: each check's threshold, and a cascade's
confident region (a score at or below `allow_at_or_below` is allowed, at or above `flag_at_or_above` is
flagged, anything between, or a cheap error, goes to the expensive check). Everything reported is
measured on the test split: precision, recall and F1 with stratified bootstrap intervals, latency
(mean and p95 per case: the cheap check's time, plus the expensive check's where it ran) and cost.

Error verdicts count as wrong, as in `compare` and the gate: a case whose deciding verdict is an error
is a miss when it is hallucinated and a false alarm when it is faithful, so a combination cannot look
better by failing. A cheap check's error sends the case to the expensive check, as a guard would.

How the confident region is fitted: for every pair of bounds on a grid of the cheap check's
calibration-score quantiles, the calibration split's quality (the run's target: F-beta, balanced
accuracy, or recall / precision under the precision / recall floor) and mean latency follow from
cumulative counts, in one vectorised pass. The cascade kept is the fastest pair whose quality is at
most `max_loss` below the expensive check's own on the calibration split (ties: the higher quality).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict, cast

import numpy as np

from verifybench.errors import VerifybenchError
from verifybench.evaluation.saved_points import SAVED
from verifybench.feedback.runs import RunTable
from verifybench.formats.guardfile import GuardSpec
from verifybench.metrics.bootstrap import counts_intervals
from verifybench.metrics.curves import rates
from verifybench.metrics.operating import pareto_front
from verifybench.metrics.summary import jsonable
from verifybench.metrics.thresholds import Target, parse_target


class Confusion(TypedDict):
    tp: int
    fp: int
    fn: int
    tn: int


class CaseLatency(TypedDict):
    mean: float
    p95: float
    cases: int  # with a latency
    left_out: int  # without one


class _MeasuredKeys(TypedDict):
    n: int
    errors: int
    precision: float | None
    recall: float | None
    specificity: float | None
    f1: float | None
    accuracy: float | None
    balanced_accuracy: float | None
    confusion: Confusion
    latency_ms: CaseLatency | None
    cost_per_1k: float | None


class Measured(_MeasuredKeys, total=False):
    """A combination's decisions on the test split, errors counted as wrong (None: undefined)."""

    ci: dict[str, list[float | None]]  # 95% bootstrap intervals
    deferred_share: float | None  # a cascade: the share the expensive check decided


class Region(TypedDict):
    """A cascade's confident region of the cheap check's score (None: no such region)."""

    allow_at_or_below: float | None
    flag_at_or_above: float | None


class CascadeFit(TypedDict):
    """A cascade's region as fitted on the calibration split."""

    quality: float | None
    expensive_alone_quality: float | None
    target: str
    max_loss: float
    mean_latency_ms: float | None
    deferred_share: float | None
    grid_points: int


class PairedDiff(TypedDict):
    a: float | None
    b: float | None
    diff: float | None
    ci: list[float | None]
    p_value: float | None


class PairedMember(TypedDict):
    """The stack against one member on the test split (paired bootstrap)."""

    a: str
    b: str
    cases: int
    metrics: dict[str, PairedDiff]


class StackModel(TypedDict):
    """p = sigmoid(intercept + sum score[v] * s_v (+ missing[v] where v has no score)), a missing score
    imputed as impute_median[v]."""

    intercept: float
    score: dict[str, float]
    missing: dict[str, float]
    impute_median: dict[str, float]


class _CandidateKeys(TypedDict):
    name: str
    kind: str
    checks: list[str]
    thresholds: dict[str, float]
    test: Measured
    pareto: bool  # on the test split's front of F1, p95 latency and cost


class Candidate(_CandidateKeys, total=False):
    """One combination measured: a check alone (single), any / all of them, a cascade, or a stack."""

    threshold_source: str  # single
    region: Region  # cascade
    fit: CascadeFit  # cascade
    model: str  # stack
    coefficients: StackModel  # stack
    fitted_on_cases: int  # stack
    paired: list[PairedMember]  # stack


class _CascadeReportKeys(TypedDict):
    run: str
    target: str
    target_spec: str  # the target as --target spells it
    split_from: str
    calibration_cases: int
    test_cases: int
    errors_count_as_wrong: bool
    candidates: list[Candidate]


class CascadeReport(_CascadeReportKeys, total=False):
    """What `cascade` measured (`verifybench cascade`; `--json` prints it)."""

    best: str  # the cascade the calibration-split rule keeps
    guard_file: str  # written with --out
    report: str  # re-rendered with --save


GRID = 200  # quantile levels of the cheap check's calibration scores tried as bounds
MAX_LOSS = 0.01


@dataclass
class Decisions:
    """What a combination decides for every case of the run: flagged, and whether the deciding verdict
    failed (then the case counts as wrong), with each case's latency and cost."""

    flagged: np.ndarray
    error: np.ndarray
    latency: np.ndarray  # NaN where a verdict used had no latency, or included a warm-up
    cost: np.ndarray  # NaN where no verdict used reported one
    deferred: np.ndarray | None = None  # cascades: the expensive check ran


def _correct_counts(y: np.ndarray, flagged: np.ndarray, error: np.ndarray) -> dict[str, int]:
    """Confusion counts, an error counting as wrong: a miss on a hallucinated case, a false alarm on a
    faithful one."""
    pred = np.where(error, ~y, flagged)
    return {"tp": int((pred & y).sum()), "fp": int((pred & ~y).sum()), "fn": int((~pred & y).sum()),
            "tn": int((~pred & ~y).sum())}


def _quality(tp, fp, fn, tn, target: Target):
    """The target's measure from (arrays of) confusion counts; -inf where a floor is not met."""
    tp, fp, fn, tn = (np.asarray(x, dtype=float) for x in (tp, fp, fn, tn))
    with np.errstate(invalid="ignore", divide="ignore"):
        precision = np.where(tp + fp > 0, tp / (tp + fp), 0.0)
        recall = np.where(tp + fn > 0, tp / (tp + fn), 0.0)
        spec = np.where(tn + fp > 0, tn / (tn + fp), 0.0)
        if target.kind == "fbeta":
            b2 = target.value ** 2
            den = (1 + b2) * tp + b2 * fn + fp
            return np.where(den > 0, (1 + b2) * tp / np.where(den > 0, den, 1), 0.0)
        if target.kind in ("balanced_accuracy", "youden"):
            return (recall + spec) / 2
        if target.kind == "precision":
            return np.where(precision >= target.value, recall, -np.inf)
        return np.where(recall >= target.value, precision, -np.inf)


def _case_latency(*parts: tuple[np.ndarray, np.ndarray, np.ndarray]) -> np.ndarray:
    """Sum of (latency, warm-up flag, used) parts per case; NaN where a used part is missing or a warm-up."""
    total = np.zeros(len(parts[0][0]))
    for lat, warm, used in parts:
        bad = used & (np.isnan(lat) | warm)
        total = total + np.where(used, np.nan_to_num(lat), 0.0)
        total[bad] = np.nan
    return total


def _case_cost(*parts: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    total = np.zeros(len(parts[0][0]))
    seen = np.zeros(len(total), bool)
    for cost, used in parts:
        have = used & ~np.isnan(cost)
        total = total + np.where(have, cost, 0.0)
        seen |= have
    return np.where(seen, total, np.nan)


def single(t: RunTable, vid: str, threshold: float) -> Decisions:
    c = t.check(vid)
    ok = c.ok
    used = np.ones(len(ok), bool)
    return Decisions(flagged=ok & (np.where(ok, c.score, -np.inf) >= threshold), error=~ok,
                     latency=_case_latency((c.latency, c.warmup, used)), cost=_case_cost((c.cost, used)))


def combine(t: RunTable, how: str, thresholds: dict[str, float]) -> Decisions:
    """`any` (flag when any check flags) or `all` (flag when every check flags), each check at its
    threshold; every check runs on every case, and an error in any of them makes the case wrong."""
    parts = [single(t, vid, thr) for vid, thr in thresholds.items()]
    flags = np.vstack([p.flagged for p in parts])
    error = np.any(np.vstack([p.error for p in parts]), axis=0)
    flagged = np.asarray(flags.any(axis=0) if how == "any" else flags.all(axis=0), dtype=bool)
    used = np.ones(len(error), bool)
    checks = [t.check(v) for v in thresholds]
    return Decisions(flagged=flagged, error=error,
                     latency=_case_latency(*((c.latency, c.warmup, used) for c in checks)),
                     cost=_case_cost(*((c.cost, used) for c in checks)))


def cascade_decisions(t: RunTable, cheap: str, expensive: str, low: float, high: float, threshold: float) -> Decisions:
    """The cascade's decision per case: cheap score <= `low` passed, >= `high` flagged (both by the cheap
    check), otherwise (or on a cheap error) the expensive check at `threshold` decides."""
    c, e = t.check(cheap), t.check(expensive)
    sc = c.score
    passed = c.ok & (sc <= low)
    flag_cheap = c.ok & (sc >= high) & ~passed
    deferred = ~(passed | flag_cheap)
    e_flag = e.ok & (np.where(e.ok, e.score, -np.inf) >= threshold)
    flagged = flag_cheap | (deferred & e_flag)
    error = deferred & ~e.ok
    used = np.ones(len(sc), bool)
    return Decisions(flagged=flagged, error=error, deferred=deferred,
                     latency=_case_latency((c.latency, c.warmup, used), (e.latency, e.warmup, deferred)),
                     cost=_case_cost((c.cost, used), (e.cost, deferred)))


def _fill_latency(c, mask: np.ndarray) -> np.ndarray:
    """Per-case latency for the fit's objective only: a warm-up or missing figure replaced by the
    check's median over the cases given (0 when it recorded none)."""
    lat = np.where(c.warmup, np.nan, c.latency)
    good = lat[mask & ~np.isnan(lat)]
    med = float(np.median(good)) if len(good) else 0.0
    return np.where(np.isnan(lat), med, lat)


def fit_cascade(t: RunTable, cheap: str, expensive: str, threshold: float, target: Target,
                max_loss: float = MAX_LOSS, grid: int = GRID) -> dict[str, Any]:
    """The cheap check's confident region, fitted on the calibration split only (see the module's doc)."""
    cal = t.cal
    c, e = t.check(cheap), t.check(expensive)
    y = t.label[cal]
    sc = c.score[cal]
    c_ok = ~np.isnan(sc)
    e_ok = e.ok[cal]
    e_flag = e_ok & (np.where(e_ok, e.score[cal], -np.inf) >= threshold)
    # The expensive check's decision on each calibration case, errors as wrong.
    e_pred = np.where(e_ok, e_flag, ~y)
    lat_c = _fill_latency(c, cal)[cal]
    lat_e = _fill_latency(e, cal)[cal]
    n = len(y)
    if not n:
        raise VerifybenchError("the calibration split is empty: no cascade can be fitted")
    # Cases the cheap check scored, in increasing score order; its errors are always deferred.
    order = np.flatnonzero(c_ok)[np.argsort(sc[c_ok], kind="mergesort")]
    s_sorted = sc[order]

    def cum(x: np.ndarray) -> np.ndarray:
        return np.r_[0.0, np.cumsum(x[order].astype(float))]

    pos, neg = cum(y), cum(~y)
    pos_e, neg_e = cum(y & e_pred), cum(~y & e_pred)  # flagged by the expensive check
    lat = cum(lat_e)
    err = ~c_ok  # deferred always
    base_tp, base_fp = float((y & e_pred & err).sum()), float((~y & e_pred & err).sum())
    base_lat = float(lat_e[err].sum())
    n_pos, n_neg = float(y.sum()), float((~y).sum())
    levels = np.unique(np.quantile(s_sorted, np.linspace(0, 1, grid + 1))) if len(s_sorted) else np.empty(0)
    lows = np.r_[-np.inf, levels]  # pass at or below
    highs = np.r_[levels, np.inf]  # flag at or above
    k_lo = np.asarray(np.searchsorted(s_sorted, lows, side="right"))  # cases [0, k_lo) passed
    k_hi = np.asarray(np.searchsorted(s_sorted, highs, side="left"))  # cases [k_hi, m) flagged
    m = len(s_sorted)
    a, b = k_lo[:, None], k_hi[None, :]
    valid = (lows[:, None] < highs[None, :]) & (a <= b)
    a, b = np.broadcast_to(a, valid.shape), np.broadcast_to(b, valid.shape)
    b = np.maximum(a, b)
    tp = (pos[m] - pos[b]) + (pos_e[b] - pos_e[a]) + base_tp
    fp = (neg[m] - neg[b]) + (neg_e[b] - neg_e[a]) + base_fp
    fn, tn = n_pos - tp, n_neg - fp
    q = _quality(tp, fp, fn, tn, target)
    mean_lat = (lat_c.sum() + (lat[b] - lat[a]) + base_lat) / n
    deferred = ((b - a) + err.sum()) / n
    ref = _quality(float((y & e_pred).sum()), float((~y & e_pred).sum()), float((y & ~e_pred).sum()),
                   float((~y & ~e_pred).sum()), target)
    ref = float(ref)
    ok = valid & (q >= ref - max_loss) & np.isfinite(q)
    if not ok.any():  # nothing as good: everything to the expensive check
        i, j = 0, len(highs) - 1
    else:
        cand = np.flatnonzero(ok.ravel())
        pick = int(cand[np.lexsort((-q.ravel()[cand], mean_lat.ravel()[cand]))[0]])
        i, j = (int(x) for x in np.unravel_index(pick, valid.shape))
    return {"cheap": cheap, "expensive": expensive, "allow_at_or_below": float(lows[i]),
            "flag_at_or_above": float(highs[j]), "expensive_threshold": threshold,
            "calibration": {"quality": float(q[i, j]), "expensive_alone_quality": ref, "target": str(target),
                            "max_loss": max_loss, "mean_latency_ms": float(mean_lat[i, j]),
                            "deferred_share": float(deferred[i, j]), "grid_points": int(valid.sum())}}


def measure(t: RunTable, d: Decisions, n_boot: int, seed: int) -> dict[str, Any]:
    """The test split's precision, recall, F1 (95% bootstrap intervals), latency and cost of `d`."""
    sel = t.test
    y = t.label[sel]
    c = _correct_counts(y, d.flagged[sel], d.error[sel])
    out: dict[str, Any] = {"n": int(sel.sum()), "errors": int(d.error[sel].sum()), **rates(**c), "confusion": c}
    if out["n"]:
        out["ci"] = {k: v.as_list() for k, v in counts_intervals(**c, n_boot=n_boot, seed=seed).items()}
    lat = d.latency[sel]
    have = ~np.isnan(lat)
    out["latency_ms"] = ({"mean": float(lat[have].mean()), "p95": float(np.percentile(lat[have], 95)),
                          "cases": int(have.sum()), "left_out": int((~have).sum())} if have.any() else None)
    cost = d.cost[sel]
    out["cost_per_1k"] = float(np.nanmean(cost) * 1000) if (~np.isnan(cost)).any() else None
    if d.deferred is not None:
        out["deferred_share"] = float(d.deferred[sel].mean()) if sel.any() else None
    return out


def cascades(run_dir: str | Path | RunTable, checks: list[str], target: str | Target | None = None,
             max_loss: float = MAX_LOSS, n_boot: int | None = None, stack: bool = False,
             min_per_class: int | None = None) -> dict[str, Any]:
    """Each check alone, `any` and `all` of them, and for every pair a cascade with the faster check
    (on the calibration split) as the cheap one: thresholds and regions fitted on the calibration split,
    everything reported on the test split. With `stack`, also a logistic regression on the checks'
    scores fitted on the calibration split (`feedback.stack`), compared with each member by the paired
    bootstrap. `min_per_class` overrides the suite's (calibration cases of each class a threshold needs).
    `best` is the cascade kept by the calibration-split rule
    (see the module's doc) with the highest calibration quality; no test figure chooses anything."""
    t = run_dir if isinstance(run_dir, RunTable) else \
        RunTable.open(run_dir, **({"min_per_class": min_per_class} if min_per_class is not None else {}))
    if len(checks) < 1 or len(set(checks)) != len(checks):
        raise VerifybenchError(f"--checks: name distinct verifiers of the run (its verifiers: {', '.join(t.checks)})")
    tgt = parse_target(target) if target is not None else t.settings.target
    boot = t.settings.n_boot if n_boot is None else n_boot
    seed = t.settings.seed
    if not t.test.any():
        raise VerifybenchError(f"{t.run_dir}: the run has no test split; nothing to report on")
    thresholds: dict[str, float] = {}
    out: dict[str, Any] = {"run": str(t.run_dir), "target": str(tgt), "target_spec": _spec(tgt),
                           "split_from": t.split_from,
                           "calibration_cases": int(t.cal.sum()), "test_cases": int(t.test.sum()),
                           "errors_count_as_wrong": True, "candidates": []}
    for vid in checks:
        thr = t.threshold(vid, tgt)
        if thr["value"] is None:
            raise VerifybenchError(f"{vid}: no threshold: {thr.get('warning')}")
        thresholds[vid] = thr["value"]
        out["candidates"].append({"name": vid, "kind": "single", "checks": [vid], "thresholds": {vid: thr["value"]},
                                  "threshold_source": thr["source"], "test": measure(t, single(t, vid, thr["value"]),
                                                                                     boot, seed)})
    if len(checks) >= 2:
        for how in ("any", "all"):
            out["candidates"].append({"name": f"{how}({','.join(checks)})", "kind": how, "checks": list(checks),
                                      "thresholds": dict(thresholds),
                                      "test": measure(t, combine(t, how, thresholds), boot, seed)})
        cal_lat = {v: float(np.nanmean(_fill_latency(t.check(v), t.cal)[t.cal])) for v in checks}
        for a, b in itertools.combinations(checks, 2):
            cheap, expensive = (a, b) if cal_lat[a] <= cal_lat[b] else (b, a)
            fit = fit_cascade(t, cheap, expensive, thresholds[expensive], tgt, max_loss)
            d = cascade_decisions(t, cheap, expensive, fit["allow_at_or_below"], fit["flag_at_or_above"],
                                  thresholds[expensive])
            out["candidates"].append({"name": f"cascade({cheap}->{expensive})", "kind": "cascade",
                                      "checks": [cheap, expensive], "thresholds": {expensive: thresholds[expensive]},
                                      "region": {k: fit[k] for k in ("allow_at_or_below", "flag_at_or_above")},
                                      "fit": fit["calibration"], "test": measure(t, d, boot, seed)})
    if stack:
        from verifybench.feedback.stack import coefficients, compare_members, fit_stack

        st = fit_stack(t, list(checks), tgt, seed=seed)
        if st.threshold is None:
            raise VerifybenchError(f"stack: no threshold reaches {tgt} on the calibration split")
        score = np.full(len(t.label), np.nan)
        score[t.test] = st.score(t, np.flatnonzero(t.test))
        ok = ~np.isnan(score)
        zero = np.zeros(len(score))
        d = Decisions(flagged=ok & (np.where(ok, score, -np.inf) >= st.threshold), error=~ok & t.test,
                      latency=_case_latency(*((t.check(v).latency, t.check(v).warmup, ~np.isnan(zero))
                                              for v in checks)),
                      cost=_case_cost(*((t.check(v).cost, ~np.isnan(zero)) for v in checks)))
        out["candidates"].append({"name": f"stack({','.join(checks)})", "kind": "stack", "checks": list(checks),
                                  "thresholds": {"stack": st.threshold}, "model": "logistic regression",
                                  "coefficients": coefficients(st), "fitted_on_cases": int(len(st.fitted_rows)),
                                  "test": measure(t, d, boot, seed),
                                  "paired": compare_members(t, st, thresholds, boot, seed)})
    rows = out["candidates"]
    f1 = [r["test"].get("f1") for r in rows]
    p95 = [(r["test"].get("latency_ms") or {}).get("p95", np.nan) for r in rows]
    cost = [r["test"].get("cost_per_1k") or 0.0 for r in rows]
    for r, front in zip(rows, pareto_front(f1, p95, cost)):
        r["pareto"] = bool(front)
    fitted = [r for r in rows if r["kind"] == "cascade"]
    if fitted:
        out["best"] = max(fitted, key=lambda r: (r["fit"]["quality"], -r["fit"]["mean_latency_ms"]))["name"]
    return jsonable(out)


def candidate(result: dict[str, Any], name: str | None = None) -> dict[str, Any]:
    name = name or result.get("best") or result["candidates"][0]["name"]
    for r in result["candidates"]:
        if r["name"] == name:
            return r
    raise VerifybenchError(f"no combination {name!r}; measured: {', '.join(r['name'] for r in result['candidates'])}")


def _spec(target: Target) -> str:
    """A target as `--target` spells it (what `parse_target` reads back)."""
    if target.kind == "fbeta":
        return "f1" if target.value == 1 else f"fbeta={target.value:g}"
    return f"{target.kind}={target.value:g}" if target.kind in ("precision", "recall") else target.kind


def guard_document(result: dict[str, Any], policy_file: str, name: str | None = None) -> GuardSpec:
    """A guard file (the `verifybench serve` / `Guard` format, `formats.guardfile.GuardSpec`) for one measured
    combination: its checks, how they combine, and for a cascade the confident region fitted on the
    calibration split, over `policy_file` (the checks' thresholds, options and config hashes)."""
    r = candidate(result, name)
    if r["kind"] == "stack":
        raise VerifybenchError(f"{r['name']}: a stacked model is not a guard combination (yet); pick a single "
                               "check, any, all or a cascade")
    region = r.get("region") or {}
    return GuardSpec.new(policy=policy_file, checks=list(r["checks"]),
                         combination="any" if r["kind"] == "single" else r["kind"],
                         **({"cascade": {k: region[k] for k in ("allow_at_or_below", "flag_at_or_above")}}
                            if r["kind"] == "cascade" else {}))


def write_guard(run_dir: str | Path, result: dict[str, Any], out: str | Path, name: str | None = None) -> Path:
    """Write the chosen combination as a guard file at `out`, and beside it the policy it reads
    (`<out>.policy.yaml`: the run's thresholds at the cascade's target), so that `verifybench serve out`
    applies what was measured. What it was chosen on is written as the file's leading comment."""
    from verifybench._util.safeio import write_bytes_atomic
    from verifybench.evaluation.reading import thresholds

    path = Path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    policy_path = path.with_name(path.stem + ".policy.yaml")
    thresholds(run_dir, target=result["target_spec"], out=policy_path)
    spec = guard_document(result, policy_path.name, name)
    r = candidate(result, name)
    test = r["test"]
    lat = (test.get("latency_ms") or {}).get("mean")
    head = (f"# {r['name']}, chosen by `verifybench cascade` on {run_dir} (fitted on the calibration split, "
            f"{result['target']}); on the test split ({test['n']} cases): precision {test.get('precision')}, "
            f"recall {test.get('recall')}, F1 {test.get('f1')}, mean latency {lat} ms\n")
    write_bytes_atomic(path, head.encode("utf-8") + spec.data(yaml_=True))
    return path


def save_result(run_dir: str | Path, result: dict[str, Any]) -> Path:
    """Keep `result` in the run directory (cascades.json), with the size of results.jsonl it was measured
    on: the report's operating-point chart then shows the combinations beside the single checks."""
    from verifybench.rundir import RESULTS, write_json

    run_dir = Path(run_dir)
    path = run_dir / SAVED
    write_json(path, {**result, "results_bytes": (run_dir / RESULTS).stat().st_size})
    return path


def cascade(run_dir: str | Path, checks: list[str], target: str | None = None, out: str | Path | None = None,
            max_loss: float | None = None, pick: str | None = None, stack: bool = False,
            min_per_class: int | None = None, save: bool = False) -> CascadeReport:
    """Each of `checks` alone, `any` / `all` of them, and a cascade per pair (the faster check decides where
    it is confident), from a run's verdicts without re-scoring: fitted on the calibration split, measured
    on the test split (`verifybench cascade`). With `out`, the best cascade (or `pick`, a candidate's
    name) is written there as a guard file. `stack`: also a logistic regression on the checks' scores,
    fitted on the calibration split and compared with each member (paired bootstrap). `save`: keep the
    result in the run (cascades.json) and re-render its report, whose operating-point chart then shows the
    combinations beside the single checks."""
    result = cascades(run_dir, checks, target=target, max_loss=MAX_LOSS if max_loss is None else max_loss,
                      stack=stack, min_per_class=min_per_class)
    if out is not None:
        result["guard_file"] = str(write_guard(run_dir, result, out, pick))
    if save:
        from verifybench.pipeline.finish import report
        from verifybench.rundir import hold

        with hold(Path(run_dir)):
            save_result(run_dir, result)
            result["report"] = str(report(run_dir))
    return cast(CascadeReport, result)  # `cascades` builds these keys (test_api_surface validates a real one)
