"""Run history without a tracker: one metric per verifier over run directories in time order, as one
self-contained HTML page (the chart is an SVG inside an <img>, no script, nothing fetched) or a PNG.

Runs over different data (another content hash, which covers `--limit` and `sample` too, or another
number of cases, for runs recorded before it did) are never joined by one line: each (verifier, dataset) pair is its own line,
drawn in the verifier's colour with the dataset's marker and dash, and a dotted rule marks where the
dataset changed between two consecutive runs. A trend across a changed dataset would mix two
questions (did the verifier change, or the cases?), so the page shows both but never connects them.

Drift records (`verifybench drift --out`: a record file, or a folder of them) named beside the runs get
the page's drift section (`drift_history`); a page of drift records alone has no runs' chart.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from verifybench._util.safeio import replace_atomically, temp_path
from verifybench.errors import VerifybenchError
from verifybench.metrics.summary import OVERALL
from verifybench.rundir import MANIFEST
from verifybench.tracking.drift_record import PREFIX, records_in
from verifybench.tracking.mlflow_store import load_run_files, run_values

DEFAULT_OUT = Path("reports/history.html")
MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*"]
DASHES = ["-", "--", ":", "-."]
MAX_TICKS = 24


class HistoryError(VerifybenchError):
    pass


@dataclass
class RunRow:
    """One run directory: when, over what data, and the chosen slice's numbers per verifier."""

    run_dir: Path
    created: str
    suite: str
    suite_hash: str
    dataset: str  # the data's identity: content hash and number of cases (a --limit run is other data)
    dataset_label: str
    n_cases: int | None
    values: dict[str, dict[str, float]]  # verifier -> slice_values of the chosen slice
    configs: dict[str, str]  # verifier -> config hash
    slices: set[str] = field(default_factory=set)  # every slice the run has
    changed: set[str] = field(default_factory=set)  # verifiers whose config differs from their previous run


@dataclass
class Series:
    """One line of the chart: a verifier's values over the runs of one dataset (run index, value, CI)."""

    verifier: str
    dataset: str
    points: list[tuple[int, float, float | None, float | None]]


def short(data_key: str) -> str:
    """A data identity for people: the hash's first 8 characters and the number of cases."""
    h, _, n = data_key.rpartition(":")
    return f"{h[:8]} ({n} cases)"


