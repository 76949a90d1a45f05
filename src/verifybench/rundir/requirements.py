"""The requirements a run directory must meet before it is measured: every (verifier, case) pair has
exactly one verdict; a baseline or a gate also needs every verdict present and the run finished. Each
refusal names the file and says what to do, instead of numbers that quietly count a case twice or leave
some out.

The requirements read the columnar case and verdict tables (`verifybench.tables`; rows are accepted too), so
a million-case run is checked with integer arrays, not a Python tuple per verdict."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from verifybench.rundir import COMPLETE, MANIFEST, RESULTS, SCORED, RunDirError
from verifybench.tables import case_table, positions, verdict_table

EXAMPLES = 3


def _examples(items, total: int | None = None) -> str:
    """The first few items, and how many more there are (of `total`, when only the first are given)."""
    items = list(items)
    total = len(items) if total is None else total
    more = f", and {total - EXAMPLES} more" if total > EXAMPLES else ""
    return ", ".join(map(str, items[:EXAMPLES])) + more


def _tables(cases, verdicts) -> tuple[pd.DataFrame, pd.DataFrame]:
    return (cases if isinstance(cases, pd.DataFrame) else case_table(cases),
            verdicts if isinstance(verdicts, pd.DataFrame) else verdict_table(verdicts))


def _verifier_codes(verdicts: pd.DataFrame) -> tuple[np.ndarray, list[str]]:
    v = verdicts["verifier"]
    if isinstance(v.dtype, pd.CategoricalDtype):
        return v.cat.codes.to_numpy().astype(np.int64), [str(c) for c in v.cat.categories]
    codes, names = pd.factorize(v)
    return codes.astype(np.int64), [str(c) for c in names]


def require_one_verdict_each(run_dir: Path, cases: list[dict] | pd.DataFrame, verdicts: list | pd.DataFrame) -> None:
    """Refuse results that hold a (verifier, case) pair twice, or a verdict for a case the run does not
    have: every number computed from them would count those cases wrongly."""
    cases, verdicts = _tables(cases, verdicts)
    if not len(verdicts):
        return
    vcode, vnames = _verifier_codes(verdicts)
    pos = positions(verdicts["case_id"], cases["id"])
    unknown = pos < 0
    # One integer per (verifier, case) pair; a case the index does not hold is numbered after the index.
    case_no = pos.copy()
    if unknown.any():
        extra, _ = pd.factorize(verdicts["case_id"].to_numpy()[unknown])
        case_no[unknown] = len(cases) + extra
    pair = case_no * max(len(vnames), 1) + vcode
    if np.bincount(pair).max() <= 1 and not unknown.any():
        return  # the usual case, told with one count per pair
    _, first, counts = np.unique(pair, return_index=True, return_counts=True)
    dup = counts > 1
    if dup.any():
        order = np.argsort(first[dup], kind="stable")  # pairs in order of first appearance
        rows, n = first[dup][order], counts[dup][order]
        ids = verdicts["case_id"].to_numpy()[rows]
        vids = [vnames[c] for c in vcode[rows]]
        per = dict.fromkeys(vids, 0)
        for vid in vids:
            per[vid] += 1
        raise RunDirError(
            f"{Path(run_dir) / RESULTS}: {int((n - 1).sum())} duplicated verdict(s) for {len(rows)} (verifier, case) "
            f"pair(s) ({', '.join(f'{vid}: {k}' for vid, k in per.items())}; e.g. "
            f"{_examples(f'{vid}/{cid} x{k}' for vid, cid, k in zip(vids, ids, n.tolist()))}). Every pair must "
            "have exactly one verdict: were two runs written into one directory? Start a new run.")
    if unknown.any():
        rows = first[unknown[first]]
        rows.sort()
        ids = verdicts["case_id"].to_numpy()[rows]
        raise RunDirError(
            f"{Path(run_dir) / RESULTS}: {len(rows)} verdict(s) for cases that are not in the run's case "
            f"index (e.g. {_examples(f'{vnames[v]}/{cid}' for v, cid in zip(vcode[rows], ids))}). A run killed while "
            f"it resumed can leave its index short: `verifybench run --resume {run_dir}` indexes them again (and "
            "scores what is missing); if the run's data changed, start a new run.")


def require_complete(run_dir: Path, manifest: dict[str, Any], cases: list[dict] | pd.DataFrame,
                     verdicts: list | pd.DataFrame, what: str) -> None:
    """Refuse an unfinished run for `what` (a baseline, a gate): a run whose manifest does not say
    complete, or a verifier without a verdict for some case (an error verdict counts as a verdict)."""
    run_dir = Path(run_dir)
    status = manifest.get("status")
    if status not in (SCORED, COMPLETE):  # scored: every verdict written, the report not (yet) rendered
        why = f" ({manifest['error']})" if manifest.get("error") else ""
        raise RunDirError(f"{run_dir / MANIFEST}: the run is {status}{why}; {what} needs a finished run: "
                          f"finish it with `verifybench run --resume {run_dir}`, or start a new one")
    cases, verdicts = _tables(cases, verdicts)
    vcode, vnames = _verifier_codes(verdicts)
    pos = positions(verdicts["case_id"], cases["id"]) if len(verdicts) else np.empty(0, np.int64)
    n = len(cases)
    for entry in manifest.get("verifiers", []):
        got = np.zeros(n, bool)
        if entry["id"] in vnames:
            mine = (vcode == vnames.index(entry["id"])) & (pos >= 0)
            got[pos[mine]] = True
        missing = np.flatnonzero(~got)
        if len(missing):
            ids = cases["id"].to_numpy()[missing[:EXAMPLES]].tolist()
            raise RunDirError(
                f"{run_dir / RESULTS}: verifier {entry['id']!r} has no verdict for {len(missing)} of {n} "
                f"cases (e.g. {_examples(ids, len(missing))}); {what} needs one verdict per case: resume the run with "
                f"`verifybench run --resume {run_dir}`, or start a new one")
