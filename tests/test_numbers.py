"""Issue 26: numbers a newcomer can trust on the first screen. Each test writes its own small data: 400
support-bot answers, 60% hallucinated, with a vendor's logged 0-100 consistency score that ranks them
weakly (AUROC about 0.7), in three product areas, one of them too small for a threshold of its own."""

import csv
import json
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
import yaml
from conftest import write
from typer.testing import CliRunner

import verifybench
from verifybench import api
from verifybench.cli import app
from verifybench.errors import DataError, SuiteError, VerifybenchError
from verifybench.gating.gate import GateRefused
from verifybench.metrics.shortcuts import shortcut_report

N = 400
FIELDS = {"id": "id", "response": "response", "sources": "source", "label": "label", "doc_type": "area",
          "split": "split"}
METRICS = {"by": "doc_type", "bootstrap": 100}


def rows(flip: int | None = None) -> list[dict]:
    """The cases, the same every time (seeded): areas `billing` (300), `shipping` (60: too few calibration
    cases of each class for a threshold of its own) and `returns` (40)."""
    rng = np.random.default_rng(7)
    y = rng.random(N) < 0.6
    score = np.where(y, rng.beta(2.6, 2, N), rng.beta(2, 2.6, N))  # higher = more likely hallucinated
    out = []
    for i in range(N):
        area = "billing" if i < 300 else "shipping" if i < 360 else "returns"
        label = int(y[i]) if i != flip else 1 - int(y[i])
        out.append({"id": f"c{i:03d}", "area": area, "split": "calibration" if i % 2 == 0 else "test",
                    "label": label, "response": f"Answer {i} about {area}: " + "word " * int(5 + 10 * rng.random()),
                    "source": f"The {area} policy, paragraph {i % 7}.",
                    "vendor": round(float(1 - score[i]), 4),  # the vendor's consistency: higher = faithful
                    "noise": round(float(rng.random()), 4)})
    return out


def write_csv(path: Path, data: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=list(data[0]))
        w.writeheader()
        w.writerows(data)
    return path


def suite_doc(data: Path, name: str = "support-bot", verifiers=None, metrics=None, fields=None) -> dict:
    return {"name": name, "dataset": {"loader": "csv", "path": str(data), "fields": fields or FIELDS},
            "verifiers": verifiers or [
                {"scores": {"id": "vendor", "field": "meta.vendor", "higher_means": "faithful"}},
                {"scores": {"id": "noise", "field": "meta.noise"}}],
            "metrics": metrics or METRICS}


def cli(*args, env=None):
    result = CliRunner().invoke(app, [str(a) for a in args], env=env)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return SimpleNamespace(code=result.exit_code, out=result.stdout, err=result.stderr)


@pytest.fixture(scope="module")
def tmp(tmp_path_factory):
    return tmp_path_factory.mktemp("numbers")


@pytest.fixture(scope="module")
def data(tmp):
    return write_csv(tmp / "data" / "cases.csv", rows())


@pytest.fixture(scope="module")
def base(tmp, data):
    suite = write(tmp / "support-bot.yaml", yaml.safe_dump(suite_doc(data)))
    return api.run(suite, out=tmp / "base", progress=False)


def overall(run, vid="vendor"):
    return json.loads((run.run_dir / "metrics.json").read_text())["verifiers"][vid]


# --- thresholds: a default target that separates; near-degenerate marked ----------------------------------

def test_default_threshold_separates_where_max_f1_flags_nearly_everything(base):
    o = overall(base)["overall"]
    assert 0.6 < o["auroc"] < 0.8
    assert o["threshold"]["target"] == "max balanced accuracy" and o["threshold"]["kind"] == "fitted"
    t = o["test"]
    assert t["specificity"] >= 0.2 and t["recall"] >= 0.2
    assert not o["threshold"]["near_degenerate"] and not o["threshold"]["degenerate"]
    # Max F1 is still there by name, and on these cases it flags nearly every faithful one: marked so.
    policy = api.thresholds(base.run_dir, target="f1")
    row = policy.thresholds["vendor"]["all"]
    assert row.test is not None and row.test.f1 is not None and row.near_degenerate
    assert re.search(r"flags 9\d% of the (calibration|test) split's \d+ faithful cases", row.near_degenerate)
    out = cli("thresholds", base.run_dir, "--target", "f1")
    assert out.code == 0 and "NEAR-DEGENERATE" in out.out and "max F1" in out.out
    assert "NEAR-DEGENERATE" not in cli("thresholds", base.run_dir).out  # the default: max balanced accuracy


