"""The library calls behind every CLI command, so a test (or a notebook) can make them too."""

from __future__ import annotations

import shutil
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pandas as pd

from verifybench import localization
from verifybench import report as report_mod
from verifybench.cases import Case, Source, Verdict
from verifybench.compare import compare_pair, pairs
from verifybench.errors import SuiteError, VerifybenchError
from verifybench.executors import Executor, make_executor
from verifybench.loaders import available_loaders, describe_loader, get_loader
from verifybench.loaders.fields import FieldSpec
from verifybench.metrics import Settings, compute_metrics, evaluate, frame
from verifybench.metrics.settings import GATE_MIN_CASES
from verifybench.metrics.summary import OVERALL, meta_fields, shortcuts
from verifybench.policy import load_policy, null_reasons, policy_from_metrics, save_policy
from verifybench.results import Run
from verifybench.runcheck import require_complete, require_one_verdict_each
from verifybench.rundir import (
    COMPLETE,
    MANIFEST,
    METRICS,
    REPORT,
    SCORED,
    hold,
    read_case_frame,
    read_cases_at,
    read_errors,
    read_json,
    read_verdict_frame,
    read_verdicts_at,
    write_json,
)
from verifybench.runner import Runner, default_run_dir, describe, resume_suite, scan_dataset
from verifybench.suite import Suite, load_suite
from verifybench.tables import release_memory
from verifybench.verifiers import Verifier, available, build, get_verifier_class

DEFAULT_SUITE = Path("evals/demo.yaml")
POLICY = "policy.yaml"  # a policy applied to a run is kept beside its results


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
        suite: a suite file or a parsed `Suite` (default: evals/demo.yaml). Not with `cases`.
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
            (see `verifybench.inline`).
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
        from verifybench.inline import DEFAULT_NAME, InlineRun

        if suite is not None:
            raise VerifybenchError("give a suite or cases=, not both")
        plan = InlineRun(cases, limit=limit, **given)  # every argument checked before a file is written
        executor = _executor(executor, address, pools)
        run_dir = Path(out) if out else default_run_dir(name or DEFAULT_NAME)
        run_dir.mkdir(parents=True, exist_ok=True)
        with hold(run_dir):
            suite, built = plan.write(run_dir)
            return _run(suite, run_dir, progress, executor, policy, built)
    if extra := [k for k, v in given.items() if v is not None]:
        raise VerifybenchError(f"{', '.join(extra)}: given with cases= only; a suite file sets these itself")
    if suite is not None and not isinstance(suite, (str, Path, Suite)):
        raise VerifybenchError(f"suite: expected a suite file or a Suite, got {type(suite).__name__}; "
                               "pass data in memory as cases=")
    executor = _executor(executor, address, pools)
    if not isinstance(suite, Suite):
        suite = load_suite(suite or DEFAULT_SUITE, data_dir=data_dir, limit=limit)
    run_dir = Path(out) if out else default_run_dir(suite)
    run_dir.mkdir(parents=True, exist_ok=True)
    return _run(suite, run_dir, progress, executor, policy)


def _run(suite: Suite, run_dir: Path, progress: bool, executor: Executor, policy: str | Path | None,
         verifiers: list[Verifier] | None = None) -> Run:
    with hold(run_dir):  # one writer from the first verdict to the report
        result = Runner(suite, run_dir, progress=progress, executor=executor, verifiers=verifiers).run()
        if policy is not None:
            shutil.copyfile(policy, run_dir / POLICY)
        finish(run_dir)
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
        finish(run_dir, data_dir)
    return Run(run_dir, result)


def load_run(run_dir: str | Path) -> Run:
    """Open an existing run directory as a `Run`: its cases, verdicts and metrics as DataFrames."""
    return Run(run_dir)


