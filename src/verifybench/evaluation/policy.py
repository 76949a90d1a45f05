"""Threshold policies: verifier x slice -> threshold, fitted on a run's calibration split, with the
operating point measured on its test split. A policy is a YAML file a user reviews, commits, and passes
back with `verifybench run --policy` (or to a CI gate); its format is `formats.policy.Policy`, the one
reader and writer (this module computes one from a run's metrics)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from verifybench.formats.policy import Policy
from verifybench.metrics.summary import OVERALL


def policy_from_metrics(metrics: dict[str, Any], manifest: dict[str, Any],
                        run_dir: str | Path | None = None) -> Policy:
    """The policy: for each verifier and slice, the threshold and where it came from (fitted on the
    calibration split, or a fallback to the whole set's for a slice too small to fit its own), the
    threshold on the detector's own scale (`native`), a warning when it is degenerate (it flags every
    calibration case, or none), the tuned calibration-split numbers, the test-split numbers with their
    intervals, and what flagging every test case would score.

    `verifiers` records, per verifier, the name the suite gave it, the options and the config hash it
    was fitted with: a guard (`verifybench.guard`) is built from them and refuses a verifier whose
    config hash differs. `run` is the run directory the thresholds were fitted on (a guard's cascade
    reads its calibration split)."""
    def point(m: dict | None, keys: tuple[str, ...] = ("n", "precision", "recall", "f1", "accuracy")) -> dict | None:
        if not m:
            return None
        out = {k: m.get(k) for k in keys}
        if "ci" in m:
            out["ci95"] = m["ci"]
        if m.get("estimate"):
            out["estimate"] = m["estimate"]
        return out

    configs = {v["id"]: v for v in manifest.get("verifiers", [])}
    names = suite_entry_names((manifest["suite"].get("raw") or {}).get("verifiers"))
    thresholds: dict[str, Any] = {}
    for vid, v in metrics["verifiers"].items():
        config = (configs.get(vid) or {}).get("config") or {}
        rows = {}
        for key, m in [(OVERALL, v["overall"]), *v["slices"].items()]:
            t = m["threshold"]
            row: dict[str, Any] = {"threshold": t["value"], "source": t.get("kind")}
            if t["value"] is not None:
                row["native"] = native_threshold(config, t["value"])
            row["fallback_from"] = t.get("fallback_from")
            if t.get("weight") is not None and t.get("kind") == "pooled":
                row["weight"] = t["weight"]
            if t.get("interval"):
                row["interval95"] = [t["interval"]["low"], t["interval"]["high"]]
            if t.get("degenerate"):
                row["degenerate"] = f"{t['degenerate']}: no better than flagging everything (or nothing)"
            if t.get("near_degenerate"):
                row["near_degenerate"] = (f"{t['near_degenerate']}: it barely separates the classes, so its "
                                          "precision and F1 mostly restate the class balance")
            row["warning"] = t.get("warning")
            if t["value"] is not None:
                row["calibration_split (tuned)"] = point(m.get("calibration_split"))
                row["test_split"] = point(m.get("test"))
            if m.get("flag_all"):
                row["flag_all (test split)"] = {k: m["flag_all"].get(k) for k in ("precision", "recall", "f1")}
            rows[key] = row
        thresholds[vid] = rows
    verifiers = {
        vid: {"name": names.get(vid, c["name"]), "options": recorded_options(c["name"], names.get(vid), c["config"]),
              "config_hash": c["config_hash"],
              # scored N times and folded to the mean: the guard scores it the same way (guard.batching)
              "repeats": int(c["repeats"]) if int(c.get("repeats") or 1) > 1 else None}
        for vid, c in configs.items() if vid in metrics["verifiers"]}
    return Policy.new(
        run=str(Path(run_dir).resolve()) if run_dir is not None else None,
        suite=manifest["suite"]["name"], suite_hash=manifest["suite"]["hash"],
        dataset_hash=manifest["dataset"]["hash"], by=metrics["by"], target=metrics["target"],
        min_per_class=metrics["min_per_class"], split_sizes=metrics["split"], verifiers=verifiers,
        estimate=metrics.get("estimate"),
        thresholds=thresholds)


def suite_entry_names(raw: Any) -> dict[str, str]:
    """verifier id -> the name a suite's `verifiers:` list gives it (a registered name, or an import path
    `package.module:Class`), read as `verifybench.suite` reads the list."""
    out: dict[str, str] = {}
    for item in raw if isinstance(raw, list) else []:
        if isinstance(item, str):
            out.setdefault(item, item)
        elif isinstance(item, dict) and len(item) == 1:
            name, options = next(iter(item.items()))
            vid = (options or {}).get("id", name) if isinstance(options, dict) else name
            out.setdefault(str(vid), str(name))
    return out


def recorded_options(name: str, entry: str | None, config: dict[str, Any]) -> dict[str, Any]:
    """The options a verifier was fitted with, from its manifest config: the scored options (operational
    ones such as a cache folder or a thread count take their defaults), without what the verifier adds to
    its config beside its options (a predictions file's digest)."""
    options = {k: v for k, v in config.items() if k != "name"}
    try:
        from verifybench.verifiers import get_verifier_class

        fields = get_verifier_class(entry or name).Options.model_fields
    except Exception:  # noqa: BLE001 - a class that cannot be imported here keeps every config key
        return options
    return {k: v for k, v in options.items() if k in fields}


def _num(x: float) -> str:
    return f"{x:.4g}"


def native_threshold(config: dict[str, Any], threshold: float) -> str:
    """When a case is flagged, on the detector's own scale: score >= threshold, rewritten through the
    conversion the verifier applies to what it reads or computes. A `scores` detector with
    `higher_means: faithful, scale: 100` read from a `consistency` column at threshold 0.46 reads
    "consistency <= 54"; rouge's 1 - ROUGE-1 precision at 0.3 reads "rouge1 precision <= 0.7"."""
    name = config.get("name")
    t = float(threshold)
    if name == "scores":
        label = config.get("column") if config.get("file") else str(config.get("field") or "value").split(".")[-1]
        scale = float(config.get("scale") or 1.0)
        if config.get("higher_means") == "faithful":
            return f"{label} <= {_num((1.0 - t) * scale)}"
        return f"{label} >= {_num(t * scale)}"
    if name == "rouge":
        return f"{config.get('type', 'rouge1')} {config.get('measure', 'precision')} <= {_num(1.0 - t)}"
    if name == "bleu":
        return f"BLEU (0-1, order {config.get('order', 4)}, no brevity penalty) <= {_num(1.0 - t)}"
    if name == "anchors":
        from verifybench.verifiers.anchors.scale import native_rule

        return native_rule(t)
    if name == "nli":
        how = "mean" if config.get("aggregate") == "summac" and config.get("claim_reduce") == "mean" else "weakest"
        return f"{how} unit's entailment probability <= {_num(1.0 - t)}"
    return f"score >= {_num(t)}"


def save_policy(policy: Policy, path: str | Path) -> Path:
    """Write `policy` as YAML at `path`; its `run` is written relative to the file's folder, so a policy
    and its run moved or committed together (a cascade reads the run) still find each other, and the
    file does not carry the machine's absolute paths."""
    path = Path(path)
    if policy.run and Path(policy.run).is_absolute():
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            policy = policy.model_copy(update={"run": Path(os.path.relpath(policy.run, path.parent.resolve())).as_posix()})
        except ValueError:  # another drive (Windows): no relative path exists, the absolute one stays
            pass
    return policy.write(path)


def load_policy(path: str | Path) -> tuple[str, dict[str, dict[str, float | None]]]:
    """(slice field, verifier -> slice -> threshold) from a policy file. A slice whose entry is null (the
    fit found no threshold, e.g. "no threshold reaches precision >= 0.9") stays in, as None: one rule for
    every null entry, whether of a slice or of the whole set: that verifier x slice is not gated at a
    threshold (its AUROC and AUPRC still are), and nothing is refitted in its place."""
    policy = Policy.read(path)
    return policy.by, policy.mapping()


def null_reasons(path: str | Path) -> dict[str, dict[str, str]]:
    """verifier -> slice -> why the policy gives no threshold there (its `warning`, or "null")."""
    return Policy.read(path).null_reasons()
