"""Threshold policies: verifier x slice -> threshold, fitted on a run's calibration split, with the
operating point measured on its test split. A policy is a YAML file a user reviews, commits, and passes
back with `verifybench run --policy` (or to a CI gate)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from verifybench.errors import VerifybenchError
from verifybench.metrics.summary import OVERALL

FORMAT = 1


def policy_from_metrics(metrics: dict[str, Any], manifest: dict[str, Any]) -> dict[str, Any]:
    """The policy document: for each verifier and slice, the threshold and where it came from (fitted on
    the calibration split, or a fallback to the whole set's for a slice too small to fit its own), a
    warning when it is degenerate (it flags every calibration case, or none), the tuned
    calibration-split numbers, the test-split numbers with their intervals, and what flagging every
    test case would score."""
    def point(m: dict | None, keys: tuple[str, ...] = ("n", "precision", "recall", "f1", "accuracy")) -> dict | None:
        if not m:
            return None
        out = {k: m.get(k) for k in keys}
        if "ci" in m:
            out["ci95"] = m["ci"]
        return out

    thresholds: dict[str, Any] = {}
    for vid, v in metrics["verifiers"].items():
        rows = {}
        for key, m in [(OVERALL, v["overall"]), *v["slices"].items()]:
            t = m["threshold"]
            row: dict[str, Any] = {"threshold": t["value"], "source": t.get("kind")}
            if t.get("fallback_from"):
                row["fallback_from"] = t["fallback_from"]
            if t.get("degenerate"):
                row["degenerate"] = f"{t['degenerate']}: no better than flagging everything (or nothing)"
            if t.get("warning"):
                row["warning"] = t["warning"]
            if t["value"] is not None:
                row["calibration_split (tuned)"] = point(m.get("calibration_split"))
                row["test_split"] = point(m.get("test"))
            if m.get("flag_all"):
                row["flag_all (test split)"] = {k: m["flag_all"].get(k) for k in ("precision", "recall", "f1")}
            rows[key] = row
        thresholds[vid] = rows
    return {
        "format": FORMAT,
        "suite": manifest["suite"]["name"],
        "suite_hash": manifest["suite"]["hash"],
        "dataset_hash": manifest["dataset"]["hash"],
        "by": metrics["by"],
        "target": metrics["target"],
        "min_per_class": metrics["min_per_class"],
        "split_sizes": metrics["split"],
        "thresholds": thresholds,
    }


def save_policy(policy: dict[str, Any], path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(policy, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return path


def load_policy(path: str | Path) -> tuple[str, dict[str, dict[str, float]]]:
    """(slice field, verifier -> slice -> threshold) from a policy file; slices without one are left out."""
    path = Path(path)
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise VerifybenchError(f"{path}: no such policy file") from None
    except yaml.YAMLError as e:
        raise VerifybenchError(f"{path}: invalid YAML: {e}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("thresholds"), dict) or "by" not in doc:
        raise VerifybenchError(f"{path}: not a verifybench policy (needs 'by' and 'thresholds')")
    mapping: dict[str, dict[str, float]] = {}
    for vid, rows in doc["thresholds"].items():
        if not isinstance(rows, dict):
            raise VerifybenchError(f"{path}: thresholds.{vid} must map slices to entries")
        for key, row in rows.items():
            value = row.get("threshold") if isinstance(row, dict) else row
            if value is None:
                continue
            if not isinstance(value, (int, float)):
                raise VerifybenchError(f"{path}: thresholds.{vid}.{key}: threshold must be a number, got {value!r}")
            mapping.setdefault(str(vid), {})[str(key)] = float(value)
    return str(doc["by"]), mapping