def settings_for(run_dir: Path, manifest: dict[str, Any], **overrides) -> Settings:
    """Metric settings of a run: the suite's `metrics:` block, a stored policy, then `overrides`."""
    s = Settings.from_suite(manifest["suite"]["raw"].get("metrics"), where=manifest["suite"].get("path") or "<suite>",
                            **overrides)
    s.probabilistic = {v["id"] for v in manifest["verifiers"] if v.get("probabilistic")}
    s.binary = {v["id"] for v in manifest["verifiers"] if v.get("binary")}
    if (run_dir / POLICY).exists() and "policy" not in overrides:
        s.by, s.policy = load_policy(run_dir / POLICY)
        s.policy_reasons = null_reasons(run_dir / POLICY)
    return s


def _read_run(run_dir: Path, *settings: Settings) -> tuple[dict, pd.DataFrame, pd.DataFrame]:
    """A run's manifest, case table (with the meta fields the `settings` slice or break down by) and
    verdict table (see `verifybench.tables`), refused when a (verifier, case) pair has two verdicts."""
    manifest = read_json(run_dir / MANIFEST)
    cases = read_case_frame(run_dir, meta=meta_fields(*(f for s in settings for f in (s.by, *s.breakdown))))
    verdicts = read_verdict_frame(run_dir)
    require_one_verdict_each(run_dir, cases, verdicts)
    return manifest, cases, verdicts


def metrics_for(run_dir: str | Path, **overrides) -> tuple[dict, dict, pd.DataFrame, pd.DataFrame]:
    """A run's manifest and metrics (the suite's settings, then `overrides`), with its case table and
    verdict table (`verifybench.tables`: columns, not a dict and a Verdict per case)."""
    run_dir = Path(run_dir)
    s = settings_for(run_dir, read_json(run_dir / MANIFEST), **overrides)
    manifest, cases, verdicts = _read_run(run_dir, s)
    metrics = compute_metrics(cases, verdicts, s)
    return manifest, metrics, cases, verdicts


def finish(run_dir: str | Path, data_dir: str | Path | None = None) -> Path:
    """(Re)compute metrics.json and render report.html from stored results; no verifier runs.

    The dataset is read once more, for the shortcut check's surface cues (cached in the run) and the
    sources of the cases the report shows; if it cannot be read, the report says so and goes on. Holds
    the run directory's lock (refused while a run writes it). A run whose every verdict is written
    ("scored") becomes "complete" once metrics.json and report.html exist; a failed or interrupted run
    keeps its status (its report shows what was computed).
    """
    run_dir = Path(run_dir)
    read_json(run_dir / MANIFEST)  # a clear error for a folder that is not a run, before taking a lock in it
    with hold(run_dir):
        path = _finish(run_dir, data_dir)
        manifest = read_json(run_dir / MANIFEST)
        if manifest.get("status") == SCORED and (run_dir / METRICS).exists() and (run_dir / REPORT).exists():
            write_json(run_dir / MANIFEST, {**manifest, "status": COMPLETE})
    return path


def _finish(run_dir: Path, data_dir: str | Path | None) -> Path:
    s = settings_for(run_dir, read_json(run_dir / MANIFEST))
    manifest, cases, verdicts = _read_run(run_dir, s)
    f = _scored_frame(cases, verdicts, s)
    # The frame holds what the metrics need; ids and error texts are read back for the few cases shown.
    del verdicts
    f = f.drop(columns=["case_id", "error", "dataset", "doc_type"])
    release_memory()
    metrics = compute_metrics(cases, None, s, scored=f)
    localization.add_metrics(metrics, run_dir, s, cases=cases, scored=f)  # spans and minimal pairs
    # The per-case view: its few verdicts and case rows are read back whole (units, texts) by offset.
    picks = {vid: report_mod.worst_rows(f, vid, m["overall"]["threshold"]["value"])
             for vid, m in metrics["verifiers"].items()}
    worst = {}
    for vid, rows in picks.items():
        idx = [i for _, i in rows]
        verdicts_shown = read_verdicts_at(run_dir, f["offset"].to_numpy()[idx])
        cases_shown = read_cases_at(run_dir, cases["offset"].to_numpy()[f["case_row"].to_numpy()[idx]])
        worst[vid] = [{"kind": kind, "verdict": v, "case": c} for (kind, _), v, c in zip(rows, verdicts_shown, cases_shown)]
    del f
    release_memory()  # before the dataset is read again
    notes = []
    try:
        cues, sources = scan_dataset(resume_suite(run_dir, data_dir), {p["case"]["id"] for w in worst.values() for p in w},
                                     run_dir, case_ids=cases["id"])
    except VerifybenchError as e:
        cues, sources = None, {}
        notes.append(f"The dataset could not be read back ({e}); the shortcut check and the sources of the "
                     "worst cases are missing from this report.")
    if cues is not None:
        metrics["shortcuts"] = shortcuts(cases, cues)
    for vid, said in verifier_notes(manifest, cases["id"]).items():
        if vid in metrics["verifiers"]:
            metrics["verifiers"][vid]["notes"] = said
        notes += [f"{vid}: {n}" for n in said]
    for picks_ in worst.values():
        for p in picks_:
            p["case"] = {**p["case"], "sources": sources.get(p["case"]["id"], [])}
    write_json(run_dir / METRICS, metrics)
    return report_mod.render(run_dir, manifest, metrics, worst, read_errors(run_dir), notes)


