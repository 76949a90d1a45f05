"""A window of production traffic, from a guard's decision log or from a run directory of unlabeled
(or labeled) cases: per case its id, doc type, texts, and each check's score, threshold and flag.

The decision log is a directory of JSONL files `decisions-<pid>-<seq>.jsonl`, one record per checked
answer (`formats.decision.DecisionRecord`: the case schema plus the decision). A last line cut short (a
writer killed mid-line) is skipped and reported; a bad line anywhere else is an error naming the file,
the line and the key. (The `guardlog` loader reads the same files, through the same reader and model,
as cases; this reader keeps the decisions as columns.)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from verifybench.errors import RecordError, VerifybenchError
from verifybench.feedback.runs import RunTable
from verifybench.formats.decision import DecisionRecord
from verifybench.loaders.guardlog import PATTERN
from verifybench.metrics.settings import OVERALL
from verifybench.rundir import CASES, MANIFEST

LOG_GLOB = PATTERN


class LogError(VerifybenchError):
    pass


@dataclass
class Window:
    """Production cases as columns. `scores[v]` is NaN where check `v` failed or did not run;
    `thresholds[v]` the threshold applied to each case (NaN where none)."""

    source: str
    kind: str  # "log" | "run"
    ids: np.ndarray  # object
    doc_type: np.ndarray  # object (str)
    scores: dict[str, np.ndarray]
    thresholds: dict[str, np.ndarray]
    action: np.ndarray  # object: the guard's action, or flagged / allowed for a run
    label: np.ndarray | None = None  # a run's labels, when it has them
    records: list[DecisionRecord] | None = None  # a log's records (texts), in order
    run: RunTable | None = None
    skipped: list[str] = field(default_factory=list)  # torn lines, reported
    configs: dict[str, str | None] = field(default_factory=dict)  # check -> config hash, where recorded (a run)
    policy_hash: np.ndarray | None = None  # a log's: per case, the hash of the policy it was decided under

    def __len__(self) -> int:
        return len(self.ids)

    def subset(self, keep: np.ndarray) -> Window:
        """The cases where `keep` holds (a log's: its records too)."""
        rows = np.flatnonzero(keep)
        return Window(source=self.source, kind=self.kind, ids=self.ids[rows], doc_type=self.doc_type[rows],
                      scores={v: s[rows] for v, s in self.scores.items()},
                      thresholds={v: t[rows] for v, t in self.thresholds.items()}, action=self.action[rows],
                      label=None if self.label is None else self.label[rows],
                      records=None if self.records is None else [self.records[i] for i in rows.tolist()],
                      run=self.run if len(rows) == len(self) else None, skipped=list(self.skipped),
                      configs=dict(self.configs),
                      policy_hash=None if self.policy_hash is None else self.policy_hash[rows])

    def flagged(self, vid: str) -> np.ndarray:
        s, t = self.scores[vid], self.thresholds[vid]
        return ~np.isnan(s) & ~np.isnan(t) & (np.where(np.isnan(s), -np.inf, s) >= t)

    def texts(self, rows: np.ndarray) -> list[dict[str, Any]]:
        """The case fields a reviewer needs (question, sources, response, meta) for `rows`."""
        if self.records is not None:
            return [self.records[int(i)].model_dump(exclude={"kind", "format", "written_by"}) for i in rows]
        assert self.run is not None
        return _run_texts(self.run, rows)


def read_log(log_dir: str | Path) -> tuple[list[DecisionRecord], list[str]]:
    """Every decision record of a log directory (the `guardlog` loader's reader and model: files by pid
    and sequence, lines in file order), and the torn last lines skipped, as 'file:line: why'."""
    from verifybench.loaders.guardlog import TornLines, iter_log

    d = Path(log_dir)
    if not d.is_dir():
        raise LogError(f"{d}: not a guard log directory")
    if not any(d.glob(LOG_GLOB)):
        raise LogError(f"{d}: no decision log files ({LOG_GLOB}) in it")
    torn = TornLines()
    records = []
    for item in iter_log(d, torn):
        if isinstance(item, RecordError):
            raise LogError(str(item)) from None
        records.append(item[1])
    named = (f"{Path(file).name}:{line}" for file, line in (w.rsplit(":", 1) for w in torn.where))
    return records, [f"{where}: a torn last line (no newline: a writer killed mid-write), skipped" for where in named]


def from_log(log_dir: str | Path) -> Window:
    """A log directory as a window; a case id logged more than once (a retried request) keeps its last
    record, and the repeats are reported with the torn lines."""
    records, skipped = read_log(log_dir)
    last = {r.id: i for i, r in enumerate(records)}
    if len(last) != len(records):
        skipped.append(f"{len(records) - len(last)} records repeat an earlier case id: the last record of each id kept")
        keep = sorted(last.values())
        records = [records[i] for i in keep]
    n = len(records)
    vids = list(dict.fromkeys(c.verifier for r in records for c in r.decision.checks))
    scores = {v: np.full(n, np.nan) for v in vids}
    thresholds = {v: np.full(n, np.nan) for v in vids}
    for i, r in enumerate(records):
        for c in r.decision.checks:
            if c.score is not None and not c.error:
                scores[c.verifier][i] = c.score
            if c.threshold is not None:
                thresholds[c.verifier][i] = c.threshold
    return Window(source=str(log_dir), kind="log", ids=np.array([r.id for r in records], dtype=object),
                  doc_type=np.array([r.doc_type or "none" for r in records], dtype=object),
                  scores=scores, thresholds=thresholds,
                  action=np.array([r.decision.action or "" for r in records], dtype=object),
                  records=records, skipped=skipped,
                  policy_hash=np.array([str(r.decision.policy_hash) for r in records], dtype=object))


def run_thresholds(t: RunTable) -> dict[str, np.ndarray]:
    """Each case's threshold per check, as the run's metrics.json (or its policy) applies it: the case's
    slice's own, else the whole set's."""
    metrics = t.run.metrics_model() if t.run.has_metrics() else None
    out = {}
    for vid in t.checks:
        m = metrics.verifiers.get(vid) if metrics is not None else None
        if m is None:
            thr = t.threshold(vid)["value"]
            out[vid] = np.full(len(t.label), np.nan if thr is None else thr)
            continue
        whole = m.overall.threshold.value
        per = [sm.threshold.value if (sm := m.slices.get(k)) is not None else None for k in t.slices] + [None]
        out[vid] = np.array([np.nan if v is None else float(v) for v in (whole if v is None else v for v in per)])[
            t.slice]  # slice -1 (none) takes the last entry: the whole set's
    return out


def from_run(run_dir: str | Path) -> Window:
    t = RunTable.open(run_dir)
    thresholds = run_thresholds(t)
    flags = [(~np.isnan(c.score)) & (np.where(np.isnan(c.score), -np.inf, c.score) >= thresholds[v])
             for v, c in t.checks.items()]
    any_flag = np.any(np.vstack(flags), axis=0) if flags else np.zeros(len(t.label), bool)
    return Window(source=str(run_dir), kind="run", ids=np.asarray(t.case_id.to_numpy(), dtype=object),
                  doc_type=np.asarray(t.doc_types, dtype=object)[t.doc_type],
                  scores={v: c.score for v, c in t.checks.items()}, thresholds=thresholds,
                  action=np.where(any_flag, "flagged", "allowed").astype(object), label=t.label, run=t,
                  configs={v: c.config_hash for v, c in t.checks.items()})


def open_source(source: str | Path) -> Window:
    """A guard log directory or a run directory, as a `Window`."""
    p = Path(source)
    if (p / MANIFEST).exists() and (p / CASES).exists():
        return from_run(p)
    if p.is_dir() and any(p.glob(LOG_GLOB)):
        return from_log(p)
    raise VerifybenchError(f"{p}: neither a run directory (manifest.json, cases.jsonl) nor a guard log "
                           f"directory ({LOG_GLOB})")


def _run_texts(t: RunTable, rows: np.ndarray) -> list[dict[str, Any]]:
    """Case-index rows (question, clipped response, meta) of a run, with their sources read back from the
    run's dataset when it can be read (else empty, and said so in `sources_note`)."""
    rows_ = t.run.cases_at(rows)  # the case table the run table was built from: not read again
    want = {r["id"] for r in rows_}
    sources: dict[str, list[dict[str, Any]]] = {}
    note = None
    try:
        from verifybench.loaders import iter_cases
        from verifybench.pipeline.runner import resume_suite

        suite = resume_suite(t.run_dir)
        lenient = suite.dataset.model_copy(update={"on_error": "skip"})
        full: dict[str, str] = {}
        for case in iter_cases(lenient, []):
            if case.id in want:
                sources[case.id] = [{"id": s.id, "text": s.text} for s in case.sources]
                full[case.id] = case.response
                if len(sources) == len(want):
                    break
        for r in rows_:
            if r["id"] in full:
                r["response"] = full[r["id"]]  # the index clips it
    except VerifybenchError as e:
        note = f"the run's dataset could not be read back ({e}): sources left empty"
    out = []
    for r in rows_:
        out.append({**r, "sources": sources.get(r["id"], []), **({"sources_note": note} if note else {})})
    return out


__all__ = ["OVERALL", "LogError", "Window", "from_log", "from_run", "open_source", "read_log"]
