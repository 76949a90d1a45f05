"""The guard: the checks a team chose, at the thresholds it fitted, applied to one live answer.

A guard is built from a threshold policy (`verifybench thresholds --out`), which records each
verifier's name, options and config hash, or from a guard file that names a policy and adds how the
checks combine, what a flagged answer does and what a failure means (`verifybench.guard.spec`).
A verifier is rebuilt from the options recorded (or from the suite's, with `suite:`), and the guard
refuses to start when its config hash differs from the one the policy was fitted with. Models load
once, when the guard starts (a warm-up case through every verifier), never on a request.

A decision is what `verifybench run --policy` gives for the same case: the same verifier, the same
score, flagged when score >= the threshold of the case's slice (`by` of the policy), the whole-set
threshold where the policy has no slice for it.
"""

from __future__ import annotations

import asyncio
import queue
import time
import uuid
import warnings
from collections.abc import Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from verifybench.cases import Case, Source, Verdict
from verifybench.evaluation.policy import native_threshold
from verifybench.executors.scoring import verify_batch
from verifybench.formats.decision import (
    DecisionRecord,
)
from verifybench.guard.batching import MicroBatcher
from verifybench.guard.load import read_guard
from verifybench.guard.log import DecisionLog
from verifybench.guard.spec import GuardError
from verifybench.metrics.summary import OVERALL
from verifybench.tables import slice_value
from verifybench.verifiers import Verifier, build

Action = Literal["allowed", "flagged", "blocked", "rewritten"]
ThresholdSource = Literal["slice", "fallback", "fixed"]
ACTIONS: dict[str, Action] = {"flag": "flagged", "escalate": "flagged", "block": "blocked", "strip": "rewritten"}
# A unit status that states support (a verifier's own cut, nli's or anchors' `support_threshold`): in a
# decision it is what the check's threshold says, so a unit is never shown supported and flagged at once.
SUPPORT_STATUSES = frozenset({"supported", "weak support", "unsupported"})

WARMUP = Case(id="warm-up", dataset="guard", response="The warm-up answer names one fact.",
              sources=[Source(id="s1", text="The warm-up answer names one fact.")], label=False)


class UnitResult(BaseModel):
    """A part of the response a check judged on its own (a claim, a sentence), with its offsets."""

    text: str
    start: int | None = None
    end: int | None = None
    score: float | None = None
    status: str | None = None
    flagged: bool = False


class CheckResult(BaseModel):
    verifier: str
    score: float | None = None
    threshold: float | None = None
    threshold_source: ThresholdSource | None = None
    slice: str | None = Field(None, description="the policy slice whose threshold applied")
    native: str | None = Field(None, description="when this check flags, on the detector's own scale")
    flagged: bool | None = None
    error: str | None = None
    timed_out: bool = False
    skipped: str | None = Field(None, description="why the check did not run (a cascade decided before it)")
    note: str | None = None
    latency_ms: float = 0.0
    units: list[UnitResult] = Field(default_factory=list)


class Removed(BaseModel):
    verifier: str
    start: int
    end: int
    text: str


class Decision(BaseModel):
    """What the guard decided for one answer.

    `action`: allowed, flagged, blocked or rewritten (strip removed flagged units). In shadow mode the
    action is decided and logged as in enforce mode, but `applied` is false and `response` is the
    answer as given. `response` is what to send on: the answer, the rewritten answer, or None when
    blocked."""

    id: str
    request_id: str | None = None
    action: Action
    mode: Literal["enforce", "shadow"]
    applied: bool
    response: str | None
    removed: list[Removed] = Field(default_factory=list)
    escalated: bool = False
    reason: str
    errors: int = 0
    timeouts: int = 0
    checks: list[CheckResult]
    guard_hash: str
    policy_hash: str
    latency_ms: float = 0.0

    @property
    def flagged(self) -> bool:
        return self.action != "allowed"


