"""Every stored file has one typed, versioned reader: files as verifybench 0.1 wrote them are read (a team's
committed baseline or policy keeps working across upgrades), a newer format is refused by name, and
docs/formats.md is what the models say."""

import csv
import json
import shutil
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from verifybench.cli import app
from verifybench.errors import VerifybenchError
from verifybench.formats import KINDS, Baseline, FormatError, Manifest
from verifybench.formats.base import StaleFormat, written_by
from verifybench.formats.docs import render
from verifybench.formats.guardfile import GuardSpec
from verifybench.formats.metrics import Metrics
from verifybench.formats.policy import Policy

ROOT = Path(__file__).resolve().parents[1]
V01 = ROOT / "tests" / "fixtures" / "formats" / "v0.1"


def test_files_verifybench_0_1_wrote_are_read_and_migrated():
    m = Manifest.read(V01 / "run" / "manifest.json")
    assert (m.kind, m.format) == ("verifybench.manifest", Manifest.VERSION)
    assert [v.id for v in m.verifiers] == ["rouge", "bleu"] and m.status == "complete"
    b = Baseline.read(V01 / "baseline-policy.json")
    assert b.format == Baseline.VERSION and b.verifiers["rouge"].slices["all"].threshold == pytest.approx(0.0645, abs=1e-4)
    assert len(b.verifiers["bleu"].test_scores) == 40


def test_the_committed_demo_baseline_is_read():
    b = Baseline.read(ROOT / "metrics" / "demo.json")
    assert set(b.verifiers) == {"rouge", "bleu", "anchors"}


def test_a_newer_format_is_refused_naming_who_wrote_it(tmp_path):
    doc = json.loads((V01 / "baseline.json").read_text())
    doc.update(kind="verifybench.baseline", format=Baseline.VERSION + 1, written_by="verifybench 9.0.0")
    path = tmp_path / "b.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(FormatError, match=rf"b.json: verifybench.baseline format {Baseline.VERSION + 1}, written by "
                                          r"verifybench 9.0.0; .* reads verifybench.baseline formats up to "):
        Baseline.read(path)


def test_another_kind_and_a_bad_field_are_named(tmp_path):
    doc = json.loads((V01 / "run" / "manifest.json").read_text())
    with pytest.raises(FormatError, match=r"x.json: a 'verifybench.manifest' file, not a 'verifybench.baseline'"):
        Baseline.parse({**doc, "kind": "verifybench.manifest"}, "x.json")
    doc["verifiers"][1]["config_hash"] = 7
    with pytest.raises(FormatError, match=r"m.json: verifiers\[1\].config_hash: Input should be a valid string"):
        Manifest.parse(doc, "m.json")
    with pytest.raises(FormatError, match=r"m.json: status: Input should be 'running'"):
        Manifest.parse({**doc, "status": "done"}, "m.json")


def test_a_metrics_file_from_before_kinds_is_stale_not_migrated():
    with pytest.raises(StaleFormat, match="computed again by `verifybench report`"):
        Metrics.read(V01 / "run" / "metrics.json")


def test_a_written_file_names_its_kind_format_and_writer(tmp_path):
    b = Baseline.read(V01 / "baseline.json")
    path = b.model_copy(update={"written_by": written_by()}).write(tmp_path / "again.json")
    doc = json.loads(path.read_text())
    assert list(doc)[:3] == ["kind", "format", "written_by"]
    assert doc["written_by"].startswith("verifybench ")
    assert Baseline.read(path) == b.model_copy(update={"written_by": doc["written_by"]})


def test_every_field_of_every_format_says_what_it_means():
    import typing

    from pydantic import BaseModel

    from verifybench.formats.base import Stored

    def models(t):
        if isinstance(t, type) and issubclass(t, BaseModel):
            return [t]
        return [m for a in typing.get_args(t) for m in models(a)]

    seen, todo, bare = set(), [m for m, _ in KINDS.values()], []
    while todo:
        model = todo.pop()
        if model in seen:
            continue
        seen.add(model)
        for name, f in model.model_fields.items():
            if name not in Stored.model_fields:
                bare += [] if f.description else [f"{model.__name__}.{name}"]
                todo += models(f.annotation)
    assert len(seen) > 30 and not bare, bare
    names = [m.__name__ for m in seen]
    assert len(names) == len(set(names)), "two models of one name: docs/formats.md's sections would collide"


def test_the_architecture_page_names_every_format_s_model():
    page = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    table = page.split("<!-- formats: begin -->")[1].split("<!-- formats: end -->")[0]
    named = {row.split("|")[2].strip().strip("`") for row in table.strip().splitlines()[2:]}
    assert named == {model.__name__ for model, _ in KINDS.values()}, "update docs/architecture.md's formats table"


