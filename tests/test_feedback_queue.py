"""Label queues (verifybench.feedback.queue) from a run directory and from a guard decision log built from
real HaluEval QA cases: N distinct cases, the strategy honoured, the random share and its weights, the
CSV read back by the generated suite once labeled (run -> thresholds -> baseline -> gate, unedited), and
merging with an earlier labeled set."""

import csv
import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import verifybench as vb
from helpers.loop_runs import make_qa_run, write_guard_log
from verifybench.cli import app
from verifybench.errors import VerifybenchError
from verifybench.feedback.queue import label_estimate, label_merge, label_queue
from verifybench.feedback.window import from_log, read_log
from verifybench.rundir import read_case_index


@pytest.fixture(scope="module")
def qa_run(tmp_path_factory, data_dir) -> Path:
    return make_qa_run(tmp_path_factory, data_dir)


@pytest.fixture(scope="module")
def guard_log(qa_run, tmp_path_factory) -> Path:
    return write_guard_log(qa_run, tmp_path_factory.mktemp("guard-log"))


def _rows(path: Path) -> list[dict]:
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def test_the_log_reader_skips_and_reports_a_torn_last_line(guard_log, qa_run):
    records, skipped = read_log(guard_log)
    assert len(records) == len(read_case_index(qa_run))
    assert len(skipped) == 1 and skipped[0].startswith("decisions-101-0.jsonl:") and "torn" in skipped[0]
    bad = guard_log.parent / "bad-log"
    bad.mkdir(exist_ok=True)
    (bad / "decisions-1-0.jsonl").write_text('{"id": "a", "response": "x", "decision": {"checks": []}}\n{oops\n'
                                             '{"id": "b", "response": "y", "decision": {"checks": []}}\n')
    with pytest.raises(vb.VerifybenchError, match=r"decisions-1-0.jsonl:2: not a JSON line"):
        read_log(bad)
    (bad / "decisions-1-0.jsonl").write_text('{"id": "a", "response": "x", "decision": {"checks": [{"score": 1}]}}\n')
    with pytest.raises(vb.VerifybenchError, match=r"decisions-1-0.jsonl:1: field 'decision.checks\[0\].verifier'"):
        read_log(bad)
    # A retried request logged twice: one case, the last record, reported.
    rec = '{"id": "a", "response": "%s", "decision": {"checks": [{"verifier": "rouge", "score": %s, "threshold": 0.5}]}}\n'
    (bad / "decisions-1-0.jsonl").write_text(rec % ("x", 0.1) + rec % ("y", 0.9))
    w = from_log(bad)
    assert w.ids.tolist() == ["a"] and w.scores["rouge"].tolist() == [0.9] and "repeat" in w.skipped[0]


@pytest.mark.parametrize("strategy", ["uncertain", "stratified", "disagree"])
def test_a_queue_of_budget_n_has_n_distinct_cases_and_honours_the_strategy(guard_log, tmp_path, strategy):
    n = 60
    r = label_queue(guard_log, n, tmp_path / "q.csv", strategy=strategy, seed=3, random_share=0.25)
    rows = _rows(tmp_path / "q.csv")
    assert len(rows) == n == len({x["id"] for x in rows})
    assert r["skipped_log_lines"] and r["parts"] == {"random": 15, strategy: 45}
    assert all(x["label"] == "" and x["sources"].startswith("[{") and json.loads(x["evidence"]) for x in rows)
    w = from_log(guard_log)
    at = {cid: i for i, cid in enumerate(w.ids.tolist())}
    picked = np.array([at[x["id"]] for x in rows])
    targeted = np.array([at[x["id"]] for x in rows if x["part"] == strategy])
    rest = np.setdiff1d(np.arange(len(w)), picked)
    if strategy == "uncertain":
        from verifybench.feedback.queue import _quantile_margin

        m = _quantile_margin(w)
        assert m[targeted].max() <= m[rest].min()  # nothing left out is closer to a threshold
    elif strategy == "disagree":
        from verifybench.feedback.queue import _disagreement

        dis = _disagreement(w)
        assert dis[targeted].all() or not dis[rest].any()
    else:
        strata = {x["stratum"] for x in rows if x["part"] == strategy}
        assert strata == {"qa / allow", "qa / flag"}
        counts = [sum(1 for x in rows if x["stratum"] == s and x["part"] == strategy) for s in sorted(strata)]
        assert abs(counts[0] - counts[1]) <= 1
    # The weights sum to the window (Horvitz-Thompson: each stratum's cases are represented once).
    assert sum(float(x["weight"]) for x in rows) == pytest.approx(len(w))
    # Seeded: the same queue again.
    label_queue(guard_log, n, tmp_path / "again.csv", strategy=strategy, seed=3, random_share=0.25)
    assert [x["id"] for x in _rows(tmp_path / "again.csv")] == [x["id"] for x in rows]


