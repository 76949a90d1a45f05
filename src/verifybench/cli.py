"""The `verifybench` command. Thin: each command parses arguments and makes one call into `api`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.table import Table

from verifybench import api
from verifybench.errors import VerifybenchError

app = typer.Typer(add_completion=False, no_args_is_help=True, help="Measure hallucination verifiers.")
console = Console()
err = Console(stderr=True)

DataDir = Annotated[Optional[Path], typer.Option("--data-dir", help="where ${VERIFYBENCH_DATA} points")]


def _fail(e: Exception) -> None:
    err.print(f"[bold red]error:[/] {e}", highlight=False, markup=True, soft_wrap=True)
    raise typer.Exit(2)


@app.command()
def run(
    suite: Annotated[Optional[Path], typer.Argument(help="suite file (default: evals/demo.yaml)")] = None,
    out: Annotated[Optional[Path], typer.Option("--out", help="run directory (default: reports/<suite>-<time>)")] = None,
    limit: Annotated[Optional[int], typer.Option("--limit", min=1, help="score only the first N cases")] = None,
    resume: Annotated[Optional[Path], typer.Option("--resume", help="finish the run in this directory")] = None,
    data_dir: DataDir = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="no progress bars")] = False,
) -> None:
    """Run a suite: every verifier over every case; writes results, metrics.json and report.html."""
    try:
        if resume is not None:
            if suite is not None or limit is not None:
                raise VerifybenchError("--resume takes the suite and limit from the run's manifest; give neither")
            result = api.resume(resume, data_dir=data_dir, progress=not quiet)
        else:
            result = api.run(suite or api.DEFAULT_SUITE, out=out, limit=limit, data_dir=data_dir, progress=not quiet)
    except VerifybenchError as e:
        _fail(e)
    console.print(f"{result.n_cases} cases, {result.new_verdicts} new verdicts, {result.errors} failed, "
                  f"{result.load_errors} input records skipped", highlight=False)
    print(result.run_dir / "report.html")


@app.command()
def report(run_dir: Annotated[Path, typer.Argument(help="a run directory")]) -> None:
    """Re-render metrics.json and report.html from stored results (no verifier runs)."""
    try:
        print(api.finish(run_dir))
    except VerifybenchError as e:
        _fail(e)


@app.command()
def describe(
    suite: Annotated[Optional[Path], typer.Argument(help="suite file (default: evals/demo.yaml)")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print one JSON object")] = False,
    limit: Annotated[Optional[int], typer.Option("--limit", min=1)] = None,
    data_dir: DataDir = None,
) -> None:
    """Count a suite's cases by doc type, label and split, without running any verifier."""
    try:
        counts = api.describe_suite(suite or api.DEFAULT_SUITE, data_dir=data_dir, limit=limit)
    except VerifybenchError as e:
        _fail(e)
    if as_json:
        print(json.dumps(counts))
        return
    console.print(f"[bold]{counts['suite']}[/]: {counts['total']} cases, {counts['skipped_records']} records skipped")
    for key in ("by_doc_type", "by_label", "by_split"):
        table = Table(key.removeprefix("by_").replace("_", " "), "cases")
        for name, n in sorted(counts[key].items()):
            table.add_row(str(name), str(n))
        console.print(table)


@app.command(name="list")
def list_components() -> None:
    """List the loaders and verifiers this installation has."""
    comps = api.components()
    for kind in ("loaders", "verifiers"):
        table = Table(kind, "description", show_lines=False)
        for name, desc in comps[kind].items():
            table.add_row(name, desc)
        console.print(table)


if __name__ == "__main__":
    app()
