"""The `verifybench` command. Thin: each command parses arguments and makes one call into `api`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console, ConsoleDimensions
from rich.markup import escape
from rich.table import Table
from rich.text import Text
from typer.core import TyperCommand

from verifybench import api
from verifybench.errors import VerifybenchError
from verifybench.executors.threads import set_threads
from verifybench.metrics.settings import GATE_MIN_CASES

if TYPE_CHECKING:  # the types of api's results, for the checker only
    from verifybench.feedback.queue import NotQueued
    from verifybench.gating.compare import PairedDiff
    from verifybench.pipeline.describe import SliceNeeds

DEFAULT_SUITE = Path("evals/demo.yaml")  # what `verifybench run` and `describe` read with no suite named

app = typer.Typer(add_completion=False, no_args_is_help=True, help="Measure hallucination verifiers.")
PIPE_WIDTH = 4000  # columns when the output is not a terminal: tables as wide as their cells


class _Console(Console):
    """A console that prints full table cells when its output is not a terminal (a CI log, a pipe, a
    file): rich would otherwise take 80 columns and cut cells to "verifi…"."""

    # read-only here (rich's Console.size has a setter): this console's width is never set
    @property  # type: ignore[misc]
    def size(self) -> ConsoleDimensions:
        dims = super().size
        if self._width is None and not self.is_terminal:
            return ConsoleDimensions(PIPE_WIDTH, dims.height)
        return dims


console = _Console()
err = _Console(stderr=True)

DataDir = Annotated[Path | None, typer.Option("--data-dir", help="where ${VERIFYBENCH_DATA} points")]


def _fail(e: Exception) -> None:
    # The message is shown as it is: it quotes user data ("[record 12]", a label value "[/oops]") that
    # rich would otherwise read as markup, and drop or choke on.
    err.print(Text.assemble(("error:", "bold red"), " ", str(e)), highlight=False, soft_wrap=True)
    raise typer.Exit(2)


def _note(message: str) -> None:
    err.print(Text.assemble(("note:", "bold yellow"), " ", message), highlight=False, soft_wrap=True)


def _pools(items: list[str] | None) -> dict[str, int]:
    pools = {}
    for item in items or []:
        vid, _, n = item.partition("=")
        if not vid or not n.strip().isdigit() or int(n) < 1:
            raise VerifybenchError(f"--ray-pool {item!r}: expected VERIFIER_ID=N with N >= 1, e.g. judge=2")
        pools[vid.strip()] = int(n)
    return pools


class _BareMlflow(TyperCommand):
    """`--mlflow` alone means MLflow's default tracking URI; `--mlflow URI` names one (`--otlp` alike: the
    OTEL_EXPORTER_OTLP_* variables' endpoint). Typer has no option with an optional value, so a bare
    `--mlflow` (last, or before another option) is read as `--mlflow=` before parsing."""

    def parse_args(self, ctx, args):
        out = list(args)
        for i, a in enumerate(out):
            if a == "--":
                break
            if a in ("--mlflow", "--otlp") and (i + 1 == len(out) or out[i + 1].startswith("-")):
                out[i] = a + "="
        return super().parse_args(ctx, out)


def _mlflow_ready(value: str | None) -> str | None:
    """Before a run: MLflow installed, the URI sane, the store answering; the URI it resolves to."""
    if value is None:
        return None
    try:
        return api.check_mlflow(value or None)
    except VerifybenchError as e:
        raise typer.BadParameter(str(e)) from None


def _track(run_dir: Path, uri: str | None) -> None:
    """After a run: log it to MLflow (stderr, so the report path stays stdout's last line)."""
    if uri is None:
        return
    try:
        err.print(api.log(run_dir, uri).summary(), highlight=False, markup=False, soft_wrap=True)
    except VerifybenchError as e:
        err.print("[bold red]error:[/] " + escape(f"the run is complete in {run_dir}, but logging it to MLflow failed: "
                                                  f"{e}\nlog it later with: verifybench log {run_dir} --mlflow URI"),
                  highlight=False, markup=True, soft_wrap=True)
        raise typer.Exit(2) from None


MlflowOption = Annotated[str | None, typer.Option(
    "--mlflow", callback=_mlflow_ready, metavar="[URI]",
    help="log the run to MLflow; alone: MLFLOW_TRACKING_URI, else MLflow's default (sqlite:///mlflow.db)")]


@app.command(cls=_BareMlflow)
def run(
    suite: Annotated[Path | None, typer.Argument(help="suite file (default: evals/demo.yaml)")] = None,
    out: Annotated[Path | None, typer.Option("--out", help="run directory (default: reports/<suite>-<time>)")] = None,
    limit: Annotated[int | None, typer.Option("--limit", min=1, help="score only the first N cases")] = None,
    resume: Annotated[Path | None, typer.Option("--resume", help="finish the run in this directory")] = None,
    data_dir: DataDir = None,
    policy: Annotated[Path | None, typer.Option("--policy", help="apply this threshold policy instead of fitting")] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="no progress bars")] = False,
    executor: Annotated[str, typer.Option("--executor", help="where batches are scored: local or ray")] = "local",
    address: Annotated[str | None, typer.Option(
        "--address", help="(ray) a cluster's address, HOST:PORT or auto; default: a local Ray")] = None,
    ray_pool: Annotated[list[str] | None, typer.Option(
        "--ray-pool", help="(ray) ID=N: at most N actors for verifier ID, e.g. judge=2")] = None,
    mlflow: MlflowOption = None,
    threads: Annotated[int | None, typer.Option(
        "--threads", min=1, help="(local) torch and BLAS threads; default: every CPU this process may use")] = None,
) -> None:
    """Run a suite: every verifier over every case; writes results, metrics.json and report.html."""
    try:
        pools = _pools(ray_pool)
        if executor == "local":  # Ray's actors keep Ray's rule: an actor's threads are the CPUs it reserves
            set_threads(threads)
        elif threads is not None:
            raise VerifybenchError("--threads is the local executor's; a Ray actor uses the CPUs it reserves")
        if resume is not None:
            if suite is not None or limit is not None or policy is not None:
                raise VerifybenchError("--resume takes the suite, limit and policy from the run; give none of them")
            result = api.resume(resume, data_dir=data_dir, progress=not quiet, executor=executor, address=address,
                                pools=pools)
        else:
            result = api.run(suite or DEFAULT_SUITE, out=out, limit=limit, data_dir=data_dir, progress=not quiet,
                             policy=policy, executor=executor, address=address, pools=pools)
    except VerifybenchError as e:
        _fail(e)
    for note in result.notes:
        _note(note)
    _print_summary(result)
    call = result.result  # what this command did (a resume scores only what was missing)
    assert call is not None
    console.print(f"{result.n_cases} cases, {call.new_verdicts} new verdicts, {call.errors} failed, "
                  f"{call.load_errors} input records skipped", highlight=False, markup=False)
    print(result.report_path)  # the last line on stdout: scripts and CI read the report's path from it
    _track(result.run_dir, mlflow)