class _Check:
    """One verifier of the guard with its thresholds per slice."""

    def __init__(self, verifier: Verifier, rows: dict[str, Any], batcher: MicroBatcher | None):
        self.verifier = verifier
        self.id = verifier.id
        self.rows = rows
        self.batcher = batcher
        self.config = verifier.config
        # Per slice the policy knows (a bounded set: a request's own doc type is never a key here).
        self._known: dict[str, tuple[float | None, ThresholdSource | None, str, str | None, str | None]] = {}

    def threshold(self, key: str) -> tuple[float | None, ThresholdSource | None, str, str | None, str | None]:
        """(threshold, where it came from, the slice used, a note, the threshold on the detector's own
        scale) for a case of slice `key`."""
        got = self._known.get(key)
        if got is None:
            t, source, used, note = self._threshold(key)
            got = (t, source, used, note, None if t is None else native_threshold(self.config, t))
            if key in self.rows:
                self._known[key] = got
        return got

    def _threshold(self, key: str) -> tuple[float | None, ThresholdSource | None, str, str | None]:
        row = self.rows.get(key)
        note = None
        used = key
        if not isinstance(row, dict) or row.get("threshold") is None:
            note = f"the policy has no threshold for slice {key!r}: the whole-set threshold applies"
            row, used = self.rows.get(OVERALL) or {}, OVERALL
            source: ThresholdSource | None = "fixed" if row.get("source") == "given" else "fallback"
        elif row.get("source") == "given":
            source = "fixed"
        elif row.get("source") == "fallback":
            source = "fallback"
            note = f"slice {key!r} had too few calibration cases: the {OVERALL!r} threshold applies"
        else:
            source = "slice"
        value = row.get("threshold")
        return (None if value is None else float(value)), source, used, note


def _sources(sources: Any) -> list[Source]:
    if sources is None:
        return []
    if isinstance(sources, (str, dict, Source)):
        sources = [sources]
    out = []
    # The types are checked here, so the models are built without validating again (per request).
    for i, s in enumerate(sources):
        if isinstance(s, Source):
            out.append(s)
        elif isinstance(s, str):
            out.append(Source.model_construct(id=f"s{i + 1}", text=s, metadata={}))
        elif isinstance(s, dict) and isinstance(s.get("text"), str):
            out.append(Source.model_construct(id=str(s.get("id") or f"s{i + 1}"), text=s["text"],
                                              metadata={k: v for k, v in s.items() if k not in ("id", "text")}))
        else:
            raise GuardError(f"sources[{i}]: expected a string or an object with a `text` string")
    return out


def strip_spans(text: str, spans: list[tuple[int, int]]) -> str:
    """`text` without the given [start, end) spans (merged where they overlap); where a cut leaves two
    blanks side by side, one goes, and a cut at the end takes the blanks before it."""
    merged: list[list[int]] = []
    for s, e in sorted(spans):
        if merged and s <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], e)
        else:
            merged.append([s, e])
    out, at = [], 0
    for s, e in merged:
        out.append(text[at:s])
        at = e
        if out and out[-1][-1:].isspace() and text[at:at + 1].isspace():
            at += 1
    out.append(text[at:])
    kept = "".join(out)
    return kept.rstrip() if merged and merged[-1][1] >= len(text) else kept


