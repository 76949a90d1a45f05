"""The guard on a streamed answer (`verifybench.guard.stream.StreamGuard`): sentences released in order,
each only after its check; a flagged sentence stripped or the stream stopped, as the guard's action says;
every sentence's decision in the log. The policy is fitted on the demo set (rouge and the test verifier
`sentences`, whose units are sentences with offsets)."""

from __future__ import annotations

import asyncio

import pytest

from helpers.guard_verifiers import fit_demo_policy
from verifybench.guard import Guard
from verifybench.guard.stream import StreamGuard, complete_sentences
from verifybench.loaders.guardlog import read_log

TEST_CODE = ["helpers.guard_verifiers"]
GOOD1 = "The Team plan costs $29 per user per month."
BAD = "Purple dragons deliver every invoice by carrier pigeon."
GOOD2 = "Data export to CSV is supported on the Team plan."
ANSWER = f"{GOOD1} {BAD}\n\n{GOOD2}"
SOURCES = ["Northwind CRM pricing. The Team plan costs $29 per user per month and includes up to 10 user seats. "
           "Data export to CSV is supported on the Team plan, but API access is not included."]


@pytest.fixture(scope="module")
def policy(tmp_path_factory):
    return fit_demo_policy(tmp_path_factory.mktemp("stream"))[2]


def guard(policy, **options) -> Guard:
    return Guard(policy, allow_code=TEST_CODE, checks=["sentences"], **{"log_dir": False, **options})


async def pieces(text: str, size: int = 3):
    for i in range(0, len(text), size):
        yield text[i:i + size]
        await asyncio.sleep(0)


async def collect(stream: StreamGuard, chunks) -> list[str]:
    return [piece async for piece in stream.run(chunks)]


def test_strip_releases_sentence_by_sentence_without_the_flagged_one(policy, tmp_path):
    with guard(policy, action="strip", log_dir=tmp_path / "log") as g:
        # Alone, the flagged sentence leaves nothing once stripped (so the guard blocks it as an answer);
        # in a stream it is cut and the stream goes on.
        assert g.check(BAD, SOURCES).action == "blocked"
        assert g.check(GOOD1, SOURCES).action == "allowed" and g.check(GOOD2, SOURCES).action == "allowed"
        stream = StreamGuard(g, SOURCES, question="What does the Team plan cost?", request_id="T-1")
        out = asyncio.run(collect(stream, pieces(ANSWER)))
    assert out == [GOOD1, "\n\n" + GOOD2]  # whole sentences, the blanks before each kept, the flagged one cut
    assert [(s.text, s.released) for s in stream.sentences] == [(GOOD1, GOOD1), (BAD, None), (GOOD2, GOOD2)]
    assert stream.stopped is None
    for s in stream.sentences:
        assert s.last_chunk_at <= s.complete_at <= s.released_at and s.delay_ms >= 0
    # Every sentence's decision is in the log, as a case of its own, with where it sat in the stream.
    records = [r for r in read_log(tmp_path / "log")[0] if r.meta.get("stream")]
    assert [(r.response, r.meta["stream"]["sentence"], r.decision.action) for r in records] == [
        (GOOD1, 0, "allowed"), (BAD, 1, "blocked"), (GOOD2, 2, "allowed")]
    assert {r.meta["stream"]["id"] for r in records} == {stream.id}
    assert {r.decision.request_id for r in records} == {"T-1"}


def test_block_stops_the_stream_at_the_flagged_sentence_and_closes_the_producer(policy):
    closed = []

    async def model():
        try:
            for word in (ANSWER + " " + GOOD1 * 50).split(" "):
                yield word + " "
                await asyncio.sleep(0)
        finally:
            closed.append(True)

    with guard(policy, action="block") as g:
        stream = StreamGuard(g, SOURCES)
        out = asyncio.run(collect(stream, model()))
    assert out == [GOOD1]
    assert stream.stopped is not None and stream.stopped.action == "blocked"
    assert [s.text for s in stream.sentences] == [GOOD1, BAD]  # nothing after the stop is released
    assert closed == [True]  # the model's stream was closed, not read to its end


