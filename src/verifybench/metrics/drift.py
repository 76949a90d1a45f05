"""Drift statistics judged against the noise of the two windows' own sizes.

The statistics are the ones `verifybench drift` reports: the population stability index (PSI) of the
scores, over bins at the reference's deciles, and the change of the flag rate at a threshold. On 50
cases a side two windows of one distribution give a median PSI near 0.4, so a fixed limit (0.2) alarms
on noise; on 10,000 a side it misses real shifts. Here each figure gets the distribution it has when
nothing moved: a permutation null, the two windows' scores pooled and dealt again into windows of the
same sizes. From it:
- a p-value per statistic, and one for the comparison as a whole (the smaller of the two p-values,
  calibrated against the same permutations, so that testing two statistics keeps the false-alarm rate
  at `alpha`);
- `noise`: the 1 - alpha quantile of each statistic under the null (what chance alone reaches);
- the smallest flag-rate change this comparison detects with probability `power` (0.8), up and down.

Every permutation is one row of a boolean matrix over the pooled scores sorted once, so a thousand
permutations of 10,000 + 10,000 scores take about a second (`psi` of each row equals `psi` of the
permuted windows; tests/test_smalldata_drift.py checks it).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike

BINS = 10
EPS = 1e-4
ALPHA = 0.05
POWER = 0.8
N_PERM = 1000
_CHUNK_CELLS = 4_000_000  # permutations x cases per chunk


def psi(ref: ArrayLike, cur: ArrayLike, bins: int = BINS) -> float:
    """Population stability index of `cur` against `ref`, over bins at the reference's quantiles: sum
    (q - p) ln(q / p), shares clipped at EPS (the definition `verifybench drift` reports)."""
    ref, cur = np.asarray(ref, float), np.asarray(cur, float)
    edges = np.unique(np.quantile(ref, np.linspace(0, 1, bins + 1)[1:-1]))
    p = np.bincount(np.searchsorted(edges, ref, side="right"), minlength=len(edges) + 1) / len(ref)
    q = np.bincount(np.searchsorted(edges, cur, side="right"), minlength=len(edges) + 1) / len(cur)
    p, q = np.clip(p, EPS, None), np.clip(q, EPS, None)
    return float(np.sum((q - p) * np.log(q / p)))


def _psi_rows(xs: np.ndarray, mask: np.ndarray, bins: int) -> np.ndarray:
    """PSI for each row of `mask` (True: the case is on the reference side) over the pooled scores `xs`
    sorted ascending. The reference's quantiles are interpolated between its order statistics as
    np.quantile does; an edge repeated (ties) leaves an empty bin on both sides, which adds nothing, so
    the edges need no np.unique."""
    k, n = mask.shape
    n_ref = int(mask[0].sum())
    ref_sorted = np.broadcast_to(xs, mask.shape)[mask].reshape(k, n_ref)
    h = (n_ref - 1) * np.linspace(0, 1, bins + 1)[1:-1]
    lo = np.floor(h).astype(int)
    hi = np.minimum(lo + 1, n_ref - 1)
    edges = ref_sorted[:, lo] + (h - lo) * (ref_sorted[:, hi] - ref_sorted[:, lo])
    below = np.searchsorted(xs, edges, side="left")  # pooled cases under each edge: bins use side="right"
    cum = np.zeros((k, n + 1), np.int32)
    np.cumsum(mask, axis=1, out=cum[:, 1:])
    ref_below = np.take_along_axis(cum, below, axis=1)
    cur_below = below - ref_below
    n_cur = n - n_ref
    zeros, full = np.zeros((k, 1)), np.ones((k, 1))
    p = np.diff(np.hstack([zeros, ref_below / n_ref, full]), axis=1)
    q = np.diff(np.hstack([zeros, cur_below / n_cur, full]), axis=1)
    p, q = np.clip(p, EPS, None), np.clip(q, EPS, None)
    return np.sum((q - p) * np.log(q / p), axis=1)


Threshold = float | tuple[ArrayLike, ArrayLike] | None


def _flags(ref: np.ndarray, cur: np.ndarray, threshold: Threshold) -> tuple[np.ndarray, np.ndarray] | None:
    """Each case's flag: at one threshold, or at each case's own (a pair of arrays: a policy's threshold
    per doc type, the reference's and the production's cases each at their slice's)."""
    if threshold is None:
        return None
    if isinstance(threshold, tuple):
        t_ref, t_cur = (np.asarray(t, float) for t in threshold)
        if t_ref.shape != ref.shape or t_cur.shape != cur.shape:
            raise ValueError(f"per-case thresholds: {t_ref.shape} and {t_cur.shape} for {ref.shape} and {cur.shape} "
                             "scores")
        return ref >= t_ref, cur >= t_cur
    return ref >= threshold, cur >= threshold


def permutation_null(ref: ArrayLike, cur: ArrayLike, threshold: Threshold = None, n_perm: int = N_PERM,
                     seed: int = 0, bins: int = BINS) -> dict[str, np.ndarray]:
    """`psi` and `flag_rate_change` (production minus reference, at `threshold`; absent without one) for
    `n_perm` random re-deals of the pooled scores into windows of the two sizes. A case keeps its flag
    when it is dealt to the other side."""
    ref, cur = np.asarray(ref, float), np.asarray(cur, float)
    both = np.r_[ref, cur]
    order = np.argsort(both, kind="mergesort")
    xs = both[order]
    n, n_ref = len(xs), len(ref)
    f = _flags(ref, cur, threshold)
    flags = np.r_[f[0], f[1]][order] if f is not None else None
    rng = np.random.default_rng(seed)
    base = np.zeros(n, bool)
    base[:n_ref] = True
    out: dict[str, list[np.ndarray]] = {"psi": [], "flag_rate_change": []}
    step = max(1, _CHUNK_CELLS // max(n, 1))
    for start in range(0, n_perm, step):
        mask = rng.permuted(np.tile(base, (min(step, n_perm - start), 1)), axis=1)
        out["psi"].append(_psi_rows(xs, mask, bins))
        if flags is not None:
            ref_flagged = np.count_nonzero(mask & flags, axis=1)
            out["flag_rate_change"].append((flags.sum() - ref_flagged) / (n - n_ref) - ref_flagged / n_ref)
    return {k: np.concatenate(v) for k, v in out.items() if v}


def _p_values(null: np.ndarray, values: np.ndarray) -> np.ndarray:
    """(1 + permutations at least as extreme) / (1 + permutations), for each of `values`."""
    ordered = np.sort(null)
    at_least = len(null) - np.searchsorted(ordered, values - 1e-12, side="left")
    return (1 + at_least) / (1 + len(null))


def holm(p_values: ArrayLike) -> np.ndarray:
    """Holm's step-down adjusted p-values, in the order given: the i-th smallest becomes the running
    maximum of (m - j + 1) p_(j) for j <= i, capped at 1. A figure is significant at family-wise level
    alpha when its adjusted p-value is at most alpha, whatever the dependence between the figures."""
    p = np.asarray(p_values, float)
    m = len(p)
    order = np.argsort(p, kind="mergesort")
    adjusted = np.minimum(1.0, np.maximum.accumulate((m - np.arange(m)) * p[order]))
    out = np.empty(m)
    out[order] = adjusted
    return out


def detectable_change(rate: float, n_ref: int, n_cur: int, alpha: float = ALPHA, power: float = POWER
                      ) -> tuple[float, float]:
    """The smallest fall and rise of a flag rate from `rate` that a two-sided test at level `alpha` on
    these window sizes detects with probability `power`, by the arcsine (Cohen's h) approximation:
    |2 asin(sqrt(p1)) - 2 asin(sqrt(p0))| = (z_{1-alpha/2} + z_power) sqrt(1/n_ref + 1/n_cur). A side
    with nowhere to go (a rate of 0 or 1) gives NaN."""
    from scipy.stats import norm

    h = (norm.ppf(1 - alpha / 2) + norm.ppf(power)) * np.sqrt(1 / n_ref + 1 / n_cur)
    phi = np.arcsin(np.sqrt(np.clip(rate, 0, 1)))
    down = rate - np.sin(phi - h / 2) ** 2 if phi - h / 2 >= 0 else float("nan")
    up = np.sin(phi + h / 2) ** 2 - rate if phi + h / 2 <= np.pi / 2 else float("nan")
    return float(down), float(up)


def drift_test(ref: ArrayLike, cur: ArrayLike, threshold: Threshold = None, alpha: float = ALPHA,
               n_perm: int = N_PERM, seed: int = 0, power: float = POWER, bins: int = BINS) -> dict[str, Any]:
    """PSI and flag-rate change of `cur` against `ref` (scored cases only: drop error verdicts first), at
    `threshold` (one value, or a pair of per-case arrays where each case is held to its slice's), each
    with its p-value and `noise` (the null's 1 - alpha quantile), the comparison's p-value
    (`p_value`: the smaller p-value, calibrated over the same permutations), `exceeds` (p_value <=
    alpha), and `detectable`: the smallest fall and rise of the flag rate that this comparison, at
    these sizes, catches with probability `power` (with the level the flag rate is tested at inside the
    combined test)."""
    ref, cur = np.asarray(ref, float), np.asarray(cur, float)
    if np.isnan(ref).any() or np.isnan(cur).any():
        raise ValueError("scores hold NaN; drop error verdicts first")
    if len(ref) < 2 or len(cur) < 1:
        raise ValueError(f"too few scores to compare: {len(ref)} reference, {len(cur)} production")
    null = permutation_null(ref, cur, threshold, n_perm, seed, bins)
    out: dict[str, Any] = {"n_reference": len(ref), "n_production": len(cur), "alpha": alpha,
                           "permutations": n_perm}
    observed = {"psi": psi(ref, cur, bins)}
    nulls = {"psi": null["psi"]}
    flags = _flags(ref, cur, threshold)
    if flags is not None:
        fa, fb = float(np.mean(flags[0])), float(np.mean(flags[1]))
        observed["flag_rate_change"] = fb - fa
        nulls["flag_rate_change"] = null["flag_rate_change"]
        out["reference_flag_rate"], out["production_flag_rate"] = fa, fb
    extreme = {k: np.abs(v) for k, v in nulls.items()}  # the flag rate is tested both ways
    per_perm = np.vstack([_p_values(extreme[k], extreme[k]) for k in extreme])
    p_obs = {k: float(_p_values(extreme[k], np.array([abs(observed[k])]))[0]) for k in extreme}
    min_null = per_perm.min(axis=0)
    p_min = min(p_obs.values())
    out["p_value"] = float((1 + np.sum(min_null <= p_min + 1e-12)) / (1 + n_perm))
    out["exceeds"] = out["p_value"] <= alpha
    for k in extreme:
        out[k] = {"value": observed[k], "p_value": p_obs[k], "noise": float(np.quantile(extreme[k], 1 - alpha))}
    if flags is not None:
        # The flag rate alarms inside the combined test when its own p-value is at most this level.
        level = float(np.quantile(min_null, alpha)) if len(extreme) > 1 else alpha
        down, up = detectable_change(out["reference_flag_rate"], len(ref), len(cur), level, power)
        out["detectable"] = {"flag_rate_down": down, "flag_rate_up": up, "power": power, "level": level}
    return out
