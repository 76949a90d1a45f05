"""The history page's drift section: drift records (`verifybench drift --out`) in time order, one row per
record, one row per (check, slice) and record, and a chart of each check's PSI over all cases.

As the runs' chart never joins two datasets, the drift chart never joins two references: a result
against another baseline answers another question, so each (check, reference) is its own line.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from verifybench.formats.drift import DriftRecord
from verifybench.metrics.summary import OVERALL
from verifybench.tracking.drift_record import read_record
from verifybench.tracking.history import DASHES, MARKERS, _when, time_axis

STATUS_ORDER = {"ok": 0, "too few": 1, "drift": 2}


@dataclass
class DriftLine:
    """One line of the drift chart: a check's PSI over all cases, over the records against one reference."""

    check: str
    reference: str
    points: list[tuple[int, float]]  # (record index, PSI)


def _when_key(r: DriftRecord) -> tuple[Any, str]:
    return _when(r.created), r.path.name


def load_records(paths: list[Path]) -> list[DriftRecord]:
    """The drift records, oldest first (`created`; the file name breaks ties); a file named twice counts once."""
    seen: dict[Path, DriftRecord] = {}
    for p in paths:
        if p.resolve() not in seen:
            seen[p.resolve()] = read_record(p)
    return sorted(seen.values(), key=_when_key)


def summary_rows(records: list[DriftRecord]) -> list[dict[str, Any]]:
    """Per record: the largest PSI and flag-rate change over its (check, slice) rows, and where."""
    out = []
    for r in records:
        scored = [x for x in r.rows if x.psi is not None]
        worst = max(scored, key=lambda x: x.psi or 0.0, default=None)
        moved = [x for x in r.rows if x.flag_rate_change is not None]
        most = max(moved, key=lambda x: abs(x.flag_rate_change or 0.0), default=None)
        out.append({"record": r, "worst_psi": worst, "largest_change": most,
                    "drifting": [f"{x.check} / {x.slice}" for x in r.rows if x.status == "drift"]})
    return out


def check_rows(records: list[DriftRecord]) -> list[dict[str, Any]]:
    """Every (check, slice) row of every record, grouped by check and slice (all cases first), then in
    time order: one check's trend reads down the table."""
    checks: dict[str, None] = {}
    slices: dict[str, None] = {}
    for r in records:
        for x in r.rows:
            checks.setdefault(x.check, None)
            slices.setdefault(x.slice, None)
    slice_rank = {s: (s != OVERALL, s) for s in slices}
    check_rank = {c: i for i, c in enumerate(checks)}
    flat = [{"index": i, "record": r, **x.model_dump()} for i, r in enumerate(records) for x in r.rows]
    return sorted(flat, key=lambda x: (check_rank[x["check"]], slice_rank[x["slice"]], x["index"]))


def lines(records: list[DriftRecord]) -> list[DriftLine]:
    out: dict[tuple[str, str], DriftLine] = {}
    for i, r in enumerate(records):
        for x in r.rows:
            if x.slice == OVERALL and x.psi is not None:
                out.setdefault((x.check, r.reference), DriftLine(x.check, r.reference, [])).points.append((i, x.psi))
    return list(out.values())


def figure(records: list[DriftRecord], drawn: list[DriftLine]) -> Any:
    import matplotlib.pyplot as plt

    from verifybench.reporting import plots  # noqa: F401 - the report's rcParams

    refs = list(dict.fromkeys(r.reference for r in records))
    checks = list(dict.fromkeys(s.check for s in drawn))
    colors = plt.get_cmap("tab10")
    fig, ax = plt.subplots(figsize=(max(6.0, min(14.0, 2.5 + 0.45 * len(records))), 3.2))
    for k, s in enumerate(drawn):
        d, c = refs.index(s.reference), checks.index(s.check)
        (line,) = ax.plot([p[0] for p in s.points], [p[1] for p in s.points], color=colors(c % 10),
                          marker=MARKERS[d % len(MARKERS)], linestyle=DASHES[d % len(DASHES)], ms=5, lw=1.4)
        line.set_gid(f"drift-series-{k}")
    limits = sorted({r.limits.max_psi for r in records if r.limits.max_psi is not None})
    for v in limits:
        ax.axhline(v, color="#c0392b", lw=0.8, ls="--")
    time_axis(ax, [r.created for r in records], [r.reference for r in records])
    ax.set_ylim(bottom=0)
    ax.set(ylabel="PSI (all cases)", title="drift: PSI per check against the reference's test split"
           + (f" (dashed: limit {', '.join(f'{v:g}' for v in limits)})" if limits else ""))
    ax.grid(alpha=0.3)
    handles = [plt.Line2D([], [], color=colors(i % 10), lw=2, label=c) for i, c in enumerate(checks)]
    if len(refs) > 1:
        handles += [plt.Line2D([], [], color="#555", marker=MARKERS[i % len(MARKERS)], ls=DASHES[i % len(DASHES)],
                               label=f"reference {Path(r).name}") for i, r in enumerate(refs)]
    if handles:
        ax.legend(handles=handles, fontsize=7, frameon=False, loc="center left", bbox_to_anchor=(1.01, 0.5))
    fig.tight_layout()
    return fig
