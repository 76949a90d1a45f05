"""Counting a suite's cases without running a verifier (`verifybench describe`): by doc type, label and
split, which raw label values became which label, and how many labeled cases each slice still needs."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any, TypedDict, cast

from verifybench.errors import RecordError
from verifybench.loaders import iter_cases
from verifybench.loaders.fields import LabelLog, recording_labels
from verifybench.metrics.settings import GATE_MIN_CASES
from verifybench.pipeline.runner import count_cases_rows
from verifybench.suite import Suite, load_suite


class ClassCounts(TypedDict):
    hallucinated: int
    faithful: int


class SliceNeed(TypedDict):
    """A slice's labeled cases, how they fall on the split, and whether (or after how many more labeled
    cases) it gets a threshold of its own and can be gated."""

    hallucinated: int
    faithful: int
    calibration: ClassCounts
    test: ClassCounts
    threshold: bool
    gate: bool
    more_for_threshold: ClassCounts
    more_for_gate: int


class SliceNeeds(TypedDict):
    by: str
    min_per_class: int
    min_cases: int
    split: str  # "from the cases' split field", or "seeded, 50% test"
    rows: dict[str, SliceNeed]


class LabelValue(TypedDict):
    """A raw label value of a label field, what it was read as, and on how many cases."""

    field: str
    value: str
    label: str
    cases: int


class UnknownLabels(TypedDict):
    """Text label values no list names, when no record could be read for them."""

    field: str
    values: dict[str, int]
    records: int


class _DescriptionKeys(TypedDict):
    total: int
    by_doc_type: dict[str, int]
    by_label: dict[str, int]
    by_split: dict[str, int]
    skipped_records: int
    skipped_examples: list[str]
    on_error: str
    suite: str
    loader: str
    label_values: list[LabelValue]
    slices: SliceNeeds


class Description(_DescriptionKeys, total=False):
    """What `describe` counted (`verifybench describe`; `--json` prints it)."""

    unknown_labels: UnknownLabels


def describe(suite: str | Path | Suite, data_dir: str | Path | None = None, limit: int | None = None,
                   min_cases: int = GATE_MIN_CASES) -> Description:
    """Read a suite's data without running a verifier: counts by doc type, label and split; which raw label
    values became which label; per slice, labeled cases of each class and how many more a threshold and
    a gate need (see `runner.describe`)."""
    if not isinstance(suite, Suite):
        suite = load_suite(suite, data_dir=data_dir, limit=limit)
    return count_suite(suite, min_cases=min_cases)



def count_suite(suite: Suite, min_cases: int = GATE_MIN_CASES) -> Description:
    """Count a suite's cases by doc type, label and split without running any verifier; say which raw
    label values became which label, and per slice how many labeled cases of each class it has and how
    many it needs for a fitted threshold and for a gate."""
    errors: list[RecordError] = []
    rows: list[dict[str, Any]] = []
    log = LabelLog()
    # Every record is looked at, bad ones counted and shown, whatever `on_error` a run would apply.
    lenient = suite.dataset.model_copy(update={"on_error": "skip"})
    with recording_labels(log):
        for case in iter_cases(lenient, errors):
            rows.append({"id": case.id, "dataset": case.dataset, "doc_type": case.doc_type, "split": case.split,
                         "label": case.label, "meta": case.meta})
    counts = count_cases_rows(rows)
    counts["skipped_records"] = len(errors)
    counts["skipped_examples"] = [str(e) for e in errors[:5]]
    counts["on_error"] = suite.dataset.on_error
    counts["suite"] = suite.name
    counts["loader"] = suite.dataset.loader
    counts["label_values"] = log.rows()
    # Text label values no list names (a label column without `hallucinated:`/`faithful:` lists).
    unknown = Counter(e.label_value for e in errors  # type: ignore[attr-defined]
                      if isinstance(getattr(e, "label_value", None), str) and not getattr(e, "label_lists_given", True))
    if unknown and not rows:  # nothing read: the label lists are missing (a stray value is a bad record)
        counts["unknown_labels"] = {"field": next(e.field for e in errors if hasattr(e, "label_value")),
                                    "values": dict(unknown.most_common(20)), "records": sum(unknown.values())}
    counts["slices"] = slice_needs(rows, suite.metrics, min_cases)
    return cast(Description, counts)  # the keys above (test_api_surface validates a real one)


def slice_needs(rows: list[dict[str, Any]], metrics_block: dict[str, Any] | None,
                min_cases: int = GATE_MIN_CASES) -> SliceNeeds:
    """Per slice (the metrics' `by` field, doc type by default): labeled cases of each class, how they fall
    on the calibration and test splits (the same split the metrics layer draws), and how many more of each
    class to label before the slice gets its own threshold (`min_per_class` of each class on the
    calibration split) and can be gated (`min_cases` test cases). Cross-fitted (`metrics.estimate`, by
    default below SPLIT_FROM labeled cases), the whole set needs CROSSFIT_MIN_PER_CLASS labeled cases of
    each class in all, and every slice then gets a threshold pooled toward the whole set's."""
    import math

    from verifybench.cases import Verdict
    from verifybench.metrics import Settings, frame
    from verifybench.metrics.summary import CROSSFIT_MIN_PER_CLASS, OVERALL, estimate_mode
    from verifybench.metrics.thresholds import CALIBRATION_NAMES, TEST_NAMES

    s = Settings.from_suite(metrics_block)
    named = {str(r.get("split") or "").lower() for r in rows}
    from_data = bool(named & set(CALIBRATION_NAMES)) and bool(named & set(TEST_NAMES))
    cal_share = 1.0 if from_data else 1.0 - s.test_fraction  # of newly labeled cases, the share calibrated on
    test_share = 1.0 if from_data else s.test_fraction
    n_labeled = sum(r.get("label") is not None for r in rows)
    mode, _ = estimate_mode(s.estimate, n_labeled, "field" if from_data else "seeded")
    crossfit = mode == "crossfit"
    per_class = CROSSFIT_MIN_PER_CLASS if crossfit else s.min_per_class
    out = SliceNeeds(by=s.by, min_per_class=per_class, min_cases=min_cases,
                     split=("cross-fitted over all labeled cases (slices pooled toward the whole set); gated on the "
                            f"seeded {s.test_fraction:.0%} test split" if crossfit else
                            "from the cases' split field" if from_data else f"seeded, {s.test_fraction:.0%} test"),
                     rows={})
    if not rows:
        return out
    f = frame(rows, [Verdict(case_id=r["id"], verifier="-", score=0.0) for r in rows], s.by, s.seed, s.test_fraction)

    def need(n: int, have: int, share: float) -> int:
        return 0 if have >= n or share <= 0 else math.ceil((n - have) / share)

    groups = [(OVERALL, f), *sorted(f.groupby("slice"), key=lambda kv: str(kv[0]))]
    whole: tuple[int, int] = (0, 0)
    for key, g in groups:
        g = g[g["labeled"]]  # an unlabeled case counts toward neither a threshold nor a gate
        cal, test = g[g["role"] == "calibration"], g[g["role"] == "test"]
        cal_h, cal_f = int(cal["label"].sum()), int((~cal["label"]).sum())
        fit_h, fit_f = cal_h, cal_f
        if crossfit:  # every labeled case fits; a slice's threshold is pooled: it has one when the whole set has
            whole = (int(g["label"].sum()), int((~g["label"]).sum())) if key == OVERALL else whole
            fit_h, fit_f = whole
        out["rows"][str(key)] = SliceNeed(
            hallucinated=int(g["label"].sum()), faithful=int((~g["label"]).sum()),
            calibration=ClassCounts(hallucinated=cal_h, faithful=cal_f),
            test=ClassCounts(hallucinated=int(test["label"].sum()), faithful=int((~test["label"]).sum())),
            threshold=min(fit_h, fit_f) >= per_class,
            gate=len(test) >= min_cases,
            # More labeled cases to add (of each class, in all) for a threshold / for a gate.
            more_for_threshold=ClassCounts(hallucinated=need(per_class, fit_h, 1.0 if crossfit else cal_share),
                                           faithful=need(per_class, fit_f, 1.0 if crossfit else cal_share)),
            more_for_gate=need(min_cases, len(test), test_share),
        )
    return out

