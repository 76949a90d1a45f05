"""Threshold targets side by side (issue 26): for finished run directories, fit each verifier's threshold on
the calibration split for max F1, max balanced accuracy (the default) and max F1 at a minimum
specificity, and print the test split's precision / recall / F1 / balanced accuracy / share flagged as a
Markdown table, with how many checks of AUROC > 0.6 keep test specificity and recall >= 0.2.

    python benchmarks/measure_targets.py RUN_DIR [RUN_DIR ...]

A run stopped by a time limit (`timeout 360 verifybench run ...`) has scored its first batches with
every verifier: only the cases every verifier scored are used (copied to a temporary folder), so each
row compares verifiers on one case set. Runs under 300 cases are fitted with `min_per_class: 15`.
Thresholds need no rescoring: the run's verdicts are read back.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

from verifybench.evaluation.run_dir import RunDir
from verifybench.metrics.thresholds import parse_target

TARGETS = ["f1", "balanced_accuracy", "f1_min_specificity=0.3", "f1_min_specificity=0.5"]
HEADS = ["max F1", "**max balanced accuracy (default)**", "max F1 at spec. >= 0.3", "max F1 at spec. >= 0.5"]


def common_cases(src: Path, dst: Path) -> int:
    """Copy `src` to `dst` keeping the cases every verifier has a verdict for; their number."""
    verdicts = [json.loads(line) for line in open(src / "results.jsonl") if line.strip()]
    by: dict[str, set] = defaultdict(set)
    for v in verdicts:
        by[v["verifier"]].add(v["case_id"])
    keep = set.intersection(*by.values()) if by else set()
    dst.mkdir(parents=True)
    with open(dst / "cases.jsonl", "w") as f:
        f.writelines(line for line in open(src / "cases.jsonl") if line.strip() and json.loads(line)["id"] in keep)
    with open(dst / "results.jsonl", "w") as f:
        f.writelines(json.dumps(v) + "\n" for v in verdicts if v["case_id"] in keep)
    shutil.copy(src / "manifest.json", dst / "manifest.json")
    (dst / "errors.jsonl").write_text("")
    return len(keep)


def measure(run: Path) -> list[dict]:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp) / run.name
        n = common_cases(run, work)
        run_dir = RunDir.open(work)  # its tables read once, for every target
        for target in TARGETS:
            m = run_dir.metrics(run_dir.settings(target=parse_target(target), policy=None, n_boot=20,
                                                 min_per_class=15 if n < 300 else None))
            for vid, v in m["verifiers"].items():
                o, t = v["overall"], v["overall"].get("test") or {}
                c = t.get("confusion") or {}
                scored = t.get("n_scored") or 0
                rows.append({"suite": run.name, "cases": n, "verifier": vid, "target": target, "auroc": o.get("auroc"),
                             **{k: t.get(k) for k in ("precision", "recall", "f1", "specificity", "balanced_accuracy")},
                             "flagged": (c.get("tp", 0) + c.get("fp", 0)) / scored if scored else None,
                             "marked": bool(o["threshold"].get("near_degenerate") or o["threshold"].get("degenerate"))})
    return rows


def table(rows: list[dict]) -> str:
    def f(x):
        return "–" if x is None else f"{x:.2f}"

    by: dict[tuple, dict] = {}
    for r in rows:
        by.setdefault((r["suite"], r["verifier"]), {})[r["target"]] = r
    out = ["| run (cases) | verifier | AUROC | " + " | ".join(HEADS) + " |", "|---" * (3 + len(TARGETS)) + "|"]
    for (suite, vid), d in by.items():
        first = next(iter(d.values()))
        cells = []
        for target in TARGETS:
            r = d.get(target)
            if r is None or (r["precision"] is None and r["recall"] is None):
                cells.append("no threshold")
                continue
            cell = (f"{f(r['precision'])} / {f(r['recall'])} / {f(r['f1'])} / {f(r['balanced_accuracy'])} / "
                    f"{r['flagged']:.0%}" + (" ⚠" if r["marked"] else ""))
            cells.append(f"**{cell}**" if target == "balanced_accuracy" else cell)
        out.append(f"| {suite} ({first['cases']:,}) | {vid} | {f(first['auroc'])} | " + " | ".join(cells) + " |")
    out.append("")
    for target in TARGETS:
        checks = [r for r in rows if r["target"] == target and r["auroc"] is not None and r["auroc"] > 0.6]
        short = [f"{r['suite']} / {r['verifier']} (specificity {f(r['specificity'])}, recall {f(r['recall'])})"
                 for r in checks if r["specificity"] is None or r["recall"] is None
                 or r["specificity"] < 0.2 or r["recall"] < 0.2]
        marked = sum(r["marked"] for r in rows if r["target"] == target)
        out.append(f"- `{target}`: {len(checks)} checks with AUROC > 0.6, {len(short)} below 0.2 test specificity "
                   f"or recall{': ' + ', '.join(short) if short else ''}; near-degenerate or degenerate: {marked} of "
                   f"{sum(r['target'] == target for r in rows)} rows")
    return "\n".join(out)


if __name__ == "__main__":
    print(table([r for d in sys.argv[1:] for r in measure(Path(d))]))