class Guard:
    """Check answers against a policy.

    Args:
        path: a guard file or a policy file.
        suite: a suite file whose verifier options to use (their config hashes must match the policy's).
        allow_code: modules, folders or model names whose code the files may import or run beyond the
            installation's own (a verifier named by import path: its module or a package above it; a
            graph pack folder; a model with `trust_remote_code`); without it such a file is refused.
        log_dir: where the decision log goes (default: the guard file's `log.dir`; none where it names no
            folder: a guard in Python logs only where it is told to); False: none.
        warm: run the warm-up case through every verifier now (loads models).
        overrides: guard-file keys (checks, combination, action, mode, timeout_ms, on_error, ...).
    """

    def __init__(self, path: str | Path, suite: str | Path | None = None, log_dir: str | Path | bool | None = None,
                 warm: bool = True, allow_code: Iterable[str] = (), **overrides: Any):
        if suite is not None:
            overrides["suite"] = str(suite)
        files = read_guard(path, allow_code, **overrides)  # every file checked, nothing imported or built yet
        self.spec, self.policy_path, self.source = files.spec, files.policy_path, files.source
        self.chosen = files.chosen
        if self.chosen:
            warnings.warn(self.chosen, UserWarning, stacklevel=2)
        spec = self.spec
        self.policy, self.policy_hash = files.policy, files.policy_hash
        self.by = self.policy.by
        recorded = self.policy.verifiers or {}
        self.checks: list[_Check] = []
        for vid, (name, options) in files.entries.items():
            rec = recorded[vid]
            verifier = build(name, vid, **options)
            if verifier.config_hash != rec.config_hash:
                raise GuardError(
                    f"verifier {vid!r} ({name}): its config hash {verifier.config_hash} differs from the policy's "
                    f"{rec.config_hash} ({self.policy_path}): the thresholds were fitted for another configuration"
                    f"{_diff(rec.options, verifier.config)}. Use the configuration the policy records, or fit a "
                    "policy on a run of this one")
            verifier.repeats = rec.repeats or 1
            rows = {k: e.model_dump(by_alias=True) for k, e in self.policy.thresholds[vid].items()}
            batcher = None if verifier.stateless else MicroBatcher(verifier, spec.batch_wait_ms, spec.max_batch)
            self.checks.append(_Check(verifier, rows, batcher))
        self.hash = spec.digest({c.id: c.verifier.config_hash for c in self.checks})
        self.bounds: tuple[float | None, float | None] | None = None
        if spec.combination == "cascade" and (spec.cascade.allow_at_or_below is not None
                                              or spec.cascade.flag_at_or_above is not None):
            self.bounds = (spec.cascade.allow_at_or_below, spec.cascade.flag_at_or_above)
        elif spec.combination == "cascade":
            from verifybench.guard.cascade import cascade_bounds

            self.bounds = cascade_bounds(self.policy, self.policy_path, self.checks[0].id, spec.cascade.confidence)
        self.escalations: queue.SimpleQueue[Decision] = queue.SimpleQueue()
        self.counts = {"checks": 0, "errors": 0, "timeouts": 0}
        self._pool: ThreadPoolExecutor | None = None
        where = spec.log.dir if log_dir is None else (None if log_dir is False else log_dir)
        if where is True:
            where = spec.log.dir
        self.log = DecisionLog(str(where), spec.log.max_bytes, spec.log.fsync, fail_open=spec.log.fail_open,
                               timeout_ms=spec.log.timeout_ms) if where else None
        from verifybench.guard.telemetry import start as start_telemetry

        self.telemetry = start_telemetry(spec.telemetry, {c.id: c.verifier.config_hash for c in self.checks})
        self.warmup: dict[str, str | None] = {}
        self.ready = False
        if warm:
            self.warm_up()

    # -- life cycle --------------------------------------------------------------------------------
    def warm_up(self) -> None:
        """Score one small case with every verifier: models load here, before the first request. A
        verifier that raises refuses the start; an error verdict (a verifier that needs data a warm-up
        case lacks) is noted in `warmup`."""
        for c in self.checks:
            try:
                v = c.verifier.verify([WARMUP])[0]
            except Exception as e:  # noqa: BLE001
                raise GuardError(f"verifier {c.id!r} failed its warm-up: {type(e).__name__}: {e}") from None
            self.warmup[c.id] = v.error
            if c.batcher is not None:  # and once in the batch thread: a thread's first model call sets it up
                c.batcher.submit(WARMUP).result()
        self.ready = True

    def close(self) -> None:
        for c in self.checks:
            if c.batcher is not None:
                c.batcher.close()
        if self.log is not None:
            self.log.close()
        if self.telemetry is not None:
            self.telemetry.close()
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)

    def __enter__(self) -> Guard:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def describe(self) -> dict[str, Any]:
        """The guard's settings, checks, thresholds and hashes (what /readyz and the docs show)."""
        return {
            "guard_hash": self.hash, "policy_hash": self.policy_hash, "policy": str(self.policy_path), "by": self.by,
            "chosen": self.chosen,
            **self.spec.model_dump(mode="json", exclude={"policy", "suite", "log", "kind", "format", "written_by"}),
            "cascade_bounds": None if self.bounds is None else {"allow_at_or_below": self.bounds[0],
                                                                "flag_at_or_above": self.bounds[1]},
            "checks": {c.id: {"name": c.verifier.name, "config_hash": c.verifier.config_hash,
                              "repeats": c.verifier.repeats,
                              "thresholds": {k: {"threshold": r.get("threshold"), "source": r.get("source"),
                                                 "native": self._native(c, r.get("threshold"))}
                                             for k, r in c.rows.items() if isinstance(r, dict)}}
                       for c in self.checks},
        }

    # -- building the case -------------------------------------------------------------------------
    def case(self, response: str, sources: Any, question: str | None = None, doc_type: str | None = None,
             meta: dict[str, Any] | None = None) -> Case:
        if not isinstance(response, str):
            raise GuardError(f"response: expected a string, got {type(response).__name__}")
        return Case(id=uuid.uuid4().hex, dataset="guard", doc_type=doc_type or "default", question=question,
                    sources=_sources(sources), response=response, label=False, meta=dict(meta or {}))

    def _slice_key(self, case: Case) -> str:
        if self.by == "doc_type":
            return slice_value(case.doc_type)
        return slice_value(case.meta.get(self.by[5:]))

    @staticmethod
    def _native(c: _Check, t: float | None) -> str | None:
        return None if t is None else native_threshold(c.config, t)

    # -- scoring -------------------------------------------------------------------------------------
    def _pool_for_inline(self) -> ThreadPoolExecutor:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=8, thread_name_prefix="guard-check")
        return self._pool

    def _start(self, c: _Check, case: Case, timed: bool, asynchronous: bool = False) -> Future | Verdict:
        """A verdict now (a cheap verifier without a time budget), or a future of one."""
        if c.batcher is not None:
            if not timed and not asynchronous:
                got = c.batcher.try_inline(case)
                if got is not None:
                    return got
            return c.batcher.submit(case)
        if timed or asynchronous:  # off the event loop: a large request never holds the others up
            return self._pool_for_inline().submit(lambda: verify_batch(c.verifier, [case])[0])
        return verify_batch(c.verifier, [case])[0]

    def _phase_sync(self, checks: list[_Check], case: Case, deadline: float | None) -> dict[str, tuple]:
        started = {c.id: (time.perf_counter(), self._start(c, case, deadline is not None)) for c in checks}
        out: dict[str, tuple] = {}
        for c in checks:
            t0, got = started[c.id]
            if isinstance(got, Future):
                remaining = None if deadline is None else max(0.0, deadline - time.perf_counter())
                try:
                    got = got.result(timeout=remaining)
                except FutureTimeout:
                    got.cancel()
                    out[c.id] = (None, True, (time.perf_counter() - t0) * 1000.0)
                    continue
            out[c.id] = (got, False, (time.perf_counter() - t0) * 1000.0)
        return out

    async def _phase_async(self, checks: list[_Check], case: Case, deadline: float | None) -> dict[str, tuple]:
        t0 = time.perf_counter()
        started = {c.id: self._start(c, case, deadline is not None, asynchronous=True) for c in checks}
        out: dict[str, tuple] = {}
        for c in checks:
            got = started[c.id]
            if isinstance(got, Future):
                remaining = None if deadline is None else max(0.0, deadline - time.perf_counter())
                try:
                    got = await asyncio.wait_for(asyncio.shield(asyncio.wrap_future(got)), remaining)
                except TimeoutError:
                    started[c.id].cancel()  # type: ignore[union-attr]
                    out[c.id] = (None, True, (time.perf_counter() - t0) * 1000.0)
                    continue
            out[c.id] = (got, False, (time.perf_counter() - t0) * 1000.0)
        return out

    def _result(self, c: _Check, key: str, got: tuple) -> CheckResult:
        verdict, timed_out, elapsed = got
        t, source, used, note, native = c.threshold(key)
        r = CheckResult(verifier=c.id, threshold=t, threshold_source=source, slice=used, note=note,
                        native=native, latency_ms=elapsed)
        if timed_out:
            r.timed_out = True
            r.error = "timed out: the request's time budget ran out before this check finished"
            return r
        assert isinstance(verdict, Verdict)
        if verdict.latency_ms is not None and not (c.batcher is not None):
            r.latency_ms = verdict.latency_ms
        if not verdict.ok:
            if self.spec.raise_errors:
                raise GuardError(f"verifier {c.id!r}: {verdict.error}")
            r.error = verdict.error or "no score"
            return r
        r.score = float(verdict.score)  # type: ignore[arg-type]
        r.flagged = t is not None and r.score >= t
        units = [UnitResult(text=u.text, start=u.start, end=u.end, score=u.score, status=u.status)
                 for u in verdict.units or []]
        if t is not None:
            for u in units:
                u.flagged = u.score is not None and u.score >= t
            scored = [u for u in units if u.score is not None]
            if r.flagged and scored and not any(u.flagged for u in units):
                # An aggregate (a mean, graph's weighted count) can pass the threshold with no unit at it:
                # the units that weigh most are the ones to name.
                top = max(u.score for u in scored)  # type: ignore[type-var]
                for u in scored:
                    u.flagged = bool(top and u.score == top)
            for u in scored:  # one threshold decides a unit: a verifier's own support cut never contradicts it
                if u.status in SUPPORT_STATUSES:
                    u.status = "unsupported" if u.flagged else "supported"
        r.units = units
        return r

    def _plans(self) -> list[list[_Check]]:
        if self.spec.combination == "cascade":
            return [[self.checks[0]], [self.checks[1]]]
        return [self.checks]

    def _cascade_skip(self, cheap: CheckResult) -> str | None:
        """Why the expensive check need not run: the cheap score is in a confident region."""
        assert self.bounds is not None
        low, high = self.bounds
        if cheap.score is None:
            return None
        if high is not None and cheap.score >= high:
            cheap.note = f"cascade: confident hallucinated (score >= {high:.4g} on the calibration split's bounds)"
            cheap.flagged = True
            return cheap.note
        if low is not None and cheap.score <= low:
            cheap.note = f"cascade: confident faithful (score <= {low:.4g} on the calibration split's bounds)"
            cheap.flagged = False
            return cheap.note
        return None

    def _skips(self, i: int, phase: list[_Check], results: list[CheckResult]) -> bool:
        """(cascade, before the second phase) Whether the phase is skipped; if so its checks are added
        to `results` as skipped, with the reason."""
        why = self._cascade_skip(results[0]) if i and self.spec.combination == "cascade" else None
        if why:
            results += [CheckResult(verifier=c.id, skipped=why) for c in phase]
        return why is not None

    def _effective(self, r: CheckResult) -> bool:
        if r.error is not None:
            return self.spec.on_error == "flag"
        return bool(r.flagged)

    def _decide(self, case: Case, results: list[CheckResult], request_id: str | None, t0: float) -> Decision:
        spec = self.spec
        ran = [r for r in results if r.skipped is None]
        errors = [r for r in ran if r.error is not None]
        if spec.combination == "cascade":
            decider = ran[-1]  # the cheap check where it was confident, else the expensive one
            flagged = self._effective(decider)
            reason = decider.note if len(ran) == 1 and decider.note else f"decided by {decider.verifier}"
            errors = [decider] if decider.error is not None else []
        elif spec.combination == "all":
            flagged = all(self._effective(r) for r in ran)
            reason = "every check flagged" if flagged else "not every check flagged"
        else:
            flagged = any(self._effective(r) for r in ran)
            reason = (f"flagged by {', '.join(r.verifier for r in ran if self._effective(r))}" if flagged
                      else "no check flagged")
        if errors:
            reason += f"; {len(errors)} check(s) failed (on_error: {spec.on_error})"
        action: Action = "allowed"
        out: str | None = case.response
        removed: list[Removed] = []
        escalated = False
        if errors and spec.on_error == "block":
            action = "blocked"
        elif flagged:
            action = ACTIONS[spec.action]
            escalated = spec.action == "escalate"
        if action == "rewritten":
            spans: list[tuple[int, int]] = []
            unstrippable = []
            for r in ran:
                if not self._effective(r):
                    continue
                cut = [(u.start, u.end) for u in r.units if u.flagged and u.start is not None and u.end is not None]
                if not cut:
                    unstrippable.append(r.verifier)
                for s, e in cut:
                    spans.append((s, e))
                    removed.append(Removed(verifier=r.verifier, start=s, end=e, text=case.response[s:e]))
            if unstrippable:
                action, removed = "blocked", []
                reason += f"; strip: {', '.join(unstrippable)} gave no flagged unit with offsets, so the answer is blocked"
            else:
                out = strip_spans(case.response, spans)
                if not out.strip():
                    action, out = "blocked", None
                    reason += "; strip: nothing is left once the flagged units are removed, so the answer is blocked"
                elif not _claims_left(ran, spans):
                    action = "blocked"
                    reason += (f"; strip: no checkable claim is left once the flagged units are removed (what remains: "
                               f"{out.strip()[:80]!r}), so the answer is blocked")
        if action == "blocked":
            out = None
        applied = spec.mode == "enforce" and action in ("blocked", "rewritten")
        if spec.mode == "shadow":
            out = case.response
        self.counts["checks"] += 1
        self.counts["errors"] += len(errors)
        timeouts = sum(r.timed_out for r in ran)
        self.counts["timeouts"] += timeouts
        d = Decision(id=case.id, request_id=request_id, action=action, mode=spec.mode, applied=applied, response=out,
                     removed=removed if action == "rewritten" else [], escalated=escalated, reason=reason,
                     errors=len(errors), timeouts=timeouts, checks=results, guard_hash=self.hash,
                     policy_hash=self.policy_hash, latency_ms=(time.perf_counter() - t0) * 1000.0)
        if escalated:
            self.escalations.put(d)
        if self.telemetry is not None:  # queued for the batching exporter: off the critical path
            self.telemetry.decision(case, d)
        return d

    def record(self, case: Case, d: Decision) -> DecisionRecord:
        """The decision log's record (`formats.decision`): the case schema plus the decision, validated
        (in pydantic-core: faster than constructing the nested models unvalidated)."""
        return DecisionRecord.model_validate({
            **DecisionRecord.header(), "id": case.id, "response": case.response,
            "sources": [{"id": s.id, "text": s.text} for s in case.sources],
            "question": case.question, "doc_type": case.doc_type, "meta": case.meta,
            "decision": {
                "action": d.action, "mode": d.mode, "applied": d.applied, "escalated": d.escalated,
                "request_id": d.request_id, "reason": d.reason,
                "checks": [{"verifier": r.verifier, "score": r.score, "threshold": r.threshold,
                            "threshold_source": r.threshold_source, "slice": r.slice, "flagged": r.flagged,
                            "error": r.error, "timed_out": r.timed_out, "skipped": r.skipped,
                            "latency_ms": round(r.latency_ms, 3)} for r in d.checks],
                "removed": [r.model_dump() for r in d.removed],
                "guard_hash": d.guard_hash, "policy_hash": d.policy_hash,
                "latency_ms": round(d.latency_ms, 3),
                "time": datetime.now(UTC).isoformat(timespec="milliseconds"),
            },
        })

    def _evaluate_sync(self, case: Case, request_id: str | None) -> Decision:
        t0 = time.perf_counter()
        deadline = None if self.spec.timeout_ms is None else t0 + self.spec.timeout_ms / 1000.0
        key = self._slice_key(case)
        results: list[CheckResult] = []
        for i, phase in enumerate(self._plans()):
            if self._skips(i, phase, results):
                break
            got = self._phase_sync(phase, case, deadline)
            results += [self._result(c, key, got[c.id]) for c in phase]
        return self._decide(case, results, request_id, t0)

    async def _evaluate_async(self, case: Case, request_id: str | None) -> Decision:
        t0 = time.perf_counter()
        deadline = None if self.spec.timeout_ms is None else t0 + self.spec.timeout_ms / 1000.0
        key = self._slice_key(case)
        results: list[CheckResult] = []
        for i, phase in enumerate(self._plans()):
            if self._skips(i, phase, results):
                break
            got = await self._phase_async(phase, case, deadline)
            results += [self._result(c, key, got[c.id]) for c in phase]
        return self._decide(case, results, request_id, t0)

    # -- the calls ---------------------------------------------------------------------------------
    def check(self, response: str, sources: Any, question: str | None = None, doc_type: str | None = None,
              meta: dict[str, Any] | None = None, request_id: str | None = None) -> Decision:
        """Decide one answer; the decision is in the log (on disk) before this returns."""
        case = self.case(response, sources, question, doc_type, meta)
        d = self._evaluate_sync(case, request_id)
        if self.log is not None:
            self.log.write(self.record(case, d))
        return d

    async def acheck(self, response: str, sources: Any, question: str | None = None, doc_type: str | None = None,
                     meta: dict[str, Any] | None = None, request_id: str | None = None) -> Decision:
        """`check` for asyncio code: model verifiers batch concurrent calls; the log's group commit
        makes one fsync for the decisions that arrive together."""
        d, durable = await self.adecide(response, sources, question, doc_type, meta, request_id)
        if durable is not None and self.log is not None:
            await self.log.acommitted(durable)
        return d

    async def adecide(self, response: str, sources: Any, question: str | None = None, doc_type: str | None = None,
                      meta: dict[str, Any] | None = None, request_id: str | None = None
                      ) -> tuple[Decision, asyncio.Future | None]:
        """`acheck` in two steps, for a caller with work to do while the record is being written (the
        service serialises its response meanwhile): the decision, and an awaitable that completes once
        its record is on disk (None without a log). The caller must await it before it lets the
        decision out."""
        case = self.case(response, sources, question, doc_type, meta)
        d = await self._evaluate_async(case, request_id)
        if self.log is None:
            return d, None
        return d, asyncio.wrap_future(self.log.append(self.record(case, d)))

    def check_many(self, items: Iterable[dict[str, Any]]) -> list[Decision]:
        """Decide a batch of answers (each a mapping of `check`'s arguments); every verifier scores the
        batch in one call, as a run does. Without a time budget, a decision equals `check`'s."""
        cases, rids = [], []
        for i, item in enumerate(items):
            if not isinstance(item, dict) or "response" not in item:
                raise GuardError(f"items[{i}]: expected a mapping with `response` and `sources`")
            unknown = set(item) - {"response", "sources", "question", "doc_type", "meta", "request_id"}
            if unknown:
                raise GuardError(f"items[{i}]: unknown field(s) {', '.join(sorted(unknown))}")
            cases.append(self.case(item["response"], item.get("sources"), item.get("question"), item.get("doc_type"),
                                   item.get("meta")))
            rids.append(item.get("request_id"))
        if not cases:
            return []
        if self.spec.timeout_ms is not None or self.spec.combination == "cascade":
            out = [self._evaluate_sync(c, r) for c, r in zip(cases, rids)]
        else:
            t0 = time.perf_counter()
            verdicts: dict[str, dict[str, Verdict]] = {}
            for c in self.checks:
                if c.batcher is not None:
                    with c.batcher.busy:  # the model is not shared with the batch thread meanwhile
                        vs = verify_batch(c.verifier, cases)
                else:
                    vs = verify_batch(c.verifier, cases)
                verdicts[c.id] = {v.case_id: v for v in vs}  # by id: never a verdict for another case
            out = []
            for case, rid in zip(cases, rids):
                key = self._slice_key(case)
                results = [self._result(c, key, _own(verdicts[c.id], case, c.verifier)) for c in self.checks]
                out.append(self._decide(case, results, rid, t0))
        if self.log is not None:
            futures = [self.log.append(self.record(c, d)) for c, d in zip(cases, out)]
            for f in futures:
                self.log.committed(f)
        return out


