"""The runner: streams a suite's cases in batches through every verifier and appends the verdicts.

Guarantees:
- A verifier that raises on a case yields an error verdict for that case; the run goes on.
- Verdicts are appended and flushed batch by batch: a run killed at any moment loses at most the batch
  in flight, and `resume` scores exactly the (verifier, case) pairs that have no verdict yet.
- The data is read once: each batch is indexed (cases.jsonl), scored, and appended. Where a batch is
  scored is the executor's business (`verifybench.executors`: here, or on a Ray cluster); reading,
  indexing, writing, resume and progress are the same for every executor, and only this process writes. A bad record stops
  the run there (or is skipped and logged with `on_error: skip`); what was computed before it is kept and
  the manifest records why the run stopped. With progress bars on, a quick counting pass first gives
  the bars their totals and ETA.
- One writer per run directory: the run holds the directory's lock (`rundir.RunLock`) from start to end;
  a second writer is refused with the holder's pid and host.
- The manifest goes running -> scored (every verdict written) here; `pipeline.finish.report` marks it complete once
  metrics.json and report.html exist. A dataset that gives no case at all fails the run, saying why.
"""

from __future__ import annotations

import json
import os
import platform
import sys
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from itertools import islice
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from verifybench._util.identity import ContentHash
from verifybench._util.safeio import (
    LinkRefused,
    disk_error,
    disk_message,
    links_in,
    replace_atomically,
    safe_name,
    temp_path,
)
from verifybench.cases import Case, label_name
from verifybench.errors import DataError, RecordError, SuiteError, VerifybenchError
from verifybench.executors import Executor, Scored, make_executor
from verifybench.executors.scoring import verify_batch  # noqa: F401 - part of this module's interface
from verifybench.formats import Manifest
from verifybench.loaders import BadRecords, dataset_files, dataset_hash, iter_cases
from verifybench.metrics.shortcuts import CUES as CUE_NAMES
from verifybench.metrics.shortcuts import surface_cues
from verifybench.rundir import (
    CASES,
    CUES,
    ERRORS,
    FAILED,
    LOCK,
    MANIFEST,
    MARKER,
    RESULTS,
    RUNNING,
    SCORED,
    JsonlAppender,
    RunDirError,
    _blocks,
    case_index_row,
    hold,
    is_run_dir,
    iter_jsonl,
    iter_lines,
    mark_run_dir,
    repair_tail,
    write_json_in_place,
    write_jsonl,
)
from verifybench.rundir.provenance import git_state
from verifybench.suite import Suite, as_written, parse_suite
from verifybench.tables import positions
from verifybench.verifiers import Verifier, build
from verifybench.verifiers.base import missing

PACKAGES = (
    "verifybench", "numpy", "pandas", "scikit-learn", "pydantic", "sacrebleu", "rouge-score",
    "sentence-transformers", "torch", "relationalai", "openai", "anthropic", "llama-cpp-python", "datasets",
)


def package_versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            pass
    return out


def batched(items: Iterable[Case], size: int) -> Iterator[list[Case]]:
    it = iter(items)
    while batch := list(islice(it, size)):
        yield batch


@dataclass
class RunResult:
    run_dir: Path
    n_cases: int
    new_verdicts: int
    errors: int
    load_errors: int
    counts: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # things the user should hear about (a stale lock taken over)


RUN_FILES = (MARKER, MANIFEST, CASES, RESULTS, ERRORS, CUES, "metrics.json", "report.html", "policy.yaml",
             LOCK, "suite.yaml", "dataset.jsonl")


# Files a file manager leaves in any folder it shows: a folder holding only these is empty to a user.
_FOLDER_LITTER = frozenset({".DS_Store", "Thumbs.db", "desktop.ini"})