def verifier_notes(manifest: dict[str, Any], case_ids: Iterable[str]) -> dict[str, list[str]]:
    """What verifiers have to say about a run as a whole, once all its cases are known (a predictions
    file's ids that match no case): from each verifier class that has `run_notes(case_ids)`, rebuilt
    from the manifest's config. A verifier that cannot be rebuilt here says so instead."""
    out: dict[str, list[str]] = {}
    ids: set[str] | None = None  # a set of a million ids only when some verifier asks for it
    for v in manifest["verifiers"]:
        try:
            cls = get_verifier_class(v["name"])
        except VerifybenchError:
            continue
        if not callable(getattr(cls, "run_notes", None)):
            continue
        options = {k: val for k, val in v["config"].items() if k in cls.Options.model_fields}
        try:
            if ids is None:
                ids = set(case_ids)
            said = cls(id=v["id"], **options).run_notes(ids)
        except Exception as e:  # noqa: BLE001 - a note that cannot be made must not lose the report
            said = [f"could not be checked after the run ({type(e).__name__}: {e})"]
        if said:
            out[v["id"]] = list(said)
    return out


def thresholds(run_dir: str | Path, by: str = "doc_type", target: str | None = None, min_per_class: int | None = None,
               out: str | Path | None = None) -> dict[str, Any]:
    """Fit a threshold per verifier and slice on the calibration split; report the test split.

    A slice too small for its own threshold gets the whole set's (`fallback_from: all`); a threshold that
    flags every calibration case, or none, is marked `degenerate`; `flag_all` beside it is what flagging
    every test case would score.

    Args:
        run_dir: a finished run.
        by: the slice field (doc_type, dataset, split, or meta.<key>).
        target: "balanced_accuracy", "youden", "f1", "fbeta=B", "f1_min_specificity=S", "precision=P" or
            "recall=R"; default: the suite's `metrics.target`, else balanced_accuracy (a threshold that has
            to separate the classes; max F1 is `"f1"`).
        min_per_class: fewer calibration cases of either class than this: the slice falls back to the
            whole set's threshold.
        out: write the policy as YAML here.
    """
    from verifybench.metrics.thresholds import parse_target

    manifest, metrics, _, _ = metrics_for(run_dir, by=by, target=parse_target(target) if target is not None else None,
                                          min_per_class=min_per_class, policy=None)
    policy = policy_from_metrics(metrics, manifest)
    if out is not None:
        save_policy(policy, out)
    return policy


def _scored_frame(cases, verdicts, s: Settings) -> pd.DataFrame:
    """The verdict frame under settings `s` (slices, split, breakdown fields): the one `evaluate` reads."""
    return frame(cases, verdicts, s.by, s.seed, s.test_fraction, s.breakdown)