def _ms(x: float | None) -> str:
    if x is None:
        return "-"
    return f"{x:.0f}" if x >= 10 else f"{x:.1f}" if x >= 1 else f"{x:.2f}" if x >= 0.1 else f"{x:.3f}"


def _summary_title(metrics: dict, rows: list) -> str:
    """The summary table's title: the split its precision / recall / F1 come from, with its labeled
    count, or, where no verifier has a threshold, that there is none and what one needs."""
    split = metrics.get("split") or {}
    n_test = split.get("test", max((r["test_cases"] or 0 for r in rows), default=0))
    head = "verifiers: AUROC over all scored cases; "
    if metrics.get("estimate") == "crossfit":
        n = sum(split.values())
        if any(r["threshold"] is not None for r in rows):
            return head + (f"threshold fitted on all {n} labeled cases; precision / recall / F1 cross-fitted (each "
                           "fold decided by a threshold fitted on the others)")
        return head + (f"no threshold ({metrics.get('min_per_class')} scored labeled cases of each class needed for "
                       f"cross-fitting; {n} labeled cases; see the notes)")
    if any(r["threshold"] is not None for r in rows):
        return head + f"precision / recall / F1 on the test split ({n_test} labeled cases) at the threshold"
    return head + (f"no threshold ({metrics.get('min_per_class')} scored cases of each class needed in the "
                   f"calibration split, which has {split.get('calibration', 0)} labeled cases; see the notes), so no "
                   f"precision / recall / F1 on the test split ({n_test} labeled cases)")


def _print_summary(run: api.Run) -> None:
    """Per verifier, as promptfoo and inspect end a run: AUROC with its interval (over all scored cases),
    the threshold and where it came from, the test split's precision / recall / F1 at it, latency,
    errors. Each number's column names its split. Data values (ids, sources) are shown as text, never
    read as markup."""
    try:
        rows = run.summary_rows()
    except VerifybenchError as e:
        _note(f"no summary: {e}")
        return
    table = Table(title=_summary_title(run.metrics_json, rows))
    table.add_column("verifier")
    table.add_column("AUROC, all cases [95% CI]", no_wrap=True)
    table.add_column("threshold (source)")
    held_out = "cross-fitted" if run.metrics_json.get("estimate") == "crossfit" else "test split"
    for head in (f"P / R / F1, {held_out}", "p50 / p95 ms", "errors"):
        table.add_column(head, no_wrap=True, justify="right")
    notes: list[str] = []
    for r in rows:
        vid = r["verifier"]
        auroc = "-" if r["auroc"] is None else f"{r['auroc']:.3f}" + (
            f" [{r['auroc_ci_low']:.2f}, {r['auroc_ci_high']:.2f}]" if r["auroc_ci_low"] is not None else "")
        if r["threshold"] is None:
            threshold = "none"
            notes.append(f"{vid}: no threshold: {r['threshold_warning']}")
            prf = "no threshold"
        else:
            threshold = f"{r['threshold']:.4g} ({r['threshold_source']})"
            prf = " / ".join("-" if r[k] is None else f"{r[k]:.2f}" for k in ("test_precision", "test_recall", "test_f1"))
        if r["threshold_degenerate"]:
            threshold += " DEGENERATE"
            notes.append(f"{vid}: the threshold {r['threshold_degenerate']}: its precision, recall and F1 restate "
                         "the class balance")
        elif r.get("threshold_near_degenerate"):
            threshold += " NEAR-DEGENERATE"
            notes.append(f"{vid}: the threshold {r['threshold_near_degenerate']}: it barely separates the classes, so "
                         "its precision and F1 mostly restate the class balance")
        latency = " / ".join(_ms(r[k]) for k in ("p50_ms", "p95_ms"))
        if r["latency_basis"] not in (None, "case"):
            latency += " *"
            notes.append(f"{vid}: latency basis {r['latency_basis']} (not each case's own time)")
        errors = str(r["errors"] or 0) + (f" of {r['cases']}" if r["errors"] else "")
        table.add_row(Text(vid), auroc, Text(threshold), prf, latency, errors)
    console.print(table)
    unlabeled = run.metrics_json.get("unlabeled") or 0
    if unlabeled:
        notes.append(f"{unlabeled} unlabeled case(s): scored (verdicts, latency, cost), left out of AUROC, thresholds "
                     "and precision / recall; a window for `label-queue` and `drift`")
    for n in notes:
        console.print(Text(f"* {n}"), highlight=False, soft_wrap=True)


