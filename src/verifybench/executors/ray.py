"""The Ray executor: the runner's batches are scored on a Ray cluster through Ray Data.

How a run flows:
- The driver (this process) reads the cases through the suite's loader, as a local run does, writes
  cases.jsonl, and packs the runner's batches into Arrow blocks of `batches_per_block` batches that it
  puts in the object store. One block is the unit of work: a task, or one call to an actor.
- Each verifier is one `map_batches` over those blocks; the verifiers' datasets are unioned and run in
  one streaming execution. Inside a block every batch goes through `verify_batch` exactly as in the
  local runner, so a batch scores the same on a worker as here.
- Verifiers that hold a model (any verifier whose class does not say `stateless = True`) run in an actor pool: each actor
  unpickles the verifier once and loads its model once, on first use. Stateless ones run as tasks.
  `pools` caps a verifier's pool (a judge's requests in flight are at most pool size x its own
  `concurrency`, cluster-wide).
- Results come back to the driver, which alone writes results.jsonl: a task Ray retries after a lost
  worker cannot write twice, and the runner drops a (verifier, batch) it has already written.

Ray is imported only here, and only when this executor is used.
"""

from __future__ import annotations

import logging
import os
import pickle
import time
from collections.abc import Iterable, Iterator
from typing import Any

from verifybench.cases import Case
from verifybench.errors import VerifybenchError
from verifybench.executors import Scored
from verifybench.executors.scoring import verify_batch
from verifybench.verifiers import Verifier


def _stateless(verifier) -> bool:
    """A verifier without a model unpickles in microseconds: a task needs no actor."""
    return bool(getattr(type(verifier), "stateless", False))

# Columns of a block of work and of a block of results.
_BATCH, _CASES, _SKIP = "batch", "cases", "skip"
_VERIFIER, _VERDICTS, _SECONDS = "verifier", "verdicts", "seconds"


def _import_ray(local: bool):
    # Ray phones home with usage statistics unless told not to; a benchmark run has no business doing that.
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    if local:
        # A private instance binds every node to 127.0.0.1 instead of the machine's network interface.
        # Ray reads this when it is first imported; joining a real cluster needs a reachable address.
        os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    try:
        import ray
        import ray.data  # noqa: F401
    except ImportError:
        raise VerifybenchError("--executor ray needs Ray: pip install 'verifybench[ray]'") from None
    return ray


