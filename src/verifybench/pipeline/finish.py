"""Finishing a run: metrics.json and report.html computed from the stored results (`verifybench report`);
no verifier runs."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pandas as pd

from verifybench import reporting
from verifybench._util.phases import phase
from verifybench.errors import VerifybenchError
from verifybench.evaluation import spans_pairs
from verifybench.evaluation.run_dir import RunDir, require_run_dir
from verifybench.evaluation.saved_points import with_saved
from verifybench.formats import Manifest
from verifybench.formats.metrics import Metrics
from verifybench.metrics import compute_metrics
from verifybench.metrics.summary import shortcuts
from verifybench.pipeline.runner import resume_suite, scan_dataset
from verifybench.rundir import (
    COMPLETE,
    MANIFEST,
    METRICS,
    REPORT,
    SCORED,
    hold,
    read_errors,
)
from verifybench.tables import release_memory
from verifybench.verifiers import Verifier, get_verifier_class


def report(run_dir: str | Path, data_dir: str | Path | None = None) -> Path:
    """(Re)compute metrics.json and render report.html from stored results; no verifier runs.

    The dataset is read once more, for the shortcut test's surface cues (cached in the run) and the
    sources of the cases the report shows; if it cannot be read, the report says so and goes on. Holds
    the run directory's lock (refused while a run writes it). A run whose every verdict is written
    ("scored") becomes "complete" once metrics.json and report.html exist; a failed or interrupted run
    keeps its status (its report shows what was computed).
    """
    run_dir = require_run_dir(run_dir)  # a clear error for a folder that is not a run, before taking a lock in it
    with hold(run_dir):
        try:
            path = _finish(run_dir, data_dir)
        except OSError as e:
            from verifybench._util.safeio import disk_error, disk_message

            if not disk_error(e):
                raise
            raise VerifybenchError(f"{run_dir}: {disk_message(e, 'writing metrics.json and report.html')}; the "
                                   f"results are untouched: free some space, then `verifybench report {run_dir}`") from None
        manifest = Manifest.read(run_dir / MANIFEST)
        if manifest.status == SCORED and (run_dir / METRICS).exists() and (run_dir / REPORT).exists():
            manifest.rewritten(status=COMPLETE).write(run_dir / MANIFEST)
    return path



def _finish(run_dir: Path, data_dir: str | Path | None) -> Path:
    with phase("reading the run and computing metrics"):  # a line on a terminal when it takes a while
        run = RunDir.open(run_dir)
        s = run.settings()
        manifest = run.doc
        f = run.scored_frame(s)  # reads and checks both tables; no name here keeps the verdict table
        cases = run.cases(s)
        # The frame holds what the metrics need; ids and error texts are read back for the few cases shown.
        # Error texts stay as codes (a byte a row where no verdict failed): a refusal note quotes the most common.
        run.drop_verdicts()
        f = f.drop(columns=["case_id", "dataset", "doc_type"]).assign(error=lambda d: d["error"].astype("category"))
        release_memory()
        metrics = compute_metrics(cases, None, s, scored=f)
        # combinations `verifybench cascade --save` kept in the run, on the operating-point chart
        metrics["operating_points"], saved_notes = with_saved(run_dir, metrics["operating_points"])
        spans_pairs.add_metrics(metrics, run_dir, s, cases=cases, scored=f)  # spans and minimal pairs
    # The per-case view: its few verdicts and case rows are read back whole (units, texts) by offset.
    picks = {vid: reporting.worst_rows(f, vid, m["overall"]["threshold"]["value"])
             for vid, m in metrics["verifiers"].items()}
    worst: dict[str, list[dict[str, Any]]] = {}
    for vid, rows in picks.items():
        idx = [i for _, i in rows]
        verdicts_shown = run.verdicts_at(f["offset"].to_numpy()[idx])
        cases_shown = run.cases_at(f["case_row"].to_numpy()[idx])
        worst[vid] = [{"kind": kind, "verdict": v, "case": c} for (kind, _), v, c in zip(rows, verdicts_shown, cases_shown)]
    del f
    release_memory()  # before the dataset is read again
    notes: list[str] = list(saved_notes)
    try:
        with phase("reading the dataset back (shortcut cues, sources of the cases shown)"):
            cues, sources = scan_dataset(resume_suite(run_dir, data_dir),
                                         {p["case"]["id"] for w in worst.values() for p in w}, run_dir,
                                         case_ids=cases["id"])
    except VerifybenchError as e:
        cues, sources = None, {}
        notes.append(f"The dataset could not be read back ({e}); the shortcut test and the sources of the "
                     "worst cases are missing from this report.")
    if cues is not None:
        metrics["shortcuts"] = shortcuts(cases, cues)
    manifest = _with_counts(manifest, cases)
    for vid, said in verifier_notes(manifest, cases["id"]).items():
        if vid in metrics["verifiers"]:
            metrics["verifiers"][vid]["notes"] = said
        notes += [f"{vid}: {n}" for n in said]
    for picks_ in worst.values():
        for p in picks_:
            p["case"] = {**p["case"], "sources": sources.get(p["case"]["id"], [])}
    Metrics.new(**metrics).write(run_dir / METRICS)
    errors = read_errors(run_dir)
    notes += [e["message"] for e in errors if e.get("kind") == "unreadable"]  # a damaged line, named
    with phase("writing report.html"):
        return reporting.render(run_dir, manifest, metrics, worst, errors, notes)


def _with_counts(manifest: dict[str, Any], cases: pd.DataFrame) -> dict[str, Any]:
    """The manifest as the report shows it: a run killed before its counts were written (status running)
    gets them from its case index, so its report shows what was computed."""
    data = manifest.get("dataset") or {}
    if "total" in data and "by_label" in data:
        return manifest
    label, labeled = cases["label"].to_numpy(bool), cases["labeled"].to_numpy(bool)
    by_label = {"hallucinated": int((label & labeled).sum()), "faithful": int((~label & labeled).sum())}
    if not labeled.all():
        by_label["unlabeled"] = int((~labeled).sum())
    counts = {"total": len(cases), "by_label": by_label}
    return {**manifest, "dataset": {**counts, **data}}



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
        hook = getattr(cls, "run_notes", None)
        if hook is Verifier.run_notes or not callable(hook):  # the base's hook says nothing
            continue
        # Stored as written (`${VAR}` names, not values): the verifier reads them from the environment again.
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