def test_docs_formats_page_is_generated_from_the_models():
    page = (ROOT / "docs" / "formats.md").read_text(encoding="utf-8")
    assert page == render(), "docs/formats.md is stale: python -m verifybench.formats.docs > docs/formats.md"
    for kind in KINDS:
        assert f"## {kind}" in page


def test_a_v0_1_policy_and_guard_file_are_read_as_their_legacy_format():
    p = Policy.read(V01 / "policy.yaml")
    assert (p.kind, p.format, p.by) == ("verifybench.policy", Policy.VERSION, "doc_type")
    assert p.verifiers is not None and p.verifiers["rouge"].config_hash == "43f430a92b8d2479"
    assert p.mapping()["bleu"]["support_answer"] == pytest.approx(0.8075, abs=1e-4)
    g = GuardSpec.read(V01 / "guard.yaml")  # written by hand, without kind or format: format 1
    assert (g.kind, g.format, g.checks, g.action) == ("verifybench.guard", GuardSpec.VERSION, ["rouge", "bleu"], "block")


def test_a_format_2_policy_is_read_with_its_thresholds_as_written():
    """The policy format before cross-fitted runs (tests/fixtures/formats/policy-format2): read as today's
    format, every threshold as the file gives it."""
    path = ROOT / "tests" / "fixtures" / "formats" / "policy-format2" / "policy.yaml"
    raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert raw["format"] == 2 and Policy.VERSION == 3
    p = Policy.read(path)
    assert (p.format, p.by, p.estimate) == (Policy.VERSION, "doc_type", None)
    assert p.mapping() == {v: {k: e["threshold"] for k, e in rows.items()} for v, rows in raw["thresholds"].items()}


def test_a_guard_built_from_the_v0_1_files_decides_as_0_1_did(tmp_path):
    """The same guard hash, policy hash, scores and actions as the decision log 0.1 wrote through them."""
    from verifybench.guard import Guard

    records = [json.loads(line) for line in (V01 / "guard-log" / "decisions-8155-1.jsonl").read_text().splitlines()]
    with Guard(V01 / "guard.yaml", log_dir=tmp_path / "log") as g:
        assert (g.hash, g.policy_hash) == (records[0]["decision"]["guard_hash"], records[0]["decision"]["policy_hash"])
        for r in records:
            d = g.check(r["response"], r["sources"], r["question"], r["doc_type"], r["meta"])
            assert d.action == r["decision"]["action"]
            assert [c.score for c in d.checks] == [c["score"] for c in r["decision"]["checks"]]


def test_a_hand_written_cascade_bound_under_its_old_name_is_migrated(tmp_path):
    path = tmp_path / "guard.yaml"
    path.write_text("policy: p.yaml\ncombination: cascade\ncascade: {pass_at_or_below: 0.1, flag_at_or_above: 0.8}\n")
    assert GuardSpec.read(path).cascade.allow_at_or_below == 0.1
    path.write_text("kind: verifybench.guard\nformat: 2\npolicy: p.yaml\ncascade: {pass_at_or_below: 0.1}\n")
    with pytest.raises(FormatError, match=r"guard.yaml: cascade.pass_at_or_below: unknown key \(known: confidence, "
                                          r"allow_at_or_below, flag_at_or_above\)"):
        GuardSpec.read(path)


def test_a_v0_1_decision_log_is_read_line_by_line_as_its_legacy_format(tmp_path):
    from verifybench.feedback.window import from_log
    from verifybench.loaders.guardlog import read_log

    records, torn = read_log(V01 / "guard-log")
    assert not torn and [(r.format, r.decision.action) for r in records] == [(2, "blocked"), (2, "blocked"), (2, "allowed")]
    w = from_log(V01 / "guard-log")  # drift's and the label queue's reader: the same model
    assert w.ids.tolist() == [r.id for r in records] and w.scores["rouge"].tolist() == [0.6, 0.8571428571428572, 0.0]
    # a line a newer verifybench wrote is refused naming its file, line and writer; the lines before it read
    log = tmp_path / "log"
    log.mkdir()
    lines = (V01 / "guard-log" / "decisions-8155-1.jsonl").read_text().splitlines()
    newer = json.loads(lines[1]) | {"kind": "verifybench.decision", "format": 9, "written_by": "verifybench 9.0.0"}
    (log / "decisions-1-1.jsonl").write_text(lines[0] + "\n" + json.dumps(newer) + "\n")
    with pytest.raises(VerifybenchError, match=r"decisions-1-1.jsonl:2: verifybench.decision format 9, written by "
                                          r"verifybench 9.0.0; .* upgrade verifybench"):
        read_log(log)


