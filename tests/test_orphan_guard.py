"""A server started through the orphan guard (as the local llama.cpp server is) exits when the process
that started it is killed, so a killed run leaves nothing running."""

import os
import signal
import subprocess
import sys
import time

import pytest

PARENT = r"""
import subprocess, sys, time
child = subprocess.Popen([sys.executable, "-m", "verifybench.verifiers.llm.orphan_guard", str(__import__("os").getpid()),
                          "http.server", "--bind", "127.0.0.1", "0"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
print(child.pid, flush=True)
time.sleep(600)
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is dead too: its parent (here: init or a subreaper) has not reaped it yet.
    with open(f"/proc/{pid}/stat") as f:
        return f.read().split()[2] != "Z"


@pytest.mark.slow  # waits up to 15 s for the orphaned server to exit
def test_the_guarded_server_exits_when_its_parent_is_killed():
    parent = subprocess.Popen([sys.executable, "-c", PARENT], stdout=subprocess.PIPE, text=True)
    child = int(parent.stdout.readline())
    time.sleep(1.0)
    assert _alive(child), "the guarded module did not start"
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    deadline = time.time() + 15
    while _alive(child) and time.time() < deadline:
        time.sleep(0.2)
    alive = _alive(child)
    if alive:
        os.kill(child, signal.SIGKILL)
    assert not alive, "the server outlived the process that started it"


def test_the_guard_runs_the_module_with_its_own_arguments():
    out = subprocess.run([sys.executable, "-m", "verifybench.verifiers.llm.orphan_guard", str(os.getpid()),
                          "json.tool", "--sort-keys"], input='{"b": 1, "a": 2}', capture_output=True, text=True,
                         check=True).stdout
    assert out.index('"a"') < out.index('"b"')
