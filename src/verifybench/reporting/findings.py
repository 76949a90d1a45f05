"""The report's first screen in words: which check to roll out, at which threshold, catching how many of
the invented answers at what precision, how sure that is and what it costs, for the whole set and for
each slice. Every figure is read from metrics.json as it stands (rounded, never recomputed); a check
without a threshold is said to have none, with the fit's own reason, and nothing is called flagged."""

from __future__ import annotations

from typing import Any

DEFAULT_LEVEL = 0.95  # of every operating point's intervals (test split or cross-fitted)


def usable(sm: dict[str, Any]) -> str | None:
    """Why a slice's figures cannot pick a check (None: they can): the rule the guard's `best_check` uses,
    over metrics.json. A degenerate threshold's F1 only restates the class balance."""
    th = sm.get("threshold") or {}
    f1 = (sm.get("test") or {}).get("f1")
    return ("no threshold" if th.get("value") is None else "degenerate threshold" if th.get("degenerate") else
            "near-degenerate threshold" if th.get("near_degenerate") else "no test F1" if f1 is None else None)


def best(rows: list[tuple[str, dict[str, Any]]]) -> str | None:
    """The check with the highest test F1 among those with a usable threshold (ties: the first)."""
    scored = [(sm["test"]["f1"], vid) for vid, sm in rows if usable(sm) is None]
    return max(scored, key=lambda x: x[0])[1] if scored else None


def _f(x: float | None, d: int = 2) -> str:
    return "–" if x is None else f"{x:.{d}f}"


def _ms(x: float | None) -> str:
    """Two significant figures below 10 ms (a 0.045 ms check must not read 0.0), whole ones above."""
    return "–" if x is None else f"{x:.0f}" if x >= 10 else f"{x:.2g}"


def _rate(name: str, op: dict[str, Any], level: str) -> str:
    ci = (op.get("ci") or {}).get(name)
    if not ci or None in ci:
        return f"{name} {_f(op.get(name))}"
    return f"{name} {_f(op.get(name))}, {level} {_f(ci[0])}–{_f(ci[1])}"


def _level(op: dict[str, Any]) -> str:
    """Every interval of an operating point in metrics.json is a 95% one: the test split's bootstrap and the
    cross-fitted estimate's alike (formats.metrics.OperatingPoint.ci)."""
    return f"{round(100 * DEFAULT_LEVEL)}% interval"


def _fitted_on(sm: dict[str, Any]) -> str:
    th = sm["threshold"]
    said = th.get("source") or th.get("kind") or "threshold"
    calib = sum((sm.get("labels") or {}).get("calibration", {}).values())
    if th.get("kind") == "fitted" and calib and not (sm.get("test") or {}).get("estimate"):
        said += f", {calib} labeled cases"
    return said


def _estimated_on(op: dict[str, Any]) -> str:
    return op["estimate"] if op.get("estimate") else f"estimated on the test split of {op.get('n', 0)} labeled cases"


def _cost(sm: dict[str, Any]) -> str:
    lat = sm.get("latency_ms") or {}
    cost = sm.get("cost_per_1k")
    said = f"median {_ms(lat.get('p50'))} ms a case (p95 {_ms(lat.get('p95'))} ms)" if lat.get("p50") is not None \
        else "no latency recorded"
    return said + (f", ${cost:.4g} per 1,000 cases" if cost is not None else ", no cost recorded")


def _flaw(th: dict[str, Any]) -> str:
    if th.get("degenerate"):
        return f"Degenerate threshold: it {th['degenerate']}"
    return f"Near-degenerate threshold: it {th['near_degenerate']}"


def sentence(vid: str, sm: dict[str, Any]) -> str:
    """A check with a usable threshold (`usable`) on one slice, in words: what it flags there, how sure that
    is, where the threshold came from and what the figures were estimated on."""
    th, op = sm["threshold"], sm["test"]
    c = op["confusion"]
    level = _level(op)
    out = (f"{vid} flags {c['tp']} of {c['tp'] + c['fn']} invented answers ({_rate('recall', op, level)}) and "
           f"{c['fp']} of {c['fp'] + c['tn']} correct ones ({_rate('precision', op, level)}) at threshold "
           f"{th['value']:.4f}. The threshold: {_fitted_on(sm)}; these figures are {_estimated_on(op)}.")
    errors = op.get("n", 0) - op.get("n_scored", 0)
    if errors:
        out += f" {errors} of those cases got an error verdict and are left out of these counts."
    return out


def brief(vid: str, sm: dict[str, Any]) -> str:
    """The short form of `sentence`: what the check flags at its threshold, recall and precision with their
    intervals, the threshold's kind; or that it has none, and why."""
    th = sm.get("threshold") or {}
    op = sm.get("test") or {}
    if th.get("value") is None:
        why = th.get("warning") or th.get("source") or "none was fitted"
        auroc = sm.get("auroc")
        ranks = f"; AUROC {auroc:.2f} over its {sm.get('n_scored', 0)} scored cases" if auroc is not None else ""
        return f"{vid}: no threshold ({why}), so nothing is flagged{ranks}."
    c = op.get("confusion")
    kind = {"fitted": "its own", "fallback": "the whole set's", "given": "a given"}.get(th.get("kind") or "", "a")
    if not c:
        return f"{vid}: {kind} threshold {th['value']:.4f}, no labeled test case to estimate it on."
    level = _level(op)
    where = op["estimate"] if op.get("estimate") else f"{op.get('n', 0)} test cases"
    out = (f"{vid} flags {c['tp']} of {c['tp'] + c['fn']} invented answers and {c['fp']} of {c['fp'] + c['tn']} "
           f"correct ones at {kind} threshold {th['value']:.4f} ({_rate('recall', op, level)}; "
           f"{_rate('precision', op, level)}; {where}).")
    return out + (f" {_flaw(th)}." if th.get("degenerate") or th.get("near_degenerate") else "")


def findings(metrics: dict[str, Any]) -> dict[str, Any]:
    """What the first screen says: `best` (the check to roll out, or None), `lead` (its sentence, with its
    latency and cost), `others` (each other check in brief) and `slices` (per slice value: its best check
    in brief there, or why none is usable)."""
    verifiers = list(metrics["verifiers"].items())
    whole = [(vid, m["overall"]) for vid, m in verifiers]
    top = best(whole)
    lead = None
    if top is not None:
        sm = metrics["verifiers"][top]["overall"]
        lead = sentence(top, sm) + f" It takes {_cost(sm)}."
    others = [{"verifier": vid, "text": brief(vid, sm)} for vid, sm in whole if vid != top]
    slices = []
    keys = list(dict.fromkeys(k for _, m in verifiers for k in m["slices"]))
    for key in keys:
        rows = [(vid, m["slices"][key]) for vid, m in verifiers if key in m["slices"]]
        pick = best(rows)
        if pick is None:
            why = "; ".join(f"{vid}: {usable(sm)}" for vid, sm in rows)
            slices.append({"slice": key, "verifier": None, "text": f"no check has a usable threshold ({why})."})
        else:
            slices.append({"slice": key, "verifier": pick, "text": brief(pick, dict(rows)[pick])})
    return {"best": top, "lead": lead, "others": others, "slices": slices, "by": metrics.get("by")}
