"""The threads of torch and of the BLAS / OpenMP pools are set on purpose (`verifybench.executors.threads`),
in a fresh process each time: the setting is process-wide."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from verifybench.cli import app

ROOT = Path(__file__).resolve().parents[1]

PROBE = """
import json, sys
if sys.argv[1] == "before":
    import torch  # loaded before: its pool is resized
from verifybench.executors.threads import current_threads, set_threads
n = set_threads(1)
import numpy, torch  # loaded after: they read the environment
from threadpoolctl import threadpool_info
print(json.dumps({"n": n, "torch": torch.get_num_threads(), "current": current_threads(),
                  "pools": sorted({p["num_threads"] for p in threadpool_info()})}))
"""


@pytest.mark.parametrize("torch_first", ["before", "after"])
def test_set_threads_sizes_torch_and_every_blas_pool(torch_first):
    env = {k: v for k, v in os.environ.items() if not k.endswith("_NUM_THREADS")}
    env["PYTHONPATH"] = str(ROOT / "src")
    out = subprocess.run([sys.executable, "-c", PROBE, torch_first], env=env, capture_output=True, text=True,
                         timeout=120, check=True)
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got == {"n": 1, "torch": 1, "current": 1, "pools": [1]}


def test_a_thread_count_below_one_is_refused_by_name():
    from verifybench.errors import VerifybenchError
    from verifybench.executors.threads import set_threads

    with pytest.raises(VerifybenchError, match="threads: expected a whole number of at least 1, got 0"):
        set_threads(0)


def test_run_threads_is_the_local_executors_option():
    out = CliRunner().invoke(app, ["run", str(ROOT / "evals" / "demo.yaml"), "--executor", "ray", "--threads", "2"])
    assert out.exit_code != 0 and "--threads is the local executor's" in out.output