def test_a_v0_1_drift_record_is_read():
    from verifybench.formats import DriftRecord

    d = DriftRecord.read(V01 / "drift.json")
    assert (d.format, d.status, d.exit_code, d.limits.max_psi) == (1, "fail", 1, 0.2)
    assert [(r.check, r.slice, r.status) for r in d.rows][:2] == [("rouge", "all", "drift"), ("rouge", "support_answer", "drift")]


# --- the v0.1 files through the real commands -------------------------------------------------------------

@pytest.fixture
def v01(tmp_path) -> Path:
    """The v0.1 files copied (no command writes into the committed fixtures), and beside them the suite
    with its data path pointed at this checkout's demo set (0.1 wrote the path of the machine it ran on)."""
    here = shutil.copytree(V01, tmp_path / "v0.1")
    suite = yaml.safe_load((here / "suite.yaml").read_text())
    suite["dataset"]["path"] = str(ROOT / "datasets" / "demo" / "cases.jsonl")
    (here / "suite-here.yaml").write_text(yaml.safe_dump(suite))
    return here


def _cli(*args) -> object:
    return CliRunner().invoke(app, [str(a) for a in args])


@pytest.mark.parametrize("baseline", ["baseline.json", "baseline-policy.json"])
def test_the_v0_1_run_gates_against_its_v0_1_baselines(v01, baseline):
    r = _cli("gate", v01 / "run", "--baseline", v01 / baseline)
    assert r.exit_code == 0 and "gate passed" in r.output, r.output


def test_a_run_with_the_v0_1_policy_holds_its_thresholds(v01, tmp_path):
    r = _cli("run", v01 / "suite-here.yaml", "--policy", v01 / "policy.yaml", "--out", tmp_path / "r", "-q")
    assert r.exit_code == 0, r.output
    metrics = json.loads((tmp_path / "r" / "metrics.json").read_text())
    held = Policy.read(V01 / "policy.yaml").mapping()
    for vid, rows in held.items():
        m = metrics["verifiers"][vid]
        assert m["overall"]["threshold"]["value"] == rows["all"]
        assert m["slices"]["support_answer"]["threshold"]["value"] == rows["support_answer"]
        assert m["overall"]["threshold"]["source"].startswith("policy")


def test_drift_of_the_v0_1_log_against_the_v0_1_baseline_gives_the_v0_1_record_and_history_reads_it(v01, tmp_path):
    """drift.json was written by 0.1 with this command: the same figures now, and `history` shows it. 0.1
    alarmed on its limits alone (exit 1); 3 production cases against 40 are within sampling noise, so
    now it passes (issue 44: a figure drifts only when beyond its limit and significant)."""
    r = _cli("drift", v01 / "baseline-policy.json", v01 / "guard-log", "--min-cases", "1", "--out", tmp_path / "d.json")
    assert r.exit_code == 0 and "within sampling noise" in r.output, r.output
    now, then = json.loads((tmp_path / "d.json").read_text()), json.loads((V01 / "drift.json").read_text())
    assert (then["status"], then["exit_code"], now["status"], now["exit_code"]) == ("fail", 1, "pass", 0)
    for a, b in zip(now["rows"], then["rows"], strict=True):
        figures = {k: v for k, v in b.items() if k not in ("status", "why")}
        assert {k: a[k] for k in figures} == pytest.approx(figures), b["check"]
        assert (b["status"], a["status"]) == ("drift", "ok") and "within sampling noise" in a["why"]
    r = _cli("history", v01 / "drift.json", tmp_path / "d.json", "--out", tmp_path / "h.html")
    assert r.exit_code == 0, r.output
    page = (tmp_path / "h.html").read_text()
    assert 'data-status="fail"' in page and 'data-status="pass"' in page and 'data-file="drift.json"' in page


def test_a_reader_of_a_v0_1_metrics_json_says_to_compute_it_again_and_then_reads_it(v01):
    for args in (["drift", v01 / "run", v01 / "guard-log"], ["history", v01 / "run", "--out", v01 / "h.html"]):
        r = _cli(*args)
        assert r.exit_code == 2 and f"verifybench report {v01 / 'run'}" in " ".join(r.output.split()), r.output
    assert _cli("report", v01 / "run").exit_code == 0  # no verifier runs: the stored results, measured again
    assert json.loads((v01 / "run" / "metrics.json").read_text())["kind"] == "verifybench.metrics"
    r = _cli("history", v01 / "run", "--out", v01 / "h.html")  # a reader of metrics.json, through the model
    assert r.exit_code == 0 and "fixture" in (v01 / "h.html").read_text(), r.output