def _claims_left(ran: list[CheckResult], spans: list[tuple[int, int]]) -> bool:
    """Whether a stripped answer keeps a claim a check scored and let through: a unit with a score, not
    flagged, that no cut touches. Greetings and sign-offs a verifier skips (no score) are no claim."""
    return any(u.score is not None and not u.flagged and u.start is not None and u.end is not None
               and all(u.end <= s or u.start >= e for s, e in spans)
               for r in ran for u in r.units)


def _own(verdicts: dict[str, Verdict], case: Case, verifier: Verifier) -> tuple[Verdict, bool, float]:
    """`case`'s verdict (as `_result` takes it): the one with its id, else an error verdict saying so."""
    v = verdicts.get(case.id) or verifier.error_verdict(case, RuntimeError("the verifier gave no verdict for this case"))
    return v, False, v.latency_ms or 0.0


def _diff(recorded: dict[str, Any], config: dict[str, Any]) -> str:
    now = {k: v for k, v in config.items() if k != "name"}
    changed = [k for k in sorted(set(recorded) | set(now)) if recorded.get(k) != now.get(k)]
    if not changed:
        return ""
    return " (" + "; ".join(f"{k}: {recorded.get(k)!r} in the policy, {now.get(k)!r} here" for k in changed[:4]) + ")"
