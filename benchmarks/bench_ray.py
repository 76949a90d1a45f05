"""Ray executor against the local runner, and throughput for 1 and 2 worker nodes, in one run.

    python benchmarks/bench_ray.py [--cases 20000] [--anchors-cases 20000] [--nodes 1,2] [--batches-per-block 8]

On the first N HaluEval QA cases, for two suites: `overlap` (rouge + bleu) and `anchors` (MiniLM, no disk
cache, so neither side reuses the other's embeddings):
- the local runner (`Runner.run()`, progress off), wall time;
- the same runner with `RayExecutor` on a local Ray cluster of a head node with no CPUs and K worker
  nodes of one CPU each, all on 127.0.0.1, for each K in --nodes: wall time of the run (the cluster is up
  and the driver connected; its start-up time is reported on its own line), cases per second, and the
  ratio to the local runner. With K = 1 the cluster has one core for scoring, as the local runner does,
  so that ratio is Ray's overhead.
Wall times include loading models (the local runner loads once; each Ray actor loads its own copy).
Ray gives a one-CPU actor one torch thread (OMP_NUM_THREADS=1), while the local runner lets torch use
every core: the anchors suite is run locally a second time with `torch.set_num_threads(1)` ("local, 1
thread"), the like-for-like baseline for a one-CPU worker node.
Every run's verdicts are checked equal to the local run's before its time is reported.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")  # every node on 127.0.0.1
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")

from verifybench.executors.ray import RayExecutor  # noqa: E402
from verifybench.pipeline.runner import Runner  # noqa: E402
from verifybench.rundir import iter_jsonl  # noqa: E402
from verifybench.suite import find_data_dir, parse_suite  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SUITES = {"overlap": ["rouge", "bleu"], "anchors": [{"anchors": {"cache_dir": None}}]}


def suite_for(data: Path, name: str, limit: int):
    raw = {"name": f"bench-ray-{name}", "batch_size": 64, "verifiers": SUITES[name],
           "dataset": {"loader": "halueval", "path": str(data / "halueval/qa_data.json"), "limit": limit}}
    return parse_suite(raw, ROOT)


def timed_run(suite, run_dir: Path, executor=None) -> tuple[float, dict]:
    start = time.perf_counter()
    Runner(suite, run_dir, progress=False, executor=executor).run()
    seconds = time.perf_counter() - start
    return seconds, {(r["verifier"], r["case_id"]): r.get("score") for r in iter_jsonl(run_dir / "results.jsonl")}


def start_cluster(workers: int):
    import ray
    from ray.cluster_utils import Cluster

    store = 200 * 2**20
    start = time.perf_counter()
    c = Cluster(initialize_head=True, head_node_args={"num_cpus": 0, "include_dashboard": False,
                                                      "object_store_memory": store})
    for _ in range(workers):
        c.add_node(num_cpus=1, object_store_memory=store)
    ray.init(address=c.address, include_dashboard=False, log_to_driver=False, logging_level="warning")
    c.wait_for_nodes()
    return c, time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=20000, help="HaluEval QA cases for rouge + bleu")
    ap.add_argument("--anchors-cases", type=int, default=20000, help="HaluEval QA cases for anchors (0: skip)")
    ap.add_argument("--nodes", default="1,2", help="worker-node counts to measure")
    ap.add_argument("--batches-per-block", type=int, default=8)
    args = ap.parse_args()
    data = find_data_dir(ROOT)
    if data is None:
        sys.exit("no shared/datasets folder found beside the repository")
    import ray

    sizes = {"overlap": args.cases, "anchors": args.anchors_cases}
    suites = {name: suite_for(data, name, n) for name, n in sizes.items() if n > 0}
    tmp = Path(tempfile.mkdtemp(prefix="bench-ray-"))
    local = {}
    for name, suite in suites.items():
        local[name] = timed_run(suite, tmp / f"local-{name}")
        print(f"local {name}: {local[name][0]:.2f} s", file=sys.stderr, flush=True)
    one_thread = {}
    if "anchors" in suites:
        import torch

        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        one_thread["anchors"] = timed_run(suites["anchors"], tmp / "local1-anchors")[0]
        torch.set_num_threads(threads)
        print(f"local anchors, 1 thread: {one_thread['anchors']:.2f} s", file=sys.stderr, flush=True)

    rows = []
    for k in (int(x) for x in args.nodes.split(",")):
        cluster, startup = start_cluster(k)
        try:
            for name, suite in suites.items():
                seconds, scores = timed_run(suite, tmp / f"ray{k}-{name}",
                                            RayExecutor(batches_per_block=args.batches_per_block))
                want = local[name][1]
                same = scores.keys() == want.keys() and all(abs(scores[key] - want[key]) < 1e-6 for key in want)
                rows.append({"suite": name, "nodes": k, "cases": sizes[name], "startup_s": startup,
                             "local_s": local[name][0], "local_1thread_s": one_thread.get(name),
                             "ray_s": seconds, "same_scores": same})
                print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
        finally:
            ray.shutdown()
            cluster.shutdown()

    print("| suite | cases | worker nodes (1 CPU each) | cluster start s | local runner s | local, 1 thread s "
          "| Ray run s | Ray / local | Ray / local 1 thread | local cases/s | Ray cases/s | scores equal |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        one = r["local_1thread_s"]
        vs_one = f"{r['ray_s'] / one:.2f}" if one else "-"
        print(f"| {r['suite']} | {r['cases']} | {r['nodes']} | {r['startup_s']:.1f} | {r['local_s']:.2f} "
              f"| {f'{one:.2f}' if one else '-'} | {r['ray_s']:.2f} | {r['ray_s'] / r['local_s']:.2f} "
              f"| {vs_one} | {r['cases'] / r['local_s']:,.0f} "
              f"| {r['cases'] / r['ray_s']:,.0f} | {'yes' if r['same_scores'] else 'NO'} |")


if __name__ == "__main__":
    main()