def _fill_labels(path: Path, out: Path) -> None:
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    at = rows[0].index("label")
    for i, row in enumerate(rows[1:]):
        row[at] = "hallucinated" if i % 2 == 0 else "faithful"
    with open(out, "w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows(rows)


def test_a_v0_1_label_queue_is_read_with_a_note_that_its_rows_are_unchecked(v01, tmp_path):
    labeled = tmp_path / "labeled.csv"  # 0.1 wrote no queue record and no `queue` column
    _fill_labels(v01 / "queue.csv", labeled)
    note = "a label queue from before queue records (verifybench 0.1"
    r = _cli("label-estimate", labeled)
    assert r.exit_code == 0 and note in " ".join(r.output.split()) and "not queued" not in r.output, r.output
    assert "hallucination rate" in r.output
    r = _cli("label-queue", v01 / "guard-log", "--budget", "1", "--labeled", labeled, "--out", tmp_path / "next.csv",
             "--json")
    assert r.exit_code == 0 and note in " ".join(r.output.split()), r.output
    got = json.loads(r.stdout)
    assert got["already_labeled"] == 2 and got["pool"] == 1 and got["not_queued"] == []
    with open(tmp_path / "next.csv", newline="", encoding="utf-8") as f:
        header = next(csv.reader(f))
    assert header[-1] == "queue"  # this version's CSV names its record: without it, it is refused
    r = _cli("label-merge", labeled, "--out", tmp_path / "merged.csv")
    assert r.exit_code == 0 and "2 cases, 2 labeled" in r.output, r.output


# --- a newer format of each kind is refused by name -------------------------------------------------------

def _newest(kind: str) -> dict:
    from verifybench.formats.labelqueue import QueueRecord

    docs = {
        "verifybench.manifest": lambda: json.loads((V01 / "run" / "manifest.json").read_text()),
        "verifybench.baseline": lambda: json.loads((V01 / "baseline.json").read_text()),
        "verifybench.metrics": lambda: json.loads((V01 / "run" / "metrics.json").read_text()),
        "verifybench.policy": lambda: yaml.safe_load((V01 / "policy.yaml").read_text()),
        "verifybench.guard": lambda: yaml.safe_load((V01 / "guard.yaml").read_text()),
        "verifybench.decision": lambda: json.loads((V01 / "guard-log" / "decisions-8155-1.jsonl").read_text()
                                                   .splitlines()[0]),
        "verifybench.drift": lambda: json.loads((V01 / "drift.json").read_text()),
        QueueRecord.KIND: lambda: {"csv": "queue.csv"},  # 0.1 wrote no queue record
    }
    model = KINDS[kind][0]
    return docs[kind]() | {"kind": kind, "format": model.VERSION + 1, "written_by": "verifybench 9.0.0"}


@pytest.mark.parametrize("kind", list(KINDS))
def test_a_newer_format_of_every_kind_is_refused_naming_its_writer(kind):
    model = KINDS[kind][0]
    with pytest.raises(FormatError, match=rf"x: {kind} format {model.VERSION + 1}, written by verifybench 9.0.0; "
                                          rf"this installation \(verifybench .*\) reads {kind} formats up to "
                                          rf"{model.VERSION}: upgrade verifybench to read it"):
        model.parse(_newest(kind), "x")


def test_the_commands_refuse_a_newer_baseline_and_policy_by_name(v01, tmp_path):
    newer = tmp_path / "newer.json"
    newer.write_text(json.dumps(_newest("verifybench.baseline")))
    r = _cli("gate", v01 / "run", "--baseline", newer)
    assert r.exit_code == 2 and "written by verifybench 9.0.0" in " ".join(r.output.split()), r.output
    policy = v01 / "newer-policy.yaml"
    policy.write_text(yaml.safe_dump(_newest("verifybench.policy")))
    r = _cli("run", v01 / "suite-here.yaml", "--policy", policy, "--out", tmp_path / "r", "-q")
    assert r.exit_code == 2 and "written by verifybench 9.0.0" in " ".join(r.output.split()), r.output
    assert not (tmp_path / "r").exists()

    from verifybench.guard import Guard, GuardError

    with pytest.raises(GuardError, match=f"verifybench.policy format {Policy.VERSION + 1}, written by verifybench 9.0.0"):
        Guard(policy, log_dir=False)
