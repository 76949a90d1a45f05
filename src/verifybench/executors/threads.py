"""How many threads a worker's math libraries use: torch's intra-op pool and the BLAS / OpenMP pools.

Left alone, each sizes its pool to every core of the machine, and a worker that shares the cores with
another CPU-bound job oversubscribes them: on 2 cores with one busy neighbour, semantic anchors took
p50 730 ms / p95 1.7 s a request at torch's default against 32 / 44 ms at one thread (benchmarks/README.md,
guard section). `set_threads(n)` sets them on purpose, per process: the environment variables the
libraries read when they load (and that worker processes started later inherit), torch's pool if torch
is already loaded, and, through threadpoolctl, the BLAS and OpenMP libraries already loaded.

Defaults: `verifybench serve` 1 per worker (a request's model call is small, and the batch thread
shares the cores with the event loop and the other workers); `verifybench run` on the local executor,
every CPU this process may use (`available_cpus`); Ray's actors keep Ray's own rule (an actor's threads
are the CPUs it reserves, one by default).
"""

from __future__ import annotations

import os
import sys

from verifybench.errors import VerifybenchError

ENV = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "BLIS_NUM_THREADS", "VECLIB_MAXIMUM_THREADS",
       "NUMEXPR_NUM_THREADS")


def available_cpus() -> int:
    """The CPUs this process may run on (its affinity mask, which a container's cpuset narrows)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def current_threads() -> int | None:
    """The threads torch's pool uses now (if torch is loaded), else what this process set for the
    libraries to read (OMP_NUM_THREADS); None when neither says."""
    torch = sys.modules.get("torch")
    if torch is not None:
        return int(torch.get_num_threads())
    value = os.environ.get("OMP_NUM_THREADS", "")
    return int(value) if value.isdigit() else None


def set_threads(n: int | None = None) -> int:
    """Use `n` threads (default: `available_cpus()`) in torch and the BLAS / OpenMP pools of this process
    and of the processes it starts; returns `n`."""
    n = available_cpus() if n is None else n
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise VerifybenchError(f"threads: expected a whole number of at least 1, got {n!r}")
    for name in ENV:
        os.environ[name] = str(n)
    torch = sys.modules.get("torch")  # loaded later, torch reads OMP_NUM_THREADS itself
    if torch is not None:
        torch.set_num_threads(n)
    from threadpoolctl import threadpool_limits

    threadpool_limits(n)
    return n