@app.command()
def report(run_dir: Annotated[Path, typer.Argument(help="a run directory")]) -> None:
    """Re-render metrics.json and report.html from stored results (no verifier runs)."""
    try:
        print(api.report(run_dir))
    except VerifybenchError as e:
        _fail(e)


@app.command()
def describe(
    suite: Annotated[Path | None, typer.Argument(help="suite file (default: evals/demo.yaml)")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print one JSON object")] = False,
    limit: Annotated[int | None, typer.Option("--limit", min=1)] = None,
    min_cases: Annotated[int, typer.Option(
        "--min-cases", help="test cases a gated slice needs (as `gate --min-cases`)")] = GATE_MIN_CASES,
    data_dir: DataDir = None,
) -> None:
    """Count a suite's cases by doc type, label and split; show which raw label values became which label,
    and per slice how many labeled cases a threshold and a gate need. No verifier runs."""
    try:
        counts = api.describe(suite or DEFAULT_SUITE, data_dir=data_dir, limit=limit, min_cases=min_cases)
    except VerifybenchError as e:
        _fail(e)
    if as_json:
        print(json.dumps(counts))
        return
    console.print(Text.assemble((counts["suite"], "bold"),
                                f": {counts['total']} cases, {counts['skipped_records']} records skipped"))
    for example in counts.get("skipped_examples", []):
        console.print(Text(f"  bad record: {example}"), soft_wrap=True)
    unknown = counts.get("unknown_labels")
    if unknown:
        from verifybench.loaders.fields import LISTS_HINT

        values = ", ".join(f"{v!r} ({n})" for v, n in unknown["values"].items())
        console.print(Text(f"  {unknown['records']} record(s) have a text label no list names, in the label column "
                           f"{unknown['field']!r}: {values}. {LISTS_HINT[0].upper()}{LISTS_HINT[1:]}."), soft_wrap=True)
    elif counts["skipped_records"] and counts.get("on_error") == "raise":
        console.print(Text("  `verifybench run` stops at these (on_error: raise); set on_error: skip in the suite's "
                           "dataset block to skip them"), soft_wrap=True)
    if not counts["total"]:
        console.print(Text("No case could be read, so there is nothing to count by doc type, label or split"
                           + (": fix the label lists above." if unknown else ": fix the records above.")),
                      soft_wrap=True)
        return
    for key in ("by_doc_type", "by_label", "by_split"):
        table = Table(key.removeprefix("by_").replace("_", " "), "cases")
        for name, n in sorted(counts[key].items(), key=lambda kv: str(kv[0])):
            table.add_row(Text(str(name)), str(n))
        console.print(table)
    if counts.get("label_values"):
        table = Table("label field", "raw value", "read as", "cases", title="labels as read")
        for row in counts["label_values"]:
            table.add_row(Text(row["field"]), Text(row["value"]), row["label"], str(row["cases"]))
        console.print(table)
    else:
        console.print(Text(f"labels: set by the {counts.get('loader', 'dataset')} loader from its own fields"))
    _print_needs(counts["slices"])


def _print_needs(sl: SliceNeeds) -> None:
    if not sl.get("rows"):
        return
    table = Table(sl["by"], "labeled h / f", "calib. h / f", "test h / f", "threshold", "gate",
                  title=f"labeled cases per slice (split: {sl['split']})",
                  caption=f"h / f: hallucinated / faithful. threshold: {sl['min_per_class']} of each class "
                          + ("labeled in all (cross-fitted; slices pooled)" if sl["split"].startswith("cross")
                             else "on the calibration split")
                          + f"; gate: {sl['min_cases']} test cases; +N: labeled cases to add")
    for key, r in sl["rows"].items():
        more_t, more_g = r["more_for_threshold"], r["more_for_gate"]
        threshold = "yes" if r["threshold"] else ", ".join(f"+{n} {cls[0]}" for cls, n in more_t.items() if n)
        gate = "yes" if r["gate"] else f"+{more_g}"
        table.add_row(Text(key), f"{r['hallucinated']} / {r['faithful']}",
                      f"{r['calibration']['hallucinated']} / {r['calibration']['faithful']}",
                      f"{r['test']['hallucinated']} / {r['test']['faithful']}", Text(threshold, no_wrap=True), Text(gate))
    console.print(table)
    if sl["split"].startswith("seeded"):
        console.print(Text("Cases to add are counted in all: the seeded split sends part of them to the test side."),
                      highlight=False)


def _with_ci(point: dict, key: str) -> str:
    v, ci = point.get(key), point.get("ci95", {}).get(key)
    if v is None:
        return "-"
    return f"{v:.3f}" + (f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci and None not in ci else "")


def _f(x, d: int = 3) -> str:
    return "-" if x is None else f"{x:.{d}f}"


@app.command()
def thresholds(
    run_dir: Annotated[Path, typer.Argument(help="a run directory")],
    by: Annotated[str, typer.Option("--by", help="slice field: doc_type, dataset, split or meta.<key>")] = "doc_type",
    target: Annotated[str | None, typer.Option(
        "--target", help="balanced_accuracy (default: the suite's metrics.target, else this), youden, f1, fbeta=B, "
                         "f1_min_specificity=S, precision=P or recall=R")] = None,
    min_per_class: Annotated[int | None, typer.Option(
        "--min-per-class", help="calibration cases of each class a slice needs for its own threshold (default "
                                "30; lower: a noisier threshold, see its interval)")] = None,
    out: Annotated[Path | None, typer.Option("--out", help="write the policy YAML here")] = None,
    estimate: Annotated[str | None, typer.Option(
        "--estimate", help="split, crossfit or auto (default: the suite's metrics.estimate, else auto: cross-fitted "
                           "below 300 labeled cases)")] = None,
) -> None:
    """Fit a threshold per verifier and slice and show its precision, recall and F1 where nothing was fitted:
    on the test split, or cross-fitted (below 300 labeled cases, by default)."""
    if estimate is not None and estimate not in ("split", "crossfit", "auto"):
        _fail(VerifybenchError(f"--estimate {estimate!r}: expected split, crossfit or auto"))
    try:
        policy = api.thresholds(run_dir, by=by, target=target, min_per_class=min_per_class, out=out, estimate=estimate)
    except VerifybenchError as e:
        _fail(e)
    xfit = policy.estimate == "crossfit"
    held = "out-of-fold" if xfit else "test"
    table = Table("verifier", by, "threshold", "95% interval", "F1 where fitted (tuned)", f"{held} precision",
                  f"{held} recall", f"{held} F1", "flag-all F1 (test)",
                  title=f"thresholds for {policy.target}, " + (
                      "fitted on every labeled case (slices pooled toward the whole set); precision, recall and F1 "
                      "cross-fitted" if xfit else "fitted on the calibration split; precision, recall and F1 on the "
                                                  "test split"))
    warnings = []
    for vid, rows in policy.thresholds.items():
        for key, row in rows.items():
            flag_all = _f(row.flag_all.f1 if row.flag_all else None)
            if row.threshold is None:
                table.add_row(vid, key, "none *", "", "", "", "", "", flag_all)
                warnings.append(f"{vid} / {key}: {row.warning}")
                continue
            mark, why = "", []
            if row.weight is not None:
                mark += f" (pooled, own weight {row.weight:.2f})"
            if row.fallback_from:
                mark += f" (fallback: {row.fallback_from})"
                why.append(str(row.warning))
            if row.degenerate:
                mark += " DEGENERATE"
                why.append(f"the threshold {row.degenerate}")
            elif row.near_degenerate:
                mark += " NEAR-DEGENERATE"
                why.append(f"the threshold {row.near_degenerate}")
            if why:
                warnings.append(f"{vid} / {key}: " + "; ".join(why))
            test = row.test.model_dump(exclude_none=True) if row.test else {}
            iv = row.interval95
            table.add_row(vid, key, f"{row.threshold:.4f}{mark}", f"[{iv[0]:.4f}, {iv[1]:.4f}]" if iv else "-",
                          _f(row.calibration.f1 if row.calibration else None),
                          *(_with_ci(test, k) for k in ("precision", "recall", "f1")), flag_all)
    console.print(table)
    for w in warnings:
        console.print(f"* {w}", highlight=False)
    if out:
        print(out)


def _diff(d: PairedDiff) -> tuple[str, ...]:
    p = "<0.001" if d["p_value"] == 0 else _f(d["p_value"], 3)  # 0 of 1,000 resamples crossed zero
    ci = d["ci"] or [None, None]
    return (_f(d["a"]), _f(d["b"]), f"{d['diff']:+.3f}" if d["diff"] is not None else "-",
            f"[{ci[0]:+.3f}, {ci[1]:+.3f}]" if None not in ci else "-", p)


@app.command()
def compare(
    run_a: Annotated[Path, typer.Argument(help="a run directory")],
    run_b: Annotated[Path | None, typer.Argument(help="a second run over the same cases")] = None,
    verifiers: Annotated[str | None, typer.Option("--verifiers", help="comma-separated verifier ids")] = None,
    refit: Annotated[bool, typer.Option("--refit", help="across runs: each run at its own fitted threshold "
                                        "(default: run A's threshold held for both, as the gate does)")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="print JSON")] = False,
) -> None:
    """Paired comparison on the test split (errors count as wrong): the gate's columns, plus McNemar's test."""
    try:
        results = api.compare(run_a, run_b, verifiers.split(",") if verifiers else None, refit=refit)
    except VerifybenchError as e:
        _fail(e)
    if as_json:
        print(json.dumps(results))
        return
    table = Table("A", "B", "metric", "split", "A", "B", "A - B", "95% CI", "p", "cases",
                  title="paired comparison on the test split; error verdicts count as wrong")
    notes = []
    for r in results:
        for metric, d in (r.get("metrics") or {}).items():
            table.add_row(r["a"], r["b"], metric, "test", *_diff(d),
                          f"{r['cases']} ({r['errors_a']}/{r['errors_b']} errors)")
        m = r.get("mcnemar")
        t = r.get("thresholds") or [None, None]
        deg = [f"{side}'s flags every calibration case (DEGENERATE: its F1 only restates the class balance)"
               for side, d in zip(("A", "B"), r.get("degenerate") or []) if d]
        notes.append(f"{r['a']} vs {r['b']}: thresholds {_f(t[0], 4)} / {_f(t[1], 4)}, {r['threshold_mode']}"
                     + "".join(f"; {d}" for d in deg)
                     + (f"; McNemar p {m['p_value']:.3g} ({m['a_only_right']} cases only A right, "
                        f"{m['b_only_right']} only B)" if m else "")
                     + (f"; {r['warning']}" if r.get("warning") else ""))
    console.print(table)
    for n in notes:
        console.print(n, highlight=False)