def check_run_folder(run_dir: Path, resume: bool) -> None:
    """Refuse to write a run through a symbolic link in place of a run file (a link the run did not create
    is never written through), or into a folder that holds files and is not a run directory. A folder is
    a run directory only when the run says so (its marker or its manifest, `rundir.is_run_dir`), never
    because its files have a run's names: a user's own cases.jsonl and metrics.json are not overwritten."""
    run_dir = Path(run_dir)
    linked = links_in(run_dir, RUN_FILES)
    if linked:
        raise RunDirError(f"{run_dir}: {', '.join(linked)} is a symbolic link; a run never writes through a link "
                          "it did not create: remove it, or write the run somewhere else")
    if resume or not run_dir.is_dir() or is_run_dir(run_dir):
        return
    # The lock is this run's own (taken before this check), or a run's killed before its marker was written.
    other = sorted(p.name for p in run_dir.iterdir() if p.name != LOCK and p.name not in _FOLDER_LITTER)
    if other:
        shown = ", ".join(other[:3]) + (f", and {len(other) - 3} more" if len(other) > 3 else "")
        raise RunDirError(f"{run_dir} is not empty and not a run directory ({shown}): no verifybench run wrote "
                          "this folder, and a run never writes over files it did not write; a run writes into a "
                          "new or empty folder: choose another --out")


def default_run_dir(suite: Suite | str, root: Path = Path("reports")) -> Path:
    """reports/<suite name>-<time> (a suite, or its name), numbered when that folder exists."""
    name = safe_name(suite if isinstance(suite, str) else suite.name)  # `../x` or `/x` stays inside `root`
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    path = root / f"{name}-{stamp}"
    n = 1
    while path.exists():
        n += 1
        path = root / f"{name}-{stamp}-{n}"
    return path