def test_near_degenerate_is_marked_in_the_report_summary_and_baseline(tmp, data):
    suite = write(tmp / "f1.yaml", yaml.safe_dump(suite_doc(data, name="f1", metrics={**METRICS, "target": "f1"})))
    run = api.run(suite, out=tmp / "f1-run", progress=False)
    near = overall(run)["overall"]["threshold"]["near_degenerate"]
    assert near and "faithful" in near
    html = (run.run_dir / "report.html").read_text()
    assert "near-degenerate" in html and "barely separates the classes" in html
    assert run.summary.set_index("verifier").loc["vendor", "threshold_near_degenerate"] == near
    doc = json.loads(api.baseline(run.run_dir, out=tmp / "f1.json").read_text())
    assert doc["verifiers"]["vendor"]["slices"]["all"]["threshold_near_degenerate"] == near
    result = api.gate(run.run_dir, tmp / "f1.json")
    f1 = next(c for c in result.gated if c.verifier == "vendor" and c.metric == "f1")
    assert "near-degenerate threshold" in f1.message


# --- baseline --policy with null entries: one rule, said loudly ---------------------------------------------

def test_null_policy_entries_are_not_gated_at_a_threshold(tmp, base):
    policy = api.thresholds(base.run_dir).document()
    policy["thresholds"]["vendor"] = {k: {**r, "threshold": None, "warning": "no threshold reaches precision >= 0.9"}
                                      for k, r in policy["thresholds"]["vendor"].items()}
    policy["thresholds"]["noise"]["billing"]["threshold"] = None  # one slice null, the whole set's given
    path = write(tmp / "null-policy.yaml", yaml.safe_dump(policy))
    out = cli("baseline", base.run_dir, "--policy", path, "--out", tmp / "null.json")
    assert out.code == 0, out.err
    doc = json.loads((tmp / "null.json").read_text())
    vendor, noise = doc["verifiers"]["vendor"]["slices"], doc["verifiers"]["noise"]["slices"]
    # Neither is refitted (at max F1 or anything) nor taken from the whole set: no threshold, said loudly.
    assert all(r["threshold"] is None and r["threshold_kind"] == "given" for r in vendor.values())
    assert "NOT GATED AT A THRESHOLD" in vendor["all"]["threshold_warning"]
    assert "no threshold reaches precision >= 0.9" in vendor["all"]["threshold_warning"]
    assert noise["billing"]["threshold"] is None and noise["all"]["threshold"] is not None
    assert noise["returns"]["threshold"] == policy["thresholds"]["noise"]["returns"]["threshold"]
    assert any(n.startswith("NOT GATED") and "vendor / all" in n for n in doc["notes"])
    assert "NOT GATED AT A THRESHOLD" in " ".join(out.err.split()) and "noise / billing" in out.err
    # The gate gates their AUROC and AUPRC, and only those.
    result = api.gate(base.run_dir, tmp / "null.json", max_drop=["f1=0.02", "auroc=0.02", "auprc=0.02"],
                      slices="each", min_cases=10)
    by = {(c.verifier, c.slice, c.metric): c for c in result.gated}
    assert by[("vendor", "all", "f1")].status == "skipped" and "NOT GATED" in by[("vendor", "all", "f1")].message
    assert by[("vendor", "all", "auroc")].status == "pass" and by[("vendor", "all", "auprc")].status == "pass"
    assert by[("noise", "billing", "f1")].status == "skipped" and by[("noise", "all", "f1")].status == "pass"


def test_a_verifier_the_policy_does_not_name_is_said_to_be_fitted(tmp, base):
    policy = api.thresholds(base.run_dir).document()
    del policy["thresholds"]["noise"]
    path = write(tmp / "partial-policy.yaml", yaml.safe_dump(policy))
    doc = json.loads(api.baseline(base.run_dir, out=tmp / "partial.json", policy=path).read_text())
    assert any(n.startswith("noise: not in the policy: its thresholds were fitted on this run") for n in doc["notes"])


# --- --min-per-class: what a lower minimum costs, shown -----------------------------------------------------

