"""Where is the hallucination: predicted character spans scored against gold spans.

Pure functions over arrays. A span set is three arrays of equal length: the case it belongs to (an
integer index), its start and its end (character offsets, [start, end)). Gold spans and predicted spans
are each first merged per case (overlapping or touching spans become one), then:

- character level: per case, the characters in both (tp), only predicted (fp), only gold (fn); summed
  over cases (micro average) into precision, recall and F1. Over hallucinated cases only, and over all
  cases, where every character flagged in a faithful response is a false alarm;
- span level, overlap: a predicted span is right when it overlaps a gold span by at least a character,
  a gold span is found when a predicted span overlaps it; precision = right predicted / predicted,
  recall = found gold / gold;
- span level, IoU >= 0.5: the same with a match only where intersection / union >= 0.5.

Which units are predicted spans is decided by a unit threshold (a unit is flagged when its own score >=
it), fitted on the calibration split like the case threshold (`fit_unit_threshold`): each unit is an
instance, positive when it overlaps a gold span, and the target (max F1, precision >= p, ...) picks the
threshold on the curve of unit scores. Intervals come from one stratified bootstrap over cases, shared
by every verifier and slice (`span_metrics`): stratified by class up to 20,000 cases, the Poisson
bootstrap above (as for AUROC), so a large run costs one matrix product per chunk of resamples.

The computation runs on one number line: case i's offsets are shifted by i x stride, so every
per-case step (merge, sweep, search) is one vectorised pass over all cases.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from verifybench.metrics.bootstrap import (
    ALPHA,
    N_BOOT,
    POISSON_ABOVE,
    _interval,
    poisson_weights,
    stratified_weights,
)
from verifybench.metrics.curves import sorted_curve
from verifybench.metrics.thresholds import Target, select_threshold

# The per-case counts behind every span metric, in this column order.
COUNTS = ("char_tp", "char_fp", "char_fn", "pred_spans", "pred_hit", "gold_spans", "gold_hit",
          "pred_hit_iou", "gold_hit_iou")
IOU = 0.5
SCOPES = ("hallucinated", "all")


@dataclass(frozen=True)
class SpanSet:
    """Spans as arrays: `case` (index of the case), `start`, `end`."""

    case: np.ndarray
    start: np.ndarray
    end: np.ndarray

    @classmethod
    def of(cls, case: ArrayLike, start: ArrayLike, end: ArrayLike) -> SpanSet:
        case, start, end = (np.asarray(a, dtype=np.int64).ravel() for a in (case, start, end))
        if not len(case) == len(start) == len(end):
            raise ValueError(f"case, start and end differ in length ({len(case)}, {len(start)}, {len(end)})")
        return cls(case, start, end)

    @classmethod
    def empty(cls) -> SpanSet:
        z = np.zeros(0, np.int64)
        return cls(z, z, z)

    def __len__(self) -> int:
        return len(self.case)


def _stride(*sets: SpanSet) -> int:
    ends = [int(s.end.max()) for s in sets if len(s)]
    return (max(ends) if ends else 0) + 2  # a gap of at least one character between cases: nothing touches across


def _merged(s: SpanSet, stride: int) -> tuple[np.ndarray, np.ndarray]:
    """Merged spans on the number line, as sorted disjoint (start, end) arrays."""
    keep = s.end > s.start
    a = s.case[keep] * stride + s.start[keep]
    b = s.case[keep] * stride + s.end[keep]
    if not len(a):
        return a, b
    order = np.argsort(a, kind="stable")
    a, b = a[order], b[order]
    reach = np.maximum.accumulate(b)
    new = np.r_[True, a[1:] > reach[:-1]]  # a span starting at or before the run's reach (touching included) joins it
    first = np.flatnonzero(new)
    return a[first], np.maximum.reduceat(b, first)


def _hits(a_start: np.ndarray, a_end: np.ndarray, b_start: np.ndarray, b_end: np.ndarray) -> np.ndarray:
    """For each interval of A, whether it overlaps some interval of B (B sorted and disjoint)."""
    if not len(b_start):
        return np.zeros(len(a_start), bool)
    j = np.searchsorted(b_end, a_start, side="right")  # the first B ending after A starts
    ok = j < len(b_start)
    out = np.zeros(len(a_start), bool)
    out[ok] = b_start[j[ok]] < a_end[ok]
    return out


def overlap_labels(units: SpanSet, gold: SpanSet) -> np.ndarray:
    """Per unit: whether it overlaps a gold span of its own case (the unit threshold's label)."""
    stride = _stride(units, gold)
    gs, ge = _merged(gold, stride)
    return _hits(units.case * stride + units.start, units.case * stride + units.end, gs, ge)


def case_counts(n_cases: int, gold: SpanSet, pred: SpanSet) -> np.ndarray:
    """The per-case counts of `COUNTS` (an n_cases x 9 array) for predicted spans against gold spans."""
    out = np.zeros((n_cases, len(COUNTS)))
    stride = _stride(gold, pred)
    gs, ge = _merged(gold, stride)
    ps, pe = _merged(pred, stride)
    g_case, p_case = gs // stride, ps // stride
    col = {name: i for i, name in enumerate(COUNTS)}

    # Characters: one sweep over both sets' boundaries; each piece between two boundaries lies in one case.
    coords = np.r_[gs, ge, ps, pe]
    if len(coords):
        dg = np.r_[np.ones(len(gs)), -np.ones(len(ge)), np.zeros(len(ps) + len(pe))]
        dp = np.r_[np.zeros(len(gs) + len(ge)), np.ones(len(ps)), -np.ones(len(pe))]
        order = np.argsort(coords, kind="stable")
        coords, g, p = coords[order], np.cumsum(dg[order]) > 0, np.cumsum(dp[order]) > 0
        length = np.diff(coords).astype(float)
        case = coords[:-1] // stride
        g, p = g[:-1], p[:-1]
        for name, inside in (("char_tp", g & p), ("char_fp", p & ~g), ("char_fn", g & ~p)):
            out[:, col[name]] = np.bincount(case, weights=length * inside, minlength=n_cases)[:n_cases]

    # Spans: overlap, then IoU over the overlapping pairs (few per span: both sets are disjoint).
    pred_hit, gold_hit = _hits(ps, pe, gs, ge), _hits(gs, ge, ps, pe)
    lo = np.searchsorted(ge, ps, side="right")
    hi = np.searchsorted(gs, pe, side="left")
    n_pairs = np.maximum(hi - lo, 0)
    pi = np.repeat(np.arange(len(ps)), n_pairs)
    gj = (np.arange(int(n_pairs.sum())) - np.repeat(np.cumsum(n_pairs) - n_pairs, n_pairs) + np.repeat(lo, n_pairs)
          ).astype(np.int64)
    inter = np.minimum(pe[pi], ge[gj]) - np.maximum(ps[pi], gs[gj])
    union = (pe[pi] - ps[pi]) + (ge[gj] - gs[gj]) - inter
    match = inter >= IOU * union
    pred_iou = np.bincount(pi[match], minlength=len(ps)) > 0
    gold_iou = np.bincount(gj[match], minlength=len(gs)) > 0

    def per_case(cases: np.ndarray, weights: np.ndarray) -> np.ndarray:
        return np.bincount(cases, weights=weights.astype(float), minlength=n_cases)[:n_cases]

    out[:, col["pred_spans"]] = per_case(p_case, np.ones(len(ps)))
    out[:, col["pred_hit"]] = per_case(p_case, pred_hit)
    out[:, col["pred_hit_iou"]] = per_case(p_case, pred_iou)
    out[:, col["gold_spans"]] = per_case(g_case, np.ones(len(gs)))
    out[:, col["gold_hit"]] = per_case(g_case, gold_hit)
    out[:, col["gold_hit_iou"]] = per_case(g_case, gold_iou)
    return out


def rates_from_sums(sums: np.ndarray) -> dict[str, dict[str, np.ndarray]]:
    """Precision, recall and F1 at each level from summed counts (`sums[..., COUNTS]`); NaN where undefined."""
    c = {name: sums[..., i] for i, name in enumerate(COUNTS)}
    with np.errstate(invalid="ignore", divide="ignore"):
        def prf(p: np.ndarray, r: np.ndarray) -> dict[str, np.ndarray]:
            # No prediction at all: precision is undefined, recall 0 and F1 0 (as at the character level).
            f1 = np.where(p + r > 0, 2 * p * r / (p + r), 0.0)
            return {"precision": p, "recall": r, "f1": np.where(np.isnan(r), np.nan, f1)}

        char_p = c["char_tp"] / (c["char_tp"] + c["char_fp"])
        char_r = c["char_tp"] / (c["char_tp"] + c["char_fn"])
        char_f1 = 2 * c["char_tp"] / (2 * c["char_tp"] + c["char_fp"] + c["char_fn"])
        return {
            "char": {"precision": char_p, "recall": char_r, "f1": char_f1},
            "span_overlap": prf(c["pred_hit"] / c["pred_spans"], c["gold_hit"] / c["gold_spans"]),
            "span_iou50": prf(c["pred_hit_iou"] / c["pred_spans"], c["gold_hit_iou"] / c["gold_spans"]),
        }


def fit_unit_threshold(score: ArrayLike, label: ArrayLike, target: Target, min_per_class: int = 1) -> dict[str, Any]:
    """The unit threshold for `target` on calibration units (`label`: the unit overlaps a gold span).

    Returns `{value, warning, positives, negatives, degenerate}`; `value` is None when there are fewer
    than `min_per_class` units of either class, or the target cannot be met."""
    s = np.asarray(score, dtype=float)
    y = np.asarray(label, dtype=bool)
    keep = ~np.isnan(s)
    s, y = s[keep], y[keep]
    n_pos, n_neg = int(y.sum()), int((~y).sum())
    out: dict[str, Any] = {"value": None, "warning": None, "positives": n_pos, "negatives": n_neg,
                           "degenerate": None}
    if min(n_pos, n_neg) < min_per_class:
        out["warning"] = (f"too few calibration units to fit a unit threshold: {n_pos} overlap a gold span and "
                          f"{n_neg} do not (minimum {min_per_class} of each)")
        return out
    order = np.argsort(-s, kind="mergesort")
    curve = sorted_curve(y[order], s[order])
    i = select_threshold(curve, target)
    if i is None:
        out["warning"] = f"no unit threshold reaches {target} on the calibration split"
        return out
    out["value"] = float(curve.thresholds[i])
    flagged = s >= out["value"]
    out["degenerate"] = ("flags every calibration unit" if flagged.all() else
                         "flags no calibration unit" if not flagged.any() else None)
    return out


def _entry(sums: np.ndarray, draws: np.ndarray | None, alpha: float) -> dict[str, Any]:
    """One scope's metrics: point values from `sums` (COUNTS), intervals from `draws` (k x COUNTS)."""
    point = rates_from_sums(sums)
    boot = rates_from_sums(draws) if draws is not None else None
    out: dict[str, Any] = {"counts": {name: float(v) for name, v in zip(COUNTS, sums)}}
    for level, values in point.items():
        out[level] = {m: float(v) for m, v in values.items()}
        if boot is not None:
            out[level]["ci"] = {m: _interval(boot[level][m], alpha).as_list() for m in values}
    return out


def span_metrics(counts: dict[str, np.ndarray], label: ArrayLike, slices: ArrayLike | None = None,
                 n_boot: int = N_BOOT, seed: int = 0,
                 alpha: float = ALPHA) -> dict[str, dict[str, Any]]:
    """Span metrics with bootstrap intervals, for several verifiers over the same cases.

    Args:
        counts: verifier -> its `case_counts` (n x 9) over the same n cases.
        label: per case, True when hallucinated (a stratified resample keeps each class's size).
        slices: optional per-case slice names; every slice is measured from the same resamples.
        n_boot: resamples (0: no intervals).

    Returns verifier -> "all" and each slice -> scope ("hallucinated", "all") -> {n, char, span_overlap,
    span_iou50, counts}, each level with precision, recall, F1 and their intervals.

    The cases are sorted into blocks of one slice and one class; a resample's sums are one matrix product
    per block, and any slice's or scope's sums are sums of blocks. Above `POISSON_ABOVE` cases the weights
    are independent Poisson counts, so cases whose counts are all zero (a faithful response nobody
    flagged) change no sum and are left out of the products.
    """
    y = np.asarray(label, dtype=bool)
    n = len(y)
    names = list(counts)
    width = len(COUNTS)
    sl = np.zeros(n, np.int64) if slices is None else np.unique(np.asarray(slices, dtype=object).astype(str),
                                                                 return_inverse=True)[1].ravel()
    slice_names = [] if slices is None else [str(x) for x in np.unique(np.asarray(slices, dtype=object).astype(str))]
    C = np.concatenate([counts[v] for v in names], axis=1) if names else np.zeros((n, 0))
    key = sl * 2 + y
    order = np.argsort(key, kind="stable")
    poisson = n > POISSON_ABOVE
    if poisson:
        order = order[np.any(C[order] != 0, axis=1)]  # all-zero rows: no effect under independent weights
    k_sorted = key[order]
    starts = np.r_[0, np.flatnonzero(k_sorted[1:] != k_sorted[:-1]) + 1] if len(order) else np.zeros(0, int)
    ends = np.r_[starts[1:], len(order)]
    block_key = k_sorted[starts] if len(order) else np.zeros(0, int)
    Cs = C[order]
    point = np.add.reduceat(Cs, starts, axis=0) if len(order) else np.zeros((0, C.shape[1]))  # exact sums
    draws = []
    if n_boot and len(order) and names:
        from threadpoolctl import threadpool_limits

        rng = np.random.default_rng(seed)
        C32 = Cs.astype(np.float32)  # resampled sums in single precision: intervals need no more
        chunk = max(1, 4_000_000 // len(order))
        # One BLAS thread: these products are small, and a thread pool spinning on a busy machine made
        # them 28 times slower than one thread (benchmarks/bench_spans.py).
        with threadpool_limits(1, user_api="blas"):
            for start in range(0, n_boot, chunk):
                k = min(chunk, n_boot - start)
                w = (poisson_weights(k, len(order), rng) if poisson
                     else stratified_weights(y[order], k, rng).astype(np.float32))
                draws.append(np.stack([w[:, a:b] @ C32[a:b] for a, b in zip(starts, ends)], axis=1))
    boot = np.concatenate(draws) if draws else None  # resamples x blocks x columns

    def part(blocks: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        return point[blocks].sum(axis=0), (boot[:, blocks].sum(axis=1) if boot is not None else None)

    groups = {"all": np.ones(len(block_key), bool),
              **{name: block_key // 2 == i for i, name in enumerate(slice_names)}}
    out: dict[str, dict[str, Any]] = {v: {} for v in names}
    for g, blocks in groups.items():
        in_group = np.ones(n, bool) if g == "all" else sl == slice_names.index(g)
        scopes = {"hallucinated": (part(blocks & (block_key % 2 == 1)), int((in_group & y).sum())),
                  "all": (part(blocks), int(in_group.sum()))}
        for vi, v in enumerate(names):
            cols = slice(vi * width, (vi + 1) * width)
            out[v][g] = {scope: {"n": m, **_entry(sums[cols], d[:, cols] if d is not None else None, alpha)}
                         for scope, ((sums, d), m) in scopes.items()}
    return out
