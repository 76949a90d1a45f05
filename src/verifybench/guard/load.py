"""Reading a guard as data: its guard file, its policy and the suite it names, each checked before any
verifier is built or any module imported.

A policy or a guard file is data: it never chooses code to run (docs/trust.md). A verifier entry that
would import or run code the installation does not ship (a class named by import path, a model's own
Python with `trust_remote_code`, a graph pack folder's rules module; `verifybench.verifiers.chosen_code`)
is refused, naming the file and the key, unless the operator allows its module or folder by name
(`allow_code`: `Guard(..., allow_code=[...])`, `verifybench serve --allow-code`). Built-in verifiers,
entry points of installed packages and bundled or registered packs are the installation's own code.

A policy that names its run is checked against that run when the run is here: the same suite and
dataset (their hashes), and every check a verifier the run scored, at the config hash the policy
records (its thresholds were fitted from those scores).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from verifybench.formats import FormatError, Manifest
from verifybench.formats.policy import Policy
from verifybench.guard.spec import GuardError, GuardSpec, policy_run_dir, read_policy, read_spec
from verifybench.metrics.summary import OVERALL
from verifybench.rundir import MANIFEST
from verifybench.verifiers import chosen_code


@dataclass
class GuardFiles:
    """A guard's files, read and checked: what `Guard` builds its checks from."""

    spec: GuardSpec
    source: Path  # the guard file (or the policy given alone)
    policy_path: Path
    policy: Policy
    policy_hash: str
    entries: dict[str, tuple[str, dict[str, Any]]]  # check id -> (verifier name, options), in check order
    chosen: str | None = None  # why the guard runs the check it runs, where nothing named the checks


def read_guard(path: str | Path, allow_code: Iterable[str] = (), **overrides: Any) -> GuardFiles:
    """Read and check a guard file (or a policy file alone) without building a verifier or importing a
    module it names: the spec, the policy (finite thresholds), the checks' entries (from the suite with
    `suite:`, else as the policy records them), the code they would run (refused unless in
    `allow_code`), and the policy against its run."""
    spec, policy_path = read_spec(path, **overrides)
    source = Path(path)
    policy, policy_hash = read_policy(policy_path)
    by = policy.by
    if by != "doc_type" and not by.startswith("meta."):
        raise GuardError(f"{policy_path}: the policy slices by {by!r}; a guard slices by doc_type or "
                         "meta.<key>, fields a request carries")
    recorded = policy.verifiers or {}
    chosen = None
    if spec.checks is None and "combination" not in spec.model_fields_set and len(recorded) > 1:
        best, chosen = best_check(policy, policy_path)
        spec.checks = [best]
    ids = spec.checks or list(recorded)
    if spec.combination == "cascade" and len(ids) != 2:
        raise GuardError(f"{source}: combination cascade takes exactly two checks (the cheap one first); "
                         f"this guard has {len(ids)}: {', '.join(ids)}")
    unknown = [i for i in ids if i not in recorded]
    if unknown:
        raise GuardError(f"{source}: checks: {', '.join(unknown)} not in the policy {policy_path.name} "
                         f"(it records: {', '.join(recorded)})")
    if spec.suite:
        entries, where = _suite_entries(Path(spec.suite), ids), Path(spec.suite)
    else:
        entries, where = {vid: (recorded[vid].name, recorded[vid].options) for vid in ids}, policy_path
    allow = [str(a) for a in allow_code if str(a).strip()]
    for vid, (name, options) in entries.items():
        refuse_code(where, vid, name, options, allow)
    for vid in ids:
        _gates(policy, policy_path, vid)
    check_run(policy, policy_path, ids)
    return GuardFiles(spec, source, policy_path, policy, policy_hash, entries, chosen)


def best_check(policy: Policy, policy_path: Path) -> tuple[str, str]:
    """The check a guard runs when nothing named one and the policy records several: the best on the held-out
    estimate the policy records (the whole set's F1 on the test split, at its threshold), with a note naming
    it. Running them all with `any` flags whatever the weakest flags; a threshold the fit marked degenerate
    or near-degenerate is no candidate. Refused, naming the choice, where no check has such an estimate."""
    scored: list[tuple[float, str]] = []
    left: list[str] = []
    for vid in policy.verifiers or {}:
        e = policy.thresholds.get(vid, {}).get(OVERALL)
        f1 = None if e is None or e.test is None else e.test.f1
        why = ("no whole-set threshold" if e is None or e.threshold is None else
               "degenerate threshold" if e.degenerate else "near-degenerate threshold" if e.near_degenerate else
               "no test-split F1" if f1 is None else None)
        if why is None and f1 is not None:
            scored.append((f1, vid))
        else:
            left.append(f"{vid}: {why}")
    ids = ", ".join(policy.verifiers or {})
    choose = ("name the check to run: `checks: [ID]` in a guard file, or Guard(..., checks=[...]); "
              "`combination: any` with no `checks` runs every check, flagging what any of them flags")
    if not scored:
        raise GuardError(f"{policy_path}: the policy records {len(policy.verifiers or {})} checks ({ids}) and no "
                         f"held-out estimate to choose one by ({'; '.join(left)}): {choose}")
    top, best = max(scored, key=lambda x: x[0])  # ties: the first in the policy's order
    others = "".join(f"; {vid} {f:.3f}" for f, vid in scored if vid != best) + "".join(f"; {x}" for x in left)
    return best, (f"{policy_path.name} records {len(policy.verifiers or {})} checks; this guard runs {best}, the best "
                  f"on the test split (F1 {top:.3f}{others}). To choose: {choose}")


