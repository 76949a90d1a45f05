import json
import subprocess
import sys

from conftest import write
from typer.testing import CliRunner

from verifybench.cli import app

runner = CliRunner()


def test_components_names_loaders_and_verifiers():
    out = runner.invoke(app, ["components"])
    assert out.exit_code == 0
    for name in ("jsonl", "csv", "parquet", "hf", "halueval", "summedits", "bleu", "rouge"):
        assert name in out.stdout


def test_describe_json_counts(root):
    out = runner.invoke(app, ["describe", str(root / "evals/summedits.yaml"), "--json"])
    assert out.exit_code == 0, out.output
    counts = json.loads(out.stdout)
    assert counts["total"] == 4681 and len(counts["by_doc_type"]) == 8


def test_demo_describe_meets_the_brief(root):
    counts = json.loads(runner.invoke(app, ["describe", str(root / "evals/demo.yaml"), "--json"]).stdout)
    assert counts["total"] >= 120 and len(counts["by_doc_type"]) >= 3
    assert abs(counts["by_label"]["hallucinated"] - counts["total"] / 2) <= counts["total"] * 0.1


def test_demo_set_is_what_the_generator_writes(root):
    """datasets/demo/cases.jsonl is generated, never edited by hand: regenerating changes nothing."""
    sys.path.insert(0, str(root / "datasets/demo"))
    import generate

    rows = generate.generate()
    on_disk = [json.loads(line) for line in (root / "datasets/demo/cases.jsonl").read_text().splitlines()]
    assert rows == on_disk
    assert {r["meta"]["error_type"] for r in rows if r["label"] == "hallucinated"} == set(generate.ERROR_TYPES)


def test_run_and_report_commands(tmp_path, root):
    run_dir = tmp_path / "run"
    out = runner.invoke(app, ["run", str(root / "evals/demo.yaml"), "--out", str(run_dir), "-q", "--limit", "30"])
    assert out.exit_code == 0, out.output
    assert out.stdout.strip().splitlines()[-1] == str(run_dir / "report.html")
    (run_dir / "report.html").unlink()
    again = runner.invoke(app, ["report", str(run_dir)])
    assert again.exit_code == 0 and (run_dir / "report.html").exists()


def test_errors_are_one_clear_line(tmp_path):
    out = runner.invoke(app, ["run", str(tmp_path / "nope.yaml")])
    assert out.exit_code == 2
    assert "nope.yaml: no such suite file" in out.output and "Traceback" not in out.output
    out = runner.invoke(app, ["report", str(tmp_path)])
    assert out.exit_code == 2 and "manifest.json: not found" in out.output


def test_console_script_is_installed():
    out = subprocess.run([sys.executable, "-m", "verifybench.cli", "--help"], capture_output=True, text=True)
    assert out.returncode == 0 and "describe" in out.stdout


# --- error text is shown as it is --------------------------------------------------------------------------

def _suite(tmp_path, loader, path, **dataset):
    import yaml

    raw = {"name": "t", "dataset": {"loader": loader, "path": str(path), **dataset}, "verifiers": ["rouge"]}
    return write(tmp_path / "t.yaml", yaml.safe_dump(raw))


def test_record_numbers_and_bracketed_values_survive_the_terminal(tmp_path):
    import pandas as pd

    df = pd.DataFrame({"response": [f"r{i}" for i in range(20)], "sources": ["s"] * 20,
                       "label": ["1"] * 12 + ["[/oops]"] + ["0"] * 7})
    df.to_parquet(tmp_path / "c.parquet")
    out = runner.invoke(app, ["run", str(_suite(tmp_path, "parquet", tmp_path / "c.parquet")), "--out",
                              str(tmp_path / "run"), "-q"])
    assert out.exit_code == 2, out.output
    assert "c.parquet[record 12]: field 'label': label value '[/oops]' is in neither" in out.output.replace("\n", "")
    assert "Traceback" not in out.output and "MarkupError" not in out.output
    out = runner.invoke(app, ["describe", str(tmp_path / "t.yaml")])  # describe lists bad records, and goes on
    assert out.exit_code == 0, out.output
    assert "19 cases, 1 records skipped" in out.output and "[record 12]" in out.output and "[/oops]" in out.output
    assert "stops at these (on_error: raise)" in out.output