class Runner:
    """Runs one suite into one run directory.

    Args:
        suite: the parsed suite.
        run_dir: where results go; must be new or empty unless `resume` is set.
        resume: continue the run already in `run_dir`.
        progress: show a progress bar per verifier.
        verifiers: pre-built verifier objects (default: built from the suite).
        executor: where batches are scored (default: here, `LocalExecutor`).
    """

    def __init__(self, suite: Suite, run_dir: Path, resume: bool = False, progress: bool = True,
                 verifiers: list[Verifier] | None = None, executor: Executor | None = None):
        self.suite = suite
        self.run_dir = Path(run_dir)
        self.resume = resume
        self.progress = progress
        self.verifiers = verifiers or [build(e.name, e.id, **e.options) for e in suite.verifiers]
        check_installed(suite, self.verifiers)
        self.executor = executor or make_executor("local")
        repeats = {e.id: e.repeats for e in suite.verifiers}  # the suite entry's, whoever built the object
        for v in self.verifiers:
            v.repeats = repeats.get(v.id, v.repeats)
            v.bind_run(self.run_dir)
        self._executor_info: dict[str, Any] = {"name": self.executor.name}
        self._files_hashed = 0
        self.notes: list[str] = []

    def _check_new_or_resumable(self) -> None:
        # Called with the run directory's lock held: no other process is writing it, so "resume it"
        # is sound advice.
        results = self.run_dir / RESULTS
        if not self.resume and results.exists() and results.stat().st_size > 0:
            raise VerifybenchError(f"{self.run_dir} already holds results; resume it with --resume {self.run_dir}")
        check_run_folder(self.run_dir, self.resume)
        if self.resume and not (self.run_dir / MANIFEST).exists():
            raise VerifybenchError(f"{self.run_dir}: no manifest.json here; is it a verifybench run directory?")

    def _manifest(self, counts: dict[str, Any], data_hash: str, status: str, error: str | None = None) -> Manifest:
        previous = Manifest.read(self.run_dir / MANIFEST) if (self.run_dir / MANIFEST).exists() else None
        now = datetime.now(UTC).isoformat(timespec="seconds")
        return Manifest.new(
            status=status,
            created=previous.created if previous else now,
            updated=now,
            suite={
                "name": self.suite.name,
                "path": self.suite.source,
                "hash": self.suite.hash,
                "raw": self.suite.raw,
                "base_dir": (previous.suite.base_dir if previous else None)
                or str(Path(self.suite.source or ".").resolve().parent),
                "data_dir": self.suite.data_dir,
            },
            # Options as written: a `${VAR}` from the environment is stored as its name, a URL's password as ***.
            dataset={"hash": data_hash, "loader": self.suite.dataset.loader,
                     "options": as_written(self.suite.dataset.options, self.suite.written.get("dataset")),
                     "files_hashed": self._files_hashed, **counts},
            verifiers=[
                {"id": v.id, "name": v.name, "config": as_written(v.config, self._written_options(i)),
                 "config_hash": v.config_hash,
                 "probabilistic": v.probabilistic, "binary": bool(getattr(v, "binary", False)),
                 "repeats": v.repeats if v.repeats > 1 else None}
                for i, v in enumerate(self.verifiers)
            ],
            executor=self._executor_info,
            git=previous.git if previous else self._git(),
            packages=package_versions(),
            platform={"system": platform.platform(), "machine": platform.machine(), "argv": sys.argv},
            resumes=(previous.resumes if previous else 0) + (1 if self.resume and status == RUNNING else 0),
            notes=self.notes,
            error=error,
        )

    def _written_options(self, i: int) -> dict[str, Any] | None:
        written = self.suite.written.get("verifiers") or []
        return written[i] if i < len(written) else None

    def _git(self) -> dict[str, Any] | None:
        if not hasattr(self, "_git_state"):  # asked once a run, not at every manifest write
            self._git_state = git_state(Path(self.suite.source or ".").resolve().parent)
        return self._git_state

    def _count(self) -> int:
        """Cases the progress bar expects: a quick pass that skips bad records (the main pass judges them)."""
        lenient = self.suite.dataset.model_copy(update={"on_error": "skip"})
        return sum(1 for _ in iter_cases(lenient, []))

    def _reset_input_errors(self) -> None:
        """On resume the input is read again, so its errors are logged again: drop the old ones."""
        path = self.run_dir / ERRORS
        repair_tail(path)
        kept = []
        for raw in iter_lines(path):
            try:
                row = json.loads(raw)
            except ValueError:
                continue  # a damaged line: nothing a resume can use
            if isinstance(row, dict) and row.get("kind") != "input":
                kept.append(row)
        write_jsonl(path, kept)  # by rename: a resume killed here keeps the old log whole

    def _check_resume(self, data_hash: str) -> set[tuple[str, str]]:
        manifest = Manifest.read(self.run_dir / MANIFEST)
        if manifest.dataset.hash != data_hash:
            raise VerifybenchError(
                f"{self.run_dir}: the dataset changed since this run started (hash "
                f"{manifest.dataset.hash[:12]} then, {data_hash[:12]} now); start a new run instead"
            )
        mine = {v.id: v.config_hash for v in self.verifiers}
        theirs = {v.id: v.config_hash for v in manifest.verifiers}
        if mine != theirs:
            raise VerifybenchError(f"{self.run_dir}: verifier configs differ from the run's manifest; start a new run")
        for v in self.verifiers:
            was = next(r.repeats or 1 for r in manifest.verifiers if r.id == v.id)
            if was != v.repeats:
                raise VerifybenchError(f"{self.run_dir}: verifier {v.id!r} was scored with repeats: {was}, now "
                                       f"{v.repeats}; a run keeps one number of repeats: start a new run")
        repair_tail(self.run_dir / RESULTS)
        return {(r["verifier"], r["case_id"]) for r in iter_jsonl(self.run_dir / RESULTS)}

    def run(self) -> RunResult:
        """One pass over the data: each batch is indexed, scored by every verifier, and appended. The run
        directory's lock is held throughout (a second writer is refused naming this process)."""
        if not self.resume:
            self.run_dir.mkdir(parents=True, exist_ok=True)
        elif not self.run_dir.is_dir():
            raise VerifybenchError(f"{self.run_dir}: no such run directory")
        with hold(self.run_dir) as lock:
            if lock.stale:
                self.notes.append(lock.stale)
            return self._run_locked()

    def _run_locked(self) -> RunResult:
        self._check_new_or_resumable()
        if not self.resume:
            mark_run_dir(self.run_dir)  # first: from here on this folder is a run directory, killed or not
        data_hash = dataset_hash(self.suite.dataset)
        self._files_hashed = len(dataset_files(self.suite.dataset))
        done = self._check_resume(data_hash) if self.resume else set()
        if self.resume:
            self._reset_input_errors()
        counter = _CaseCounter()
        content = ContentHash()  # the cases' identity for gate and compare (verifybench._util.identity)
        skipped = 0
        # On resume the case index is appended to, never rewritten: the cases it holds are the first ones
        # the (unchanged) data gives again, so a resume killed at any moment leaves an index that still
        # covers every verdict written (a rewrite from the start would be short of them until it caught up).
        indexed, last_indexed = self._indexed() if self.resume else (0, None)
        try:
            with self.executor:
                self._executor_info = self.executor.describe()
                self._manifest({}, data_hash, RUNNING).write(self.run_dir / MANIFEST)
                total = self._count() if self.progress else None
                with _Progress(self.verifiers, total, done, enabled=self.progress,
                               wall_rate=self.executor.wall_rate) as bar, \
                        JsonlAppender(self.run_dir / CASES, mode="a" if self.resume else "w") as index, \
                        JsonlAppender(self.run_dir / RESULTS) as results, \
                        JsonlAppender(self.run_dir / ERRORS) as errlog:

                    def indexed_batches() -> Iterator[list[Case]]:
                        # Every executor gets its batches through here, so the case index, the counts
                        # and the log of bad input records are written the same way for all of them.
                        nonlocal skipped
                        load_errors: list[RecordError] = []
                        position = 0  # cases of the stream before this batch
                        for batch in batched(iter_cases(self.suite.dataset, load_errors), self.suite.batch_size):
                            if not counter.n:
                                check_first_batch(self.verifiers, batch)  # a suite error, not a verdict per case
                            new = batch[max(0, indexed - position):]
                            if indexed and position < indexed <= position + len(batch) \
                                    and batch[indexed - position - 1].id != last_indexed:
                                raise RunDirError(
                                    f"{self.run_dir / CASES}: its case {indexed} is {last_indexed!r}, but the data "
                                    f"gives {batch[indexed - position - 1].id!r} there; start a new run")
                            position += len(batch)
                            index.write(case_index_row(c) for c in new)
                            counter.add(batch)
                            content.add(batch)
                            if load_errors:
                                skipped += len(load_errors)
                                errlog.write({"kind": "input", **e.to_dict()} for e in load_errors)
                                load_errors.clear()
                            yield batch
                        # Bad records after the last full batch.
                        if load_errors:
                            skipped += len(load_errors)
                            errlog.write({"kind": "input", **e.to_dict()} for e in load_errors)

                    new, failed = self._write_verdicts(self.executor.score(self.verifiers, indexed_batches(), done),
                                                       results, errlog, bar)
                if counter.n == 0:
                    raise DataError(self._no_cases(skipped))
        except BaseException as e:
            if isinstance(e, BadRecords):
                # on_error: raise stops the run, and every bad record found is in the error log too.
                with JsonlAppender(self.run_dir / ERRORS) as errlog:
                    errlog.write({"kind": "input", **r.to_dict()} for r in e.errors)
            reason = f"{type(e).__name__}: {e}"
            if isinstance(e, LinkRefused):
                reason = str(e.strerror)
            elif disk_error(e):
                reason = disk_message(e, "the disk is full, or a file size limit was reached")  # type: ignore[arg-type]
            # Everything appended so far stays; the manifest says why the run stopped.
            self._write_failed(self._manifest(counter.counts(), data_hash, FAILED, error=reason))
            if isinstance(e, LinkRefused):
                raise RunDirError(f"{self.run_dir}: {reason}") from None
            if disk_error(e):
                raise RunDirError(f"{self.run_dir}: {reason}. What was written is kept: free some space, then "
                                  f"finish the run with `verifybench run --resume {self.run_dir}`") from None
            raise
        counts = {**counter.counts(), "skipped_records": skipped, "content_hash": content.hexdigest()}
        self._manifest(counts, data_hash, SCORED).write(self.run_dir / MANIFEST)
        return RunResult(self.run_dir, counts["total"], new, failed, skipped, counts, list(self.notes))

    def _indexed(self) -> tuple[int, str | None]:
        """How many cases the index of a run being resumed holds (a line cut short by a kill is cut off
        first), and the id of its last one."""
        path = self.run_dir / CASES
        repair_tail(path)
        n, last = 0, None
        for raw in iter_lines(path):
            n, last = n + 1, raw
        return n, (json.loads(last).get("id") if last is not None else None)

    def _write_failed(self, manifest: Manifest) -> None:
        """The manifest of a run that stopped, saying why; on a disk too full for a temporary copy, written
        over the old one in place (its room is freed first). A manifest that cannot be written at all
        leaves the old one ("running"), which `--resume` and `report` handle as a killed run."""
        try:
            manifest.write(self.run_dir / MANIFEST)
        except OSError as e:
            if not disk_error(e):
                raise
            try:
                write_json_in_place(self.run_dir / MANIFEST, manifest.document())
            except OSError:
                pass

    def _no_cases(self, skipped: int) -> str:
        spec = self.suite.dataset
        where = spec.options.get("path") or spec.options.get("data_files") or spec.loader
        if skipped:
            return (f"no cases: every record of {where} was skipped ({skipped} bad record(s), listed in "
                    f"{self.run_dir / ERRORS}); fix them or the suite's `fields:` mapping")
        return f"no cases: {where} gave no records (an empty file, or `limit`/loader options that select nothing)"

    @staticmethod
    def _write_verdicts(scored: Iterable[Scored], results: JsonlAppender, errlog: JsonlAppender,
                        bar: _Progress) -> tuple[int, int]:
        """Append each scored batch once. A (verifier, batch) seen before is dropped: a cluster may run a
        task again after losing a worker, and a batch's verdicts always arrive together."""
        written: set[tuple[str, int]] = set()
        new = failed = 0
        for s in scored:
            if (s.verifier, s.batch) in written:
                continue
            written.add((s.verifier, s.batch))
            results.write(s.verdicts)
            bad = [v for v in s.verdicts if v.error is not None]
            if bad:
                errlog.write({"kind": "verdict", "verifier": v.verifier, "case_id": v.case_id,
                              "message": v.error} for v in bad)
            new += len(s.verdicts)
            failed += len(bad)
            bar.advance(s.verifier, len(s.verdicts), s.seconds)
        return new, failed