def compare(run_a: str | Path, run_b: str | Path | None = None, verifiers: list[str] | None = None,
            refit: bool = False) -> list[dict]:
    """Paired comparisons on the test split, error verdicts counted as wrong: pairs of verifiers within
    one run (each at its own fitted threshold), or each verifier of run A against the verifier of the
    same id in run B (same cases required), at run A's threshold on both sides as the gate does, or at
    each run's own with `refit`. Each result says which (`threshold_mode`)."""
    from verifybench.compare import HELD, OWN, REFIT

    ma, metrics_a, cases_a, verdicts_a = metrics_for(run_a)
    s = settings_for(Path(run_a), ma)
    fa = _scored_frame(cases_a, verdicts_a, s)

    def thr(metrics: dict, vid: str) -> float | None:
        return metrics["verifiers"][vid]["overall"]["threshold"]["value"]

    def degenerate(metrics: dict, vid: str) -> str | None:
        return metrics["verifiers"][vid]["overall"]["threshold"].get("degenerate")

    results = []
    if run_b is None:
        for a, b in pairs(list(metrics_a["verifiers"]), verifiers):
            r = compare_pair(fa[fa["verifier"] == a], fa[fa["verifier"] == b], thr(metrics_a, a), thr(metrics_a, b),
                             n_boot=s.n_boot, seed=s.seed)
            results.append({"a": a, "b": b, "threshold_mode": OWN, **r,
                            "degenerate": [degenerate(metrics_a, a), degenerate(metrics_a, b)]})
        return results

    mb, metrics_b, cases_b, verdicts_b = metrics_for(run_b)
    from verifybench.gate import cases_hash
    from verifybench.identity import same_cases

    same = same_cases(ma["dataset"], mb["dataset"])  # the cases' content (verifybench.identity), else the files
    if same is False or (same is None and ma["dataset"]["hash"] != mb["dataset"]["hash"]):
        key = "content_hash" if same is not None else "hash"
        raise VerifybenchError(
            f"the runs scored different data ({'content' if same is not None else 'dataset'} "
            f"{ma['dataset'][key][:12]} vs {mb['dataset'][key][:12]}); a paired comparison needs the same cases")
    if cases_hash(cases_a) != cases_hash(cases_b):
        raise VerifybenchError("the runs scored different selections of the same data (limit or sample?); "
                               "a paired comparison needs the same cases")
    if any(f"meta.{k}" not in cases_b for k in meta_fields(s.by, *s.breakdown)):
        cases_b = read_case_frame(Path(run_b), meta=meta_fields(s.by, *s.breakdown))  # sliced as run A is
    fb = _scored_frame(cases_b, verdicts_b, s)
    shared = [v for v in metrics_a["verifiers"] if v in metrics_b["verifiers"] and (not verifiers or v in verifiers)]
    if not shared:
        raise VerifybenchError("the two runs share no verifier id to compare")
    for vid in shared:
        t_a = thr(metrics_a, vid)
        t_b = thr(metrics_b, vid) if refit else t_a
        r = compare_pair(fa[fa["verifier"] == vid], fb[fb["verifier"] == vid], t_a, t_b, n_boot=s.n_boot, seed=s.seed)
        results.append({"a": f"{vid} ({Path(run_a).name})", "b": f"{vid} ({Path(run_b).name})",
                        "threshold_mode": REFIT if refit else HELD, **r,
                        "degenerate": [degenerate(metrics_a, vid), degenerate(metrics_b if refit else metrics_a, vid)]})
    return results


def baseline(run_dir: str | Path, out: str | Path | None = None, policy: str | Path | None = None) -> Path:
    """Record a finished run's metrics (thresholds from `policy` when given) as the baseline a gate
    compares to. Refuses an unfinished run, a verifier missing verdicts, or duplicated verdicts.

    Args:
        run_dir: a finished run.
        out: where to write it (default: metrics/<suite>.json).
        policy: thresholds to use instead of the run's own fitted ones.
    """
    from verifybench.gate import build_baseline

    run_dir = Path(run_dir)
    overrides = {}
    if policy is not None:
        by, overrides["policy"] = load_policy(policy)
        overrides["by"] = by
        overrides["policy_reasons"] = null_reasons(policy)
    s = settings_for(run_dir, read_json(run_dir / MANIFEST), **overrides)
    manifest, cases, verdicts = _read_run(run_dir, s)
    require_complete(run_dir, manifest, cases, verdicts, "a baseline")
    f = _scored_frame(cases, verdicts, s)
    del verdicts
    doc = build_baseline(manifest, compute_metrics(cases, None, s, scored=f), f, cases, s)
    doc["notes"] = baseline_notes(doc, s.policy if policy is not None else None, str(s.target))
    path = Path(out) if out else Path("metrics") / f"{manifest['suite']['name']}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    write_json(path, doc)
    return path


