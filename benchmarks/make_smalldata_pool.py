"""The labeled pool behind the small-data simulations (issue 44): real verifier scores on shared benchmark
cases, computed once by the project's own runner and cached as tests/data/smalldata_pool.csv.gz.

    python benchmarks/make_smalldata_pool.py [--data ../shared/datasets] [--out tests/data/smalldata_pool.csv.gz]

Cases: a seeded sample of 6,000 cases from each of HaluEval's qa, dialogue and summarization files (pairs
of a right and a hallucinated answer; a pair's group kept) and all 3,384 AttributionBench cases (dev, test,
test_ood), scored by `rouge` and `bleu` with their default options. Columns: `dataset`, `slice` (the
HaluEval task, or AttributionBench's source dataset), `group` (the HaluEval row; empty elsewhere), `label`
(1 = hallucinated), `rouge`, `bleu` (higher = more likely hallucinated; empty for an error verdict).
Scores are written to 6 significant digits. About two minutes on the 2-core machine.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import pandas as pd
import yaml

import verifybench

HALUEVAL = {"qa": "qa_data.json", "dialogue": "dialogue_data.json", "summarization": "summarization_data.json"}
SAMPLE = 6000
VERIFIERS = ["rouge", "bleu"]


def _score(suite: dict, data: Path, tmp: Path) -> pd.DataFrame:
    path = tmp / f"{suite['name']}.yaml"
    path.write_text(yaml.safe_dump(suite), encoding="utf-8")
    run = verifybench.run(path, out=tmp / suite["name"], data_dir=data, progress=False)
    v = run.verdicts.pivot(index="case_id", columns="verifier", values="score")
    c = run.cases.set_index("case_id")
    out = pd.DataFrame({"id": c.index, "dataset": c["dataset"].astype(str).to_numpy(),
                        "label": c["label"].astype(int).to_numpy()})
    if "meta.src_dataset" in c:
        out["slice"] = c["meta.src_dataset"].astype(str).to_numpy()
        out["group"] = ""
    else:
        out["slice"] = c["doc_type"].astype(str).to_numpy()
        out["group"] = c["meta.group"].astype(int).astype(str).to_numpy()
    for name in VERIFIERS:
        out[name] = v[name].reindex(c.index).to_numpy()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(Path(__file__).resolve().parents[1] / ".." / "shared" / "datasets"))
    ap.add_argument("--out", default=str(Path(__file__).resolve().parents[1] / "tests" / "data" /
                                         "smalldata_pool.csv.gz"))
    a = ap.parse_args()
    data = Path(a.data).resolve()
    suites = [{"name": f"pool-halueval-{task}", "metrics": {"bootstrap": 10},
               "dataset": {"loader": "halueval", "path": f"${{VERIFYBENCH_DATA}}/halueval/{file}",
                           "sample": SAMPLE, "seed": 0}, "verifiers": VERIFIERS, "batch_size": 256}
              for task, file in HALUEVAL.items()]
    suites.append({"name": "pool-attributionbench", "metrics": {"bootstrap": 10},
                   "dataset": {"loader": "attributionbench", "path": "${VERIFYBENCH_DATA}/attributionbench",
                               "splits": ["dev", "test", "test_ood"]},
                   "verifiers": VERIFIERS, "batch_size": 256})
    with tempfile.TemporaryDirectory() as tmp:
        frames = [_score(s, data, Path(tmp)) for s in suites]
    pool = pd.concat(frames, ignore_index=True)
    for name in VERIFIERS:
        pool[name] = pool[name].map(lambda x: float(f"{x:.6g}") if pd.notna(x) else x)
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    pool[["dataset", "slice", "group", "label", *VERIFIERS]].to_csv(out, index=False)
    print(f"{out}: {len(pool)} cases, {out.stat().st_size / 1e3:.0f} kB")
    print(pool.groupby(["dataset", "slice"]).agg(n=("label", "size"), hallucinated=("label", "mean")))


if __name__ == "__main__":
    main()