def check_installed(suite: Suite, verifiers: list[Verifier]) -> None:
    """Before a run writes anything: a `SuiteError` naming each verifier whose options need a module this
    installation lacks (an optional extra not installed), where the suite configures it, and the command
    that installs it. Without this check such a verifier would give every case an error verdict."""
    where = {e.id: i for i, e in enumerate(suite.verifiers)}
    lines = []
    for v in verifiers:
        absent = missing(v.requirements(v.options))
        if not absent:
            continue
        at = f"{suite.source or '<suite>'}: verifiers[{where[v.id]}]" if v.id in where else f"verifier {v.id!r}"
        modules = ", ".join(dict.fromkeys(r.module for r in absent))
        why = "; ".join(dict.fromkeys(r.why for r in absent))
        install = " and ".join(dict.fromkeys(r.install for r in absent))
        lines.append(f"{at}: verifier {v.id!r} ({v.name}, {why}) needs {modules}, not installed here: {install}")
    if lines:
        raise SuiteError("; ".join(lines) + ". Nothing was scored")


def check_first_batch(verifiers: list[Verifier], batch: list[Case]) -> None:
    """Before the first batch is scored: each verifier that can tell a misconfiguration from the cases
    themselves (`check_cases`, e.g. a `scores` field no case has) raises a `SuiteError` now, instead of
    giving every case of the run an error verdict."""
    for v in verifiers:
        check = getattr(v, "check_cases", None)
        if callable(check):
            check(batch)