@app.command()
def baseline(
    run_dir: Annotated[Path, typer.Argument(help="a finished run")],
    out: Annotated[Path | None, typer.Option("--out", help="default: metrics/<suite>.json")] = None,
    policy: Annotated[Path | None, typer.Option("--policy", help="thresholds to record instead of the fitted ones")] = None,
) -> None:
    """Record a run's metrics and per-case test scores as the baseline a gate compares against."""
    try:
        path = api.baseline(run_dir, out=out, policy=policy)
    except VerifybenchError as e:
        _fail(e)
    for n in json.loads(path.read_text(encoding="utf-8")).get("notes") or []:
        _note(n)
    print(path)


@app.command()
def gate(
    run_dir: Annotated[Path, typer.Argument(help="the run under test")],
    baseline: Annotated[Path, typer.Option("--baseline", help="a committed baseline (metrics/<suite>.json)")],
    max_drop: Annotated[list[str] | None, typer.Option(
        "--max-drop", help="METRIC=DROP, e.g. f1=0.02 (default f1=0.02, auroc=0.02)")] = None,
    max_rise: Annotated[list[str] | None, typer.Option(
        "--max-rise", help="p95_ms=25%, cost_per_1k=0.1: gate latency/cost")] = None,
    min_cases: Annotated[int, typer.Option("--min-cases", help="test cases a gated slice needs")] = GATE_MIN_CASES,
    slices: Annotated[str, typer.Option("--slices", help="all: the whole set; each: every slice too")] = "all",
    junit: Annotated[Path | None, typer.Option("--junit", help="write JUnit XML here (also on a refusal)")] = None,
    summary: Annotated[Path | None, typer.Option("--summary", help="write a Markdown summary here (also on a refusal)")] = None,
    allow_batch_latency: Annotated[bool, typer.Option(
        "--allow-batch-latency", help="gate p50/p95/p99 even where they are batch averages")] = False,
) -> None:
    """Fail (exit 1) when a verifier got worse beyond noise; refuse (exit 2) an invalid comparison.
    Thresholds are held at the baseline's; the refit column shows what fitting on this run would give."""

    try:
        result = api.gate(run_dir, baseline, max_drop, max_rise, min_cases, slices, junit, summary,
                          allow_batch_latency=allow_batch_latency)
    except VerifybenchError as e:
        _fail(e)
    shown = result.table()
    table = Table(*shown.COLUMNS, title=shown.title)
    for (*cells, status, refit), alarm in zip(shown.rows, shown.alarms):
        table.add_row(*cells, f"[red]{status}[/]" if alarm else status, refit)
    console.print(table)
    for n in result.notes:
        console.print(f"note: {n}", highlight=False)
    for c in result.gated:
        if c.status in ("refused", "skipped"):
            console.print(f"{c.status}: {c.name}: {c.message}", highlight=False, markup=False)
    for c in result.failed:
        err.print(f"[bold red]regression:[/] {c.name}: {c.message}", highlight=False)
    for c in result.refused:
        err.print(f"[bold red]cannot gate:[/] {c.name}: {c.message}", highlight=False)
    console.print({0: "gate passed", 1: f"gate FAILED: {len(result.failed)} regression(s)",
                   2: f"gate REFUSED: {len(result.refused)} metric(s) asked for cannot be gated"}[result.exit_code])
    raise typer.Exit(result.exit_code)


