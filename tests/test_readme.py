import re


def test_ci_runs_the_readme_test_command(root):
    readme = (root / "README.md").read_text()
    blocks = re.findall(r"```bash\n(.*?)\n```", readme, re.S)
    commands = [b for b in blocks if b.startswith("python3 -m venv")]
    assert len(commands) == 2, "the README must give exactly two set-up commands"
    run, test = commands
    assert run.endswith("verifybench run") and "pytest" in test
    ci = (root / ".ci/run").read_text()
    assert test in ci.splitlines(), ".ci/run must run the README's test command verbatim"
