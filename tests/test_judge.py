"""The judge's request path against a scripted server on 127.0.0.1: retries, repair, log-probabilities,
replay-only, cost and key hygiene. (The real model is in test_judge_llama.py.)"""

import json
import math

import pytest

from verifybench import api
from verifybench.cases import Case, Source
from verifybench.suite import parse_suite
from verifybench.verifiers import build

SECRET = "sk-test-THIS-MUST-NOT-LEAK-0123456789"


def case(cid="c", response="The plan costs $45.", doc_type="support_answer"):
    return Case(id=cid, dataset="t", doc_type=doc_type, question="How much is it?", response=response, label=True,
                sources=[Source(id="s", text="The plan costs $29 per month.")])


def judge(server, tmp_path, **kw):
    return build("judge", backend="openai", model="test-model", base_url=server.base_url,
                 cache_dir=str(tmp_path / "cache"), backoff_s=0.01, max_backoff_s=0.02, concurrency=1, **kw)


def test_score_is_the_logprob_probability_not_the_stated_one(fake, tmp_path):
    server = fake([(True, 0.8)])
    v = judge(server, tmp_path).verify([case()])[0]
    assert v.score == pytest.approx(0.8, abs=1e-6)  # stated probability was 0.5
    assert v.detail["judge_says"] is True and v.usage["input_tokens"] == 100 and v.usage["output_tokens"] == 20
    sent = server.requests[0]
    assert sent["logprobs"] is True and sent["response_format"]["type"] == "json_schema"
    assert sent["response_format"]["json_schema"]["schema"]["required"][0] == "hallucinated"
    assert "How much is it?" in sent["messages"][1]["content"] and "$29" in sent["messages"][1]["content"]


def test_stated_probability_when_no_logprobs(fake, tmp_path):
    server = fake(['{"hallucinated": false, "probability": 0.3, "claim": "", "reason": "ok"}'])
    assert judge(server, tmp_path).verify([case()])[0].score == pytest.approx(0.3)


def test_retries_on_429_and_5xx_then_succeeds(fake, tmp_path):
    server = fake([429, 500, 503, (False, 0.1)])
    v = judge(server, tmp_path, retries=3).verify([case()])[0]
    assert v.error is None and v.score == pytest.approx(0.1, abs=1e-6)
    assert v.usage["retries"] == 3 and v.usage["requests"] == 4 and len(server.requests) == 4


def test_gives_up_after_the_retries_as_an_error_verdict_and_goes_on(fake, tmp_path):
    server = fake([500, 500, 500])  # then the default reply: a valid verdict
    bad, good = judge(server, tmp_path, retries=2).verify([case("bad"), case("good", "The plan costs $29.")])
    assert bad.score is None and "gave up after 3 attempts" in bad.error and bad.usage["failures"] == 1
    assert good.error is None and good.score == pytest.approx(0.2, abs=1e-6)


def test_one_repair_for_malformed_json_then_an_error(fake, tmp_path):
    server = fake(["Sure! The answer is yes.", (True, 0.9)])
    v = judge(server, tmp_path).verify([case()])[0]
    assert v.error is None and v.usage["repairs"] == 1 and v.score == pytest.approx(0.9, abs=1e-6)
    assert server.requests[1]["messages"][-1]["content"].startswith("That was not a valid JSON object")
    server2 = fake(["nope", '{"hallucinated": "maybe"}'])
    v2 = judge(server2, tmp_path / "other").verify([case("x", "Other answer.")])[0]
    assert v2.score is None and "malformed JSON verdict after one repair" in v2.error


def test_replay_only_answers_from_the_cache_and_fails_a_miss(fake, tmp_path):
    server = fake([(True, 0.7)])
    live = judge(server, tmp_path).verify([case("a")])[0]
    replay = judge(server, tmp_path, replay_only=True)
    hit, miss = replay.verify([case("a"), case("b", "A response never judged before.")])
    assert len(server.requests) == 1  # the replay run called nothing
    assert hit.score == live.score and hit.usage["cache_hits"] == 1
    assert miss.score is None and "replay-only: no cached completion" in miss.error