@app.command(name="log", cls=_BareMlflow)
def log_runs(
    run_dirs: Annotated[list[Path], typer.Argument(help="finished run directories")],
    mlflow: Annotated[str | None, typer.Option(
        "--mlflow", metavar="URI",
        help="tracking URI (default: MLFLOW_TRACKING_URI, else MLflow's default, sqlite:///mlflow.db)")] = None,
    experiment: Annotated[str | None, typer.Option(
        "--experiment", help="MLflow experiment (default: MLFLOW_EXPERIMENT_NAME, else the suite's name)")] = None,
    otlp: Annotated[str | None, typer.Option(
        "--otlp", metavar="ENDPOINT",
        help="send each verdict as an OpenTelemetry gen_ai.evaluation.result event over OTLP/HTTP (alone: the "
             "OTEL_EXPORTER_OTLP_* variables' endpoint); without --mlflow, MLflow is left out")] = None,
    assessments: Annotated[bool, typer.Option(
        "--assessments", help="also log each case's label as an MLflow Expectation and each verdict as a Feedback "
                              "(source CODE), on the case's trace (docs/opentelemetry.md)")] = False,
) -> None:
    """Log run directories to MLflow: one MLflow run each; logging one again updates its MLflow run. With
    --otlp, export each verdict as an OpenTelemetry event too (or instead)."""
    failed = 0
    for run_dir in run_dirs:
        try:
            if otlp is not None:
                sent = api.export_events(run_dir, otlp or None)
                console.print(f"{run_dir}: {sent['events']} gen_ai.evaluation.result events sent to "
                              f"{sent['endpoint']}", highlight=False, markup=False, soft_wrap=True)
                if mlflow is None:
                    continue
            console.print(api.log(run_dir, mlflow or None, experiment).summary(), highlight=False,
                          markup=False, soft_wrap=True)
            if assessments:
                n = api.log_assessments(run_dir, mlflow or None, experiment)
                console.print(f"MLflow assessments: {n['expectations']} labels (Expectation), {n['feedback']} verdicts "
                              f"(Feedback) on {n['on_existing_traces']} traces of the app and {n['traces_created']} "
                              f"traces recorded for cases ({n['skipped']} already there)", highlight=False,
                              markup=False, soft_wrap=True)
        except VerifybenchError as e:
            msg = str(e) if str(run_dir) in str(e) else f"{run_dir}: {e}"
            err.print(f"[bold red]error:[/] {escape(msg)}", highlight=False, markup=True, soft_wrap=True)
            failed += 1
    if failed:
        raise typer.Exit(2)


@app.command()
def history(
    run_dirs: Annotated[list[Path], typer.Argument(
        help="run directories, and drift records (`drift --out` files or folders) for the drift section; any "
             "order, drawn in time order")],
    metric: Annotated[str, typer.Option(
        "--metric", help="auroc, auprc, test_f1, test_precision, test_recall, threshold, p95_ms, cost_per_1k, ...")] = "auroc",
    slice_name: Annotated[str, typer.Option("--slice", help="a slice of the runs' metrics (default: all cases)")] = "all",
    out: Annotated[Path | None, typer.Option("--out", help="an .html page or a .png (default: reports/history.html)")] = None,
) -> None:
    """Draw a metric per verifier over runs in time order, one self-contained page; runs over different
    data are never joined by one line. Drift records named too get a drift section."""
    try:
        print(api.history(run_dirs, metric=metric, slice_name=slice_name, out=out))
    except VerifybenchError as e:
        _fail(e)


