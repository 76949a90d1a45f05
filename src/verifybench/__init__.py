"""verifybench: measure hallucination verifiers on labeled cases.

```python
import verifybench

run = verifybench.run(cases=df, fields={"response": "answer", "sources": "context", "label": "is_bad"},
                      verifiers=["rouge", "anchors"])
run.summary, run.verdicts, run.metrics        # pandas DataFrames
```

The core types (`Case`, `Verdict`, ...) load with the package; the library calls behind the CLI
commands (`verifybench.api`) load on first use, so `import verifybench` stays light. Three commands share
their name with a module of this package (`verifybench.compare`, `.gate`, `.history`), so they are not
re-exported here: call them as `run.compare(...)`, `run.gate(...)` on a `Run`, or from `verifybench.api`
(whose `__all__` lists every command).
"""

from verifybench.cases import Case, Source, Span, Unit, Verdict

__version__ = "0.1.0"

# name -> module it lives in: the public surface, loaded on first use (PEP 562).
_LAZY = {
    **{name: "verifybench.api" for name in (
        "run", "resume", "load_run", "finish", "describe_suite", "thresholds", "baseline", "log_to_mlflow",
        "check_mlflow", "components")},
    "Run": "verifybench.results",
    "Guard": "verifybench.guard",
    "Verifier": "verifybench.verifiers",
    "CaseVerifier": "verifybench.verifiers",
    "FieldSpec": "verifybench.loaders.fields",
    "GateResult": "verifybench.gate",
    "GateRefused": "verifybench.gate",
    "VerifybenchError": "verifybench.errors",
}

__all__ = ["Case", "Source", "Span", "Unit", "Verdict", "__version__", *_LAZY]


def __getattr__(name: str):
    if name in _LAZY:
        from importlib import import_module

        value = getattr(import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'verifybench' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
