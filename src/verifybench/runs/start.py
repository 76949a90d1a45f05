"""Starting a run (a suite file, a parsed suite, or cases given in Python) and resuming an interrupted one;
each ends by finishing the run directory (`finish.report`)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from verifybench.errors import SuiteError, VerifybenchError
from verifybench.evaluation.policy import load_policy
from verifybench.evaluation.reading import POLICY
from verifybench.executors import Executor, make_executor
from verifybench.pipeline.finish import report
from verifybench.pipeline.runner import (
    Runner,
    check_installed,
    check_run_folder,
    default_run_dir,
    resume_suite,
)
from verifybench.rundir import hold, mark_run_dir
from verifybench.runs.run import Run
from verifybench.suite import Suite, load_suite
from verifybench.verifiers import Verifier, build


def _executor(executor: str | Executor, address: str | None, pools: dict[str, int] | None) -> Executor:
    return make_executor(executor, address, pools) if isinstance(executor, str) else executor



def run(suite: str | Path | Suite | None = None, out: str | Path | None = None, limit: int | None = None,
        data_dir: str | Path | None = None, progress: bool = True, policy: str | Path | None = None,
        executor: str | Executor = "local", address: str | None = None,
        pools: dict[str, int] | None = None, *, cases: Any = None, fields: dict[str, Any] | None = None,
        verifiers: Any = None, metrics: dict[str, Any] | None = None, name: str | None = None,
        on_error: str | None = None, batch_size: int | None = None) -> Run:
    """Run a suite, or cases given in Python, into a new run directory; write metrics.json and
    report.html there; return the run as a `Run` (its cases, verdicts and metrics as DataFrames).

    Args:
        suite: a suite file or a parsed `Suite`. Not with `cases`; one of the two is needed.
        out: the run directory (default: reports/<suite or name>-<time>).
        limit: score only the first N cases.
        data_dir: where ${VERIFYBENCH_DATA} points.
        progress: show progress bars.
        policy: a threshold policy to apply instead of fitting thresholds.
        executor: where batches are scored: "local", "ray", or an executor object.
        address: with "ray", an existing cluster's address (default: a local Ray instance).
        pools: with "ray", the most actors per verifier id (bounds a remote judge's load cluster-wide).
        cases: the data, in memory: a pandas DataFrame, a list of dicts, a list of `Case`, or a Hugging Face
            `datasets.Dataset`. It is written into the run directory (dataset.jsonl, with a suite.yaml
            pointing at it), so the dataset hash covers it and the run resumes without it
            (see `verifybench.pipeline.inline`).
        fields: with `cases` (records): the mapping of record fields onto a `Case`, as a suite's
            `dataset.fields` (e.g. {"response": "answer", "sources": "context", "label": "is_bad"}).
        verifiers: with `cases`: names, {name: options} mappings, or `Verifier` objects.
        metrics: with `cases`: a suite's `metrics:` block (by, thresholds, bootstrap, seed, ...).
        name: with `cases`: the run's suite and dataset name (default "cases").
        on_error: with `cases`: "raise" (default) or "skip" bad records, as a suite's `dataset.on_error`.
        batch_size: with `cases`: cases per batch (default 64).
    """
    if policy is not None:
        load_policy(policy)  # refuse a bad policy before spending time on the run
    given = {"fields": fields, "verifiers": verifiers, "metrics": metrics, "name": name, "on_error": on_error,
             "batch_size": batch_size}
    if cases is not None:
        from verifybench.pipeline.inline import DEFAULT_NAME, InlineRun

        if suite is not None:
            raise VerifybenchError("give a suite or cases=, not both")
        plan = InlineRun(cases, limit=limit, **given)  # every argument checked before a file is written
        executor = _executor(executor, address, pools)
        run_dir = Path(out) if out else default_run_dir(name or DEFAULT_NAME)
        run_dir.mkdir(parents=True, exist_ok=True)
        with hold(run_dir):
            check_run_folder(run_dir, resume=False)  # before the cases are written into it
            mark_run_dir(run_dir)  # and the marker before them: a run killed now is still a run directory
            suite, built = plan.write(run_dir)
            return _run(suite, run_dir, progress, executor, policy, built)
    if extra := [k for k, v in given.items() if v is not None]:
        raise VerifybenchError(f"{', '.join(extra)}: given with cases= only; a suite file sets these itself")
    if suite is not None and not isinstance(suite, (str, Path, Suite)):
        raise VerifybenchError(f"suite: expected a suite file or a Suite, got {type(suite).__name__}; "
                               "pass data in memory as cases=")
    if suite is None:
        raise VerifybenchError("run() needs a suite file (run('evals/demo.yaml')), a parsed Suite, or cases in "
                               "memory (run(cases=df, fields={...}, verifiers=[...])); the CLI's `verifybench run` "
                               "alone runs evals/demo.yaml")
    executor = _executor(executor, address, pools)
    if not isinstance(suite, Suite):
        suite = load_suite(suite, data_dir=data_dir, limit=limit)
    run_dir = Path(out) if out else default_run_dir(suite)
    built = [build(e.name, e.id, **e.options) for e in suite.verifiers]
    check_installed(suite, built)  # a missing extra stops the run before its folder is made
    run_dir.mkdir(parents=True, exist_ok=True)
    return _run(suite, run_dir, progress, executor, policy, built)



def _run(suite: Suite, run_dir: Path, progress: bool, executor: Executor, policy: str | Path | None,
         verifiers: list[Verifier] | None = None) -> Run:
    with hold(run_dir):  # one writer from the first verdict to the report
        result = Runner(suite, run_dir, progress=progress, executor=executor, verifiers=verifiers).run()
        if policy is not None:
            shutil.copyfile(policy, run_dir / POLICY)
        report(run_dir)
    return Run(run_dir, result)



def resume(run_dir: str | Path, data_dir: str | Path | None = None, progress: bool = True,
           executor: str | Executor = "local", address: str | None = None,
           pools: dict[str, int] | None = None, verifiers: list[Verifier] | None = None) -> Run:
    """Finish an interrupted run: score only the (verifier, case) pairs without a verdict, on any
    executor (a run started on Ray can be finished locally, and the other way round).

    A run over cases given in Python resumes from the copy in its directory. `verifiers`: verifier objects
    to use for the run's verifiers of the same ids (the others are rebuilt from the suite), for a class
    the suite cannot import (one defined in a notebook); their configurations must match the run's."""
    run_dir = Path(run_dir)
    executor = _executor(executor, address, pools)
    suite = resume_suite(run_dir, data_dir)
    if verifiers is not None:
        given = {v.id: v for v in verifiers}
        if unknown := sorted(set(given) - {e.id for e in suite.verifiers}):
            raise VerifybenchError(f"verifiers: {', '.join(unknown)} not in this run (its verifiers: "
                                   f"{', '.join(e.id for e in suite.verifiers)})")
        verifiers = [given.get(e.id) or build(e.name, e.id, **e.options) for e in suite.verifiers]
    with hold(run_dir):
        try:
            runner = Runner(suite, run_dir, resume=True, progress=progress, executor=executor, verifiers=verifiers)
        except SuiteError as e:
            if verifiers is not None or "cannot be imported" not in str(e):
                raise
            # A Verifier object of a class defined in a notebook or script: only that session has it.
            raise SuiteError(f"{e}. Resume this run from the Python session that has the class, with "
                             f"verifybench.resume({str(run_dir)!r}, verifiers=[...the run's verifier objects...]); "
                             f"if every verdict is written, `verifybench report {run_dir}` finishes it") from None
        result = runner.run()
        report(run_dir, data_dir)
    return Run(run_dir, result)

