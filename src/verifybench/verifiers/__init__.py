"""Verifier registry: built-in verifiers by name, third-party ones through entry points.

A suite can also name a class by import path (`my_package.checks:MyVerifier`). A package adds a
verifier under a short name with an entry point in the `verifybench.verifiers` group:

```toml
[project.entry-points."verifybench.verifiers"]
my-check = "my_package.module:MyVerifier"
```
"""

from __future__ import annotations

import inspect
from importlib import import_module
from importlib.metadata import entry_points
from typing import Any

from pydantic import BaseModel, ValidationError

from verifybench.errors import SuiteError
from verifybench.verifiers.base import CaseVerifier, ChosenCode, Requirement, Verifier, extra, operational

__all__ = ["BUILTIN", "CaseVerifier", "ChosenCode", "Requirement", "Verifier", "available", "build",
           "check_verifier_class", "chosen_code", "extra", "get_verifier_class", "operational"]

# Import paths, not classes: listing verifiers must not import torch or a model runtime.
BUILTIN: dict[str, str] = {
    "bleu": "verifybench.verifiers.overlap:BleuVerifier",
    "rouge": "verifybench.verifiers.overlap:RougeVerifier",
    "anchors": "verifybench.verifiers.anchors:AnchorsVerifier",
    "judge": "verifybench.verifiers.judge:JudgeVerifier",
    "graph": "verifybench.verifiers.graph:GraphVerifier",
    "decision": "verifybench.verifiers.decision:DecisionVerifier",
    "compliance": "verifybench.verifiers.compliance:ComplianceVerifier",
    "compliance-onestage": "verifybench.verifiers.compliance:OneStageVerifier",
    "scores": "verifybench.verifiers.scores:ScoresVerifier",
    "nli": "verifybench.verifiers.nli:NLIVerifier",
}


def _load(target: str) -> type[Verifier]:
    module, _, attr = target.partition(":")
    return getattr(import_module(module), attr)


def available() -> dict[str, str]:
    """Every verifier name with its import path: built-in, then entry points."""
    found = dict(BUILTIN)
    for ep in entry_points(group="verifybench.verifiers"):
        found.setdefault(ep.name, ep.value)
    return found


def check_verifier_class(name: str, cls: object) -> type[Verifier]:
    """`cls` if it is a complete verifier class; else a `SuiteError` saying what it lacks."""
    if not (isinstance(cls, type) and issubclass(cls, Verifier)):
        raise SuiteError(f"verifier {name!r} is not a verifybench Verifier subclass")
    where = f"{cls.__module__}.{cls.__qualname__}"
    if inspect.isabstract(cls):
        missing = ", ".join(sorted(cls.__abstractmethods__))
        raise SuiteError(f"verifier {name!r} ({where}) does not implement {missing}")
    if not isinstance(getattr(cls, "name", None), str) or not cls.name:
        raise SuiteError(f"verifier {name!r} ({where}) sets no `name`")
    if not (isinstance(cls.Options, type) and issubclass(cls.Options, BaseModel)):
        raise SuiteError(f"verifier {name!r} ({where}): `Options` must be a pydantic model class")
    return cls


def get_verifier_class(name: str) -> type[Verifier]:
    """A registered name, or an import path `package.module:Class` for a verifier of your own."""
    if ":" in name:
        try:
            cls = _load(name)
        except (ImportError, AttributeError) as e:
            raise SuiteError(f"verifier {name!r} cannot be imported: {e}") from None
        return check_verifier_class(name, cls)
    known = available()
    if name not in known:
        raise SuiteError(f"unknown verifier {name!r}; known verifiers: {', '.join(sorted(known))}")
    try:
        cls = _load(known[name])
    except (ImportError, AttributeError) as e:
        raise SuiteError(f"verifier {name!r} ({known[name]}) cannot be imported: {e}") from None
    return check_verifier_class(name, cls)


def build(name: str, id: str | None = None, **options: Any) -> Verifier:
    """A configured verifier instance; bad options raise `SuiteError` naming the option."""
    return get_verifier_class(name)(id=id, **options)


def chosen_code(name: str, options: dict[str, Any]) -> list[ChosenCode]:
    """The code a verifier entry (`name` and its options) would import or run beyond what the installation
    ships, found without importing it: a class named by import path (key `name`: its module), and what
    the verifier's own `chosen_code` lists for these options (a model's `trust_remote_code`, a graph pack
    folder's rules). A built-in or entry-point verifier's class is installed code, imported to ask it."""
    if ":" in name:
        module = name.partition(":")[0]
        return [ChosenCode("name", module, f"imports module {module!r} (a verifier named by import path, {name!r})")]
    cls = get_verifier_class(name)
    try:
        parsed = cls.Options(**options)
    except (ValidationError, TypeError):
        return []  # bad options: building the verifier names them
    return cls.chosen_code(parsed)