@app.command()
def serve(
    guard: Annotated[Path, typer.Argument(help="a guard file, or a policy file from `verifybench thresholds --out`")],
    host: Annotated[str, typer.Option("--host", help="interface to bind")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port")] = 8080,
    log_dir: Annotated[Path | None, typer.Option(
        "--log-dir", help="decision log folder (default: the guard file's log.dir, else ./guard-log)")] = None,
    workers: Annotated[int, typer.Option("--workers", min=1, help="uvicorn worker processes, each with its own log file")] = 1,
    ray: Annotated[bool, typer.Option("--ray", help="run the same app as a Ray Serve deployment (the `ray` extra)")] = False,
    replicas: Annotated[int, typer.Option(
        "--replicas", min=1, help="with --ray: Serve replicas, each with its own log file")] = 1,
    ray_address: Annotated[str | None, typer.Option(
        "--ray-address", help="with --ray: a running cluster (auto, HOST:PORT); default: a local Ray on 127.0.0.1")] = None,
    access_log: Annotated[bool, typer.Option(
        "--access-log", help="uvicorn's line per request on stderr (off: the decision log is the record)")] = False,
    allow_code: Annotated[list[str] | None, typer.Option(
        "--allow-code", help="a module (or a package above it), folder or model name whose code the guard's files "
                             "may import or run beyond the installation's own (repeat for more; docs/trust.md)")] = None,
    threads: Annotated[int, typer.Option(
        "--threads", min=1, help="torch and BLAS threads per worker (default 1: docs/rollout.md)")] = 1,
    header_timeout: Annotated[float, typer.Option(
        "--header-timeout", min=0.01, help="seconds a connection has to send a request's headers")] = 10.0,
    body_timeout: Annotated[float, typer.Option(
        "--body-timeout", min=0.01, help="seconds a request has to send its whole body")] = 30.0,
    context_filter: Annotated[Path | None, typer.Option(
        "--filter", help="a context filter policy: also serve POST /v1/filter (docs/decision.md)")] = None,
) -> None:
    """Serve a guard over HTTP: POST /v1/check, /v1/check/batch, /v1/filter; /healthz, /readyz, /metrics (docs/rollout.md)."""
    try:
        api.serve(guard, host=host, port=port, log_dir=log_dir, workers=workers, ray=ray, replicas=replicas,
                  ray_address=ray_address, access_log=access_log, allow_code=allow_code or [], threads=threads,
                  header_timeout=header_timeout, body_timeout=body_timeout, context_filter=context_filter)
    except VerifybenchError as e:
        _fail(e)


@app.command(name="components")
def components() -> None:
    """List the loaders and verifiers this installation has."""
    comps = api.components()
    for kind in ("loaders", "verifiers"):
        table = Table(kind, "description", show_lines=False)
        for name, desc in comps[kind].items():
            table.add_row(Text(name), Text(desc))  # a plugin's text is not markup
        console.print(table)


@app.command(name="list", hidden=True)
def list_components() -> None:
    """Deprecated name of `components` (the Python call's name); kept for one release."""
    _note("`verifybench list` is deprecated; use `verifybench components`")
    components()


@app.command(name="cascade")
def cascade_cmd(
    run_dir: Annotated[Path, typer.Argument(help="a finished run")],
    checks: Annotated[str, typer.Option("--checks", help="comma-separated verifier ids, e.g. rouge,anchors")],
    target: Annotated[str | None, typer.Option("--target", help="threshold target (default: the suite's)")] = None,
    max_loss: Annotated[float | None, typer.Option(
        "--max-loss", help="a cascade may lose this much of the expensive check's calibration quality (0.01)")] = None,
    out: Annotated[Path | None, typer.Option("--out", help="write the best cascade (or --pick) as a guard file")] = None,
    pick: Annotated[str | None, typer.Option("--pick", help="the candidate --out writes, by name")] = None,
    stack: Annotated[bool, typer.Option("--stack", help="also a logistic regression on the checks' scores, fitted "
                                        "on the calibration split, compared with each member")] = False,
    min_per_class: Annotated[int | None, typer.Option(
        "--min-per-class", help="calibration cases of each class a threshold needs (default: the suite's)")] = None,
    save: Annotated[bool, typer.Option("--save", help="keep the result in the run and re-render its report: the "
                                       "combinations join the operating-point chart")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="print JSON")] = False,
) -> None:
    """Cascades and any / all of checks from a run, without re-scoring: fitted on the calibration split,
    precision / recall / F1 (95% CI), latency and cost on the test split."""
    try:
        result = api.cascade(run_dir, [c.strip() for c in checks.split(",") if c.strip()], target=target,
                             out=out, max_loss=max_loss, pick=pick, stack=stack, min_per_class=min_per_class,
                             save=save)
    except VerifybenchError as e:
        _fail(e)
    if as_json:
        print(json.dumps(result))
        return
    table = Table("combination", "test P", "test R", "test F1 [95% CI]", "mean ms", "p95 ms", "deferred", "cost/1k",
                  "Pareto", title=f"test split ({result['test_cases']} cases; errors count as wrong); fitted on "
                                  f"{result['calibration_cases']} calibration cases, {result['target']}")
    for c in result["candidates"]:
        t, lat = c["test"], c["test"]["latency_ms"]
        ci = (t.get("ci") or {}).get("f1") or [None, None]
        deferred = t.get("deferred_share")
        table.add_row(Text(c["name"] + (" (best)" if c["name"] == result.get("best") else "")), _f(t["precision"]),
                      _f(t["recall"]), f"{_f(t['f1'])} [{_f(ci[0])}, {_f(ci[1])}]", _ms(lat["mean"] if lat else None),
                      _ms(lat["p95"] if lat else None), "-" if deferred is None else f"{deferred:.0%}",
                      "-" if t["cost_per_1k"] is None else f"{t['cost_per_1k']:.4g}", "yes" if c.get("pareto") else "")
    (console if console.is_terminal else Console(width=max(console.width, 140))).print(table)
    for c in result["candidates"]:
        if c["kind"] == "cascade":
            r = c["region"]
            console.print(Text(f"{c['name']}: allowed at or below {_f(r['allow_at_or_below'], 4)}, flagged at or above "
                               f"{_f(r['flag_at_or_above'], 4)} (cheap check; null = no such region), else "
                               f"{c['checks'][1]} at {_f(c['thresholds'][c['checks'][1]], 4)}"))
    for c in result["candidates"]:
        for p in c.get("paired") or []:
            for metric, d in p["metrics"].items():
                console.print(Text(f"{c['name']} - {p['b']}: {metric} {d['diff']:+.3f} [{d['ci'][0]:+.3f}, "
                                   f"{d['ci'][1]:+.3f}], p {d['p_value']:.3g} (paired bootstrap, {p['cases']} test cases)"))
    if result.get("guard_file"):
        print(result["guard_file"])
    if result.get("report"):
        print(result["report"])


