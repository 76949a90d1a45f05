"""Minimal pairs: how often a verifier ranks the hallucinated response of a pair above the faithful one.

Cases that share a group (HaluEval's right and hallucinated answers to one question; any dataset's
field-mapped `group:`) are compared within the group: every (hallucinated, faithful) pair of it counts
once. Pairwise accuracy is the share of pairs where the hallucinated response scores higher, ties
counting half. It is AUROC restricted to pairs that differ only in the edit, so a verifier whose scores
drift from one source to the next can rank within pairs far better than across cases; the report shows
both. An error verdict counts as wrong (a hallucinated case that failed ranks below its partner, a
faithful one above). Intervals: a bootstrap over groups, the unit that was sampled.

Pure functions of arrays, like the rest of the metrics layer.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from verifybench.metrics.bootstrap import ALPHA, N_BOOT, POISSON_ABOVE, _interval, resample_weights

BLOCK_WEIGHTS = 4_000_000  # resample weights of one block of the interval's resamples
POISSON_PART = 1_000_000  # ... drawn in parts of about this many weights past POISSON_ABOVE groups


def pair_counts(group: ArrayLike, label: ArrayLike, score: ArrayLike) -> dict[str, np.ndarray]:
    """Per group (in order of `np.unique(group)`): pairs, wins (ties as half), ties, and pairs with an
    error verdict (a NaN score). Groups holding one class only have no pair."""
    g = np.asarray(group)
    y = np.asarray(label, dtype=bool)
    s = np.asarray(score, dtype=float)
    names, code = np.unique(g, return_inverse=True)
    n_groups = len(names)
    err = np.isnan(s)
    filled = np.where(err, np.where(y, -np.inf, np.inf), s)  # errors as wrong

    h, f = np.flatnonzero(y), np.flatnonzero(~y)
    h = h[np.argsort(code[h], kind="stable")]
    f = f[np.argsort(code[f], kind="stable")]
    n_f = np.bincount(code[f], minlength=n_groups)
    f_start = np.cumsum(n_f) - n_f
    reps = n_f[code[h]]  # each hallucinated case meets every faithful case of its group
    hi = np.repeat(h, reps)
    within = np.arange(int(reps.sum())) - np.repeat(np.cumsum(reps) - reps, reps)
    fi = f[f_start[code[hi]] + within]
    sh, sf = filled[hi], filled[fi]
    tie = sh == sf
    win = (sh > sf) + 0.5 * tie
    pg = code[hi]
    return {
        "pairs": np.bincount(pg, minlength=n_groups).astype(float),
        "wins": np.bincount(pg, weights=win, minlength=n_groups),
        "ties": np.bincount(pg, weights=tie & ~err[hi] & ~err[fi], minlength=n_groups),
        "errors": np.bincount(pg, weights=err[hi] | err[fi], minlength=n_groups),
    }


def pairwise_accuracy(group: ArrayLike, label: ArrayLike, score: ArrayLike, slices: ArrayLike | None = None,
                      n_boot: int = N_BOOT, seed: int = 0,
                      alpha: float = ALPHA) -> dict[str, Any]:
    """Pairwise accuracy over the groups with a pair, with a bootstrap interval over groups.

    Args:
        group: per case, its group (cases without a pair partner simply form no pair).
        label: per case, True when hallucinated.
        score: per case, the verifier's score (NaN for an error verdict).
        slices: optional per-case slice names; a group belongs to the slice of its first case, and each
            slice is measured from the same resamples.

    Returns {groups, pairs, accuracy, ci, ties, pairs_with_error, slices: {name: same}}.
    """
    g = np.asarray(group)
    c = pair_counts(g, label, score)
    has = c["pairs"] > 0
    names, first = np.unique(g, return_index=True)
    parts = {"all": has}
    if slices is not None:
        sl = np.asarray(slices, dtype=object)[first]
        parts.update({str(k): has & (sl == k) for k in sorted(set(sl[has].tolist()))})
    cols = np.stack([c["wins"], c["pairs"]], axis=1)
    draws: dict[str, np.ndarray | None] = {k: None for k in parts}
    if n_boot and has.any():
        idx = np.flatnonzero(has)
        rng = np.random.default_rng(seed)
        picked = {k: (m[idx], cols[idx][m[idx]]) for k, m in parts.items()}
        sums = {k: np.empty((n_boot, 2)) for k in parts}
        # Resamples in blocks of at most ~4M weights: 1,000 x 500,000 groups at once would be 4 GB. A run
        # of up to 4,000 groups draws them in one block, as before. Past POISSON_ABOVE groups a block is
        # drawn in parts of about POISSON_PART weights, an even number of resamples each and the last
        # ending where the block ends: numpy then draws the same Poisson counts (it draws 16-bit integers
        # in pairs and drops the half of a call's odd last one), so the same interval, holding less.
        chunk = max(1, BLOCK_WEIGHTS // len(idx))
        part = chunk if len(idx) <= POISSON_ABOVE else max(2, POISSON_PART // len(idx) // 2 * 2)
        for start in range(0, n_boot, chunk):
            stop = min(n_boot, start + chunk)
            for a in range(start, stop, part):
                b = min(stop, a + part)
                w = resample_weights(np.ones(len(idx), bool), b - a, rng).astype(float)
                for k, (m, c_m) in picked.items():
                    sums[k][a:b] = w[:, m] @ c_m
        for k in parts:
            with np.errstate(invalid="ignore", divide="ignore"):
                draws[k] = sums[k][:, 0] / sums[k][:, 1]
    out: dict[str, Any] = {}
    for k, m in parts.items():
        pairs = float(c["pairs"][m].sum())
        entry: dict[str, Any] = {"groups": int(m.sum()), "pairs": int(pairs),
                 "accuracy": float(c["wins"][m].sum() / pairs) if pairs else None,
                 "ties": int(c["ties"][m].sum()), "pairs_with_error": int(c["errors"][m].sum())}
        if (drawn := draws[k]) is not None:
            entry["ci"] = _interval(drawn, alpha).as_list()
        out[k] = entry
    result = out.pop("all")
    result["groups_without_pair"] = int((~has).sum())
    if slices is not None:
        result["slices"] = out
    return result
