"""Label queues: which production cases to send to reviewers, as a CSV with an empty label column and a
suite file beside it that reads the CSV back once labeled (run -> thresholds -> gate, unedited).

Strategies pick most of the budget; a seeded random share is always mixed in:
- `uncertain`: the cases closest to a threshold, each check's distance measured in its own score
  quantiles (|F(score) - F(threshold)|, F the check's empirical distribution over the window), so
  checks on different scales compare; the threshold is each case's own slice's;
- `stratified`: equal numbers from every (doc type, decision) stratum, so every slice gets cases the
  guard flagged and cases it let through (the best proxy of both classes before labels exist);
- `disagree`: cases where the checks disagree, closest to a threshold first (then the most uncertain).

Why a random share, and the weights: a targeted queue over-represents hard cases, so precision, recall
or the hallucination rate computed from it describe the hard cases, not production. Every row carries
its inclusion probability and weight = 1 / probability, under the design actually run: for `stratified`
(and plain random), each stratum is a simple random sample of its cases, weight = stratum size / cases
taken; for `uncertain` and `disagree`, every case ranked at or above the last targeted pick was taken
(probability 1), and the cases below it are represented by the random share alone (weight = cases below /
random picks below). Weighted estimates (`estimate`) are then unbiased for the whole window, the
unweighted ones beside them describe the queue.

The CSV's split column is drawn from a hash of the case id, not at random: a case keeps its side when
the labeled set grows week after week, so a threshold is never refitted on a case an earlier gate
tested on.
"""

from __future__ import annotations

import csv
import functools
import hashlib
import json
import math
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypedDict

import numpy as np
import yaml

from verifybench._util.safeio import replace_atomically, temp_path
from verifybench.errors import DataError, Location, RecordError, VerifybenchError
from verifybench.feedback.window import Window, open_source
from verifybench.formats.labelqueue import QueueRecord, Round
from verifybench.loaders.fields import FieldSpec, MissingLabel
from verifybench.loaders.labelqueue import (
    FORMULA_START,
    QUEUE_COLUMN,
    is_legacy,
    legacy_note,
    neutralise,
    read_entries,
    read_header,
    read_record,
    read_rows,
    record_path,
    write_record,
)

STRATEGIES = ("uncertain", "stratified", "disagree")
REVIEW_FIELDS = ["label", "reviewer", "reviewed_at", "review_note"]
SHARE_CALIBRATION = 0.5
_LABELS = FieldSpec()  # the default label words: hallucinated/faithful, 1/0, yes/no, true/false


def id_split(case_id: str) -> str:
    """calibration or test, from a hash of the id (stable as the labeled set grows)."""
    return "calibration" if hashlib.sha256(case_id.encode()).digest()[0] < 128 else "test"


def _quantile_margin(w: Window) -> np.ndarray:
    """Per case, the smallest distance of a check's score from that case's threshold, in the check's
    score quantiles over the window; inf where no check has both."""
    best = np.full(len(w), np.inf)
    for v, s in w.scores.items():
        thr = w.thresholds[v]
        ok = ~np.isnan(s) & ~np.isnan(thr)
        if not ok.any():
            continue
        ref = np.sort(s[~np.isnan(s)])
        f_s = np.searchsorted(ref, s[ok], side="right") / len(ref)
        f_t = np.searchsorted(ref, thr[ok], side="right") / len(ref)
        m = np.full(len(w), np.inf)
        m[ok] = np.abs(f_s - f_t)
        best = np.minimum(best, m)
    return best


def _disagreement(w: Window) -> np.ndarray:
    flags = [np.where(np.isnan(w.scores[v]) | np.isnan(w.thresholds[v]), np.nan, w.flagged(v).astype(float))
             for v in w.scores]
    if len(flags) < 2:
        raise VerifybenchError(f"--strategy disagree needs two checks or more; {w.source} has "
                               f"{', '.join(w.scores) or 'none'}")
    f = np.vstack(flags)
    return (np.nanmax(f, axis=0) == 1) & (np.nanmin(f, axis=0) == 0)


