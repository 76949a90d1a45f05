"""A line on the terminal for a long phase (metrics, report, gate): silent for a quick one, and never in
a log or a pipe.

    with phase("computing metrics"):
        ...

After `after_s` seconds (3, or VERIFYBENCH_PHASE_AFTER_S) still inside the block, stderr gets
"verifybench: computing metrics ..." and, when the block ends, "... done in 9.1 s". Nothing is written when
stderr is not a terminal, so CI logs and scripts reading the output see no change.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO

AFTER_ENV = "VERIFYBENCH_PHASE_AFTER_S"
AFTER_S = 3.0


def _after() -> float:
    try:
        return max(0.0, float(os.environ.get(AFTER_ENV, AFTER_S)))
    except ValueError:
        return AFTER_S


@contextmanager
def phase(what: str, stream: TextIO | None = None, after_s: float | None = None) -> Iterator[None]:
    out = stream if stream is not None else sys.stderr
    try:
        terminal = out.isatty()
    except (AttributeError, ValueError):
        terminal = False
    if not terminal:
        yield
        return
    started = time.monotonic()
    said = threading.Event()
    lock = threading.Lock()

    def say() -> None:
        with lock:
            if not said.is_set():
                said.set()
                print(f"verifybench: {what} ...", file=out, flush=True)

    timer = threading.Timer(_after() if after_s is None else after_s, say)
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()
        with lock:
            if said.is_set():
                print(f"verifybench: {what} done in {time.monotonic() - started:.1f} s", file=out, flush=True)
            said.set()  # a timer firing now says nothing
