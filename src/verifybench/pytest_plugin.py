"""pytest plugin (entry point `pytest11`): gate hallucination detection inside an existing test suite.

```python
def test_detection_did_not_regress(verifybench):
    verifybench.assert_no_regression("evals/demo.yaml", baseline="metrics/demo.json", max_drop=["f1=0.02"])
```

or with a marker, no test body needed beyond the fixture:

```python
@pytest.mark.verifybench(suite="evals/demo.yaml", baseline="metrics/demo.json")
def test_demo(verifybench_gate):
    assert not verifybench_gate.failed, verifybench_gate.markdown
```

A suite runs once per pytest session, however many tests use it: the run (report.html, metrics.json)
is kept under a stable path, `reports/pytest/<suite>/` beside the rootdir (`--verifybench-out` moves
it), replaced by the next session, and printed in the test summary with each gate's outcome.

LLM calls are replay-only by default (`VERIFYBENCH_REPLAY_ONLY=1`): a cache miss fails that case instead
of calling a paid model; pass `--verifybench-live` to allow calls.
"""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path
from typing import Any

import pytest

from verifybench.errors import VerifybenchError
from verifybench.gating.gate import GateRefused, GateResult, gate, markdown_summary
from verifybench.rundir import MANIFEST

# Imported with the plugin, not on first use: pytest's in-process runs (pytester) unload the modules
# first imported inside them, and a run's verifier classes must come from the modules loaded now.
from verifybench.runs.start import run

OUT = Path("reports") / "pytest"


def pytest_addoption(parser):
    group = parser.getgroup("verifybench")
    group.addoption("--verifybench-data-dir", default=None, help="where ${VERIFYBENCH_DATA} points")
    group.addoption("--verifybench-live", action="store_true", help="allow live LLM calls (default: replay only)")
    group.addoption("--verifybench-out", default=None,
                    help=f"where each suite's run is kept (default: {OUT} under the rootdir)")


def pytest_configure(config):
    config.addinivalue_line("markers", "verifybench(suite, baseline, **gate_options): run a suite and gate it")
    config.stash[_RUNS] = SessionRuns(config)


class SessionRuns:
    """The suites run in this session, each once, under a stable folder; and the gates made on them."""

    def __init__(self, config):
        out = config.getoption("verifybench_out")
        self.root = Path(out) if out else Path(config.rootpath) / OUT
        self.runs: dict[tuple, tuple[str, Path, Any]] = {}  # key -> (suite as given, run dir, result or error)
        self.gates: list[tuple[str, str, str]] = []  # (suite, baseline, outcome)

    def _folder(self, suite: Path, key: tuple) -> Path:
        taken = {run_dir for _, run_dir, _ in self.runs.values()}
        folder = self.root / suite.stem
        if folder in taken:  # two suites with one file name, or one suite with other options
            folder = self.root / f"{suite.stem}-{hashlib.sha256(repr(key).encode()).hexdigest()[:8]}"
        if folder.exists():
            if not (folder / MANIFEST).exists() and any(folder.iterdir()):
                raise VerifybenchError(f"{folder} holds files that are not a verifybench run; not replacing it "
                                       "(pass --verifybench-out to keep runs elsewhere)")
            shutil.rmtree(folder)  # the previous session's run of this suite
        return folder

    def run(self, suite: str | Path, data_dir: str | None, **kw):
        key = (str(Path(suite).resolve()), data_dir, tuple(sorted((k, str(v)) for k, v in kw.items())))
        if key not in self.runs:
            folder = self._folder(Path(suite), key)
            try:
                outcome: Any = run(suite, out=folder, data_dir=data_dir, progress=False, **kw)
            except VerifybenchError as e:
                outcome = e
            self.runs[key] = (str(suite), folder, outcome)
        _, _, outcome = self.runs[key]
        if isinstance(outcome, Exception):
            raise outcome
        return outcome


_RUNS = pytest.StashKey[SessionRuns]()


class VerifybenchHelper:
    """Runs suites (once per session each) and gates them against baselines."""

    def __init__(self, runs: SessionRuns, data_dir: str | None):
        self.runs = runs
        self.data_dir = data_dir

    def run(self, suite: str | Path, **kw):
        """The session's run of `suite` (run now if this is the first test to ask for it)."""
        return self.runs.run(suite, self.data_dir, **kw)

    def gate(self, run_dir: str | Path, baseline: str | Path, suite: str | Path | None = None, **kw) -> GateResult:
        try:
            result = gate(run_dir, baseline, **kw)
        except GateRefused as e:
            self.runs.gates.append((str(suite or run_dir), str(baseline), f"refused: {e}"))
            raise
        outcome = {0: "passed", 1: f"FAILED ({len(result.failed)} regression(s))",
                   2: "refused (a metric asked for cannot be gated)"}[result.exit_code]
        self.runs.gates.append((str(suite or run_dir), str(baseline), outcome))
        return result

    def assert_no_regression(self, suite: str | Path, baseline: str | Path, **gate_options) -> GateResult:
        """Run `suite` (once per session), gate it against `baseline`; fail the test on a regression or an
        invalid comparison."""
        result = self.run(suite)
        try:
            gated = self.gate(result.run_dir, baseline, suite=suite, **gate_options)
        except GateRefused as e:
            pytest.fail(f"verifybench gate refused: {e}", pytrace=False)
        if gated.exit_code:
            lines = [f"{c.name}: {c.message}" for c in gated.failed + gated.refused]
            pytest.fail("verifybench regression:\n" + "\n".join(lines) + "\n\n" + markdown_summary(gated, str(suite))
                        + f"\nreport: {result.run_dir / 'report.html'}", pytrace=False)
        return gated


@pytest.fixture
def verifybench(request, monkeypatch) -> VerifybenchHelper:
    # Replay-only for the tests that use the fixture, not for the whole session.
    if not request.config.getoption("verifybench_live"):
        monkeypatch.setenv("VERIFYBENCH_REPLAY_ONLY", "1")
    return VerifybenchHelper(request.config.stash[_RUNS], request.config.getoption("verifybench_data_dir"))


@pytest.fixture
def verifybench_gate(request, verifybench) -> GateResult:
    """The gate result for the test's `@pytest.mark.verifybench(suite=..., baseline=...)` marker; the
    test asserts on it (`assert not verifybench_gate.failed, verifybench_gate.markdown`), so a regression
    is a test failure, not a fixture error. An invalid comparison fails the test at once."""
    marker = request.node.get_closest_marker("verifybench")
    if marker is None:
        raise VerifybenchError("verifybench_gate needs @pytest.mark.verifybench(suite=..., baseline=...)")
    options = dict(marker.kwargs)
    suite, baseline = options.pop("suite"), options.pop("baseline")
    result = verifybench.run(suite)
    try:
        gated = verifybench.gate(result.run_dir, baseline, suite=suite, **options)
    except GateRefused as e:
        pytest.fail(f"verifybench gate refused: {e}", pytrace=False)
    gated.markdown = markdown_summary(gated, str(suite)) + f"\nreport: {result.run_dir / 'report.html'}\n"
    return gated


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    runs = config.stash.get(_RUNS, None)
    if runs is None or not runs.runs:
        return
    terminalreporter.write_sep("-", "verifybench")
    for suite, folder, outcome in runs.runs.values():
        where = folder / "report.html" if not isinstance(outcome, Exception) else f"run failed: {outcome}"
        terminalreporter.write_line(f"{suite}: {where}")
    for suite, baseline, outcome in runs.gates:
        terminalreporter.write_line(f"gate {suite} vs {baseline}: {outcome}")