def test_fallback_warning_says_what_a_lower_minimum_costs(base):
    shipping = overall(base)["slices"]["shipping"]["threshold"]
    assert shipping["kind"] == "fallback"
    own, iv = shipping["own_fit"], shipping["own_fit"]["interval"]
    most = min(overall(base)["slices"]["shipping"]["needs"]["threshold"]["calibration_scored"].values())
    assert iv["low"] <= own["value"] <= iv["high"] and iv["resamples"] == 100
    w = shipping["warning"]
    assert f"`--min-per-class {most}`" in w and f"threshold {own['value']:.4g}" in w
    assert f"95% interval {iv['low']:.4g} to {iv['high']:.4g}" in w and "what a lower minimum costs" in w
    whole = overall(base)["overall"]["threshold"]["interval"]
    assert f"(95% interval {whole['low']:.4g} to {whole['high']:.4g})" in w
    # The small slice's own interval is wider than the whole set's: the price of fitting on fewer cases.
    assert iv["high"] - iv["low"] > whole["high"] - whole["low"]
    # With the lower minimum it gets that threshold, and the CLI shows its interval.
    policy = api.thresholds(base.run_dir, min_per_class=most)
    assert policy.thresholds["vendor"]["shipping"].threshold == own["value"]
    assert policy.thresholds["vendor"]["shipping"].interval95 == [iv["low"], iv["high"]]
    out = cli("thresholds", base.run_dir)
    assert f"--min-per-class {most}" in " ".join(out.out.split())


# --- one number, one meaning ----------------------------------------------------------------------------

def test_every_table_names_the_split_of_its_numbers(tmp, base, data):
    # The run summary.
    out = cli("run", tmp / "support-bot.yaml", "--out", tmp / "again", "-q")
    assert out.code == 0, out.err
    assert "AUROC, all cases" in out.out and "P / R / F1, test split" in out.out
    # compare and gate: a split column, "test" for every quality metric.
    out = cli("compare", base.run_dir, "--verifiers", "vendor,noise")
    header = next(line for line in out.out.splitlines() if "metric" in line)
    assert "split" in header
    assert {line.split("│")[4].strip() for line in out.out.splitlines()
            if line.count("│") > 8 and ("auroc" in line or "f1" in line)} == {"test"}
    api.baseline(base.run_dir, out=tmp / "plain.json")
    out = cli("gate", tmp / "again", "--baseline", tmp / "plain.json", "--summary", tmp / "gate.md")
    assert out.code == 0 and "split" in out.out
    md = (tmp / "gate.md").read_text()
    assert "| metric | split |" in md and "| vendor | all | auroc | test |" in md
    html = (base.run_dir / "report.html").read_text()
    # The summary table, the comparison table (every verifier per doc type) and each verifier's slice table.
    assert html.count("AUROC<br><span class=\"small\">all cases</span>") == 1 + 1 + 2


def test_report_slider_starts_on_its_threshold_and_counts_the_test_split(base):
    html = (base.run_dir / "report.html").read_text()
    sliders = json.loads(re.search(r'<script type="application/json" id="vb-curves">(.*?)</script>', html, re.S).group(1))
    m = overall(base)
    entries = {"all": m["overall"], **m["slices"]}
    ids = re.findall(r'data-slider="(s0-\d+)" data-verifier="vendor" data-slice="([^"]+)" data-split="test"', html)
    assert {k for _, k in ids} == set(entries)
    for sid, key in ids:
        c, sm = sliders[sid], entries[key]
        # The label is the slider's position: the fitted (or fallback) threshold is a row of its own.
        assert c["fitted"] in c["threshold"], key
        i = max(j for j, t in enumerate(c["threshold"]) if t >= c["fitted"])  # where the slider starts
        assert c["threshold"][i] == c["fitted"]
        # The counts at it are the test split's, as in the table beside it.
        conf = sm["test"]["confusion"]
        assert c["n_pos"] + c["n_neg"] == sm["test"]["n_scored"]
        assert (c["tp"][i], c["fp"][i]) == (conf["tp"], conf["fp"]), key


def test_shortcut_warning_states_the_cue_strength_in_the_direction_it_names():
    y = [1] * 30 + [0] * 30
    length = list(range(30)) + list(range(15, 45))  # hallucinated answers are shorter
    r = shortcut_report(y, {"length": length})
    auroc, strength = r["cues"]["length"]["auroc"], r["cues"]["length"]["strength"]
    assert auroc < 0.25 and strength == pytest.approx(1 - auroc)
    (w,) = r["warnings"]
    assert "a lower length means hallucinated" in w and f"AUROC {strength:.2f}" in w and f"{auroc:.2f}" not in w


