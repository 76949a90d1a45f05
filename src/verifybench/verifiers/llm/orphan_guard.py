"""`python -m verifybench.verifiers.llm.orphan_guard PARENT_PID MODULE ARGS...`: run MODULE as a
program that exits as soon as the process that started it is gone.

A killed run (SIGKILL, or SIGTERM to the CLI) gets no chance to stop the llama.cpp server it started;
without this, the server would live on, holding a port, memory and a core.
"""

from __future__ import annotations

import os
import runpy
import sys
import threading
import time


def _exit_when_orphaned(parent: int, every_s: float = 0.5) -> None:
    while os.getppid() == parent:
        time.sleep(every_s)
    os._exit(0)


def main(argv: list[str]) -> None:
    parent, module, *args = argv
    threading.Thread(target=_exit_when_orphaned, args=(int(parent),), daemon=True).start()
    sys.argv = [module, *args]
    runpy.run_module(module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main(sys.argv[1:])