@pytest.mark.parametrize("options", [{"action": "flag"}, {"action": "block", "mode": "shadow"}])
def test_flag_and_shadow_release_every_sentence(policy, options):
    with guard(policy, **options) as g:
        stream = StreamGuard(g, SOURCES)
        out = asyncio.run(collect(stream, pieces(ANSWER, 7)))
    assert "".join(out) == ANSWER and stream.stopped is None
    assert stream.sentences[1].decision.action in ("flagged", "blocked")  # decided, and logged as such


def test_a_sentence_is_released_only_after_it_is_complete_and_checked(policy):
    """The input is fed by hand: the first sentence comes out once the next one has begun (and it has
    been checked); nothing of the second leaves while it may still go on."""

    async def scenario():
        feed: asyncio.Queue[str | None] = asyncio.Queue()

        async def chunks():
            while (c := await feed.get()) is not None:
                yield c

        with guard(policy, action="flag") as g:  # every sentence is released, flagged or not
            stream = StreamGuard(g, SOURCES)
            out = stream.run(chunks())
            await feed.put("The Team plan costs $29 per user per month")
            nxt = asyncio.ensure_future(out.__anext__())
            await asyncio.sleep(0.2)
            assert not nxt.done()  # no sentence end yet
            await feed.put(". Data")
            first = await asyncio.wait_for(nxt, 10)
            assert first == GOOD1 and len(stream.sentences) == 1
            assert stream.sentences[0].released_at >= stream.sentences[0].complete_at
            nxt = asyncio.ensure_future(out.__anext__())
            await feed.put(" export to CSV is supported on the Team plan. It costs $3.")
            await asyncio.sleep(0.2)
            second = await asyncio.wait_for(nxt, 10)
            assert second == " " + GOOD2
            nxt = asyncio.ensure_future(out.__anext__())
            await feed.put("50")  # "$3." went on: the sentence had not ended there
            await asyncio.sleep(0.2)
            assert not nxt.done()
            await feed.put(" a seat.")
            await feed.put(None)  # the stream ends: its last sentence is complete
            third = await asyncio.wait_for(nxt, 10)
            rest = [p async for p in out]
            return third, rest, stream

    third, rest, stream = asyncio.run(scenario())
    assert third == " It costs $3.50 a seat." and stream.sentences[2].text == third.strip()
    assert rest == []


def test_splitting_keeps_abbreviations_decimals_and_russian_together():
    text = "Dr. Smith paid $3.50 on Jan. 5. It worked. And"
    assert [text[a:b] for a, b in complete_sentences(text, False, "en")] == ["Dr. Smith paid $3.50 on Jan. 5.",
                                                                            "It worked."]
    ru = "Тариф стоит 29 долл. в месяц. Экспорт в CSV есть. Но"
    assert [ru[a:b] for a, b in complete_sentences(ru, False, "ru")] == ["Тариф стоит 29 долл. в месяц.",
                                                                       "Экспорт в CSV есть."]
    assert [text[a:b] for a, b in complete_sentences(text, True, "en")][-1] == "And"


def test_a_long_run_without_a_sentence_end_is_checked_as_it_is(policy):
    with guard(policy, action="flag") as g:
        stream = StreamGuard(g, SOURCES, max_chars=40)
        text = "word " * 30
        out = asyncio.run(collect(stream, pieces(text, 5)))
    assert "".join(out).split() == text.split() and len(stream.sentences) >= 2
    assert all(len(s.text) <= 45 for s in stream.sentences[:-1])


def test_a_chunk_that_is_not_text_is_an_error_naming_its_type(policy):
    async def bad():
        yield "The Team plan costs $29. "
        yield b"bytes"

    with guard(policy) as g, pytest.raises(TypeError, match="a streamed chunk must be text, got bytes"):
        asyncio.run(collect(StreamGuard(g, SOURCES), bad()))