def test_labeled_queue_round_trips_through_its_suite_to_a_gate(qa_run, tmp_path):
    """Fill the labels (from the dataset's own labels, as a reviewer would), then run, fit thresholds,
    record a baseline and gate, with the generated suite as it was written."""
    out = tmp_path / "queue" / "to_label.csv"
    r = label_queue(qa_run, 240, out, strategy="stratified", seed=0)
    truth = {c["id"]: c["label"] for c in read_case_index(qa_run)}
    rows = _rows(out)
    for x in rows[:-5]:  # the last five are left unlabeled: skipped and counted, not guessed
        x["label"] = "hallucinated" if truth[x["id"]] else "faithful"
        x["reviewer"] = "test"
    with open(out, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    run = vb.run(r["suite"], out=tmp_path / "labeled-run", progress=False)
    assert run.n_cases == 235 and run.n_skipped_records == 5
    assert set(run.verdicts["verifier"]) == {"rouge", "bleu"}
    policy = vb.thresholds(run.run_dir, out=tmp_path / "policy.yaml")
    assert policy.thresholds["rouge"]["all"].threshold is not None
    base = vb.baseline(run.run_dir, out=tmp_path / "baseline.json")
    again = vb.run(r["suite"], out=tmp_path / "labeled-run-2", progress=False)
    res = CliRunner().invoke(app, ["gate", str(again.run_dir), "--baseline", str(base)])
    assert res.exit_code == 0 and "gate passed" in res.output, res.output
    # The estimate reads the labeled file: the weighted rate is the window's, the unweighted the queue's.
    e = label_estimate(out)
    assert e["labeled"] == 235 and e["unlabeled_left_out"] == 5
    assert 0 < e["hallucination_rate"]["weighted"] < 1
    flag_rate = e["checks"]["rouge"]["flag_rate"]
    assert flag_rate["unweighted"] != pytest.approx(flag_rate["weighted"])  # the queue over-samples a stratum


def test_merge_keeps_one_row_per_id_and_reports_conflicts(qa_run, tmp_path):
    first = tmp_path / "week1.csv"
    label_queue(qa_run, 30, first, strategy="uncertain", seed=0)
    rows = _rows(first)
    for x in rows:
        x["label"] = "faithful"
    with open(first, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    second = tmp_path / "week2.csv"
    r = label_queue(qa_run, 30, second, strategy="uncertain", seed=1, labeled=[first])
    new = _rows(second)
    assert not {x["id"] for x in new} & {x["id"] for x in rows}  # labeled cases are not queued again
    assert r["already_labeled"] == 30
    # A reviewer relabels two of week 1's cases differently, and agrees on a third.
    new[0]["label"] = "hallucinated"
    extra = [dict(rows[0], label="hallucinated"), dict(rows[1], label="1"), dict(rows[2], label="faithful")]
    with open(second, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=list(new[0]))
        w.writeheader()
        w.writerows(new + extra)
    res = CliRunner().invoke(app, ["label-merge", str(second), str(first), "--out", str(tmp_path / "all.csv")])
    assert res.exit_code == 1, res.output
    merged = _rows(tmp_path / "all.csv")
    assert len(merged) == len({x["id"] for x in merged}) == 60
    conflicts = {x["id"]: x for x in merged if x["conflict"]}
    assert set(conflicts) == {rows[0]["id"], rows[1]["id"]}
    assert all(x["label"] == "" and "week1.csv: faithful" in x["conflict"] for x in conflicts.values())
    assert next(x for x in merged if x["id"] == rows[2]["id"])["label"] == "faithful"
    assert rows[0]["id"] in res.output
    assert label_merge([first], tmp_path / "one.csv")["conflicts"] == []


# --- label rounds (issue 44) ---------------------------------------------------------------------------

def _label_from(path: Path, truth: dict, keep=None) -> list[dict]:
    """Fill the label column from the truth, as a reviewer would (only the ids in `keep` when given)."""
    rows = _rows(path)
    for x in rows:
        if keep is None or x["id"] in keep:
            x["label"] = "hallucinated" if truth[x["id"]] else "faithful"
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    return rows


@pytest.fixture(scope="module")
def window44(qa_run, tmp_path_factory):
    """Issue 44's setting: a 44-case window (a guard log) whose labels are known."""
    log = write_guard_log(qa_run, tmp_path_factory.mktemp("log44"), rows=np.arange(44), torn=False)
    truth = {c["id"]: bool(c["label"]) for c in read_case_index(qa_run)}
    return log, truth


def _two_rounds(window44, tmp_path, second: int) -> tuple[Path, list[dict], list[dict]]:
    log, truth = window44
    week1, week2 = tmp_path / "week1.csv", tmp_path / "week2.csv"
    label_queue(log, 20, week1, seed=0)
    r1 = _label_from(week1, truth)
    label_queue(log, second, week2, seed=1, labeled=[week1])
    r2 = _label_from(week2, truth)
    assert label_merge([week2, week1], tmp_path / "all.csv")["conflicts"] == []
    return tmp_path / "all.csv", r1, r2


def test_two_rounds_on_one_window_are_counted_once_and_every_label_gives_the_truth(window44, tmp_path):
    """The window labeled in full over two rounds (20 cases, then the other 24): each round's weights stand
    for its own pool, 44 + 24 = 68 cases added up (issue 44); across rounds they stand for the 44, and the
    estimates are the window's own figures, with intervals of width zero."""
    merged, r1, r2 = _two_rounds(window44, tmp_path, 24)
    log, truth = window44
    assert sum(float(x["weight"]) for x in r1 + r2) == pytest.approx(68)  # the old sum of weights
    e = label_estimate(merged)
    assert e["window_cases_represented"] == pytest.approx(44) and e["labeled"] == 44
    assert [x["labeled"] for x in e["rounds"].values()] == [24, 20]
    rows = r1 + r2
    y = np.array([truth[x["id"]] for x in rows])
    assert e["hallucination_rate"]["weighted"] == pytest.approx(y.mean())
    assert e["hallucination_rate"]["ci"] == pytest.approx([y.mean()] * 2)
    f = np.array([x["flagged:rouge"] == "1" for x in rows])
    assert e["checks"]["rouge"]["precision"]["weighted"] == pytest.approx((f & y).sum() / f.sum())
    assert e["checks"]["rouge"]["recall"]["weighted"] == pytest.approx((f & y).sum() / y.sum())
    res = CliRunner().invoke(app, ["label-estimate", str(merged)])
    assert res.exit_code == 0 and "90% interval" in res.output and "44 window cases" in res.output, res.output


def test_a_merged_estimate_is_rounds_estimate_on_the_same_rows(window44, tmp_path):
    """Two rounds labeling part of the window (20, then 12 of the other 24): the estimate is
    `rounds_estimate`'s over the rows, each round's design as `label-queue` wrote it, the first round's
    rows standing for themselves (the second's window holds them); one round alone gives the figures
    the old weighted sums gave."""
    from verifybench.metrics.rounds import rounds_estimate

    merged, r1, r2 = _two_rounds(window44, tmp_path, 12)
    log, truth = window44
    rows = r2 + r1  # the merge keeps the newest file's rows first
    y = np.array([truth[x["id"]] for x in rows], float)
    want = rounds_estimate(y, [float(x["weight"]) for x in rows], [1] * 12 + [0] * 20, [x["stratum"] for x in rows],
                           [False] * 12 + [True] * 20, {"rouge": [float(x["flagged:rouge"]) for x in rows]},
                           case_id=[x["id"] for x in rows])
    e = label_estimate(merged)
    assert e["window_cases_represented"] == pytest.approx(want["represented"]) == pytest.approx(44)
    assert e["hallucination_rate"]["weighted"] == pytest.approx(want["hallucination_rate"]["estimate"])
    assert e["hallucination_rate"]["ci"] == pytest.approx(want["hallucination_rate"]["ci"])
    for k in ("flag_rate", "precision", "recall"):
        assert e["checks"]["rouge"][k]["weighted"] == pytest.approx(want["checks"]["rouge"][k]["estimate"])
        assert e["checks"]["rouge"][k]["ci"] == pytest.approx(want["checks"]["rouge"][k]["ci"])
    one = label_estimate(tmp_path / "week1.csv")  # one round, every row labeled: the weighted sums as before
    w1, y1 = np.array([float(x["weight"]) for x in r1]), np.array([truth[x["id"]] for x in r1], float)
    assert one["hallucination_rate"]["weighted"] == pytest.approx((w1 * y1).sum() / w1.sum())
    assert one["window_cases_represented"] == pytest.approx(w1.sum()) == pytest.approx(44)


def test_rounds_that_cannot_be_combined_are_refused_with_the_reason(window44, tmp_path):
    """A second round queued from the same window without --labeled picks cases the first labeled: the
    merged estimate is refused, naming the case and both rounds (exit 2), never summed."""
    log, truth = window44
    week1, week2 = tmp_path / "week1.csv", tmp_path / "week2.csv"
    label_queue(log, 20, week1, seed=0)
    _label_from(week1, truth)
    label_queue(log, 30, week2, seed=1)  # the first round's labels not left out of its pool
    _label_from(week2, truth)
    label_merge([week2, week1], tmp_path / "all.csv")
    res = CliRunner().invoke(app, ["label-estimate", str(tmp_path / "all.csv")])
    assert res.exit_code == 2, res.output
    assert "was queued in round week2@" in res.output and "and again in round week1@" in res.output
    # A round whose rows were picked but none labeled: nothing stands for its strata.
    label_queue(log, 12, week2, seed=1, labeled=[week1])
    label_merge([week2, week1], tmp_path / "all.csv")
    with pytest.raises(VerifybenchError, match=r"round week2@.*stratum .*rows picked, none labeled"):
        label_estimate(tmp_path / "all.csv")