def test_replay_only_from_the_environment(fake, tmp_path, monkeypatch):
    server = fake([])
    monkeypatch.setenv("VERIFYBENCH_REPLAY_ONLY", "1")
    v = judge(server, tmp_path).verify([case()])[0]
    assert "replay-only" in v.error and server.requests == []


def test_samples_report_agreement_and_flips(fake, tmp_path):
    server = fake([(True, 0.9), (False, 0.4), (True, 0.8)])
    v = judge(server, tmp_path, samples=3, temperature=0.7).verify([case()])[0]
    assert v.score == pytest.approx((0.9 + 0.4 + 0.8) / 3, abs=1e-6)
    assert v.detail["flipped"] is True and v.detail["agreement"] == pytest.approx(2 / 3)
    assert [r["seed"] for r in server.requests] == [0, 1, 2]


def test_cost_from_the_price_table(fake, tmp_path):
    server = fake([(True, 0.6)])
    v = judge(server, tmp_path, prices={"input_per_1m": 0.15, "output_per_1m": 0.6}).verify([case()])[0]
    assert v.cost_usd == pytest.approx((100 * 0.15 + 20 * 0.6) / 1e6)


def test_templates_per_doc_type_and_user_override(fake, tmp_path):
    server = fake([(True, 0.6), (True, 0.6), (True, 0.6)])
    v = judge(server, tmp_path)
    v.verify([case("s", doc_type="news_summary"), case("d", doc_type="dialogue")])
    assert "SUMMARY:" in server.requests[0]["messages"][1]["content"]
    assert "ASSISTANT'S NEXT TURN:" in server.requests[1]["messages"][1]["content"]
    (tmp_path / "tpl").mkdir()
    (tmp_path / "tpl/qa.j2").write_text("MY OWN PROMPT {{ response }}")
    judge(server, tmp_path / "x", templates_dir=str(tmp_path / "tpl")).verify([case("q", doc_type="qa")])
    assert server.requests[2]["messages"][1]["content"] == "MY OWN PROMPT The plan costs $45."


def test_no_key_reaches_any_file_the_run_writes(fake, tmp_path, monkeypatch, root):
    server = fake([], default=(True, 0.7))
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    suite = parse_suite({"name": "keys", "dataset": {"loader": "jsonl", "path": str(root / "datasets/demo/cases.jsonl"),
                                                    "limit": 12, "fields": {"doc_type": "doc_type"}},
                         "verifiers": [{"judge": {"backend": "openai", "model": "m", "base_url": server.base_url,
                                                  "cache_dir": str(tmp_path / "cache")}}]}, tmp_path)
    api.run(suite, out=tmp_path / "run", progress=False)
    assert server.headers[0]["authorization"] == f"Bearer {SECRET}"  # the key was used...
    for folder in (tmp_path / "run", tmp_path / "cache"):
        for f in folder.rglob("*"):
            if f.is_file():
                assert SECRET not in f.read_text(errors="ignore"), f  # ...and written nowhere
    metrics = json.loads((tmp_path / "run/metrics.json").read_text())
    assert metrics["verifiers"]["judge"]["probabilistic"] is True


def test_logprob_parsing_handles_split_tokens():
    from verifybench.verifiers.judge.verifier import logprob_probability
    from verifybench.verifiers.llm import Completion, TokenLogprob

    toks = [TokenLogprob('{"hallucinated"', -0.1), TokenLogprob(":", -0.1),
            TokenLogprob(" tr", -0.2, {" tr": math.log(0.6), " fal": math.log(0.3), " maybe": math.log(0.1)}),
            TokenLogprob("ue", -0.01)]
    assert logprob_probability(Completion(text="", logprobs=toks)) == pytest.approx(0.6 / 0.9)


def test_raw_newlines_inside_strings_are_read():
    from verifybench.verifiers.judge.verifier import parse_answer

    a = parse_answer('{"hallucinated": true, "probability": 0.7, "claim": "line one\nline two", "reason": "x"}')
    assert a.hallucinated is True and a.claim == "line one\nline two"