def test_per_claim_evidence_wording_follows_the_score_direction(tmp, data):
    doc = suite_doc(data, name="claims", verifiers=[{"helpers.claim_units:WeakSupport": {"id": "claims"}}])
    run = api.run(write(tmp / "claims.yaml", yaml.safe_dump(doc)), out=tmp / "claims-run", progress=False)
    html = (run.run_dir / "report.html").read_text()
    found = re.findall(r"weak support \(hallucination score ([0-9.]+), higher = less supported; "
                       r"similarity to the evidence ([0-9.]+)\)", html)
    assert found and all(abs(float(s) + float(c) - 1) < 2e-3 for s, c in found)
    assert not re.search(r"weak support \(score", html)


# --- ways in that fail quietly -----------------------------------------------------------------------------

def test_a_field_path_can_name_a_key_holding_a_dot(tmp):
    data = tmp / "dots" / "cases.jsonl"
    # A record's own `meta` object is flattened into the case's meta: its key keeps its dots.
    recs = [{**r, "meta": {"published.hhem-2.1": r["vendor"] * 100}} for r in rows()]
    write(data, "".join(json.dumps(r) + "\n" for r in recs))
    fields = FIELDS
    good = {"scores": {"id": "hhem", "field": 'meta["published.hhem-2.1"]', "higher_means": "faithful",
                       "scale": 100}}
    doc = {**suite_doc(data, name="dots", verifiers=[good], fields=fields)}
    doc["dataset"]["loader"] = "jsonl"
    run = api.run(write(tmp / "dots.yaml", yaml.safe_dump(doc)), out=tmp / "dots-run", progress=False)
    assert run.n_error_verdicts == 0 and run.metrics_json["verifiers"]["hhem"]["overall"]["auroc"] > 0.6
    # The same key written with dots only: a suite error naming the keys that exist, before any verdict.
    doc["verifiers"] = [{"scores": {**good["scores"], "field": "meta.published.hhem-2.1"}}]
    with pytest.raises(SuiteError) as e:
        api.run(write(tmp / "dots-bad.yaml", yaml.safe_dump(doc)), out=tmp / "dots-bad", progress=False)
    msg = str(e.value)
    assert "no case of the first batch" in msg and 'meta["published.hhem-2.1"]' in msg and "meta.vendor" in msg
    assert not (tmp / "dots-bad" / "results.jsonl").exists() or not (tmp / "dots-bad" / "results.jsonl").read_text()
    # A record field path with brackets reads a key with a dot too.
    from verifybench.loaders.fields import get_field

    assert get_field({"meta": {"a.b": 1}}, 'meta["a.b"]') == 1
    with pytest.raises(SuiteError, match="field path"):
        api.describe(write(tmp / "dots-typo.yaml", yaml.safe_dump(
            {**doc, "dataset": {**doc["dataset"], "fields": {**fields, "label": 'meta["label'}}})))


def test_a_text_label_column_without_lists_names_the_missing_lists(tmp):
    recs = [{**r, "label": "wrong" if r["label"] else "right"} for r in rows()]
    data = write_csv(tmp / "text-labels" / "cases.csv", recs)
    suite = write(tmp / "text-labels.yaml", yaml.safe_dump(suite_doc(data, name="text-labels")))
    with pytest.raises(DataError) as e:
        api.run(suite, out=tmp / "text-labels-run", progress=False)
    msg = str(e.value)
    assert "hallucinated: [...]" in msg and "faithful: [...]" in msg
    assert "'wrong'" in msg and "'right'" in msg and "set on_error: skip in the suite's dataset block" not in msg
    out = cli("describe", suite)
    text = " ".join(out.out.split())
    assert out.code == 0 and "no list names" in text and "'wrong'" in text and "No case could be read" in text
    assert "┏" not in out.out  # no empty tables
    # Given the lists, the same file reads.
    doc = suite_doc(data, name="text-labels", fields={**FIELDS, "hallucinated": ["wrong"], "faithful": ["right"]})
    counts = api.describe(write(tmp / "text-labels-ok.yaml", yaml.safe_dump(doc)))
    assert counts["total"] == N and "unknown_labels" not in counts