QUEUE_HELP = ("a queue record (NAME.queue.jsonl, written by label-queue and label-merge) naming the ids queued; "
              "default: the one beside each CSV. A row whose id no record names is listed and left out")


@app.command(name="label-queue")
def label_queue(
    source: Annotated[Path, typer.Argument(help="a guard log directory or a run directory")],
    budget: Annotated[int, typer.Option("--budget", min=1, help="how many cases to send to reviewers")],
    out: Annotated[Path, typer.Option("--out", help="the CSV to write (a suite .yaml is written beside it)")],
    strategy: Annotated[str, typer.Option("--strategy", help="uncertain, stratified or disagree")] = "uncertain",
    seed: Annotated[int, typer.Option("--seed")] = 0,
    random_share: Annotated[float, typer.Option(
        "--random-share", help="share of the budget drawn at random (for unbiased estimates)")] = 0.2,
    labeled: Annotated[list[Path] | None, typer.Option(
        "--labeled", help="an earlier labeled CSV: its cases are not queued again, its labels count toward needs")] = None,
    min_per_class: Annotated[int, typer.Option("--min-per-class", help="labeled cases of each class a slice needs")] = 30,
    verifiers_from: Annotated[Path | None, typer.Option(
        "--verifiers-from", help="a suite or run whose verifiers the generated suite uses (for a log)")] = None,
    queue: Annotated[list[Path] | None, typer.Option("--queue", help=QUEUE_HELP)] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print JSON")] = False,
) -> None:
    """Which N production cases to label next: a CSV with an empty label column, reviewer fields and the
    checks' evidence, its queue record (the ids queued), and a suite beside it that `verifybench run` reads
    once labeled."""
    try:
        r = api.label_queue(source, budget, out, strategy=strategy, seed=seed, random_share=random_share,
                            labeled=labeled, min_per_class=min_per_class, verifiers_from=verifiers_from, queues=queue)
    except VerifybenchError as e:
        _fail(e)
    for line in [*r["skipped_log_lines"], *r["notes"]]:
        _note(line)
    _not_queued(r["not_queued"])
    if as_json:
        print(json.dumps(r))
        return
    console.print(Text(f"{r['budget']} of {r['pool']} unlabeled cases ({r['already_labeled']} already labeled): "
                       + ", ".join(f"{n} {p}" for p, n in r["parts"].items())))
    table = Table("doc type", "labeled (calibration) H / F", "still needs H / F", "queued", "queued flagged",
                  title=f"per doc type: a threshold of its own needs {min_per_class} calibration cases of each class")
    for d, n in r["needs"].items():
        have = n["calibration_labeled"]
        table.add_row(Text(d), f"{have['hallucinated']} / {have['faithful']}",
                      f"{n['more_hallucinated']} / {n['more_faithful']}", str(n["queued"]), str(n["queued_flagged"]))
    console.print(table)
    print(r["csv"])
    print(r["suite"])


@app.command(name="label-merge")
def label_merge(
    files: Annotated[list[Path], typer.Argument(help="labeled CSVs, newest first")],
    out: Annotated[Path, typer.Option("--out", help="the merged CSV (its queue record is written beside it)")],
    queue: Annotated[list[Path] | None, typer.Option("--queue", help=QUEUE_HELP)] = None,
) -> None:
    """Merge labeled queues: one row per case id. Exit 1 when two files label a case differently (the case
    is kept with an empty label and a `conflict` cell naming both), or when a row's id is in no queue
    record (listed, and left out)."""
    try:
        r = api.label_merge(files, out, queues=queue)
    except VerifybenchError as e:
        _fail(e)
    for line in r["notes"]:
        _note(line)
    console.print(Text(f"{r['rows']} cases, {r['labeled']} labeled, {len(r['conflicts'])} conflicting, "
                       f"{len(r['not_queued'])} in no queue (left out)"))
    for c in r["conflicts"]:
        err.print(Text(f"conflict: {c['id']}: {c['labels']}"), highlight=False)
    _not_queued(r["not_queued"])
    print(r["csv"])
    if r["conflicts"] or r["not_queued"]:
        raise typer.Exit(1)


