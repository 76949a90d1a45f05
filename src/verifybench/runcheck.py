"""Is a run directory fit to be measured? Every (verifier, case) pair has exactly one verdict; a baseline
or a gate also needs every verdict present and the run finished. Each check names the file and says
what to do, instead of numbers that quietly count a case twice or leave some out."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from verifybench.rundir import COMPLETE, MANIFEST, RESULTS, SCORED, RunDirError

EXAMPLES = 3


def _examples(items) -> str:
    items = list(items)
    more = f", and {len(items) - EXAMPLES} more" if len(items) > EXAMPLES else ""
    return ", ".join(map(str, items[:EXAMPLES])) + more


def require_one_verdict_each(run_dir: Path, cases: list[dict], verdicts: list) -> None:
    """Refuse results that hold a (verifier, case) pair twice, or a verdict for a case the run does not
    have: every number computed from them would count those cases wrongly."""
    pairs = Counter((v.verifier, v.case_id) for v in verdicts)
    dup = {p: n for p, n in pairs.items() if n > 1}
    if dup:
        extra = sum(n - 1 for n in dup.values())
        per = Counter(vid for vid, _ in dup)
        raise RunDirError(
            f"{Path(run_dir) / RESULTS}: {extra} duplicated verdict(s) for {len(dup)} (verifier, case) pair(s) "
            f"({', '.join(f'{vid}: {n}' for vid, n in per.items())}; e.g. "
            f"{_examples(f'{vid}/{cid} x{n}' for (vid, cid), n in dup.items())}). Every pair must have exactly "
            "one verdict: were two runs written into one directory? Start a new run.")
    known = {c["id"] for c in cases}
    unknown = [p for p in pairs if p[1] not in known]
    if unknown:
        raise RunDirError(
            f"{Path(run_dir) / RESULTS}: {len(unknown)} verdict(s) for cases that are not in the run's case "
            f"index (e.g. {_examples(f'{vid}/{cid}' for vid, cid in unknown)}); start a new run.")


def require_complete(run_dir: Path, manifest: dict[str, Any], cases: list[dict], verdicts: list,
                     what: str) -> None:
    """Refuse an unfinished run for `what` (a baseline, a gate): a run whose manifest does not say
    complete, or a verifier without a verdict for some case (an error verdict counts as a verdict)."""
    run_dir = Path(run_dir)
    status = manifest.get("status")
    if status not in (SCORED, COMPLETE):  # scored: every verdict written, the report not (yet) rendered
        why = f" ({manifest['error']})" if manifest.get("error") else ""
        raise RunDirError(f"{run_dir / MANIFEST}: the run is {status}{why}; {what} needs a finished run: "
                          f"finish it with `verifybench run --resume {run_dir}`, or start a new one")
    have: dict[str, set[str]] = {}
    for v in verdicts:
        have.setdefault(v.verifier, set()).add(v.case_id)
    ids = [c["id"] for c in cases]
    for entry in manifest.get("verifiers", []):
        got = have.get(entry["id"], set())
        missing = [i for i in ids if i not in got]
        if missing:
            raise RunDirError(
                f"{run_dir / RESULTS}: verifier {entry['id']!r} has no verdict for {len(missing)} of {len(ids)} "
                f"cases (e.g. {_examples(missing)}); {what} needs one verdict per case: resume the run with "
                f"`verifybench run --resume {run_dir}`, or start a new one")
