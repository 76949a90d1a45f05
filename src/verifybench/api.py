"""The library calls behind every CLI command, so a test (or a notebook) can make them too."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from verifybench import report as report_mod
from verifybench.loaders import LOADERS, describe_loader
from verifybench.metrics import compute_metrics
from verifybench.rundir import (
    METRICS, MANIFEST, read_case_index, read_errors, read_json, read_verdicts, write_json,
)
from verifybench.runner import RunResult, Runner, default_run_dir, describe, resume_suite
from verifybench.suite import Suite, load_suite
from verifybench.verifiers import available, get_verifier_class

DEFAULT_SUITE = Path("evals/demo.yaml")


def run(suite: str | Path | Suite = DEFAULT_SUITE, out: str | Path | None = None, limit: int | None = None,
        data_dir: str | Path | None = None, progress: bool = True) -> RunResult:
    """Run a suite into a new run directory, then write metrics.json and report.html there."""
    if not isinstance(suite, Suite):
        suite = load_suite(suite, data_dir=data_dir, limit=limit)
    run_dir = Path(out) if out else default_run_dir(suite)
    result = Runner(suite, run_dir, progress=progress).run()
    finish(run_dir)
    return result


def resume(run_dir: str | Path, data_dir: str | Path | None = None, progress: bool = True) -> RunResult:
    """Finish an interrupted run: score only the (verifier, case) pairs without a verdict."""
    run_dir = Path(run_dir)
    result = Runner(resume_suite(run_dir, data_dir), run_dir, resume=True, progress=progress).run()
    finish(run_dir)
    return result


def finish(run_dir: str | Path) -> Path:
    """(Re)compute metrics.json and render report.html from stored results; no verifier runs."""
    run_dir = Path(run_dir)
    manifest = read_json(run_dir / MANIFEST)
    cases = read_case_index(run_dir)
    verdicts = read_verdicts(run_dir)
    by = (manifest["suite"]["raw"].get("metrics") or {}).get("by", "doc_type")
    metrics = compute_metrics(cases, verdicts, by=by)
    write_json(run_dir / METRICS, metrics)
    return report_mod.render(run_dir, manifest, metrics, cases, verdicts, read_errors(run_dir))


def describe_suite(suite: str | Path, data_dir: str | Path | None = None, limit: int | None = None) -> dict[str, Any]:
    return describe(load_suite(suite, data_dir=data_dir, limit=limit))


def components() -> dict[str, dict[str, str]]:
    """Every loader and verifier with its one-line description."""
    verifiers = {}
    for name in sorted(available()):
        try:
            verifiers[name] = get_verifier_class(name).description
        except Exception as e:  # noqa: BLE001 - a broken plugin must not hide the others
            verifiers[name] = f"(cannot be loaded: {type(e).__name__}: {e})"
    return {"loaders": {n: describe_loader(f) for n, f in sorted(LOADERS.items())}, "verifiers": verifiers}
