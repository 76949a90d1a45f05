"""Cost of a verifier: latency percentiles, throughput, cost per 1k cases, and the Pareto front of
quality against latency and cost."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

# `Verdict.latency_kind` as small integers (0: not recorded), so a million cases are compared as numbers.
LATENCY_KINDS = (None, "case", "batch", "warmup")
CASE, BATCH, WARMUP = 1, 2, 3


def latency_kind_codes(kinds) -> np.ndarray:
    """Codes of LATENCY_KINDS for an array of kind names (None or NaN: 0); integer arrays pass through, a
    categorical is mapped by its categories (no string per case)."""
    if isinstance(kinds, pd.Series) and isinstance(kinds.dtype, pd.CategoricalDtype):
        kinds = kinds.array
    if isinstance(kinds, pd.Categorical):
        c = kinds
        remap = np.array([LATENCY_KINDS.index(v) if v in LATENCY_KINDS else 0 for v in c.categories] + [0], np.int8)
        return remap[np.asarray(c.codes, dtype=np.int64)]
    k = np.asarray(kinds)
    if np.issubdtype(k.dtype, np.integer):
        return k.astype(np.int8)
    k = k.astype(object)
    codes = np.zeros(len(k), np.int8)
    for code, name in enumerate(LATENCY_KINDS[1:], 1):
        codes[k == name] = code
    return codes


def latency_summary(latency_ms, units=None, kinds=None) -> dict[str, Any]:
    """p50/p95/p99/mean per case, cases per second of verifier time, and per unit (claim) if given.

    Args:
        kinds: per case, how its latency was measured (`Verdict.latency_kind`): "case" (its own time),
            "batch" (its batch's wall time shared equally: every case of a batch gets the same figure),
            "warmup" (the first batch a worker scored, which includes loading models), or None (not
            recorded). Warm-up cases are summarised apart (`warmup`) and left out of the percentiles,
            unless nothing else is left. `basis` says what the percentiles are: "case", "batch_average"
            (a spread of batch means, not of cases: not a per-case p95), "mixed" or "unrecorded".
    """
    lat = np.asarray(latency_ms, dtype=float)
    kind = latency_kind_codes(kinds) if kinds is not None else np.zeros(len(lat), np.int8)
    u = np.asarray(units, dtype=float) if units is not None and len(units) == len(lat) else None
    keep = ~np.isnan(lat)
    lat, kind = lat[keep], kind[keep]
    u = u[keep] if u is not None else None
    if not len(lat):
        return {}
    warm = kind == WARMUP
    out: dict[str, object] = {}
    if warm.any():
        out["warmup"] = {"cases": int(warm.sum()), "total_ms": float(lat[warm].sum()), "mean_ms": float(lat[warm].mean())}
    if warm.all():
        out["includes_warmup"] = True  # one batch only: nothing to leave out
    else:
        lat, kind = lat[~warm], kind[~warm]
        u = u[~warm] if u is not None else None
    batch, case = (kind == BATCH).sum(), (kind == CASE).sum()
    out["basis"] = ("unrecorded" if batch + case == 0 else "case" if batch == 0 and case == len(kind)
                    else "batch_average" if case == 0 and batch == len(kind) else "mixed")
    out.update({"p50": float(np.percentile(lat, 50)), "p95": float(np.percentile(lat, 95)),
                "p99": float(np.percentile(lat, 99)), "mean": float(lat.mean()),
                "throughput_per_s": float(len(lat) / (lat.sum() / 1000)) if lat.sum() > 0 else float("inf")})
    if u is not None and np.nansum(u) > 0:
        u = np.nan_to_num(u)
        per_unit = lat / np.maximum(u, 1)
        out["per_unit_p50"] = float(np.percentile(per_unit, 50))
        out["per_unit_p95"] = float(np.percentile(per_unit, 95))
        out["units_per_case"] = float(u.mean())
    return out


def cost_per_1k(costs) -> float | None:
    """Mean reported cost per case times 1,000; None when no verdict reported a cost."""
    c = np.asarray(costs, dtype=float)
    c = c[~np.isnan(c)]
    return float(c.mean() * 1000) if len(c) else None


def pareto_front(quality, *costs) -> list[bool]:
    """True for each point that no other point beats: at least as good on quality and every cost
    (lower cost is better), strictly better on one."""
    q = np.asarray(quality, dtype=float)
    c = np.column_stack([np.asarray(x, dtype=float) for x in costs]) if costs else np.zeros((len(q), 0))
    front = []
    for i in range(len(q)):
        dominated = any(
            q[j] >= q[i] and np.all(c[j] <= c[i]) and (q[j] > q[i] or np.any(c[j] < c[i]))
            for j in range(len(q)) if j != i and not np.isnan(q[j])
        )
        front.append(not dominated and not np.isnan(q[i]))
    return front
