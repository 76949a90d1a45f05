import json
import subprocess
import sys

from typer.testing import CliRunner

from verifybench.cli import app

runner = CliRunner()


def test_list_names_loaders_and_verifiers():
    out = runner.invoke(app, ["list"])
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