def _gates(policy: Policy, policy_path: Path, vid: str) -> None:
    """Refuse a check the policy cannot gate with: no whole-set threshold (the model has checked every
    threshold and `repeats` already)."""
    whole = policy.thresholds.get(vid, {}).get(OVERALL)
    if whole is None or whole.threshold is None:
        raise GuardError(f"{policy_path}: verifier {vid!r} has no whole-set threshold "
                         f"({(whole.warning if whole else None) or 'none fitted'}); it cannot gate")


def _suite_entries(path: Path, ids: list[str]) -> dict[str, tuple[str, dict[str, Any]]]:
    from verifybench.suite import load_suite

    suite = load_suite(path, check_loader=False)  # the verifiers only: its dataset's loader is not imported
    have = {e.id: (e.name, e.options) for e in suite.verifiers}
    missing = [i for i in ids if i not in have]
    if missing:
        raise GuardError(f"{path}: no verifier {', '.join(map(repr, missing))} (it has: {', '.join(have)})")
    return {i: have[i] for i in ids}


def refuse_code(where: Path, vid: str, name: str, options: dict[str, Any], allow: list[str]) -> None:
    """Refuse the entry `vid` of file `where` when it would import or run code that is not the
    installation's and not in `allow`, naming the key and how to allow it."""
    for code in chosen_code(name, options):
        if allowed(code.target, allow):
            continue
        key = "name" if code.key == "name" else f"options.{code.key}"
        raise GuardError(
            f"{where}: verifiers.{vid}.{key}: {code.what}. A policy or guard file is data and chooses no code to "
            f"run; if you trust this code, allow it by name: Guard(..., allow_code=[{code.target!r}]) in Python, "
            f"or `verifybench serve --allow-code {code.target}` (docs/trust.md)")


def allowed(target: str, allow: Iterable[str]) -> bool:
    """Whether `target` (a module, a folder, a model name) is in the operator's allow-list: the same
    name, a package above the module (`mypkg` allows `mypkg.checks`), or, for a folder here, the same
    folder or one above it."""
    here = Path(target).expanduser()
    for a in allow:
        if target == a or target.startswith(a + "."):
            return True
        if here.exists():
            mine, theirs = here.resolve(), Path(a).expanduser().resolve()
            if mine == theirs or theirs in mine.parents:
                return True
    return False


def check_run(policy: Policy, policy_path: Path, ids: list[str]) -> None:
    """Refuse a policy whose run (when it is here) is another suite's or another dataset's, or lacks one
    of the checks: a threshold the run never fitted, for that verifier at that configuration, is no
    fitted threshold."""
    run = policy_run_dir(policy, policy_path)
    if run is None or not (run / MANIFEST).is_file():
        return  # a policy deployed without its run: nothing here to hold it to
    try:
        manifest = Manifest.read(run / MANIFEST)
    except FormatError as e:
        raise GuardError(f"{policy_path}: its run cannot be read: {e}") from None
    for key, mine, theirs in (("suite_hash", policy.suite_hash, manifest.suite.hash),
                              ("dataset_hash", policy.dataset_hash, manifest.dataset.hash)):
        if mine != theirs:
            raise GuardError(
                f"{policy_path}: {key} {mine!r} differs from its run's {theirs!r} ({run}, suite "
                f"{manifest.suite.name!r}): `run` points at a run these thresholds were not "
                "fitted on. Point it at the run the policy was written from, or write the policy again from this "
                f"run: verifybench thresholds {run} --out {policy_path.name}")
    scored = {v.id: v.config_hash for v in manifest.verifiers}
    recorded = policy.verifiers or {}
    for vid in ids:
        mine = recorded[vid].config_hash
        if vid not in scored:
            raise GuardError(
                f"{policy_path}: verifiers.{vid}: its run {run} has no verifier {vid!r} (it has: "
                f"{', '.join(map(str, scored)) or 'none'}): no threshold of it was ever fitted there. Fit one on a "
                "run of this verifier and write the policy from that run")
        if scored[vid] != mine:
            raise GuardError(
                f"{policy_path}: verifiers.{vid}.config_hash {mine} differs from its run's {scored[vid]} ({run}): "
                "the thresholds in the policy were fitted for another configuration")