def _not_queued(rows: list[NotQueued], shown: int = 50) -> None:
    for r in rows[:shown]:
        err.print(Text(f"not queued: {r['where']}: id {r['id']!r} is in no queue record: left out"), highlight=False,
                  soft_wrap=True)
    if len(rows) > shown:
        err.print(Text(f"not queued: {len(rows) - shown} more rows like these left out"), highlight=False, soft_wrap=True)


@app.command(name="label-estimate")
def label_estimate(
    path: Annotated[Path, typer.Argument(help="a labeled queue CSV")],
    queue: Annotated[list[Path] | None, typer.Option("--queue", help=QUEUE_HELP)] = None,
) -> None:
    """Hallucination rate and each check's flag rate, precision and recall from a labeled queue, or queues
    of several rounds merged (label-merge): weighted by design, each round a stratum of the union of their
    windows, with a 90% interval (the window), beside unweighted (the labeled rows). Exit 2 when the rounds
    cannot be combined (the reason said); exit 1 when a row's id is in no queue record (listed, and left out
    of every figure)."""
    try:
        r = api.label_estimate(path, queues=queue)
    except VerifybenchError as e:
        _fail(e)
    for line in r["notes"]:
        _note(line)
    _not_queued(r["not_queued"])
    level = f"{r['interval']:.0%} interval"
    table = Table("estimate", "weighted (window)", level, "unweighted (labeled rows)",
                  title=f"{r['labeled']} labeled rows ({r['unlabeled_left_out']} unlabeled left out) standing for "
                        f"{r['window_cases_represented']:.0f} window cases, {len(r['rounds'])} round(s)")

    def ci(d: Any) -> str:
        return "" if d["ci"] is None else f"{_f(d['ci'][0])} - {_f(d['ci'][1])}"

    table.add_row("hallucination rate", _f(r["hallucination_rate"]["weighted"]), ci(r["hallucination_rate"]),
                  _f(r["hallucination_rate"]["unweighted"]))
    for v, m in r["checks"].items():
        if "refused" in m:
            table.add_row(Text(f"{v}"), Text(f"refused: {m['refused']}"), "", "")
            continue
        for k, d in (("flag_rate", m["flag_rate"]), ("precision", m["precision"]), ("recall", m["recall"])):
            table.add_row(Text(f"{v} {k}"), _f(d["weighted"]), ci(d), _f(d["unweighted"]))
    console.print(table)
    if r["not_queued"]:
        raise typer.Exit(1)


@app.command(name="drift")
def drift_cmd(
    reference: Annotated[Path, typer.Argument(help="a baseline (verifybench baseline) or a run directory")],
    source: Annotated[Path, typer.Argument(help="production: a guard log directory or a run directory")],
    max_psi: Annotated[float, typer.Option(
        "--max-psi", help="PSI that matters per check and slice (a drift is also beyond sampling noise)")] = 0.2,
    max_flag_rate_change: Annotated[float, typer.Option(
        "--max-flag-rate-change", help="change of the flag rate at the policy's threshold that matters (a drift "
                                       "also has to be beyond sampling noise)")] = 0.05,
    max_unseen_share: Annotated[float, typer.Option(
        "--max-unseen-share", help="share of production cases whose doc type has no slice allowed")] = 0.05,
    min_cases: Annotated[int, typer.Option("--min-cases", help="scored cases a slice needs on each side")] = 30,
    summary: Annotated[Path | None, typer.Option("--summary", help="write a Markdown summary here (also on a refusal)")] = None,
    mlflow: Annotated[str | None, typer.Option(
        "--mlflow", metavar="URI", help="log the figures to this MLflow tracking URI")] = None,
    out: Annotated[str | None, typer.Option(  # a str: a Path would drop the trailing slash that names a folder
        "--out", help="write the drift record `verifybench history` shows: a .json file, or a folder "
                      "(a new drift-<time>.json in it); a refusal too")] = None,
    policy: Annotated[Path | None, typer.Option(
        "--policy", help="the policy the guard that wrote the log served: only its decisions are compared, and its "
                         "suite and config hashes are checked against the reference's")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print JSON")] = False,
) -> None:
    """Has production drifted from the baseline's test split? Exit 1 on a figure beyond its limit and beyond
    sampling noise (a permutation p-value after Holm), 2 when no comparison can be made (no check in
    common, another configuration or suite). Unlabeled production data is enough."""
    try:
        result = api.drift(reference, source, max_psi, max_flag_rate_change, max_unseen_share, min_cases, summary,
                           mlflow=mlflow, out=out, policy=policy)
    except VerifybenchError as e:
        if (written := getattr(e, "record", None)) is not None:  # a refusal is recorded too
            _note(f"drift record written to {written}")
        _fail(e)
    if as_json:
        print(json.dumps({**result.as_dict(), **({"record": str(result.record)} if result.record else {})}))
        raise typer.Exit(result.exit_code)
    shown = result.table()
    table = Table(*shown.COLUMNS, title=shown.TITLE)
    for (check, slice_, *cells, status), alarm in zip(shown.rows, shown.alarms):
        table.add_row(Text(check), Text(slice_), *cells, Text(status, style="red" if alarm else ""))
    (console if console.is_terminal else Console(width=max(console.width, 140))).print(table)
    u = result.unseen
    console.print(Text(f"doc types without a slice: {', '.join(u['doc_types']) or 'none'} ({u['share']:.1%} of "
                       f"cases, limit {u['limit']:.0%}): {u['status']}"))
    for n in result.notes:
        _note(n)
    if result.record is not None:
        _note(f"drift record written to {result.record} (`verifybench history` shows it)")
    console.print("no drift beyond the limits" if result.exit_code == 0 else "DRIFT beyond a limit")
    raise typer.Exit(result.exit_code)


if __name__ == "__main__":
    app()