def _water_fill(sizes: np.ndarray, k: int) -> np.ndarray:
    """k picks spread as evenly as possible over strata of these sizes (none takes more than it has)."""
    take = np.zeros(len(sizes), int)
    left = k
    while left > 0:
        room = sizes - take
        open_ = np.flatnonzero(room > 0)
        if not len(open_):
            break
        each = max(1, left // len(open_))
        for i in open_:
            add = min(each, room[i], left)
            take[i] += add
            left -= add
            if not left:
                break
    return take


def select(w: Window, pool: np.ndarray, budget: int, strategy: str, seed: int, random_share: float
           ) -> dict[str, np.ndarray]:
    """Rows of `w` to label, among `pool` (row indices): `rows`, `part` (random or the strategy),
    `stratum`, `inclusion_prob` and `weight` per picked row."""
    if strategy not in STRATEGIES:
        raise VerifybenchError(f"--strategy {strategy!r}: expected one of {', '.join(STRATEGIES)}")
    if not 0 <= random_share <= 1:
        raise VerifybenchError(f"--random-share {random_share}: expected a share between 0 and 1")
    m = len(pool)
    if budget < 1:
        raise VerifybenchError(f"--budget {budget}: expected at least 1")
    if budget > m:
        raise VerifybenchError(f"--budget {budget}: only {m} unlabeled cases in {w.source}")
    rng = np.random.default_rng(seed)
    n_rand = min(budget, max(1 if random_share > 0 else 0, round(budget * random_share)))
    n_target = budget - n_rand
    is_rand = np.zeros(m, bool)
    is_rand[rng.choice(m, n_rand, replace=False)] = True
    tie = rng.random(m)
    picked = is_rand.copy()
    prob = np.zeros(m)
    stratum = np.full(m, "", dtype=object)
    if strategy == "stratified":
        names = np.array([f"{d} / {a}" for d, a in zip(w.doc_type[pool], w.action[pool])], dtype=object)
        keys, code = np.unique(names, return_inverse=True)
        rest = ~is_rand
        take = _water_fill(np.bincount(code[rest], minlength=len(keys)), n_target)
        for k in range(len(keys)):
            cand = np.flatnonzero(rest & (code == k))
            chosen = cand[np.argsort(tie[cand])[:take[k]]]
            picked[chosen] = True
        size, got = np.bincount(code, minlength=len(keys)), np.bincount(code[picked], minlength=len(keys))
        prob = got[code] / size[code]
        stratum = names
    else:
        if strategy == "disagree":
            dis = _disagreement(w)[pool]
            margin = np.where(dis, 0.0, 1.0) + np.minimum(_quantile_margin(w)[pool], 1.0)
        else:
            margin = _quantile_margin(w)[pool]
        order = np.lexsort((tie, margin))  # closest first, seeded ties
        rank = np.empty(m, int)
        rank[order] = np.arange(m)
        targets = order[~is_rand[order]][:n_target]
        picked[targets] = True
        cutoff = int(rank[targets].max()) if len(targets) else -1
        certain = rank <= cutoff
        below = ~certain
        n_below = int(below.sum())
        r_below = int((is_rand & below).sum())
        prob = np.where(certain, 1.0, r_below / n_below if n_below else 1.0)
        stratum = np.where(certain, f"{strategy}: ranked <= {cutoff + 1}", f"{strategy}: ranked below").astype(object)
    rows = np.flatnonzero(picked)
    p = prob[rows]
    return {"rows": pool[rows], "part": np.where(is_rand[rows], "random", strategy).astype(object),
            "stratum": stratum[rows], "inclusion_prob": p, "weight": np.where(p > 0, 1 / np.where(p > 0, p, 1), np.nan)}


def parse_label(value: Any) -> bool | None:
    """True (hallucinated), False (faithful), or None for an empty cell; a value that is neither is an
    error (the caller names the file and row)."""
    return None if value is None else _label_of(str(value).strip())


@functools.lru_cache(maxsize=256)  # a queue holds a handful of label spellings, read once each
def _label_of(text: str) -> bool | None:
    if not text:
        return None
    try:
        return _LABELS.label_of(text)
    except MissingLabel:
        return None


def records_for(files: Sequence[str | Path], queues: Sequence[str | Path] | None = None
                ) -> tuple[list[Path], set[Path]]:
    """The queue records that say which ids were queued: the one beside each file, and those given; and
    the files of the format before queue records (0.1: no record, no `queue` column), whose rows are
    read as queued, unchecked. Any other file with no record beside it needs `queues` (a CSV renamed)."""
    found = [Path(q) for q in queues or []]
    legacy: set[Path] = set()
    for path in files:
        beside = record_path(path)
        if beside.exists():
            found.append(beside)
        elif queues:
            continue
        elif is_legacy(path):
            legacy.add(Path(path))
        else:
            raise VerifybenchError(f"{path}: no queue record beside it ({beside.name}, written by label-queue), so "
                                   "nothing says which of its ids were queued; name the queue records its rows "
                                   "come from with --queue")
    return list(dict.fromkeys(found)), legacy


def known_ids(records: list[Path]) -> set[str]:
    try:
        return {cid for r in records for cid in read_record(r)}
    except DataError as e:
        raise VerifybenchError(str(e)) from None


def iter_labeled(path: str | Path) -> Iterator[tuple[Location, dict[str, str], bool | None]]:
    """A labeled queue's rows, streamed, each with its place (`file:line`) and label (None: empty): cells
    restored, a byte-order mark read, the id column and every label checked (an error names the file,
    line and field)."""
    path = Path(path)
    if not path.is_file():
        raise VerifybenchError(f"{path}: no such labeled file")
    try:
        for rec in read_rows(path):
            if isinstance(rec, RecordError):
                raise VerifybenchError(str(rec))
            if "id" not in rec.data:
                raise VerifybenchError(f"{path}: no 'id' column (columns: {', '.join(rec.data)}); is it a label queue?")
            try:
                label = parse_label(rec.data.get("label"))
            except ValueError as e:
                raise VerifybenchError(f"{rec.loc}: field 'label': {e}") from None
            yield rec.loc, rec.data, label
    except DataError as e:
        raise VerifybenchError(str(e)) from None


def read_labeled(path: str | Path, known: set[str], left_out: list[NotQueued], legacy: bool = False
                 ) -> list[dict[str, str]]:
    """A labeled queue's rows whose id some queue record names (every row of a `legacy` file); the others
    appended to `left_out` (id and place), never used."""
    rows = []
    for where, r, _ in iter_labeled(path):
        if legacy or r["id"] in known:
            rows.append(r)
        else:
            left_out.append(NotQueued(id=r["id"], where=str(where)))
    return rows


def _evidence(w: Window, row: int, text: dict[str, Any]) -> dict[str, Any]:
    ev: dict[str, Any] = {}
    for v in w.scores:
        s, t = w.scores[v][row], w.thresholds[v][row]
        ev[v] = {"score": None if np.isnan(s) else float(s), "threshold": None if np.isnan(t) else float(t),
                 "flagged": None if np.isnan(s) or np.isnan(t) else bool(s >= t)}
    if w.records is not None:
        for c in text.get("decision", {}).get("checks", []):
            e = ev.setdefault(c["verifier"], {})
            for k in ("threshold_source", "error"):
                if c.get(k) is not None:
                    e[k] = c[k]
    return ev


def _sources(value: Any) -> list[dict[str, Any]]:
    out = []
    for i, s in enumerate(value or []):
        out.append({"id": f"s{i}", "text": s} if isinstance(s, str) else
                   {"id": str(s.get("id", f"s{i}")), "text": s.get("text", "")})
    return out


def _suite_verifiers(w: Window, verifiers_from: str | Path | None) -> list[Any]:
    """The generated suite's verifiers: the run's own configurations, or for a log, the checks' ids where
    they are verifier names (or the verifiers of the suite / run given in `verifiers_from`)."""
    from verifybench.verifiers import available, get_verifier_class

    manifest = None
    if verifiers_from is not None:
        p = Path(verifiers_from)
        if (p / "manifest.json").exists():
            manifest = json.loads((p / "manifest.json").read_text(encoding="utf-8"))
        else:
            try:
                doc = yaml.safe_load(p.read_text(encoding="utf-8"))
            except (OSError, yaml.YAMLError) as e:
                raise VerifybenchError(f"--verifiers-from {p}: cannot read it ({e})") from None
            if not isinstance(doc, dict) or not isinstance(doc.get("verifiers"), list):
                raise VerifybenchError(f"--verifiers-from {p}: not a suite file (no 'verifiers:' list)")
            return doc["verifiers"]
    elif w.run is not None:
        manifest = w.run.run.doc
    if manifest is not None:
        out = []
        for v in manifest["verifiers"]:
            cfg = dict(v.get("config") or {})
            name = cfg.pop("name", v.get("name"))
            try:
                fields = get_verifier_class(name).Options.model_fields
                cfg = {k: val for k, val in cfg.items() if k in fields}
            except VerifybenchError:
                pass
            out.append({name: {"id": v["id"], **cfg}} if cfg or v["id"] != name else name)
        return out
    known = available()
    unknown = [v for v in w.scores if v not in known and v not in FILTER_CHECKS]
    if unknown:
        raise VerifybenchError(f"the log's checks {', '.join(unknown)} are not verifier names; give the suite the "
                               "guard was built from with --verifiers-from SUITE.yaml")
    return [FILTER_CHECKS.get(v, v) for v in w.scores if FILTER_CHECKS.get(v, v) is not None]


# A context filter's log (guard.context_filter): one record per unit, the unit as the response. What the
# labeled units are read back with: the decision verifier asking the same question of the unit; relevance
# and citation support need the call's other units or the cited text's pairing, so they stay columns only.
FILTER_CHECKS: dict[str, Any] = {
    "filter.instructions": {"decision": {"id": "filter.instructions", "question": "injection", "response_as_unit": True}},
    "filter.contradiction": {"decision": {"id": "filter.contradiction", "question": "contradiction",
                                          "response_as_unit": True}},
    "filter.irrelevance": None, "filter.citation": None}


class ClassCounts(TypedDict):
    hallucinated: int
    faithful: int


class DocTypeNeeds(TypedDict):
    """A doc type's labeled cases on the calibration side, what a threshold of its own still needs, and
    what this queue adds (flagged: the guard's decision, the likely class)."""

    calibration_labeled: ClassCounts
    more_hallucinated: int
    more_faithful: int
    queued: int
    queued_flagged: int


class NotQueued(TypedDict):
    """A labeled row whose id no queue record names (left out), and where it is (file:line)."""

    id: str
    where: str


class QueueReport(TypedDict):
    """What `label_queue` wrote and picked (`verifybench label-queue`)."""

    csv: str
    suite: str
    queue: str
    source: str
    kind: str
    window_cases: int
    already_labeled: int
    pool: int
    budget: int
    strategy: str
    seed: int
    random_share: float
    parts: dict[str, int]
    strata: dict[str, int]
    needs: dict[str, DocTypeNeeds]
    skipped_log_lines: list[str]
    not_queued: list[NotQueued]
    notes: list[str]  # a label queue of an older verifybench, read without its record


class Conflict(TypedDict):
    id: str
    labels: str  # each file's label, "a.csv: hallucinated; b.csv: faithful"


class MergeReport(TypedDict):
    """What `label_merge` wrote (`verifybench label-merge`)."""

    csv: str
    queue: str
    rows: int
    labeled: int
    conflicts: list[Conflict]
    not_queued: list[NotQueued]
    notes: list[str]


class Both(TypedDict):
    weighted: float | None  # by design: an estimate for the union of the rounds' windows
    ci: list[float] | None  # its interval (`Estimates.interval`)
    unweighted: float | None  # over the labeled rows themselves


class CheckEstimate(TypedDict, total=False):
    flag_rate: Both
    precision: Both
    recall: Both
    refused: str  # why the check's figures cannot be pooled across rounds (then none of the above)


class Estimates(TypedDict):
    """What `label_estimate` measured from a labeled queue (`verifybench label-estimate`)."""

    rows: int
    labeled: int
    unlabeled_left_out: int
    window_cases_represented: float  # the cases of the rounds' windows the weights stand for
    interval: float  # each `ci`'s level
    rounds: dict[str, Any]  # per round: rows, labeled, weight
    hallucination_rate: Both
    checks: dict[str, CheckEstimate]
    not_queued: list[NotQueued]
    notes: list[str]


def _jsonable_text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def label_queue(source: str | Path, budget: int, out: str | Path, strategy: str = "uncertain", seed: int = 0,
                random_share: float = 0.2, labeled: Sequence[str | Path] | None = None,
                min_per_class: int = 30, verifiers_from: str | Path | None = None,
                queues: Sequence[str | Path] | None = None) -> QueueReport:
    """Write `out` (a CSV of `budget` distinct cases to label), its queue record and a suite file beside
    it; return a report: the picks by part and stratum, per doc type what the labeled set holds and still
    needs, torn log lines skipped, and the rows of `labeled` files whose id no queue record names (left
    out). `queues`: queue records for `labeled` files with none beside them."""
    w = open_source(source)
    out = Path(out)
    done: dict[str, bool | None] = {}
    left_out: list[NotQueued] = []
    records, legacy = records_for(labeled or [], queues) if labeled else ([], set())
    known = known_ids(records)
    for path in labeled or []:
        for r in read_labeled(path, known, left_out, Path(path) in legacy):
            lab = parse_label(r.get("label"))
            if lab is not None or r["id"] not in done:
                done[r["id"]] = lab
    pool = np.flatnonzero(~np.isin(w.ids, np.array(list(done), dtype=object)))
    sel = select(w, pool, budget, strategy, seed, random_share)
    rows = sel["rows"]
    texts = w.texts(rows)
    vids = list(w.scores)
    header = ["id", *REVIEW_FIELDS, "doc_type", "question", "response", "sources", "evidence", "action",
              *(f"score:{v}" for v in vids), *(f"flagged:{v}" for v in vids), "part", "stratum", "inclusion_prob",
              "weight", "split", "case_meta", "window", QUEUE_COLUMN]

    def lines() -> Iterator[dict[str, Any]]:
        for k, (row, text) in enumerate(zip(rows.tolist(), texts)):
            cid = str(w.ids[row])
            ev = _evidence(w, row, text)
            yield {
                "id": cid, **{k_: "" for k_ in REVIEW_FIELDS}, "doc_type": w.doc_type[row],
                "question": text.get("question") or "", "response": text.get("response") or "",
                "sources": _jsonable_text(_sources(text.get("sources"))), "evidence": _jsonable_text(ev),
                "action": w.action[row],
                **{f"score:{v}": "" if ev[v]["score"] is None else repr(ev[v]["score"]) for v in vids},
                **{f"flagged:{v}": "" if ev[v]["flagged"] is None else int(ev[v]["flagged"]) for v in vids},
                "part": sel["part"][k], "stratum": sel["stratum"][k],
                "inclusion_prob": repr(float(sel["inclusion_prob"][k])), "weight": repr(float(sel["weight"][k])),
                "split": id_split(cid), "case_meta": _jsonable_text(text.get("meta") or {}), "window": w.source,
                QUEUE_COLUMN: record_path(out).name,
            }

    out.parent.mkdir(parents=True, exist_ok=True)
    write_csv(out, header, lines())
    created = _now()
    round_id = f"{out.stem}@{created}"
    entries = ({"id": str(w.ids[r]), "round": round_id, "stratum": str(sel["stratum"][k]),
                "inclusion_prob": float(sel["inclusion_prob"][k])} for k, r in enumerate(rows.tolist()))
    holds = sorted(set(done) & set(w.ids.tolist()))  # earlier rounds' cases this window holds
    record = write_record(record_path(out), entries, csv=out.name, source=w.source, strategy=strategy, seed=seed,
                          budget=budget, created=created, round=round_id, window_holds=holds or None)
    suite_path = write_suite(out, _suite_verifiers(w, verifiers_from), min_per_class)
    needs = slice_needs(w, rows, done, min_per_class)
    parts = {p: int((sel["part"] == p).sum()) for p in dict.fromkeys(sel["part"].tolist())}
    return QueueReport(csv=str(out), suite=str(suite_path), queue=str(record), source=w.source, kind=w.kind,
                       window_cases=len(w), already_labeled=len(done), pool=int(len(pool)), budget=budget,
                       strategy=strategy, seed=seed, random_share=random_share, parts=parts,
                       strata={s: int((sel["stratum"] == s).sum()) for s in dict.fromkeys(sel["stratum"].tolist())},
                       needs=needs, skipped_log_lines=w.skipped, not_queued=left_out,
                       notes=[legacy_note(p) for p in sorted(legacy)])


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def write_csv(path: Path, header: list[str], rows: Iterator[dict[str, Any]]) -> None:
    """A CSV for people, streamed and written by rename: every text cell neutralised for spreadsheets
    (`loaders.labelqueue.neutralise`), the header too."""
    tmp = temp_path(path)
    try:
        with open(tmp, "x", newline="", encoding="utf-8") as f:  # a new file: never through a planted link
            wr = csv.writer(f)
            wr.writerow([neutralise(h) for h in header])
            for r in rows:
                wr.writerow([v if v.__class__ is str and not v.startswith(FORMULA_START) else neutralise(v)
                             for v in (r.get(h, "") for h in header)])
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    replace_atomically(tmp, path)


def slice_needs(w: Window, rows: np.ndarray, done: dict[str, bool | None], min_per_class: int
                ) -> dict[str, DocTypeNeeds]:
    """Per doc type: labeled cases of each class already held on the calibration side (ids hashed as the
    CSV's split column), how many more of each a threshold of its own needs (a new case lands on the
    calibration side with probability 1/2, as `describe` counts it), and what this queue adds, by the
    guard's decision (flagged or not: the likely class, before a reviewer says)."""
    doc_of = dict(zip(w.ids.tolist(), w.doc_type.tolist()))
    out: dict[str, ClassCounts] = {}
    for cid, lab in done.items():
        d = doc_of.get(cid)
        if d is None or lab is None or id_split(cid) != "calibration":
            continue
        e = out.setdefault(d, {"hallucinated": 0, "faithful": 0})
        e["hallucinated" if lab else "faithful"] += 1
    res: dict[str, DocTypeNeeds] = {}
    flagged = np.isin(w.action, ["flagged", "flag", "blocked", "block", "rewritten", "strip", "escalate", "escalated"])
    for d in sorted(set(w.doc_type.tolist())):
        have = out.get(d, ClassCounts(hallucinated=0, faithful=0))
        sel = rows[w.doc_type[rows] == d]
        res[d] = {"calibration_labeled": have,
                  "more_hallucinated": math.ceil(max(0, min_per_class - have["hallucinated"]) / SHARE_CALIBRATION),
                  "more_faithful": math.ceil(max(0, min_per_class - have["faithful"]) / SHARE_CALIBRATION),
                  "queued": int(len(sel)), "queued_flagged": int(flagged[sel].sum())}
    return res


def write_suite(csv_path: Path, verifiers: list[Any], min_per_class: int = 30) -> Path:
    """The suite beside the CSV that reads it back (`loader: label-queue`: cells restored): rows whose label
    is still empty, and rows whose id the queue record does not name, are skipped (and counted as skipped
    records), the rest run as any suite does."""
    name = csv_path.stem
    doc = {
        "name": name,
        "description": f"label queue {csv_path.name}, read back once labeled (written by verifybench label-queue)",
        "dataset": {"loader": "label-queue", "path": f"./{csv_path.name}", "queue": f"./{record_path(csv_path).name}",
                    "name": name, "on_error": "skip",
                    "require_labels": True,
                    "fields": {"id": "id", "response": "response", "sources": "sources", "question": "question",
                               "label": "label", "doc_type": "doc_type", "split": "split",
                               "meta": ["part", "stratum", "weight", "inclusion_prob", "action", "reviewer"]}},
        "verifiers": verifiers,
        "metrics": {"by": "doc_type", "min_per_class": min_per_class},
    }
    path = csv_path.with_suffix(".yaml")
    from verifybench.suite import parse_suite

    parse_suite(doc, csv_path.parent, where=str(path))  # what is written reads back as a suite
    path.write_text("# Generated by verifybench label-queue: fill the label column (hallucinated / faithful), then\n"
                    f"#   verifybench run {path.name}\n" + yaml.safe_dump(doc, sort_keys=False, allow_unicode=True),
                    encoding="utf-8")
    return path


def label_merge(files: Sequence[str | Path], out: str | Path, queues: Sequence[str | Path] | None = None) -> MergeReport:
    """Merge labeled queues (newest first) into one CSV with one row per case id, and its queue record. A
    case labeled in several files with different labels keeps an empty label and a `conflict` cell naming
    each file's label: reported, never resolved silently. An empty label never overrides a filled one. A
    row whose id no queue record names (the records beside the files, and `queues`) is listed in
    `not_queued` and left out.

    Streamed: each file is read twice (once to index ids and labels, once to copy the rows kept), and the
    index is an SQLite file on disk, so memory does not grow with the files. Rows are written in the order
    of the row kept for each id (the first labeled one, else the first)."""
    import sqlite3
    import tempfile

    paths = [Path(f) for f in files]
    out = Path(out)
    records, legacy = records_for(paths, queues)
    header: list[str] = []
    not_queued: list[NotQueued] = []
    with tempfile.TemporaryDirectory(prefix="verifybench-merge-") as tmp:
        db = sqlite3.connect(Path(tmp) / "index.db")
        db.executescript("PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA cache_size=-16384;"
                         "CREATE TABLE known(id TEXT PRIMARY KEY, round TEXT, stratum TEXT, prob REAL, again TEXT) WITHOUT ROWID;"
                         "CREATE TABLE row(pos INTEGER PRIMARY KEY, id TEXT, file INTEGER, line INTEGER, lab INTEGER,"
                         " raw TEXT);")
        rounds = _index_records(db, records)
        for path in sorted(legacy):  # a queue from before records: every row of it was queued
            rounds.setdefault(path.name, Round(round=path.name))
            db.executemany("INSERT OR IGNORE INTO known VALUES (?, ?, NULL, NULL, NULL)",
                           ((r["id"], path.name) for _, r, _ in iter_labeled(path)))

        def index() -> Iterator[tuple[Any, ...]]:
            for fi, path in enumerate(paths):
                first = True
                for where, r, lab in iter_labeled(path):
                    if first:  # every row of a file has its header's keys
                        header.extend(k for k in r if k not in header)
                        first = False
                    yield (r["id"], fi, where.line, None if lab is None else int(lab), None if lab is None else r["label"])

        db.executemany("INSERT INTO row(id, file, line, lab, raw) VALUES (?, ?, ?, ?, ?)", index())
        db.executescript("CREATE INDEX row_id ON row(id, pos);"
                         "CREATE TABLE kept AS SELECT COALESCE(MIN(CASE WHEN lab IS NOT NULL THEN pos END), MIN(pos))"
                         " AS pos, COUNT(DISTINCT lab) AS kinds FROM row JOIN known USING (id) GROUP BY id;"
                         "CREATE INDEX kept_pos ON kept(pos);")
        first_unknown = ("SELECT id, file, line FROM row WHERE pos IN (SELECT MIN(pos) FROM row WHERE id NOT IN"
                         " (SELECT id FROM known) GROUP BY id) ORDER BY pos")
        for cid, fi, line in db.execute(first_unknown):
            not_queued.append(NotQueued(id=cid, where=f"{paths[fi]}:{line}"))
        said: dict[str, list[str]] = {}
        for cid, fi, raw in db.execute("SELECT id, file, raw FROM row WHERE lab IS NOT NULL AND id IN (SELECT r.id FROM"
                                       " kept k JOIN row r USING (pos) WHERE k.kinds > 1) ORDER BY pos"):
            said.setdefault(cid, []).append(f"{paths[fi].name}: {raw}")
        conflict = {cid: "; ".join(got) for cid, got in said.items()}
        conflicts = [Conflict(id=cid, labels=labels) for cid, labels in conflict.items()]
        header.extend(k for k in (QUEUE_COLUMN, "round", "conflict") if k not in header)
        n = {"rows": 0, "labeled": 0}

        def kept() -> Iterator[dict[str, str]]:
            wanted = (p for (p,) in db.execute("SELECT pos FROM kept ORDER BY pos"))
            nxt, pos = next(wanted, None), 0
            for path in paths:
                for _, r, lab in iter_labeled(path):
                    pos += 1  # the INTEGER PRIMARY KEY counts rows from 1 in the order they were read
                    if pos != nxt:
                        continue
                    nxt = next(wanted, None)
                    r = {**r, QUEUE_COLUMN: record_path(out).name, "round": _keep_design(db, r)}
                    if r["id"] in conflict:
                        r, lab = {**r, "label": "", "conflict": conflict[r["id"]]}, None
                    n["rows"] += 1
                    n["labeled"] += lab is not None
                    yield r

        out.parent.mkdir(parents=True, exist_ok=True)
        write_csv(out, header, kept())
        entries = ({k: v for k, v in zip(("id", "round", "stratum", "inclusion_prob", "again"), e) if v is not None}
                   for e in db.execute("SELECT r.id, n.round, n.stratum, n.prob, n.again FROM kept k JOIN row r USING (pos)"
                                       " JOIN known n ON n.id = r.id ORDER BY k.pos"))
        record = write_record(record_path(out), entries, csv=out.name, merged_from=[p.name for p in paths],
                              created=_now(), rounds=[x.model_dump() for x in rounds.values()])
        db.close()
    return MergeReport(csv=str(out), queue=str(record), rows=n["rows"], labeled=n["labeled"], conflicts=conflicts,
                       not_queued=not_queued, notes=[legacy_note(p) for p in sorted(legacy)])


def _round_of(head: QueueRecord) -> Round:
    return Round(round=head.round or head.csv, source=head.source, created=head.created,
                 window_holds=head.window_holds or [])


def _index_records(db: Any, records: list[Path]) -> dict[str, Round]:
    """Every record's ids into `known` with their round and design (the first record naming an id keeps
    it); returns the rounds the records hold (a merged record's own rounds)."""
    rounds: dict[str, Round] = {}
    try:
        for r in records:
            head = read_header(r)
            for x in head.rounds or [_round_of(head)]:
                rounds.setdefault(x.round, x)
            own = head.round or head.csv
            # a case queued in two rounds keeps the other round (`again`): an estimate refuses it
            db.executemany("INSERT INTO known VALUES (?, ?, ?, ?, ?) ON CONFLICT(id) DO UPDATE SET again ="
                           " COALESCE(again, excluded.again, excluded.round) WHERE round != excluded.round",
                           ((e["id"], e.get("round") or own, e.get("stratum"), e.get("inclusion_prob"), e.get("again"))
                            for e in read_entries(r)))
    except DataError as e:
        raise VerifybenchError(str(e)) from None
    return rounds


def _keep_design(db: Any, row: dict[str, str]) -> str:
    """A kept row's round; its design taken from its own cells where its record (format 2) has none."""
    got = db.execute("SELECT round, prob FROM known WHERE id = ?", (row["id"],)).fetchone()
    if got[1] is None:
        try:
            prob: float | None = float(row.get("inclusion_prob") or "nan")
        except ValueError:
            prob = None
        db.execute("UPDATE known SET stratum = COALESCE(stratum, ?), prob = ? WHERE id = ?",
                   (row.get("stratum"), prob if prob == prob else None, row["id"]))
    return str(got[0])


def label_estimate(path: str | Path, queues: Sequence[str | Path] | None = None, seed: int = 0) -> Estimates:
    """From a labeled queue, or queues of several rounds merged (`label-merge`): the hallucination rate,
    and per check its flag rate, precision and recall at the thresholds it was queued with, weighted by
    design (estimates for the union of the rounds' windows, each round a stratum of it:
    `metrics.rounds.rounds_estimate`) with their 90% intervals, and unweighted (the labeled rows
    themselves). An unlabeled row's weight goes to the labeled rows of its stratum. Rows whose id no
    queue record names (the one beside the file, or `queues`) are left out, and listed in `not_queued`.
    Rounds that cannot be combined raise `RoundsRefused` with the reason."""
    from verifybench.metrics.rounds import ALPHA, rounds_estimate

    not_queued: list[NotQueued] = []
    records, legacy = records_for([path], queues)
    design, rounds = _designs(records)
    rows = read_labeled(path, set(design), not_queued, bool(legacy))
    lab = [parse_label(r.get("label")) for r in rows]
    keep = [i for i, v in enumerate(lab) if v is not None]
    if not keep:
        raise VerifybenchError(f"{path}: no labeled row yet" + (f" ({len(not_queued)} rows in no queue left out)"
                                                                 if not_queued else ""))
    rnd, stratum, wt = _row_design(path, rows, design)
    held = {cid: r.round for r in rounds.values() for cid in r.window_holds}
    later = np.array([held.get(r["id"], rn) != rn for r, rn in zip(rows, rnd)])  # a later round's window holds it
    y = np.array([np.nan if v is None else float(v) for v in lab])
    checks = [k.split(":", 1)[1] for k in rows[0] if k.startswith("flagged:")]
    flagged: dict[str, Any] = {v: np.array([float(r[f"flagged:{v}"]) if r.get(f"flagged:{v}") else np.nan for r in rows])
               for v in checks}
    est = rounds_estimate(y, wt, rnd, stratum, later, flagged, {v: _thresholds(rows, v) for v in checks},
                          [r.get("doc_type", "") for r in rows], [r["id"] for r in rows], seed=seed)
    yk = y[keep] > 0.5

    def both(got: dict[str, Any], num: np.ndarray, den: np.ndarray) -> Both:
        n = float(den.sum())
        return Both(weighted=got["estimate"], ci=got["ci"], unweighted=float((num & den).sum()) / n if n else None)

    out = Estimates(rows=len(rows), labeled=len(keep), unlabeled_left_out=len(rows) - len(keep),
                    window_cases_represented=est["represented"], interval=1 - ALPHA, rounds=est["rounds"],
                    hallucination_rate=both(est["hallucination_rate"], yk, np.ones(len(keep), bool)),
                    checks={}, not_queued=not_queued, notes=[legacy_note(p) for p in sorted(legacy)])
    for v in checks:
        got = est["checks"][v]
        if "refused" in got:
            out["checks"][v] = CheckEstimate(refused=got["refused"])
            continue
        fl = flagged[v][keep]
        has, f = ~np.isnan(fl), np.nan_to_num(fl) > 0.5
        out["checks"][v] = CheckEstimate(flag_rate=both(got["flag_rate"], f, has),
                                         precision=both(got["precision"], yk, f & has),
                                         recall=both(got["recall"], f, yk & has))
    return out


def _designs(records: list[Path]) -> tuple[dict[str, dict[str, Any]], dict[str, Round]]:
    """Per queued id its record line (round, stratum, inclusion probability where the record has them),
    and the rounds the records hold; a case queued in two rounds refused (`RoundsRefused`)."""
    from verifybench.metrics.rounds import queued_twice

    design: dict[str, dict[str, Any]] = {}
    rounds: dict[str, Round] = {}
    try:
        for r in records:
            head = read_header(r)
            for x in head.rounds or [_round_of(head)]:
                rounds.setdefault(x.round, x)
            for e in read_entries(r):
                d = design.setdefault(e["id"], {"round": head.round or head.csv, **e})
                again = e.get("again") or e.get("round", d["round"])
                if again != d["round"]:
                    raise queued_twice(e["id"], d["round"], again)
    except DataError as e:
        raise VerifybenchError(str(e)) from None
    return design, rounds


def _row_design(path: str | Path, rows: list[dict[str, str]], design: dict[str, dict[str, Any]]
                ) -> tuple[list[str], list[str], np.ndarray]:
    """Each row's round, stratum and weight: its record's, else (a record of format 2, or a legacy CSV)
    its own cells."""
    rnd, stratum, wt = [], [], []
    for r in rows:
        d = design.get(r["id"], {})
        rnd.append(str(d.get("round", Path(path).name)))
        stratum.append(str(d.get("stratum", r.get("stratum", ""))))
        try:
            wt.append(1 / float(d["inclusion_prob"]) if "inclusion_prob" in d else float(r["weight"]))
        except (KeyError, ValueError, ZeroDivisionError):
            raise VerifybenchError(f"{path}: id {r['id']!r}: no usable weight (its record has no inclusion "
                                   "probability and its row no 'weight' cell); estimates need a label-queue CSV") from None
    return rnd, stratum, np.array(wt)


def _thresholds(rows: list[dict[str, str]], check: str) -> np.ndarray:
    """The threshold each row's flag was taken at (its `evidence` cell), NaN where not said."""
    out = []
    for r in rows:
        try:
            t = json.loads(r.get("evidence") or "{}").get(check, {}).get("threshold")
        except (ValueError, AttributeError):
            t = None
        out.append(np.nan if t is None else float(t))
    return np.array(out)


def merge(files: Sequence[str | Path], out: str | Path, queues: Sequence[str | Path] | None = None) -> MergeReport:
    """Deprecated name of `label_merge` (the CLI command's), kept for one release."""
    _deprecated("merge", "label_merge")
    return label_merge(files, out, queues)


def estimate(path: str | Path, queues: Sequence[str | Path] | None = None) -> Estimates:
    """Deprecated name of `label_estimate` (the CLI command's), kept for one release."""
    _deprecated("estimate", "label_estimate")
    return label_estimate(path, queues)


def _deprecated(old: str, new: str) -> None:
    import warnings

    warnings.warn(f"verifybench.feedback.queue.{old} is deprecated; use {new} (the CLI command's name)",
                  DeprecationWarning, stacklevel=3)
