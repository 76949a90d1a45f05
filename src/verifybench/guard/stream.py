"""The guard on a streamed answer: released sentence by sentence, each one only after its check.

A chat UI streams tokens; a check of the whole answer comes after the whole answer. `StreamGuard` sits
between the stream and the client: it gathers the chunks into sentences and releases each sentence only
once the guard has checked it, in order, while the next ones are still being generated:

    chunks in ──> sentences (pysbd; razdel for Russian) ──> guard.acheck(sentence) ──> released in order
                                                                 │
                          the guard's action on a flagged one:   ├─ strip: the sentence without its flagged
                                                                 │  units (the whole sentence when the check
                                                                 │  gives none with offsets)
                                                                 ├─ block: the stream stops there
                                                                 └─ flag / escalate, shadow mode: released

Each sentence is checked as an answer of its own (`guard.acheck(sentence, sources, question, ...)`, its
decision logged with `meta.stream` = {id, sentence}), at the policy's threshold for the request's slice.
The policy was fitted on whole answers: a score that depends on the whole answer (rouge's overlap with
every source) reads differently on one sentence, so fit the policy a streaming guard uses on cases cut
the same way where that matters (claim-level checks such as anchors score each sentence alike either way).

A sentence is known to be complete when the text after its end begins (the splitter needs the next
word: "$3." may go on as "$3.50"), or when the stream ends; a run of `max_chars` characters with no
sentence end is checked as it is. The delay a sentence gets is measured from that moment to its release
(`SentenceCheck.delay_ms`) and from its last chunk (`SentenceCheck.hold_ms`).

```python
stream = StreamGuard(guard, sources=chunks_of_the_retrieval, question=q)
async for piece in stream.run(model_tokens()):   # an async iterator of text in, of sentences out
    await client.send(piece)
stream.stopped        # the decision that stopped the stream (action block), or None
stream.sentences      # every sentence: its decision, what was released, its delay
```
"""

from __future__ import annotations

import asyncio
import bisect
import re
import time
import uuid
from collections.abc import AsyncIterable, AsyncIterator
from dataclasses import dataclass
from typing import Any

from verifybench.guard.core import Decision, Guard

MAX_CHARS = 2000  # a "sentence" longer than this (a code block, a list without stops) is checked as it is
# A sentence can have ended only where a stop (or a line break) is followed by a blank and more text: the
# splitter runs only then, not on every chunk.
_MAYBE_ENDED = re.compile(r"[.!?…。\n][\"'”’»)\]]*\s+\S")


@dataclass
class SentenceCheck:
    """One sentence of the stream and what became of it.

    Attributes:
        index: its position in the stream (0-based).
        text: the sentence as generated; `gap` the blanks before it.
        released: what went out (the sentence, or it without its flagged units); None when it was cut
            whole or the stream stopped at it.
        decision: the guard's decision for it.
        last_chunk_at, complete_at, released_at: monotonic seconds (time.perf_counter): its last chunk
            arrived, it was known complete, it was released (or withheld).
    """

    index: int
    text: str
    gap: str
    decision: Decision
    released: str | None
    last_chunk_at: float
    complete_at: float
    released_at: float

    @property
    def delay_ms(self) -> float:
        """From the moment the sentence was known complete to its release: what the check adds."""
        return (self.released_at - self.complete_at) * 1000.0

    @property
    def hold_ms(self) -> float:
        """From its last chunk to its release: the check plus the wait for the next word."""
        return (self.released_at - self.last_chunk_at) * 1000.0


def complete_sentences(text: str, final: bool, language: str) -> list[tuple[int, int]]:
    """[start, end) of the sentences of `text` known to be complete: all but the last one unless `final`
    (the last may still go on)."""
    from verifybench.verifiers.anchors.text import sentences

    spans = [(s.start, s.end) for s in sentences(text, language)]
    return spans if final else spans[:-1]