def test_no_cases_is_a_clear_failure(tmp_path):
    write(tmp_path / "empty.csv", "response,sources,label\n")
    out = runner.invoke(app, ["run", str(_suite(tmp_path, "csv", tmp_path / "empty.csv")), "--out",
                              str(tmp_path / "run"), "-q"])
    assert out.exit_code == 2 and "no cases:" in out.output and "Traceback" not in out.output
    manifest = json.loads((tmp_path / "run/manifest.json").read_text())
    assert manifest["status"] == "failed" and "no cases" in manifest["error"]


# --- describe: labels as read, and what each slice needs ----------------------------------------------------

def _labeled(tmp_path, per_slice: dict[str, tuple[int, int]], split: bool = False):
    rows, i = [], 0
    for doc, (n_h, n_f) in per_slice.items():
        for label, n in (("1", n_h), ("0", n_f)):
            for k in range(n):
                row = {"id": f"c{i}", "response": f"answer {i}", "sources": "doc", "label": label, "kind": doc}
                if split:
                    row["split"] = "calibration" if k % 2 == 0 else "test"
                rows.append(row)
                i += 1
    import pandas as pd

    pd.DataFrame(rows).to_csv(tmp_path / "c.csv", index=False)
    return _suite(tmp_path, "csv", tmp_path / "c.csv",
                  fields={"doc_type": "kind", **({"split": "split"} if split else {})})


def test_describe_shows_which_raw_values_became_which_label(tmp_path):
    import pandas as pd

    pd.DataFrame({"response": ["a", "b", "c", "d", "e"], "sources": ["s"] * 5,
                  "is_correct": [1.0, 0.0, 1.0, 1.0, None]}).to_csv(tmp_path / "c.csv", index=False)
    suite = _suite(tmp_path, "csv", tmp_path / "c.csv", fields={"label": "is_correct", "positive": "faithful"},
                   on_error="skip", require_labels=True)
    counts = json.loads(runner.invoke(app, ["describe", str(suite), "--json"]).stdout)
    assert counts["label_values"] == [
        {"field": "is_correct", "value": '"0.0"', "label": "hallucinated", "cases": 1},
        {"field": "is_correct", "value": '"1.0"', "label": "faithful", "cases": 3},
    ]
    assert counts["skipped_records"] == 1 and "field 'is_correct'" in counts["skipped_examples"][0]
    text = runner.invoke(app, ["describe", str(suite)]).stdout
    assert "labels as read" in text and '"1.0"' in text and "faithful" in text
    # without require_labels the empty label is an unlabeled case, counted as such
    suite = _suite(tmp_path, "csv", tmp_path / "c.csv", fields={"label": "is_correct", "positive": "faithful"})
    counts = json.loads(runner.invoke(app, ["describe", str(suite), "--json"]).stdout)
    assert counts["skipped_records"] == 0 and counts["by_label"] == {"faithful": 3, "hallucinated": 1, "unlabeled": 1}


def test_describe_says_how_many_cases_each_slice_needs(tmp_path):
    """Split from the data: 30 of each class on the calibration side for a threshold, 30 test cases for a gate."""
    suite = _labeled(tmp_path, {"billing": (80, 70), "refunds": (20, 30)}, split=True)
    counts = json.loads(runner.invoke(app, ["describe", str(suite), "--json"]).stdout)
    sl = counts["slices"]
    assert (sl["by"], sl["min_per_class"], sl["min_cases"]) == ("doc_type", 30, 30)
    billing, refunds = sl["rows"]["billing"], sl["rows"]["refunds"]
    assert billing["calibration"] == {"hallucinated": 40, "faithful": 35} and billing["threshold"] and billing["gate"]
    assert refunds["calibration"] == {"hallucinated": 10, "faithful": 15}
    assert refunds["more_for_threshold"] == {"hallucinated": 20, "faithful": 15} and not refunds["threshold"]
    assert refunds["test"] == {"hallucinated": 10, "faithful": 15} and refunds["more_for_gate"] == 5
    assert sl["rows"]["all"]["hallucinated"] == 100 and sl["rows"]["all"]["threshold"]
    text = runner.invoke(app, ["describe", str(suite)]).stdout
    assert "+20 h, +15 f" in text and "+5" in text