class RayExecutor:
    """Scores batches on a Ray cluster.

    Args:
        address: an existing cluster (`HOST:PORT`, `ray://HOST:PORT` or `auto`); None starts a local Ray
            instance on the loopback address for this run (or joins the one this process is already in).
        pools: the most actors per verifier id (default: the cluster's CPU count).
        batches_per_block: runner batches per unit of work; larger blocks cost less scheduling, smaller
            ones lose less work to a lost worker and update the progress bar more often.
        num_cpus: (local instance only) CPUs Ray may use; default all.
    """

    name = "ray"
    wall_rate = True

    def __init__(self, address: str | None = None, pools: dict[str, int] | None = None,
                 batches_per_block: int = 8, num_cpus: int | None = None):
        self.address = address
        self.pools = dict(pools or {})
        bad = {k: v for k, v in self.pools.items() if not isinstance(v, int) or v < 1}
        if bad:
            raise VerifybenchError(f"a verifier's actor pool needs at least one actor: {bad}")
        self.batches_per_block = batches_per_block
        self.num_cpus = num_cpus
        self._owns_ray = False
        self._ray: Any = None  # the ray module, imported on entering

    def __enter__(self) -> RayExecutor:
        ray = self._ray = _import_ray(local=self.address is None)
        if not ray.is_initialized():
            if self.address is None:
                # A private instance for this run, no dashboard.
                ray.init(num_cpus=self.num_cpus, include_dashboard=False, log_to_driver=False,
                         logging_level=logging.WARNING)
            else:
                ray.init(address=self.address, log_to_driver=False, logging_level=logging.WARNING)
            self._owns_ray = True
        ctx = ray.data.DataContext.get_current()
        # The runner's own progress bar reports; Ray Data's bars and start-up lines would fight it.
        ctx.enable_progress_bars = False
        ctx.print_on_execution_start = False
        logging.getLogger("ray.data").setLevel(logging.WARNING)
        logging.getLogger("ray.data._internal.progress").setLevel(logging.ERROR)  # "progress bars disabled"
        return self

    def __exit__(self, *exc) -> None:
        if self._owns_ray and self._ray is not None:
            self._ray.shutdown()
            self._owns_ray = False

    def describe(self) -> dict[str, Any]:
        ray = self._ray
        nodes = [n for n in ray.nodes() if n.get("Alive")]
        gcs = ray.get_runtime_context().gcs_address
        return {
            "name": self.name,
            "ray": ray.__version__,
            # What was asked for: a cluster's address, a private local instance, or the Ray this
            # process had already joined.
            "address": self.address or ("local" if self._owns_ray else gcs),
            "gcs_address": gcs,
            "nodes": len(nodes),
            "cpus": ray.cluster_resources().get("CPU", 0),
            "pools": self.pools,
            "batches_per_block": self.batches_per_block,
        }

    def score(self, verifiers: list[Verifier], batches: Iterable[list[Case]],
              done: set[tuple[str, str]]) -> Iterator[Scored]:
        if self._ray is None:
            raise VerifybenchError("RayExecutor.score needs `with executor:` first")
        unknown = sorted(set(self.pools) - {v.id for v in verifiers})
        if unknown:
            raise VerifybenchError(f"--ray-pool names no verifier of this suite: {', '.join(unknown)}")
        blocks = self._put_blocks(verifiers, batches, done)
        if not blocks:
            return
        ray = self._ray
        cases = ray.data.from_arrow_refs(blocks)
        scored = [self._map(cases, v, verifiers) for v in verifiers]
        results = scored[0].union(*scored[1:]) if len(scored) > 1 else scored[0]
        for table in results.iter_batches(batch_format="pyarrow", batch_size=None):
            columns = table.to_pydict()
            for vid, i, verdicts, seconds in zip(columns[_VERIFIER], columns[_BATCH], columns[_VERDICTS],
                                                 columns[_SECONDS]):
                yield Scored(vid, i, pickle.loads(verdicts), seconds)

    def _put_blocks(self, verifiers: list[Verifier], batches: Iterable[list[Case]],
                    done: set[tuple[str, str]]) -> list:
        """Read every batch (the caller indexes them as they go by) into blocks in the object store.

        The driver keeps one block in memory at a time; the object store spills to disk when full."""
        import pyarrow as pa

        refs: list[Any] = []
        rows: dict[str, list[Any]] = {_BATCH: [], _CASES: [], _SKIP: []}

        def flush():
            refs.append(self._ray.put(pa.table({_BATCH: pa.array(rows[_BATCH], pa.int64()),
                                                 _CASES: pa.array(rows[_CASES], pa.binary()),
                                                 _SKIP: pa.array(rows[_SKIP], pa.binary())})))
            for column in rows.values():
                column.clear()

        for i, batch in enumerate(batches):
            skip = {}
            if done:  # resuming: each verifier skips the cases it already scored
                skip = {v.id: ids for v in verifiers if (ids := [c.id for c in batch if (v.id, c.id) in done])}
                if all(len(skip.get(v.id, ())) == len(batch) for v in verifiers):
                    continue
            rows[_BATCH].append(i)
            rows[_CASES].append(pickle.dumps(batch, protocol=pickle.HIGHEST_PROTOCOL))
            rows[_SKIP].append(pickle.dumps(skip) if skip else b"")
            if len(rows[_BATCH]) >= self.batches_per_block:
                flush()
        if rows[_BATCH]:
            flush()
        return refs

    def _map(self, cases, verifier: Verifier, verifiers: list[Verifier]):
        ray = self._ray
        common = {"batch_format": "pyarrow", "batch_size": None, "zero_copy_batch": True}
        if _stateless(verifier) and verifier.id not in self.pools:
            return cases.map_batches(score_block, fn_kwargs={"verifier": verifier}, **common)
        cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
        actor_verifiers = [v for v in verifiers if not _stateless(v) or v.id in self.pools]
        # Every pool starts with one actor: when there are more model-holding verifiers than CPUs,
        # each actor asks for a share of a CPU so all pools can start (they then share the cores).
        num_cpus = min(1.0, cpus / len(actor_verifiers))
        pool = ray.data.ActorPoolStrategy(min_size=1, max_size=self.pools.get(verifier.id, cpus))
        return cases.map_batches(BlockScorer, fn_constructor_kwargs={"verifier": verifier}, compute=pool,
                                 num_cpus=num_cpus, **common)


def score_block(block, verifier: Verifier):
    """Score one block of batches with one verifier: one result row per batch that had work."""
    import pyarrow as pa

    out: dict[str, list[Any]] = {_VERIFIER: [], _BATCH: [], _VERDICTS: [], _SECONDS: []}
    columns = block.to_pydict()
    for i, cases, skip in zip(columns[_BATCH], columns[_CASES], columns[_SKIP]):
        batch: list[Case] = pickle.loads(cases)
        if skip:
            skipped = set(pickle.loads(skip).get(verifier.id, ()))
            batch = [c for c in batch if c.id not in skipped]
        if not batch:
            continue
        started = time.perf_counter()
        verdicts = verify_batch(verifier, batch)
        out[_SECONDS].append(time.perf_counter() - started)
        out[_VERIFIER].append(verifier.id)
        out[_BATCH].append(i)
        out[_VERDICTS].append(pickle.dumps(verdicts, protocol=pickle.HIGHEST_PROTOCOL))
    return pa.table({_VERIFIER: pa.array(out[_VERIFIER], pa.string()), _BATCH: pa.array(out[_BATCH], pa.int64()),
                     _VERDICTS: pa.array(out[_VERDICTS], pa.binary()),
                     _SECONDS: pa.array(out[_SECONDS], pa.float64())})


class BlockScorer:
    """An actor's scorer: holds one verifier (and so its model, once loaded) for the actor's lifetime."""

    def __init__(self, verifier: Verifier):
        self.verifier = verifier

    def __call__(self, block):
        return score_block(block, self.verifier)
