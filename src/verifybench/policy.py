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
    def point(m: dict | None, keys=("n", "precision", "recall", "f1", "accuracy")) -> dict | None:
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
            if t.get("interval"):
                row["interval95"] = [t["interval"]["low"], t["interval"]["high"]]
            if t.get("degenerate"):
                row["degenerate"] = f"{t['degenerate']}: no better than flagging everything (or nothing)"
            if t.get("near_degenerate"):
                row["near_degenerate"] = (f"{t['near_degenerate']}: it barely separates the classes, so its "
                                          "precision and F1 mostly restate the class balance")
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


def load_policy(path: str | Path) -> tuple[str, dict[str, dict[str, float | None]]]:
    """(slice field, verifier -> slice -> threshold) from a policy file. A slice whose entry is null (the
    fit found no threshold, e.g. "no threshold reaches precision >= 0.9") stays in, as None: one rule for
    every null entry, whether of a slice or of the whole set: that verifier x slice is not gated at a
    threshold (its AUROC and AUPRC still are), and nothing is refitted in its place."""
    return _read_policy(path)[:2]


def null_reasons(path: str | Path) -> dict[str, dict[str, str]]:
    """verifier -> slice -> why the policy gives no threshold there (its `warning`, or "null")."""
    return _read_policy(path)[2]


def _read_policy(path: str | Path) -> tuple[str, dict[str, dict[str, float | None]], dict[str, dict[str, str]]]:
    path = Path(path)
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise VerifybenchError(f"{path}: no such policy file") from None
    except yaml.YAMLError as e:
        raise VerifybenchError(f"{path}: invalid YAML: {e}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("thresholds"), dict) or "by" not in doc:
        raise VerifybenchError(f"{path}: not a verifybench policy (needs 'by' and 'thresholds')")
    mapping: dict[str, dict[str, float | None]] = {}
    reasons: dict[str, dict[str, str]] = {}
    for vid, rows in doc["thresholds"].items():
        if not isinstance(rows, dict):
            raise VerifybenchError(f"{path}: thresholds.{vid} must map slices to entries")
        for key, row in rows.items():
            value = row.get("threshold") if isinstance(row, dict) else row
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
                raise VerifybenchError(f"{path}: thresholds.{vid}.{key}: threshold must be a number or null, "
                                       f"got {value!r}")
            mapping.setdefault(str(vid), {})[str(key)] = None if value is None else float(value)
            if value is None:
                why = row.get("warning") if isinstance(row, dict) else None
                reasons.setdefault(str(vid), {})[str(key)] = str(why or "null in the policy")
    return str(doc["by"]), mapping, reasons