def test_describe_counts_what_a_seeded_split_needs_in_all(tmp_path):
    """No split field, `estimate: split`: half the cases go to test, so 30 calibrated of a class means about
    60 labeled."""
    import yaml

    suite = _labeled(tmp_path, {"tiny": (4, 0)})
    raw = yaml.safe_load(suite.read_text())
    suite.write_text(yaml.safe_dump({**raw, "metrics": {"estimate": "split"}}))
    row = json.loads(runner.invoke(app, ["describe", str(suite), "--json"]).stdout)["slices"]["rows"]["tiny"]
    assert row["calibration"]["faithful"] == 0 and row["more_for_threshold"]["faithful"] == 60
    assert row["more_for_threshold"]["hallucinated"] == 2 * (30 - row["calibration"]["hallucinated"])
    assert row["more_for_gate"] == 2 * (30 - row["test"]["hallucinated"])


def test_describe_counts_what_cross_fitting_needs(tmp_path):
    """The default below 300 labeled cases: 10 of each class labeled in all for the whole set's threshold,
    and every slice gets one (pooled) once the whole set has one."""
    suite = _labeled(tmp_path, {"tiny": (4, 0), "big": (20, 20)})
    sl = json.loads(runner.invoke(app, ["describe", str(suite), "--json"]).stdout)["slices"]
    assert sl["min_per_class"] == 10 and sl["split"].startswith("cross-fitted")
    assert sl["rows"]["all"]["threshold"] and sl["rows"]["tiny"]["threshold"]
    assert sl["rows"]["tiny"]["more_for_threshold"] == {"hallucinated": 0, "faithful": 0}
    text = " ".join(runner.invoke(app, ["describe", str(suite)]).stdout.split())
    assert "10 of each class labeled in all (cross-fitted; slices pooled)" in text


def test_describe_says_what_a_few_cases_lack_for_cross_fitting(tmp_path):
    suite = _labeled(tmp_path, {"tiny": (4, 0)})
    row = json.loads(runner.invoke(app, ["describe", str(suite), "--json"]).stdout)["slices"]["rows"]["all"]
    assert not row["threshold"] and row["more_for_threshold"] == {"hallucinated": 6, "faithful": 10}


def test_describe_tables_take_any_doc_type(tmp_path):
    suite = _labeled(tmp_path, {"[/weird]": (3, 3), "[bold]x": (2, 2)})
    out = runner.invoke(app, ["describe", str(suite)])
    assert out.exit_code == 0, out.output
    assert "[/weird]" in out.stdout and "[bold]x" in out.stdout


# --- loader plugins ----------------------------------------------------------------------------------------

def test_list_shows_entry_point_loaders(tmp_path, root):
    """A package's `verifybench.loaders` entry point, installed as pip would (a dist-info on the path)."""
    import os

    dist = tmp_path / "site" / "ticketkit-1.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: ticketkit\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[verifybench.loaders]\ntickets = helpers.loaders:tickets\n"
                                           "broken = helpers.nowhere:gone\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root / "src"), str(root / "tests"), str(tmp_path / "site")])}
    out = subprocess.run([sys.executable, "-m", "verifybench.cli", "components"], capture_output=True, text=True, env=env,
                         cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert any("tickets" in line and "Support tickets" in line for line in lines)
    assert any("broken" in line and "cannot be loaded" in line for line in lines)
    # And a suite names it by its entry point.
    from helpers.loaders import write_tickets

    write_tickets(tmp_path / "t", "support", 6)
    write(tmp_path / "s.yaml", f"name: s\ndataset: {{loader: tickets, folder: {tmp_path / 't'}}}\nverifiers: [rouge]\n")
    out = subprocess.run([sys.executable, "-m", "verifybench.cli", "describe", "s.yaml", "--json"], capture_output=True,
                         text=True, env=env, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["label_values"] == [
        {"field": "ok", "value": "false", "label": "hallucinated", "cases": 3},
        {"field": "ok", "value": "true", "label": "faithful", "cases": 3}]