class _CaseCounter:
    def __init__(self):
        self.doc, self.label, self.split, self.n = Counter(), Counter(), Counter(), 0

    def add(self, cases: Iterable[Case]) -> None:
        for c in cases:
            self.n += 1
            self.doc[c.doc_type] += 1
            self.label[label_name(c.label)] += 1
            self.split[c.split or "none"] += 1

    def counts(self) -> dict[str, Any]:
        return {"total": self.n, "by_doc_type": dict(self.doc), "by_label": dict(self.label),
                "by_split": dict(self.split)}


def count_cases(cases: Iterable[Case]) -> dict[str, Any]:
    counter = _CaseCounter()
    counter.add(cases)
    return counter.counts()


def count_cases_rows(rows: list[dict[str, Any]]) -> dict[str, Any]:
    doc: Counter[Any] = Counter()
    label: Counter[str] = Counter()
    split: Counter[Any] = Counter()
    for r in rows:
        doc[r["doc_type"]] += 1
        label[label_name(r["label"])] += 1
        split[r["split"] or "none"] += 1
    return {"total": len(rows), "by_doc_type": dict(doc), "by_label": dict(label), "by_split": dict(split)}


class _Progress:
    """One rich progress bar per verifier, with cases/s and ETA. Locally the rate is each verifier's own:
    cases over the time spent inside that verifier, not over wall time shared with the others. With
    `wall_rate` (verifiers scoring in parallel on a cluster) it is cases over wall time since the bar
    started: the throughput the cluster delivers for that verifier."""

    def __init__(self, verifiers: list[Verifier], total: int | None, done: set[tuple[str, str]], enabled: bool,
                 wall_rate: bool = False):
        self.enabled = enabled
        self.wall_rate = wall_rate
        self.started = time.perf_counter()
        self.tasks: dict[str, Any] = {}
        self.own: dict[str, tuple[int, float]] = {}
        if not enabled:
            return
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TaskProgressColumn,
            TextColumn,
            TimeRemainingColumn,
        )

        self.progress = Progress(
            TextColumn("{task.description:<18}"), BarColumn(), MofNCompleteColumn(), TaskProgressColumn(),
            TextColumn("{task.fields[rate]}"), TimeRemainingColumn(), transient=False,
        )
        for v in verifiers:
            already = sum(1 for vid, _ in done if vid == v.id)
            self.tasks[v.id] = self.progress.add_task(v.id, total=total, completed=already, rate="")

    def advance(self, verifier_id: str, n: int, seconds: float) -> None:
        if self.enabled:
            task_id = self.tasks[verifier_id]
            done, spent = self.own.get(verifier_id, (0, 0.0))
            spent = time.perf_counter() - self.started if self.wall_rate else spent + seconds
            self.own[verifier_id] = (done + n, spent)
            rate = (done + n) / spent if spent > 0 else 0.0
            self.progress.advance(task_id, n)
            self.progress.update(task_id, rate=f"{rate:,.0f} cases/s")

    def __enter__(self):
        if self.enabled:
            self.progress.start()
        return self

    def __exit__(self, *exc):
        if self.enabled:
            self.progress.stop()


