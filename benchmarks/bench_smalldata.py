"""Small-data statistics checked by simulation (issue 44): thresholds from a hundred labels, per-slice
thresholds on slices of 10-40 cases, drift at the windows' own sizes, estimates across label rounds.

    python benchmarks/bench_smalldata.py [thresholds|pooling|drift|rounds|all] [--reps N] [--seed S]

Every simulation draws from tests/data/smalldata_pool.csv.gz (rouge and bleu scored on 21,384 HaluEval
and AttributionBench cases by benchmarks/make_smalldata_pool.py) and compares what the statistics
print with the truth on the rest of the pool. Prints Markdown tables; benchmarks/README.md records them.
"""

from __future__ import annotations

import argparse
import csv
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from verifybench.metrics.bootstrap import counts_intervals
from verifybench.metrics.crossfit import crossfit, fit_threshold
from verifybench.metrics.drift import detectable_change, drift_test, psi
from verifybench.metrics.pooling import pooled_thresholds
from verifybench.metrics.proportions import jeffreys
from verifybench.metrics.rounds import rounds_estimate
from verifybench.metrics.thresholds import split_roles

POOL = Path(__file__).resolve().parents[1] / "tests" / "data" / "smalldata_pool.csv.gz"
ALPHA = 0.1


def load(dataset: str, verifier: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    pool = pd.read_csv(POOL)
    d = pool[pool["dataset"].str.startswith(dataset) & pool[verifier].notna()]
    return d["label"].to_numpy(bool), d[verifier].to_numpy(float), d["slice"].to_numpy(dtype=object)


def counts(y: np.ndarray, s: np.ndarray, thr: float | None) -> np.ndarray:
    f = s >= thr if thr is not None else np.zeros(len(y), bool)
    return np.array([(f & y).sum(), (f & ~y).sum(), (~f & y).sum(), (~f & ~y).sum()], float)


def prf(c: np.ndarray) -> dict[str, float]:
    tp, fp, fn, tn = c
    nan = float("nan")
    return {"precision": tp / (tp + fp) if tp + fp else nan, "recall": tp / (tp + fn) if tp + fn else nan,
            "f1": 2 * tp / (2 * tp + fp + fn) if tp + fp + fn else nan,
            "ba": (tp / (tp + fn) + tn / (tn + fp)) / 2 if tp + fn and tn + fp else nan}


def f2(x: float) -> str:
    return "–" if x is None or np.isnan(x) else f"{x:.2f}"


def f3(x: float) -> str:
    return "–" if x is None or np.isnan(x) else f"{x:.3f}"


# --- thresholds -------------------------------------------------------------------------------------

THRESHOLD_SCENARIOS = {"AttributionBench / bleu": ("attributionbench", "bleu"),
                       "HaluEval summarization / rouge": ("halueval-summarization", "rouge"),
                       "HaluEval QA / bleu": ("halueval-qa", "bleu")}


def _split_today(y: np.ndarray, s: np.ndarray, seed: int, min_per_class: int) -> dict | None:
    """Today's default: a seeded stratified half to fit on (max balanced accuracy, at least
    `min_per_class` of each class), the other half to report on, with counts_intervals (the
    stratified bootstrap of the test counts) and Jeffreys' interval on the same counts."""
    role = split_roles(np.full(len(y), None), seed=seed, labels=y)
    cal, test = role == "calibration", role == "test"
    if min(y[cal].sum(), (~y[cal]).sum()) < min_per_class:
        return None
    thr = fit_threshold(y[cal], s[cal])
    if thr is None:
        return None
    c = counts(y[test], s[test], thr)
    boot = counts_intervals(*[int(x) for x in c], n_boot=1000, seed=seed, alpha=ALPHA)
    jp, jr = jeffreys(c[0], c[0] + c[1], ALPHA), jeffreys(c[0], c[0] + c[2], ALPHA)
    return {"threshold": thr, "est": prf(c), "boot": {k: v.as_list() for k, v in boot.items()},
            "jeffreys": {"precision": [float(jp[0]), float(jp[1])], "recall": [float(jr[0]), float(jr[1])]}}


def bench_thresholds(reps: int, seed: int, sizes: tuple[int, ...] | None = None) -> None:
    print("## Thresholds from a hundred labels\n")
    print("90% intervals; coverage = share of draws whose interval holds the threshold's true precision "
          "(recall) on the rest of the pool; F1 = the reported threshold's true F1 on the rest of the pool. "
          f"{reps} draws a row (fewer for `bootstrap`, marked).\n")
    print("| data | cases | method | threshold in | precision covered | recall covered | P width | R width | "
          "mean abs. error P / R | true F1 | ms a fit |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for name, (ds, ver) in THRESHOLD_SCENARIOS.items():
        y_all, s_all, _ = load(ds, ver)
        for n in sizes or ((100, 300, 1000) if len(y_all) < 5000 else (100, 300, 1000, 3000)):
            methods = ["spread", "jeffreys"] + (["bootstrap"] if n == 100 else []) + ["split (min 30)", "split",
                                                                                    "split, jeffreys"]
            for method in methods:
                k = max(20, reps // 4) if method == "bootstrap" else reps
                rng = np.random.default_rng([seed, n])
                cov, width, err, f1, got, took = {"precision": [], "recall": []}, {"precision": [], "recall": []}, \
                    {"precision": [], "recall": []}, [], 0, 0.0
                for r in range(k):
                    idx = rng.choice(len(y_all), n, replace=False)
                    rest = np.ones(len(y_all), bool)
                    rest[idx] = False
                    y, s = y_all[idx], s_all[idx]
                    t0 = time.perf_counter()
                    if method.startswith("split"):
                        res = _split_today(y, s, r, 30 if "30" in method else 1)
                        took += time.perf_counter() - t0
                        if res is None:
                            continue
                        thr, est = res["threshold"], res["est"]
                        ci = res["jeffreys"] if "jeffreys" in method else res["boot"]
                    else:
                        out = crossfit(y, s, seed=r, method=method)
                        took += time.perf_counter() - t0
                        if out["threshold"] is None or "ci" not in out:
                            continue
                        thr, est, ci = out["threshold"], out, out["ci"]
                    got += 1
                    truth = prf(counts(y_all[rest], s_all[rest], thr))
                    f1.append(truth["f1"])
                    for m in ("precision", "recall"):
                        lo, hi = ci[m]
                        if np.isnan(truth[m]) or np.isnan(lo):
                            continue
                        cov[m].append(lo - 1e-12 <= truth[m] <= hi + 1e-12)
                        width[m].append(hi - lo)
                        err[m].append(abs(est[m] - truth[m]))
                label = method + (f" ({k} draws)" if k != reps else "")
                label = {"split": "split, any size (min 1), today's bootstrap interval",
                         "split (min 30)": "split, today's default (min 30 a class)",
                         "split, jeffreys": "split, any size, Jeffreys interval"}.get(method, label)
                def mean(v: list) -> float:
                    return float(np.mean(v)) if v else float("nan")

                print(f"| {name} | {n} | {label} | {got / k:.0%} | {f2(mean(cov['precision']))} | "
                      f"{f2(mean(cov['recall']))} | {f2(mean(width['precision']))} | {f2(mean(width['recall']))} | "
                      f"{f3(mean(err['precision']))} / {f3(mean(err['recall']))} | {f3(mean(f1))} | "
                      f"{1000 * took / k:.0f} |", flush=True)
    print()


# --- per-slice thresholds ----------------------------------------------------------------------------

POOLING_SCENARIOS = {"AttributionBench (7 source datasets) / bleu": ("attributionbench", "bleu"),
                     "HaluEval (qa, dialogue, summarization) / rouge": ("halueval", "rouge")}


def bench_pooling(reps: int, seed: int, priors: tuple[float, ...] = (10, 20, 40, 80)) -> None:
    print("## Per-slice thresholds on slices of 10-40 cases\n")
    print("Each draw takes 10-40 cases (uniform) from every slice; the labeled set is their union. True F1 "
          "and balanced accuracy on each slice's rest of the pool, averaged over slices and draws "
          f"({reps} draws). `own`: the slice's cases alone (the whole set's where they fit none).\n")
    print("| data | target | measure | whole set | own | " + " | ".join(f"pooled, prior {p:g}" for p in priors) +
          " | prior 40 minus whole set (± s.e.) | prior 40 minus own (± s.e.) | weight at prior 40 |")
    print("|---|---|---|---|---|" + "---|" * len(priors) + "---|---|---|")
    for name, (ds, ver) in POOLING_SCENARIOS.items():
        y, s, sl = load(ds, ver)
        names = sorted(set(sl))
        for target in ("balanced_accuracy", "f1"):
            rng = np.random.default_rng([seed, 7])
            res: dict[str, dict[str, list[float]]] = {m: {"f1": [], "ba": []} for m in
                                                      ["whole", "own", *map(str, priors)]}
            weights = []
            for _ in range(reps):
                take = {nm: rng.choice(np.flatnonzero(sl == nm), rng.integers(10, 41), replace=False) for nm in names}
                idx = np.concatenate(list(take.values()))
                fits = {str(p): pooled_thresholds(y[idx], s[idx], sl[idx], target, prior=p) for p in priors}
                whole = fits[str(priors[0])]["whole"]
                for nm in names:
                    rest = np.setdiff1d(np.flatnonzero(sl == nm), take[nm])
                    own = fit_threshold(y[take[nm]], s[take[nm]], target)
                    thr = {"whole": whole, "own": own if own is not None else whole,
                           **{p: f["slices"][nm]["threshold"] for p, f in fits.items()}}
                    for m, t in thr.items():
                        truth = prf(counts(y[rest], s[rest], t))
                        res[m]["f1"].append(truth["f1"])
                        res[m]["ba"].append(truth["ba"])
                    if "40" in fits:
                        weights.append(fits["40"]["slices"][nm]["weight"])
            for measure in ("f1", "ba"):
                cells = [f3(np.nanmean(res[m][measure])) for m in ["whole", "own", *map(str, priors)]]
                diffs = []
                for other in ("whole", "own"):
                    dd = np.array(res["40"][measure]) - np.array(res[other][measure])
                    dd = dd[~np.isnan(dd)]
                    diffs.append(f"{np.mean(dd):+.4f} ± {np.std(dd, ddof=1) / np.sqrt(len(dd)):.4f}")
                print(f"| {name} | {target} | {'F1' if measure == 'f1' else 'balanced accuracy'} | "
                      + " | ".join(cells) + f" | {' | '.join(diffs)} | {np.mean(weights):.2f} |", flush=True)
    print()


# --- drift -------------------------------------------------------------------------------------------

def _today(a: np.ndarray, b: np.ndarray, thr: float) -> bool:
    """`verifybench drift`'s rule today: PSI > 0.2 or |flag-rate change| > 0.05, not gated under 30."""
    if min(len(a), len(b)) < 30:
        return False
    return psi(a, b) > 0.2 or abs(np.mean(b >= thr) - np.mean(a >= thr)) > 0.05


def _shifted(s: np.ndarray, thr: float, n: int, rate: float, rng: np.random.Generator) -> np.ndarray:
    """`n` scores drawn with the flag rate moved to `rate`: flagged and unflagged cases drawn apart, in
    that proportion, each side's scores as the pool has them."""
    up, down = s[s >= thr], s[s < thr]
    k = rng.binomial(n, rate)
    return np.r_[rng.choice(up, k), rng.choice(down, n - k)]


def _prevalence(y: np.ndarray, s: np.ndarray, n: int, rate: float, rng: np.random.Generator) -> np.ndarray:
    k = rng.binomial(n, rate)
    return np.r_[rng.choice(s[y], k), rng.choice(s[~y], n - k)]


def bench_drift(reps: int, seed: int) -> None:
    print("## Drift at the windows' own sizes\n")
    y, s, _ = load("attributionbench", "bleu")
    thr = fit_threshold(y, s)
    base = float(np.mean(s >= thr))
    n_perm = 500
    print(f"Scores: bleu on AttributionBench, threshold {thr:.4f} (max balanced accuracy on the pool), flag rate "
          f"{base:.3f}. Windows drawn with replacement from the pool; `drift_test` at alpha 0.05 with {n_perm} "
          "permutations; today's rule: PSI > 0.2 or flag-rate change beyond 0.05 (not gated under 30 cases).\n")
    print("| cases a side | draws | false alarms, drift_test | false alarms, today | median PSI, no shift | "
          "PSI noise (95th pct.) | detectable flag-rate rise (power 0.8) | power, +10 points of flag rate | "
          "power, today | power, +10 points by prevalence |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    pos_share = float(y.mean())
    tpr, fpr = float(np.mean(s[y] >= thr)), float(np.mean(s[~y] >= thr))
    prev_to = pos_share + 0.10 / (tpr - fpr)
    for n in (20, 50, 100, 200, 500, 1000, 2000, 10000):
        k = reps if n <= 2000 else max(50, reps // 4)
        rng = np.random.default_rng([seed, n])
        fa, fa_today, psis, noise, mde, hit, hit_today, hit_prev = [], [], [], [], [], [], [], []
        for r in range(k):
            a, b = rng.choice(s, n), rng.choice(s, n)
            t = drift_test(a, b, thr, n_perm=n_perm, seed=r)
            fa.append(t["exceeds"])
            fa_today.append(_today(a, b, thr))
            psis.append(t["psi"]["value"])
            noise.append(t["psi"]["noise"])
            mde.append(t["detectable"]["flag_rate_up"])
            b2 = _shifted(s, thr, n, base + 0.10, rng)
            hit.append(drift_test(a, b2, thr, n_perm=n_perm, seed=r)["exceeds"])
            hit_today.append(_today(a, b2, thr))
            b3 = _prevalence(y, s, n, prev_to, rng)
            hit_prev.append(drift_test(a, b3, thr, n_perm=n_perm, seed=r)["exceeds"])
        print(f"| {n} | {k} | {np.mean(fa):.3f} | {np.mean(fa_today):.3f} | {np.median(psis):.3f} | "
              f"{np.mean(noise):.3f} | {np.mean(mde):.3f} | {np.mean(hit):.2f} | {np.mean(hit_today):.2f} | "
              f"{np.mean(hit_prev):.2f} |", flush=True)
    print(f"\n(+10 points by prevalence: the hallucinated share moved from {pos_share:.2f} to {prev_to:.2f}, "
          f"which moves the flag rate by 0.10 at this threshold's TPR {tpr:.2f} and FPR {fpr:.2f}.)\n")
    print("Is the printed detectable rise honest? Power of `drift_test` at exactly that rise:\n")
    print("| cases a side | flag rate | detectable rise | power at it |")
    print("|---|---|---|---|")
    for n in (50, 200, 1000):
        rng = np.random.default_rng([seed, n, 1])
        a0 = rng.choice(s, n)
        up = drift_test(a0, rng.choice(s, n), thr, n_perm=n_perm)["detectable"]
        ups = detectable_change(base, n, n, up["level"])[1]
        got = [drift_test(rng.choice(s, n), _shifted(s, thr, n, base + ups, rng), thr, n_perm=n_perm, seed=r)["exceeds"]
               for r in range(reps)]
        print(f"| {n} | {base:.2f} | {ups:.3f} | {np.mean(got):.2f} |", flush=True)
    print()


# --- label rounds ------------------------------------------------------------------------------------

def _window(rows: np.ndarray, y: np.ndarray, scores: dict, thr: dict, sl: np.ndarray, name: str):
    from verifybench.feedback.window import Window

    sc = {v: scores[v][rows] for v in scores}
    return Window(source=name, kind="run", ids=np.array([f"c{i}" for i in rows], dtype=object), doc_type=sl[rows],
                  scores=sc, thresholds={v: np.full(len(rows), thr[v]) for v in scores},
                  action=np.where(sc["bleu"] >= thr["bleu"], "flagged", "allowed").astype(object))


def _truth(rows: np.ndarray, y: np.ndarray, scores: dict, thr: dict) -> dict[str, float]:
    out = {"hallucination_rate": float(y[rows].mean())}
    for v in scores:
        c = counts(y[rows], scores[v][rows], thr[v])
        t = prf(c)
        out[f"{v} flag rate"] = float((c[0] + c[1]) / c.sum())
        out[f"{v} precision"], out[f"{v} recall"] = t["precision"], t["recall"]
    return out


def _reproduce_issue(y: np.ndarray, scores: dict, thr: dict, sl: np.ndarray, rest: np.ndarray) -> None:
    """Issue 44's failure with today's label-queue code: one 44-case window labeled in two rounds
    (20, then the other 24), the queues merged (`queue.merge`) and estimated (`queue.estimate`)."""
    from verifybench.feedback import queue

    rng = np.random.default_rng(44)
    rows = rng.choice(rest, 44, replace=False)
    w = _window(rows, y, scores, thr, sl, "window")
    s1 = queue.select(w, np.arange(44), 20, "uncertain", 0, 0.2)
    left = np.setdiff1d(np.arange(44), s1["rows"])
    s2 = queue.select(w, left, 24, "uncertain", 1, 0.2)
    with tempfile.TemporaryDirectory() as tmp:
        files = []
        for i, sel in enumerate((s1, s2), 1):
            path = Path(tmp) / f"round{i}.csv"
            with open(path, "w", newline="") as f:
                wr = csv.DictWriter(f, fieldnames=["id", "label", *(f"flagged:{v}" for v in scores), "weight"])
                wr.writeheader()
                for r, wt in zip(sel["rows"], sel["weight"]):
                    case = rows[r]
                    wr.writerow({"id": f"c{case}", "label": "hallucinated" if y[case] else "faithful",
                                 **{f"flagged:{v}": int(scores[v][case] >= thr[v]) for v in scores},
                                 "weight": repr(float(wt))})
            files.append(path)
        queue.merge(files[::-1], Path(tmp) / "merged.csv")
        today = queue.estimate(Path(tmp) / "merged.csv")
    truth = _truth(rows, y, scores, thr)
    both = [(s1, 1, True), (s2, 2, False)]
    case = np.concatenate([rows[sel["rows"]] for sel, _, _ in both])
    mine = rounds_estimate(y[case].astype(float), np.concatenate([sel["weight"] for sel, _, _ in both]),
                           np.concatenate([np.full(len(sel["rows"]), r) for sel, r, _ in both]),
                           np.concatenate([sel["stratum"] for sel, _, _ in both]),
                           np.concatenate([np.full(len(sel["rows"]), later) for sel, _, later in both]),
                           flagged={v: (scores[v][case] >= thr[v]).astype(float) for v in scores})
    print("Issue 44 reproduced with today's `label-queue` code: a 44-case window labeled in two rounds "
          "(`select` 20 cases, uncertain, then the other 24), merged with `queue.merge`, estimated with "
          "`queue.estimate`, against the rounds as strata (`metrics.rounds.rounds_estimate`):\n")
    print("| figure | truth (whole window labeled) | today: merge + estimate | rounds_estimate [90% interval] |")
    print("|---|---|---|---|")
    print(f"| cases the weights stand for | 44 | {today['window_cases_represented']:.0f} | {mine['represented']:.0f} |")
    h = mine["hallucination_rate"]
    print(f"| hallucination rate | {truth['hallucination_rate']:.3f} | {today['hallucination_rate']['weighted']:.3f} | "
          f"{h['estimate']:.3f} [{h['ci'][0]:.3f}, {h['ci'][1]:.3f}] |")
    for v in scores:
        for m in ("flag_rate", "precision", "recall"):
            t = truth[f"{v} {m.replace('_', ' ')}"]
            e = mine["checks"][v][m]
            print(f"| {v} {m.replace('_', ' ')} | {t:.3f} | {today['checks'][v][m]['weighted']:.3f} | "
                  f"{e['estimate']:.3f} [{e['ci'][0]:.3f}, {e['ci'][1]:.3f}] |")
    print()


ROUND_DESIGNS = {
    "one round: window 300, 60 labeled": ("one", 300, 60, 0),
    "two rounds, one window: 300, 40 then 40 more": ("same", 300, 40, 40),
    "two rounds, two windows: 300 + 300, 60 each": ("two", 300, 60, 60),
}


def _one_draw(design: str, n: int, b1: int, b2: int, strategy: str, y, scores, thr, sl, rest, rng, r):
    from verifybench.feedback.queue import select

    parts = []
    if design in ("one", "same"):
        rows = rng.choice(rest, n, replace=False)
        w = _window(rows, y, scores, thr, sl, "w")
        s1 = select(w, np.arange(n), b1, strategy, r, 0.2)
        parts.append((rows, s1, 1, design == "same"))
        union = rows
        if design == "same":
            left = np.setdiff1d(np.arange(n), s1["rows"])
            s2 = select(w, left, b2, strategy, r + 10_000, 0.2)
            parts.append((rows, s2, 2, False))
    else:
        both = rng.choice(rest, 2 * n, replace=False)
        union = both
        for i, rows in enumerate((both[:n], both[n:]), 1):
            w = _window(rows, y, scores, thr, sl, f"w{i}")
            sel = select(w, np.arange(n), b1 if i == 1 else b2, strategy, r + i * 10_000, 0.2)
            parts.append((rows, sel, i, False))
    case = np.concatenate([rows[sel["rows"]] for rows, sel, _, _ in parts])
    args = dict(y_true=y[case].astype(float), weight=np.concatenate([p[1]["weight"] for p in parts]),
                round_=np.concatenate([np.full(len(p[1]["rows"]), p[2]) for p in parts]),
                stratum=np.concatenate([p[1]["stratum"] for p in parts]),
                later_window=np.concatenate([np.full(len(p[1]["rows"]), p[3]) for p in parts]),
                flagged={v: (scores[v][case] >= thr[v]).astype(float) for v in scores})
    return args, _truth(union, y, scores, thr)


def _cell(err: dict, cov: dict, *keys: str) -> str:
    return ", ".join(f"{np.mean(err[k]):+.3f} / {np.mean(cov[k]):.2f}" for k in keys)


def bench_rounds(reps: int, seed: int) -> None:
    print("## Estimates across label rounds\n")
    pool = pd.read_csv(POOL)
    d = pool[(pool["dataset"] == "attributionbench") & pool["bleu"].notna() & pool["rouge"].notna()]
    y = d["label"].to_numpy(bool)
    scores = {v: d[v].to_numpy(float) for v in ("bleu", "rouge")}
    sl = d["slice"].to_numpy(dtype=object)
    rng = np.random.default_rng([seed, 3])
    fit = rng.choice(len(y), 400, replace=False)
    thr = {v: fit_threshold(y[fit], scores[v][fit]) for v in scores}
    rest = np.setdiff1d(np.arange(len(y)), fit)
    _reproduce_issue(y, scores, thr, sl, rest)
    print(f"Simulation: AttributionBench cases with bleu and rouge scores (thresholds fitted on 400 other cases; "
          f"doc type = source dataset, 7 of them), `label-queue`'s own `select` (random share 0.2), {reps} draws "
          "a row. Bias = mean estimate minus the truth of the windows' union; coverage of the 90% interval.\n")
    print("| design | strategy | interval | hallucination rate: bias / covered | flag rate (bleu, rouge) | "
          "precision (bleu, rouge) | recall (bleu, rouge) |")
    print("|---|---|---|---|---|---|---|")
    for name, (design, n, b1, b2) in ROUND_DESIGNS.items():
        for strategy in ("uncertain", "stratified"):
            for label, method in (("polya", "polya"), ("wilson (linearised)", "wilson")):
                r_rng = np.random.default_rng([seed, n, b1, b2, len(strategy)])
                err: dict[str, list[float]] = {}
                cov: dict[str, list[bool]] = {}
                for r in range(reps):
                    args, truth = _one_draw(design, n, b1, b2, strategy, y, scores, thr, sl, rest, r_rng, r)
                    est = rounds_estimate(**args, method=method, seed=r)
                    items = {"hallucination_rate": est["hallucination_rate"]}
                    for v in scores:
                        for m in ("flag_rate", "precision", "recall"):
                            items[f"{v} {m.replace('_', ' ')}"] = est["checks"][v][m]
                    for k, e in items.items():
                        if e["estimate"] is None or np.isnan(truth[k]):
                            continue
                        err.setdefault(k, []).append(e["estimate"] - truth[k])
                        cov.setdefault(k, []).append(e["ci"][0] - 1e-9 <= truth[k] <= e["ci"][1] + 1e-9)

                print(f"| {name} | {strategy} | {label} | {_cell(err, cov, 'hallucination_rate')} | "
                      f"{_cell(err, cov, 'bleu flag rate', 'rouge flag rate')} | "
                      f"{_cell(err, cov, 'bleu precision', 'rouge precision')} | "
                      f"{_cell(err, cov, 'bleu recall', 'rouge recall')} |", flush=True)
    print()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", nargs="?", default="all", choices=["thresholds", "pooling", "drift", "rounds", "all"])
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--sizes", type=lambda v: tuple(int(x) for x in v.split(",")), default=None,
                    help="thresholds: labeled-set sizes, e.g. 60,100 (default 100,300,1000 and 3000 on large pools)")
    a = ap.parse_args()
    t0 = time.time()
    if a.what in ("thresholds", "all"):
        bench_thresholds(a.reps, a.seed, a.sizes)
    for name, fn in (("pooling", bench_pooling), ("drift", bench_drift), ("rounds", bench_rounds)):
        if a.what in (name, "all"):
            fn(a.reps, a.seed)
    print(f"({time.time() - t0:.0f} s)")


if __name__ == "__main__":
    main()
