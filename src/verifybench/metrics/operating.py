"""Cost of a verifier: latency percentiles, throughput, cost per 1k cases, and the Pareto front of
quality against latency and cost."""

from __future__ import annotations

import numpy as np


def latency_summary(latency_ms, units=None) -> dict[str, float]:
    """p50/p95/p99/mean per case, cases per second of verifier time, and per unit (claim) if given."""
    lat = np.asarray(latency_ms, dtype=float)
    lat = lat[~np.isnan(lat)]
    if not len(lat):
        return {}
    out = {"p50": float(np.percentile(lat, 50)), "p95": float(np.percentile(lat, 95)),
           "p99": float(np.percentile(lat, 99)), "mean": float(lat.mean()),
           "throughput_per_s": float(len(lat) / (lat.sum() / 1000)) if lat.sum() > 0 else float("inf")}
    if units is not None:
        u = np.asarray(units, dtype=float)
        if len(u) == len(lat) and np.nansum(u) > 0:
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
