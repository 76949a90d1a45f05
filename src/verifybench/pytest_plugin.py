"""pytest plugin (entry point `pytest11`): gate hallucination detection inside an existing test suite.

```python
def test_detection_did_not_regress(verifybench):
    verifybench.assert_no_regression("evals/demo.yaml", baseline="metrics/demo.json", max_drop=["f1=0.02"])
```

or with a marker, no test body needed beyond the fixture:

```python
@pytest.mark.verifybench(suite="evals/demo.yaml", baseline="metrics/demo.json")
def test_demo(verifybench_gate):
    assert not verifybench_gate.failed, verifybench_gate.summary
```

LLM calls are replay-only by default (`VERIFYBENCH_REPLAY_ONLY=1`): a cache miss fails that case instead
of calling a paid model; pass `--verifybench-live` to allow calls.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from verifybench import api
from verifybench.errors import VerifybenchError
from verifybench.gate import GateRefused, GateResult, markdown_summary


def pytest_addoption(parser):
    group = parser.getgroup("verifybench")
    group.addoption("--verifybench-data-dir", default=None, help="where ${VERIFYBENCH_DATA} points")
    group.addoption("--verifybench-live", action="store_true", help="allow live LLM calls (default: replay only)")


def pytest_configure(config):
    config.addinivalue_line("markers", "verifybench(suite, baseline, **gate_options): run a suite and gate it")


class VerifybenchHelper:
    """Runs suites into the test's temporary directory and gates them against baselines."""

    def __init__(self, tmp_path: Path, data_dir: str | None):
        self.tmp_path = tmp_path
        self.data_dir = data_dir

    def run(self, suite: str | Path, **kw):
        out = self.tmp_path / f"run-{Path(suite).stem}"
        return api.run(suite, out=out, data_dir=self.data_dir, progress=False, **kw)

    def gate(self, run_dir: str | Path, baseline: str | Path, **kw) -> GateResult:
        return api.gate(run_dir, baseline, **kw)

    def assert_no_regression(self, suite: str | Path, baseline: str | Path, **gate_options) -> GateResult:
        """Run `suite`, gate it against `baseline`; fail the test on a regression or an invalid comparison."""
        result = self.run(suite)
        try:
            gated = self.gate(result.run_dir, baseline, **gate_options)
        except GateRefused as e:
            pytest.fail(f"verifybench gate refused: {e}", pytrace=False)
        if gated.failed:
            lines = [f"{c.name}: {c.message}" for c in gated.failed]
            pytest.fail("verifybench regression:\n" + "\n".join(lines) + "\n\n" + markdown_summary(gated, str(suite)),
                        pytrace=False)
        return gated


@pytest.fixture
def verifybench(request, tmp_path, monkeypatch) -> VerifybenchHelper:
    # Replay-only for the tests that use the fixture, not for the whole session.
    if not request.config.getoption("verifybench_live"):
        monkeypatch.setenv("VERIFYBENCH_REPLAY_ONLY", "1")
    return VerifybenchHelper(tmp_path, request.config.getoption("verifybench_data_dir"))


@pytest.fixture
def verifybench_gate(request, verifybench) -> GateResult:
    """The gate result for the test's `@pytest.mark.verifybench(suite=..., baseline=...)` marker; the
    test asserts on it (`assert not verifybench_gate.failed, verifybench_gate.summary`), so a regression
    is a test failure, not a fixture error. An invalid comparison fails the test at once."""
    marker = request.node.get_closest_marker("verifybench")
    if marker is None:
        raise VerifybenchError("verifybench_gate needs @pytest.mark.verifybench(suite=..., baseline=...)")
    options = dict(marker.kwargs)
    suite, baseline = options.pop("suite"), options.pop("baseline")
    result = verifybench.run(suite)
    try:
        gated = verifybench.gate(result.run_dir, baseline, **options)
    except GateRefused as e:
        pytest.fail(f"verifybench gate refused: {e}", pytrace=False)
    gated.summary = markdown_summary(gated, str(suite))
    return gated