def read_cues(path: Path, want_ids: Iterable[str] | None = None) -> pd.DataFrame | None:
    """The cached surface cues as a cue table (`id` and a column per cue, see `metrics.summary.cue_table`),
    or None when the cache cannot be trusted: missing, a line cut short or unreadable (a killed writer,
    a truncated copy), or short of a case the run has."""
    import pyarrow as pa
    import pyarrow.json as pj

    if not path.exists():
        return None
    if path.stat().st_size:
        with open(path, "rb") as f:
            f.seek(-1, os.SEEK_END)
            if f.read(1) != b"\n":
                return None  # the last line was cut short
    schema = pa.schema([("id", pa.string()), ("cues", pa.struct([(c, pa.float64()) for c in CUE_NAMES]))])
    cols = _CueColumns()
    for _, _, block in _blocks(path):
        try:
            t = pj.read_json(pa.py_buffer(block), parse_options=pj.ParseOptions(
                explicit_schema=schema, unexpected_field_behavior="ignore"))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            return None
        if t.column("id").null_count or t.column("cues").null_count:
            return None
        cues = t.column("cues").combine_chunks()
        cols.add_arrays(t.column("id").combine_chunks(),
                        {c: np.asarray(cues.field(c).to_numpy(zero_copy_only=False), dtype=float) for c in CUE_NAMES})
    table = cols.table()
    if want_ids is not None:
        want = want_ids if isinstance(want_ids, pd.Series) else pd.Series(list(want_ids), dtype="str")
        if len(want) and (not len(table) or (positions(want, table["id"]) < 0).any()):
            return None
    return table


