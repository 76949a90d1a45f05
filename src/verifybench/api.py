"""The library calls behind every CLI command, named as the commands are, so a test or a notebook can make
them too. This module only names them: each call lives in the package that owns its concept
(docs/architecture.md), and `import verifybench.api` loads a package only when one of its calls is first
used.

| command | call | lives in |
|---|---|---|
| run | `run`, `resume` | `runs.start` |
| report | `report` | `pipeline.finish` |
| describe | `describe` | `pipeline.describe` |
| list | `components` (not `list`: it would shadow the builtin in `from verifybench import *`) | `pipeline.components` |
| thresholds | `thresholds` | `evaluation.reading` |
| compare | `compare` | `gating.compare` |
| baseline, gate | `baseline`, `gate` | `gating.gate` |
| log | `log` (`check_mlflow` before a long run) | `tracking.mlflow_store` |
| log --otlp | `export_events` | `tracking.otel_events` |
| log --assessments | `log_assessments` | `tracking.mlflow_assessments` |
| history | `history` | `tracking.history` |
| cascade | `cascade` | `feedback.cascade` |
| label-queue, label-merge, label-estimate | `label_queue`, `label_merge`, `label_estimate` | `feedback.queue` |
| drift | `drift` | `feedback.drift` |
| serve | `serve` (and `Guard`, the check it serves) | `guard.service`, `guard` |

The older names `finish`, `describe_suite` and `log_to_mlflow` still work for one release, with a
DeprecationWarning.
"""

from __future__ import annotations

import warnings
from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what the lazy names resolve to, for type checkers and editors (test_api_surface.py
    # checks that this block and `_NAMES` agree)
    from verifybench.cases import Case, Source, Verdict  # noqa: F401
    from verifybench.errors import VerifybenchError  # noqa: F401
    from verifybench.evaluation.reading import thresholds  # noqa: F401
    from verifybench.feedback.cascade import cascade  # noqa: F401
    from verifybench.feedback.drift import DriftRefused, DriftResult, drift  # noqa: F401
    from verifybench.feedback.queue import label_estimate, label_merge, label_queue  # noqa: F401
    from verifybench.gating.compare import Comparison, compare  # noqa: F401
    from verifybench.gating.gate import GateRefused, GateResult, baseline, gate  # noqa: F401
    from verifybench.guard import Guard  # noqa: F401
    from verifybench.guard.service import serve  # noqa: F401
    from verifybench.loaders.fields import FieldSpec  # noqa: F401
    from verifybench.metrics.settings import OVERALL  # noqa: F401
    from verifybench.pipeline.components import components  # noqa: F401
    from verifybench.pipeline.describe import describe  # noqa: F401
    from verifybench.pipeline.finish import report  # noqa: F401
    from verifybench.runs.run import Run, load_run  # noqa: F401
    from verifybench.runs.start import resume, run  # noqa: F401
    from verifybench.tracking.history import history  # noqa: F401
    from verifybench.tracking.mlflow_assessments import log_assessments  # noqa: F401
    from verifybench.tracking.mlflow_store import check_mlflow, log  # noqa: F401
    from verifybench.tracking.otel_events import export_run as export_events  # noqa: F401
    from verifybench.verifiers import CaseVerifier, Verifier  # noqa: F401

# name -> (module, attribute)
_NAMES: dict[str, tuple[str, str]] = {
    "run": ("verifybench.runs.start", "run"),
    "resume": ("verifybench.runs.start", "resume"),
    "report": ("verifybench.pipeline.finish", "report"),
    "describe": ("verifybench.pipeline.describe", "describe"),
    "components": ("verifybench.pipeline.components", "components"),
    "thresholds": ("verifybench.evaluation.reading", "thresholds"),
    "compare": ("verifybench.gating.compare", "compare"),
    "Comparison": ("verifybench.gating.compare", "Comparison"),
    "baseline": ("verifybench.gating.gate", "baseline"),
    "gate": ("verifybench.gating.gate", "gate"),
    "GateResult": ("verifybench.gating.gate", "GateResult"),
    "GateRefused": ("verifybench.gating.gate", "GateRefused"),
    "log": ("verifybench.tracking.mlflow_store", "log"),
    "check_mlflow": ("verifybench.tracking.mlflow_store", "check_mlflow"),
    "export_events": ("verifybench.tracking.otel_events", "export_run"),
    "log_assessments": ("verifybench.tracking.mlflow_assessments", "log_assessments"),
    "history": ("verifybench.tracking.history", "history"),
    "cascade": ("verifybench.feedback.cascade", "cascade"),
    "label_queue": ("verifybench.feedback.queue", "label_queue"),
    "label_merge": ("verifybench.feedback.queue", "label_merge"),
    "label_estimate": ("verifybench.feedback.queue", "label_estimate"),
    "drift": ("verifybench.feedback.drift", "drift"),
    "DriftResult": ("verifybench.feedback.drift", "DriftResult"),
    "DriftRefused": ("verifybench.feedback.drift", "DriftRefused"),
    "serve": ("verifybench.guard.service", "serve"),
    "Guard": ("verifybench.guard", "Guard"),
    "Run": ("verifybench.runs.run", "Run"),
    "load_run": ("verifybench.runs.run", "load_run"),
    "Case": ("verifybench.cases", "Case"),
    "Source": ("verifybench.cases", "Source"),
    "Verdict": ("verifybench.cases", "Verdict"),
    "Verifier": ("verifybench.verifiers", "Verifier"),
    "CaseVerifier": ("verifybench.verifiers", "CaseVerifier"),
    "FieldSpec": ("verifybench.loaders.fields", "FieldSpec"),
    "VerifybenchError": ("verifybench.errors", "VerifybenchError"),
    "OVERALL": ("verifybench.metrics.settings", "OVERALL"),
}
# Old name -> new name: kept for one release.
DEPRECATED = {"finish": "report", "describe_suite": "describe", "log_to_mlflow": "log"}

__all__ = sorted(_NAMES)


def __getattr__(name: str) -> Any:
    if name in DEPRECATED:
        new = DEPRECATED[name]
        warnings.warn(f"verifybench.api.{name} is deprecated; use verifybench.api.{new} (the CLI command's name)",
                      DeprecationWarning, stacklevel=2)
        return __getattr__(new)
    if name in _NAMES:
        module, attr = _NAMES[name]
        # Not cached in this module's globals: resolved from sys.modules on each access, so a name always
        # belongs to the module loaded now (pytest's in-process runs unload modules between runs).
        return getattr(import_module(module), attr)
    raise AttributeError(f"module 'verifybench.api' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_NAMES) | set(DEPRECATED))
