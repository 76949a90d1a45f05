import re

SETUP = "python3 -m venv .venv && . .venv/bin/activate && pip install torch==2.13.0 && "


def _commands(root):
    readme = (root / "README.md").read_text()
    blocks = re.findall(r"```bash\n(.*?)\n```", readme, re.S)
    commands = [b for b in blocks if b.startswith("python3 -m venv")]
    assert len(commands) == 2, "the README must give exactly two set-up commands"
    return commands


def test_the_readme_gives_a_run_command_and_a_test_command(root):
    run, test = _commands(root)
    assert run.startswith(SETUP) and run.endswith("&& verifybench run")
    assert test.startswith(SETUP) and test.endswith("&& HF_HUB_OFFLINE=1 pytest")


def test_ci_builds_the_environment_once_and_runs_the_readme_test_command(root):
    """.ci/run = the README test command's set-up (one line, verbatim), its own jobs, then the README
    test command's test run (verbatim): together exactly the README's command, with the set-up once."""
    _, test = _commands(root)
    setup, _, tests = test.rpartition(" && ")
    lines = [line for line in (root / ".ci/run").read_text().splitlines()
             if line.strip() and not line.lstrip().startswith("#")]
    assert setup in lines, ".ci/run must build the environment with the README test command's set-up, verbatim"
    assert lines[-1] == tests, ".ci/run must end with the README test command's test run, verbatim"
    assert setup + " && " + tests == test
    assert sum("python3 -m venv" in line for line in lines) == 1, "the environment is built once"
    assert sum("pip install" in line for line in lines) == 1
    jobs = lines[lines.index(setup) + 1:-1]
    # lint and types fail CI before the slow part, and the demo suite is gated
    assert jobs[:2] == ["ruff check .", "mypy"]
    assert any(line.startswith("verifybench gate ") for line in jobs)
    # every method on the same cases is gated too, offline: its judge answers from the committed cassette
    run = next(line for line in jobs if "evals/refunds-compare.yaml" in line)
    assert run.startswith("VERIFYBENCH_REPLAY_ONLY=1 verifybench run ")
    assert any(line.startswith("verifybench gate ") and "metrics/refunds-compare.json" in line for line in jobs)
    assert (root / "metrics/refunds-compare.json").is_file() and any((root / "evals/cassettes/refunds-compare").rglob("*.json"))
    readme = (root / "README.md").read_text()
    assert "evals/refunds-compare.yaml" in readme and "metrics/refunds-compare.json" in readme


def test_the_run_command_installs_what_the_ci_set_up_installs_and_less(root):
    run, test = _commands(root)
    run_setup = run.rpartition(" && ")[0]
    assert run_setup == SETUP + "pip install -e ."
    assert "pip install -e '.[test,judge]'" in test and "torch==2.13.0" in run and "torch==2.13.0" in test