def time_axis(ax: Any, created: list[str | None], groups: list[Any]) -> None:
    """Points in time order on the x axis: a dotted line where the group (dataset, reference) changes,
    at most MAX_TICKS ticks, each "#n" with its time."""
    for i in range(1, len(groups)):
        if groups[i] != groups[i - 1]:
            ax.axvline(i - 0.5, color="#888", lw=0.8, ls=":")
    step = max(1, -(-len(created) // MAX_TICKS))
    ticks = list(range(0, len(created), step))
    ax.set_xticks(ticks, [f"#{i + 1}\n{_when(created[i]).strftime('%m-%d %H:%M')}" for i in ticks], fontsize=7)
    ax.set_xlim(-0.5, len(created) - 0.5)


def _when(iso: str | None) -> datetime:
    try:
        return datetime.fromisoformat(iso) if iso else datetime.min
    except ValueError:
        return datetime.min


def split_inputs(paths: Sequence[str | Path]) -> tuple[list[str | Path], list[Path]]:
    """(run directories, drift record files): a .json file is a drift record, and so is each
    `drift-*.json` of a folder that is not a run directory."""
    runs: list[str | Path] = []
    records: list[Path] = []
    for p in map(Path, paths):
        if p.suffix.lower() == ".json" and not p.is_dir():
            records.append(p)
        elif p.is_dir() and not (p / MANIFEST).exists():
            found = records_in(p)
            if not found:
                raise HistoryError(f"{p}: neither a run directory (no {MANIFEST}) nor a folder of drift records "
                                   f"({PREFIX}*.json, from `verifybench drift --out`)")
            records += found
        else:
            runs.append(p)
    return runs, records


def load_rows(run_dirs: list[str | Path], slice_name: str = OVERALL) -> list[RunRow]:
    """The runs, oldest first (manifest `created`; the folder name breaks ties). A directory named twice
    counts once."""
    seen: dict[Path, RunRow] = {}
    for d in run_dirs:
        d = Path(d)
        if d.resolve() in seen:
            continue
        manifest, metrics = load_run_files(d)
        data = manifest.get("dataset") or {}
        opts = data.get("options") or {}
        label = " ".join(str(x) for x in (data.get("loader"), opts.get("name") or opts.get("path")) if x)
        everything = run_values(metrics)
        values = {vid: v for (vid, key), v in everything.items() if key == slice_name}
        seen[d.resolve()] = RunRow(
            run_dir=d, created=str(manifest.get("created") or ""), suite=(manifest.get("suite") or {}).get("name", "?"),
            suite_hash=(manifest.get("suite") or {}).get("hash") or "",
            dataset=f"{data.get('hash') or 'unknown'}:{metrics.get('n_cases', data.get('total'))}",
            dataset_label=label, n_cases=metrics.get("n_cases"), values=values,
            configs={v["id"]: v.get("config_hash", "") for v in manifest.get("verifiers") or []},
            slices={key for _, key in everything})
    if not seen:
        raise HistoryError("history needs at least one run directory")
    rows = sorted(seen.values(), key=lambda r: (_when(r.created), r.run_dir.name))
    last: dict[str, str] = {}
    for r in rows:
        for vid, h in r.configs.items():
            if vid in last and last[vid] != h:
                r.changed.add(vid)
            last[vid] = h
    return rows


def check_choice(rows: list[RunRow], metric: str, slice_name: str) -> None:
    """An unknown slice or metric is an error that lists the ones the runs have."""
    if not any(r.values for r in rows):
        known = sorted(set().union(*(r.slices for r in rows)))
        raise HistoryError(f"no run has a slice {slice_name!r}; the runs have: {', '.join(known) or 'none'}")
    names = sorted({m for r in rows for v in r.values.values() for m in v})
    if metric not in names:
        raise HistoryError(f"no run has the metric {metric!r} on slice {slice_name!r}; choose one of: {', '.join(names)}")


def series(rows: list[RunRow], metric: str) -> list[Series]:
    """One line per (verifier, dataset), in order of first appearance: a line never joins two datasets."""
    out: dict[tuple[str, str], Series] = {}
    for i, r in enumerate(rows):
        for vid, values in r.values.items():
            if metric not in values:
                continue  # undefined here (say, no threshold, so no test F1): a gap, not a zero
            s = out.setdefault((vid, r.dataset), Series(vid, r.dataset, []))
            s.points.append((i, values[metric], values.get(f"{metric}_ci_low"), values.get(f"{metric}_ci_high")))
    return list(out.values())


def _figure(rows: list[RunRow], lines: list[Series], metric: str, slice_name: str):
    import matplotlib.pyplot as plt

    from verifybench.reporting import plots  # noqa: F401 - sets the report's rcParams (SVG text as paths, salt)

    datasets = list(dict.fromkeys(r.dataset for r in rows))
    verifiers = list(dict.fromkeys(s.verifier for s in lines))
    colors = plt.get_cmap("tab10")
    fig, ax = plt.subplots(figsize=(max(6.0, min(14.0, 2.5 + 0.45 * len(rows))), 3.8))
    for k, s in enumerate(lines):
        d, v = datasets.index(s.dataset), verifiers.index(s.verifier)
        x = [p[0] for p in s.points]
        y = [p[1] for p in s.points]
        has_ci = all(p[2] is not None and p[3] is not None for p in s.points)
        yerr = ([[p[1] - p[2] for p in s.points if p[2] is not None], [p[3] - p[1] for p in s.points if p[3] is not None]]
                if has_ci else None)
        bars = ax.errorbar(x, y, yerr=yerr, color=colors(v % 10), marker=MARKERS[d % len(MARKERS)],
                           linestyle=DASHES[d % len(DASHES)], ms=5, lw=1.4, capsize=2, elinewidth=0.8)
        bars.lines[0].set_gid(f"series-{k}")
    time_axis(ax, [r.created for r in rows], [r.dataset for r in rows])
    ax.set(ylabel=metric, title=f"{metric} per verifier, slice '{slice_name}', runs in time order")
    ax.grid(alpha=0.3)
    handles = [plt.Line2D([], [], color=colors(i % 10), lw=2, label=v) for i, v in enumerate(verifiers)]
    if len(datasets) > 1:
        handles += [plt.Line2D([], [], color="#555", marker=MARKERS[i % len(MARKERS)], ls=DASHES[i % len(DASHES)],
                               label=f"data {short(d)}") for i, d in enumerate(datasets)]
    ax.legend(handles=handles, fontsize=7, frameon=False, loc="center left", bbox_to_anchor=(1.01, 0.5))
    fig.tight_layout()
    return fig


def write_history(run_dirs: Sequence[str | Path], metric: str = "auroc", slice_name: str = OVERALL,
                  out: str | Path | None = None) -> Path:
    """Draw `metric` per verifier over the runs in time order; HTML page, or PNG when `out` ends in .png.
    Drift records among `run_dirs` (files, or folders of them) get the page's drift section."""
    from verifybench.tracking import drift_history

    out = Path(out) if out else DEFAULT_OUT
    run_paths, record_paths = split_inputs(run_dirs)
    records = drift_history.load_records(record_paths)
    png = out.suffix.lower() == ".png"
    if not run_paths and (png or not records):
        raise HistoryError("history needs at least one run directory" +
                           (" (a PNG draws the runs' metric; drift records go on the HTML page)" if records else
                            " or drift record"))
    rows: list[RunRow] = []
    lines: list[Series] = []
    fig = None
    if run_paths:
        rows = load_rows(run_paths, slice_name)
        check_choice(rows, metric, slice_name)
        lines = series(rows, metric)
        fig = _figure(rows, lines, metric, slice_name)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = temp_path(out)  # this writer's own: two histories written to one file never share a temporary
    if png:
        import matplotlib.pyplot as plt

        assert fig is not None  # a PNG without runs was refused above
        fig.savefig(tmp, format="png", dpi=150, bbox_inches="tight", metadata={"Software": None})
        plt.close(fig)
    else:
        tmp.write_text(_page(rows, lines, metric, slice_name, fig, records), encoding="utf-8")
    replace_atomically(tmp, out)
    return out


def _page(rows: list[RunRow], lines: list[Series], metric: str, slice_name: str, fig: Any,
          records: list[Any]) -> str:
    from jinja2 import Environment, PackageLoader, select_autoescape

    from verifybench.reporting.plots import _uri
    from verifybench.tracking import drift_history

    datasets = list(dict.fromkeys(r.dataset for r in rows))
    verifiers = list(dict.fromkeys(v for r in rows for v in r.values))
    drift_lines = drift_history.lines(records)
    env = Environment(loader=PackageLoader("verifybench", "reporting/templates"),
                      autoescape=select_autoescape(default=True, default_for_string=True))
    env.filters["short"] = short
    return env.get_template("history.html.j2").render(
        rows=rows, lines=lines, metric=metric, slice_name=slice_name, chart=_uri(fig) if fig is not None else None,
        datasets=datasets, verifiers=verifiers, generated=datetime.now().astimezone().isoformat(timespec="seconds"),
        drift=records, drift_summary=drift_history.summary_rows(records), drift_rows=drift_history.check_rows(records),
        drift_lines=drift_lines, drift_chart=_uri(drift_history.figure(records, drift_lines)) if drift_lines else None,
        drift_refs=list(dict.fromkeys(r.reference for r in records)))


# The command's name (`verifybench history`) for the call behind it.
history = write_history