class StreamGuard:
    """A guard on one streamed answer.

    Args:
        guard: the guard (its action decides what a flagged sentence does; its log gets every decision).
        sources, question, doc_type, meta, request_id: as for `Guard.check`, the same for every sentence.
        language: `en` or `ru` for the sentence splitter (default: read from the first sentence's letters).
        max_chars: the longest run of text held without a sentence end before it is checked as it is.
    """

    def __init__(self, guard: Guard, sources: Any, question: str | None = None, doc_type: str | None = None,
                 meta: dict[str, Any] | None = None, request_id: str | None = None, language: str | None = None,
                 max_chars: int = MAX_CHARS):
        if max_chars < 1:
            raise ValueError("max_chars must be at least 1")
        self.guard, self.sources, self.question, self.doc_type = guard, sources, question, doc_type
        self.meta, self.request_id, self.language, self.max_chars = dict(meta or {}), request_id, language, max_chars
        self.id = uuid.uuid4().hex
        self.sentences: list[SentenceCheck] = []
        self.stopped: Decision | None = None
        self._queued = 0

    async def run(self, chunks: AsyncIterable[str]) -> AsyncIterator[str]:
        """The released text, sentence by sentence (each with the blanks that preceded it), in order. The
        input is read on while earlier sentences are being checked; a stop closes it. A failed check that
        raises (a `GuardError`, or `LogError` when the log cannot take the decision) ends the stream
        without releasing that sentence, and is raised here."""
        pending: asyncio.Queue[asyncio.Task | None] = asyncio.Queue()
        reader = asyncio.create_task(self._read(chunks, pending))
        try:
            while (task := await pending.get()) is not None:
                check: SentenceCheck = await task
                check.released_at = time.perf_counter()  # in order: after every sentence before it
                self.sentences.append(check)
                if self._stops(check.decision):  # nothing more leaves
                    self.stopped = check.decision
                    break
                if check.released is not None:
                    yield check.gap + check.released
            if self.stopped is None:
                await reader  # the input's own error, if it raised
        finally:
            reader.cancel()
            while not pending.empty():
                task = pending.get_nowait()
                if task is not None:
                    task.cancel()
            await asyncio.gather(reader, return_exceptions=True)

    def _stops(self, d: Decision) -> bool:
        """Whether a sentence's decision ends the stream: a blocked sentence under action `block`, or a
        failed check under `on_error: block`. Under `strip` a sentence with nothing left to release (a
        check without unit offsets flags it whole) is cut, and the stream goes on."""
        if d.response is not None:
            return False
        spec = self.guard.spec
        return (d.errors > 0 and spec.on_error == "block") or spec.action != "strip"

    async def _read(self, chunks: AsyncIterable[str], pending: asyncio.Queue) -> None:
        """Gather chunks into sentences; start the check of each as soon as it is complete."""
        text, done = "", 0
        arrivals: list[tuple[int, float]] = []  # (where a chunk ends in `text`, when it arrived)
        try:
            async for chunk in chunks:
                if not isinstance(chunk, str):
                    raise TypeError(f"a streamed chunk must be text, got {type(chunk).__name__}")
                if not chunk:
                    continue
                text += chunk
                arrivals.append((len(text), time.perf_counter()))
                tail = text[done:]
                if _MAYBE_ENDED.search(tail) or len(tail) > self.max_chars:
                    done = self._start(text, done, False, arrivals, pending)
            self._start(text, done, True, arrivals, pending)
        finally:
            aclose = getattr(chunks, "aclose", None)
            if aclose is not None:  # a stop or a cancel ends the producer too (the model stops generating)
                await aclose()
            pending.put_nowait(None)

    def _start(self, text: str, done: int, final: bool, arrivals: list[tuple[int, float]],
               pending: asyncio.Queue) -> int:
        """Start the checks of the sentences of `text[done:]` now known complete; returns the new `done`."""
        tail = text[done:]
        if self.language is None and tail.strip():
            from verifybench.verifiers.anchors.text import detect_language

            self.language = detect_language(tail)
        spans = complete_sentences(tail, final, self.language or "en")
        if not spans and len(tail) > self.max_chars:
            spans = [(len(tail) - len(tail.lstrip()), len(tail.rstrip()))]  # no sentence end in sight
        now, at = time.perf_counter(), 0
        for start, end in spans:
            # The sentence's last chunk: the first one that reaches its end.
            last = arrivals[bisect.bisect_left(arrivals, (done + end, 0.0))][1]
            pending.put_nowait(asyncio.create_task(self._check(self._queued, tail[at:start], tail[start:end], last, now)))
            self._queued += 1
            at = end
        del arrivals[:bisect.bisect_left(arrivals, (done + at, 0.0))]  # what the next sentences cannot need
        return done + at

    async def _check(self, index: int, gap: str, sentence: str, last_chunk_at: float, complete_at: float
                     ) -> SentenceCheck:
        meta = {**self.meta, "stream": {"id": self.id, "sentence": index}}
        d = await self.guard.acheck(sentence, self.sources, self.question, self.doc_type, meta, self.request_id)
        released = d.response if d.response is not None and d.response.strip() else None
        return SentenceCheck(index, sentence, gap, d, released, last_chunk_at, complete_at, time.perf_counter())