def scan_dataset(suite: Suite, want_sources: set[str], run_dir: Path | None = None,
                 case_ids: Iterable[str] | None = None) -> tuple[pd.DataFrame, dict]:
    """One pass over a run's data after the run: the surface cues of every case (for the shortcut test;
    cached in the run directory as cues.jsonl) and the source texts of the cases the report shows.

    A cache that is truncated, unreadable or misses any of `case_ids` is rebuilt, not trusted. Done here
    rather than in the runner's loop because tokenising a long source costs more than a cheap verifier's
    whole check. The cues come back as a cue table (no dict per case); with the cache good, the pass
    stops as soon as every wanted source is found.
    """
    cache = run_dir / CUES if run_dir else None
    cues = read_cues(cache, case_ids) if cache else None
    need_cues = cues is None or not len(cues)
    sources: dict[str, list[dict]] = {}
    if not need_cues and not want_sources:
        return cues, sources
    cols = _CueColumns()
    lenient = suite.dataset.model_copy(update={"on_error": "skip"})
    tmp = temp_path(cache) if cache else None
    out = JsonlAppender(tmp, mode="x") if need_cues and tmp else None
    try:
        batch = []
        for case in iter_cases(lenient, []):
            if need_cues:
                c = surface_cues(case.response, [s.text for s in case.sources])
                cols.add(case.id, c)
                if out is not None:
                    batch.append({"id": case.id, "cues": c})
                    if len(batch) >= 4096:
                        out.write(batch)
                        batch = []
            if case.id in want_sources:
                sources[case.id] = [{"id": s.id, "text": s.text} for s in case.sources]
                if not need_cues and len(sources) == len(want_sources):
                    break
        if out is not None:
            assert tmp is not None and cache is not None  # a writer exists only with both
            out.write(batch)
            out.close()
            replace_atomically(tmp, cache)
            out = None
    finally:
        if out is not None and tmp is not None:
            out.close()
            tmp.unlink(missing_ok=True)
    return (cols.table() if need_cues else cues), sources


class _CueColumns:
    """Cues collected into arrays a chunk at a time: a million cases, no Python float each."""

    def __init__(self):
        self.ids: list = []
        self.values: dict[str, list] = {c: [] for c in CUE_NAMES}
        self._ids: list[str] = []
        self._values: dict[str, list] = {c: [] for c in CUE_NAMES}

    def add(self, case_id: str, cues: dict[str, float]) -> None:
        self._ids.append(case_id)
        for k, col in self._values.items():
            col.append(cues.get(k))
        if len(self._ids) >= 65536:
            self._pack()

    def add_arrays(self, ids, values: dict[str, np.ndarray]) -> None:
        self._pack()
        self.ids.append(ids)
        for k, v in values.items():
            self.values[k].append(v)

    def _pack(self) -> None:
        import pyarrow as pa

        if self._ids:
            self.ids.append(pa.array(self._ids, pa.large_string()))
            for k, col in self._values.items():
                self.values[k].append(np.array([np.nan if x is None else x for x in col], dtype=float))
                col.clear()
            self._ids = []

    def table(self) -> pd.DataFrame:
        from verifybench.tables import strings_column

        self._pack()
        t = pd.DataFrame({"id": strings_column(self.ids),
                          **{k: np.concatenate(v) if v else np.empty(0) for k, v in self.values.items()}}, copy=False)
        dup = t["id"].duplicated(keep="last")  # a case listed twice keeps its last cues, as a dict would
        return t[~dup.to_numpy()].reset_index(drop=True) if dup.any() else t


def resume_suite(run_dir: Path, data_dir: Path | str | None = None) -> Suite:
    """The suite a run directory was started with, re-resolved so the run can continue."""
    run_dir = Path(run_dir)
    s = Manifest.read(run_dir / MANIFEST).suite
    base, path = Path(s.base_dir or run_dir), s.path or "<suite>"
    kept = run_dir / "suite.yaml"  # verifybench.pipeline.inline.SUITE
    inline = (s.raw.get("dataset") or {}).get("loader") == "records" and Path(path) == base / kept.name
    if inline and kept.exists() and run_dir.resolve() != base.resolve():
        # A suite kept in the run directory (a run over cases given in Python) points at data beside it:
        # read it from where the run directory is now, so a moved or copied run still resumes and reports.
        base, path = run_dir.resolve(), str(kept)
    return parse_suite(s.raw, base, data_dir or s.data_dir, path)