@pytest.mark.slow  # five more runs
def test_runs_over_the_same_cases_compare_whatever_suite_or_way_in(tmp, base, data):
    baseline = api.baseline(base.run_dir, out=tmp / "identity.json")
    # A run from Python over the same CSV, read by pandas (numbers as numbers, not strings).
    df = pd.read_csv(data)
    py = verifybench.run(cases=df, fields=FIELDS, verifiers=suite_doc(data)["verifiers"], metrics=METRICS,
                         name="from-python", out=tmp / "from-python", progress=False)
    assert py.manifest["dataset"]["content_hash"] == base.manifest["dataset"]["content_hash"]
    assert api.gate(py.run_dir, baseline).exit_code == 0
    assert all(r["cases"] == N // 2 for r in api.compare(base.run_dir, py.run_dir))
    # The suite renamed (and moved): the same experiment.
    renamed = write(tmp / "elsewhere" / "renamed.yaml", yaml.safe_dump(suite_doc(data, name="support-bot-v2")))
    assert api.gate(api.run(renamed, out=tmp / "renamed", progress=False).run_dir, baseline).exit_code == 0
    # One label changed: other cases, refused by the gate and by compare.
    flipped = write_csv(tmp / "data2" / "cases.csv", rows(flip=3))
    other = api.run(write(tmp / "flipped.yaml", yaml.safe_dump(suite_doc(flipped))), out=tmp / "flipped",
                    progress=False)
    with pytest.raises(GateRefused, match="the cases' content differs"):
        api.gate(other.run_dir, baseline)
    with pytest.raises(VerifybenchError, match="different data"):
        api.compare(base.run_dir, other.run_dir)
    # Another test split over the same cases: refused, naming the setting.
    moved = suite_doc(data, name="support-bot", fields={k: v for k, v in FIELDS.items() if k != "split"},
                      metrics={**METRICS, "seed": 1})
    a = api.run(write(tmp / "seed1.yaml", yaml.safe_dump(moved)), out=tmp / "seed1", progress=False)
    b_doc = api.baseline(a.run_dir, out=tmp / "seed1.json")
    moved["metrics"] = {**METRICS, "seed": 2}
    b = api.run(write(tmp / "seed2.yaml", yaml.safe_dump(moved)), out=tmp / "seed2", progress=False)
    with pytest.raises(GateRefused, match="another test split over the same cases: metrics.seed 1 in the baseline, 2"):
        api.gate(b.run_dir, b_doc)


@pytest.mark.slow  # a second interpreter, as a CI step runs it
def test_piped_output_prints_full_table_cells(tmp, data):
    long_id = "vendor-consistency-score-from-the-support-logs"
    doc = suite_doc(data, name="piped", verifiers=[
        {"scores": {"id": long_id, "field": "meta.vendor", "higher_means": "faithful"}}])
    run = api.run(write(tmp / "piped.yaml", yaml.safe_dump(doc)), out=tmp / "piped-run", progress=False)
    env = {k: v for k, v in __import__("os").environ.items() if k not in ("COLUMNS", "LINES")}
    out = subprocess.run([sys.executable, "-m", "verifybench.cli", "thresholds", str(run.run_dir)],
                         capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    assert long_id in out.stdout and "…" not in out.stdout
    assert max(len(line) for line in out.stdout.splitlines()) > 80


def test_the_content_hash_is_the_same_however_it_is_held(monkeypatch):
    """The content hash is stored in every manifest and baseline: held as columns (to save memory on a
    million cases) it is still sha256 over the case digests in id order, equal ids in arrival order, as
    `sorted` gave it when each case was a tuple: ids past the BMP, accents, digits against letters,
    repeated ids, batches of any size across the packing boundary."""
    import hashlib
    import random

    from verifybench._util.identity import ContentHash, case_digest
    from verifybench.cases import Case

    ids = ["a10", "a9", "Z", "z", "é", "e\u0301", "😀", "\uffff", "中", "a", "a", "", "id with space"]
    cases = [Case(id=i, dataset="d", response=f"answer {n}", sources=[{"id": "s", "text": f"source {n}"}], label=n % 2 == 0)
             for n, i in enumerate(ids * 3)]
    random.Random(0).shuffle(cases)

    def as_before(cs):
        h = hashlib.sha256(b"verifybench cases v1\n")
        for _, d in sorted(((c.id, case_digest(c)) for c in cs), key=lambda p: p[0]):
            h.update(d)
        return h.hexdigest()

    monkeypatch.setattr(ContentHash, "_PACK", 5)  # several packed arrays and a pending remainder
    for size in (1, 4, 7, len(cases)):
        h = ContentHash()
        for start in range(0, len(cases), size):
            h.add(cases[start:start + size])
        assert h.hexdigest() == as_before(cases), size
    assert ContentHash().hexdigest() == as_before([])
    # Pinned as the code before the columns wrote it: a stored baseline's hash still matches.
    h = ContentHash()
    h.add(cases[:3])
    assert h.hexdigest() == "64e2b5bc485bcd9df1dbc4a993e33a3f17f75fdfb048c7fab79aca31184334b0"