def baseline_notes(doc: dict[str, Any], policy: dict[str, dict[str, float | None]] | None, target: str) -> list[str]:
    """What a baseline must say out loud: each verifier x slice it holds no threshold for (not gated at a
    threshold; AUROC and AUPRC still are), and, when recorded with a policy, each verifier the policy
    does not name (its thresholds were fitted on the run)."""
    notes = []
    for vid, v in doc["verifiers"].items():
        if policy is not None and vid not in policy:
            notes.append(f"{vid}: not in the policy: its thresholds were fitted on this run ({target})")
        for key, row in v["slices"].items():
            if row["threshold"] is None:
                why = row.get("threshold_warning") or "none fitted"
                notes.append(why if why.startswith("NOT GATED") else
                             f"{vid} / {key}: NOT GATED AT A THRESHOLD (no threshold: {why}); only its AUROC and "
                             "AUPRC are gated")
    return notes


def gate(run_dir: str | Path, baseline_path: str | Path, max_drop: list[str] | None = None,
         max_rise: list[str] | None = None, min_cases: int = GATE_MIN_CASES, slices: str = "all",
         junit: str | Path | None = None, summary: str | Path | None = None, allow_batch_latency: bool = False):
    """Compare a run with a committed baseline; see `verifybench.gate` for the rules.

    Returns a `GateResult` (exit code 0, 1, or 2 when a metric asked for by name cannot be gated); raises
    `GateRefused` (exit code 2) when the comparison is invalid. The baseline's thresholds are held (a gate
    never refits them); each check also shows what a refit on this run would give. The JUnit and
    Markdown files are written in every case, a refusal included, with its reason.
    """
    from verifybench import gate as g

    run_dir = Path(run_dir)
    suite_name = "unknown"
    try:
        base = g.load_baseline(baseline_path)
        suite_name = str(base.get("suite") or suite_name)
        # Every baseline entry is held, a missing threshold too (None: not gated at a threshold on either side).
        held = {vid: {k: r["threshold"] for k, r in v["slices"].items()} for vid, v in base["verifiers"].items()}
        s = settings_for(run_dir, read_json(run_dir / MANIFEST), policy=held, by=base["by"])
        s.policy_source = f"baseline {Path(baseline_path).name} (held)"
        s.n_boot = 1  # the gate's intervals are its own paired ones, at the baseline's settings
        # A refit: the suite's own settings on this run (its `fixed` thresholds stay; no stored policy).
        own = settings_for(run_dir, read_json(run_dir / MANIFEST), by=base["by"], policy=None)
        own.n_boot = 1  # only the refit thresholds are read from this pass
        manifest, cases, verdicts = _read_run(run_dir, s, own)
        require_complete(run_dir, manifest, cases, verdicts, "a gate")
        f = _scored_frame(cases, verdicts, s)
        current = g.build_baseline(manifest, evaluate(f, s, n_cases=len(cases)), f, cases, s)
        del f
        refit_metrics = evaluate(_scored_frame(cases, verdicts, own), own, n_cases=len(cases))
        del verdicts
        refit = {vid: {OVERALL: m["overall"]["threshold"]["value"],
                       **{k: sm["threshold"]["value"] for k, sm in m["slices"].items()}}
                 for vid, m in refit_metrics["verifiers"].items()}
        result = g.run_gate(base, current, g.label_lookup(cases),
                            g.parse_limits(max_drop, g.DEFAULT_DROPS, g.QUALITY),
                            g.parse_limits(max_rise, {}, g.COSTS), min_cases=min_cases, slices=slices,
                            refit=refit, explicit={i.partition("=")[0].strip().lower() for i in max_drop or []},
                            allow_batch_latency=allow_batch_latency)
    except VerifybenchError as e:
        reason = str(e) if isinstance(e, g.GateRefused) else f"refusing to gate: {e}"
        if junit:
            _write_text(junit, g.refusal_junit(reason, suite_name))
        if summary:
            _write_text(summary, g.refusal_markdown(reason, suite_name))
        if isinstance(e, g.GateRefused):
            raise
        raise g.GateRefused(reason) from None
    result.summary = g.markdown_summary(result, base["suite"])
    if junit:
        _write_text(junit, g.junit_xml(result, base["suite"]))
    if summary:
        _write_text(summary, result.summary)
    return result


