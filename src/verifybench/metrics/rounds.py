"""Estimates from labeled rows drawn in one or several label rounds, each round a probability sample of its
window under its own design (what `label-queue` writes: a stratum and a weight = 1 / inclusion
probability per row).

The designs this combines, and the rule:
- Round r samples its pool: its window's cases minus those labeled in earlier rounds (`label-queue
  --labeled` the earlier queues); within each of its strata the picked rows are a simple random sample
  (a stratum whose inclusion probability is 1 is a census), and its weights sum to the pool's size.
- Rounds from windows that do not overlap are strata of their union: each round's rows keep their weights.
- A window labeled again in a later round (the same window, or a later one that holds all of it): the
  earlier round's rows are then known cases that stand for themselves alone, weight 1 (`later_window`),
  and the later round's weights stand for the rest. With a 44-case window labeled in two rounds the
  weights sum to 44, not to the two pools' sizes added (68 in issue 44, whose estimates were wrong).
- A stratum some of whose rows a later window holds and some not (windows that overlap in part) is
  refused: which of its unlabeled cases the later round covers is not known from the rows.

The estimate of each rate (hallucination rate; per check its flag rate, precision, recall) is the ratio
of weighted sums. Its interval (`method`, chosen by simulation, benchmarks/README.md "Label rounds"):
- "polya" (the default): the Polya posterior of every stratum's cases that were not labeled. In each
  (round, stratum), the unlabeled cases' mix of flagged and not flagged is drawn from a
  Dirichlet(labeled counts + 1/2), then their hallucinated count at each flag value from a
  Beta(k + 1/2, n - k + 1/2) binomial; the interval is the 1 - alpha quantiles of the rate over the draws.
  On `label-queue`'s default (uncertain) design it covers 86-93% for 90%; on the stratified design,
  with many strata of two to six rows, 73-96% (each stratum's prior adds up);
- "wilson": the linearised (Taylor) variance of a stratified sample without replacement, Wilson's
  interval at the effective sample size: 58-76% for precision and recall on the uncertain design (a
  stratum of a few random rows shows no variance in what it never drew), 81-91% on the stratified one.

Refused, with the reason (`RoundsRefused`): a case queued in two rounds (the later round's pool did not
leave out the earlier labels), a row without a usable weight, a stratum whose picked rows are all
unlabeled (nothing stands for it), the partial overlap above, or, per check, flags taken at thresholds
that differ between rounds for one doc type (they do not measure one thing).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from verifybench.errors import VerifybenchError
from verifybench.metrics.crossfit import as_objects
from verifybench.metrics.proportions import wilson

ALPHA = 0.1
METHODS = ("polya", "wilson")
DRAWS = 4000


class RoundsRefused(VerifybenchError):
    """The rounds cannot be combined into one estimate (the message says why)."""


def queued_twice(case_id: Any, first: Any, again: Any) -> RoundsRefused:
    return RoundsRefused(
        f"case {case_id!r} was queued in round {first} and again in round {again}: the later round's pool did "
        "not leave out the earlier labels, so the rounds' designs overlap (queue each round with --labeled and "
        "the earlier queues, or estimate each round alone)")


def _objects(values: Iterable[Any] | None, n: int, fill: Any = 0) -> np.ndarray:
    return np.full(n, fill, dtype=object) if values is None else as_objects(values)


def design_weights(weight: ArrayLike, labeled: ArrayLike, round_: Iterable[Any] | None = None,
                   stratum: Iterable[Any] | None = None, later_window: ArrayLike | None = None,
                   case_id: Iterable[Any] | None = None) -> dict[str, np.ndarray]:
    """Each row's weight in the combined estimate, and its design cell. Rows are the picked rows of every
    round, labeled or not; an unlabeled row's weight moves to the labeled rows of its (round, stratum)
    (missing at random within the stratum). Returns `weight` (0 for an unlabeled row), `cell` (an
    integer per (round, stratum)), `own` (labeled and estimated by its round; False where the row stands
    for itself alone), `cell_size` (the cases each cell stands for) and `cell_known` (True for a cell
    whose rows stand for themselves)."""
    lab = np.asarray(labeled, bool)
    n = len(lab)
    w = np.asarray(weight, float)
    rnd, st = _objects(round_, n), _objects(stratum, n, "")
    later = np.zeros(n, bool) if later_window is None else np.asarray(later_window, bool)
    bad = np.flatnonzero(~np.isfinite(w) | (w < 1 - 1e-9))
    if len(bad):
        i = int(bad[0])
        raise RoundsRefused(f"row {i + 1} (round {rnd[i]}): weight {float(w[i])!r} is not a weight (1 / inclusion "
                            "probability, at least 1): the row's design is unknown")
    if case_id is not None:
        seen: dict[Any, Any] = {}
        for i, cid in enumerate(_objects(case_id, n)):
            if cid in seen and seen[cid] != rnd[i]:
                raise queued_twice(cid, seen[cid], rnd[i])
            seen.setdefault(cid, rnd[i])
    import pandas as pd

    cell, _ = pd.factorize(pd.Series(list(zip(rnd.tolist(), st.tolist())), dtype=object))
    k = int(cell.max()) + 1 if n else 0
    picked, got = np.bincount(cell, minlength=k), np.bincount(cell, weights=lab, minlength=k)
    n_later = np.bincount(cell, weights=later, minlength=k)
    for c in range(k):
        first = int(np.flatnonzero(cell == c)[0])
        where = f"round {rnd[first]}, stratum {st[first]!r}"
        if got[c] == 0:
            raise RoundsRefused(f"{where}: {picked[c]} rows picked, none labeled; nothing stands for that "
                                "stratum (label at least one of its rows)")
        if 0 < n_later[c] < picked[c]:
            raise RoundsRefused(f"{where}: {int(n_later[c])} of its {picked[c]} cases are in a later round's window "
                                "and the rest are not: the windows overlap in part, and which of the stratum's "
                                "unlabeled cases the later round covers is unknown (estimate each round alone)")
    adj = np.where(lab, w * (picked / np.maximum(got, 1))[cell], 0.0)
    return {"weight": np.where(later & lab, 1.0, adj), "cell": cell, "own": lab & ~later,
            "cell_size": np.bincount(cell, weights=w, minlength=k), "cell_known": n_later == picked}


def _posterior_counts(y: np.ndarray, level: np.ndarray, n_levels: int, d: dict[str, np.ndarray],
                      rng: np.random.Generator, draws: int = DRAWS) -> np.ndarray:
    """`draws` x n_levels x 2 draws of the union's case counts by (flag level, label) under the Polya
    posterior (see the module's docstring)."""
    lab = d["weight"] > 0
    out = np.zeros((draws, n_levels, 2))
    fixed = lab & ~d["own"]  # rows standing for themselves: counted as they are
    out += np.bincount(level[fixed] * 2 + y[fixed].astype(int), minlength=2 * n_levels).reshape(n_levels, 2)
    for c in np.flatnonzero(~d["cell_known"]):
        rows = (d["cell"] == c) & lab
        n_l = np.bincount(level[rows], minlength=n_levels).astype(float)
        k_l = np.bincount(level[rows], weights=y[rows], minlength=n_levels)
        rest = int(round(float(d["cell_size"][c]))) - int(rows.sum())
        out[:, :, 1] += k_l
        out[:, :, 0] += n_l - k_l
        if rest <= 0:
            continue
        rest_l = rng.multinomial(rest, rng.dirichlet(n_l + 0.5, size=draws))
        p = rng.beta(k_l + 0.5, n_l - k_l + 0.5, size=(draws, n_levels))
        bad = rng.binomial(rest_l.astype(np.int64), p)
        out[:, :, 1] += bad
        out[:, :, 0] += rest_l - bad
    return out


def _interval(draws: np.ndarray, alpha: float) -> list[float]:
    draws = draws[~np.isnan(draws)]
    if not len(draws):
        return [float("nan"), float("nan")]
    lo, hi = np.quantile(draws, [alpha / 2, 1 - alpha / 2])
    return [float(lo), float(hi)]


def _linearised(a: np.ndarray, b: np.ndarray, d: dict[str, np.ndarray], r: float, total: float,
                alpha: float) -> list[float]:
    """Wilson's interval at the effective sample size r (1 - r) / v, v the linearised variance of the
    ratio under stratified sampling without replacement (the "wilson" method)."""
    e = np.where(d["own"], (a - r * b) / total, 0.0)
    var = 0.0
    for c in np.flatnonzero(~d["cell_known"]):
        rows = (d["cell"] == c) & (d["weight"] > 0)
        n_h, size = int(rows.sum()), float(d["cell_size"][c])
        fpc = max(0.0, 1 - n_h / size)
        if fpc > 1e-12:
            s2 = float(np.var(e[rows], ddof=1)) if n_h > 1 else 0.25 / total ** 2  # one row: the largest
            var += size ** 2 * fpc * s2 / n_h
    if var <= 0 or not 0 < r < 1:
        return [r, r] if var <= 0 else [float(x) for x in wilson(r * total, total, alpha)]
    n_eff = min(r * (1 - r) / var, total)
    lo, hi = wilson(r * n_eff, n_eff, alpha)
    return [float(lo), float(hi)]


def _ratio(a: np.ndarray, b: np.ndarray, d: dict[str, np.ndarray], draws: np.ndarray | None, alpha: float
           ) -> dict[str, Any]:
    """sum(w a) / sum(w b) over the labeled rows, and its interval: the quantiles of `draws` (the
    posterior's), or the linearised one when `draws` is None."""
    w = d["weight"]
    total = float(w @ b)
    if total <= 0:
        return {"estimate": None, "ci": None, "n": 0}
    r = float(w @ a) / total
    ci = _interval(draws, alpha) if draws is not None else _linearised(a, b, d, r, total, alpha)
    return {"estimate": r, "ci": ci, "n": int(((b > 0) & (w > 0)).sum())}


def rounds_estimate(y_true: ArrayLike, weight: ArrayLike, round_: Iterable[Any] | None = None,
                    stratum: Iterable[Any] | None = None, later_window: ArrayLike | None = None,
                    flagged: dict[str, ArrayLike] | None = None, thresholds: dict[str, ArrayLike] | None = None,
                    doc_type: Iterable[Any] | None = None, case_id: Iterable[Any] | None = None,
                    alpha: float = ALPHA, method: str = "polya", seed: int = 0, draws: int = DRAWS) -> dict[str, Any]:
    """The hallucination rate and, per check in `flagged`, its flag rate, precision and recall over the
    union of the rounds' windows, each with a 1 - alpha interval (see the module's docstring).

    Args:
        y_true: per picked row, 1 / 0 (hallucinated / faithful), NaN where not labeled yet.
        weight: the row's weight in its own round (1 / inclusion probability).
        round_: the round each row was queued in (one round when None).
        stratum: the row's stratum within its round's design (one stratum when None).
        later_window: True where a later round's window holds the case (it then stands for itself).
        flagged: per check, 1 / 0 per row, NaN where the check made no decision.
        thresholds: per check, the threshold each row's flag was taken at; a check whose threshold for
            one doc type differs between rounds is refused (its entry says why); the rest is estimated.
        doc_type: the rows' doc types (a policy's threshold may differ between them, not between rounds).
        case_id: the rows' case ids, to refuse a case queued in two rounds.
        draws: posterior draws behind each "polya" interval.
    """
    if method not in METHODS:
        raise ValueError(f"method {method!r}: expected one of {', '.join(METHODS)}")
    y = np.asarray(y_true, float)
    lab = ~np.isnan(y)
    d = design_weights(weight, lab, round_, stratum, later_window, case_id)
    yy = (np.where(lab, y, 0.0) > 0.5).astype(float)
    rnd = _objects(round_, len(y))
    rng = np.random.default_rng(seed)
    polya = method == "polya"
    one = np.zeros(len(y), np.int64)
    sims = _posterior_counts(yy, one, 1, d, rng, draws)[:, 0, :] if polya else None
    out: dict[str, Any] = {
        "rows": len(y), "labeled": int(lab.sum()), "represented": float(d["weight"].sum()), "method": method,
        "alpha": alpha,
        "rounds": {str(r): {"rows": int((rnd == r).sum()), "labeled": int((lab & (rnd == r)).sum()),
                            "weight": float(d["weight"][rnd == r].sum())} for r in dict.fromkeys(rnd.tolist())},
        "hallucination_rate": _ratio(yy, lab.astype(float), d,
                                     sims[:, 1] / sims.sum(axis=1) if sims is not None else None, alpha),
        "checks": {},
    }
    for v, f in (flagged or {}).items():
        fl = np.asarray(f, float)
        why = _mixed_thresholds(thresholds.get(v) if thresholds else None, rnd, lab & ~np.isnan(fl), doc_type)
        if why:
            out["checks"][v] = {"refused": why}
            continue
        out["checks"][v] = _check(yy, fl, lab, d, polya, rng, alpha, draws)
    return out


def _check(y: np.ndarray, fl: np.ndarray, lab: np.ndarray, d: dict[str, np.ndarray], polya: bool,
           rng: np.random.Generator, alpha: float, draws: int) -> dict[str, Any]:
    """Flag rate, precision and recall of one check. Levels: 0 not flagged, 1 flagged, 2 no decision."""
    level = np.where(np.isnan(fl), 2, (np.nan_to_num(fl) > 0.5).astype(int))
    has, f = (level < 2).astype(float), (level == 1).astype(float)
    sims: dict[str, Any] = {"flag_rate": None, "precision": None, "recall": None}
    if polya:
        c = _posterior_counts(y, level, 3, d, rng, draws)
        with np.errstate(invalid="ignore", divide="ignore"):
            sims = {"flag_rate": c[:, 1].sum(axis=1) / c[:, :2].sum(axis=(1, 2)),
                    "precision": c[:, 1, 1] / c[:, 1].sum(axis=1),
                    "recall": c[:, 1, 1] / (c[:, 1, 1] + c[:, 0, 1])}
    return {"flag_rate": _ratio(f * lab, has * lab, d, sims["flag_rate"], alpha),
            "precision": _ratio(f * y * lab, f * lab, d, sims["precision"], alpha),
            "recall": _ratio(f * y * lab, has * y * lab, d, sims["recall"], alpha)}


def _mixed_thresholds(thr: ArrayLike | None, rnd: np.ndarray, has: np.ndarray, doc_type: Iterable[Any] | None
                      ) -> str | None:
    """Why a check's flags cannot be pooled across rounds: one doc type flagged at different thresholds in
    different rounds (None when they agree, or without thresholds)."""
    if thr is None:
        return None
    t = np.asarray(thr, float)
    doc = _objects(doc_type, len(t), "")
    for name in dict.fromkeys(doc[has].tolist()):
        rows = has & (doc == name) & ~np.isnan(t)
        by_round = {r: np.unique(t[rows & (rnd == r)]) for r in dict.fromkeys(rnd[rows].tolist())}
        if len(by_round) > 1 and len({float(x) for v in by_round.values() for x in v}) > 1:
            said = "; ".join(f"round {r}: {', '.join(f'{x:.4g}' for x in v)}" for r, v in by_round.items())
            where = f" for doc type {name!r}" if doc_type is not None else ""
            return (f"flags taken at thresholds that differ between rounds{where} ({said}): the flag rate, "
                    "precision and recall would mix two decisions; re-flag every row at one threshold")
    return None
