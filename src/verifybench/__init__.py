"""verifybench: measure hallucination verifiers on labeled cases.

```python
import verifybench

run = verifybench.run(cases=df, fields={"response": "answer", "sources": "context", "label": "is_bad"},
                      verifiers=["rouge", "anchors"])
run.summary, run.verdicts, run.metrics        # pandas DataFrames
```

The core types (`Case`, `Verdict`, ...) load with the package; every name of `verifybench.api` (each command's call,
`run`, `report`, `describe`, `components`, `thresholds`, `compare`, `baseline`, `gate`, `log`, `history`,
`cascade`, `label_queue`, `label_merge`, `label_estimate`, `drift`, `serve`, and the types they return)
loads on first use, so `import verifybench` stays light.
"""

from importlib import metadata as _metadata
from typing import Any

# The public surface, loaded on first use (PEP 562): every name of `verifybench.api` (its one table of
# names, so the two cannot differ), and its deprecated names, with a warning. `api` names modules; it
# imports none of them.
from verifybench.api import _NAMES, DEPRECATED
from verifybench.cases import Case, Source, Span, Unit, Verdict

try:
    __version__ = _metadata.version("verifybench")
except _metadata.PackageNotFoundError:  # a source tree on sys.path, not installed
    __version__ = "0+unknown"

__all__ = ["Case", "Source", "Span", "Unit", "Verdict", "__version__",
           *sorted(n for n in _NAMES if n not in ("Case", "Source", "Verdict"))]


def __getattr__(name: str) -> Any:
    if name in _NAMES or name in DEPRECATED:
        from importlib import import_module

        # Not cached here (see verifybench.api): a name always belongs to the module loaded now.
        return getattr(import_module("verifybench.api"), name)
    raise AttributeError(f"module 'verifybench' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_NAMES))