def _write_text(path: str | Path, text: str) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def log_to_mlflow(run_dir: str | Path, tracking_uri: str | None = None, experiment: str | None = None):
    """Log a finished run directory as one MLflow run; logging it again updates that MLflow run.

    Args:
        run_dir: a run directory with metrics.json.
        tracking_uri: default MLFLOW_TRACKING_URI, else MLflow's default (sqlite:///mlflow.db here).
        experiment: default MLFLOW_EXPERIMENT_NAME, else the suite's name.

    Returns a `verifybench.tracking.Logged` (run id, experiment, whether it was new). Needs the
    `mlflow` extra; see docs/tracking.md.
    """
    from verifybench import tracking

    return tracking.log_run(run_dir, tracking_uri, experiment)


def check_mlflow(tracking_uri: str | None = None) -> str:
    """Before a long run: MLflow importable, the URI sane, the store answering; returns the URI used."""
    from verifybench import tracking

    return tracking.preflight(tracking_uri)


def history(run_dirs: list[str | Path], metric: str = "auroc", slice_name: str = OVERALL,
            out: str | Path | None = None) -> Path:
    """Draw `metric` per verifier over run directories in time order, as one self-contained HTML page
    (or a PNG when `out` ends in .png; default reports/history.html). Runs over different data are
    never joined by one line."""
    from verifybench.history import write_history

    return write_history(run_dirs, metric, slice_name, out)


def describe_suite(suite: str | Path | Suite, data_dir: str | Path | None = None, limit: int | None = None,
                   min_cases: int = GATE_MIN_CASES) -> dict[str, Any]:
    """Read a suite's data without running a verifier: counts by doc type, label and split; which raw label
    values became which label; per slice, labeled cases of each class and how many more a threshold and
    a gate need (see `runner.describe`)."""
    if not isinstance(suite, Suite):
        suite = load_suite(suite, data_dir=data_dir, limit=limit)
    return describe(suite, min_cases=min_cases)


def components() -> dict[str, dict[str, str]]:
    """Every loader and verifier (built-in and from entry points) with its one-line description."""
    verifiers = {}
    for name in sorted(available()):
        try:
            verifiers[name] = get_verifier_class(name).description
        except Exception as e:  # noqa: BLE001 - a broken plugin must not hide the others
            verifiers[name] = f"(cannot be loaded: {type(e).__name__}: {e})"
    loaders = {}
    for name in sorted(available_loaders()):
        try:
            loaders[name] = describe_loader(get_loader(name))
        except Exception as e:  # noqa: BLE001
            loaders[name] = f"(cannot be loaded: {type(e).__name__}: {e})"
    return {"loaders": loaders, "verifiers": verifiers}


# The public surface: every CLI command's function (run, finish = report, describe_suite = describe,
# thresholds, compare, baseline, gate, log_to_mlflow = log, history, components = list), the Python-only
# calls, and the types they take and return.
__all__ = ["DEFAULT_SUITE", "OVERALL", "Case", "FieldSpec", "Run", "Source", "Verdict", "Verifier", "VerifybenchError",
           "baseline", "check_mlflow", "compare", "components", "describe_suite", "finish", "gate", "history",
           "load_run", "log_to_mlflow", "resume", "run", "thresholds"]
